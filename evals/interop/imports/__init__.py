"""Other harnesses' trajectories as run directories (`harness import`): one reader per format into the common
form (form.py), the format read from the content (detect.py), and one writer through the journal (write.py);
batch.py imports many files into a batch folder. See evals/interop/README.md."""

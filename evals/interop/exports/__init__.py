"""Our runs in other harnesses' formats: ATIF trajectories (`atif.py`) and Inspect AI eval logs (`inspect_log.py`),
both built from the step fold of each run (`run.py`) and written by `write.py`."""

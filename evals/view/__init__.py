"""`harness view`: a local web viewer over a folder of runs, that follows running batches as they fill."""

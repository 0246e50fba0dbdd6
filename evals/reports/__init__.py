"""Trajectory inspection: detectors over a run's journal, HTML and markdown reports."""

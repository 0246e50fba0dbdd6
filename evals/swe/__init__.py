"""SWE-bench-style tasks: repositories in Docker, hidden tests, two-sided grading."""

"""Harbor-format tasks (Terminal-Bench 2.0 and the datasets built for Harbor): load, build, run, verify. See README.md."""

"""`python -m cli`: the `harness` command where its console script is not installed."""

from cli.main import main

main()

"""A/B comparisons of harness policies: pair runs by task, test the differences, give a verdict."""

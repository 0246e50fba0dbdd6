"""`--policy`, on every command that runs agents (`harness run`, `swe`, `tasks`, `chess`): a preset or a
policy file, resolved with `agent.session.policy_for`."""

from __future__ import annotations

import typer

POLICY = typer.Option(
    None,
    help="A preset name (see `harness policies`) or a .toml/.yaml policy file; "
    "default: `local` for the embedded model, else `default`.",
)

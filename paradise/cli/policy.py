"""``paradise policy validate``."""

from __future__ import annotations

import click

from paradise.cli.app import out_console
from paradise.policy import load_policies

__all__ = ["policy"]


@click.group()
def policy() -> None:
    """Work with role policy files."""


@policy.command()
@click.argument("directory", type=click.Path(file_okay=False))
def validate(directory: str) -> None:
    """Check every policy file in DIRECTORY; print one line per role, or the first error."""
    roles = load_policies(directory)
    for name, role in sorted(roles.items()):
        tables = ", ".join(
            f"{t} ({', '.join(s.name for s in tp.transform) or 'no transform'}; k={tp.privacy.k})"
            for t, tp in role.tables.items()
        )
        out_console.print(f"ok  {name}: {tables}", markup=False, highlight=False)

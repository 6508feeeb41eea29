"""The ``paradise`` command line. Each command lives in its own module of this package."""

from __future__ import annotations

import sys

import click

from paradise.cli.app import ParadiseGroup, cli
from paradise.cli.data import anonymize, load
from paradise.cli.demo import demo
from paradise.cli.policy import policy
from paradise.cli.query import explain, query
from paradise.cli.release import release
from paradise.cli.report import report
from paradise.cli.serve import serve, user
from paradise.cli.suppress import suppress

__all__ = ["ParadiseGroup", "cli", "main"]

for command in (
    demo,
    query,
    explain,
    policy,
    load,
    anonymize,
    release,
    suppress,
    report,
    serve,
    user,
):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``paradise`` console script."""
    try:
        cli.main(args=argv, prog_name="paradise", standalone_mode=True)
    except click.exceptions.Exit as exc:  # pragma: no cover - click handles this itself
        sys.exit(exc.exit_code)

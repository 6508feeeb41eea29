"""The ``paradise`` command line. Each command lives in its own module of this package."""

from __future__ import annotations

import os
import signal
import sys

from paradise.cli.app import (
    EXIT_INTERRUPTED,
    ParadiseGroup,
    cli,
    print_interrupted,
    stop_on_signal,
)
from paradise.cli.data import anonymize, load
from paradise.cli.demo import demo
from paradise.cli.examples import examples
from paradise.cli.policy import policy
from paradise.cli.query import explain, query
from paradise.cli.release import release
from paradise.cli.report import report
from paradise.cli.serve import serve
from paradise.cli.suppress import suppress
from paradise.cli.users import user

__all__ = ["ParadiseGroup", "cli", "main"]

for command in (
    demo,
    examples,
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
    signal.signal(signal.SIGINT, stop_on_signal)
    signal.signal(signal.SIGTERM, stop_on_signal)
    try:
        cli.main(args=argv, prog_name="paradise", standalone_mode=True)
    except KeyboardInterrupt:  # outside a command (while starting up)
        print_interrupted()
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:  # `paradise query ... | head`: the reader has gone, not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)

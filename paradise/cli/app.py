"""The click group and the one place expected errors become one-line messages and exit codes.

Exit codes (:data:`EXIT_CODES`, documented in ``docs/cli.md`` and enforced by tests):

====  ================================================================================
0     success
1     refused: the query was refused (policy, syntax, unsupported) or failed verification
2     usage: bad options or arguments, an invalid policy, configuration or input file
3     backend: the database cannot be reached, or it failed
130   interrupted: Ctrl-C or SIGTERM (nothing half-written is left behind)
====  ================================================================================
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import FrameType
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from paradise import __version__
from paradise.errors import ParadiseError

__all__ = [
    "EXIT_BACKEND",
    "EXIT_CODES",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "ParadiseGroup",
    "cli",
    "cli_hint",
    "err_console",
    "out_console",
    "print_error",
]

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_BACKEND = 3
EXIT_INTERRUPTED = 130

EXIT_CODES: Mapping[int, str] = {
    EXIT_OK: "success",
    EXIT_REFUSED: "query refused (policy, syntax, unsupported) or verification failed",
    EXIT_USAGE: "usage error, invalid policy, configuration or input file",
    EXIT_BACKEND: "database unreachable or failed",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C, SIGTERM)",
}

out_console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

# hints written for library callers, as the command line says them
_FLAG_HINTS: tuple[tuple[str, str], ...] = (
    (" (Python: replace=True)", ""),
    ("pass replace=True", "pass --replace"),
    ("pass role=...", "pass --role ROLE"),
    (" or pass pseudonym_secret= to paradise.connect", ""),
    ("pass complete_totals=True", "pass --complete-totals"),
)


def cli_hint(hint: str) -> str:
    """A library hint with keyword arguments replaced by the flags that set them.

    >>> cli_hint('pass role=... (one of: analyst, public)')
    'pass --role ROLE (one of: analyst, public)'
    """
    for library, flag in _FLAG_HINTS:
        hint = hint.replace(library, flag)
    return hint


def print_error(exc: ParadiseError) -> None:
    """The one line an expected error gets on stderr (``error: <kind>: message. Hint: ...``)."""
    if exc.hint:
        exc.hint = cli_hint(exc.hint)
    err_console.print(Text("error", style="bold red") + Text(f": {exc}"))


def print_interrupted() -> None:
    """The one line for Ctrl-C and SIGTERM."""
    err_console.print(Text("interrupted", style="bold red"))


_signalled = threading.Event()


def stop_on_signal(signum: int, frame: FrameType | None) -> None:
    """The SIGINT and SIGTERM handler of the console script: remember that the user asked
    to stop, then stop like Ctrl-C (clean-up runs, exit code 130).

    A library may turn the ``KeyboardInterrupt`` into its own error on the way out (DuckDB
    raises ``RuntimeError: Query interrupted`` when the signal arrives inside a query);
    :class:`ParadiseGroup` reports any error after a signal as the interruption it is.
    """
    _signalled.set()
    raise KeyboardInterrupt


class ParadiseGroup(click.Group):
    """A group that turns :class:`ParadiseError` into one line on stderr and its exit code,
    and an interruption into one line and exit code 130."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException):
            raise
        except ParadiseError as exc:
            if _signalled.is_set():
                print_interrupted()
                ctx.exit(EXIT_INTERRUPTED)
            print_error(exc)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            print_interrupted()
            ctx.exit(EXIT_INTERRUPTED)
        except click.exceptions.Abort:  # Ctrl-C at a prompt: the cursor is after the prompt
            err_console.print()
            print_interrupted()
            ctx.exit(EXIT_INTERRUPTED)
        except Exception:
            if not _signalled.is_set():
                raise
            print_interrupted()
            ctx.exit(EXIT_INTERRUPTED)


@click.group(cls=ParadiseGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="paradise")
def cli() -> None:
    """paradise: privacy-aware SQL. Queries are checked against role policies, rewritten so
    the database computes an anonymized answer, verified (k-anonymity, l-diversity) and
    returned with annotations of what was done.

    Exit codes: 0 ok, 1 refused or verification failed, 2 usage, policy, configuration
    or input error, 3 database error, 130 interrupted. Environment: PARADISE_DB (--db),
    PARADISE_POLICIES (--policies).
    """

"""The click group and the one place expected errors become one-line messages and exit codes."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.text import Text

from paradise import __version__
from paradise.errors import ParadiseError

__all__ = ["ParadiseGroup", "cli", "err_console", "out_console", "print_error"]

out_console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def print_error(exc: ParadiseError) -> None:
    """The one line an expected error gets on stderr (``error: <kind>: message. Hint: ...``)."""
    err_console.print(Text("error", style="bold red") + Text(f": {exc}"))


class ParadiseGroup(click.Group):
    """A group that turns :class:`ParadiseError` into one line on stderr and its exit code.

    Exit codes: 1 query errors, 2 usage and policy errors, 3 backend errors.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ParadiseError as exc:
            print_error(exc)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            err_console.print("interrupted")
            ctx.exit(130)


@click.group(cls=ParadiseGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="paradise")
def cli() -> None:
    """paradise: privacy-aware SQL. Queries are checked against role policies, rewritten so
    the database computes an anonymized answer, verified (k-anonymity, l-diversity) and
    returned with annotations of what was done."""

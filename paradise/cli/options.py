"""Options shared by the commands, and the rules that keep files from appearing uninvited.

``--db`` falls back to the environment variable ``PARADISE_DB`` and ``--policies``
to ``PARADISE_POLICIES``. Commands that only read a database refuse a DuckDB file
that does not exist (DuckDB would create an empty one, so a typo in a path would
leave a new file and answer "table not found"); ``load`` and ``demo`` create it.
``--output FILE`` writes the result to a temporary file next to FILE and renames it
into place at the end, so an interrupted command leaves no half-written file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

import click

from paradise.backends import duckdb_path
from paradise.errors import BackendError

__all__ = [
    "DB_ENV",
    "POLICIES_ENV",
    "db_option",
    "output_option",
    "policies_option",
    "require_database",
    "write_output",
]

DB_ENV = "PARADISE_DB"
"""Environment variable naming the database when ``--db`` is not given."""

POLICIES_ENV = "PARADISE_POLICIES"
"""Environment variable naming the policy directory when ``--policies`` is not given."""

F = TypeVar("F", bound=Callable[..., Any])


def db_option(*, required: bool = False, default: str | None = None, help: str) -> Callable[[F], F]:
    """``--db TARGET`` (env ``PARADISE_DB``)."""
    return click.option(
        "--db",
        "target",
        envvar=DB_ENV,
        show_envvar=True,
        required=required and default is None,
        default=default,
        show_default=default is not None,
        help=help,
    )


def policies_option(help: str = "Directory of role policy YAML files (default: the bundled "
                    "examples).") -> Callable[[F], F]:
    """``--policies DIR`` (env ``PARADISE_POLICIES``)."""
    return click.option(
        "--policies",
        type=click.Path(file_okay=False),
        envvar=POLICIES_ENV,
        show_envvar=True,
        default=None,
        help=help,
    )


def output_option() -> Callable[[F], F]:
    """``--output FILE`` / ``-o FILE``: the result goes to FILE instead of stdout."""
    return click.option(
        "--output",
        "-o",
        "output",
        type=click.Path(dir_okay=False, writable=True),
        default=None,
        help="Write the result to FILE instead of standard output (replaced when complete).",
    )


def require_database(target: str) -> str:
    """``target`` unchanged, if it names a server, ``:memory:`` or an existing DuckDB file.

    Raises:
        BackendError: a DuckDB file that does not exist (SQLSTATE 3D000), so that a
            read-only command never creates an empty database.
    """
    path = duckdb_path(target)
    if path is not None and path != ":memory:" and not Path(path).exists():
        raise BackendError(
            f"database file {path!r} does not exist",
            sqlstate="3D000",
            hint="check the path; paradise load or paradise demo --db FILE creates a database",
        )
    return target


@contextmanager
def write_output(output: str | None) -> Iterator[IO[str] | None]:
    """A text stream to write the result to (None: standard output).

    The data goes to a temporary file in FILE's directory that replaces FILE only when
    the block ends without an exception.
    """
    if output is None:
        yield None
        return
    target = Path(output)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write {output}: {exc.strerror or exc}", param_hint="--output"
        ) from exc
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary, 0o666 & ~umask)  # as an ordinary new file, not mkstemp's 0600
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            yield stream
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise

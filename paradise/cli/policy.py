"""``paradise policy validate``: policy files on their own, and against a database."""

from __future__ import annotations

import click

from paradise.cli.app import EXIT_USAGE, err_console, out_console
from paradise.cli.options import POLICIES_ENV, db_option, require_database
from paradise.policy import load_policies

__all__ = ["policy"]


@click.group()
def policy() -> None:
    """Work with role policy files."""


@policy.command()
@click.argument("directory", type=click.Path(file_okay=False), envvar=POLICIES_ENV)
@db_option(
    help="Also check the policies against this database: tables and columns exist, "
    "operators fit the column types, hierarchies cover the values."
)
@click.option(
    "--role",
    "-r",
    "only",
    multiple=True,
    help="Check only this role against the database (repeatable; default: every role).",
)
def validate(directory: str, target: str | None, only: tuple[str, ...]) -> None:
    """Check every policy file in DIRECTORY (env PARADISE_POLICIES); print one line per role,
    or one located line per problem (exit code 2)."""
    roles = load_policies(directory)
    unknown = sorted(set(only) - set(roles))
    if unknown:
        raise click.BadParameter(
            f"no policy for {', '.join(unknown)} in {directory}", param_hint="--role"
        )
    if only:
        roles = {name: role for name, role in roles.items() if name in only}
    problems = []
    if target is not None:
        from paradise.backends import connect_backend
        from paradise.tools.check_data import check_against_database

        backend = connect_backend(require_database(target), read_only=True)
        try:
            problems = check_against_database(directory, backend, roles=list(roles))
        finally:
            backend.close()
    for problem in problems:
        err_console.print(f"error: policy error: {problem.text()}", markup=False, highlight=False)
    if problems:
        err_console.print(f"{len(problems)} problem(s) found", highlight=False)
        raise click.exceptions.Exit(EXIT_USAGE)
    checked = " (checked against the database)" if target is not None else ""
    for name, role in sorted(roles.items()):
        tables = ", ".join(
            f"{t} ({', '.join(s.name for s in tp.transform) or 'no transform'}; k={tp.privacy.k})"
            for t, tp in role.tables.items()
        )
        out_console.print(f"ok  {name}: {tables}{checked}", markup=False, highlight=False)

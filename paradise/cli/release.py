"""``paradise release list|build|refresh|drop``: the materialized releases of a database."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import click
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from paradise.cli.app import err_console, out_console

__all__ = ["refresh_materialized", "release"]

_db = click.option(
    "--db", "target", required=True, help="DuckDB file or database URL (postgresql://, mysql://)."
)
_policies = click.option(
    "--policies",
    type=click.Path(file_okay=False),
    default=None,
    help="Policy directory (default: the bundled examples).",
)
_role = click.option("--role", "-r", default=None, help="Only this role (default: every role).")
_table = click.option("--table", "-t", default=None, help="Only this table (default: all).")


@click.group()
def release() -> None:
    """Releases: each role's anonymized relation of a table, materialized once inside the
    database, verified once and read by every query of the role."""


def _pairs(proc: Any, role: str | None, table: str | None) -> Iterator[tuple[Any, str]]:
    """(rewrite context, canonical table) for every selected table a role's policy lists."""
    roles = [proc.policy(role).role] if role is not None else list(proc.roles)
    catalog = proc.catalog()
    found = False
    for name in roles:
        ctx = proc.context(name)
        for listed in ctx.policy.tables:
            if table is not None and listed.lower() != table.lower():
                continue
            stored = [t for t in catalog if t.lower() == listed.lower()]
            if len(stored) != 1:
                continue
            found = True
            yield ctx, stored[0]
    if not found:
        from paradise.errors import UndefinedTable

        raise UndefinedTable(
            "no table of the selected roles exists in the database",
            hint="check --role and --table, and load the data first",
        )


def refresh_materialized(proc: Any) -> int:
    """Make every materialized release of ``proc``'s policies current (missing or stale ones
    are built); returns how many were built. ``paradise serve`` runs it before DuckDB
    workers open a shared file read-only (they can read releases, not build them)."""
    before = proc.releases.builds
    catalog = proc.catalog()
    for role in proc.roles:
        ctx = proc.context(role)
        for listed, policy in ctx.policy.tables.items():
            stored = [t for t in catalog if t.lower() == listed.lower()]
            if len(stored) == 1 and policy.release_mode == "materialized":
                proc.releases.build(ctx, stored[0], force=False)
    return int(proc.releases.builds - before)


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


@release.command("list")
@_db
@_policies
@_role
@_table
def list_releases(target: str, policies: str | None, role: str | None, table: str | None) -> None:
    """Show every release: mode, refresh, current version, age, freshness, verification."""
    from paradise.processor import connect

    grid = Table(header_style="bold")
    for column in ("role", "table", "mode", "refresh", "version", "rows", "age", "fresh", "k"):
        grid.add_column(column)
    notes = []
    with connect(target, policies=policies) as proc:
        for ctx, name in _pairs(proc, role, table):
            status = proc.releases.status(ctx, name)
            record = status["record"]
            fresh = {True: "yes", False: "stale", None: "-"}[status["fresh"]]
            k = "-"
            if record is not None:
                checked = record.verification
                k = f"{checked.get('k_achieved')}/{checked.get('k_required')}"
            grid.add_row(
                ctx.role,
                name,
                status["mode"],
                status["refresh"],
                f"v{record.version}" if record is not None else "-",
                str(record.rows) if record is not None else "-",
                _age(record.age_seconds(time.time())) if record is not None else "-",
                fresh,
                k,
            )
            if status["failed"] is not None:
                failed = status["failed"]
                notes.append(f"{ctx.role}/{name}: build v{failed.version} failed: {failed.detail}")
    out_console.print(grid)
    for note in notes:
        out_console.print(note, highlight=False, markup=False)


def _build(
    target: str, policies: str | None, role: str | None, table: str | None, *, force: bool
) -> None:
    from paradise.processor import connect

    with connect(target, policies=policies) as proc:
        pairs = list(_pairs(proc, role, table))
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
        ) as bar:
            for ctx, name in pairs:
                mode = ctx.bound_policy(name).release_mode
                if mode != "materialized" and table is None:
                    out_console.print(
                        f"{ctx.role}/{name}: live (recomputed per query); nothing to build",
                        highlight=False,
                    )
                    continue
                task = bar.add_task(f"building the release of {name} for {ctx.role}", total=None)
                before = proc.releases.builds
                record = proc.releases.build(ctx, name, force=force)
                bar.remove_task(task)
                checked = record.verification
                done = "built" if proc.releases.builds > before else "up to date:"
                out_console.print(
                    f"{ctx.role}/{name}: {done} v{record.version}, {record.rows} rows, "
                    f"k {checked.get('k_achieved')} (required {checked.get('k_required')}), "
                    f"{record.build_ms / 1000:.1f} s",
                    highlight=False,
                )


@release.command("build")
@_db
@_policies
@_role
@_table
def build_releases(
    target: str, policies: str | None, role: str | None, table: str | None
) -> None:
    """Build a new version of each selected release (materialized tables; with --table,
    also a live one), verify it and make it current."""
    _build(target, policies, role, table, force=True)


@release.command("refresh")
@_db
@_policies
@_role
@_table
def refresh_releases(
    target: str, policies: str | None, role: str | None, table: str | None
) -> None:
    """Rebuild the selected releases that are missing or stale (source or policy changed)."""
    _build(target, policies, role, table, force=False)


@release.command("drop")
@_db
@_policies
@_role
@_table
def drop_releases(target: str, policies: str | None, role: str | None, table: str | None) -> None:
    """Drop every version of the selected releases (queries build them again when needed)."""
    from paradise.processor import connect

    with connect(target, policies=policies) as proc:
        for ctx, name in _pairs(proc, role, table):
            dropped = proc.releases.drop(ctx, name)
            out_console.print(
                f"{ctx.role}/{name}: dropped {len(dropped)} table(s)", highlight=False
            )

"""Policies checked against the database they are meant for (``paradise policy validate --db``).

Loading a policy checks it on its own; these checks need the data:

- every table the policy names is in the database, and every classified column
  is in its table (a misspelt column would otherwise be accepted and the real
  column silently hidden);
- every operator fits the type of the columns it transforms: intervals, top/
  bottom coding, rounding, microaggregation and noise need numbers, ``truncate``
  and time coarsening need dates or timestamps, and so do aggregate rules
  (``sum``/``avg``/... on text);
- hierarchies cover every value the column holds (values outside become the
  ``other`` code) — counted, never listed, since an error must not quote data;
- a preferences table exists with its subject column.

Each problem is one :class:`Problem` located at the policy line (or the hierarchy
file) it is about.

Example:
    >>> import paradise
    >>> from paradise.backends.duckdb import DuckDBBackend
    >>> backend = DuckDBBackend(":memory:")
    >>> backend.run("CREATE TABLE adult AS SELECT 'x' AS age, 1 AS id")
    >>> problems = check_against_database(paradise.bundled_policies(), backend, roles=["public"])
    >>> print(problems[0].text().split("public.yaml")[1])
    :13: tables.adult.columns.fnlwgt: column "fnlwgt" is not in table adult
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

from paradise.backends.base import Backend
from paradise.policy.load import load_policy_file, locate_key
from paradise.policy.model import RolePolicy, TablePolicy

__all__ = ["Problem", "check_against_database", "column_kind"]

_NUMERIC_OPERATORS = ("microaggregation", "multivariate_microaggregation", "noise")
_NUMERIC_AGGREGATES = ("sum", "avg", "stddev", "variance", "median")


@dataclass(frozen=True)
class Problem:
    """One problem: where (file and line), which key, and what is wrong."""

    file: Path
    line: int | None
    key: str
    message: str

    def text(self) -> str:
        """``file:line: key: message``."""
        where = f"{self.file}:{self.line}" if self.line is not None else str(self.file)
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


def column_kind(sql_type: str, dialect: str) -> str:
    """``numeric``, ``temporal``, ``text`` or ``other`` for a catalog type.

    >>> column_kind("BIGINT", "duckdb"), column_kind("timestamp with time zone", "postgres")
    ('numeric', 'temporal')
    >>> column_kind("varchar(20)", "mysql"), column_kind("BLOB", "duckdb")
    ('text', 'other')
    """
    try:
        parsed = exp.DataType.build(sql_type, dialect=dialect)
    except (SqlglotError, ValueError):
        return "other"
    if parsed.is_type(*exp.DataType.NUMERIC_TYPES):
        return "numeric"
    if parsed.is_type(*exp.DataType.TEMPORAL_TYPES):
        return "temporal"
    if parsed.is_type(*exp.DataType.TEXT_TYPES):
        return "text"
    return "other"


def check_against_database(
    directory: str | Path, backend: Backend, *, roles: Iterable[str] | None = None
) -> list[Problem]:
    """Every problem of the policies in ``directory`` against ``backend``'s tables.

    The files must load (:func:`paradise.policy.load_policies` raises the first
    problem of a file on its own); ``roles`` limits the check to those roles.
    """
    wanted = set(roles) if roles is not None else None
    catalog = backend.catalog()
    problems: list[Problem] = []
    files = sorted([*Path(directory).glob("*.yaml"), *Path(directory).glob("*.yml")])
    for file in files:
        policy = load_policy_file(file)
        if wanted is not None and policy.role not in wanted:
            continue
        problems += _check_role(file, policy, catalog, backend)
    return problems


# --- per role and table -------------------------------------------------------------------
class _Report:
    """Collects problems for one policy file, locating keys lazily."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.problems: list[Problem] = []

    def add(self, loc: tuple[Any, ...], message: str, *, file: Path | None = None) -> None:
        line = locate_key(self.file, loc) if file is None else None
        key = ".".join(str(p) for p in loc)
        if file is not None:
            message = f"{message} (used at {self.file}:{locate_key(self.file, loc)})"
        self.problems.append(Problem(file or self.file, line, key, message))


def _check_role(
    file: Path, policy: RolePolicy, catalog: Mapping[str, Mapping[str, str]], backend: Backend
) -> list[Problem]:
    report = _Report(file)
    lowered = {name.lower(): name for name in catalog}
    for table, rules in policy.tables.items():
        actual = table if table in catalog else lowered.get(table.lower())
        if actual is None:
            near = _near(table, catalog)
            report.add(("tables", table), f"table {table!r} is not in the database{near}")
            continue
        _check_table(report, table, actual, rules, dict(catalog[actual]), backend)
        if rules.preferences is not None and rules.preferences.table is not None:
            _check_preferences(report, table, rules, catalog)
    return report.problems


def _check_table(
    report: _Report,
    table: str,
    actual: str,
    rules: TablePolicy,
    columns: dict[str, str],
    backend: Backend,
) -> None:
    base = ("tables", table)
    missing = set()
    for name in rules.columns:
        if name not in columns:
            missing.add(name)
            report.add(
                (*base, "columns", name),
                f'column "{name}" is not in table {actual}{_near(name, columns)}',
            )

    def kind(name: str) -> str | None:
        return None if name in missing or name not in columns else column_kind(
            columns[name], backend.dialect
        )

    for index, step in enumerate(rules.transform):
        loc = (*base, "transform", index, step.name)
        params = step.params
        if step.name == "generalization":
            for name, rule in params.columns.items():  # type: ignore[attr-defined]
                _check_recoding(report, (*loc, "columns", name), actual, name, rule,
                                kind(name), columns.get(name, "?"), backend)
        elif step.name in _NUMERIC_OPERATORS:
            for position, name in enumerate(params.columns):  # type: ignore[attr-defined]
                found = kind(name)
                if found not in (None, "numeric"):
                    report.add((*loc, "columns", position),
                               f"{step.name} needs a numeric column; {name} is "
                               f"{columns[name]} ({found})")
    aggregates = rules.aggregates
    if aggregates is not None and aggregates.allowed:
        for func, names in aggregates.allowed.items():
            if func not in _NUMERIC_AGGREGATES:
                continue
            for name in names:
                found = kind(name) if name != "*" else None
                if found not in (None, "numeric"):
                    report.add(
                        (*base, "aggregates", "allowed", func),
                        f"{func} needs a numeric column; {name} is {columns[name]} ({found})",
                    )
    if rules.preferences is not None:
        for name, coarsening in rules.preferences.coarsen.items():
            found = kind(name)
            if coarsening.kind == "time" and found not in (None, "temporal"):
                report.add((*base, "preferences", "coarsen", name),
                           f"time coarsening needs a date or timestamp; {name} is "
                           f"{columns[name]} ({found})")


def _check_recoding(
    report: _Report,
    loc: tuple[Any, ...],
    actual: str,
    name: str,
    rule: Any,
    found: str | None,
    sql_type: str,
    backend: Backend,
) -> None:
    if found is None:
        return
    numeric_rule = next(
        (key for key in ("width", "breaks", "top", "bottom", "round")
         if getattr(rule, key) is not None),
        None,
    )
    if numeric_rule is not None and found != "numeric":
        report.add((*loc, numeric_rule),
                   f"{numeric_rule} needs a numeric column; {name} is {sql_type} ({found})")
    if rule.truncate is not None and found != "temporal":
        report.add((*loc, "truncate"),
                   f"truncate needs a date or timestamp column; {name} is {sql_type} ({found})")
    if rule.hierarchy is not None:
        uncovered, rows = _uncovered(backend, actual, name, [r[0] for r in rule.hierarchy])
        if uncovered:
            where = Path(rule.hierarchy_file) if rule.hierarchy_file else None
            if where is not None and not where.is_absolute():
                where = report.file.parent / where
            report.add(
                loc,
                f"the hierarchy does not cover {uncovered} distinct value(s) of {actual}.{name} "
                f"({rows} row(s)); they would all be released as {rule.other!r}",
                file=where,
            )


def _uncovered(backend: Backend, table: str, column: str, values: list[str]) -> tuple[int, int]:
    """(distinct values, rows) of ``table.column`` outside ``values`` (compared as text)."""
    ref = exp.column(exp.to_identifier(column, quoted=True))
    text = exp.cast(ref, exp.DataType.build("TEXT" if backend.dialect != "mysql" else "CHAR"))
    outside = exp.and_(
        ref.is_(exp.null()).not_(),
        exp.not_(text.isin(*(exp.Literal.string(v) for v in values))) if values else exp.true(),
    )
    query = exp.select(
        exp.Count(this=exp.Distinct(expressions=[ref.copy()])), exp.Count(this=exp.Star())
    ).from_(exp.Table(this=exp.to_identifier(table, quoted=True))).where(outside)
    ((distinct, rows),) = backend.execute(query.sql(backend.dialect)).rows
    return int(distinct), int(rows)


def _check_preferences(
    report: _Report, table: str, rules: TablePolicy, catalog: Mapping[str, Mapping[str, str]]
) -> None:
    prefs = rules.preferences
    assert prefs is not None and prefs.table is not None
    loc = ("tables", table, "preferences", "table")
    if prefs.table not in catalog:
        report.add(loc, f"preferences table {prefs.table!r} is not in the database")
    elif prefs.subject not in catalog[prefs.table]:
        report.add(("tables", table, "preferences", "subject"),
                   f"column {prefs.subject!r} is not in table {prefs.table}")


def _near(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean "x"?)`` for a name that differs only in case or by '-'/'_'."""
    key = name.lower().replace("-", "_").replace(" ", "_")
    for candidate in candidates:
        if candidate != name and candidate.lower().replace("-", "_").replace(" ", "_") == key:
            return f' (did you mean "{candidate}"?)'
    return ""

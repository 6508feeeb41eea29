"""The attacker's harness: a world of its own per backend, and checks computed independently.

Every adversarial test (``tests/security/test_classes_*.py``) and the grammar fuzzer run
their queries through :func:`attempt`, which holds the answer (or the refusal) against
what the test itself can measure without paradise's verification code:

* **nothing written**: a checksum of every table in the scratch schema (and the list of
  tables) is the same before and after the query;
* **nothing read behind the relations**: every statement paradise sent is parsed again
  (:func:`stored_reads_outside_relations`) and every reference to a stored table must
  stand inside one of the ``_paradise_r…`` relations of the statement's outermost ``WITH``;
* **nothing quoted**: no canary (values of tables no policy lists, opted-out values,
  names) appears in an answer or an error, and an error quotes no value of the columns
  the test names as protected;
* **k and l**, recomputed from the raw table with pandas by :func:`assert_groups_k`
  and :func:`assert_rows_k`.

The world is its own scratch DuckDB file, PostgreSQL schema or MariaDB database (made and
dropped like ``tests/backends/conftest.py`` does), because it adds tables no policy
lists (a differently cased ``ADULT`` on the case-sensitive engines, a homoglyph
``аdult`` with a Cyrillic а) whose rows are canaries.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
import sqlglot
from sqlglot import exp

import paradise
from paradise import errors
from paradise.load import load_file
from paradise.policy import load_policies
from paradise.policy.model import RolePolicy
from paradise.processor import bundled_policies
from tests.backends.conftest import ADULT, BACKENDS, Database, _scratch
from tests.security.conftest import SECURITY_POLICIES, RecordingBackend
from tests.security.world import Canaries, canary_tables, leaks

__all__ = [
    "FINDINGS",
    "REFUSALS",
    "findings",
    "Attack",
    "Outcome",
    "assert_groups_k",
    "assert_rows_k",
    "attack",
    "attempt",
    "stored_reads_outside_relations",
]

SHADOW = "canary-shadow-row"
"""The value in every row of the tables no policy lists (``ADULT``, ``аdult``)."""

HOMOGLYPH = "\u0430dult"  # Cyrillic а + "dult"

REFUSALS: tuple[type[errors.ParadiseError], ...] = (
    errors.QueryRejected,
    errors.UnsupportedQueryError,
    errors.VerificationError,
    errors.QuerySyntaxError,
)
"""What a refusal may be: anything but a backend error (which may quote the database)."""

# Roles of the attacker's world beyond the bundled and the security suite's own.
_ROLES: dict[str, dict[str, Any]] = {
    # the smart home counted in people: 120 readings per resident; k and the minimum
    # cell size count residents, never readings
    "people": {
        "role": "people",
        "tables": {
            "sensor_readings": {
                "subject_key": "subject_id",
                "columns": {
                    "subject_id": {"class": "identifier", "release": "pseudonym"},
                    "ts": "insensitive",
                    "room": "quasi_identifier",
                    "sensor": "insensitive",
                    "value": "sensitive",
                },
                "privacy": {"k": 5, "on_violation": "suppress"},
                "aggregates": {"min_cell_size": 5},
            },
            "subjects": {
                "subject_key": "subject_id",
                "columns": {
                    "subject_id": {"class": "identifier", "release": "pseudonym"},
                    "name": "identifier",
                    "birth_year": "quasi_identifier",
                    "district": "quasi_identifier",
                    "household_size": "insensitive",
                },
                "privacy": {"k": 5, "on_violation": "suppress"},
            },
        },
    },
    "people_refuse": {
        "role": "people_refuse",
        "tables": {
            "sensor_readings": {
                "subject_key": "subject_id",
                "columns": {
                    "subject_id": {"class": "identifier", "release": "pseudonym"},
                    "ts": "insensitive",
                    "room": "quasi_identifier",
                    "sensor": "insensitive",
                    "value": "sensitive",
                },
                "privacy": {"k": 5, "on_violation": "refuse"},
            },
        },
    },
    # Adult untransformed, k = 5 and distinct 2-diversity of income, suppressed
    "diverse": {
        "role": "diverse",
        "tables": {
            "adult": {
                "columns": {
                    "id": "identifier",
                    "age": "quasi_identifier",
                    "sex": "quasi_identifier",
                    "race": "quasi_identifier",
                    "education": "quasi_identifier",
                    "hours_per_week": "insensitive",
                    "income": "sensitive",
                },
                "privacy": {"k": 5, "l": 2, "on_violation": "suppress"},
            },
        },
    },
}


FINDINGS: list[tuple[str, frozenset[str], str]] = [
    # (regular expression over the test's node id, engines, reason); findings 1-4 and 6 of
    # the first attack round are fixed and their tests pass
    (
        r"test_no_differencing\[(?!postgres-cast-oracle)",
        frozenset({"duckdb", "postgres", "mysql"}),
        "finding 5 (known limitation): complement queries (count(*) WHERE NOT (<pins one "
        "person> AND income = v)) differ by one between the two incomes",
    ),
]
"""Known findings: tests that fail on the current core, marked strict xfail at run time."""


@pytest.fixture
def findings(request: pytest.FixtureRequest) -> None:
    """Mark a test that hits a known finding as a strict expected failure."""
    import re

    kind = None
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None:
        kind = next((p for p in ("duckdb", "postgres", "mysql") if p in callspec.id), None)
    for pattern, engines, reason in FINDINGS:
        if re.search(pattern, request.node.nodeid) and (kind is None or kind in engines):
            request.node.add_marker(pytest.mark.xfail(strict=True, reason=reason))


def attack_policies() -> dict[str, RolePolicy]:
    """Bundled roles, the security suite's roles and the attacker's world's own."""
    own = {name: RolePolicy.model_validate(body) for name, body in _ROLES.items()}
    return {**load_policies(bundled_policies()), **load_policies(SECURITY_POLICIES), **own}


@dataclass
class Attack:
    """One backend's attacked world."""

    kind: str
    proc: paradise.Processor
    backend: RecordingBackend
    admin: Any  # a backend of its own for checksums (never the recorded one)
    canaries: Canaries = field(repr=False)
    secret: str = field(repr=False)
    raw: dict[str, pd.DataFrame] = field(repr=False, default_factory=dict)
    tables: tuple[str, ...] = ()
    baseline: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def dialect(self) -> str:
        return self.backend.dialect

    def checksums(self) -> dict[str, tuple[Any, ...]]:
        """Row count and an order-independent checksum of every table of the schema."""
        return {name: _checksum(self.admin, self.kind, name) for name in self._table_names()}

    def _table_names(self) -> list[str]:
        if self.kind == "duckdb":
            sql = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
        elif self.kind == "postgres":
            sql = (
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        else:
            sql = (
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = DATABASE()"
            )
        # paradise's own release tables (``_paradise_rel_*``, ``_paradise_releases``) are
        # built by paradise, not by a query: the invariant is about the data tables
        names = (str(r[0]) for r in self.admin.execute(sql).rows)
        return sorted(n for n in names if not n.lower().startswith("_paradise_"))


def _checksum(admin: Any, kind: str, name: str) -> tuple[Any, ...]:
    ident = exp.to_identifier(name, quoted=True).sql(admin.dialect)
    if kind == "duckdb":
        sql = f"SELECT count(*), sum(hash(t)) FROM {ident} AS t"
    elif kind == "postgres":
        sql = f"SELECT count(*), sum(hashtext(t::text)::numeric) FROM {ident} AS t"
    else:  # a SELECT (the read-only query path runs no CHECKSUM TABLE)
        from tests.helpers import table_checksums

        return tuple(table_checksums(admin, [name])[name])
    return tuple(admin.execute(sql).rows[0])


def _load(database: Database) -> tuple[Canaries, tuple[str, ...]]:
    loader = database.connect()
    tables, canaries = canary_tables()
    try:
        load_file(loader, ADULT, "adult", add_id="id", replace=True)
        with tempfile.TemporaryDirectory(prefix="paradise_attack_") as tmp:
            for name, table in tables.items():
                path = Path(tmp) / f"{name}.parquet"
                pq.write_table(table, path)
                load_file(loader, path, name, replace=True)
        shadows = [HOMOGLYPH, "adult_private"]
        if database.kind != "duckdb":  # DuckDB names are case-insensitive: no second table
            shadows += ["ADULT", "Adult"]
        for shadow in shadows:
            ident = exp.to_identifier(shadow, quoted=True).sql(loader.dialect)
            loader.run(
                f"CREATE TABLE {ident} (id INTEGER, age INTEGER, income VARCHAR(40), "
                "race VARCHAR(40), sex VARCHAR(40), secret VARCHAR(40))"
            )
            loader.run(
                f"INSERT INTO {ident} VALUES (1, 19, '{SHADOW}', '{SHADOW}', '{SHADOW}', "
                f"'{SHADOW}'), (2, 19, '{SHADOW}', 'Other', 'Male', '{SHADOW}')"
            )
    finally:
        loader.close()
    return canaries, tuple(["adult", *tables, *shadows])


@pytest.fixture(scope="session", params=BACKENDS)
def attack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
    Attack
]:
    """Adult, the canary smart home and tables no policy lists, on one backend."""
    with _scratch(request.param, tmp_path_factory) as database:
        canaries, tables = _load(database)
        backend = RecordingBackend(database.connect())
        admin = backend.inner if database.kind == "duckdb" else database.connect()
        secret = secrets.token_hex(32)
        proc = paradise.connect(backend, policies=attack_policies(), pseudonym_secret=secret)
        raw = {
            name: _frame(admin, name) for name in ("adult", "sensor_readings", "subjects")
        }
        world = Attack(database.kind, proc, backend, admin, canaries, secret, raw, tables)
        world.baseline = world.checksums()  # no query may ever change any table
        try:
            yield world
        finally:
            proc.close()
            if admin is not backend.inner:
                admin.close()


def _frame(admin: Any, name: str) -> pd.DataFrame:
    """The stored table read directly (not through paradise): the independent truth."""
    ident = exp.to_identifier(name, quoted=True).sql(admin.dialect)
    result = admin.execute(f"SELECT * FROM {ident}")
    return pd.DataFrame(list(result.rows), columns=list(result.columns))


# --- one query, every invariant ---------------------------------------------------------


@dataclass
class Outcome:
    """What a query did: its answer, or the refusal."""

    sql: str
    result: paradise.Result | None = None
    error: errors.ParadiseError | None = None
    statements: list[str] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        return self.error is not None

    @property
    def rows(self) -> list[tuple[Any, ...]]:
        return list(self.result.rows) if self.result is not None else []

    def frame(self) -> pd.DataFrame:
        assert self.result is not None
        return pd.DataFrame(self.rows, columns=list(self.result.columns))


def attempt(
    world: Attack,
    sql: str,
    role: str,
    *,
    params: Sequence[Any] | None = None,
    protected: Sequence[tuple[str, str]] = (),
    allowed: tuple[type[errors.ParadiseError], ...] = REFUSALS,
    checksums: bool = True,
    read_dialect: str | None = None,
) -> Outcome:
    """Run ``sql`` as ``role`` and check every invariant that holds whatever the answer.

    ``protected`` names ``(table, column)`` pairs no error may quote a value of. A refusal
    must be one of ``allowed``; a backend error is a finding unless the test allows it.
    """
    before = world.baseline if checksums else None
    start = len(world.backend.statements)
    outcome = Outcome(sql)
    try:
        outcome.result = world.proc.query(sql, role=role, params=params, read_dialect=read_dialect)
    except errors.ParadiseError as exc:
        outcome.error = exc
    except Exception as exc:  # anything else escaping the library is a finding
        raise AssertionError(f"non-paradise exception {type(exc).__name__}: {exc}") from exc
    outcome.statements = list(world.backend.statements[start:])
    if before is not None:
        assert world.checksums() == before, f"a table changed (or appeared): {sql}"
    stored = {t.lower() for t in world.tables} | {t.lower() for t in world.proc.catalog()}
    stored = {t for t in stored if not t.startswith("_paradise_")}  # releases: anonymized
    for statement in outcome.statements:
        if _bookkeeping(statement):
            continue
        outside = stored_reads_outside_relations(statement, world.dialect, stored)
        assert not outside, f"stored table(s) {outside} read outside the relations: {statement}"
        assert world.secret not in statement
    if outcome.error is not None:
        text = _error_text(outcome.error)
        assert world.secret not in text
        found = leaks([(text,)], world.canaries, row_level=True) + _shadow([(text,)])
        assert not found, f"an error quotes protected data: {found}"
        quoted = _quoted_values(world, text, protected, sql)
        assert not quoted, f"the error quotes stored values {quoted}: {text}"
        assert isinstance(outcome.error, allowed), (
            f"{type(outcome.error).__name__} is not a refusal: {text}"
        )
        return outcome
    assert outcome.result is not None
    rows = outcome.rows
    found = _shadow(rows)
    assert not found, f"rows of a table no policy lists were released: {found[:3]}"
    if role in ("assistant", "residents_file"):
        assert not leaks(rows, world.canaries, row_level=False)
    ann = repr(outcome.result.annotations.to_dict()) + "\n".join(
        outcome.result.annotations.notices()
    )
    assert world.secret not in ann
    return outcome


def _error_text(error: errors.ParadiseError) -> str:
    parts = [str(error), str(getattr(error, "hint", "") or ""), str(getattr(error, "detail", ""))]
    return "\n".join(parts)


def _shadow(rows: Any) -> list[str]:
    return [str(c) for row in rows for c in row if isinstance(c, str) and SHADOW in c]


def _quoted_values(
    world: Attack, text: str, protected: Sequence[tuple[str, str]], sql: str
) -> list[str]:
    """Stored values of the protected columns inside quoted strings of ``text`` (values the
    query itself spells out do not count)."""
    import re

    quoted = re.findall(r"'([^']*)'|\"([^\"]*)\"", text)
    segments = [a or b for a, b in quoted]
    found = []
    for table, column in protected:
        frame = world.raw[table]
        for value in frame[column].dropna().unique():
            token = str(value)
            if len(token) >= 3 and token not in sql and any(token in seg for seg in segments):
                found.append(token)
    return found


def _bookkeeping(statement: str) -> bool:
    """paradise's own release bookkeeping (metadata, source fingerprints, build locks): statements
    built without any text of the user's query, which read stored tables by design."""
    if "_paradise_r_" in statement:
        return False  # a statement that carries the user's query: always checked
    if not statement.lstrip().upper().startswith(("SELECT", "WITH", "(")):
        return True  # a release build's own DDL (the read-only query path runs no other)
    lowered = statement.lower()
    markers = (
        "_paradise_releases",
        "pragma_storage_info",
        "xmin",
        "update_time",
        "pg_catalog.pg_locks",  # a release's build lock, probed on the query session
        "is_used_lock",
    )
    return any(marker in lowered for marker in markers)


def stored_reads_outside_relations(sql: str, dialect: str, stored: set[str]) -> list[str]:
    """Stored tables a generated statement names outside its ``_paradise_r…`` relations.

    Independent of paradise's own check: a table node whose name (any letter case) is a
    table of the database must have, among its ancestors, a CTE of the statement's
    outermost ``WITH`` named ``_paradise_r…``; any other table node must name a CTE
    defined somewhere in the statement.
    """
    tree = sqlglot.parse_one(sql, read=dialect)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    top = tree.args.get("with_")
    relations = {
        id(cte) for cte in (top.expressions if isinstance(top, exp.With) else [])
        if cte.alias_or_name.lower().startswith("_paradise_r")
    }
    bad = []
    for table in tree.find_all(exp.Table):
        name = table.name.lower()
        if name.startswith("_paradise_rel"):
            continue  # a materialized release: the anonymized relation itself, no raw data
        inside = False
        node: exp.Expr | None = table.parent
        while node is not None:
            if id(node) in relations:
                inside = True
                break
            node = node.parent
        if inside:
            continue
        if name in stored or table.args.get("db") or not isinstance(table.this, exp.Identifier):
            bad.append(table.sql(dialect))
        elif name not in ctes:
            bad.append(table.sql(dialect))
    return bad


# --- k and l, recomputed from the raw table ---------------------------------------------

Filter = Callable[[pd.DataFrame], "pd.Series[bool]"]


def _contributors(frame: pd.DataFrame, subject: str | None) -> int:
    return int(frame[subject].nunique()) if subject else len(frame)


def assert_groups_k(
    outcome: Outcome,
    raw: pd.DataFrame,
    where: Filter,
    labels: dict[str, str],
    k: int,
    *,
    subject: str | None = None,
    values: Sequence[str] = (),
) -> None:
    """Every released group comes from ≥ k contributors of ``raw`` (recomputed here).

    ``where`` is the query's filter in pandas; ``labels`` maps output columns to the raw
    columns they group by. A group whose labels were blanked must release none of
    ``values`` (the aggregate outputs).
    """
    if outcome.result is None:
        return
    base = raw[where(raw)]
    for row in outcome.frame().itertuples(index=False):
        record = dict(zip(outcome.result.columns, row, strict=True))
        blanked = [out for out, col in labels.items() if record[out] is None and base[col].notna().all()]
        if blanked:
            released = {v: record[v] for v in values if record[v] is not None}
            assert not released, f"a suppressed group releases {released}: {outcome.sql}"
            continue
        sub = base
        for out, col in labels.items():
            sub = sub[sub[col].isna()] if record[out] is None else sub[sub[col] == record[out]]
        n = _contributors(sub, subject)
        shown = {c: record[c] for c in [*labels, *values] if record[c] is not None}
        assert n >= k or not shown, (
            f"group {record} comes from {n} < {k} contributors: {outcome.sql}"
        )


def assert_rows_k(
    outcome: Outcome,
    raw: pd.DataFrame,
    where: Filter,
    outputs: dict[str, str],
    classes: Sequence[str],
    k: int,
    *,
    subject: str | None = None,
    sensitive: dict[str, str] | None = None,
    l: int | None = None,  # noqa: E741
) -> None:
    """Every released row belongs to a class (over ``classes``: every quasi-identifier the
    query outputs or constrains) of ≥ k contributors among the rows the filter keeps,
    and — with ``l`` — that class has ≥ l distinct values of each sensitive output.

    ``outputs`` maps output columns to raw columns (for matching released rows to
    candidates). Checked as a count: the released rows showing given output values are
    at most the raw rows of large (and diverse) classes showing them.
    """
    if outcome.result is None or not outcome.rows:
        return
    base = raw[where(raw)].copy()
    cls = list(classes)
    if cls:
        grouped = base.groupby(cls, dropna=False)
        size = grouped[subject].transform("nunique") if subject else grouped[cls[0]].transform(
            "size"
        )
    else:
        size = pd.Series(_contributors(base, subject), index=base.index)
    ok = size >= k
    if l is not None and sensitive:
        for col in sensitive.values():
            div = base.groupby(cls, dropna=False)[col].transform("nunique") if cls else pd.Series(
                base[col].nunique(), index=base.index
            )
            ok &= div >= l
    good = base[ok]
    released = outcome.frame()
    cols = [c for c in outputs if c in released.columns]
    if not cols:
        assert len(released) <= len(good), (
            f"{len(released)} rows released, {len(good)} in classes ≥ {k}: {outcome.sql}"
        )
        return
    shown = released[cols].astype(object).where(released[cols].notna(), None)
    for key, count in shown.value_counts(dropna=False).items():
        key = key if isinstance(key, tuple) else (key,)
        sub = good
        for out, value in zip(cols, key, strict=True):
            col = outputs[out]
            if value is None or (isinstance(value, float) and pd.isna(value)):
                continue  # a blanked value matches any
            sub = sub[sub[col] == value]
        assert count <= len(sub), (
            f"{count} released rows {dict(zip(cols, key, strict=True))} but only {len(sub)} "
            f"raw rows in classes ≥ {k}: {outcome.sql}"
        )

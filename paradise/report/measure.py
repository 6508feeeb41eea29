"""Measuring inside the database: scratch tables and pushed-down aggregate SQL.

The report anonymizes a table the way the role would receive it and measures
the result where the data live:

1. **The released copy.** The role's anonymized relation
   (:attr:`paradise.plan.TablePlan.relation`) is materialized once as a scratch
   table ``_paradise_report_<id>_rel``, and the policy's ``on_violation`` is
   applied to it in SQL exactly as ``paradise anonymize`` does (suppression of
   violating classes). One materialization, so every figure describes the same
   draw of the random operators (slicing's permutation, unseeded noise).
2. **The linked copy** for measures that compare a record with its own
   anonymized version (IL1s, interval disclosure, record linkage, the
   classifier's hold-out split). Anonymization may permute rows (slicing) and
   never releases a row key, so a second copy is made from a scratch copy of the
   source that carries internal row keys ``_paradise_report_rk<j>``: one per
   linkable unit, placed in that slicing group (or one key for an unsliced
   table), classified ``insensitive`` so that every operator carries it along
   unchanged. A record's original and anonymized values of a column are matched
   on the key of the column's unit. The keys are read by the report and never
   released; all scratch tables are dropped afterwards. Seeded draws (noise,
   PRAM) are keyed by a row's values, which now include the key, so the linked
   copy is another draw from the same mechanism — equal in distribution to the
   release, not value-for-value the same.
3. **Aggregates, not rows.** k-anonymity, sample uniques and per-record risk
   come from one ``GROUP BY`` over the unit's quasi-identifiers grouped again
   by class size; distinct and entropy l-diversity and t-closeness with the
   equal-distance EMD from ``GROUP BY (class, value)`` aggregated in SQL. The
   ordered EMD fetches the per-(class, value) counts (at most one row per
   distinct pair, never a record) and finishes in numpy.
4. **Rows where a measure needs them, and only those columns:** regression,
   the classifier, moments/correlations/eigenvalues (computed from the same
   fetched numeric columns), IL1s, interval disclosure and record linkage.

Every SQL statement is built with sqlglot expressions and rendered in the
backend's dialect.

Example:
    >>> import paradise
    >>> proc = paradise.connect(":memory:")
    >>> proc.backend.run(
    ...     "CREATE TABLE t AS SELECT * FROM (VALUES ('a', 1), ('a', 2), ('b', 3)) v(q, s)")
    >>> sorted(class_size_counts(proc.backend, "t", ("q",)).items())
    [(1, 1), (2, 1)]
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from paradise.anonymize.secret import DrawKey
from paradise.backends.base import Backend
from paradise.errors import UndefinedTable, VerificationError
from paradise.plan import TablePlan, plan_table
from paradise.policy.model import ColumnClass, ColumnRule, TablePolicy
from paradise.postprocess.classes import class_ids
from paradise.release.verify import verify_stored
from paradise.report.risk import ordered_emd_sparse

__all__ = [
    "KEY_PREFIX",
    "Workspace",
    "categorical_t",
    "class_size_counts",
    "diversity",
    "fetch",
    "materialize",
    "ordered_t",
    "ordinal_array",
    "value_counts",
]

KEY_PREFIX = "_paradise_report_rk"
_NUMERIC = ("INT", "DECIMAL", "NUMERIC", "DOUBLE", "FLOAT", "REAL", "HUGEINT")


def _col(name: str, table: str | None = None) -> exp.Column:
    return exp.column(
        exp.to_identifier(name, quoted=True),
        table=exp.to_identifier(table, quoted=True) if table else None,
    )


def _table(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


def _sub(query: exp.Query, alias: str) -> exp.Subquery:
    return query.subquery(exp.to_identifier(alias, quoted=True))


def is_numeric_type(sql_type: str) -> bool:
    """Whether a catalog type is numeric.

    >>> is_numeric_type("BIGINT"), is_numeric_type("VARCHAR")
    (True, False)
    """
    upper = sql_type.upper()
    return any(t in upper for t in _NUMERIC) and "INTERVAL" not in upper


@dataclass
class Workspace:
    """Scratch tables of one measurement (names start with ``_paradise_report_``).

    Attributes:
        backend: where they live.
        table: the stored table measured.
        columns: the stored table's catalog columns and types.
        plan: the role's plan (the released relation).
        released: scratch table holding the released copy.
        source: scratch copy of the source with row keys (None: no linked copy).
        linked: scratch table holding the linked copy (None: not made).
        keys: column -> the row-key column of its unit (in ``source`` and ``linked``).
        verification: what applying ``on_violation`` did (or would have done).
        notes: human-readable remarks for the report.
        timings: seconds per step.
    """

    backend: Backend
    table: str
    columns: dict[str, str]
    plan: TablePlan
    released: str
    source: str | None = None
    linked: str | None = None
    keys: dict[str, str] = field(default_factory=dict)
    verification: str = "none"
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


def _lookup(catalog: Any, name: str) -> tuple[str, dict[str, str]]:
    for stored, columns in catalog.items():
        if stored.lower() == name.lower():
            return stored, dict(columns)
    raise UndefinedTable(f'table "{name}" does not exist', hint="load it first")


def _run(backend: Backend, statement: exp.Expr) -> None:
    backend.run(statement.sql(backend.dialect))


def _create(backend: Backend, name: str, query: exp.Query) -> None:
    _run(backend, exp.Create(kind="TABLE", this=_table(name), expression=query))


def _drop(backend: Backend, name: str) -> None:
    _run(backend, exp.Drop(kind="TABLE", tables=[_table(name)], exists=True))


def _apply_policy(backend: Backend, name: str, plan: TablePlan) -> str:
    """Apply ``on_violation`` in SQL as ``paradise anonymize`` does; describe the outcome."""
    try:
        units, suppressed_rows = verify_stored(
            backend, None, name, plan, keyed=False, what=f'the anonymized table "{name}"'
        )
    except VerificationError:
        return "refuse: the policy would refuse this relation (classes below k or l)"
    suppressed = sum(u.suppressed_values for u in units)
    if suppressed:
        return f"suppress: {suppressed} values in {suppressed_rows} rows set to NULL"
    if any(u.violating_rows for u in units):
        return f"{plan.on_violation.value}: violations reported, nothing changed"
    return "none: every class meets k and l"


def _linked_policy(
    policy: TablePolicy, visible: tuple[str, ...], dialect: str, table: str
) -> tuple[TablePolicy, dict[str, str]] | None:
    """The table policy with row keys added (one per slicing unit), or None if unsupported."""
    from paradise.anonymize.base import OperatorContext
    from paradise.anonymize.slicing import Slicing

    slicing = [i for i, s in enumerate(policy.transform) if s.name == "slicing"]
    if len(slicing) > 1:
        return None
    keys: dict[str, str] = {}
    transform = list(policy.transform)
    extra: list[str] = []
    if slicing:
        step = transform[slicing[0]]
        ctx = OperatorContext(table=table, dialect=dialect, columns=visible)
        units = Slicing().linkable_units(step.params, ctx)  # type: ignore[arg-type]
        groups = []
        for j, unit in enumerate(units):
            key = f"{KEY_PREFIX}{j}"
            extra.append(key)
            keys.update({c: key for c in unit})
            groups.append((*unit, key))
        params = step.params.model_copy(update={"groups": tuple(groups)})
        transform[slicing[0]] = step.model_copy(update={"params": params})
    else:
        key = f"{KEY_PREFIX}0"
        extra.append(key)
        keys.update({c: key for c in visible})
    rule = ColumnRule.model_validate(ColumnClass.INSENSITIVE.value)
    columns = {**policy.columns, **{k: rule for k in extra}}
    return policy.model_copy(update={"columns": columns, "transform": tuple(transform)}), keys


def _plan(
    table: str,
    policy: TablePolicy,
    columns: dict[str, str],
    dialect: str,
    backend: Backend,
    draw: DrawKey | None = None,
) -> TablePlan:
    """Plan without rewrite-time database access if the operators allow it.

    With access, operators that define ``report`` re-run the whole relation to
    count what they did (e.g. local suppression); the report does not need those
    counts, so the database is only handed over when an operator requires it.
    """
    from paradise.errors import UnsupportedQueryError
    from paradise.pipeline import BackendAccess

    try:
        return plan_table(table, policy, columns, dialect, draw=draw)
    except UnsupportedQueryError:
        access = BackendAccess(backend)
        return plan_table(table, policy, columns, dialect, database=access, draw=draw)


@contextmanager
def materialize(
    backend: Backend,
    catalog: Any,
    table: str,
    policy: TablePolicy,
    *,
    linked: bool = True,
    draw: DrawKey | None = None,
) -> Iterator[Workspace]:
    """Create the scratch tables for measuring ``table`` under ``policy``; drop them on exit.

    Args:
        backend: the database.
        catalog: the backend's catalog (``{table: {column: type}}``).
        table: the stored table.
        policy: the role's table policy.
        linked: also make the linked copy (row keys) for record-level measures.
        draw: the role's key for repeatable draws (:mod:`paradise.anonymize.secret`).
    """
    import time

    stored, columns = _lookup(catalog, table)
    dialect = backend.dialect
    tag = uuid.uuid4().hex[:10]
    names = {k: f"_paradise_report_{tag}_{k}" for k in ("rel", "src", "lnk")}
    created: list[str] = []
    try:
        t0 = time.perf_counter()
        plan = _plan(stored, policy, columns, dialect, backend, draw)
        created.append(names["rel"])
        _create(backend, names["rel"], plan.relation)
        ws = Workspace(backend=backend, table=stored, columns=columns, plan=plan,
                       released=names["rel"])
        ws.verification = _apply_policy(backend, names["rel"], plan)
        ws.timings["released_copy"] = time.perf_counter() - t0
        if linked:
            t0 = time.perf_counter()
            derived = _linked_policy(policy, plan.columns, dialect, stored)
            if derived is None:
                ws.notes.append("record-level measures skipped: more than one slicing step")
            else:
                linked_policy, keys = derived
                key_names = sorted(set(keys.values()))
                number = exp.alias_(
                    exp.Window(this=exp.func("ROW_NUMBER")), "_paradise_report_n", quoted=True
                )
                numbered = exp.select(exp.Star(), number).from_(_table(stored))
                src = exp.select(
                    *(_col(c) for c in columns),
                    *(exp.alias_(_col("_paradise_report_n"), k, quoted=True) for k in key_names),
                ).from_(_sub(numbered, "_paradise_report_s"))
                created.append(names["src"])
                _create(backend, names["src"], src)
                src_columns = {**columns, **{k: "BIGINT" for k in key_names}}
                lplan = _plan(names["src"], linked_policy, src_columns, dialect, backend, draw)
                created.append(names["lnk"])
                _create(backend, names["lnk"], lplan.relation)
                _apply_policy(backend, names["lnk"], lplan)
                ws.source, ws.linked, ws.keys = names["src"], names["lnk"], keys
            ws.timings["linked_copy"] = time.perf_counter() - t0
        yield ws
    finally:
        for name in reversed(created):
            _drop(backend, name)


def _not_all_null(qis: Sequence[str]) -> exp.Expr:
    return exp.not_(
        exp.and_(*(exp.Is(this=_col(q), expression=exp.null()) for q in qis)), copy=False
    )


def class_size_counts(
    backend: Backend, relation: str | exp.Query, qis: Sequence[str]
) -> dict[int, int]:
    """``{f: number of classes of size f}`` computed in the database.

    ``SELECT n, COUNT(*) FROM (SELECT COUNT(*) AS n FROM r GROUP BY qis) GROUP BY n``;
    rows whose quasi-identifiers are all NULL (wholly suppressed) form no class,
    as in paradise's verification. ``relation`` is a table name or a query.
    """
    source = _source(relation)
    n = exp.alias_(exp.Count(this=exp.Star()), "_paradise_n", quoted=True)
    classes = exp.select(n).from_(source).where(_not_all_null(qis)).group_by(
        *(_col(q) for q in qis)
    )
    query = exp.select(_col("_paradise_n"), exp.Count(this=exp.Star())).from_(
        _sub(classes, "_paradise_c")
    ).group_by(_col("_paradise_n"))
    rows = backend.execute(query.sql(backend.dialect)).rows
    return {int(f): int(c) for f, c in rows}


def _one_row(backend: Backend, query: exp.Query, width: int) -> tuple[Any, ...]:
    """The single row of an aggregate without GROUP BY; all NULL if the driver returns none.

    (Over an empty input such a query has one row of NULLs; some drivers' result
    paths return no row for it.)
    """
    rows = backend.execute(query.sql(backend.dialect)).rows
    return tuple(rows[0]) if rows else (None,) * width


def _source(relation: str | exp.Query) -> exp.Expr:
    if isinstance(relation, str):
        return _table(relation)
    return _sub(relation, "_paradise_r")


def _class_values(relation: str | exp.Query, qis: Sequence[str], sensitive: str) -> exp.Select:
    """``SELECT qis, s, COUNT(*) AS c ... GROUP BY qis, s`` (NULL sensitive values left out)."""
    c = exp.alias_(exp.Count(this=exp.Star()), "_paradise_c", quoted=True)
    cond = exp.and_(
        _not_all_null(qis), exp.not_(exp.Is(this=_col(sensitive), expression=exp.null()))
    )
    return (
        exp.select(*(_col(q) for q in qis), _col(sensitive), c)
        .from_(_source(relation))
        .where(cond)
        .group_by(*(_col(q) for q in qis), _col(sensitive))
    )


def diversity(
    backend: Backend, relation: str | exp.Query, qis: Sequence[str], sensitive: str
) -> tuple[int | None, float | None]:
    """(distinct l, entropy l) of ``sensitive`` over the classes of ``qis``, in SQL.

    Per class ``n = Σ c``, distinct l ``= COUNT(*)`` of its (class, value) rows and
    ``H = ln n − Σ c·ln c / n``; the result is the minimum of each over the
    classes, the entropy l as ``exp(min H)`` (Machanavajjhala et al. 2007).
    """
    cv = _class_values(relation, qis, sensitive)
    c = _col("_paradise_c")
    per_class = (
        exp.select(
            exp.alias_(exp.Sum(this=c), "_paradise_n", quoted=True),
            exp.alias_(exp.Count(this=exp.Star()), "_paradise_d", quoted=True),
            exp.alias_(
                exp.Sum(this=exp.Mul(this=c.copy(), expression=exp.Ln(this=c.copy()))),
                "_paradise_cl",
                quoted=True,
            ),
        )
        .from_(_sub(cv, "_paradise_cv"))
        .group_by(*(_col(q) for q in qis))
    )
    n = exp.cast(_col("_paradise_n"), exp.DataType.Type.DOUBLE)
    entropy = exp.Sub(
        this=exp.Ln(this=n),
        expression=exp.Div(this=_col("_paradise_cl"), expression=n.copy()),
    )
    query = exp.select(exp.Min(this=_col("_paradise_d")), exp.Min(this=entropy)).from_(
        _sub(per_class, "_paradise_pc")
    )
    row = _one_row(backend, query, 2)
    if row[0] is None:
        return None, None
    return int(row[0]), float(np.exp(max(float(row[1]), 0.0)))


def categorical_t(
    backend: Backend, relation: str | exp.Query, qis: Sequence[str], sensitive: str
) -> float | None:
    """t-closeness with the equal-distance EMD, entirely in SQL (Li et al. 2007).

    ``EMD(P, Q) = ½ Σ_v |p_v − q_v|``; values absent from a class contribute
    ``q_v``, so per class ``EMD = ½ (1 + Σ_{v in class} (|p_v − q_v| − q_v))`` and
    only the class's own (class, value) rows are needed. Returns the maximum.
    """
    cv = _class_values(relation, qis, sensitive)
    total = exp.Window(this=exp.Sum(this=exp.Sum(this=_col("_paradise_c"))))
    overall = (
        exp.select(
            _col(sensitive),
            exp.alias_(
                exp.Div(
                    this=exp.cast(exp.Sum(this=_col("_paradise_c")), exp.DataType.Type.DOUBLE),
                    expression=total,
                ),
                "_paradise_q",
                quoted=True,
            ),
        )
        .from_(_sub(cv.copy(), "_paradise_cv0"))
        .group_by(_col(sensitive))
    )
    class_total = exp.Window(
        this=exp.Sum(this=_col("_paradise_c", "cv")),
        partition_by=[_col(q, "cv") for q in qis],
    )
    p = exp.Div(this=exp.cast(_col("_paradise_c", "cv"), exp.DataType.Type.DOUBLE),
                expression=class_total)
    joined = (
        exp.select(
            *(_col(q, "cv") for q in qis),
            exp.alias_(p, "_paradise_p", quoted=True),
            _col("_paradise_q", "ov"),
        )
        .from_(_sub(cv, "cv"))
        .join(_sub(overall, "ov"),
              on=exp.EQ(this=_col(sensitive, "cv"), expression=_col(sensitive, "ov")))
    )
    term = exp.Sub(
        this=exp.Abs(this=exp.Sub(this=_col("_paradise_p"), expression=_col("_paradise_q"))),
        expression=_col("_paradise_q"),
    )
    per_class = exp.select(exp.alias_(exp.Sum(this=term), "_paradise_s", quoted=True)).from_(
        _sub(joined, "_paradise_j")
    ).group_by(*(_col(q) for q in qis))
    emd = exp.Mul(
        this=exp.Literal.number(0.5),
        expression=exp.Paren(this=exp.Add(this=exp.Literal.number(1),
                                          expression=_col("_paradise_s"))),
    )
    query = exp.select(exp.Max(this=emd)).from_(_sub(per_class, "_paradise_e"))
    value = _one_row(backend, query, 1)[0]
    return None if value is None else max(0.0, float(value))


def ordered_t(
    backend: Backend, relation: str | exp.Query, qis: Sequence[str], sensitive: str
) -> float | None:
    """t-closeness with the ordered EMD (numeric sensitive values; Li et al. 2007).

    The per-(class, value) counts are aggregated in SQL and fetched (one row per
    distinct pair, never a record); the cumulative differences are summed in numpy.
    """
    cv = _class_values(relation, qis, sensitive)
    result = backend.execute(cv.sql(backend.dialect)).table
    if result.num_rows == 0:
        return None
    q = len(qis)
    ids = class_ids(result, list(range(q)))
    values = ordinal_array(result.column(q))
    keep = ~np.isnan(values)
    if not keep.any():
        return None
    _, order = np.unique(values[keep], return_inverse=True)  # dense codes in value order
    weights = np.asarray(result.column(q + 1).to_numpy(zero_copy_only=False), dtype=np.int64)
    _, dense = np.unique(ids[keep], return_inverse=True)
    m = int(order.max()) + 1
    return float(ordered_emd_sparse(dense.reshape(-1), order.reshape(-1), weights[keep], m).max())


def ordinal_array(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Floats that keep the order of a numeric, date or timestamp column (NaN for NULL).

    Dates become days and timestamps seconds since 1970-01-01; other types go
    through :func:`numeric_array` (interval labels become their midpoints).

    >>> import datetime
    >>> ordinal_array(pa.array([datetime.date(1970, 1, 2), None])).tolist()
    [1.0, nan]
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_date(column.type):
        ints = column.cast(pa.date32()).cast(pa.int32())
    elif pa.types.is_timestamp(column.type):
        ints = column.cast(pa.timestamp("s", tz=column.type.tz), safe=False).cast(pa.int64())
    elif pa.types.is_time(column.type):
        ints = column.cast(pa.time64("us")).cast(pa.int64())
    elif pa.types.is_boolean(column.type):
        ints = column.cast(pa.int8())
    else:
        return numeric_array(column)
    return np.asarray(ints.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False),
                      dtype=float)


def value_counts(
    backend: Backend, relation: str, column: str, limit: int
) -> dict[str, int]:
    """``{value as text: records}`` of the ``limit`` most frequent non-NULL values, in SQL.

    ``SELECT c, COUNT(*) FROM r WHERE c IS NOT NULL GROUP BY c ORDER BY 2 DESC LIMIT n``;
    values are keyed by their text (numbers as Python would print them).
    """
    n = exp.alias_(exp.Count(this=exp.Star()), "_paradise_n", quoted=True)
    query = (
        exp.select(_col(column), n)
        .from_(_table(relation))
        .where(exp.not_(exp.Is(this=_col(column), expression=exp.null())))
        .group_by(_col(column))
        .order_by(exp.Ordered(this=_col("_paradise_n"), desc=True))
        .limit(limit)
    )
    rows = backend.execute(query.sql(backend.dialect)).rows
    return {str(v): int(c) for v, c in rows}


def fetch(backend: Backend, table: str, columns: Sequence[str]) -> pa.Table:
    """The named columns of a scratch table (rows leave the database: say so in the report)."""
    query = exp.select(*(_col(c) for c in columns)).from_(_table(table))
    result = backend.execute(query.sql(backend.dialect))
    return result.table.rename_columns(list(columns))


def numeric_array(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Floats from a numeric column, or from interval labels (their midpoints; NaN otherwise).

    Generalized numbers come back as labels: ``"20-29"`` (integer width: the
    midpoint of 20..29 is 24.5), ``"[20,30)"`` (25), ``"<20"`` / ``">=90"``
    (the bound itself). NULL and other text become NaN.

    >>> numeric_array(pa.array(["20-29", "[20,30)", "<20", ">=90", None, "x"])).tolist()
    [24.5, 25.0, 20.0, 90.0, nan, nan]
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or \
            pa.types.is_decimal(column.type):
        return np.asarray(column.cast(pa.float64()).fill_null(np.nan).to_numpy(
            zero_copy_only=False), dtype=float)
    encoded = pc.dictionary_encode(column.cast(pa.string()))
    table = np.array([_midpoint(v) for v in encoded.dictionary.to_pylist()] + [np.nan])
    indices = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    return table[np.asarray(indices, dtype=np.int64)]  # -1 (NULL) picks the trailing NaN


def _midpoint(label: Any) -> float:
    if label is None:
        return float("nan")
    text = str(label).strip()
    try:
        if text.startswith(">="):
            return float(text[2:])
        if text.startswith("<"):
            return float(text[1:])
        if text.startswith("[") and text.endswith(")") and "," in text:
            lo, hi = text[1:-1].split(",", 1)
            return (float(lo) + float(hi)) / 2
        if "-" in text[1:]:
            cut = text.index("-", 1)
            return (float(text[:cut]) + float(text[cut + 1:])) / 2
        return float(text)
    except ValueError:
        return float("nan")


def column_types(backend: Backend, table: str) -> dict[str, str]:
    """Column types of a scratch table, as the backend reports them (no rows fetched)."""
    query = exp.select(exp.Star()).from_(_table(table)).limit(0)
    result = backend.execute(query.sql(backend.dialect))
    return dict(zip(result.columns, result.types, strict=True))

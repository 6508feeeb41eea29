"""Golden SQL cases for the operators: tables, loader, generator, tree checks.

A fixture file ``tests/fixtures/anonymize/<operator>.sql`` holds cases like::

    # title: fixed groups of 3, mean
    # dialect: duckdb
    # table: seed000
    # execute: duckdb
    {"columns": ["x"], "k": 3};
    SELECT ... ;

The first statement is the operator's parameters (JSON, as in the policy's
YAML), the second the SQL the operator generates for that dialect. Regenerate
after an intended change with ``python -m tests.anonymize.helpers``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp, parse_one

from paradise.anonymize.base import OperatorContext, column
from paradise.anonymize.registry import OPERATORS
from paradise.anonymize.secret import draw_key, redact
from paradise.backends.base import Backend
from paradise.backends.duckdb import DuckDBBackend
from paradise.pipeline import BackendAccess
from tests.anonymize.properties import align
from tests.helpers import sql_statements

FIXTURES = Path(__file__).parent.parent / "fixtures" / "anonymize"
DIALECTS = ("duckdb", "postgres", "mysql")
SEED000 = (356, 670, 815, 132, 613, 916, 538, 348, 3, 396, 401)
TEST_KEY = draw_key(b"paradise test secret, not for production", "tester")
"""The draw key of the operator tests (goldens show its pads as ``<secret>``)."""


@dataclass(frozen=True)
class TableSpec:
    """A small test table: name, typed columns with classes, and its rows."""

    name: str
    columns: dict[str, str]
    classes: dict[str, str]
    rows: list[tuple[Any, ...]]
    k: int = 2
    extra: dict[str, Any] = field(default_factory=dict)

    def statements(self, dialect: str) -> list[str]:
        """``DROP``, ``CREATE TABLE`` and one ``INSERT`` for this table, in ``dialect``.

        DuckDB's type names are translated: on MySQL/MariaDB ``VARCHAR`` gets a
        length and ``TIMESTAMP`` becomes ``DATETIME`` (no implicit defaults or
        time zone conversion).
        """
        table = exp.Table(this=exp.to_identifier(self.name, quoted=True))
        columns = []
        for name, type_name in self.columns.items():
            dtype = exp.DataType.build(type_name, dialect="duckdb")
            if dialect == "mysql" and dtype.this == exp.DataType.Type.VARCHAR:
                dtype = exp.DataType.build("VARCHAR(64)", dialect="mysql")
            if dialect == "mysql" and dtype.this == exp.DataType.Type.TIMESTAMP:
                dtype = exp.DataType.build("DATETIME", dialect="mysql")
            columns.append(exp.ColumnDef(this=exp.to_identifier(name, quoted=True), kind=dtype))
        schema = exp.Schema(this=table.copy(), expressions=columns)
        values = exp.values([tuple(_literal(v) for v in row) for row in self.rows])
        insert = exp.insert(values, table.copy())
        return [
            exp.Drop(kind="TABLE", tables=[table.copy()], exists=True).sql(dialect),
            exp.Create(kind="TABLE", this=schema).sql(dialect),
            insert.sql(dialect),
        ]


def _literal(value: Any) -> exp.Expr:
    if value is None:
        return exp.null()
    if isinstance(value, str):
        return exp.Literal.string(value)
    return exp.Literal.number(repr(value))


TABLES: dict[str, TableSpec] = {
    # seed 000's eleven values (and a NULL), with a row number
    "seed000": TableSpec(
        "seed000",
        {"id": "INTEGER", "x": "DOUBLE"},
        {"id": "insensitive", "x": "sensitive"},
        [(i + 1, float(v)) for i, v in enumerate(SEED000)] + [(12, None)],
    ),
    # seed 003 Tables 3 and 4: country and age
    "land_age": TableSpec(
        "land_age",
        {"id": "INTEGER", "land": "VARCHAR", "age": "INTEGER"},
        {"id": "insensitive", "land": "quasi_identifier", "age": "quasi_identifier"},
        [
            (1, "Deutschland", 21),
            (2, "Schweiz", 35),
            (3, "Deutschland", 29),
            (4, "Deutschland", 23),
            (5, "Brasilien", 36),
            (6, "Schweiz", 30),
        ],
    ),
    # seed 003 Table 4's input: Table 3 after recoding age
    "table4": TableSpec(
        "table4",
        {"id": "INTEGER", "land": "VARCHAR", "age": "VARCHAR"},
        {"id": "insensitive", "land": "quasi_identifier", "age": "quasi_identifier"},
        [
            (1, "Deutschland", "20-29"),
            (2, "Schweiz", "30-39"),
            (3, "Deutschland", "20-29"),
            (4, "Deutschland", "20-29"),
            (5, "Brasilien", "30-39"),
            (6, "Schweiz", "30-39"),
        ],
    ),
    # seed 003 Tables 5-12: Var1, Var2
    "var12": TableSpec(
        "var12",
        {"id": "INTEGER", "var1": "DOUBLE", "var2": "DOUBLE"},
        {"id": "insensitive", "var1": "sensitive", "var2": "sensitive"},
        [
            (1, 0.5, 20.0),
            (2, 1.0, 4.0),
            (3, 1.2, 5.0),
            (4, 0.3, 27.0),
            (5, 3.0, 53.0),
            (6, 0.1, 11.0),
        ],
    ),
    "events": TableSpec(
        "events",
        {"id": "INTEGER", "ts": "TIMESTAMP", "day": "DATE", "amount": "DOUBLE"},
        {
            "id": "insensitive",
            "ts": "quasi_identifier",
            "day": "quasi_identifier",
            "amount": "sensitive",
        },
        [
            (1, "2024-03-17 10:42:00", "2024-03-17", 12.34),
            (2, "2024-03-02 23:59:59", "2024-03-02", 99.5),
            (3, "2023-12-31 00:00:01", "2023-12-31", 0.49),
            (4, None, None, None),
        ],
    ),
}


def context(
    table: TableSpec, dialect: str, database: BackendAccess | None = None
) -> OperatorContext:
    """The operator context for ``table`` in ``dialect``."""
    return OperatorContext(
        table=table.name,
        dialect=dialect,
        columns=tuple(table.columns),
        classes=dict(table.classes),
        types=dict(table.columns),
        k=table.k,
        database=database,
        draw_key=TEST_KEY,
        role="tester",
    )


def relation(table: TableSpec) -> exp.Select:
    """``SELECT <columns> FROM "table"`` as :func:`paradise.plan.plan_table` builds it."""
    return exp.select(*(column(c) for c in table.columns)).from_(
        exp.Table(this=exp.to_identifier(table.name, quoted=True))
    )


def load_tables(backend: Backend) -> None:
    """Create every table of :data:`TABLES` in ``backend`` (replacing tables of those names)."""
    for spec in TABLES.values():
        for statement in spec.statements(backend.dialect):
            backend.run(statement)


def duckdb_with_tables() -> DuckDBBackend:
    """An in-memory DuckDB backend holding every table of :data:`TABLES`."""
    backend = DuckDBBackend(":memory:")
    load_tables(backend)
    return backend


def generate(
    operator: str, table: str, params: dict[str, Any], dialect: str, backend: Backend
) -> exp.Select:
    """Run ``operator`` on ``table`` for ``dialect`` (rewrite-time queries go to ``backend``)."""
    op = OPERATORS[operator]()
    spec = TABLES[table]
    model = op.Params.model_validate(params)
    return op.apply(relation(spec), model, context(spec, dialect, BackendAccess(backend)))


def read_cases(operator: str) -> list[tuple[dict[str, str], dict[str, Any], str]]:
    """``(headers, params, expected_sql)`` for every case of ``<operator>.sql``, in file order."""
    cases = []
    for headers, statements in _blocks(FIXTURES / f"{operator}.sql"):
        params_text, expected = statements
        params = json.loads(params_text.rstrip(";"))
        cases.append((headers, params, expected.rstrip(";").strip()))
    return cases


def load_cases(operator: str) -> list[Any]:
    """One ``pytest.param(headers, params, expected_sql, id=title [dialect])`` per case."""
    return [
        pytest.param(
            headers,
            params,
            expected,
            id=f"{headers.get('title', '?')} [{headers.get('dialect', 'duckdb')}]",
        )
        for headers, params, expected in read_cases(operator)
    ]


def _blocks(path: Path) -> Iterator[tuple[dict[str, str], list[str]]]:
    """Pairs of statements (parameters, expected SQL); the headers precede the first."""
    case: tuple[dict[str, str], list[str]] | None = None
    for headers, statement in sql_statements(path):
        if case is None:
            case = (headers, [statement])
            continue
        if headers:
            raise ValueError(f"{path}: headers inside a case: {headers}")
        yield case[0], [*case[1], statement]
        case = None
    if case is not None:
        raise ValueError(f"{path}: incomplete case at the end")


def assert_tree_integrity(expression: exp.Expr) -> None:
    """Every node's ``parent`` and ``arg_key`` point back to where it hangs (sqlglot's check)."""
    for node in expression.walk():
        for key, value in node.args.items():
            children = value if isinstance(value, list) else [value]
            for child in children:
                if isinstance(child, exp.Expr):
                    assert child.parent is node, f"{child!r} has the wrong parent"
                    assert child.arg_key == key, f"{child!r} has arg_key {child.arg_key}, not {key}"


def assert_reparses(sql: str, dialect: str) -> None:
    """The generated SQL parses in its dialect and renders back to the same text."""
    assert parse_one(sql, read=dialect).sql(dialect=dialect) == sql


def write_fixture(operator: str, cases: list[tuple[str, str, dict[str, Any], bool]]) -> None:
    """Write ``<operator>.sql``: each (title, table, params, execute) for every dialect."""
    backend = duckdb_with_tables()
    lines: list[str] = []
    for title, table, params, execute in cases:
        for dialect in DIALECTS:
            sql = generate(operator, table, params, dialect, backend).sql(dialect=dialect)
            sql = redact(sql, TEST_KEY.pads)
            lines += [f"# title: {title}", f"# dialect: {dialect}", f"# table: {table}"]
            if execute and dialect == "duckdb":
                lines.append("# execute: duckdb")
            lines += [json.dumps(params) + ";", sql + ";", ""]
    (FIXTURES / f"{operator}.sql").write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover - regenerates the fixtures
    from tests.anonymize.golden_cases import CASES

    for name, cases in CASES.items():
        write_fixture(name, cases)
        print(f"wrote {FIXTURES / (name + '.sql')}")


def check_golden(
    operator: str,
    headers: dict[str, str],
    params: dict[str, Any],
    expected: str,
    backend: DuckDBBackend,
) -> Any:
    """Generate, compare with the golden SQL, check the tree and the re-parse; run on DuckDB.

    Returns the input and output as pandas DataFrames ``(before, after)`` when the
    case is marked ``# execute: duckdb``, else None.
    """
    dialect = headers.get("dialect", "duckdb")
    table = headers["table"]
    generated = generate(operator, table, params, dialect, backend)
    sql = generated.sql(dialect=dialect)
    shown = redact(sql, TEST_KEY.pads)
    assert shown == expected, f"generated SQL differs from the golden:\n{shown}"
    assert_tree_integrity(generated)
    assert_reparses(sql, dialect)
    if headers.get("execute") != "duckdb":
        return None
    before = backend.connection.sql(f'SELECT * FROM "{table}"').df()
    after = backend.connection.sql(sql).df()
    assert list(after.columns) == list(TABLES[table].columns)
    return align(before, after)

"""Loaders for SQL fixture files (sqlglot-style, with ``# key: value`` headers)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

FIXTURES = Path(__file__).parent / "fixtures"


def sql_statements(path: Path) -> Iterator[tuple[dict[str, str], str]]:
    """``(headers, statement)`` per ``;``-terminated statement of a fixture file.

    Header lines (``# key: value``) belong to the statement that follows them; a
    statement without header lines gets ``{}``.
    """
    headers: dict[str, str] = {}
    buffer: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("# ") and ":" in stripped and not buffer:
            key, value = stripped[2:].split(":", 1)
            headers[key.strip()] = value.strip()
            continue
        if not stripped and not buffer:
            continue
        buffer.append(line)
        if stripped.endswith(";"):
            yield headers, "\n".join(buffer).strip()
            headers, buffer = {}, []
    if buffer:
        raise ValueError(f"{path}: a statement without its closing ';' at the end")


def load_sql_cases(path: str | Path) -> list:
    """One ``pytest.param(sql, headers, id=title)`` per ``;``-terminated statement.

    Header lines (``# title: ...``, ``# error: ...``, ``# match: ...``, ``# role: ...``)
    apply to the statement that follows them.
    """
    return [
        pytest.param(sql, headers, id=headers.get("title", sql[:40]))
        for headers, sql in sql_statements(FIXTURES / path)
    ]


def table_checksums(backend: Any, tables: Iterable[str]) -> dict[str, tuple[int, str]]:
    """``{table: (rows, checksum)}``: an order-independent fingerprint of each table's contents.

    Computed in the database (so cheap on large tables) as the row count and the sum
    of one hash per row — a sum, not an XOR, so that changing two equal rows the same
    way still changes it. Tests take it before and after an adversarial query and
    compare: a write that slipped past every check shows up as a difference.
    Read-only: it runs through ``backend.execute`` like any query.
    """
    out: dict[str, tuple[int, str]] = {}
    dialect = backend.dialect
    for table in tables:
        name = exp.to_identifier(table, quoted=True).sql(dialect)
        if dialect == "duckdb":
            sql = f"SELECT COUNT(*), CAST(SUM(CAST(HASH(t) AS HUGEINT)) AS VARCHAR) FROM {name} AS t"
        elif dialect == "postgres":
            sql = (
                "SELECT COUNT(*), CAST(SUM(CAST(CAST('x' || SUBSTR(MD5(CAST(t AS TEXT)), 1, 15) "
                f"AS BIT(60)) AS BIGINT)) AS TEXT) FROM {name} AS t"
            )
        else:
            columns = list(backend.catalog()[table])
            values = ", ".join(
                f"COALESCE(HEX({exp.to_identifier(c, quoted=True).sql('mysql')}), 'N')"
                for c in columns
            )
            sql = (
                f"SELECT COUNT(*), CAST(SUM(CAST(CONV(LEFT(MD5(CONCAT_WS('|', {values})), 15), "
                f"16, 10) AS UNSIGNED)) AS CHAR) FROM {name}"
            )
        ((rows, checksum),) = backend.execute(sql).rows
        out[table] = (int(rows), str(checksum))
    return out


SMALL_TABLE = "CREATE TABLE t AS SELECT range AS id, range % 3 AS g, range AS v FROM range(60)"
"""DuckDB: a 60-row table ``t`` for release tests (``g`` in three classes of 20)."""


def sliced_role(release: dict[str, Any] | None = None) -> Any:
    """Role ``r`` reading ``t`` (:data:`SMALL_TABLE`) sliced with k = 2, with the given
    ``release:`` rules (the defaults if None)."""
    from paradise.policy.model import RolePolicy

    rules: dict[str, Any] = {
        "columns": {"id": "identifier", "g": "quasi_identifier", "v": "insensitive"},
        "privacy": {"k": 2},
        "transform": [{"slicing": {"groups": [["g"], ["v"]], "buckets": 2}}],
    }
    if release is not None:
        rules["release"] = release
    return RolePolicy.model_validate({"role": "r", "tables": {"t": rules}})

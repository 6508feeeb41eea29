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

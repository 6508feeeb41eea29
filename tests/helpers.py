"""Loaders for SQL fixture files (sqlglot-style, with ``# key: value`` headers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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

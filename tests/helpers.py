"""Loaders for SQL fixture files (sqlglot-style, with ``# key: value`` headers)."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def load_sql_cases(path: str | Path) -> list:
    """One ``pytest.param(sql, headers, id=title)`` per ``;``-terminated statement.

    Header lines (``# title: ...``, ``# error: ...``, ``# match: ...``, ``# role: ...``)
    apply to the statement that follows them.
    """
    cases = []
    headers: dict[str, str] = {}
    buffer: list[str] = []
    for line in (FIXTURES / path).read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("# ") and ":" in stripped and not buffer:
            key, value = stripped[2:].split(":", 1)
            headers[key.strip()] = value.strip()
            continue
        if not stripped and not buffer:
            continue
        buffer.append(line)
        if stripped.endswith(";"):
            sql = "\n".join(buffer).strip()
            cases.append(pytest.param(sql, dict(headers), id=headers.get("title", sql[:40])))
            headers, buffer = {}, []
    return cases

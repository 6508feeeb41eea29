"""Privacy properties every released answer must have (used by the suite and the fuzzers)."""

from __future__ import annotations

from collections import Counter

import sqlglot
from sqlglot import exp

from paradise.policy.model import OnViolation, RolePolicy
from paradise.result import Result
from tests.security.world import Canaries, leaks

__all__ = ["assert_answer_safe", "forbidden_columns", "read_columns"]


def forbidden_columns(policy: RolePolicy, catalog: dict[str, dict[str, str]]) -> set[str]:
    """Hidden columns of the role's tables that the database must never be asked to read.

    The subject key of a table with preferences or pseudonyms is read by design
    (to join the preferences, or inside the HMAC), so it is allowed.
    """
    allowed: set[str] = set()
    hidden: set[str] = set()
    for name, tp in policy.tables.items():
        cols = catalog.get(name) or catalog.get(name.lower()) or {}
        visible = set(tp.visible_columns(cols))
        hidden |= {c.lower() for c in cols if c not in visible}
        if tp.subject_key and (tp.preferences is not None or tp.pseudonym_columns()):
            allowed.add(tp.subject_key.lower())
        allowed |= {c.lower() for c in tp.pseudonym_columns()}
    return hidden - allowed


def read_columns(sql: str, dialect: str) -> set[str]:
    """Every column name a statement references (lower case)."""
    tree = sqlglot.parse_one(sql, read=dialect)
    return {c.name.lower() for c in tree.find_all(exp.Column)}


def assert_answer_safe(
    result: Result,
    statements: list[str],
    *,
    policy: RolePolicy,
    catalog: dict[str, dict[str, str]],
    dialect: str,
    canaries: Canaries | None,
    secret: str | None,
    aggregate: bool,
) -> None:
    """No hidden column read, no canary released, k met where the policy enforces it."""
    forbidden = forbidden_columns(policy, catalog)
    for sql in statements:
        touched = read_columns(sql, dialect) & forbidden
        assert not touched, f"the database was asked to read hidden column(s) {touched}"
    row_level = any(
        step.get("operator") == "preferences"
        and "excluded" in str(step["params"].get("aggregate_only_rows"))
        for table in result.annotations.tables
        for step in table.operators
    )
    if canaries is not None:
        found = leaks(result.rows, canaries, row_level=row_level)
        assert not found, f"opted-out or identifying values released: {found[:5]}"
    ann = result.annotations
    strict = {
        t.table
        for t in ann.tables
        if t.on_violation in (OnViolation.SUPPRESS.value, OnViolation.REFUSE.value)
    }
    for unit in ann.units:
        if set(unit.tables) & {s.lower() for s in strict} and unit.k_achieved is not None:
            assert unit.k_achieved >= unit.k_required, unit
    if not aggregate:
        _assert_k_independently(result, strict)
    if secret is not None:
        text = repr(ann.to_dict()) + "\n".join(ann.notices())
        assert secret not in text
        for statement in statements:
            assert secret not in statement  # the raw secret never reaches the database


def _assert_k_independently(result: Result, strict: set[str]) -> None:
    """Recount the classes of a row-level answer from its rows (not from the annotations)."""
    ann = result.annotations
    if any(t.operators and t.operators[0].get("operator") == "slicing" for t in ann.tables):
        return  # sliced answers are checked per column group by the annotations above
    for unit in ann.units:
        if not set(unit.tables) & {s.lower() for s in strict}:
            continue
        if unit.action == "none" and unit.k_achieved is not None and unit.violating_rows == 0:
            positions = [result.columns.index(c) for c in unit.columns if c in result.columns]
            if len(positions) != len(unit.columns):
                continue
            keys = Counter(
                tuple(row[p] for p in positions)
                for row in result.rows
                if any(row[p] is not None for p in positions)
            )
            assert not keys or min(keys.values()) >= unit.k_required, (
                unit,
                keys.most_common()[-3:],
            )

"""Policy files: the shipped examples load; broken files give one located line."""

from __future__ import annotations

from pathlib import Path

import pytest

from paradise.errors import PolicyError
from paradise.policy import load_policies, load_policy_file

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_policies_load() -> None:
    roles = load_policies(ROOT / "policies")
    assert {"analyst", "public", "auditor"} <= set(roles)
    assert roles["analyst"].tables["adult"].transform[0].params.buckets == 100


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "role: r\ntables:\n  t:\n    columns:\n      a: secret\n",
            ":5: tables.t.columns.a.class: Input should be",
        ),
        (
            "role: r\ntables:\n  t:\n    columns: {a: quasi_identifier}\n    privacy:\n      k: 0\n",
            ":6: tables.t.privacy.k: Input should be greater than or equal to 1",
        ),
        (
            "role: r\ntables:\n  t:\n    columns: {a: quasi_identifier}\n    transform:\n      - shuffle_all: {}\n",
            ":6: tables.t.transform.0: unknown operator 'shuffle_all'",
        ),
        (
            "role: r\ntables:\n  t:\n    columns: {a: quasi_identifier}\n    transform:\n      - slicing:\n          groups: [[a]]\n          buckets: -1\n",
            ":8: tables.t.transform.0.slicing.buckets",
        ),
        (
            "role: r\ntables:\n  t:\n    columns: {a: identifier, b: sensitive}\n    transform:\n      - slicing: {groups: [[a], [b]]}\n",
            "identifier column 'a'",
        ),
        (
            "role: r\ntables:\n  t:\n    columns: {a: quasi_identifier}\n    privacy: {k: 2, on_violation: report}\n",
            "needs a transform",
        ),
        (
            "role: r\ntables:\n  t:\n    columns: {a: quasi_identifier}\n    colums: {}\n",
            ":5: tables.t.colums: Extra inputs are not permitted",
        ),
        (
            "role: r\ntables:\n  t:\n    columns: {a: quasi_identifier}\n  t:\n    columns: {}\n",
            ":5: tables.t: duplicate key",
        ),
        ("role: r\ntables: [\n", "invalid YAML"),
        ("- just a list\n", ":1: a policy file must be a mapping"),
    ],
)
def test_broken_policy_is_located(tmp_path: Path, text: str, expected: str) -> None:
    file = tmp_path / "p.yaml"
    file.write_text(text)
    with pytest.raises(PolicyError) as info:
        load_policy_file(file)
    message = str(info.value)
    assert message.startswith(str(file)), message
    assert expected in message, message
    assert "\n" not in message


def test_duplicate_roles(tmp_path: Path) -> None:
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text("role: same\ntables: {}\n")
    with pytest.raises(PolicyError, match="already defined"):
        load_policies(tmp_path)


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="no policy files"):
        load_policies(tmp_path)

"""The ``release:`` rule of a table policy: defaults, validation, acknowledgement."""

from __future__ import annotations

from pathlib import Path

import pytest

import paradise
from paradise.errors import PolicyError
from paradise.policy.load import load_policy_file

SLICING = "    transform:\n      - slicing: {groups: [[a], [b]], buckets: 2}\n"


def _load(tmp_path: Path, table: str) -> paradise.RolePolicy:
    text = (
        "role: r\ntables:\n  t:\n    columns: {id: identifier, a: quasi_identifier, "
        "b: sensitive}\n" + table
    )
    path = tmp_path / "r.yaml"
    path.write_text(text)
    return load_policy_file(path)


def test_shipped_roles_release_where_their_operators_randomize() -> None:
    policies = paradise.load_policies(paradise.bundled_policies())
    modes = {
        (role, name): table.release_mode
        for role, policy in policies.items()
        for name, table in policy.tables.items()
    }
    assert modes[("analyst", "adult")] == "materialized"  # slicing
    assert modes[("public", "adult")] == "materialized"  # slicing
    assert modes[("statistics_office", "adult")] == "materialized"  # noise, pram, ...
    assert modes[("auditor", "adult")] == "live"  # no operator
    assert modes[("tables", "adult")] == "live"
    assert modes[("assistant", "sensor_readings")] == "live"  # preferences


def test_default_follows_the_operators(tmp_path: Path) -> None:
    assert _load(tmp_path, "").tables["t"].release_mode == "live"
    assert _load(tmp_path, SLICING).tables["t"].release_mode == "materialized"
    generalized = "    transform:\n      - generalization: {columns: {a: {width: 10}}}\n"
    assert _load(tmp_path, generalized).tables["t"].release_mode == "live"


def test_live_randomization_needs_an_acknowledgement(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="acknowledge_averaging") as info:
        _load(tmp_path, SLICING + "    release: {mode: live}\n")
    assert "averaging answers undoes the randomization" in str(info.value)
    assert ":" in str(info.value).split(" ")[0]  # located: file:line
    table = _load(
        tmp_path, SLICING + "    release: {mode: live, acknowledge_averaging: true}\n"
    ).tables["t"]
    assert table.release_mode == "live"


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("{refresh: sometimes}", "refresh must be on_change, manual or 'every"),
        ("{refresh: every 0s}", "refresh must be"),
        ("{check_every: soon}", "a duration is a positive number"),
        ("{mode: materialized, acknowledge_averaging: true}", "only applies to release.mode"),
        ("{mode: cached}", "release.mode"),
        ("{freshness: high}", "freshness"),
    ],
)
def test_invalid_rules_are_refused(tmp_path: Path, rule: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        _load(tmp_path, SLICING + f"    release: {rule}\n")


def test_refresh_intervals_parse(tmp_path: Path) -> None:
    table = _load(tmp_path, SLICING + "    release: {refresh: every 2h, check_every: 5s}\n")
    assert table.tables["t"].release.refresh_seconds == 7200.0
    assert table.tables["t"].release.check_seconds == 5.0


def test_preferences_are_served_live_only(tmp_path: Path) -> None:
    prefs = (
        "    subject_key: id\n    preferences: {table: prefs, subject: id}\n"
    )
    assert _load(tmp_path, prefs).tables["t"].release_mode == "live"
    with pytest.raises(PolicyError, match="not available for tables with preferences"):
        _load(tmp_path, prefs + "    release: {mode: materialized}\n")

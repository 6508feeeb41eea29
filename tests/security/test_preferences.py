"""Data subjects' preferences and keyed pseudonyms, on every backend."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paradise
from paradise import pipeline
from paradise.anonymize.pseudonym import pads, pseudonym_of, role_key
from paradise.errors import PolicyError, UnsupportedQueryError
from paradise.load import load_file
from paradise.policy import load_policy_file
from paradise.policy.model import RolePolicy
from tests.security.conftest import SECURITY_POLICIES, World, policies
from tests.security.world import AGGONLY, OPTOUT, ROOM, canary_tables

TABLES, _ = canary_tables()
PREFS = TABLES["subject_preferences"].to_pylist()


def _subjects(rule: str, attribute: str | None = None) -> set[int]:
    return {
        p["subject_id"]
        for p in PREFS
        if p["rule"] == rule
        and (attribute is None or p["attribute"] == attribute)
        and p["purpose"] in (None, "assistant")
    }


def _query(world: World, sql: str, role: str = "assistant") -> paradise.Result:
    ctx = dataclasses.replace(world.proc.context(role), read_dialect="postgres")
    return pipeline.run(sql, ctx, world.backend, plan_cache=world.proc._plans)


def _key(world: World, role: str = "assistant") -> bytes:
    return role_key(world.secret.encode(), role)


def test_withheld_rooms_are_null_for_exactly_the_opted_out(world: World) -> None:
    key = _key(world)
    withheld = {pseudonym_of(s, key) for s in _subjects("withhold", "room")}
    coarse = {pseudonym_of(s, key) for s in _subjects("coarsen", "room")}
    assert withheld and coarse
    rows = _query(world, "SELECT subject_id, room FROM sensor_readings").rows
    seen = {pid for pid, _ in rows}
    assert withheld <= seen
    for pid, room in rows:
        if pid in withheld:
            assert room is None
        elif pid in coarse:
            assert room in ("day area", "night area")
        else:
            assert room is not None and not room.startswith(ROOM)


def test_opted_out_and_aggregate_only_rows(world: World) -> None:
    key = _key(world)
    row_level = {
        r[0] for r in _query(world, "SELECT DISTINCT subject_id FROM sensor_readings").rows
    }
    everyone = {pseudonym_of(s, key) for s in range(1, 61)}
    optout = {pseudonym_of(s, key) for s in _subjects("withhold", "*")}
    agg_only = {pseudonym_of(s, key) for s in _subjects("aggregate_only")}
    assert optout and agg_only
    assert row_level == everyone - optout - agg_only
    counted = _query(world, "SELECT count(DISTINCT subject_id) AS n FROM sensor_readings").rows
    assert counted == [(60 - len(optout),)]  # aggregate-only residents count in aggregates


def test_preferences_change_answers_and_are_annotated(world: World) -> None:
    result = _query(world, "SELECT room, count(*) AS n FROM sensor_readings GROUP BY room")
    rooms = dict(result.rows)
    stored = TABLES["sensor_readings"].to_pylist()
    withheld = _subjects("withhold", "room")
    assert rooms[None] == sum(1 for r in stored if r["subject_id"] in withheld)
    assert not any(str(k).startswith((ROOM, OPTOUT)) for k in rooms)
    (shaped,) = result.annotations.preferences
    expected = withheld | _subjects("coarsen", "room") | _subjects("withhold", "*")
    assert shaped == {
        "table": "sensor_readings",
        "source": "subject_preferences",
        "subjects": len(expected),
    }
    assert any("preferences of" in line for line in result.annotations.notices())


def test_coarsened_timestamps(world: World) -> None:
    key = _key(world)
    by_level = {
        pseudonym_of(p["subject_id"], key): p["level"]
        for p in PREFS
        if p["rule"] == "coarsen" and p["attribute"] == "ts"
    }
    assert set(by_level.values()) == {"hour", "day"}
    for pid, ts in _query(world, "SELECT subject_id, ts FROM sensor_readings").rows:
        level = by_level.get(pid)
        if level is not None:
            assert ts.second == 0 and ts.minute == 0
            assert level == "hour" or ts.hour == 0


def test_aggregate_only_rows_only_in_aggregates(world: World) -> None:
    rows = _query(world, "SELECT sensor FROM sensor_readings").rows
    assert AGGONLY not in {r[0] for r in rows}
    grouped = dict(
        _query(world, "SELECT sensor, count(*) AS n FROM sensor_readings GROUP BY sensor").rows
    )
    assert grouped[AGGONLY] > 0


def test_pseudonyms_join_within_a_role_and_match_python(world: World) -> None:
    key = _key(world)
    joined = _query(
        world,
        "SELECT r.subject_id, s.subject_id AS s_id FROM sensor_readings AS r "
        "JOIN subjects AS s ON r.subject_id = s.subject_id",
    ).rows
    assert joined and all(a == b for a, b in joined)
    assert {a for a, _ in joined} <= {pseudonym_of(s, key) for s in range(1, 61)}
    assert all(re.fullmatch(r"[0-9a-f]{64}", a) for a, _ in joined)


def test_pseudonyms_differ_across_roles(world: World) -> None:
    a = {r[0] for r in _query(world, "SELECT DISTINCT subject_id FROM sensor_readings").rows}
    b = {
        r[0]
        for r in _query(
            world, "SELECT DISTINCT subject_id FROM sensor_readings", "residents_file"
        ).rows
    }
    assert a and b and not a & b
    assert pseudonym_of(5, _key(world, "residents_file")) in b


def test_key_material_is_redacted_everywhere(world: World) -> None:
    inner, outer = pads(_key(world))
    explained = world.proc.explain("SELECT subject_id FROM sensor_readings", role="assistant")
    result = _query(world, "SELECT subject_id FROM sensor_readings LIMIT 1")
    shown = [explained.sql, result.annotations.sql, repr(result.annotations.to_dict())]
    for text in shown:
        assert "<redacted>" in text or text is shown[2]
        for secret in (inner, outer, world.secret, _key(world).hex()):
            assert secret not in text
    # the statement that ran carried the pads (the database computed the HMAC)
    assert any(inner in s for s in world.backend.statements)
    # a cast that could fail is made total (TRY_CAST) or refused before it runs; whatever
    # the outcome, no key material is in it
    try:
        _query(world, "SELECT subject_id FROM sensor_readings WHERE CAST(room AS INT) > 0")
    except paradise.ParadiseError as exc:
        assert inner not in str(exc) and outer not in str(exc)


def test_without_a_secret_pseudonyms_are_refused(world: World) -> None:
    proc = paradise.connect(world.backend, policies=policies())
    proc._pseudonym_secret = None  # the environment may define one; this test wants none
    with pytest.raises(UnsupportedQueryError, match="no pseudonym secret is configured"):
        proc.query("SELECT room FROM sensor_readings", role="assistant")


def test_yaml_preferences_source(world: World) -> None:
    key = _key(world, "residents_file")
    rows = _query(world, "SELECT subject_id, ts, value FROM sensor_readings", "residents_file").rows
    by = {}
    for pid, ts, value in rows:
        by.setdefault(pid, []).append((ts, value))
    assert all(v is None for _, v in by[pseudonym_of(1, key)])  # withholds value
    assert pseudonym_of(2, key) not in by  # aggregate only
    assert all(t.hour == 0 and t.minute == 0 for t, _ in by[pseudonym_of(3, key)])  # day
    assert pseudonym_of(4, key) not in by  # shares nothing
    assert any(v is not None for _, v in by[pseudonym_of(5, key)])


def test_rules_paradise_does_not_understand_fail_closed(world: World, tmp_path: Path) -> None:
    """Unknown rules or attributes exclude the subject; unknown levels withhold the value."""
    bogus = pa.table(
        {
            "subject_id": pa.array([5, 6, 7, 8, 9], type=pa.int32()),
            "rule": ["forget_me_please", "withhold", "coarsen", "coarsen", None],
            "attribute": ["room", "rooom", "ts", "sensor", "room"],
            "level": pa.array([None, None, "fortnight", "x", None], type=pa.string()),
            "purpose": pa.array([None] * 5, type=pa.string()),
        }
    )
    path = tmp_path / "bogus_preferences.parquet"
    pq.write_table(bogus, path)
    load_file(world.backend.inner, path, "bogus_preferences", replace=True)
    policy = RolePolicy.model_validate(
        {
            "role": "bogus",
            "tables": {
                "sensor_readings": {
                    "subject_key": "subject_id",
                    "columns": {
                        "subject_id": {"class": "identifier", "release": "pseudonym"},
                        "ts": "insensitive",
                        "sensor": "insensitive",
                    },
                    "preferences": {"table": "bogus_preferences", "coarsen": {"ts": "time"}},
                }
            },
        }
    )
    proc = paradise.connect(
        world.backend, policies={"bogus": policy}, pseudonym_secret=world.secret
    )
    key = _key(world, "bogus")
    rows = proc.query("SELECT subject_id, ts, sensor FROM sensor_readings", role="bogus").rows
    by: dict[str, list[tuple[object, object]]] = {}
    for pid, ts, sensor in rows:
        by.setdefault(pid, []).append((ts, sensor))
    for excluded in (5, 6, 9):  # unknown rule, unknown attribute, NULL rule
        assert pseudonym_of(excluded, key) not in by
    assert all(ts is None for ts, _ in by[pseudonym_of(7, key)])  # unknown level
    assert all(sensor is None for _, sensor in by[pseudonym_of(8, key)])  # no levels declared
    assert all(sensor is not None for _, sensor in by[pseudonym_of(10, key)])


def test_preference_policy_errors_are_located(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text(
        "role: r\ntables:\n  t:\n    columns: {a: insensitive}\n"
        "    preferences:\n      table: prefs\n"
    )
    with pytest.raises(
        PolicyError, match=r"p.yaml:\d+: tables.t: preferences need the table's subject_key"
    ):
        load_policy_file(bad)
    bad.write_text(
        "role: r\ntables:\n  t:\n    subject_key: a\n    columns: {a: identifier}\n"
        "    preferences:\n      table: prefs\n      file: x.yaml\n"
    )
    with pytest.raises(PolicyError, match="exactly one of 'table' or 'file'"):
        load_policy_file(bad)
    bad.write_text(
        "role: r\ntables:\n  t:\n    columns: {a: {class: sensitive, release: pseudonym}}\n"
    )
    with pytest.raises(PolicyError, match="only allowed for class identifier"):
        load_policy_file(bad)
    (tmp_path / "prefs.yaml").write_text("- {subject: 1}\n")
    bad.write_text(
        "role: r\ntables:\n  t:\n    subject_key: a\n    columns: {a: identifier}\n"
        "    preferences: {file: prefs.yaml}\n"
    )
    with pytest.raises(PolicyError, match="entry 0"):
        load_policy_file(bad)
    assert (
        load_policy_file(SECURITY_POLICIES / "residents_file.yaml")
        .tables["sensor_readings"]
        .preferences.rules
    )

"""Refresh rules of releases over time (DuckDB; the rules do not depend on the engine)."""

from __future__ import annotations

import time
from typing import Any

import paradise
from tests.helpers import SMALL_TABLE, sliced_role


def _proc(release: dict[str, Any]) -> paradise.Processor:
    proc = paradise.connect(":memory:", policies={"r": sliced_role(release)})
    proc.backend.run(SMALL_TABLE)
    proc.refresh()
    return proc


COUNT = "SELECT count(*) AS n FROM t"


def _count(proc: paradise.Processor) -> int:
    return int(proc.query(COUNT, role="r").rows[0][0])


def test_check_every_serves_inside_the_window_then_rebuilds() -> None:
    proc = _proc({"check_every": "1s"})
    assert _count(proc) == 60
    proc.backend.run("DELETE FROM t WHERE id < 10")
    assert _count(proc) == 60  # inside the window: no comparison yet
    time.sleep(1.1)
    assert _count(proc) == 50
    assert proc.releases.builds == 2


def test_every_interval_rebuilds_only_old_and_changed_releases() -> None:
    proc = _proc({"refresh": "every 1s"})
    assert _count(proc) == 60
    proc.backend.run("DELETE FROM t WHERE id < 10")
    assert _count(proc) == 60  # younger than the interval
    time.sleep(1.1)
    result = proc.query(COUNT, role="r")
    assert result.rows[0][0] == 50
    assert result.annotations.tables[0].release["version"] == 2  # type: ignore[index]
    time.sleep(1.1)
    assert _count(proc) == 50  # old again, but unchanged: no build
    assert proc.releases.builds == 2


def test_a_policy_change_rebuilds_whatever_the_refresh_rule() -> None:
    proc = _proc({"refresh": "manual"})
    assert _count(proc) == 60
    stricter = proc.policies["r"].model_copy(deep=True)
    table = stricter.tables["t"]
    stricter.tables["t"] = table.model_copy(
        update={"privacy": table.privacy.model_copy(update={"k": 3})}
    )
    other = paradise.Processor(proc.backend, {"r": stricter})
    result = other.query(COUNT, role="r")
    assert result.annotations.tables[0].release["version"] == 2  # type: ignore[index]
    assert other.releases.builds == 1


def test_a_new_processor_compares_before_serving_a_release_it_did_not_build() -> None:
    proc = _proc({})
    assert _count(proc) == 60
    proc.backend.run("DELETE FROM t WHERE id < 10")
    other = paradise.Processor(proc.backend, proc.policies)
    assert _count(other) == 50  # the stored version is stale: rebuilt before the answer
    assert other.releases.builds == 1
    assert _count(proc) == 50  # and the first processor now reads the new version
    assert proc.releases.builds == 1

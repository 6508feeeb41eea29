"""The data every security test attacks: Adult plus a smart home seeded with canaries.

Values a resident withholds are replaced by *canaries* (values that occur nowhere
else) before loading, so any answer that contains one has leaked an opted-out
value, whatever route the query took:

* ``canary-room-<id>`` — the room of a resident who withholds ``room``;
* ``900000.5 + id`` — the reading of a resident who withholds ``value`` (for the
  ``assistant`` role);
* ``canary-optout`` / ``800000.25 + id`` — anything of a resident who shares nothing;
* ``canary-aggonly`` — the sensor name of residents who allow aggregated use only
  (it must never appear in a row-level answer);
* timestamps with ``:37`` seconds — readings of residents who asked for coarser
  time (hour or day: a released timestamp of theirs has ``:00`` seconds);
* resident names — identifiers, never released.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paradise.tools.demo_data import smart_home_tables

__all__ = ["Canaries", "canary_tables", "leaks"]

ROOM = "canary-room-"
OPTOUT = "canary-optout"
AGGONLY = "canary-aggonly"
_SECONDS = re.compile(r"\d\d:\d\d:37")


@dataclass(frozen=True)
class Canaries:
    """What must never appear in an answer (``row_level_only``: never in row-level answers)."""

    strings: tuple[str, ...]
    numbers: frozenset[float]
    names: frozenset[str]
    row_level_only: tuple[str, ...] = (AGGONLY,)


def canary_tables() -> tuple[dict[str, pa.Table], Canaries]:
    """The smart-home tables with canaries in place of opted-out values."""
    tables = smart_home_tables()
    prefs = tables["subject_preferences"].to_pylist()
    readings = tables["sensor_readings"]
    sid = readings.column("subject_id").to_pylist()
    room = readings.column("room").to_pylist()
    sensor = readings.column("sensor").to_pylist()
    value = readings.column("value").to_pylist()
    ts = readings.column("ts").to_pylist()
    numbers: set[float] = set()
    by_subject: dict[int, list[dict[str, Any]]] = {}
    for rule in prefs:
        if rule["purpose"] in (None, "assistant"):
            by_subject.setdefault(rule["subject_id"], []).append(rule)
    for i, s in enumerate(sid):
        for rule in by_subject.get(s, ()):
            kind, attribute = rule["rule"], rule["attribute"]
            if kind == "withhold" and attribute == "room":
                room[i] = f"{ROOM}{s}"
            elif kind == "withhold" and attribute == "value":
                value[i] = 900000.5 + s
                numbers.add(value[i])
            elif kind == "withhold" and attribute == "*":
                room[i], sensor[i] = OPTOUT, OPTOUT
                value[i] = 800000.25 + s
                numbers.add(value[i])
            elif kind == "aggregate_only":
                sensor[i] = AGGONLY
            elif kind == "coarsen" and attribute == "ts":
                ts[i] = ts[i].replace(second=37)
    tables["sensor_readings"] = pa.table(
        {
            "subject_id": readings.column("subject_id"),
            "ts": pa.array(ts, type=pa.timestamp("us")),
            "room": room,
            "sensor": sensor,
            "value": pa.array(value, type=pa.float64()),
        }
    )
    names = frozenset(tables["subjects"].column("name").to_pylist())
    assert pc.sum(pc.equal(tables["sensor_readings"].column("sensor"), AGGONLY)).as_py() > 0
    return tables, Canaries((ROOM, OPTOUT), frozenset(numbers), names)


def _cells(rows: Iterable[tuple[Any, ...]]) -> Iterable[Any]:
    for row in rows:
        yield from row


def leaks(rows: Iterable[tuple[Any, ...]], canaries: Canaries, *, row_level: bool) -> list[str]:
    """Every canary found in ``rows`` (empty: nothing leaked)."""
    found = []
    strings = canaries.strings + (canaries.row_level_only if row_level else ())
    for cell in _cells(rows):
        if cell is None:
            continue
        if isinstance(cell, str):
            if any(s in cell for s in strings) or cell in canaries.names:
                found.append(cell)
            elif any(name in cell for name in canaries.names):
                found.append(cell)
            elif _SECONDS.search(cell):
                found.append(cell)
        elif isinstance(cell, dt.datetime):
            if cell.second == 37:
                found.append(str(cell))
        elif isinstance(cell, int | float | decimal.Decimal) and not isinstance(cell, bool):
            if math.isfinite(float(cell)) and float(cell) in canaries.numbers:
                found.append(str(cell))
    return found

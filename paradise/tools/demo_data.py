"""The bundled demo data: UCI Adult (32,561 rows) with a synthetic ``id`` identifier,
and a small deterministic synthetic smart-home dataset with residents' preferences.

Example:
    >>> import paradise
    >>> proc = paradise.connect(":memory:")
    >>> load_demo(proc)
    >>> proc.query("SELECT count(*) AS n FROM adult", role="analyst").rows
    [(32561,)]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paradise.backends.base import Backend
from paradise.load import load_file
from paradise.load.names import normalize_name
from paradise.processor import Processor

__all__ = ["ADULT_CSV", "load_demo", "load_demo_tables", "load_smart_home", "smart_home_tables"]

ADULT_CSV = Path(__file__).parents[1] / "data" / "adult.csv.gz"


def load_demo(processor: Processor) -> None:
    """Load the demo tables (:func:`load_demo_tables`) into ``processor``'s database and
    make it read the new catalog."""
    load_demo_tables(processor.backend)
    processor.refresh()


def load_demo_tables(backend: Backend) -> None:
    """Create ``adult`` in an embedded DuckDB backend from the bundled CSV.

    Column names are normalized (``education-num`` -> ``education_num``) and a
    person number ``id`` (an identifier the policies hide) is added.
    """
    if backend.dialect != "duckdb":
        load_file(backend, ADULT_CSV, "adult", add_id="id", replace=True)
        return
    import gzip

    from sqlglot import exp

    with gzip.open(ADULT_CSV, "rt", encoding="utf-8") as fh:
        header = fh.readline().strip().split(",")
    source = exp.func(
        "read_csv",
        exp.Literal.string(str(ADULT_CSV)),
        exp.EQ(this=exp.column("header"), expression=exp.true()),
    )
    select = exp.select(
        exp.alias_(exp.cast(exp.Window(this=exp.func("row_number")), exp.DataType.Type.INT), "id"),
        *(exp.alias_(exp.column(h, quoted=True), normalize_name(h), quoted=True) for h in header),
    ).from_(source)
    import duckdb

    reader = duckdb.connect(":memory:")  # files are read here: the backend has no file access
    try:
        table = reader.sql(select.sql("duckdb")).to_arrow_table()
    finally:
        reader.close()
    view = "_paradise_demo_adult"
    con = backend.connection  # type: ignore[attr-defined]
    con.register(view, table)
    try:
        con.execute(f"CREATE OR REPLACE TABLE adult AS SELECT * FROM {view}")
    finally:
        con.unregister(view)


# --- smart-home demo (issue 7): residents, their sensor readings, their own preferences ---

SMART_HOME_SEED = 20170707
"""Seed of the synthetic smart-home data (numpy); the same tables on every machine."""

DISTRICTS = ("Stadtmitte", "Südstadt", "Reutershagen", "Lütten Klein", "Evershagen", "Warnemünde")
ROOMS = ("kitchen", "living_room", "bedroom", "bathroom", "hallway")
SENSORS = ("temperature", "humidity", "motion")
_FIRST = ("Anna", "Ben", "Clara", "David", "Emma", "Finn", "Greta", "Hans", "Ida", "Jonas")
_LAST = ("Albrecht", "Becker", "Claußen", "Dreyer", "Ehlers", "Fischer", "Grunert", "Heuer")


def smart_home_tables(
    subjects: int = 60, readings_per_subject: int = 120, seed: int = SMART_HOME_SEED
) -> dict[str, Any]:
    """Deterministic synthetic smart-home data as Arrow tables.

    ``subjects(subject_id, name, birth_year, district, household_size)``,
    ``sensor_readings(subject_id, ts, room, sensor, value)`` over one week in March
    2024, and ``subject_preferences(subject_id, rule, attribute, level, purpose)``
    in the long form of :mod:`paradise.policy.preferences`. Subject 17 does not share
    the room, subject 23 allows aggregated use only (the examples of DESIGN §3).

    Example:
        >>> t = smart_home_tables()
        >>> t["sensor_readings"].num_rows, t["subjects"].num_rows
        (7200, 60)
        >>> t["subject_preferences"].equals(smart_home_tables()["subject_preferences"])
        True
    """
    import datetime as dt

    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    ids = np.arange(1, subjects + 1, dtype=np.int32)
    names = [
        f"{_FIRST[rng.integers(len(_FIRST))]} {_LAST[rng.integers(len(_LAST))]} {i:02d}"
        for i in ids
    ]
    people = pa.table(
        {
            "subject_id": ids,
            "name": names,
            "birth_year": rng.integers(1935, 1960, subjects).astype(np.int32),
            "district": [DISTRICTS[i] for i in rng.integers(len(DISTRICTS), size=subjects)],
            "household_size": rng.integers(1, 4, subjects).astype(np.int32),
        }
    )
    n = subjects * readings_per_subject
    start = dt.datetime(2024, 3, 4)
    minutes = np.sort(rng.integers(0, 7 * 24 * 60, n).reshape(subjects, -1), axis=1).ravel()
    sensor = rng.integers(len(SENSORS), size=n)
    base = np.array([21.0, 45.0, 0.0])[sensor]
    spread = np.array([1.5, 8.0, 1.0])[sensor]
    value = np.round(base + spread * rng.standard_normal(n), 1)
    value = np.where(sensor == 2, (rng.random(n) < 0.3).astype(float), value)
    readings = pa.table(
        {
            "subject_id": np.repeat(ids, readings_per_subject),
            "ts": pa.array(
                [start + dt.timedelta(minutes=int(m)) for m in minutes], type=pa.timestamp("us")
            ),
            "room": [ROOMS[i] for i in rng.integers(len(ROOMS), size=n)],
            "sensor": [SENSORS[i] for i in sensor],
            "value": value,
        }
    )
    rules: list[tuple[int, str, str | None, str | None, str | None]] = [
        (17, "withhold", "room", None, None),
        (23, "aggregate_only", None, None, "assistant"),
    ]
    for sid in ids.tolist():
        if sid in (17, 23):
            continue
        draw = rng.random()
        if draw < 0.12:
            rules.append((sid, "withhold", "room", None, None))
        elif draw < 0.20:
            rules.append((sid, "aggregate_only", None, None, "assistant"))
        elif draw < 0.32:
            rules.append((sid, "coarsen", "ts", "hour" if rng.random() < 0.5 else "day", None))
        elif draw < 0.40:
            rules.append((sid, "coarsen", "room", "zone", None))
        elif draw < 0.44:
            rules.append((sid, "withhold", "value", None, "assistant"))
        elif draw < 0.46:
            rules.append((sid, "withhold", "*", None, None))
    rules.sort(key=lambda r: r[0])
    preferences = pa.table(
        {
            "subject_id": pa.array([r[0] for r in rules], type=pa.int32()),
            "rule": [r[1] for r in rules],
            "attribute": pa.array([r[2] for r in rules], type=pa.string()),
            "level": pa.array([r[3] for r in rules], type=pa.string()),
            "purpose": pa.array([r[4] for r in rules], type=pa.string()),
        }
    )
    return {"subjects": people, "sensor_readings": readings, "subject_preferences": preferences}


def load_smart_home(backend: Backend, **kwargs: Any) -> dict[str, int]:
    """Create ``subjects``, ``sensor_readings`` and ``subject_preferences`` in ``backend``.

    The tables of :func:`smart_home_tables` (``kwargs`` go there) are written to
    Parquet in a temporary directory and loaded with :func:`paradise.load.load_file`,
    so the same data reaches DuckDB, PostgreSQL and MariaDB. Returns rows per table.
    """
    import tempfile

    import pyarrow.parquet as pq

    loaded = {}
    with tempfile.TemporaryDirectory(prefix="paradise_demo_") as tmp:
        for name, table in smart_home_tables(**kwargs).items():
            path = Path(tmp) / f"{name}.parquet"
            pq.write_table(table, path)
            loaded[name] = load_file(backend, path, name, replace=True).rows
    return loaded

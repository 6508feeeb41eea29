"""``load_file`` on every backend: types, values, names, progress, replace semantics."""

from __future__ import annotations

import datetime
import decimal
import gzip
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlglot import exp

from paradise.backends.base import Backend
from paradise.errors import BackendError, InputError
from paradise.load import load_file
from tests.backends.conftest import ADULT, ADULT_ROWS, table_count

ODD = "quote \" comma , apostrophe ' backslash \\ newline \n ü"


def _typed_table() -> pa.Table:
    return pa.table({
        "Small Int": pa.array([1, None, -3], pa.int64()),
        "big-int": pa.array([2**40, 0, None], pa.int64()),
        "ratio": pa.array([0.5, None, -1.25], pa.float64()),
        "money": pa.array([decimal.Decimal("1.10"), None, decimal.Decimal("-2.00")],
                          pa.decimal128(10, 2)),
        "flag": pa.array([True, False, None]),
        "day": pa.array([datetime.date(2024, 2, 29), None, datetime.date(1999, 12, 31)]),
        "at": pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5, 678000), None,
                        datetime.datetime(1970, 1, 1)], pa.timestamp("us")),
        "text": pa.array(["", None, ODD]),
    })


def _read(backend: Backend, table: str, columns: list[str]) -> list[tuple[object, ...]]:
    cols = [exp.column(exp.to_identifier(c, quoted=True)) for c in columns]
    query = exp.select(*cols).from_(exp.Table(this=exp.to_identifier(table, quoted=True)))
    return backend.execute(query.order_by(cols[0].copy()).sql(backend.dialect)).rows


def test_parquet_types_and_values_round_trip(backend: Backend, tmp_path: Path) -> None:
    path = tmp_path / "typed.parquet"
    pq.write_table(_typed_table(), path)
    report = load_file(backend, path, "typed", add_id="rid", replace=True)
    assert report.rows == 3
    assert list(report.columns) == [
        "rid", "small_int", "big_int", "ratio", "money", "flag", "day", "at", "text"
    ]
    assert report.renamed == {"Small Int": "small_int", "big-int": "big_int"}
    catalog = backend.catalog()["typed"]
    assert exp.DataType.build(catalog["big_int"]).is_type(exp.DataType.Type.BIGINT)
    assert exp.DataType.build(catalog["money"]).is_type(exp.DataType.Type.DECIMAL)
    rows = _read(backend, "typed", list(report.columns))
    assert [r[0] for r in rows] == [1, 2, 3]  # file order
    first, second, third = rows
    assert first[1:5] == (1, 2**40, 0.5, decimal.Decimal("1.10"))
    assert bool(first[5]) is True and bool(second[5]) is False and third[5] is None
    assert first[6] == datetime.date(2024, 2, 29)
    assert first[7] == datetime.datetime(2024, 1, 2, 3, 4, 5, 678000)
    assert first[8] == ""  # empty string stays an empty string ...
    assert second[1] is None and second[3] is None and second[4] is None
    assert second[6] is None and second[7] is None
    assert second[8] is None  # ... and NULL stays NULL
    assert third[8] == ODD


def test_csv_and_csv_gz_load_adult(backend: Backend, tmp_path: Path) -> None:
    plain = tmp_path / "adult.csv"
    if ADULT.suffix == ".gz":
        with gzip.open(ADULT, "rb") as src, plain.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    else:
        shutil.copy(ADULT, plain)
    packed = tmp_path / "adult.csv.gz"
    with plain.open("rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    calls: list[tuple[int, int | None]] = []
    report = load_file(backend, packed, "adult_gz", replace=True, batch_rows=10_000,
                       progress=lambda done, total: calls.append((done, total)))
    assert report.rows == ADULT_ROWS == table_count(backend, "adult_gz")
    assert calls[0] == (0, ADULT_ROWS) and calls[-1] == (ADULT_ROWS, ADULT_ROWS)
    assert len(calls) >= 4 and all(a[0] <= b[0] for a, b in zip(calls, calls[1:], strict=False))
    other = load_file(backend, plain, "adult_csv", replace=True)
    assert other.columns == report.columns
    assert "education_num" in report.columns and "hours_per_week" in report.columns
    totals = "SELECT SUM(age), SUM(capital_gain), COUNT(DISTINCT native_country) FROM {}"
    assert backend.execute(totals.format("adult_gz")).rows == backend.execute(
        totals.format("adult_csv")).rows
    [(age_sum, _gain, countries)] = backend.execute(totals.format("adult_gz")).rows
    assert int(age_sum) == 1_256_257 and countries == 42


def test_existing_table_needs_replace(backend: Backend, tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), path)
    load_file(backend, path, "twice", replace=True)
    with pytest.raises(BackendError) as info:
        load_file(backend, path, "twice")
    assert info.value.sqlstate == "42P07"
    assert table_count(backend, "twice") == 2


def test_failed_replace_keeps_the_old_table(backend: Backend, tmp_path: Path) -> None:
    old = tmp_path / "old.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), old)
    load_file(backend, old, "kept", replace=True)
    new = tmp_path / "new.parquet"
    pq.write_table(pa.table({"b": list(range(100))}), new)

    def interrupt(done: int, total: int | None) -> None:
        if done > 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        load_file(backend, new, "kept", replace=True, batch_rows=10, progress=interrupt)
    assert backend.catalog()["kept"] == {"a": backend.catalog()["kept"]["a"]}
    assert table_count(backend, "kept") == 3
    assert not [t for t in backend.catalog() if "paradise_loading" in t]  # staging dropped


def test_missing_file_and_unreadable_file(backend: Backend, tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_file(backend, tmp_path / "nope.csv", "nope")
    assert info.value.sqlstate == "58030"
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not a parquet file")
    with pytest.raises(InputError) as info:
        load_file(backend, broken, "broken")
    assert "\n" not in str(info.value)
    assert "broken" not in backend.catalog()


def test_add_id_must_not_collide(backend: Backend, tmp_path: Path) -> None:
    path = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"id": [5, 6]}), path)
    with pytest.raises(InputError) as info:
        load_file(backend, path, "ids", add_id="id")
    assert info.value.sqlstate == "42701"


def test_the_planner_knows_the_size_of_a_loaded_table(backend: Backend, tmp_path: Path) -> None:
    """Statistics are taken as part of the load: right after it, the planner's row estimate
    is the table's size, not the one row InnoDB (or an unanalyzed PostgreSQL table) would
    assume until background statistics run (MariaDB then plans joins as nested loops)."""
    if backend.dialect == "duckdb":
        pytest.skip("DuckDB keeps exact row counts")
    path = tmp_path / "sized.parquet"
    pq.write_table(pa.table({"x": list(range(20_000)), "y": ["v"] * 20_000}), path)
    load_file(backend, path, "sized", replace=True)
    if backend.dialect == "postgres":
        sql = (
            "SELECT c.reltuples FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n "
            "ON n.oid = c.relnamespace WHERE c.relname = 'sized' AND n.nspname = current_schema()"
        )
    else:
        sql = (
            "SELECT TABLE_ROWS FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'sized'"
        )
    [(estimate,)] = backend.execute(sql).rows
    assert 10_000 <= float(estimate) <= 40_000, estimate

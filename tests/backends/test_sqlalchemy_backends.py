"""The SQLAlchemy dialect on every backend: pandas reads the same anonymized answer as the
library, without warnings."""

from __future__ import annotations

import warnings

import pandas as pd
import sqlalchemy

import paradise
from tests.backends.conftest import Database


def _paradise_url(database: Database) -> str:
    url = sqlalchemy.engine.make_url(database.url)
    if database.kind == "duckdb":
        return f"paradise+duckdb:///{database.duckdb_path}?role=analyst"
    driver = "paradise+postgresql" if database.kind == "postgres" else "paradise+mysql"
    url = url.set(drivername=driver).update_query_dict({"role": "analyst"})
    return url.render_as_string(hide_password=False)


def test_pandas_through_the_dialect_matches_the_library(
    database: Database, proc: paradise.Processor
) -> None:
    sql = "SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex"
    expected = proc.query(sql, role="analyst").to_pandas()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine = sqlalchemy.create_engine(_paradise_url(database))
        try:
            frame = pd.read_sql(sql, engine)
            with engine.connect() as con:
                names = sqlalchemy.inspect(con).get_table_names()
                columns = [c["name"] for c in sqlalchemy.inspect(con).get_columns("adult")]
        finally:
            engine.dispose()
    pd.testing.assert_frame_equal(frame, expected, check_dtype=False)
    assert "adult" in names and "id" not in columns and "sex" in columns

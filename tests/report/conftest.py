"""Fixtures of the report tests: seed 003's worked tables as data, and DuckDB with them."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

# seed 003, Tabelle 1 (Beispiel für die Verletzung von K-Anonymität)
TABLE1 = pd.DataFrame(
    {
        "land": ["Deutschland", "Schweiz", "Deutschland", "Deutschland", "Schweiz"],
        "geschlecht": ["weiblich", "männlich", "weiblich", "weiblich", "männlich"],
        "bildungsgrad": ["Master", "Master", "Bachelor", "Master", "Master"],
    }
)

# seed 003, Tabelle 2 (Templ 2017, p. 58): key variables, f_k, sensitive variable, l-diversity
TABLE2 = pd.DataFrame(
    {
        "gender": ["Male", "Male", "Male", "Female", "Female", "Female"],
        "age_group": ["30s", "30s", "30s", "20s", "20s", "20s"],
        "f_k": [3, 3, 3, 3, 3, 3],
        "medical_condition": [
            "Cancer", "Heart disease", "Heart disease", "Cancer", "Cancer", "Cancer",
        ],
        "l_diversity": [2, 2, 2, 1, 1, 1],
    }
)


class DuckBackend:
    """The smallest backend the measures need (``dialect`` and ``execute``)."""

    dialect = "duckdb"

    def __init__(self) -> None:
        self.con = duckdb.connect()

    def execute(self, sql: str):  # noqa: ANN201
        from paradise.backends.base import ResultSet

        rel = self.con.sql(sql)
        table = rel.to_arrow_table()
        return ResultSet(tuple(rel.columns), tuple(str(t) for t in rel.types), table)

    def register(self, name: str, frame: pd.DataFrame) -> None:
        self.con.register(f"{name}_view", frame)
        self.con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM "{name}_view"')


@pytest.fixture
def duck() -> DuckBackend:
    backend = DuckBackend()
    backend.register("table1", TABLE1)
    backend.register("table2", TABLE2)
    return backend

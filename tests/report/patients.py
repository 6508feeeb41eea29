"""A generated patients table (dates, timestamps, free text, NULLs, booleans) and its policy.

Built in DuckDB from ``range(n)`` with hash-based values, so it is the same on every
run and needs no data file. The policy gives one role a realistic mix: dates and a
ZIP code as quasi-identifiers (birth dates truncated to the year), a categorical and a
numeric sensitive column, microaggregated weights, and visible free text with one
distinct value per row.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROWS = 50_000

# one SELECT per column; h(i, salt) is a deterministic pseudo-random integer in [0, 2^31)
_COLUMNS = {
    "patient_id": "i",
    "name": "'Patient ' || lpad(CAST(h(i, 1) AS VARCHAR), 10, '0')",
    "note": "'visit ' || CAST(i AS VARCHAR) || ': ' || md5(CAST(i AS VARCHAR))",
    "birth_date": "DATE '1930-01-01' + CAST(h(i, 2) % 30000 AS INTEGER)",
    "admitted_at": "TIMESTAMP '2020-01-01 00:00:00' + to_seconds(CAST(h(i, 3) % 94608000 AS BIGINT))",
    "discharged_on": "CASE WHEN h(i, 4) % 10 = 0 THEN NULL ELSE DATE '2020-01-01' + CAST(h(i, 3) % 1095 AS INTEGER) + CAST(h(i, 5) % 20 AS INTEGER) END",
    "zip": "lpad(CAST(10000 + h(i, 6) % 900 AS VARCHAR), 5, '0')",
    "sex": "CASE h(i, 7) % 21 WHEN 0 THEN NULL WHEN 1 THEN 'diverse' ELSE CASE WHEN h(i, 7) % 2 = 0 THEN 'female' ELSE 'male' END END",
    "smoker": "CASE WHEN h(i, 8) % 7 = 0 THEN NULL ELSE h(i, 8) % 3 = 0 END",
    "diagnosis": "['asthma', 'diabetes', 'fracture', 'influenza', 'hypertension', 'migraine', 'covid-19', NULL][1 + h(i, 9) % 8]",
    "weight_kg": "CASE WHEN h(i, 10) % 12 = 0 THEN NULL ELSE 45 + (h(i, 10) % 7000) / 100.0 END",
    "systolic": "CAST(95 + h(i, 11) % 80 AS INTEGER)",
    "length_of_stay": "CAST(h(i, 5) % 20 AS INTEGER)",
}

POLICY = {
    "role": "clinician",
    "description": "Clinical researchers; generated patients table.",
    "tables": {
        "patients": {
            "columns": {
                "patient_id": "identifier",
                "name": "identifier",
                "note": "insensitive",
                "birth_date": "quasi_identifier",
                "zip": "quasi_identifier",
                "sex": "quasi_identifier",
                "admitted_at": "insensitive",
                "discharged_on": "insensitive",
                "smoker": "insensitive",
                "diagnosis": "sensitive",
                "weight_kg": "insensitive",
                "systolic": "sensitive",
                "length_of_stay": "insensitive",
            },
            "privacy": {"k": 5, "l": 2, "on_violation": "suppress"},
            "transform": [
                {"generalization": {"columns": {"birth_date": {"truncate": "year"},
                                                "admitted_at": {"truncate": "month"}}}},
                {"microaggregation": {"columns": ["weight_kg"], "k": 5}},
            ],
        }
    },
}


def create_patients(con, rows: int = ROWS) -> None:  # noqa: ANN001 - a duckdb connection
    """Create table ``patients`` with ``rows`` rows in the DuckDB connection ``con``."""
    con.execute("CREATE OR REPLACE MACRO h(i, s) AS CAST(hash(i * 7919 + s) % 2147483648 AS BIGINT)")
    select = ", ".join(f"{sql} AS {name}" for name, sql in _COLUMNS.items())
    con.execute(f"CREATE OR REPLACE TABLE patients AS SELECT {select} FROM range({rows}) t(i)")
    con.execute("DROP MACRO h")


def write_policy(directory: Path) -> Path:
    """Write the clinician policy to ``directory`` and return the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "clinician.yaml").write_text(yaml.safe_dump(POLICY, sort_keys=False))
    return directory

"""The bundled demo data: UCI Adult (32,561 rows) with a synthetic ``id`` identifier."""

from __future__ import annotations

from pathlib import Path

from paradise.backends.base import Backend

__all__ = ["ADULT_CSV", "load_demo_tables"]

ADULT_CSV = Path(__file__).parent / "data" / "adult.csv.gz"


def load_demo_tables(backend: Backend) -> None:
    """Create ``adult`` in an embedded DuckDB backend from the bundled CSV.

    Column names are normalized (``education-num`` -> ``education_num``) and a
    person number ``id`` (an identifier the policies hide) is added.
    """
    if backend.dialect != "duckdb":
        from paradise.load import load_file

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
    backend.run(f"CREATE OR REPLACE TABLE adult AS {select.sql('duckdb')}")


def normalize_name(name: str) -> str:
    """A column name as paradise stores it: lower case, ``-`` and spaces become ``_``.

    >>> normalize_name("Education-Num")
    'education_num'
    """
    return "_".join(name.strip().lower().replace("-", " ").split())

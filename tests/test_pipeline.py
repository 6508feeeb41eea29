"""End-to-end queries through the pipeline on embedded DuckDB."""

from __future__ import annotations

import pandas as pd
import pytest

import paradise
from paradise.dbapi import Connection
from paradise.pipeline import relation_name as cte_name


def test_every_reference_reads_the_anonymized_relation(proc: paradise.Processor) -> None:
    sql = (
        "WITH older AS (SELECT age, sex FROM adult WHERE age > 60) "
        "SELECT o.sex, count(*) AS n FROM older o JOIN adult a ON a.sex = o.sex "
        "WHERE a.age IN (SELECT age FROM adult WHERE race = 'Other') GROUP BY o.sex ORDER BY o.sex"
    )
    explained = proc.explain(sql, role="analyst")
    generated = explained.sql
    assert generated.count(f'"{cte_name("adult")}" AS') >= 1
    # the stored table is read only inside the anonymized relation's definition:
    # every reference of the user's query reads the CTE, with its own alias
    assert ' FROM "adult" AS ' not in generated and ' JOIN "adult" AS ' not in generated
    assert f'"{cte_name("adult")}" AS "a"' in generated
    assert '"id"' not in generated
    assert any("adult -> anonymized relation" in step for step in explained.plan)


def test_identifier_never_read(proc: paradise.Processor) -> None:
    generated = proc.explain("SELECT * FROM adult", role="public").sql
    for hidden in ("id", "fnlwgt", "capital_gain", "relationship"):
        assert f'"{hidden}"' not in generated


def test_aggregate_counts_travel_with_groups(proc: paradise.Processor, adult: pd.DataFrame) -> None:
    result = proc.query(
        "SELECT workclass, count(*) AS n FROM adult GROUP BY workclass", role="analyst"
    )
    assert "_paradise_n" not in result.columns
    got = dict(result.rows)
    assert got == adult.groupby("workclass").size().to_dict()
    # the class size is the number of rows behind each group, not 1 per output row
    assert result.annotations.k_achieved == min(got.values())


def test_public_role_result_is_k_anonymous_and_l_diverse(
    proc: paradise.Processor, adult: pd.DataFrame
) -> None:
    result = proc.query("SELECT age, sex, income FROM adult", role="public")
    frame = result.to_pandas()
    for unit in (["age"], ["sex"]):
        sizes = frame.groupby(unit).size()
        assert sizes.min() >= 10
        assert frame.groupby(unit)["income"].nunique().min() >= 2
    # a class is withheld whole or released whole: every released age appears exactly as
    # often as in the stored table (slicing permutes values, it keeps their counts), and
    # every age that at least 10 people share and that is not withheld for l is released
    raw = adult.groupby("age").size()
    released = frame.groupby("age").size()
    assert (released == raw[released.index]).all()
    assert set(raw[raw < 10].index).isdisjoint(released.index)
    # the small classes were withheld: their rows (live) or their ages (in the release)
    assert 0 < frame["age"].notna().sum() < len(adult)
    ann = result.annotations
    assert ann.k_achieved == int(min(sizes.min() for sizes in (released, frame.groupby("sex").size())))


def test_auditor_refuses_non_anonymous_answer(proc: paradise.Processor) -> None:
    before = len(proc.backend.statements)
    with pytest.raises(paradise.VerificationError, match="not 5-anonymous"):
        proc.query("SELECT age, race FROM adult WHERE age > 85", role="auditor")
    assert len(proc.backend.statements) == before + 1  # ran, checked, refused


def test_auditor_allows_coarse_answer(proc: paradise.Processor) -> None:
    result = proc.query("SELECT sex, count(*) AS n FROM adult GROUP BY sex", role="auditor")
    assert sorted(result.rows) == [("Female", 10771), ("Male", 21790)]
    assert result.annotations.k_achieved == 10771


def test_parameters_are_bound_as_literals(proc: paradise.Processor) -> None:
    result = proc.query(
        "SELECT count(*) AS n FROM adult WHERE sex = ? AND age > ?",
        role="analyst",
        params=["Male", 80],
    )
    assert result.rows[0][0] > 0
    explained = proc.explain(
        "SELECT age FROM adult WHERE sex = ?", role="analyst", params=["x' OR 1=1 --"]
    )
    assert "'x'' OR 1=1 --'" in explained.sql


def test_annotations_are_complete(proc: paradise.Processor) -> None:
    result = proc.query("SELECT race, sex FROM adult", role="analyst")
    ann = result.annotations
    assert ann.role == "analyst"
    assert ann.sql.startswith("WITH")
    assert set(ann.timings_ms) >= {
        "parse",
        "check",
        "qualify",
        "rewrite",
        "generate",
        "execute",
        "verify",
    }
    assert ann.tables[0].hidden_columns == ("id",)
    assert {u.columns for u in ann.units} == {("race",), ("sex",)}
    assert ann.to_dict()["tables"][0]["operators"][0]["operator"] == "slicing"
    assert any(line.startswith("k required") for line in ann.notices())


def test_dbapi_and_pandas_read_sql(proc: paradise.Processor) -> None:
    cursor = Connection(proc).cursor(role="analyst")
    cursor.execute("SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex")
    assert [d[0] for d in cursor.description] == ["sex", "n"]
    assert cursor.fetchall() == [("Female", 10771), ("Male", 21790)]
    con = Connection(paradise.Processor(proc.backend, proc.policies), role="analyst")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # pandas warns for non-SQLAlchemy DB-API
        frame = pd.read_sql("SELECT age, workclass FROM adult WHERE age > 85", con)
    assert list(frame.columns) == ["age", "workclass"] and (frame["age"] > 85).all()


def test_to_arrow_and_dicts(proc: paradise.Processor) -> None:
    result = proc.query("SELECT sex, count(*) AS n FROM adult GROUP BY sex", role="analyst")
    assert result.to_arrow().column_names == ["sex", "n"]
    assert {d["sex"] for d in result.to_dicts()} == {"Female", "Male"}


def test_qualified_unprotected_query_without_tables(proc: paradise.Processor) -> None:
    result = proc.query("SELECT 1 + 1 AS two", role="analyst")
    assert result.rows == [(2,)] and result.annotations.k_required is None

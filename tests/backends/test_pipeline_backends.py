"""The bundled roles' queries give the same properties on DuckDB, PostgreSQL and MariaDB."""

from __future__ import annotations

from collections import Counter

import pytest

import paradise
from paradise.errors import QueryRejected, VerificationError
from tests.backends.conftest import ADULT_ROWS


def _stored(proc: paradise.Processor, columns: str) -> list[tuple[object, ...]]:
    return proc.backend.execute(f"SELECT {columns} FROM adult ORDER BY id").rows


def test_analyst_gets_sliced_rows(proc: paradise.Processor) -> None:
    result = proc.query("SELECT * FROM adult", role="analyst")
    assert len(result.rows) == ADULT_ROWS
    assert "id" not in result.columns
    index = {c: i for i, c in enumerate(result.columns)}
    for group in (
        ("age", "workclass"),
        ("occupation", "relationship"),
        ("capital_gain", "capital_loss"),
    ):
        released = Counter(tuple(r[index[c]] for c in group) for r in result.rows)
        assert released == Counter(_stored(proc, ", ".join(group)))
    # links across groups are permuted inside buckets of ~326 rows
    stored = _stored(proc, "age, sex")
    pairs = [(r[index["age"]], r[index["sex"]]) for r in result.rows]
    assert pairs != stored and Counter(pairs) != Counter(stored)
    # and the released order is not the stored order
    assert [r[index["age"]] for r in result.rows] != [a for a, _s in stored]
    table = result.annotations.tables[0]
    assert table.operators[0]["operator"] == "slicing"
    assert table.operators[0]["params"]["buckets"] == 100
    assert result.annotations.k_required == 5


def test_analyst_aggregate_matches_stored_counts(proc: paradise.Processor) -> None:
    result = proc.query(
        "SELECT sex, COUNT(*) AS n FROM adult GROUP BY sex ORDER BY sex", role="analyst"
    )
    expected = proc.backend.execute(
        "SELECT sex, COUNT(*) FROM adult GROUP BY sex ORDER BY sex"
    ).rows
    assert [tuple(r) for r in result.rows] == [(s, int(n)) for s, n in expected]


def test_public_answer_is_10_anonymous_per_column(proc: paradise.Processor) -> None:
    result = proc.query("SELECT * FROM adult", role="public")
    assert 0.95 * ADULT_ROWS < len(result.rows) < ADULT_ROWS  # rows of small classes withheld
    assert not {"id", "fnlwgt", "relationship"} & set(result.columns)
    stored = {
        column: dict(
            proc.backend.execute(f"SELECT {column}, count(*) FROM adult GROUP BY {column}").rows
        )
        for column in ("age", "workclass", "education", "occupation", "native_country")
    }
    for column, counts in stored.items():
        i = result.columns.index(column)
        sizes = Counter(r[i] for r in result.rows)
        assert min(sizes.values()) >= 10, column
        # no value that fewer than 10 people share is released
        assert not {v for v, n in counts.items() if n < 10} & set(sizes), column
    assert result.annotations.k_achieved is not None and result.annotations.k_achieved >= 10


def test_public_cannot_read_hidden_columns(proc: paradise.Processor) -> None:
    with pytest.raises(QueryRejected):
        proc.query("SELECT fnlwgt FROM adult", role="public")


def test_auditor_aggregates_pass_and_rows_are_refused(proc: paradise.Processor) -> None:
    result = proc.query(
        "SELECT race, COUNT(*) AS n FROM adult GROUP BY race ORDER BY race", role="auditor"
    )
    expected = proc.backend.execute(
        "SELECT race, COUNT(*) FROM adult GROUP BY race ORDER BY race"
    ).rows
    assert [tuple(r) for r in result.rows] == [(s, int(n)) for s, n in expected]
    with pytest.raises(VerificationError):
        proc.query("SELECT age, sex, race FROM adult", role="auditor")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT sex, COUNT(*) AS n FROM adult WHERE age > 85 GROUP BY sex",
        "SELECT AVG(age) AS a FROM adult",
        "SELECT sex FROM (SELECT age AS a, sex FROM adult) s WHERE a BETWEEN 20 AND 30",
        "SELECT COUNT(*) AS n FROM adult WHERE age + 1 = 40",
    ],
)
def test_numeric_use_of_a_generalized_column_names_the_rule(
    proc: paradise.Processor, sql: str
) -> None:
    """Issue 13: a type error in the database becomes a policy-level refusal."""
    from paradise.errors import UnsupportedQueryError

    with pytest.raises(UnsupportedQueryError) as info:
        proc.query(sql, role="statistics_office")
    message = str(info.value)
    assert "generalized to labels" in message
    assert "tables.adult.transform.generalization.age" in message


def test_generalized_column_compared_with_its_labels(proc: paradise.Processor) -> None:
    result = proc.query(
        "SELECT sex, COUNT(*) AS n FROM adult WHERE age = '30-39' GROUP BY sex ORDER BY sex",
        role="statistics_office",
    )
    stored = dict(
        proc.backend.execute(
            "SELECT sex, COUNT(*) FROM adult WHERE age BETWEEN 30 AND 39 GROUP BY sex"
        ).rows
    )
    # the released counts are of generalized, PRAM-free columns: exact
    assert {s: int(n) for s, n in result.rows} == {s: int(n) for s, n in stored.items()}

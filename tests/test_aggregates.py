"""Aggregate rules: minimum cell sizes, allowed aggregates, ROLLUP with cell suppression."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import paradise
from paradise.backends.duckdb import DuckDBBackend
from paradise.cli import cli

SEED_POLICY = """\
role: office
tables:
  have:
    columns: {kreis: quasi_identifier, quartier: quasi_identifier, wert: insensitive}
    aggregates:
      detail: refuse
      allowed: {sum: [wert], count: ["*"]}
      cell_suppression: {min: 1, max: 3, function: max}
  visits:
    columns: {person: identifier, ward: quasi_identifier, days: insensitive}
    subject_key: person
    aggregates: {min_cell_size: 3, count: subjects, small_cells: refuse}
"""

# microdata whose SUM(wert) ... GROUP BY ROLLUP(kreis, quartier) is seed 002's table
SEED_MICRODATA = [(1, 1, 2), (1, 2, 7), (2, 1, 2), (2, 2, 0), (3, 1, 17)]
# seed 002 as printed (kreis, quartier, published, min, max, reason code); totals are NULL here
SEED_PUBLISHED = {
    (None, None): ("28", None, None, None),
    (1, None): ("9", None, None, None),
    (1, 1): ("1-3", 1, 3, "primär"),
    (1, 2): ("6-8", 6, 8, "A11"),
    (2, None): ("1-3", 1, 3, "A12"),
    (2, 1): ("1-3", 1, 3, "primär"),
    (2, 2): ("0", None, None, None),
    (3, None): ("16-18", 16, 18, "A21"),
    (3, 1): ("16-18", 16, 18, "C1"),
}


@pytest.fixture(scope="module")
def office(tmp_path_factory: pytest.TempPathFactory) -> paradise.Processor:
    folder = tmp_path_factory.mktemp("policies")
    (folder / "office.yaml").write_text(SEED_POLICY)
    backend = DuckDBBackend(":memory:")
    backend.run("CREATE TABLE have (kreis INTEGER, quartier INTEGER, wert INTEGER)")
    backend.run(
        "INSERT INTO have VALUES " + ", ".join(f"({a}, {b}, {c})" for a, b, c in SEED_MICRODATA)
    )
    backend.run("CREATE TABLE visits (person INTEGER, ward VARCHAR, days INTEGER)")
    backend.run(
        "INSERT INTO visits VALUES (1,'a',3),(1,'a',4),(1,'a',1),(2,'a',2),(3,'a',5),"
        "(4,'b',1),(4,'b',2),(4,'b',3),(4,'b',9)"
    )
    return paradise.connect(backend, policies=folder, role="office")


def test_seed_002_through_sql_rollup(office: paradise.Processor) -> None:
    result = office.query(
        "SELECT kreis, quartier, SUM(wert) AS wert FROM have GROUP BY ROLLUP (kreis, quartier)"
    )
    assert result.columns == ("kreis", "quartier", "wert", "wert_min", "wert_max", "wert_reason")
    got = {(r[0], r[1]): (r[2], r[3], r[4], r[5]) for r in result.rows}
    assert got == SEED_PUBLISHED
    cells = result.annotations.aggregates["cell_suppression"]
    assert (cells["primary"], cells["secondary"], cells["tertiary"]) == (2, 3, 1)
    assert cells["audit"]["passed"] is True
    assert any("audit passed" in line for line in result.annotations.notices())


def test_detail_rows_are_refused(office: paradise.Processor) -> None:
    with pytest.raises(paradise.QueryRejected, match="only be queried in aggregate"):
        office.query("SELECT kreis, wert FROM have")


def test_disallowed_aggregate_is_refused(office: paradise.Processor) -> None:
    with pytest.raises(paradise.QueryRejected, match="aggregate AVG is not allowed"):
        office.query("SELECT kreis, AVG(wert) FROM have GROUP BY kreis")
    with pytest.raises(paradise.UnsupportedQueryError, match="inside subqueries"):
        office.query(
            "SELECT MAX(s) AS m FROM (SELECT kreis, SUM(wert) AS s FROM have GROUP BY kreis) t GROUP BY 1"
        )


def test_totals_without_cell_suppression_are_refused(proc: paradise.Processor) -> None:
    with pytest.raises(paradise.UnsupportedQueryError, match="hierarchical cell suppression"):
        proc.query("SELECT race, count(*) FROM adult GROUP BY CUBE (race)", role="tables")


def test_distinct_subjects_are_counted(office: paradise.Processor) -> None:
    # ward a has 5 rows but 3 distinct persons; ward b 4 rows of one person
    with pytest.raises(paradise.VerificationError, match="not 3-anonymous"):
        office.query("SELECT ward, SUM(days) AS d FROM visits GROUP BY ward")
    ok = office.query("SELECT ward, SUM(days) AS d FROM visits WHERE ward = 'a' GROUP BY ward")
    assert ok.rows == [("a", 15)]
    assert '"person"' in ok.annotations.sql  # counted in the database, never released
    assert "person" not in ok.columns


def test_subjects_are_counted_by_default(tmp_path: Path) -> None:
    """Issue 13, item 7: with a subject key, cells count people without ``count: subjects``;
    ``count: rows`` next to a subject key is a policy error."""
    policy = SEED_POLICY.replace("count: subjects, ", "")
    (tmp_path / "office.yaml").write_text(policy)
    backend = DuckDBBackend(":memory:")
    backend.run("CREATE TABLE visits (person INTEGER, ward VARCHAR, days INTEGER)")
    backend.run("INSERT INTO visits VALUES (1,'b',1),(1,'b',2),(1,'b',3),(1,'b',9),(2,'a',1)")
    proc = paradise.connect(backend, policies=tmp_path, role="office")
    with pytest.raises(paradise.VerificationError, match="not 3-anonymous"):
        proc.query("SELECT ward, COUNT(*) AS n FROM visits WHERE ward = 'b' GROUP BY ward")
    with pytest.raises(paradise.VerificationError):
        proc.query(
            "SELECT COUNT(*) AS n FROM (SELECT * FROM visits UNION ALL SELECT * FROM visits) v"
        )
    (tmp_path / "office.yaml").write_text(SEED_POLICY.replace("count: subjects", "count: rows"))
    with pytest.raises(paradise.PolicyError, match="counts one person's rows"):
        paradise.connect(backend, policies=tmp_path, role="office")


def test_small_cells_are_withheld_with_their_labels(proc: paradise.Processor, adult) -> None:
    """A group below the minimum cell size releases neither its count nor its label
    (an interval with the label would tell that the group exists: issue 13, item 11)."""
    result = proc.query(
        "SELECT native_country, count(*) AS n FROM adult GROUP BY native_country", role="tables"
    )
    sizes = adult.groupby("native_country", dropna=False).size()
    assert int((sizes < 5).sum()) > 0
    expected = {
        (None if isinstance(k, float) else k): int(v) for k, v in sizes.items() if v >= 5
    }
    assert dict(result.rows) == expected


def test_rollup_on_adult_passes_audit(proc: paradise.Processor) -> None:
    result = proc.query(
        "SELECT race, native_country, count(*) AS n FROM adult GROUP BY ROLLUP (race, native_country)",
        role="tables",
    )
    cells = result.annotations.aggregates["cell_suppression"]
    assert cells["primary"] > 0 and cells["audit"]["passed"]
    for row in result.rows:
        if row[2].count("-") == 0 and row[1] is not None:
            assert not 1 <= int(row[2]) <= 4, row  # no small count published exactly


@pytest.mark.parametrize(
    ("source", "factor", "where"),
    [
        ("adult", 1, "age >= 80"),
        ("adult", 1, "age = 90"),
        ("(SELECT * FROM adult UNION ALL SELECT * FROM adult) AS t", 2, "age >= 80"),
        ("(SELECT * FROM adult UNION ALL SELECT * FROM adult) AS t", 2, "age = 90"),
        (
            "(SELECT * FROM adult UNION ALL SELECT * FROM adult UNION ALL SELECT * FROM adult) AS t",
            3,
            "age BETWEEN 75 AND 90",
        ),
    ],
)
def test_rollup_cells_count_contributors(proc: paradise.Processor, adult, source, factor, where):
    """Issue 13, items 1 and 6: a cell published exactly stands for at least 5 people,
    whatever repeats rows; otherwise the answer is refused. Checked against pandas."""
    sql = (
        f"SELECT sex, race, count(*) AS n FROM {source} WHERE {where} "
        "GROUP BY ROLLUP (sex, race)"
    )
    try:
        result = proc.query(sql, role="tables")
    except paradise.VerificationError:
        return
    rows = adult.query(where.replace("=", "==").replace("<==", "<=").replace(">==", ">="))
    people = {
        **{(s, r): n for (s, r), n in rows.groupby(["sex", "race"]).size().items()},
        **{(s, None): n for s, n in rows.groupby("sex").size().items()},
        (None, None): len(rows),
    }
    for sex, race, published, *_ in result.rows:
        if "-" in published:
            continue
        assert int(published) == factor * people[(sex, race)]
        assert people[(sex, race)] >= 5, (sex, race, published)


def test_suppress_command_reproduces_seed_002(tmp_path: Path) -> None:
    db = str(tmp_path / "seed.duckdb")
    backend = DuckDBBackend(db)
    backend.run("CREATE TABLE have (kreis INTEGER, quartier INTEGER, wert INTEGER)")
    backend.run(
        "INSERT INTO have VALUES (0,0,28),(1,0,9),(1,1,2),(1,2,7),(2,0,2),(2,1,2),(2,2,0),(3,0,17),(3,1,17)"
    )
    backend.close()
    result = CliRunner().invoke(
        cli,
        [
            "suppress",
            "--db",
            db,
            "--table",
            "have",
            "--levels",
            "kreis,quartier",
            "--value",
            "wert",
            "--min",
            "1",
            "--max",
            "3",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Kreis,Quartier,published")
    assert "1,2,6-8,6,8,A11,Anonymisiert, damit in Quartier 2" in result.stdout.replace('"', "")
    assert "audit passed" in result.stderr

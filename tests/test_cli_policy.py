"""``paradise policy validate DIR --db``: policies held against the data, one located line per
problem; hierarchy files located at their own lines."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result

import paradise
from paradise.backends.duckdb import DuckDBBackend
from paradise.cli import cli
from paradise.errors import PolicyError
from paradise.policy import load_policies
from paradise.tools.check_data import check_against_database, column_kind
from paradise.tools.demo_data import load_demo

HIERARCHY = "United-States;North America;*\nGermany;Europe;*\nMexico;North America;*\n"


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "people.duckdb")
    con = duckdb.connect(path)
    con.execute(
        "CREATE TABLE people AS SELECT * FROM (VALUES "
        "(1, 34, 'Female', 'Germany', DATE '2020-01-05', 40.5), "
        "(2, 51, 'Male', 'United-States', DATE '2021-03-01', 38.0), "
        "(3, 29, 'Male', 'Mexico', DATE '2021-07-09', 45.0), "
        "(4, 62, 'Female', 'Peru', DATE '2022-11-30', 20.0), "
        "(5, 45, 'Female', 'Chile', DATE '2023-02-14', 30.0)"
        ") AS t(id, age, sex, country, visit, hours)"
    )
    con.close()
    return path


def _policy(directory: Path, body: str, hierarchy: str = HIERARCHY) -> Path:
    directory.mkdir(exist_ok=True)
    (directory / "hierarchies").mkdir(exist_ok=True)
    (directory / "hierarchies" / "country.csv").write_text(hierarchy)
    (directory / "nurse.yaml").write_text(body)
    return directory


GOOD = """\
role: nurse
tables:
  people:
    columns:
      id: identifier
      age: quasi_identifier
      sex: quasi_identifier
      country: quasi_identifier
      visit: insensitive
      hours: insensitive
    aggregates:
      allowed: {avg: [age, hours], count: ["*"]}
    transform:
      - generalization:
          columns:
            age: {width: 10}
            visit: {truncate: month}
            country: {hierarchy_file: hierarchies/country.csv, level: 1}
      - noise: {columns: [hours], alpha: 0.1}
"""


def _validate(directory: Path, db: str) -> Result:
    return CliRunner().invoke(cli, ["policy", "validate", str(directory), "--db", db])


def _problems(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def test_a_policy_that_fits_its_data_passes(tmp_path: Path, db: str) -> None:
    full = HIERARCHY + "Peru;South America;*\nChile;South America;*\n"
    result = _validate(_policy(tmp_path / "p", GOOD, full), db)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ok  nurse: people (generalization, noise; k=1)")


def test_every_problem_is_one_located_line(tmp_path: Path, db: str) -> None:
    bad = (
        GOOD.replace("      age: quasi_identifier", "      Age: quasi_identifier")
        .replace("age: {width: 10}", "Age: {width: 10}")
        .replace("{avg: [age, hours]", "{avg: [sex, hours]")
        .replace("visit: {truncate: month}", "visit: {truncate: month}\n            sex: {round: 5}")
        .replace("columns: [hours]", "columns: [country]")
    )
    directory = _policy(tmp_path / "p", bad)
    result = _validate(directory, db)
    assert result.exit_code == 2
    lines = _problems(result)
    policy = directory / "nurse.yaml"
    assert lines == [
        f'error: policy error: {policy}:6: tables.people.columns.Age: column "Age" is not in '
        'table people (did you mean "age"?)',
        f"error: policy error: {policy}:18: tables.people.transform.0.generalization.columns."
        "sex.round: round needs a numeric column; sex is VARCHAR (text)",
        f"error: policy error: {directory / 'hierarchies' / 'country.csv'}: tables.people."
        "transform.0.generalization.columns.country: the hierarchy does not cover 2 distinct "
        f"value(s) of people.country (2 row(s)); they would all be released as '*' (used at "
        f"{policy}:19)",
        f"error: policy error: {policy}:20: tables.people.transform.1.noise.columns.0: noise "
        "needs a numeric column; country is VARCHAR (text)",
        f"error: policy error: {policy}:12: tables.people.aggregates.allowed.avg: avg needs a "
        "numeric column; sex is VARCHAR (text)",
    ]
    assert "Peru" not in result.stderr and "Chile" not in result.stderr  # no data values
    assert result.stderr.splitlines()[-1] == "5 problem(s) found"
    # the line numbers point at the keys named
    text = policy.read_text().splitlines()
    assert text[5].strip().startswith("Age:") and text[17].strip().startswith("sex: {round")
    assert text[19].strip().startswith("- noise") and text[11].strip().startswith("allowed")


def test_truncate_on_text_and_a_missing_table(tmp_path: Path, db: str) -> None:
    bad = GOOD.replace("visit: {truncate: month}", "sex: {truncate: month}") + (
        "  visits:\n    columns: {id: identifier}\n"
    )
    lines = _problems(_validate(_policy(tmp_path / "p", bad, HIERARCHY + "Peru;SA;*\n"
                                        "Chile;SA;*\n"), db))
    assert any(".columns.sex.truncate: truncate needs a date or timestamp column; sex is "
               "VARCHAR (text)" in line for line in lines)
    assert any("tables.visits: table 'visits' is not in the database" in line for line in lines)


@pytest.mark.parametrize(
    ("hierarchy", "fragment"),
    [
        ("Germany,Europe,*\nPeru,America,*\n",
         "country.csv:1: no ';' between the levels: the file looks comma-separated"),
        ("Germany;Europe;*\nPeru;America\n", "country.csv:2: 2 levels where line 1 has 3"),
        ("Germany;Europe;*\n\nPeru;America;*\nGermany;Europe;*\n",
         "country.csv:4: value 'Germany' appears twice (first on line 1)"),
        ("Germany;Europe;*\nPeru;America;*\nChile;Europe;World\n",
         "country.csv:3: not monotone: level-1 code 'Europe' has parent 'World' here but '*' "
         "on line 1"),
    ],
    ids=["comma-separated", "ragged", "duplicate", "not-monotone"],
)
def test_hierarchy_file_errors_point_at_the_csv_line(
    tmp_path: Path, hierarchy: str, fragment: str
) -> None:
    directory = _policy(tmp_path / "p", GOOD, hierarchy)
    with pytest.raises(PolicyError) as info:
        load_policies(directory)
    message = str(info.value)
    assert fragment in message and message.startswith(str(directory / "hierarchies"))
    assert f"(hierarchy_file of {directory / 'nurse.yaml'}:18:" in message
    result = CliRunner().invoke(cli, ["policy", "validate", str(directory)])
    assert result.exit_code == 2 and len(_problems(result)) == 1


def test_an_inline_hierarchy_must_be_monotone(tmp_path: Path) -> None:
    body = GOOD.replace(
        "country: {hierarchy_file: hierarchies/country.csv, level: 1}",
        "country: {hierarchy: [[Germany, Europe, '*'], [Peru, Europe, World]], level: 1}",
    )
    with pytest.raises(PolicyError, match=r"nurse.yaml:18: .*not monotone"):
        load_policies(_policy(tmp_path / "p", body))


def test_the_shipped_policies_fit_the_demo_data(tmp_path: Path) -> None:
    backend = DuckDBBackend(str(tmp_path / "demo.duckdb"))
    with paradise.connect(backend) as proc:
        load_demo(proc)
        from paradise.tools.demo_data import load_smart_home

        load_smart_home(proc.backend)
        assert check_against_database(paradise.bundled_policies(), proc.backend) == []
    shipped = tmp_path / "copy"
    shutil.copytree(paradise.bundled_policies(), shipped)
    assert CliRunner().invoke(
        cli, ["policy", "validate", str(shipped), "--db", str(tmp_path / "demo.duckdb")]
    ).exit_code == 0


@pytest.mark.parametrize(
    ("sql_type", "dialect", "kind"),
    [
        ("INTEGER", "duckdb", "numeric"), ("DECIMAL(10,2)", "duckdb", "numeric"),
        ("double precision", "postgres", "numeric"), ("numeric", "postgres", "numeric"),
        ("timestamp without time zone", "postgres", "temporal"), ("date", "postgres", "temporal"),
        ("text", "postgres", "text"), ("character varying(20)", "postgres", "text"),
        ("int", "mysql", "numeric"), ("datetime(6)", "mysql", "temporal"),
        ("varchar(12)", "mysql", "text"), ("longtext", "mysql", "text"),
        ("BOOLEAN", "duckdb", "other"),
    ],
)
def test_column_kinds_across_dialects(sql_type: str, dialect: str, kind: str) -> None:
    assert column_kind(sql_type, dialect) == kind

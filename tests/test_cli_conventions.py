"""Command-line conventions: one exit-code table (enforced here and documented in docs/cli.md),
one line per error, Ctrl-C without a traceback, hints that name flags, environment
variables, ``--output FILE``, ``explain --pretty``, no files created behind the user's back."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import sqlglot
from click.testing import CliRunner, Result

import paradise.errors as errors
from paradise.cli import cli
from paradise.cli.app import EXIT_CODES
from paradise.server.common.config import ConfigError

ROOT = Path(__file__).resolve().parents[1]
EXPECTED_CODES = {
    errors.ParadiseError: 1,
    errors.QueryError: 1,
    errors.QuerySyntaxError: 1,
    errors.UnsupportedQueryError: 1,
    errors.QueryRejected: 1,
    errors.UndefinedTable: 1,
    errors.UndefinedColumn: 1,
    errors.VerificationError: 1,
    errors.PolicyError: 2,
    errors.InputError: 2,
    ConfigError: 2,
    errors.BackendError: 3,
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("conventions") / "demo.duckdb")
    assert CliRunner().invoke(cli, ["demo", "--db", path]).exit_code == 0
    return path


def _run(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
    return CliRunner(env=env).invoke(cli, list(args), input=input)


def _error_lines(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def test_every_error_class_has_the_documented_exit_code() -> None:
    classes = {
        cls for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.ParadiseError)
    }
    assert classes | {ConfigError} == set(EXPECTED_CODES)  # a new class needs a row here
    for cls, code in EXPECTED_CODES.items():
        assert cls.exit_code == code, cls
    assert set(EXIT_CODES) == {0, 1, 2, 3, 130}


def test_the_exit_code_table_is_documented() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    documented = {int(m[1]) for m in re.finditer(r"^\| `(\d+)` \|", text, re.M)}
    assert documented == set(EXIT_CODES)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "130 interrupted" in readme and "0 ok, 1 " in readme


def test_exit_codes_in_practice(db: str, tmp_path: Path) -> None:
    ok = _run("query", "--db", db, "-r", "analyst", "SELECT count(*) AS n FROM adult")
    assert ok.exit_code == 0
    cases = {
        1: _run("query", "--db", db, "-r", "analyst", "SELECT id FROM adult"),
        # verification failed: the auditor's policy refuses an answer that is not 5-anonymous
        **{10: _run("query", "--db", db, "-r", "auditor",
                    "SELECT age, count(*) AS n FROM adult GROUP BY age")},
        2: _run("query", "--db", db, "SELECT 1"),  # usage: --role missing
        20: _run("policy", "validate", str(tmp_path / "missing")),
        3: _run("query", "--db", "postgresql://nobody@127.0.0.1:1/none", "-r", "analyst",
                "SELECT 1"),
    }
    assert cases[1].exit_code == 1 and cases[10].exit_code == 1
    assert cases[2].exit_code == 2 and cases[20].exit_code == 2
    assert cases[3].exit_code == 3
    for result in cases.values():
        assert "Traceback" not in result.output
    for code in (1, 10, 20, 3):
        assert len(_error_lines(cases[code])) == 1, cases[code].stderr


@pytest.mark.timeout(60)
def test_ctrl_c_is_one_line_and_exit_130(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "paradise", "user", "add", "ana", "--role", "analyst"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
        start_new_session=True,  # no terminal: the prompt reads stdin
    )
    assert child.stderr is not None
    try:
        seen = b""
        while b"password" not in seen:  # getpass without a terminal prompts on stderr
            chunk = os.read(child.stderr.fileno(), 100)
            assert chunk, "the prompt never came"
            seen += chunk
        child.send_signal(signal.SIGINT)
        _out, rest = child.communicate(timeout=30)
        err = seen + rest
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 130
    assert err.decode().splitlines()[-1] == "interrupted", err
    assert b"Traceback" not in err


def test_hints_name_flags_not_keyword_arguments(db: str) -> None:
    args = ["anonymize", "--db", db, "-r", "public", "--table", "adult", "--into", "adult_pub"]
    assert _run(*args).exit_code == 0
    again = _run(*args)
    assert again.exit_code == 3
    assert "--replace" in again.stderr and "replace=True" not in again.stderr


def test_environment_variables_name_the_database_and_policies(db: str, tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "only.yaml").write_text(
        "role: only\ntables:\n  adult:\n    columns: {sex: insensitive}\n"
    )
    env = {"PARADISE_DB": db, "PARADISE_POLICIES": str(policies)}
    result = _run("query", "-r", "only", "--format", "csv", "-q",
                  "SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex", env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["sex,n", "Female,10771", "Male,21790"]
    assert _run("policy", "validate", env=env).stdout.startswith("ok  only:")
    # a flag wins over the environment
    other = _run("query", "--db", ":memory:", "-r", "only", "SELECT 1 AS x FROM adult", env=env)
    assert other.exit_code == 1 and "adult" in other.stderr


def test_output_file_gets_the_rows_and_nothing_half_written(db: str, tmp_path: Path) -> None:
    out = tmp_path / "answer.csv"
    sql = "SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex"
    result = _run("query", "--db", db, "-r", "analyst", "--format", "csv", "-o", str(out), sql)
    assert result.exit_code == 0, result.output
    assert out.read_text().splitlines() == ["sex,n", "Female,10771", "Male,21790"]
    assert "Female" not in result.stdout  # the rows went to the file
    as_json = tmp_path / "answer.json"
    _run("query", "--db", db, "-r", "analyst", "--format", "json", "--output", str(as_json), sql)
    assert json.loads(as_json.read_text())["rows"] == [["Female", 10771], ["Male", 21790]]
    refused = tmp_path / "refused.csv"
    bad = _run("query", "--db", db, "-r", "analyst", "-o", str(refused), "SELECT id FROM adult")
    assert bad.exit_code == 1 and not refused.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answer.csv", "answer.json"]
    missing = _run("query", "--db", db, "-r", "analyst", "-o", str(tmp_path / "no" / "x.csv"), sql)
    assert missing.exit_code == 2 and "Traceback" not in missing.output


def test_explain_pretty_is_the_same_statement_over_several_lines(db: str) -> None:
    sql = "SELECT sex, count(*) AS n FROM adult WHERE age > 30 GROUP BY sex"
    flat = _run("explain", "--db", db, "-r", "analyst", sql)
    pretty = _run("explain", "--db", db, "-r", "analyst", "--pretty", sql)
    assert flat.exit_code == pretty.exit_code == 0
    flat_sql = flat.stdout.split("\nsql\n", 1)[1].strip()
    pretty_sql = pretty.stdout.split("\nsql\n", 1)[1].strip()
    assert "\n" not in flat_sql and pretty_sql.count("\n") > 10
    assert max(len(line) for line in pretty_sql.splitlines()) < len(flat_sql) / 3
    assert sqlglot.parse_one(pretty_sql, read="duckdb") == sqlglot.parse_one(flat_sql, read="duckdb")


@pytest.mark.parametrize(
    "command",
    [
        ["query", "-r", "analyst", "SELECT 1"],
        ["explain", "-r", "analyst", "SELECT 1"],
        ["anonymize", "-r", "public", "--table", "adult", "--into", "x"],
        ["suppress", "--table", "t", "--levels", "a", "--value", "v", "--min", "1", "--max", "2"],
        ["policy", "validate", str(ROOT / "policies")],
        ["report", "-r", "public", "--table", "adult", "--out", "reports"],
    ],
    ids=["query", "explain", "anonymize", "suppress", "policy-validate", "report"],
)
def test_a_missing_duckdb_file_is_an_error_not_a_new_file(tmp_path: Path, command: list[str]) -> None:
    typo = tmp_path / "tpyo.duckdb"
    result = _run(*command, "--db", str(typo))
    assert result.exit_code == 3, result.output
    assert f"database file '{typo}' does not exist" in result.stderr
    assert not typo.exists() and list(tmp_path.iterdir()) == []


def test_suppress_speaks_english_by_default_and_leaves_no_file(tmp_path: Path) -> None:
    db = str(tmp_path / "cells.duckdb")
    csv = ROOT / "paradise" / "data" / "examples" / "district_counts.csv"
    assert _run("load", str(csv), "--db", db, "--table", "cells").exit_code == 0
    args = ["suppress", "--db", db, "--table", "cells", "--levels", "district,quarter",
            "--value", "count", "--min", "1", "--max", "3", "--format", "csv"]
    result = _run(*args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "district,quarter,published,lower,upper,reason_code,reason"
    assert "1,1,1-3,1,3,primär,Small values are masked at the lowest level" in lines
    assert "no inference can be drawn in district 3" in result.stdout
    german = _run(*args, "--language", "de", "--labels", "Kreis,Quartier")
    assert german.stdout.splitlines()[0].startswith("Kreis,Quartier,")
    assert "Anonymisiert, damit in Kreis 3" in german.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cells.duckdb"]

INTERRUPTED_INSIDE_A_LIBRARY = """
import os, signal, sys
import click
from paradise.cli import app, main

@app.cli.command("hold")
@click.option("--signal", "signame", default="")
def hold(signame):
    try:
        if signame:
            os.kill(os.getpid(), getattr(signal, signame))  # handled before kill returns
    except KeyboardInterrupt:
        # what DuckDB does when the signal arrives inside a query
        raise RuntimeError("Query interrupted") from None
    raise RuntimeError("a bug, not an interruption")

main(sys.argv[1:])
"""


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_an_interruption_a_library_reports_as_its_own_error_is_one_line_and_130(
    tmp_path: Path, signame: str
) -> None:
    """DuckDB turns the Ctrl-C that arrives inside a query into ``RuntimeError: Query
    interrupted``; the console script still says ``interrupted`` and exits 130."""
    run = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_INSIDE_A_LIBRARY, "hold", "--signal", signame],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 130, run.stderr
    assert run.stderr.splitlines() == ["interrupted"], run.stderr


def test_an_error_without_a_signal_is_not_taken_for_an_interruption(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_INSIDE_A_LIBRARY, "hold"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 1
    assert "a bug, not an interruption" in run.stderr and "interrupted\n" not in run.stderr

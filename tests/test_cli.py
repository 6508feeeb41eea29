"""The command line: exit codes, one-line errors, no tracebacks."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from paradise.anonymize.secret import draw_key
from paradise.cli import cli


def _db(tmp_path: Path) -> str:
    path = str(tmp_path / "demo.duckdb")
    result = CliRunner().invoke(cli, ["demo", "--db", path])
    assert result.exit_code == 0, result.output
    return path


def test_demo_tour(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["demo", "--db", str(tmp_path / "d.duckdb")])
    assert result.exit_code == 0, result.output
    assert "32561 rows" in result.output
    assert "k required" in result.output
    assert "refused (42501)" in result.output
    assert "Traceback" not in result.output


def test_query_formats(tmp_path: Path) -> None:
    db = _db(tmp_path)
    runner = CliRunner()
    sql = "SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex"
    table = runner.invoke(cli, ["query", "--db", db, "--role", "analyst", sql])
    assert table.exit_code == 0 and "Female" in table.output and "k required" in table.output
    csv = runner.invoke(cli, ["query", "--db", db, "-r", "analyst", "--format", "csv", "-q", sql])
    assert csv.output.splitlines()[:3] == ["sex,n", "Female,10771", "Male,21790"]
    js = runner.invoke(cli, ["query", "--db", db, "-r", "analyst", "--format", "json", "-q", sql])
    payload = json.loads(js.output)
    assert payload["rows"] == [["Female", 10771], ["Male", 21790]]
    assert payload["annotations"]["role"] == "analyst"


def test_rejected_query_is_one_line_and_exit_1(tmp_path: Path) -> None:
    db = _db(tmp_path)
    result = CliRunner().invoke(cli, ["query", "--db", db, "-r", "analyst", "SELECT id FROM adult"])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "hidden" in lines[0] and "Hint:" in lines[0]
    assert "Traceback" not in result.output


def test_explain(tmp_path: Path) -> None:
    db = _db(tmp_path)
    result = CliRunner().invoke(
        cli, ["explain", "--db", db, "-r", "analyst", "SELECT age, sex FROM adult"]
    )
    assert result.exit_code == 0
    # the demo built the analyst's release: explain shows the query reading it
    assert "anonymized relation (slicing)" in result.output
    assert "read from release v1" in result.output and "_paradise_rel_analyst" in result.output
    assert "POSITIONAL JOIN" not in result.output


def test_explain_shows_no_key_material(tmp_path: Path) -> None:
    """Seeded noise and PRAM: the statement carries the role's key pads, the CLI shows <secret>."""
    db = _db(tmp_path)
    sql = "SELECT age, fnlwgt, marital_status FROM adult"
    result = CliRunner().invoke(cli, ["explain", "--db", db, "-r", "statistics_office", sql])
    assert result.exit_code == 0, result.output
    shown = result.output.replace("\n", "")  # the console folds long lines
    pads = draw_key(os.environ["PARADISE_SECRET"].encode(), "statistics_office").pads
    assert "<secret>" in shown and "suf-2024" in shown
    assert not any(pad in shown for pad in pads)


def test_policy_validate(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    ok = CliRunner().invoke(cli, ["policy", "validate", str(root / "policies")])
    assert ok.exit_code == 0 and "analyst" in ok.output
    (tmp_path / "bad.yaml").write_text("role: x\ntables:\n  t:\n    columns: {a: nope}\n")
    bad = CliRunner().invoke(cli, ["policy", "validate", str(tmp_path)])
    assert bad.exit_code == 2
    assert f"{tmp_path}/bad.yaml:4: tables.t.columns.a.class" in bad.output
    assert "Traceback" not in bad.output


def test_backend_error_exit_3(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "x.duckdb"
    result = CliRunner().invoke(cli, ["query", "--db", str(missing), "-r", "analyst", "SELECT 1"])
    assert result.exit_code == 3 and "Traceback" not in result.output


def test_load_and_anonymize(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    db = str(tmp_path / "load.duckdb")
    runner = CliRunner()
    loaded = runner.invoke(
        cli, ["load", str(root / "paradise" / "data" / "adult.csv.gz"), "--db", db, "--table", "adult", "--add-id", "id"]
    )
    assert loaded.exit_code == 0, loaded.output
    assert "loaded 32561 rows into adult" in loaded.stdout and "education_num" in loaded.stdout
    again = runner.invoke(cli, ["load", str(root / "paradise" / "data" / "adult.csv.gz"), "--db", db, "--table", "adult"])
    assert again.exit_code == 3 and "Traceback" not in again.output  # exists, no --replace
    made = runner.invoke(cli, ["anonymize", "--db", db, "--role", "public", "--table", "adult", "--into", "adult_public"])
    assert made.exit_code == 0, made.output
    assert "k required 10, achieved" in made.stdout
    import duckdb

    con = duckdb.connect(db, read_only=True)
    smallest = con.sql(
        "SELECT min(n) FROM (SELECT count(*) AS n FROM adult_public WHERE age IS NOT NULL GROUP BY age)"
    ).fetchall()[0][0]
    assert smallest >= 10
    assert "id" not in [c[0] for c in con.sql("DESCRIBE adult_public").fetchall()]
    assert con.sql("SELECT count(*) FROM paradise_annotations WHERE table_name = 'adult_public'").fetchall() == [(1,)]
    con.close()

"""``paradise load`` from the command line: one line per bad file with its exit code, no file
created behind the user's back, and Ctrl-C or SIGTERM mid-load leaving the old table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from paradise.cli import cli
from paradise.tools.demo_data import ADULT_CSV

ROOT = Path(__file__).resolve().parents[1]


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("a,b,c\n1,2,3\n4,5\n", "bad.csv:3: 2 fields where the header (line 1) has 3"),
        ("", "bad.csv: the file is empty"),
        ("a,b\n", "bad.csv:1: the file has a header line and no data rows"),
        ("n\nK\xf6ln\n".encode("latin-1"), "bad.csv:2: bytes that are not valid utf-8"),
    ],
    ids=["ragged", "empty", "header-only", "not-utf-8"],
)
def test_a_bad_file_is_one_line_exit_2_and_no_database_file(
    tmp_path: Path, content: str | bytes, fragment: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    db = tmp_path / "new.duckdb"
    result = CliRunner().invoke(cli, ["load", str(path), "--db", str(db), "--table", "t"])
    assert result.exit_code == 2, result.output
    errors = [line for line in _lines(result.stderr) if line.startswith("error")]
    assert len(errors) == 1 and fragment in errors[0], result.stderr
    assert "Traceback" not in result.output
    if "utf-8" in fragment:
        assert "encoding" in errors[0] and "--encoding" in errors[0]
    assert not db.exists() and not Path(f"{db}.wal").exists()  # no file left behind


def test_encoding_delimiter_no_header_and_lenient_options(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes("1|Köln|x\n2|Malmö\n".encode("latin-1"))
    db = str(tmp_path / "o.duckdb")
    args = ["load", str(path), "--db", db, "--table", "t", "--encoding", "latin-1",
            "--delimiter", "|", "--no-header"]
    strict = CliRunner().invoke(cli, args)
    assert strict.exit_code == 2 and "latin.csv:2: 2 fields where the first record" in strict.stderr
    lenient = CliRunner().invoke(cli, [*args, "--lenient"])
    assert lenient.exit_code == 0, lenient.output
    con = duckdb.connect(db, read_only=True)
    assert con.sql("SELECT * FROM t ORDER BY 1").fetchall() == [(1, "Köln", "x"), (2, "Malmö", None)]
    con.close()


def test_phases_are_reported_from_the_start(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["load", str(ADULT_CSV), "--db", str(tmp_path / "a.duckdb"), "--table", "adult"]
    )
    assert result.exit_code == 0, result.output
    phases = [line for line in _lines(result.stderr) if line.startswith("load adult:")]
    assert phases == [f"load adult: {p}" for p in
                      ("checking rows", "inferring types", "loading rows", "switching tables")]


def test_existing_table_hint_names_the_flag(tmp_path: Path) -> None:
    db = str(tmp_path / "a.duckdb")
    args = ["load", str(ROOT / "paradise" / "data" / "examples" / "district_counts.csv"),
            "--db", db, "--table", "cells"]
    assert CliRunner().invoke(cli, args).exit_code == 0
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 3
    assert "--replace" in again.stderr and "replace=True" not in again.stderr


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupted_load_exits_130_with_one_line_and_keeps_the_old_table(
    tmp_path: Path, sig: signal.Signals
) -> None:
    db = tmp_path / "i.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT 42 AS v")
    con.close()
    big = tmp_path / "big.csv"
    big.write_text("v\n" + "".join(f"{i}\n" for i in range(20_000)))
    child = subprocess.Popen(
        [sys.executable, "-m", "paradise", "load", str(big), "--db", str(db), "--table", "t",
         "--replace", "--batch-rows", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.stderr is not None
    try:
        for line in child.stderr:
            if "loading rows" in line:
                break
        child.send_signal(sig)
        _out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 130, err
    assert [line for line in _lines(err) if not line.startswith("load t:")] == ["interrupted"]
    con = duckdb.connect(str(db), read_only=True)
    assert con.sql("SELECT * FROM t").fetchall() == [(42,)]
    assert [r[0] for r in con.sql("SHOW TABLES").fetchall()] == ["t"]
    con.close()


def test_the_bar_shows_no_unknown_total_while_types_are_inferred() -> None:
    from rich.progress import Progress

    from paradise.cli.data import _RowsColumn

    column = _RowsColumn()
    with Progress(column, disable=True) as bar:
        task = bar.add_task("adult: inferring types", total=None)
        assert str(column.render(bar.tasks[task])) == ""  # was "0/?"
        bar.update(task, total=32561, completed=10_000)
        assert str(column.render(bar.tasks[task])) == "10000/32561"

"""``paradise release list|build|refresh|drop`` and ``paradise anonymize --into`` on a DuckDB file."""

from __future__ import annotations

from pathlib import Path

import duckdb
from click.testing import CliRunner

from paradise.cli import cli


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def _versions(path: str, role: str) -> list[int]:
    con = duckdb.connect(path, read_only=True)
    try:
        rows = con.execute(
            "SELECT version FROM _paradise_releases WHERE role = ? AND status = 'ok' "
            "ORDER BY version",
            [role],
        ).fetchall()
    finally:
        con.close()
    return [r[0] for r in rows]


def test_build_refresh_list_drop(tmp_path: Path) -> None:
    db = str(tmp_path / "r.duckdb")
    code, _ = _run("load", "paradise/data/adult.csv.gz", "--db", db, "--table", "adult",
                   "--add-id", "id")  # fmt: skip
    assert code == 0
    code, out = _run("release", "build", "--db", db, "--role", "public")
    assert code == 0 and "public/adult: built v1, 32561 rows, k 10" in out
    assert _versions(db, "public") == [1]
    code, out = _run("release", "refresh", "--db", db, "-r", "public")
    assert code == 0 and "up to date: v1" in out
    # live tables have nothing to build unless named
    code, out = _run("release", "build", "--db", db, "-r", "auditor")
    assert code == 0 and "live (recomputed per query)" in out
    con = duckdb.connect(db)
    con.execute("UPDATE adult SET age = age + 1 WHERE id = 1")
    con.close()
    code, out = _run("release", "list", "--db", db, "-r", "public")
    assert code == 0 and "stale" in out
    code, out = _run("release", "refresh", "--db", db, "-r", "public")
    assert code == 0 and "built v2" in out
    code, out = _run("release", "list", "--db", db, "-r", "public", "-t", "adult")
    assert "v2" in out and "yes" in out
    code, out = _run("release", "drop", "--db", db, "-r", "public")
    assert code == 0 and "dropped 2 table(s)" in out  # the current and the previous version
    assert _versions(db, "public") == []
    code, out = _run("release", "list", "--db", db, "-r", "nobody")
    assert code == 1 and "unknown role" in out


def test_anonymize_exports_the_release(tmp_path: Path) -> None:
    db = str(tmp_path / "a.duckdb")
    assert _run("load", "paradise/data/adult.csv.gz", "--db", db, "--table", "adult",
                "--add-id", "id")[0] == 0  # fmt: skip
    code, out = _run("anonymize", "--db", db, "-r", "public", "--table", "adult",
                     "--into", "adult_public")  # fmt: skip
    assert code == 0 and "copied from release v1" in out
    con = duckdb.connect(db, read_only=True)
    try:
        columns = [r[0] for r in con.execute("DESCRIBE adult_public").fetchall()]
        (release,) = con.execute(
            "SELECT release_table FROM _paradise_releases WHERE role = 'public'"
        ).fetchone()  # type: ignore[misc]
        same = con.execute(
            f"SELECT count(*) FROM (SELECT {', '.join(columns)} FROM {release} "
            f"EXCEPT ALL SELECT * FROM adult_public)"
        ).fetchone()
    finally:
        con.close()
    assert "_paradise_c" not in columns and "id" not in columns
    assert same == (0,)  # the export is the release, row for row
    code, out = _run("anonymize", "--db", db, "-r", "public", "--table", "adult",
                     "--into", "_paradise_x")  # fmt: skip
    assert code == 1 and "cannot anonymize into" in out

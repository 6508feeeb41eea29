"""Proxy workers share releases through the database: one build, the same answers everywhere."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import psycopg

from paradise.backends.duckdb import DuckDBBackend
from paradise.load import load_file
from paradise.server.common.workers import PID_BITS

REPO = Path(__file__).resolve().parents[2]


def test_workers_on_a_shared_duckdb_file_read_one_release(tmp_path: Path) -> None:
    db = tmp_path / "data.duckdb"
    backend = DuckDBBackend(str(db))
    load_file(backend, REPO / "paradise" / "data" / "adult.csv.gz", "adult", add_id="id")
    backend.close()
    config = tmp_path / "serve.toml"
    added = subprocess.run(
        [sys.executable, "-m", "paradise", "user", "add", "pub", "--role", "public",
         "--password", "pw", "--auth", "scram-sha-256", "--config", str(config)],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    child = subprocess.Popen(
        [sys.executable, "-m", "paradise", "serve", "--config", str(config), "--backend",
         str(db), "--workers", "2", "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    try:
        assert child.stderr is not None
        line = child.stderr.readline()
        match = re.search(r"listening on 127\.0\.0\.1:(\d+).*2 workers", line)
        assert match, line
        dsn = f"host=127.0.0.1 port={match[1]} user=pub password=pw dbname=x sslmode=disable"
        # sex and race are sliced against each other: live answers would differ
        sql = "SELECT sex, race, count(*) AS n FROM adult GROUP BY sex, race ORDER BY sex, race"
        answers, workers = set(), set()
        for _ in range(12):
            with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
                workers.add(conn.info.backend_pid >> PID_BITS)
                answers.add(tuple(conn.execute(sql).fetchall()))
        assert workers == {0, 1}
        assert len(answers) == 1
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
    con = duckdb.connect(str(db), read_only=True)
    try:
        versions = con.execute(
            "SELECT count(*) FROM _paradise_releases WHERE role = 'public' AND status = 'ok'"
        ).fetchone()
    finally:
        con.close()
    assert versions == (1,)

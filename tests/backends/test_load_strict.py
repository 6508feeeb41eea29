"""Strict and atomic loading on every backend: bad files are refused at their line and leave
nothing behind; an interrupted or killed load leaves the old table or nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from sqlglot import exp

from paradise.backends.base import Backend
from paradise.errors import InputError
from paradise.load import PHASES, load_file
from tests.backends.conftest import Database, table_count

pytestmark = pytest.mark.timeout(180)


def _tables(backend: Backend) -> set[str]:
    return {t.lower() for t in backend.catalog()}


def _leftovers(backend: Backend) -> set[str]:
    return {t for t in _tables(backend) if "paradise" in t}


def _write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


BAD_FILES = [
    pytest.param("a,b,c\n1,2,3\n4,5\n6,7,8\n", "bad.csv:3: 2 fields where the header (line 1) has 3",
                 id="short-row"),
    pytest.param("a,b,c\n1,2,3\n4,5,6,7\n", "bad.csv:3: 4 fields where the header (line 1) has 3",
                 id="long-row"),
    pytest.param('a,b\n"x\ny",1\n2\n', "bad.csv:4: 1 field where the header (line 1) has 2",
                 id="line-after-quoted-newline"),
    pytest.param("", "bad.csv: the file is empty", id="empty"),
    pytest.param("a,b,c\n", "bad.csv:1: the file has a header line and no data rows",
                 id="header-only"),
    pytest.param("name,city\nAna,Rostock\nJos\xe9,K\xf6ln\n".encode("latin-1"),
                 "bad.csv:3: bytes that are not valid utf-8", id="latin-1-as-utf-8"),
]


@pytest.mark.parametrize(("content", "message"), BAD_FILES)
def test_bad_csv_is_refused_at_its_line_and_nothing_is_created(
    backend: Backend, tmp_path: Path, content: str | bytes, message: str
) -> None:
    before = _tables(backend)
    with pytest.raises(InputError) as info:
        load_file(backend, _write(tmp_path / "bad.csv", content), "bad_csv", replace=True)
    text = str(info.value)
    assert message in text and "\n" not in text and info.value.exit_code == 2
    assert "Rostock" not in text and "Ana" not in text  # no data in the message
    if "encoding" in message or "utf-8" in message:
        assert "--encoding" in text and "encoding" in text
    assert _tables(backend) == before  # no table, no staging table


def test_lenient_pads_short_rows_and_accepts_a_header_only_file(
    backend: Backend, tmp_path: Path
) -> None:
    ragged = _write(tmp_path / "ragged.csv", "a,b,c\n1,2,3\n4,5\n6,7,8\n")
    report = load_file(backend, ragged, "ragged", strict=False, replace=True)
    assert report.rows == 3
    cols = [exp.column(exp.to_identifier(c, quoted=True)) for c in "abc"]
    query = exp.select(*cols).from_(exp.Table(this=exp.to_identifier("ragged", quoted=True)))
    rows = backend.execute(query.order_by(cols[0].copy()).sql(backend.dialect)).rows
    assert [tuple(int(v) if v is not None else None for v in r) for r in rows] == [
        (1, 2, 3), (4, 5, None), (6, 7, 8)
    ]
    header_only = _write(tmp_path / "header.csv", "x,y\n")
    empty = load_file(backend, header_only, "header_only", strict=False, replace=True)
    assert empty.rows == 0 and list(empty.columns) == ["x", "y"]
    assert table_count(backend, "header_only") == 0


def test_delimiter_header_and_encoding(backend: Backend, tmp_path: Path) -> None:
    text = "Name;Stadt;Alter\nJosé;Köln;41\nÅsa;Malmö;35\nZoë;Graz;29\n"
    path = _write(tmp_path / "people.csv", text.encode("latin-1"))
    report = load_file(backend, path, "people", encoding="latin-1", replace=True)  # ';' detected
    expected = pd.read_csv(path, sep=";", encoding="latin-1")
    assert report.rows == len(expected) and list(report.columns) == ["name", "stadt", "alter"]
    query = exp.select("*").from_(exp.Table(this=exp.to_identifier("people", quoted=True)))
    got = sorted(backend.execute(query.sql(backend.dialect)).rows)
    assert got == sorted(
        (r.Name, r.Stadt, int(r.Alter)) for r in expected.itertuples(index=False)
    )
    piped = _write(tmp_path / "piped.txt", "1|a b|x\n2|c, d|y\n")
    report = load_file(backend, piped, "piped", delimiter="|", header=False, replace=True)
    assert report.rows == 2 and len(report.columns) == 3  # no header: both lines are data
    query = exp.select(exp.column(list(report.columns)[1], quoted=True)).from_(
        exp.Table(this=exp.to_identifier("piped", quoted=True))
    )
    assert sorted(r[0] for r in backend.execute(query.sql(backend.dialect)).rows) == [
        "a b", "c, d"
    ]


def test_phases_come_in_order_before_any_row(backend: Backend, tmp_path: Path) -> None:
    events: list[object] = []
    path = _write(tmp_path / "p.csv", "a,b\n" + "".join(f"{i},{i * 2}\n" for i in range(250)))
    load_file(backend, path, "phased", replace=True, batch_rows=100,
              phase=events.append, progress=lambda done, total: events.append((done, total)))
    names = [e for e in events if isinstance(e, str)]
    assert names == list(PHASES)
    first_rows = events.index((0, 250))
    assert events[:first_rows] == list(PHASES[:3])  # phases are shown before any row moves
    assert events[-2:] == [(250, 250), PHASES[3]]


def test_other_sessions_see_the_old_table_until_the_switch(
    database: Database, backend: Backend, tmp_path: Path
) -> None:
    old = _write(tmp_path / "old.csv", "v\n1\n2\n3\n")
    load_file(backend, old, "swapped", replace=True)
    new = _write(tmp_path / "new.csv", "v\n" + "".join(f"{i}\n" for i in range(1000)))
    if database.kind == "duckdb":  # one process: another connection to the same database
        other_con = backend.connection.cursor()  # type: ignore[attr-defined]

        def count() -> int:
            return int(other_con.execute('SELECT count(*) FROM "swapped"').fetchone()[0])

        def tables() -> set[str]:
            rows = other_con.execute(
                "SELECT table_name FROM information_schema.tables"
            ).fetchall()
            return {r[0].lower() for r in rows}
    else:
        other = database.connect()

        def count() -> int:
            return table_count(other, "swapped")

        def tables() -> set[str]:
            return _tables(other)

    seen: list[tuple[int, bool]] = []

    def watch(done: int, total: int | None) -> None:
        if done:
            seen.append((count(), any("paradise" in t for t in tables())))

    load_file(backend, new, "swapped", replace=True, batch_rows=100, progress=watch)
    assert len(seen) == 10
    assert all(n == 3 for n, _ in seen)  # the old table, whole, during the load
    # DuckDB, PostgreSQL: an uncommitted staging table; MariaDB: a session-private temporary one
    assert not any(staging for _, staging in seen)
    assert count() == 1000
    if database.kind != "duckdb":
        other.close()


_KILLED_LOAD = textwrap.dedent(
    """
    import sys, time
    from paradise.backends import connect_backend
    from paradise.load import load_file

    backend = connect_backend(sys.argv[1])

    def stall(done, total):
        if done:
            print("loading", flush=True)
            time.sleep(600)

    load_file(backend, sys.argv[2], sys.argv[3], replace=True, batch_rows=50, progress=stall)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize("existing", [True, False], ids=["replace", "new"])
def test_a_killed_load_leaves_the_old_table_or_nothing(
    database: Database, tmp_path: Path, sig: signal.Signals, existing: bool
) -> None:
    if database.kind == "duckdb":  # a file of its own: the test session holds the shared one
        url = f"duckdb:///{tmp_path / 'killed.duckdb'}"
    else:
        url = database.url
    from paradise.backends import connect_backend

    name = f"killed_{'r' if existing else 'n'}_{sig.name.lower()}"
    setup = connect_backend(url)
    setup.run(exp.Drop(kind="TABLE", tables=[exp.Table(this=exp.to_identifier(name, quoted=True))],
                       exists=True).sql(setup.dialect))
    if existing:
        load_file(setup, _write(tmp_path / "old.csv", "v\n1\n2\n3\n"), name)
    setup.close()
    new = _write(tmp_path / "new.csv", "v\n" + "".join(f"{i}\n" for i in range(5000)))
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_LOAD, url, str(new), name],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=Path(__file__).parents[2], env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "loading", child.stderr.read() if child.stderr else ""
        child.send_signal(sig)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    assert child.returncode == -sig
    check = connect_backend(url)
    try:
        tables = _tables(check)
        if existing:
            assert table_count(check, name) == 3  # the old table, untouched
        else:
            assert name not in tables  # nothing
        assert not [t for t in tables if t.startswith(name) and t != name]  # no staging table
    finally:
        check.close()

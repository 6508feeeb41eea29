"""Release benchmark: the realistic query corpus raw vs live vs released, and build times.

For every shipped role, on Adult (DuckDB, PostgreSQL, MariaDB) and on Adult replicated to
1M rows (DuckDB), each query of ``tests/fixtures/security/realistic.sql`` that the role
answers runs

* **raw**: the query itself, straight in the database (no paradise);
* **live**: through paradise with every table recomputed per query (``release.mode: live``);
* **released**: through paradise reading the role's release, with the default
  ``refresh: on_change`` (the source fingerprint is compared before every answer), and
  with ``check_every: 10s`` (compared at most every 10 s).

Roles whose tables default to ``live`` (no randomizing operator) are released here too
(``mode: materialized``) to show what a release would cost them; the assistant's tables
use preferences, which are served live only. Printed per role: queries answered, the
median over the corpus of each query's median latency (ms) and of its ratio to raw, and
the build time of the release against a plain ``CREATE TABLE AS SELECT *`` of the same
table in the same run.

Usage::

    python benchmarks/releases.py                              # DuckDB: Adult and 1M
    python benchmarks/releases.py --backend postgres --rows    # Adult only
    python benchmarks/releases.py --builds-only --rows 10000000 --roles public analyst
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlglot
from scratch import ScratchDatabase
from sqlglot import exp

import paradise
from paradise.backends.base import Backend
from paradise.backends.duckdb import DuckDBBackend
from paradise.errors import ParadiseError
from paradise.load import load_file
from paradise.policy.release import ReleasePolicy
from paradise.tools.demo_data import load_smart_home

REPO = Path(__file__).resolve().parents[1]
ADULT = Path("/work/shared/data/adult.csv")
if not ADULT.is_file():
    ADULT = REPO / "paradise" / "data" / "adult.csv.gz"
CORPUS = REPO / "tests" / "fixtures" / "security" / "realistic.sql"
ROLES = ("analyst", "assistant", "auditor", "public", "statistics_office", "tables")
SECRET = "benchmark-pseudonym-secret-0123456789abcdef"


class FileScratch:
    """A DuckDB database file, deleted again by ``close()``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.close_files()
        self.backend = DuckDBBackend(str(path))

    def close_files(self) -> None:
        for extra in ("", ".wal"):
            Path(f"{self.path}{extra}").unlink(missing_ok=True)

    def close(self) -> None:
        self.backend.close()
        self.close_files()


def corpus() -> list[tuple[str, str, str]]:
    """(title, table family, SQL) of every corpus query (``adult`` or ``smart_home``)."""
    import sys

    sys.path.insert(0, str(REPO))
    from tests.helpers import sql_statements

    out = []
    for headers, sql in sql_statements(CORPUS):
        family = "smart_home" if "sensor_readings" in sql or "subjects" in sql else "adult"
        out.append((headers.get("title", sql[:40]), family, sql.rstrip(";")))
    return out


def _table(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


def replicate(backend: Backend, rows: int) -> None:
    """Replace ``adult`` by Adult repeated to ``rows`` rows, ``id`` renumbered (DuckDB)."""
    con = backend.connection  # type: ignore[attr-defined]
    con.execute("ALTER TABLE adult RENAME TO adult_base")
    columns = [r[0] for r in con.execute("DESCRIBE adult_base").fetchall() if r[0] != "id"]
    select = ", ".join(f'a."{c}"' for c in columns)
    con.execute(
        f"CREATE TABLE adult AS SELECT row_number() OVER () AS id, {select} "
        f"FROM adult_base AS a CROSS JOIN range({-(-rows // 32561)}) AS r LIMIT {rows}"
    )
    con.execute("DROP TABLE adult_base")


def with_release(policies: dict[str, Any], rule: ReleasePolicy) -> dict[str, Any]:
    """``policies`` with ``rule`` as every table's ``release:`` (preference tables stay)."""
    out = {}
    for role, policy in policies.items():
        tables = {
            name: table
            if table.preferences is not None
            else table.model_copy(update={"release": rule})
            for name, table in policy.tables.items()
        }
        out[role] = policy.model_copy(update={"tables": tables})
    return out


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return (time.perf_counter() - start) * 1000


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def plain_copy_ms(backend: Backend, reps: int = 3) -> float:
    """``CREATE TABLE AS SELECT * FROM adult`` (dropped again), median of ``reps``."""
    copy = _table("_bench_copy")
    create = exp.Create(
        kind="TABLE", this=copy, expression=exp.select("*").from_(_table("adult"))
    ).sql(backend.dialect)
    drop = exp.Drop(kind="TABLE", tables=[copy.copy()], exists=True).sql(backend.dialect)
    times = []
    for _ in range(reps):
        backend.run(drop)
        times.append(timed(backend.run, create))
    backend.run(drop)
    return statistics.median(times)


def bench_dataset(
    backend: Backend, label: str, roles: list[str], args: argparse.Namespace
) -> list[dict[str, Any]]:
    bundled = paradise.load_policies(paradise.bundled_policies())
    strict = with_release(bundled, ReleasePolicy(mode="materialized"))
    checked = with_release(bundled, ReleasePolicy(mode="materialized", check_every="10s"))
    live = with_release(bundled, ReleasePolicy(mode="live", acknowledge_averaging=True))
    procs = {
        name: paradise.connect(
            backend, policies=policies, read_dialect="postgres", pseudonym_secret=SECRET
        )
        for name, policies in (("strict", strict), ("checked", checked), ("live", live))
    }
    copy_ms = plain_copy_ms(backend)
    queries = corpus()
    rows = []
    for role in roles:
        family = "smart_home" if role == "assistant" else "adult"
        row: dict[str, Any] = {"dataset": label, "role": role, "copy_ms": copy_ms}
        default = bundled[role].tables[next(iter(bundled[role].tables))].release_mode
        row["default"] = default
        released = role != "assistant"
        if released and not args.no_builds:
            try:
                builds = [
                    timed(procs["strict"].release, "adult", role, rebuild=True)
                    for _ in range(args.build_reps)
                ]
            except ParadiseError as exc:  # e.g. refuse: the whole table is not k-anonymous
                row["note"] = f"no release: {type(exc).__name__}"
                released = False
            else:
                row["build_ms"] = statistics.median(builds)
                procs["checked"].release("adult", role)  # same release, another processor
        if args.builds_only:
            rows.append(row)
            print(format_row(row), flush=True)
            continue
        raw_ms, live_ms, strict_ms, checked_ms = [], [], [], []
        ratios: dict[str, list[float]] = {"live": [], "strict": [], "checked": []}
        answered = 0
        live_budget = time.monotonic() + args.live_budget
        for _title, fam, sql in queries:
            if fam != family:
                continue
            try:
                raw_sql = sqlglot.transpile(sql, read="postgres", write=backend.dialect)[0]
                backend.execute(raw_sql)
                procs["live" if not released else "strict"].query(sql, role=role)
            except (ParadiseError, sqlglot.errors.SqlglotError):
                continue
            answered += 1
            r, s, c = [], [], []
            for _ in range(args.reps):
                r.append(timed(backend.execute, raw_sql))
                if released:
                    s.append(timed(procs["strict"].query, sql, role=role))
                    c.append(timed(procs["checked"].query, sql, role=role))
            raw = statistics.median(r)
            raw_ms.append(raw)
            if released:
                strict_ms.append(statistics.median(s))
                checked_ms.append(statistics.median(c))
                ratios["strict"].append(strict_ms[-1] / raw)
                ratios["checked"].append(checked_ms[-1] / raw)
            if time.monotonic() < live_budget:
                try:
                    lv = [
                        timed(procs["live"].query, sql, role=role)
                        for _ in range(args.live_reps)
                    ]
                except ParadiseError:
                    lv = []
                if lv:
                    live_ms.append(statistics.median(lv))
                    ratios["live"].append(live_ms[-1] / raw)
        row.update(
            answered=answered,
            raw=median(raw_ms),
            live=median(live_ms),
            live_n=len(live_ms),
            strict=median(strict_ms),
            checked=median(checked_ms),
            live_x=median(ratios["live"]),
            strict_x=median(ratios["strict"]),
            checked_x=median(ratios["checked"]),
        )
        rows.append(row)
        print(format_row(row), flush=True)
    for proc in procs.values():
        proc.releases.forget()
    return rows


def _fmt(value: float | None, digits: int = 1, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


HEADER = (
    f"{'dataset':<16} {'role':<18} {'mode':<6} {'n':>3} {'raw ms':>8} {'live ms':>9} "
    f"{'live x':>7} {'rel ms':>8} {'rel x':>6} {'rel10s x':>8} {'build ms':>9} "
    f"{'copy ms':>8} {'build/copy':>10}"
)


def format_row(row: dict[str, Any]) -> str:
    build, copy = row.get("build_ms"), row.get("copy_ms")
    live = _fmt(row.get("live"))
    if row.get("live_n") is not None and row.get("answered") and row["live_n"] < row["answered"]:
        live += f"({row['live_n']})"
    return (
        f"{row['dataset']:<16} {row['role']:<18} {row['default'][:6]:<6} "
        f"{row.get('answered', '-'):>3} {_fmt(row.get('raw'), 2):>8} {live:>9} "
        f"{_fmt(row.get('live_x'), 1, 'x'):>7} {_fmt(row.get('strict'), 2):>8} "
        f"{_fmt(row.get('strict_x'), 1, 'x'):>6} {_fmt(row.get('checked_x'), 1, 'x'):>8} "
        f"{_fmt(build, 0):>9} {_fmt(copy, 0):>8} "
        f"{_fmt(build / copy if build and copy else None, 1, 'x'):>10}"
        + (f"  {row['note']}" if row.get("note") else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--backend", choices=("duckdb", "postgres", "mysql"), default="duckdb")
    parser.add_argument(
        "--rows", type=int, nargs="*", default=None,
        help="replicated Adult sizes (DuckDB; default 1000000; pass none for Adult only)",
    )  # fmt: skip
    parser.add_argument("--roles", nargs="*", default=list(ROLES))
    parser.add_argument("--reps", type=int, default=5, help="runs per query (raw, released)")
    parser.add_argument("--live-reps", type=int, default=1, help="runs per query (live)")
    parser.add_argument(
        "--live-budget", type=float, default=120.0,
        help="seconds of live queries per role and dataset (the rest are not measured live)",
    )  # fmt: skip
    parser.add_argument("--build-reps", type=int, default=1)
    parser.add_argument("--builds-only", action="store_true", help="only build times")
    parser.add_argument("--no-builds", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-adult", action="store_true", help="skip the 32,561-row Adult")
    parser.add_argument(
        "--duckdb-file", default=None,
        help="a DuckDB file to work in (created and deleted; for sizes beyond memory)",
    )  # fmt: skip
    args = parser.parse_args()
    sizes = args.rows if args.rows is not None else ([1_000_000] if args.backend == "duckdb" else [])
    datasets = ([] if args.no_adult else [None]) + list(sizes)
    print(HEADER, flush=True)
    for size in datasets:
        scratch: Any = ScratchDatabase(args.backend, "paradise_bench_rel")
        if args.duckdb_file and args.backend == "duckdb":
            scratch.close()
            scratch = FileScratch(Path(args.duckdb_file))
        try:
            backend = scratch.backend
            load_file(backend, ADULT, "adult", add_id="id", replace=True)
            roles = list(args.roles)
            if size is not None:
                replicate(backend, size)
                roles = [r for r in roles if r != "assistant"]
            elif "assistant" in roles:
                load_smart_home(backend)
            label = f"{args.backend} {'adult' if size is None else f'{size // 1000}k'}"
            bench_dataset(backend, label, roles, args)
        finally:
            scratch.close()


if __name__ == "__main__":
    main()

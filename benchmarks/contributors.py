"""Cost of counting distinct contributors (issue 13): the aggregate queries of the realistic
corpus through paradise against the same SQL run raw in DuckDB, in the same run; and the
share of verification in a large row-level answer.

Part 1 prints, per aggregate query of ``tests/fixtures/security/realistic.sql`` (under the
role its header names), the median raw and paradise latency and their ratio, on Adult
(32,561 rows) and on Adult replicated to ``--rows`` rows (distinct ids, so every copy is a
contributor of its own); then the median ratio (goal: <= 1.5).

Part 2 runs a row-level answer of ``--verify-rows`` rows (a replicated Adult under the
``auditor`` role: k = 5 over age, sex, race, education) and prints execution and
verification time from the answer's own timings (goal: verification <= 0.5 x execution;
the class figures are computed by the database with the answer).

Usage: ``python benchmarks/contributors.py [--reps 3] [--rows 1000000] [--verify-rows 5000000]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import sqlglot
from sqlglot import exp

import paradise
from paradise.tools.demo_data import load_demo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers import sql_statements  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "security" / "realistic.sql"


def _median_ms(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _aggregate_queries() -> list[tuple[str, str, str]]:
    """(title, role, sql) of the corpus queries whose outermost SELECT aggregates."""
    out = []
    for headers, sql in sql_statements(CORPUS):
        tree = sqlglot.parse_one(sql, read="duckdb")
        select = tree if isinstance(tree, exp.Select) else None
        if select is None or not (select.args.get("group") or any(
            isinstance(e.unalias(), exp.AggFunc) for e in select.expressions
        )):
            continue
        out.append((headers.get("title", sql[:40]), headers.get("role", "analyst"), sql))
    return out


def _replicate(proc: paradise.Processor, rows: int) -> None:
    con = proc.backend.connection
    base = con.sql("SELECT count(*) FROM adult").fetchall()[0][0]
    copies = max(1, -(-rows // base))
    con.execute("CREATE OR REPLACE TABLE adult_src AS SELECT * FROM adult")
    con.execute(
        "CREATE OR REPLACE TABLE adult AS SELECT * REPLACE (id + r.range * 100000000 AS id) "
        f"FROM adult_src, range({copies}) AS r LIMIT {rows}"
    )
    con.execute("DROP TABLE adult_src")
    proc.refresh()


def _part1(proc: paradise.Processor, label: str, reps: int) -> list[float]:
    con = proc.backend.connection
    print(f"\n{label}")
    print(f"{'query':<52} {'role':<18} {'raw ms':>8} {'paradise ms':>12} {'ratio':>6}")
    ratios = []
    for title, role, sql in _aggregate_queries():
        if role not in proc.roles or not sql.lower().count(" adult"):
            continue  # roles of the test suite's own world, tables of other demos
        try:
            proc.query(sql, role=role)  # warm the plan cache, check it is served
        except paradise.ParadiseError as exc:
            print(f"{title[:52]:<52} {role:<18} refused: {type(exc).__name__}")
            continue
        raw = _median_ms(lambda sql=sql: con.sql(sql).fetchall(), reps)
        ours = _median_ms(lambda sql=sql, role=role: proc.query(sql, role=role), reps)
        ratios.append(ours / raw)
        print(f"{title[:52]:<52} {role:<18} {raw:>8.1f} {ours:>12.1f} {ours / raw:>6.2f}")
    print(f"median ratio over {len(ratios)} queries: {statistics.median(ratios):.2f}")
    return ratios


def _part2(rows: int) -> None:
    proc = paradise.connect(":memory:")
    load_demo(proc)
    _replicate(proc, rows)
    sql = "SELECT age, sex, race, education, hours_per_week FROM adult"
    start = time.perf_counter()
    result = proc.query(sql, role="auditor")
    total = (time.perf_counter() - start) * 1000
    timings = result.annotations.timings_ms
    execute, verify = timings.get("execute", 0.0), timings.get("verify", 0.0)
    print(f"\nrow-level answer, {rows:,} stored rows, {len(result.rows):,} released (auditor)")
    print(f"execute {execute:.0f} ms, verify {verify:.0f} ms, "
          f"verify/execute {verify / execute:.2f}, total {total:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--verify-rows", type=int, default=5_000_000)
    args = parser.parse_args()
    proc = paradise.connect(":memory:")
    load_demo(proc)
    _part1(proc, "Adult (32,561 rows), DuckDB", args.reps)
    _replicate(proc, args.rows)
    _part1(proc, f"Adult replicated to {args.rows:,} rows, DuckDB", args.reps)
    _part2(args.verify_rows)


if __name__ == "__main__":
    main()

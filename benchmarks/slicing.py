"""Slicing benchmark: the seed paper's experiment (seed 004 §5.1, Table 4) on DuckDB.

Adult's six columns of seed 004 Tables 1–3 are sliced with the vertical groups of
§5.1 ([age, workclass] [occupation, relationship] [race] [sex]) into 1 … 500
buckets, with both strategies. Each run materializes the sliced relation with
``CREATE TABLE … AS`` and is compared with a plain copy of the same table
(``CREATE TABLE … AS SELECT *``) measured in the same run. The paper's totals on
MySQL (Table 4: hSplit + vSplit + permutate/join + union) are printed beside.

Usage:
    python benchmarks/slicing.py                 # Adult, both strategies
    python benchmarks/slicing.py --rows 1000000 10000000   # + Adult replicated
"""

from __future__ import annotations

import argparse
import statistics
import time

import duckdb
from sqlglot import exp

from paradise.anonymize.base import OperatorContext, column
from paradise.anonymize.slicing import Slicing, SlicingParams
from paradise.load.names import normalize_name
from paradise.tools.demo_data import ADULT_CSV

BUCKETS = (1, 2, 5, 10, 25, 50, 75, 100, 200, 300, 400, 500)
GROUPS = (("age", "workclass"), ("occupation", "relationship"), ("race",), ("sex",))
COLUMNS = tuple(c for g in GROUPS for c in g)
# seed 004, Table 4 (MySQL/InnoDB, ms): hSplit + vSplit + vJoin/Permutate + Union
PAPER_MS = {
    1: 51 + 255 + 388846 + 68,
    2: 89 + 252 + 189844 + 155,
    5: 126 + 253 + 78324 + 142,
    10: 177 + 278 + 39503 + 143,
    25: 345 + 389 + 15664 + 143,
    50: 652 + 531 + 8075 + 156,
    75: 931 + 663 + 5315 + 145,
    100: 1267 + 875 + 4297 + 172,
    200: 2518 + 1415 + 2422 + 181,
    300: 3938 + 2130 + 1896 + 171,
    400: 5315 + 2955 + 1687 + 202,
    500: 6626 + 3664 + 1615 + 204,
}


def slicing_sql(table: str, buckets: int, strategy: str) -> str:
    relation = exp.select(*(column(c) for c in COLUMNS)).from_(
        exp.Table(this=exp.to_identifier(table, quoted=True))
    )
    params = SlicingParams(groups=GROUPS, buckets=buckets, strategy=strategy)
    ctx = OperatorContext(table=table, dialect="duckdb", columns=COLUMNS)
    return Slicing().apply(relation, params, ctx).sql("duckdb")


def timed(con: duckdb.DuckDBPyConnection, sql: str, reps: int) -> float:
    """Median milliseconds of ``CREATE OR REPLACE TABLE … AS <sql>``."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        con.execute(f"CREATE OR REPLACE TABLE bench_out AS {sql}")
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def load(con: duckdb.DuckDBPyConnection, rows: int | None) -> str:
    cols = ", ".join(
        f'"{c}" AS "{normalize_name(c)}"'
        for c in ("age", "workclass", "occupation", "relationship", "race", "sex")
    )
    con.execute(
        f"CREATE OR REPLACE TABLE adult6 AS SELECT {cols} FROM read_csv('{ADULT_CSV}', header=true)"
    )
    if rows is None:
        return "adult6"
    n = con.execute("SELECT count(*) FROM adult6").fetchone()[0]  # type: ignore[index]
    copies = -(-rows // n)
    con.execute(
        f"CREATE OR REPLACE TABLE adult_big AS SELECT a.* FROM adult6 a, range({copies}) r LIMIT {rows}"
    )
    return "adult_big"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument(
        "--rows", type=int, nargs="*", default=[], help="also run on Adult replicated to N rows"
    )
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--full", action="store_true", help="also run per_bucket above 100 buckets (minutes)"
    )
    args = parser.parse_args()
    con = duckdb.connect()
    if args.threads:
        con.execute(f"SET threads = {args.threads}")
    table = load(con, None)
    base = timed(con, f'SELECT * FROM "{table}"', args.reps)
    print(f"DuckDB {duckdb.__version__}, Adult 32,561 rows x 6 columns; plain copy {base:.1f} ms\n")
    print(
        f"{'buckets':>7} | {'window ms':>9} {'ratio':>6} | {'per_bucket ms':>13} {'ratio':>6} | {'paper MySQL ms':>14} {'paper/window':>12} | sql bytes"
    )
    window_times = []
    for n in BUCKETS:
        w_sql = slicing_sql(table, n, "window")
        w = timed(con, w_sql, args.reps)
        window_times.append(w)
        p = (
            timed(con, slicing_sql(table, n, "per_bucket"), max(1, args.reps // 2))
            if n <= 100 or args.full
            else float("nan")
        )
        print(
            f"{n:>7} | {w:>9.1f} {w / base:>6.2f} | {p:>13.1f} {p / base:>6.2f} | "
            f"{PAPER_MS[n]:>14,} {PAPER_MS[n] / w:>12,.0f} | {len(w_sql)}"
        )
    if not args.full:
        print("(per_bucket above 100 buckets skipped: it grows with the bucket count; --full)")
    print(
        f"\nwindow: max ratio to plain copy {max(window_times) / base:.2f}, "
        f"slowest/fastest bucket count {max(window_times) / min(window_times):.2f}"
    )
    for rows in args.rows:
        big = load(con, rows)
        base_big = timed(con, f'SELECT * FROM "{big}"', 3)
        w = timed(con, slicing_sql(big, 100, "window"), 3)
        print(
            f"{rows:,} rows, 100 buckets: window {w:,.0f} ms ({rows / w * 1000:,.0f} rows/s), "
            f"plain copy {base_big:,.0f} ms, ratio {w / base_big:.2f}"
        )


if __name__ == "__main__":
    main()

"""Aggregate benchmark: ROLLUP cross-tables of Adult through the pipeline with cell
suppression and audit, against the plain aggregate query in the same run.

Each cross-table (e.g. native_country x occupation x sex with totals) is run
(a) directly in DuckDB as ``GROUP BY ROLLUP(...)`` — the baseline — and
(b) through paradise under the ``tables`` role: rewrite, pushed-down counts,
hierarchical cell suppression (primary/secondary/tertiary) and the LP audit.
Printed: ms for both, the ratio, cells, suppressions per stage, audit outcome.
The synthetic 3-level hierarchy with 100k cells is in ``aggregates_cells.py``.

Usage: ``python benchmarks/aggregates.py [--reps 3]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import paradise
from paradise.tools.demo_data import load_demo

TABLES = (
    ("sex", "race"),
    ("race", "native_country"),
    ("native_country", "occupation", "sex"),
    ("workclass", "education", "occupation"),
    ("native_country", "education", "occupation", "sex"),
)


def median_ms(fn, reps: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(reps):
        start = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    proc = paradise.connect(":memory:")
    load_demo(proc)
    con = proc.backend.connection
    print("Adult (32,561 rows), role 'tables' (cell_suppression min 1, max 4, function max)\n")
    print(f"{'cross-table':<45} {'cells':>6} {'plain ms':>9} {'paradise ms':>11} {'ratio':>6} "
          f"{'prim':>5} {'sec':>5} {'tert':>5} {'add':>4} audit")
    for dims in TABLES:
        cols = ", ".join(dims)
        sql = f"SELECT {cols}, count(*) AS n FROM adult GROUP BY ROLLUP ({cols})"
        plain, rows = median_ms(lambda sql=sql: con.sql(sql).fetchall(), args.reps)
        ours, result = median_ms(lambda sql=sql: proc.query(sql, role="tables"), args.reps)
        cells = result.annotations.aggregates["cell_suppression"]  # type: ignore[union-attr]
        print(
            f"{' x '.join(dims):<45} {len(rows):>6} {plain:>9.1f} {ours:>11.1f} {ours / plain:>6.1f} "
            f"{cells['primary']:>5} {cells['secondary']:>5} {cells['tertiary']:>5} "
            f"{cells.get('additional', 0):>4} {'passed' if cells['audit']['passed'] else 'FAILED'}"
        )


if __name__ == "__main__":
    main()

"""Benchmark: hierarchical cell suppression plus LP audit on a synthetic 3-level table.

Run standalone: ``python benchmarks/aggregates_cells.py [--regions 100 --districts 100
--quarters 10 --min 1 --max 3 --seed 0]``. The default table has 100 x 100 x 10 =
100,000 lowest-level cells plus 10,101 totals, with negative-binomial counts (many
small values and some zeros), so that about a fifth of the cells are suppressed.
The last line repairs the primary-only pattern (no secondary/tertiary stage), which
stresses the audit-and-repair loop.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paradise.cells import (  # noqa: E402
    HierarchicalTable,
    audit,
    audit_and_repair,
    suppress_and_audit,
    suppress_cells,
    suppress_primary,
)


def synthetic_rows(
    regions: int, districts: int, quarters: int, seed: int
) -> list[tuple[int, int, int, int]]:
    """Rows ``(region, district, quarter, count)`` with totals marked by 0 (codes start at 1)."""
    rng = np.random.default_rng(seed)
    counts = rng.negative_binomial(n=1.2, p=0.08, size=(regions, districts, quarters))
    rows: list[tuple[int, int, int, int]] = [(0, 0, 0, int(counts.sum()))]
    for r in range(regions):
        rows.append((r + 1, 0, 0, int(counts[r].sum())))
        for d in range(districts):
            rows.append((r + 1, d + 1, 0, int(counts[r, d].sum())))
            rows.extend((r + 1, d + 1, q + 1, int(counts[r, d, q])) for q in range(quarters))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Time table building, suppression, audit and the audited end-to-end run."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--regions", type=int, default=100)
    parser.add_argument("--districts", type=int, default=100)
    parser.add_argument("--quarters", type=int, default=10)
    parser.add_argument("--min", dest="min_value", type=int, default=1)
    parser.add_argument("--max", dest="max_value", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rows = synthetic_rows(args.regions, args.districts, args.quarters, args.seed)
    t0 = time.perf_counter()
    table = HierarchicalTable.from_rows(rows, ("region", "district", "quarter"), value="n")
    t1 = time.perf_counter()
    result = suppress_cells(table, min_value=args.min_value, max_value=args.max_value)
    t2 = time.perf_counter()
    report = audit(result)
    t3 = time.perf_counter()
    released = suppress_and_audit(table, min_value=args.min_value, max_value=args.max_value)
    t4 = time.perf_counter()
    weak = suppress_primary(table, min_value=args.min_value, max_value=args.max_value)
    weak_report = audit(weak)
    t5 = time.perf_counter()
    repaired = audit_and_repair(weak)
    t6 = time.perf_counter()

    lowest = sum(1 for c in table.cells if not c.is_total)
    print(f"cells: {len(table)} ({lowest} lowest-level), levels region > district > quarter")
    print(f"build table + additivity check: {(t1 - t0) * 1e3:9.1f} ms")
    s = result.summary()
    print(
        f"suppress (primary/secondary/tertiary): {(t2 - t1) * 1e3:9.1f} ms   "
        f"primary={s['primary']} secondary={s['secondary']} tertiary={s['tertiary']}"
    )
    print(
        f"audit of that pattern:           {(t3 - t2) * 1e3:9.1f} ms   "
        f"suppressed={len(report.cells)} lp_solves={report.lp_solves} "
        f"dedicated_bounds={sum(c.solved for c in report.cells)} "
        f"failed={len(report.failures)}"
    )
    f = released.summary()
    audit_summary = released.audit.summary() if released.audit else {}
    print(
        f"suppress_and_audit (released):   {(t4 - t3) * 1e3:9.1f} ms   "
        f"primary={f['primary']} secondary={f['secondary']} tertiary={f['tertiary']} "
        f"additional={f['additional']} audit_passed={audit_summary.get('passed')} "
        f"final_audit={audit_summary.get('seconds')} s"
    )
    r = repaired.summary()
    print(
        f"primary only: audit {(t5 - t4) * 1e3:.1f} ms (failed={len(weak_report.failures)}), "
        f"audit_and_repair {(t6 - t5) * 1e3:.1f} ms   additional={r['additional']} "
        f"audit_passed={repaired.audit.passed if repaired.audit else None}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

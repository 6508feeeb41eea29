"""Run ``paradise report`` on the generated 50k-row patients table; print resource use as JSON.

Run as a separate process by ``test_robust.py`` so that its peak resident set
size is this report's alone: ``python run_patients_report.py DIR``. The last
line of stdout is ``{"exit": ..., "seconds": ..., "peak_rss_mib": ...,
"tracemalloc_peak_mib": ...}``.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.report.patients import create_patients, write_policy  # noqa: E402


def main(work: Path) -> None:
    db = work / "patients.duckdb"
    con = duckdb.connect(str(db))
    create_patients(con)
    con.close()
    policies = write_policy(work / "policies")
    from paradise.cli import main as paradise_main

    tracemalloc.start()
    t0 = time.perf_counter()
    code = 0
    try:
        paradise_main(["report", "--db", str(db), "--policies", str(policies), "--table",
                       "patients", "--role", "clinician", "--out", str(work / "out")])
    except SystemExit as exc:
        code = int(exc.code or 0)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"exit": code, "seconds": seconds, "peak_rss_mib": rss_kib / 1024,
                      "tracemalloc_peak_mib": peak / 2**20}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""The report on an ordinary table with dates, timestamps, free text, NULLs and booleans.

A generated 50k-row patients table (``patients.py``) once made ``paradise report``
try to allocate 165 GiB (a classifier one-hot encoding every column, dates and
free text included). Here the whole CLI run happens in its own process, whose
peak resident set size, Python allocation peak (tracemalloc) and time are
bounded, and the figures are recomputed independently with pandas.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from paradise.report.columns import MAX_LEVELS

HERE = Path(__file__).parent

# generous bounds: measured ~450 MiB RSS, ~80 MiB traced, ~20 s under tracemalloc on 2 cores
MAX_RSS_MIB = 1200
MAX_TRACED_MIB = 400
MAX_SECONDS = 240


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict, str, Path]:
    work = tmp_path_factory.mktemp("patients")
    proc = subprocess.run(
        [sys.executable, str(HERE / "run_patients_report.py"), str(work)],
        capture_output=True, text=True, timeout=MAX_SECONDS + 120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    usage = json.loads(proc.stdout.strip().splitlines()[-1])
    report = json.loads((work / "out" / "patients-clinician.json").read_text())
    return usage, report, proc.stdout, work


@pytest.fixture(scope="module")
def original(run) -> pd.DataFrame:
    con = duckdb.connect(str(run[3] / "patients.duckdb"), read_only=True)
    try:
        return con.sql("SELECT * FROM patients").df()
    finally:
        con.close()


def test_report_finishes_with_bounded_memory_and_time(run) -> None:
    usage, _report, stdout, _work = run
    assert usage["exit"] == 0
    assert usage["peak_rss_mib"] < MAX_RSS_MIB, usage
    assert usage["tracemalloc_peak_mib"] < MAX_TRACED_MIB, usage
    assert usage["seconds"] < MAX_SECONDS, usage
    assert "Traceback" not in stdout


def test_column_kinds_and_counts_match_pandas(run, original: pd.DataFrame) -> None:
    profiles = {p["name"]: p for p in run[1]["profiles"]}
    expected_kind = {"note": "text", "birth_date": "temporal", "admitted_at": "temporal",
                     "discharged_on": "temporal", "smoker": "boolean", "sex": "categorical",
                     "diagnosis": "categorical", "weight_kg": "numeric", "systolic": "numeric",
                     "length_of_stay": "numeric"}
    for column, kind in expected_kind.items():
        assert profiles[column]["kind"] == kind, column
        assert profiles[column]["distinct"] == original[column].nunique(dropna=True), column
        assert profiles[column]["nulls"] == int(original[column].isna().sum()), column
    assert profiles["zip"]["kind"] == ("text" if original["zip"].nunique() > MAX_LEVELS
                                       else "categorical")
    assert "name" not in profiles and "patient_id" not in profiles  # identifiers stay hidden


def test_free_text_is_skipped_with_a_note_not_one_hot_encoded(run) -> None:
    report = run[1]
    skipped = dict((m, why) for m, why in report["skipped"])
    assert "distribution of note" in skipped and "free text" in skipped["distribution of note"]
    features = report["classifier"]["features"]
    assert "note" not in features and "zip" not in features
    assert {"birth_date", "admitted_at", "smoker", "sex"} <= set(features)


def test_timestamp_truncation_shift_matches_pandas(run, original: pd.DataFrame) -> None:
    change = {c["column"]: c for c in run[1]["column_changes"]}["admitted_at"]
    ts = pd.to_datetime(original["admitted_at"])
    shift = (ts - ts.dt.to_period("M").dt.to_timestamp()).dt.total_seconds() / 86_400
    assert change["distance"] == pytest.approx(shift.mean(), rel=1e-9)
    assert change["changed"] == pytest.approx((shift > 0).mean())
    assert change["distinct_after"] == ts.dt.to_period("M").nunique()


def test_boolean_and_categorical_changes_are_zero_for_untouched_columns(run) -> None:
    change = {c["column"]: c for c in run[1]["column_changes"]}
    assert change["smoker"]["distance"] == 0.0 and change["smoker"]["changed"] == 0.0
    assert change["diagnosis"]["distance"] == 0.0 and change["diagnosis"]["blanked"] == 0.0
    assert change["note"]["distance"] is None
    assert change["note"]["distinct_before"] == change["note"]["distinct_after"] == 50_000


def test_released_k_meets_the_policy_and_blanked_share_matches(run, original) -> None:
    report = run[1]
    assert report["risk_anonymized"]["k"] >= 5
    change = {c["column"]: c for c in report["column_changes"]}
    # whatever was blanked to reach k: a share of the non-NULL original values, in [0, 1]
    for column in ("birth_date", "zip", "sex"):
        assert 0.0 <= change[column]["blanked"] <= 1.0
    # the released relation's risk over the quasi-identifiers, recomputed from the summary
    summary = report["risk_anonymized"]["units"][0]["summary"]
    sizes = np.array([f for f, n in summary["sizes"] for _ in range(n)])
    assert summary["k"] == sizes.min() and summary["classes"] == sizes.size


def test_summary_fits_one_screen_and_has_no_raw_floats(run) -> None:
    lines = [ln for ln in run[2].splitlines() if not ln.startswith("{")]
    verdict_lines = [ln for ln in lines if ln[:4] in ("ok  ", "FAIL", "info", "n/a ")]
    assert 8 <= len(verdict_lines) <= 20
    assert any(ln.startswith("ok   Smallest group") for ln in verdict_lines)
    import re

    for line in verdict_lines:
        assert not re.search(r"\d\.\d{5,}", line), line  # no 0.0021358… style floats
        assert not re.search(r"\de-\d", line), line

"""build_report on Adult, the seed 004 §5.2 check, the JSON and the HTML (headless Chromium)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import paradise
from paradise.postprocess.classes import class_ids
from paradise.report import build_report, compare, measure, write_report
from paradise.report.risk import size_counts, summarize_sizes
from paradise.tools.demo_data import load_demo


@pytest.fixture(scope="module")
def proc():
    p = paradise.connect(":memory:")
    load_demo(p)
    yield p
    p.close()


@pytest.fixture(scope="module")
def analyst(proc):
    return build_report(proc, role="analyst", table="adult", variants=("public",))


@pytest.fixture(scope="module")
def office(proc):
    if proc.policy("statistics_office").table("adult") is None:
        pytest.skip("no statistics_office policy")
    return build_report(proc, role="statistics_office", table="adult", variants=())


def test_original_risk_agrees_with_numpy_on_fetched_rows(proc, analyst) -> None:
    qis = list(analyst.quasi_identifiers)
    table = proc.backend.execute(
        "SELECT " + ", ".join(f'"{q}"' for q in qis) + " FROM adult").table
    expected = summarize_sizes(size_counts(class_ids(table, list(range(len(qis))))))
    assert analyst.risk_original.units[0].summary == expected
    assert analyst.rows == 32561


def test_sliced_units_are_measured_per_group(analyst) -> None:
    groups = {u.quasi_identifiers for u in analyst.risk_anonymized.units}
    assert ("age", "workclass") in groups and ("race",) in groups
    # slicing permutes values within a group's column only: per-group classes equal the
    # original classes over the same columns, so k is the original's k over that group
    assert analyst.risk_anonymized.k is not None
    assert analyst.utility.il1s is not None and analyst.utility.il1s.value == 0.0
    assert analyst.utility.perturbed == ()


def test_seed004_claim_within_groups_holds_across_groups_not(analyst) -> None:
    check = analyst.slicing_check
    assert check.applies and check.holds is True
    for r in check.within:
        assert np.allclose(r.original, r.anonymized, rtol=1e-9, atol=1e-9)
    assert check.across and max(r.max_rel_delta for r in check.across) > 0.2


def test_perturbing_policy_has_interval_and_linkage_risk(office) -> None:
    assert office.risk_anonymized.k >= 5
    assert office.interval and 0.0 < office.interval[0].risk < 1.0
    assert office.linkage and 0.0 < office.linkage[0].risk < 1.0
    assert office.utility.il1s.value > 0.0
    assert "capital_gain" in office.utility.perturbed
    mean_gain = {m.column: m for m in office.utility.moments}["capital_gain"]
    # variance-preserving microaggregation keeps mean and variance exactly
    assert mean_gain.mean_change == pytest.approx(0.0, abs=1e-9)
    assert mean_gain.variance_change == pytest.approx(0.0, abs=1e-6)


def test_scratch_tables_are_dropped(proc, analyst) -> None:
    assert not [t for t in proc.backend.catalog() if t.startswith("_paradise_report_")]


def test_report_json_has_every_figure(analyst, tmp_path: Path) -> None:
    data = json.loads(analyst.to_json())
    for key in ("risk_original", "risk_anonymized", "sensitive_figures", "utility",
                "regressions", "slicing_check", "variants", "notes"):
        assert key in data
    assert [v["label"] for v in data["variants"]] == ["original", "analyst", "public"]
    assert all(KEY not in analyst.to_json() for KEY in [measure.KEY_PREFIX + "0\":"])


def test_compare_draws_policies_on_one_plot(proc, tmp_path: Path) -> None:
    cmp = compare(proc, [paradise.bundled_policies()], table="adult", roles=["public"])
    html_path, json_path = write_report(cmp, tmp_path)
    assert [p.label for p in cmp.variants] == ["original", "policies:public"]
    assert html_path.read_text().count("<svg") == 2  # risk against IL1s and against eigen loss
    assert json.loads(json_path.read_text())["variants"][1]["k"] >= 10

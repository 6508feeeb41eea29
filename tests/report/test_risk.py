"""Risk measures against seed 003's worked tables, hand computations and pycanon."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from paradise.postprocess.classes import class_ids, codes
from paradise.report import measure
from paradise.report.risk import (
    distinct_l,
    emd_ordered,
    entropy_l,
    interval_disclosure,
    record_linkage,
    record_risk,
    size_counts,
    summarize_sizes,
    t_closeness,
)
from tests.report.conftest import TABLE1, TABLE2

T1_QIS = ("land", "geschlecht", "bildungsgrad")
T2_QIS = ("gender", "age_group")


def _ids(frame: pd.DataFrame, cols) -> np.ndarray:
    table = pa.Table.from_pandas(frame[list(cols)], preserve_index=False)
    return class_ids(table, list(range(len(cols))))


def test_table1_k_anonymity_in_sql_and_numpy(duck) -> None:
    # classes: DE/w/Master (rows 1, 4), CH/m/Master (2, 5), DE/w/Bachelor (3): k = 1
    sql = summarize_sizes(measure.class_size_counts(duck, "table1", T1_QIS))
    arrays = summarize_sizes(size_counts(_ids(TABLE1, T1_QIS)))
    assert sql == arrays
    assert (sql.k, sql.classes, sql.sample_uniques, sql.records) == (1, 3, 1, 5)
    assert sql.sizes == ((1, 1), (2, 2))
    assert sql.mean_risk == pytest.approx(3 / 5)  # (1/2 + 1/2 + 1 + 1/2 + 1/2) / 5
    assert sql.records_below(2) == 1  # observation 3 violates 2-anonymity
    # recoding "Bachelor" -> "Master" (the seed's suggested fix) gives 2-anonymity
    fixed = TABLE1.replace({"Bachelor": "Master"})
    assert summarize_sizes(size_counts(_ids(fixed, T1_QIS))).k == 2


def test_table1_per_record_risk() -> None:
    risk = record_risk(_ids(TABLE1, T1_QIS))
    assert risk.tolist() == [0.5, 0.5, 1.0, 0.5, 0.5]


def test_table2_fk_and_l_diversity(duck) -> None:
    ids = _ids(TABLE2, T2_QIS)
    fk = np.bincount(ids)[ids]
    assert fk.tolist() == TABLE2["f_k"].tolist()  # the f_k column of Tabelle 2
    sens = codes(pa.array(TABLE2["medical_condition"]))
    per_class = distinct_l(ids, sens)
    assert per_class[ids].tolist() == TABLE2["l_diversity"].tolist()  # its l column
    assert measure.diversity(duck, "table2", T2_QIS, "medical_condition") == (1, 1.0)
    assert summarize_sizes(measure.class_size_counts(duck, "table2", T2_QIS)).k == 3


def test_table2_entropy_and_t_closeness_by_hand(duck) -> None:
    ids = _ids(TABLE2, T2_QIS)
    sens = codes(pa.array(TABLE2["medical_condition"]))
    # Male/30s: 1/3 Cancer, 2/3 Heart disease -> exp(H) = exp(-(1/3 ln 1/3 + 2/3 ln 2/3))
    expected = math.exp(-(1 / 3 * math.log(1 / 3) + 2 / 3 * math.log(2 / 3)))
    males = ids[0]
    assert entropy_l(ids, sens)[males] == pytest.approx(expected)
    # overall 4/6 Cancer, 2/6 Heart disease: both classes are 1/3 away
    assert t_closeness(ids, sens, ordered=False).tolist() == pytest.approx([1 / 3, 1 / 3])
    assert measure.categorical_t(duck, "table2", T2_QIS, "medical_condition") == \
        pytest.approx(1 / 3)


def test_ordered_emd_by_hand() -> None:
    # Li et al. 2007's salary example: Q uniform over 9 values {3k..11k}, P = {3k, 4k, 5k}
    q = np.full(9, 1 / 9)
    p = np.array([1 / 3] * 3 + [0] * 6)
    assert emd_ordered(p, q) == pytest.approx(0.375)
    p2 = np.array([1 / 3, 0, 0, 1 / 3, 0, 0, 1 / 3, 0, 0])  # {3k, 6k, 9k}
    # cumulative differences 2/9, 1/9, 0, 2/9, 1/9, 0, 2/9, 1/9, 0 -> 1/8 * 9/9 = 0.125
    assert emd_ordered(p2, q) == pytest.approx(0.125)


# --- pycanon as the independent implementation -------------------------------------------
pycanon = pytest.importorskip("pycanon.anonymity")


def _random_frame(seed: int, n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "a": rng.choice(["x", "y", "z"], n),
        "b": rng.choice(["p", "q"], n, p=[0.8, 0.2]),
        "c": rng.integers(0, 4, n).astype(str),
        "s": rng.choice(["s1", "s2", "s3", "s4"], n, p=[0.55, 0.25, 0.15, 0.05]),
        "v": rng.integers(0, 12, n),
    })


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_k_l_t_agree_with_pycanon(duck, seed: int) -> None:
    frame = _random_frame(seed)
    duck.register("rand", frame)
    qis = ["a", "b", "c"]
    k_sql = summarize_sizes(measure.class_size_counts(duck, "rand", qis)).k
    assert k_sql == pycanon.k_anonymity(frame, qis)
    l_sql, ent_sql = measure.diversity(duck, "rand", qis, "s")
    assert l_sql == pycanon.l_diversity(frame, qis, ["s"])
    # pycanon reports the integer part of exp(min H)
    assert math.floor(ent_sql + 1e-9) == pycanon.entropy_l_diversity(frame, qis, ["s"])
    assert measure.categorical_t(duck, "rand", qis, "s") == pytest.approx(
        pycanon.t_closeness(frame, qis, ["s"]), abs=1e-12)
    assert measure.ordered_t(duck, "rand", qis, "v") == pytest.approx(
        pycanon.t_closeness(frame, qis, ["v"]), abs=1e-12)
    ids = _ids(frame, qis)
    assert t_closeness(ids, codes(pa.array(frame["s"])), ordered=False).max() == pytest.approx(
        pycanon.t_closeness(frame, qis, ["s"]))


def test_suppressed_rows_form_no_class(duck) -> None:
    frame = pd.DataFrame({"a": ["x", "x", None, None], "b": ["p", "p", None, "q"]})
    duck.register("supp", frame)
    # the all-NULL row is no class; (NULL, q) is a class of its own
    assert measure.class_size_counts(duck, "supp", ["a", "b"]) == {1: 1, 2: 1}


# --- interval disclosure and record linkage ------------------------------------------------
def test_interval_disclosure_sd_by_hand() -> None:
    x = np.array([[10.0, 1.0], [20.0, 2.0], [30.0, 3.0], [40.0, 4.0]])
    xm = np.array([[10.5, 1.0], [25.0, 2.0], [30.0, 3.9], [40.0, 4.0]])
    res = interval_disclosure(x, xm, ("a", "b"), k=0.1)
    # sd(xm[:, 0]) = 12.5, half width 1.25; sd(xm[:, 1]) = 1.3145, half width 0.131
    assert res.per_column == {"a": 0.75, "b": 0.75}
    assert res.risk == 0.5  # rows 1 and 4 inside in both columns


def test_interval_disclosure_rank() -> None:
    x = np.arange(100, dtype=float)[:, None]
    shifted = interval_disclosure(x, x + 0.5, ("v",), k=0.01, method="rank")
    assert shifted.risk == 1.0
    far = interval_disclosure(x, x[::-1] + 0.0, ("v",), k=0.01, method="rank")
    # x_i = i against x*_i = 99 - i: inside when |i - (99 - i)| <= 1, i.e. i = 49, 50
    assert far.risk == pytest.approx(0.02)


def test_record_linkage_ties_and_duplicates() -> None:
    x = np.array([[0.0], [0.0], [5.0], [9.0]])
    xm = np.array([[0.1], [0.2], [5.1], [6.9]])
    res = record_linkage(x, xm, ("v",))
    # rows 1-2: nearest original vector 0 shared by two records -> 1/2 each; row 3 linked;
    # row 4 (6.9) is nearer 5 than 9 -> not linked
    assert res.linked == pytest.approx(2.0)
    assert res.risk == pytest.approx(0.5)


def test_record_linkage_brute_force() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(200, 2)).round(1)
    xm = x + rng.normal(scale=0.3, size=x.shape)
    sd = x.std(axis=0, ddof=1)
    d = (((xm[:, None, :] - x[None, :, :]) / sd) ** 2).sum(axis=2)
    nearest = d <= d.min(axis=1, keepdims=True) + 1e-12
    expected = sum(nearest[i, i] / nearest[i].sum() for i in range(len(x)))
    assert record_linkage(x, xm, ("a", "b")).linked == pytest.approx(expected)

"""Generalization / global recoding: goldens per dialect, labels, hierarchies, coding."""

from __future__ import annotations

import textwrap
from datetime import date, datetime

import pandas as pd
import pytest
from pydantic import ValidationError

from paradise.anonymize.generalization import GeneralizationParams
from paradise.errors import PolicyError
from paradise.policy.load import load_policy_file
from tests.anonymize.helpers import check_golden, load_cases
from tests.anonymize.properties import check_generalization


@pytest.mark.parametrize(("headers", "params", "expected"), load_cases("generalization"))
def test_golden(headers, params, expected, golden_backend) -> None:
    ran = check_golden("generalization", headers, params, expected, golden_backend)
    if ran is not None:
        check_generalization(params, *ran)


def test_seed003_table3_labels(run, golden_backend) -> None:
    out = run(golden_backend, "land_age", "generalization", {"columns": {"age": {"width": 10}}})
    assert out.sort_values("id")["age"].tolist() == [
        "20-29",
        "30-39",
        "20-29",
        "20-29",
        "30-39",
        "30-39",
    ]


def test_adult_age_decades_contain_every_value(run, adult_backend) -> None:
    before = adult_backend.connection.sql("SELECT age FROM adult").df()["age"]
    out = run(
        adult_backend, "adult", "generalization", {"columns": {"age": {"width": 10, "offset": 5}}}
    )
    assert sorted(out["age"].unique())[:2] == ["15-24", "25-34"]
    # global recoding: the value counts of labels equal the counts of the values they cover
    expected = before.map(
        lambda a: f"{(a - 5) // 10 * 10 + 5}-{(a - 5) // 10 * 10 + 14}"
    ).value_counts()
    assert out["age"].value_counts().sort_index().equals(expected.sort_index())


def test_hierarchy_from_an_arx_csv_file_relative_to_the_policy(
    tmp_path, run, golden_backend
) -> None:
    (tmp_path / "hierarchies").mkdir()
    (tmp_path / "hierarchies" / "land.csv").write_text(
        "Deutschland;DACH;Europa;*\nSchweiz;DACH;Europa;*\nBrasilien;Südamerika;Amerika;*\n"
    )
    policy = tmp_path / "p.yaml"
    policy.write_text(
        textwrap.dedent("""\
        role: r
        tables:
          land_age:
            columns: {land: quasi_identifier, age: quasi_identifier, id: insensitive}
            transform:
              - generalization:
                  columns:
                    land: {hierarchy_file: hierarchies/land.csv, level: 2}
    """)
    )
    loaded = load_policy_file(policy)
    params = loaded.tables["land_age"].transform[0].params
    out = run(golden_backend, "land_age", "generalization", params)
    assert out.sort_values("id")["land"].tolist() == [
        "Europa",
        "Europa",
        "Europa",
        "Europa",
        "Amerika",
        "Europa",
    ]
    # level 3 is the root, an unknown value becomes "*"
    policy.write_text(policy.read_text().replace("level: 2", "level: 4"))
    with pytest.raises(PolicyError, match=r"p.yaml:8: .*level 4 does not exist"):
        load_policy_file(policy)
    policy.write_text(policy.read_text().replace("land.csv", "missing.csv"))
    with pytest.raises(PolicyError, match="cannot read hierarchy file"):
        load_policy_file(policy)


def test_unlisted_values_never_pass_a_hierarchy(run, golden_backend) -> None:
    params = {
        "columns": {"land": {"hierarchy": [["Deutschland", "Europa"]], "level": 1, "other": "?"}}
    }
    out = run(golden_backend, "land_age", "generalization", params)
    assert set(out["land"]) == {"Europa", "?"}
    out = run(
        golden_backend,
        "land_age",
        "generalization",
        {"columns": {"land": {"hierarchy": [["Deutschland", "Europa"]], "level": 0}}},
    )
    assert set(out["land"]) == {"Deutschland", "*"}


def test_truncation_of_dates_and_timestamps(run, golden_backend) -> None:
    out = run(
        golden_backend,
        "events",
        "generalization",
        {"columns": {"ts": {"truncate": "hour"}, "day": {"truncate": "year"}}},
    )
    out = out.sort_values("id")
    assert out["ts"].iloc[0].to_pydatetime() == datetime(2024, 3, 17, 10, 0)
    assert out["day"].iloc[2] == date(2023, 1, 1) or pd.Timestamp(
        out["day"].iloc[2]
    ) == pd.Timestamp(2023, 1, 1)
    assert out["ts"].isna().iloc[3]


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"width": 10, "round": 5}, "exactly one recoding"),
        ({}, "exactly one recoding"),
        ({"width": 0}, "greater than 0"),
        ({"breaks": [10, 5]}, "strictly increasing"),
        ({"breaks": [10], "labels": ["a"]}, "labels needs 2"),
        ({"top": 1, "bottom": 5}, "above top"),
        ({"hierarchy": [["a", "b"], ["a", "c"]], "level": 1}, "twice"),
        ({"hierarchy": [["a", "b"], ["c"]], "level": 1}, "same number of levels"),
        ({"hierarchy": [["a", "b"]]}, "needs level"),
        ({"truncate": "week"}, "Input should be"),
    ],
)
def test_invalid_rules_are_refused(rule, message) -> None:
    with pytest.raises(ValidationError, match=message):
        GeneralizationParams.model_validate({"columns": {"c": rule}})

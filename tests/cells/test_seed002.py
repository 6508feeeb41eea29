"""Seed 002's worked example must come out exactly as the seed prints it."""

from __future__ import annotations

import pytest

from paradise.cells import (
    HierarchicalTable,
    SuppressionResult,
    audit,
    suppress_and_audit,
    suppress_cells,
)

# The seed's input, as its `datalines` give it: Kreis Quartier Wert.
SEED_INPUT = """\
0 0 28
1 0 9
1 1 2
1 2 7
2 0 2
2 1 2
2 2 0
3 0 17
3 1 17
"""

# The seed's printed output table, verbatim (%anon_aggregatdaten with minWert=1,
# maxWert=3, funktion=max). On the rows that are not masked the Markdown lost the
# empty Wert_fallLang column: its two "." are Wert_min and Wert_max (SAS missing
# values), and Wert_fallLang and Wert_fall are empty.
SEED_OUTPUT = """\
Kreis | Quartier | Wert | Wert_korr | Wert_fallLang | Wert_min | Wert_max | Wert_fall |
---|---|---|---|---|---|---|---|
0 | 0 | 28 | 28 | . | . | ||
1 | 0 | 9 | 9 | . | . | ||
1 | 1 | 2 | 1–3 | Kleine Werte werden auf der untersten Ebene maskiert | 1 | 3 | primär |
1 | 2 | 7 | 6-8 | Anonymisiert, damit in Quartier 2 keine Rückschlüsse gezogen werden können. | 6 | 8 | A11 |
2 | 0 | 2 | 1-3 | Anonymisiert, damit in Kreis 2 keine Rückschlüsse gezogen werden können. | 1 | 3 | A12 |
2 | 1 | 2 | 1–3 | Kleine Werte werden auf der untersten Ebene maskiert | 1 | 3 | primär |
2 | 2 | 0 | 0 | . | . | ||
3 | 0 | 17 | 16-18 | Anonymisiert, damit in Kreis 3 keine Rückschlüsse gezogen werden können. | 16 | 18 | A21 |
3 | 1 | 17 | 16-18 | Anonymisiert, damit in Kreis 3 keine Rückschlüsse gezogen werden können. | 16 | 18 | C1 |
"""  # noqa: E501 (the seed's table, verbatim)

Row = tuple[int, int, int, str, str, int | None, int | None, str]


def seed_rows() -> list[tuple[int, int, int]]:
    return [(a, b, c) for a, b, c in (map(int, line.split()) for line in SEED_INPUT.splitlines())]


def expected_rows() -> list[Row]:
    """Parse the printed table into (Kreis, Quartier, Wert, korr, fallLang, min, max, fall)."""
    out: list[Row] = []
    for line in SEED_OUTPUT.splitlines()[2:]:
        fields = [f.strip() for f in line.rstrip("|").split("|")]
        kreis, quartier, wert, korr = int(fields[0]), int(fields[1]), int(fields[2]), fields[3]
        if fields[4] == ".":  # unmasked row, shifted by the lost empty column
            assert fields[5:] == [".", ""], line
            out.append((kreis, quartier, wert, korr, "", None, None, ""))
        else:
            text, lo, hi, code = fields[4], int(fields[5]), int(fields[6]), fields[7]
            out.append((kreis, quartier, wert, korr, text, lo, hi, code))
    return out


def actual_rows(result: SuppressionResult) -> list[Row]:
    return [
        (
            int(str(c.key[0])),
            int(str(c.key[1])),
            int(c.value),
            c.published,
            c.reason.text_de if c.reason else "",
            None if c.lower is None else int(c.lower),
            None if c.upper is None else int(c.upper),
            c.reason.code if c.reason else "",
        )
        for c in result.cells
    ]


@pytest.fixture
def table() -> HierarchicalTable:
    return HierarchicalTable.from_rows(seed_rows(), levels=("Kreis", "Quartier"), value="Wert")


@pytest.mark.parametrize("run", [suppress_cells, suppress_and_audit], ids=["suppress", "audited"])
def test_seed_example_byte_for_byte(table: HierarchicalTable, run: object) -> None:
    """With the macro's en dash on primary rows, every column of every row matches."""
    assert callable(run)
    result = run(table, min_value=1, max_value=3, function="max", primary_separator="–")
    assert actual_rows(result) == expected_rows()


def test_seed_example_default_separator_is_consistent(table: HierarchicalTable) -> None:
    """By default every interval uses "-"; only the primary rows' dash differs from the seed."""
    result = suppress_cells(table, min_value=1, max_value=3, function="max")
    expected = [(*r[:3], r[3].replace("–", "-"), *r[4:]) for r in expected_rows()]
    assert actual_rows(result) == expected
    assert all("–" not in c.published for c in result.cells)


def test_seed_example_is_the_default_function(table: HierarchicalTable) -> None:
    assert suppress_cells(table, min_value=1, max_value=3) == suppress_cells(
        table, min_value=1, max_value=3, function="max"
    )


def test_seed_example_passes_the_audit_unchanged(table: HierarchicalTable) -> None:
    result = suppress_cells(table, min_value=1, max_value=3)
    report = audit(result)
    assert report.passed
    assert [(c.key, c.derived_lower, c.derived_upper) for c in report.cells] == [
        (c.key, c.lower, c.upper) for c in result.cells if c.suppressed
    ]
    audited = suppress_and_audit(table, min_value=1, max_value=3)
    assert audited.cells == result.cells
    assert audited.summary() == {
        **result.summary(),
        "audit": audited.audit.summary() if audited.audit else None,
    }


def test_seed_example_summary(table: HierarchicalTable) -> None:
    summary = suppress_and_audit(table, min_value=1, max_value=3).summary()
    counts = {k: summary[k] for k in ("cells", "suppressed", "primary", "secondary", "tertiary")}
    assert counts == {"cells": 9, "suppressed": 6, "primary": 2, "secondary": 3, "tertiary": 1}
    assert summary["additional"] == 0
    audit_summary = summary["audit"]
    assert isinstance(audit_summary, dict) and audit_summary["passed"] is True


def test_seed_example_english_texts(table: HierarchicalTable) -> None:
    result = suppress_cells(table, min_value=1, max_value=3)
    texts = {c.reason.code: c.reason.text_en for c in result.cells if c.reason}
    assert texts["primär"] == "Small values are masked at the lowest level"
    assert texts["A11"] == "Suppressed so that no inference can be drawn in Quartier 2."
    assert texts["C1"] == "Suppressed so that no inference can be drawn in Kreis 3."


def test_seed_example_with_rollup_nulls() -> None:
    """The same table as a ROLLUP result (totals marked NULL) gives the same pattern."""
    rows = [(None if k == 0 else k, None if q == 0 else q, v) for k, q, v in seed_rows()]
    table = HierarchicalTable.from_rows(rows, ("Kreis", "Quartier"), total_marker=None)
    result = suppress_cells(table, min_value=1, max_value=3)
    assert [(c.published, c.reason and c.reason.code) for c in result.cells] == [
        (r[3].replace("–", "-"), r[7] or None) for r in expected_rows()
    ]


def test_seed_example_with_min_function_chooses_differently(table: HierarchicalTable) -> None:
    """``function="min"`` is honoured: in the top group it picks Kreis 1 (9) instead of 3 (17)."""
    result = suppress_cells(table, min_value=1, max_value=3, function="min")
    codes = {c.key: c.reason.code for c in result.cells if c.reason}
    assert codes[(1, 0)] == "A21"
    assert (3, 0) not in codes
    assert audit(result).passed

"""The golden cases per operator: (title, table, params, execute on DuckDB)."""

from __future__ import annotations

from typing import Any

Case = tuple[str, str, dict[str, Any], bool]

CASES: dict[str, list[Case]] = {
    "microaggregation": [
        ("fixed groups of 3, mean", "seed000", {"columns": ["x"], "k": 3}, True),
        (
            "variable group size, variance preserving",
            "seed000",
            {"columns": ["x"], "k": 3, "group_size": "variable", "replace": "variance_preserving"},
            True,
        ),
        (
            "variance preserving, shuffled within groups",
            "seed000",
            {"columns": ["x"], "k": 3, "replace": "variance_preserving", "shuffle": "group"},
            True,
        ),
        (
            "two columns, variable size by SSE",
            "var12",
            {"columns": ["var1", "var2"], "k": 2, "group_size": "variable", "criterion": "sse"},
            True,
        ),
    ],
    "multivariate_microaggregation": [
        (
            "dominant variable",
            "var12",
            {"columns": ["var1", "var2"], "k": 2, "method": "dominant", "sort_by": "var2"},
            True,
        ),
        (
            "first principal component",
            "var12",
            {"columns": ["var1", "var2"], "k": 2, "method": "pca"},
            True,
        ),
        (
            "simple (unsorted)",
            "var12",
            {"columns": ["var1", "var2"], "k": 2, "method": "simple"},
            True,
        ),
        ("mdav", "var12", {"columns": ["var1", "var2"], "k": 2, "method": "mdav"}, True),
    ],
    "generalization": [
        (
            "age in decades (seed 003 Table 3)",
            "land_age",
            {"columns": {"age": {"width": 10}}},
            True,
        ),
        (
            "breaks and an inline hierarchy",
            "land_age",
            {
                "columns": {
                    "age": {"breaks": [18, 30, 65]},
                    "land": {
                        "hierarchy": [
                            ["Deutschland", "Europa", "*"],
                            ["Schweiz", "Europa", "*"],
                            ["Brasilien", "Amerika", "*"],
                        ],
                        "level": 1,
                    },
                }
            },
            True,
        ),
        (
            "top and bottom coding",
            "var12",
            {"columns": {"var2": {"top": 30, "bottom": 5, "bottom_value": 0}}},
            True,
        ),
        ("rounding", "var12", {"columns": {"var2": {"round": 5}, "var1": {"width": 0.5}}}, True),
        (
            "date and time truncation",
            "events",
            {"columns": {"ts": {"truncate": "hour"}, "day": {"truncate": "month"}}},
            True,
        ),
    ],
    "local_suppression": [
        ("suppress, category matching", "table4", {"k": 2, "importance": ["land", "age"]}, True),
        (
            "suppress, wildcard matching (seed 003 Table 4)",
            "table4",
            {"k": 2, "importance": ["age", "land"], "matching": "wildcard", "marker": "*"},
            True,
        ),
        ("drop violating rows", "table4", {"k": 2, "method": "drop"}, True),
    ],
    "noise": [
        (
            "additive, seeded",
            "var12",
            {"columns": ["var1", "var2"], "method": "additive", "alpha": 0.5, "seed": 2022},
            True,
        ),
        (
            "correlated2, unseeded",
            "var12",
            {"columns": ["var1"], "method": "correlated2", "alpha": 0.1},
            True,
        ),
        (
            "correlated2 over two columns, seeded by a label",
            "var12",
            {"columns": ["var1", "var2"], "method": "correlated2", "alpha": 0.5, "seed": "suf-2024"},
            True,
        ),
        (
            "multiplicative, seeded",
            "var12",
            {"columns": ["var2"], "method": "multiplicative", "alpha": 0.05, "seed": 7},
            True,
        ),
    ],
    "pram": [
        (
            "two categories, seeded",
            "land_age",
            {
                "seed": "release-1",
                "columns": {
                    "land": {
                        "categories": ["Deutschland", "Schweiz", "Brasilien"],
                        "matrix": [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.0, 0.5, 0.5]],
                    }
                },
            },
            True,
        ),
        (
            "unseeded, unlisted kept",
            "land_age",
            {
                "columns": {
                    "land": {
                        "categories": ["Deutschland", "Schweiz"],
                        "matrix": [[0.9, 0.1], [0.2, 0.8]],
                        "unlisted": "keep",
                    }
                }
            },
            True,
        ),
    ],
}

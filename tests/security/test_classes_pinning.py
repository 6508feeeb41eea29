"""Answers that single someone out without reading a hidden column (issue 13), recomputed.

Every query pins a class the test first proves small in the raw table (pandas): then the
answer is refused, or every released value / row is checked against ≥ k contributors (rows,
or residents where a subject key is declared), recomputed here from the raw table with
the query's filter — never with paradise's own verification.

Classes: filter-pinned aggregates without quasi-identifiers in the output, filter-pinned
row answers, self-``UNION ALL`` and self-joins inflating counts, ``DISTINCT``, nested
aggregates, ``HAVING`` oracles, labels of small groups, ``GROUPING SETS``/``ROLLUP``/
``CUBE``, window functions, subject-key tables counted in people, l-diversity.
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.security.attack import Attack, assert_groups_k, assert_rows_k, attempt

pytestmark = pytest.mark.usefixtures("findings")

PIN = "age = 19 AND race = 'Other' AND sex = 'Male'"
PIN_A = "a.age = 19 AND a.race = 'Other' AND a.sex = 'Male'"
PIN2 = "age = 17 AND race = 'Other' AND sex = 'Male'"  # a class of two


def pin(df: pd.DataFrame) -> pd.Series:
    return (df.age == 19) & (df.race == "Other") & (df.sex == "Male")


def everything(df: pd.DataFrame) -> pd.Series:
    return pd.Series(True, index=df.index)


STRICT = ["auditor", "guarded", "diverse"]
"""Roles with k = 5 on untransformed Adult: refuse, suppress (+ min cell size), suppress + l."""


def test_premise_classes_are_small(attack: Attack) -> None:
    adult = attack.raw["adult"]
    assert pin(adult).sum() == 1
    assert ((adult.age == 17) & (adult.race == "Other") & (adult.sex == "Male")).sum() == 2


def _union(n: int, body: str) -> str:
    return " UNION ALL ".join([body] * n)


# --- filter-pinned aggregates, with and without quasi-identifiers in the output ---------

AGGREGATES = [
    # (title, sql, labels {output: raw column}, aggregate outputs)
    ("count", f"SELECT count(*) AS n FROM adult WHERE {PIN}", {}, ["n"]),
    ("count-income", f"SELECT count(*) AS n FROM adult WHERE {PIN} AND income = '>50K'", {}, ["n"]),
    ("max-income", f"SELECT max(income) AS m FROM adult WHERE {PIN}", {}, ["m"]),
    ("min-hours", f"SELECT min(hours_per_week) AS m FROM adult WHERE {PIN}", {}, ["m"]),
    ("avg-hours", f"SELECT avg(hours_per_week) AS m FROM adult WHERE {PIN}", {}, ["m"]),
    ("sum-hours", f"SELECT sum(hours_per_week) AS m FROM adult WHERE {PIN}", {}, ["m"]),
    ("count-distinct", f"SELECT count(DISTINCT income) AS m FROM adult WHERE {PIN}", {}, ["m"]),
    ("group-income", f"SELECT income, count(*) AS n FROM adult WHERE {PIN} GROUP BY income",
     {"income": "income"}, ["n"]),
    ("group-hours", f"SELECT hours_per_week, count(*) AS n FROM adult WHERE {PIN} GROUP BY "
     "hours_per_week", {"hours_per_week": "hours_per_week"}, ["n"]),
    ("pin-in-list", "SELECT count(*) AS n FROM adult WHERE age IN (19) AND race IN ('Other') "
     "AND sex IN ('Male')", {}, ["n"]),
    ("pin-expressions", "SELECT count(*) AS n FROM adult WHERE age + 0 = 19 AND "
     "lower(race) = 'other' AND sex LIKE 'Mal%'", {}, ["n"]),
    ("pin-between", "SELECT count(*) AS n FROM adult WHERE age BETWEEN 19 AND 19 AND "
     "race = 'Other' AND sex <> 'Female'", {}, ["n"]),
    ("pin-case-where", "SELECT count(*) AS n FROM adult WHERE CASE WHEN age = 19 THEN race "
     "ELSE 'x' END = 'Other' AND sex = 'Male'", {}, ["n"]),
    ("pin-not", "SELECT count(*) AS n FROM adult WHERE NOT (age <> 19 OR race <> 'Other' OR "
     "sex <> 'Male')", {}, ["n"]),
    ("self-union-5", "SELECT count(*) AS n FROM (" + _union(5, "SELECT * FROM adult") +
     f") AS t WHERE {PIN}", {}, ["n"]),
    ("self-union-5-grouped", "SELECT income, count(*) AS n FROM (" +
     _union(5, f"SELECT income FROM adult WHERE {PIN}") + ") AS t GROUP BY income",
     {"income": "income"}, ["n"]),
    ("self-union-cte", "WITH t AS (" + _union(6, f"SELECT income, hours_per_week FROM adult "
     f"WHERE {PIN}") + ") SELECT income, sum(hours_per_week) AS s FROM t GROUP BY income",
     {"income": "income"}, ["s"]),
    ("self-union-nested", "SELECT count(*) AS n FROM (SELECT * FROM (" + _union(
        3, "SELECT age, race, sex FROM adult") + ") AS x UNION ALL SELECT age, race, sex FROM "
     f"adult UNION ALL SELECT age, race, sex FROM adult) AS t WHERE {PIN}", {}, ["n"]),
    ("self-join-repeats", f"SELECT a.income, count(*) AS n FROM adult a JOIN adult b ON "
     f"a.age = b.age WHERE {PIN_A} GROUP BY a.income", {"income": "income"}, ["n"]),
    ("self-join-cross-count", f"SELECT count(*) AS n FROM adult a CROSS JOIN adult b WHERE "
     f"{PIN_A} AND b.age = 90", {}, ["n"]),
    ("self-join-b-labels", f"SELECT b.sex, count(*) AS n FROM adult a JOIN adult b ON "
     f"a.age = b.age WHERE {PIN_A} GROUP BY b.sex", {}, ["n"]),
    ("distinct", f"SELECT DISTINCT income FROM adult WHERE {PIN}", {"income": "income"}, []),
    ("distinct-union", "SELECT DISTINCT income FROM (" + _union(5, f"SELECT income FROM "
     f"adult WHERE {PIN}") + ") AS t", {"income": "income"}, []),
    ("nested-count", f"SELECT count(*) AS n FROM (SELECT income FROM adult WHERE {PIN}) AS t",
     {}, ["n"]),
    ("nested-max-of-count", "SELECT max(c) AS m FROM (SELECT income, count(*) AS c FROM adult "
     f"WHERE {PIN} GROUP BY income) AS t", {}, ["m"]),
    ("nested-group-of-group", "SELECT c, count(*) AS n FROM (SELECT age, race, sex, count(*) "
     "AS c FROM adult GROUP BY age, race, sex) AS t GROUP BY c HAVING c = 1", {}, ["n"]),
    ("scalar-subquery", f"SELECT (SELECT max(income) FROM adult WHERE {PIN}) AS m", {}, ["m"]),
    ("scalar-subquery-in-group", "SELECT sex, (SELECT max(b.income) FROM adult b WHERE "
     "b.age = 19 AND b.race = 'Other' AND b.sex = 'Male') AS m, count(*) AS n FROM adult "
     "GROUP BY sex", {}, ["m"]),
    ("exists-oracle", "SELECT count(*) AS n FROM adult WHERE EXISTS (SELECT 1 FROM adult b "
     "WHERE b.age = 19 AND b.race = 'Other' AND b.sex = 'Male' AND b.income = '>50K')",
     {}, []),
    ("in-oracle", "SELECT count(*) AS n FROM adult WHERE '>50K' IN (SELECT b.income FROM adult "
     "b WHERE b.age = 19 AND b.race = 'Other' AND b.sex = 'Male')", {}, []),
    ("having-oracle", "SELECT sex, count(*) AS n FROM adult WHERE age = 19 AND race = 'Other' "
     "GROUP BY sex HAVING max(income) = '>50K'", {"sex": "sex"}, ["n"]),
    ("having-count-oracle", "SELECT 1 AS x FROM adult WHERE income = '>50K' AND age = 19 AND "
     "race = 'Other' HAVING count(*) > 0", {}, ["x"]),
    ("window-over-groups", "SELECT income, count(*) AS n, sum(count(*)) OVER () AS total FROM "
     f"adult WHERE {PIN} GROUP BY income", {"income": "income"}, ["n", "total"]),
    ("window-over-rows", f"SELECT income, count(*) OVER () AS n FROM adult WHERE {PIN}",
     {"income": "income"}, ["n"]),
]


@pytest.mark.parametrize("role", STRICT)
@pytest.mark.parametrize(("sql", "labels", "values"), [
    pytest.param(sql, labels, values, id=title) for title, sql, labels, values in AGGREGATES
])
def test_pinned_aggregate(
    attack: Attack, role: str, sql: str, labels: dict[str, str], values: list[str]
) -> None:
    out = attempt(attack, sql, role, protected=[("adult", "income")])
    if out.refused:
        return
    where = everything if "GROUP BY age, race, sex" in sql else pin
    if "b.age = 90" in sql:
        where = pin  # the a side's contributors
    assert_groups_k(out, attack.raw["adult"], where, labels, 5, values=values)
    if "oracle" in sql or "EXISTS" in sql or "IN (SELECT" in sql:
        # the answer must not depend on the pinned person's income: both worlds agree
        flipped = sql.replace("'>50K'", "'<=50K'")
        other = attempt(attack, flipped, role, checksums=False)
        assert other.refused or out.rows == other.rows or role == "diverse", (
            f"the answer is an oracle on one person's income: {out.rows} vs {other.rows}"
        )


# --- filter-pinned row answers -----------------------------------------------------------

ROWS = [
    # (title, sql, outputs {out: raw}, class columns (every QI output or constrained))
    ("plain", f"SELECT income FROM adult WHERE {PIN}", {"income": "income"},
     ["age", "race", "sex"]),
    ("insensitive-too", f"SELECT hours_per_week, income FROM adult WHERE {PIN}",
     {"income": "income", "hours_per_week": "hours_per_week"}, ["age", "race", "sex"]),
    ("pin2", f"SELECT income FROM adult WHERE {PIN2}", {"income": "income"},
     ["age", "race", "sex"]),
    ("expr-pin", "SELECT income FROM adult WHERE age * 2 = 38 AND upper(race) = 'OTHER' AND "
     "sex LIKE 'M%'", {"income": "income"}, ["age", "race", "sex"]),
    ("or-pin", f"SELECT income FROM adult WHERE ({PIN}) OR age = 90",
     {"income": "income"}, ["age", "race", "sex"]),
    ("qi-out-one", "SELECT age, income FROM adult WHERE race = 'Other' AND sex = 'Male' AND "
     "age < 20", {"age": "age", "income": "income"}, ["age", "race", "sex"]),
    ("cte", f"WITH p AS (SELECT * FROM adult WHERE {PIN}) SELECT income FROM p",
     {"income": "income"}, ["age", "race", "sex"]),
    ("derived-rename", f"SELECT x FROM (SELECT income AS x, age AS y FROM adult WHERE {PIN}) "
     "AS d", {"x": "income"}, ["age", "race", "sex"]),
    ("union-self", _union(5, f"SELECT income FROM adult WHERE {PIN}"), {"income": "income"},
     ["age", "race", "sex"]),
    ("join-self", f"SELECT a.income FROM adult a JOIN adult b ON a.age = b.age AND "
     f"a.race = b.race AND a.sex = b.sex WHERE {PIN_A}", {"income": "income"},
     ["age", "race", "sex"]),
    ("join-repeat", f"SELECT a.income FROM adult a JOIN adult b ON a.age = b.age WHERE {PIN_A}",
     {"income": "income"}, ["age", "race", "sex"]),
    ("in-subquery", "SELECT income FROM adult WHERE age IN (SELECT b.age FROM adult b WHERE "
     "b.age = 19) AND race = 'Other' AND sex = 'Male'", {"income": "income"},
     ["age", "race", "sex"]),
    ("order-limit", "SELECT income FROM adult ORDER BY CASE WHEN age = 19 AND race = 'Other' "
     "AND sex = 'Male' THEN 0 ELSE 1 END LIMIT 1", {"income": "income"},
     ["age", "race", "sex"]),
    ("order-offset", "SELECT income, hours_per_week FROM adult WHERE race = 'Other' AND "
     "sex = 'Male' ORDER BY age LIMIT 1", {"income": "income"}, ["age", "race", "sex"]),
    ("distinct-rows", f"SELECT DISTINCT income, hours_per_week FROM adult WHERE {PIN}",
     {"income": "income"}, ["age", "race", "sex"]),
]


@pytest.mark.parametrize("role", STRICT)
@pytest.mark.parametrize(("sql", "outputs", "classes"), [
    pytest.param(sql, outputs, classes, id=title) for title, sql, outputs, classes in ROWS
])
def test_pinned_rows(
    attack: Attack, role: str, sql: str, outputs: dict[str, str], classes: list[str]
) -> None:
    out = attempt(attack, sql, role, protected=[("adult", "income")])
    if out.refused:
        return
    adult = attack.raw["adult"]
    if "ORDER BY CASE" in sql:
        where = everything
    elif "age = 90" in sql:
        def where(df: pd.DataFrame) -> pd.Series:
            return pin(df) | (df.age == 90)
    elif "age < 20" in sql or "ORDER BY age" in sql:
        def where(df: pd.DataFrame) -> pd.Series:
            return (df.race == "Other") & (df.sex == "Male") & (df.age < (20 if "age < 20" in sql else 200))
    elif PIN2 in sql:
        def where(df: pd.DataFrame) -> pd.Series:
            return (df.age == 17) & (df.race == "Other") & (df.sex == "Male")
    else:
        where = pin
    l = 2 if role == "diverse" else None  # noqa: E741
    assert_rows_k(out, adult, where, outputs, classes, 5, sensitive={"income": "income"}, l=l)


# --- labels of small groups and tables with totals -----------------------------------------

TOTALS = [
    ("rollup", f"SELECT income, count(*) AS n FROM adult WHERE {PIN} GROUP BY ROLLUP (income)"),
    ("rollup-qi", "SELECT sex, race, count(*) AS n FROM adult WHERE age = 19 GROUP BY "
     "ROLLUP (sex, race)"),
    ("cube", "SELECT sex, race, count(*) AS n FROM adult WHERE age = 19 GROUP BY CUBE (sex, race)"),
    ("grouping-sets", "SELECT sex, race, count(*) AS n FROM adult WHERE age = 19 GROUP BY "
     "GROUPING SETS ((sex, race), (sex), ())"),
    ("grouping-sets-income", "SELECT income, count(*) AS n FROM adult WHERE age = 19 AND "
     "race = 'Other' GROUP BY GROUPING SETS ((income), ())"),
    ("union-of-totals", "SELECT sex, count(*) AS n FROM adult WHERE age = 19 AND race = "
     "'Other' GROUP BY sex UNION ALL SELECT 'all', count(*) FROM adult WHERE age = 19 AND "
     "race = 'Other'"),
]


@pytest.mark.parametrize("role", ["auditor", "guarded", "tables", "diverse"])
@pytest.mark.parametrize("sql", [pytest.param(s, id=t) for t, s in TOTALS])
def test_totals_and_labels(attack: Attack, role: str, sql: str) -> None:
    """Totals either go through cell suppression or are refused; a small group's
    sensitive label (income) is never released."""
    out = attempt(attack, sql, role, protected=[("adult", "income")])
    if out.refused:
        return
    adult = attack.raw["adult"]
    frame = out.frame()
    if "income" in frame.columns:
        where = pin if PIN in sql else (lambda df: (df.age == 19) & (df.race == "Other"))
        for value in frame["income"].dropna().unique():
            n = int((where(adult) & (adult.income == value)).sum())
            assert n >= 5, f"the label income={value!r} of a group of {n} is released: {out.rows}"
    if role != "tables":  # no cell suppression: every released cell needs k contributors
        def where(df: pd.DataFrame) -> pd.Series:
            return (df.age == 19) & ((df.race == "Other") if "race = 'Other'" in sql else True)
        labels = {c: c for c in ("sex", "race", "income") if c in frame.columns}
        rows = [r for r in out.rows if r[0] != "all"]
        out.result.__dict__["rows"] = rows
        assert_groups_k(out, adult, where, labels, 5, values=["n"])


# --- subject-key tables: k counts people, not rows ----------------------------------------

PEOPLE = [
    ("rooms", "SELECT room, count(*) AS n FROM sensor_readings GROUP BY room", {"room": "room"}),
    ("rooms-avg", "SELECT room, avg(value) AS n FROM sensor_readings GROUP BY room",
     {"room": "room"}),
    ("rooms-sensor", "SELECT room, sensor, count(*) AS n FROM sensor_readings GROUP BY room, "
     "sensor", {"room": "room", "sensor": "sensor"}),
    ("rooms-distinct", "SELECT DISTINCT room FROM sensor_readings", {"room": "room"}),
    ("rooms-union", "SELECT room, count(*) AS n FROM (" + _union(3, "SELECT room FROM "
     "sensor_readings") + ") AS t GROUP BY room", {"room": "room"}),
    ("rooms-having", "SELECT room, count(*) AS n FROM sensor_readings GROUP BY room HAVING "
     "count(*) > 100", {"room": "room"}),
    ("rooms-nested", "SELECT room, max(c) AS n FROM (SELECT room, sensor, count(*) AS c FROM "
     "sensor_readings GROUP BY room, sensor) AS t GROUP BY room", {"room": "room"}),
    ("rooms-one", "SELECT count(*) AS n FROM sensor_readings WHERE room LIKE 'canary-room-1%'",
     {}),
    ("districts", "SELECT district, count(*) AS n FROM subjects GROUP BY district",
     {"district": "district"}),
    ("birth-years", "SELECT birth_year, district, count(*) AS n FROM subjects GROUP BY "
     "birth_year, district", {"birth_year": "birth_year", "district": "district"}),
]


@pytest.mark.parametrize("role", ["people", "people_refuse"])
@pytest.mark.parametrize(("sql", "labels"), [pytest.param(s, lab, id=t) for t, s, lab in PEOPLE])
def test_subject_key_counts_people(
    attack: Attack, role: str, sql: str, labels: dict[str, str]
) -> None:
    if "subjects" in sql and role == "people_refuse":
        pytest.skip("people_refuse lists only sensor_readings")
    out = attempt(attack, sql, role, protected=[("sensor_readings", "room")])
    if out.refused:
        return
    table = "subjects" if "FROM subjects" in sql else "sensor_readings"
    raw = attack.raw[table]
    if "LIKE" in sql:
        def where(df: pd.DataFrame) -> pd.Series:
            return df.room.str.startswith("canary-room-1")
    else:
        where = everything
    values = ["n"] if "n" in out.result.columns else []
    assert_groups_k(out, raw, where, labels, 5, subject="subject_id", values=values)
    # a canary room is one resident's (120 readings): never a released label
    assert not [c for r in out.rows for c in r if isinstance(c, str) and "canary-room" in c]


ROWS_PEOPLE = [
    ("room-rows", "SELECT room FROM sensor_readings", {"room": "room"}, ["room"]),
    ("room-value-rows", "SELECT room, value FROM sensor_readings WHERE room LIKE 'canary%'",
     {"room": "room"}, ["room"]),
    ("pinned-by-room", "SELECT value FROM sensor_readings WHERE room = 'canary-room-17'",
     {}, ["room"]),
    ("room-union", _union(4, "SELECT room FROM sensor_readings WHERE room = 'canary-room-27'"),
     {"room": "room"}, ["room"]),
]


@pytest.mark.parametrize("role", ["people", "people_refuse"])
@pytest.mark.parametrize(("sql", "outputs", "classes"), [
    pytest.param(s, o, c, id=t) for t, s, o, c in ROWS_PEOPLE
])
def test_subject_key_rows(
    attack: Attack, role: str, sql: str, outputs: dict[str, str], classes: list[str]
) -> None:
    out = attempt(attack, sql, role, protected=[("sensor_readings", "room")])
    if out.refused:
        return
    raw = attack.raw["sensor_readings"]
    if "'canary-room-17'" in sql or "'canary-room-27'" in sql:
        name = "canary-room-17" if "17" in sql else "canary-room-27"

        def where(df: pd.DataFrame) -> pd.Series:
            return df.room == name
    elif "LIKE" in sql:
        def where(df: pd.DataFrame) -> pd.Series:
            return df.room.str.startswith("canary")
    else:
        where = everything
    assert_rows_k(out, raw, where, outputs, classes, 5, subject="subject_id")


def test_people_join_counts_people(attack: Attack) -> None:
    """Districts of residents joined to their readings: a district of few residents with
    many readings stays below k."""
    sql = (
        "SELECT s.district, s.birth_year, count(*) AS n FROM subjects s JOIN sensor_readings r "
        "ON s.subject_id = r.subject_id GROUP BY s.district, s.birth_year"
    )
    out = attempt(attack, sql, "people")
    if out.refused:
        return
    raw = attack.raw["subjects"]
    assert_groups_k(
        out, raw, everything, {"district": "district", "birth_year": "birth_year"}, 5,
        subject="subject_id", values=["n"],
    )


# --- l-diversity --------------------------------------------------------------------------

DIVERSE = [
    ("young-rows", "SELECT age, sex, income FROM adult WHERE age < 20",
     {"age": "age", "sex": "sex", "income": "income"}, ["age", "sex"]),
    ("young-rows-pinned-race", "SELECT age, income FROM adult WHERE age < 22 AND race = "
     "'Amer-Indian-Eskimo'", {"age": "age", "income": "income"}, ["age", "race"]),
    ("self-join-income", "SELECT a.age, b.income FROM adult a JOIN adult b ON a.age = b.age "
     "AND a.sex = b.sex AND a.race = b.race AND a.education = b.education WHERE a.age = 17",
     {"age": "age", "income": "income"}, ["age", "sex", "race", "education"]),
]


@pytest.mark.parametrize(("sql", "outputs", "classes"), [
    pytest.param(s, o, c, id=t) for t, s, o, c in DIVERSE
])
def test_l_diversity_rows(
    attack: Attack, sql: str, outputs: dict[str, str], classes: list[str]
) -> None:
    out = attempt(attack, sql, "diverse", protected=[("adult", "income")])
    if out.refused:
        return
    adult = attack.raw["adult"]
    age = 17 if "a.age = 17" in sql else (22 if "age < 22" in sql else 20)

    def where(df: pd.DataFrame) -> pd.Series:
        keep = df.age == 17 if age == 17 else df.age < age
        if "Amer-Indian" in sql:
            keep &= df.race == "Amer-Indian-Eskimo"
        return keep

    assert_rows_k(out, adult, where, outputs, classes, 5, sensitive={"income": "income"}, l=2)


def test_l_diversity_groups_labelled_by_income(attack: Attack) -> None:
    """Groups labelled (age, income): a released age whose every released income is the
    same while the class has one income value only discloses it."""
    sql = "SELECT age, income, count(*) AS n FROM adult WHERE age < 20 GROUP BY age, income"
    out = attempt(attack, sql, "diverse", protected=[("adult", "income")])
    if out.refused:
        return
    adult = attack.raw["adult"]
    young = adult[adult.age < 20]
    for age in {r[0] for r in out.rows if r[0] is not None}:
        assert young[young.age == age].income.nunique() >= 2, (age, out.rows)
    assert_groups_k(out, adult, lambda df: df.age < 20, {"age": "age", "income": "income"}, 5,
                    values=["n"])


CONDITIONAL = [
    ("filter", "SELECT age, sex, count(*) FILTER (WHERE income = '>50K') AS rich, count(*) AS n "
     "FROM adult WHERE age < 20 GROUP BY age, sex"),
    ("sum-case", "SELECT age, sex, sum(CASE WHEN income = '>50K' THEN 1 ELSE 0 END) AS rich, "
     "count(*) AS n FROM adult WHERE age < 20 GROUP BY age, sex"),
    ("avg-case", "SELECT age, sex, avg(CASE WHEN income = '>50K' THEN 1.0 ELSE 0.0 END) AS rich, "
     "count(*) AS n FROM adult WHERE age < 20 GROUP BY age, sex"),
    ("count-if", "SELECT age, sex, count(CASE WHEN income = '>50K' THEN 1 END) AS rich, "
     "count(*) AS n FROM adult WHERE age < 20 GROUP BY age, sex"),
    ("max-min", "SELECT age, sex, max(income) AS rich, min(income) AS n FROM adult "
     "WHERE age < 20 GROUP BY age, sex"),
]


@pytest.mark.parametrize("sql", [pytest.param(s, id=t) for t, s in CONDITIONAL])
def test_l_diversity_conditional_aggregates(attack: Attack, sql: str) -> None:
    """A group whose class holds one income only may not release an aggregate computed
    from income (a count of '>50K' of 0 says every member earns '<=50K')."""
    out = attempt(attack, sql, "diverse", protected=[("adult", "income")])
    if out.refused:
        return
    adult = attack.raw["adult"]
    young = adult[adult.age < 20]
    for age, sex, rich, _n in out.rows:
        if age is None or sex is None or rich is None:
            continue
        cls = young[(young.age == age) & (young.sex == sex)]
        assert cls.income.nunique() >= 2, (
            f"class ({age}, {sex}) has one income only, yet {rich!r} was released: {out.rows}"
        )

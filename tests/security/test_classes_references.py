"""Routes around the anonymized relations (issue 12), on every engine.

Each query must be refused with the right error class — or, where the construct is
harmless, answered without reading anything but the anonymized relations. Whatever
happens, :func:`~tests.security.attack.attempt` checks that no table changed (checksums),
no stored table was read outside a ``_paradise_r…`` relation in the SQL that ran, and no
canary (rows of tables no policy lists, withheld values) reached the answer or the error.

Classes: statements nested in a query; table references (schema-qualified, quoted case
variants, homoglyphs, CTE shadowing of policy and catalog tables, recursive CTE forward
references); positional columns and whole-row values; untraceable lineage (LATERAL,
unnest, table functions); catalog casts; errors that quote data.
"""

from __future__ import annotations

import pytest

from paradise import errors
from tests.security.attack import HOMOGLYPH, Attack, attempt

pytestmark = pytest.mark.usefixtures("findings")

REFUSED = (errors.QueryRejected, errors.UnsupportedQueryError, errors.QuerySyntaxError)

# --- statements nested inside a query -------------------------------------------------------

NESTED = [
    ("cte-delete", "postgres", "WITH d AS (DELETE FROM adult RETURNING *) SELECT count(*) FROM d"),
    ("cte-insert", "postgres", "WITH d AS (INSERT INTO adult (age) VALUES (1) RETURNING age) "
     "SELECT age FROM d"),
    ("cte-update", "postgres", "WITH d AS (UPDATE adult SET age = 1 RETURNING age) "
     "SELECT age FROM d"),
    ("cte-delete-unused", "postgres", "WITH d AS (DELETE FROM adult WHERE age = 19 RETURNING "
     "age) SELECT sex, count(*) FROM adult GROUP BY sex"),
    ("nested-cte-delete", "postgres", "SELECT n FROM (WITH d AS (DELETE FROM adult RETURNING "
     "age) SELECT count(*) AS n FROM d) AS t"),
    ("summarize", "duckdb", "SELECT * FROM (SUMMARIZE adult)"),
    ("describe", "duckdb", "SELECT * FROM (DESCRIBE adult)"),
    ("show", "duckdb", "SELECT * FROM (SHOW TABLES)"),
    ("pivot", "duckdb", "SELECT * FROM (PIVOT adult ON sex USING count(*))"),
    ("pivot-stmt", "duckdb", "PIVOT adult ON sex USING count(*) GROUP BY race"),
    ("unpivot", "duckdb", "SELECT * FROM (UNPIVOT adult ON age, hours_per_week INTO NAME k "
     "VALUE v)"),
    ("in-delete", "postgres", "SELECT count(*) FROM adult WHERE age IN (DELETE FROM adult "
     "RETURNING age)"),
    ("copy", "postgres", "COPY adult TO '/tmp/paradise_attack_copy.csv'"),
    ("create-as", "postgres", "CREATE TABLE stolen AS SELECT * FROM adult"),
    ("select-into", "postgres", "SELECT * INTO stolen FROM adult"),
    ("multi", "postgres", "SELECT 1; DELETE FROM adult"),
    ("attach", "duckdb", "ATTACH '/tmp/paradise_attack.duckdb' AS x"),
    ("pragma", "duckdb", "PRAGMA table_info('adult')"),
    ("call", "duckdb", "CALL pragma_table_info('adult')"),
    ("set", "postgres", "SET search_path TO public"),
    ("mysql-handler", "mysql", "HANDLER adult OPEN"),
    ("mysql-into-outfile", "mysql", "SELECT income FROM adult INTO OUTFILE '/tmp/paradise_x'"),
    ("for-update", "postgres", "SELECT income FROM adult FOR UPDATE"),
]


@pytest.mark.parametrize(("dialect", "sql"), [pytest.param(d, s, id=t) for t, d, s in NESTED])
def test_nested_statements(attack: Attack, dialect: str, sql: str) -> None:
    out = attempt(attack, sql, "guarded", read_dialect=dialect)
    assert out.refused, f"a statement-valued query ran: {out.rows[:3]}"
    assert isinstance(out.error, REFUSED), out.error
    assert not out.statements, "a refused query reached the database"


# --- table references ----------------------------------------------------------------------

REFERENCES = [
    ("quoted-upper", '"ADULT"', "postgres"),
    ("quoted-mixed", '"Adult"', "postgres"),
    ("mysql-upper", "ADULT", "mysql"),
    ("mysql-backtick-upper", "`ADULT`", "mysql"),
    ("homoglyph", HOMOGLYPH, "postgres"),
    ("homoglyph-quoted", f'"{HOMOGLYPH}"', "postgres"),
    ("unlisted", "adult_private", "postgres"),
    ("schema-main", "main.adult", "duckdb"),
    ("schema-public", "public.adult", "postgres"),
    ("schema-catalog", "memory.main.adult", "duckdb"),
    ("information-schema", "information_schema.tables", "postgres"),
    ("pg-catalog", "pg_catalog.pg_class", "postgres"),
    ("pg-class-bare", "pg_class", "postgres"),
    ("pg-settings", "pg_settings", "postgres"),
    ("duckdb-settings", "duckdb_settings()", "duckdb"),
    ("mysql-user", "mysql.user", "mysql"),
    ("prefs", "subject_preferences", "postgres"),
    ("subjects-other-role", "subjects", "postgres"),
    ("paradise-reserved", "_paradise_r_adult", "postgres"),
    ("paradise-reserved-upper", '"_PARADISE_R_ADULT"', "postgres"),
    ("read-csv", "read_csv('/etc/passwd')", "duckdb"),
    ("read-parquet", "read_parquet('/tmp/*.parquet')", "duckdb"),
    ("generate-series", "generate_series(1, 3)", "postgres"),
    ("values", "(VALUES (1, 'x')) AS v(a, b)", "postgres"),
]


@pytest.mark.parametrize(("ref", "dialect"), [pytest.param(r, d, id=t) for t, r, d in REFERENCES])
def test_table_references(attack: Attack, ref: str, dialect: str) -> None:
    """Only the policy's own table is ever read, whatever name points elsewhere."""
    out = attempt(attack, f"SELECT * FROM {ref}", "guarded", read_dialect=dialect)
    if out.refused:
        assert isinstance(out.error, REFUSED), out.error
        return
    # answered: it can only have been the policy's adult table, anonymized
    assert [t.table for t in out.result.annotations.tables] == ["adult"], out.result.annotations


CTE_SHADOWS = [
    ("shadow-policy-table", "WITH adult AS (SELECT 1 AS income) SELECT income FROM adult"),
    ("shadow-upper", 'WITH "ADULT" AS (SELECT 1 AS income) SELECT income FROM "ADULT"'),
    ("shadow-unlisted", "WITH adult_private AS (SELECT 1 AS x) SELECT x FROM adult_private"),
    ("shadow-prefs", "WITH subject_preferences AS (SELECT 1 AS subject_id) "
     "SELECT count(*) FROM adult"),
    ("shadow-reserved", "WITH _paradise_r_adult AS (SELECT 1 AS income) SELECT income FROM "
     "_paradise_r_adult"),
    ("shadow-inner", "SELECT income FROM (WITH adult AS (SELECT 'x' AS income) SELECT income "
     "FROM adult) AS t"),
    ("shadow-homoglyph", f'WITH "{HOMOGLYPH}" AS (SELECT income FROM adult) SELECT count(*) '
     f'FROM "{HOMOGLYPH}"'),
    ("forward-ref", "WITH a AS (SELECT * FROM b), b AS (SELECT income FROM adult) "
     "SELECT count(*) FROM a"),
    ("recursive-forward", "WITH RECURSIVE a AS (SELECT income FROM b), b AS (SELECT income "
     "FROM adult) SELECT income, count(*) AS n FROM a GROUP BY income"),
    ("recursive-over-table", "WITH RECURSIVE r AS (SELECT age, 1 AS n FROM adult WHERE age = "
     "19 UNION ALL SELECT age, n + 1 FROM r WHERE n < 3) SELECT age, count(*) AS n FROM r "
     "GROUP BY age"),
    ("recursive-numbers", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r "
     "WHERE n < 3) SELECT r.n, count(*) AS c FROM r CROSS JOIN adult a GROUP BY r.n"),
    ("cte-named-catalog", "WITH pg_class AS (SELECT 1 AS relname) SELECT relname FROM pg_class"),
    ("cte-named-information-schema", "WITH tables AS (SELECT income FROM adult) "
     "SELECT count(*) AS n FROM tables"),
]


@pytest.mark.parametrize("sql", [pytest.param(s, id=t) for t, s in CTE_SHADOWS])
def test_cte_shadowing(attack: Attack, sql: str) -> None:
    """Refused, or answered from the user's own CTE / the anonymized relation only
    (``attempt`` checks the SQL that ran and the canaries)."""
    out = attempt(attack, sql, "guarded", protected=[("adult", "income")])
    if out.refused:
        assert isinstance(out.error, REFUSED + (errors.VerificationError,)), out.error


# --- positional columns, whole-row values, untraceable lineage, catalog casts -------------

ROW_VALUES = [
    ("alias-value", "postgres", "SELECT a FROM adult a"),
    ("alias-in-expr", "postgres", "SELECT count(DISTINCT a) FROM adult a"),
    ("cast-row", "postgres", "SELECT CAST(a.* AS TEXT) FROM adult a"),
    ("row-star-star", "postgres", "SELECT (a.*).* FROM adult a"),
    ("row-func", "postgres", "SELECT row_to_json(a) FROM adult a"),
    ("row-ctor", "postgres", "SELECT ROW(a.*) FROM adult a"),
    ("row-compare", "postgres", "SELECT count(*) FROM adult a WHERE (a.*) IS NOT NULL"),
    ("row-in-group", "postgres", "SELECT count(*) FROM adult a GROUP BY a"),
    ("row-order", "postgres", "SELECT income FROM adult a ORDER BY a LIMIT 1"),
    ("star-in-func", "postgres", "SELECT md5(CAST(a.* AS TEXT)) FROM adult a"),
    ("positional", "duckdb", "SELECT #1 FROM adult"),
    ("positional-order", "duckdb", "SELECT income FROM adult ORDER BY #1 LIMIT 1"),
    ("columns-star", "duckdb", "SELECT COLUMNS(*) FROM adult"),
    ("columns-regex", "duckdb", "SELECT COLUMNS('id|fnl.*') FROM adult"),
    ("struct-pack", "duckdb", "SELECT struct_pack(a := adult.income) FROM adult"),
    ("star-replace", "duckdb", "SELECT * REPLACE (age AS income) FROM adult"),
    ("rowid", "duckdb", "SELECT rowid, income FROM adult"),
    ("ctid", "postgres", "SELECT ctid, income FROM adult"),
    ("oid-alias", "postgres", "SELECT tableoid, income FROM adult"),
    ("lateral", "postgres", "SELECT l.x FROM adult a, LATERAL (SELECT a.income AS x) l"),
    ("lateral-join", "postgres", "SELECT l.x FROM adult a JOIN LATERAL (SELECT a.age AS x) l "
     "ON true"),
    ("unnest", "postgres", "SELECT u FROM adult a, unnest(ARRAY[a.income]) u"),
    ("unnest-duck", "duckdb", "SELECT unnest([income]) FROM adult"),
    ("list-agg", "duckdb", "SELECT list(income) FROM adult"),
    ("string-agg", "postgres", "SELECT string_agg(income, ',') FROM adult"),
    ("array-agg", "postgres", "SELECT array_agg(income) FROM adult"),
    ("json-agg", "postgres", "SELECT json_agg(income) FROM adult"),
    ("group-concat", "mysql", "SELECT GROUP_CONCAT(income) FROM adult"),
    ("json-path", "postgres", "SELECT income::json->>'x' FROM adult"),
    ("regclass", "postgres", "SELECT 'adult'::regclass"),
    ("regclass-cast", "postgres", "SELECT CAST('pg_authid' AS regclass)"),
    ("regproc", "postgres", "SELECT 'pg_read_file'::regproc"),
    ("regrole", "postgres", "SELECT count(*)::regrole FROM adult"),
    ("oid-cast", "postgres", "SELECT CAST(1259 AS oid)"),
    ("cast-json", "postgres", "SELECT CAST(income AS json) FROM adult"),
    ("cast-array", "postgres", "SELECT CAST(income AS TEXT[]) FROM adult"),
    ("cast-struct", "duckdb", "SELECT CAST(income AS STRUCT(a TEXT)) FROM adult"),
    ("pg-read-file", "postgres", "SELECT pg_read_file('/etc/passwd')"),
    ("current-setting", "postgres", "SELECT current_setting('data_directory')"),
    ("version-func", "postgres", "SELECT version()"),
    ("load-file", "mysql", "SELECT LOAD_FILE('/etc/passwd')"),
    ("getvariable", "duckdb", "SELECT getvariable('x')"),
    ("sleep", "postgres", "SELECT pg_sleep(5)"),
    ("mysql-sleep", "mysql", "SELECT SLEEP(5)"),
    ("mysql-benchmark", "mysql", "SELECT BENCHMARK(100000000, MD5('x'))"),
    ("mysql-variable", "mysql", "SELECT @@datadir"),
    ("mysql-user-var", "mysql", "SELECT @x := income FROM adult"),
    ("hash-of-hidden", "postgres", "SELECT md5(CAST(fnlwgt AS TEXT)) FROM adult"),
    ("hidden-in-where", "postgres", "SELECT count(*) FROM adult WHERE id = 1"),
    ("hidden-in-order", "postgres", "SELECT income FROM adult ORDER BY fnlwgt LIMIT 1"),
    ("hidden-in-join", "postgres", "SELECT count(*) FROM adult a JOIN adult b ON a.id = b.id"),
    ("hidden-via-using", "postgres", "SELECT count(*) FROM adult a JOIN adult b USING (id)"),
    ("natural-join", "postgres", "SELECT count(*) FROM adult a NATURAL JOIN adult b"),
    ("tablesample", "postgres", "SELECT income FROM adult TABLESAMPLE SYSTEM (1)"),
    ("sample-duck", "duckdb", "SELECT income FROM adult USING SAMPLE 1"),
    ("asof", "duckdb", "SELECT count(*) FROM adult a ASOF JOIN adult b ON a.age >= b.age"),
    ("positional-join", "duckdb", "SELECT count(*) FROM adult a POSITIONAL JOIN adult b"),
    ("semi-join", "duckdb", "SELECT a.income FROM adult a SEMI JOIN adult b ON a.age = b.age"),
]


@pytest.mark.parametrize(("dialect", "sql"), [pytest.param(d, s, id=t) for t, d, s in ROW_VALUES])
def test_row_values_lineage_casts(attack: Attack, dialect: str, sql: str) -> None:
    """Each of these reaches past the column list, reads what cannot be traced, names a
    catalog object or a hidden column: it must be refused (never a backend error)."""
    out = attempt(attack, sql, "guarded", read_dialect=dialect, protected=[("adult", "income")])
    assert out.refused, f"ran: {out.rows[:3]}"
    assert isinstance(out.error, REFUSED), out.error


HARMLESS = [
    ("pg-dollar", "postgres", "SELECT $$x$$ AS a FROM adult"),
    ("mysql-executable-comment", "mysql", "SELECT income /*!50000 , id */ FROM adult"),
    ("star-exclude", "duckdb", "SELECT * EXCLUDE (income) FROM adult"),
]
"""Constructs that read nothing more than the visible columns: answered safely or refused."""


@pytest.mark.parametrize(("dialect", "sql"), [pytest.param(d, s, id=t) for t, d, s in HARMLESS])
def test_harmless_variants(attack: Attack, dialect: str, sql: str) -> None:
    out = attempt(attack, sql, "guarded", read_dialect=dialect)
    if out.refused:
        assert isinstance(out.error, REFUSED), out.error
        return
    assert "id" not in out.result.columns and "fnlwgt" not in out.result.columns


# --- errors that quote data -----------------------------------------------------------------

ERROR_QUOTES = [
    ("cast-income", "SELECT CAST(income AS INTEGER) AS x FROM adult WHERE age = 19 AND "
     "race = 'Other' AND sex = 'Male'"),
    ("cast-concat", "SELECT CAST(education || income AS INTEGER) AS x FROM adult WHERE "
     "age = 19 AND race = 'Other' AND sex = 'Male'"),
    ("cast-in-where", "SELECT count(*) AS n FROM adult WHERE CAST(CASE WHEN age = 19 AND "
     "race = 'Other' AND sex = 'Male' THEN income ELSE '1' END AS INTEGER) = 1"),
    ("cast-date", "SELECT CAST(income AS DATE) AS x FROM adult WHERE age = 19 AND "
     "race = 'Other' AND sex = 'Male'"),
    ("cast-in-group", "SELECT sex, sum(CAST(income AS INTEGER)) AS s FROM adult WHERE "
     "age = 19 AND race = 'Other' GROUP BY sex"),
]


@pytest.mark.parametrize("role", ["guarded", "auditor"])
@pytest.mark.parametrize("sql", [pytest.param(s, id=t) for t, s in ERROR_QUOTES])
def test_backend_error_quotes_no_data(attack: Attack, role: str, sql: str) -> None:
    """A failing conversion must not put the (pinned) row's value into the error."""
    attempt(
        attack, sql, role, protected=[("adult", "income"), ("adult", "education")],
        allowed=REFUSED + (errors.VerificationError, errors.BackendError),
    )


ERROR_ORACLES = [
    ("div-zero", "SELECT count(*) AS n FROM adult WHERE 1 / (CASE WHEN age = 19 AND "
     "race = 'Other' AND sex = 'Male' AND income = '{v}' THEN 0 ELSE 1 END) > 0"),
    ("cast-oracle", "SELECT count(*) AS n FROM adult WHERE CAST(CASE WHEN age = 19 AND "
     "race = 'Other' AND sex = 'Male' AND income = '{v}' THEN 'x' ELSE '1' END AS INTEGER) = 1"),
    ("ln-oracle", "SELECT count(*) AS n FROM adult WHERE ln(CASE WHEN age = 19 AND "
     "race = 'Other' AND sex = 'Male' AND income = '{v}' THEN 0 ELSE 1 END) = 0"),
    ("sqrt-oracle", "SELECT count(*) AS n FROM adult WHERE sqrt(CASE WHEN age = 19 AND "
     "race = 'Other' AND sex = 'Male' AND income = '{v}' THEN -1 ELSE 1 END) = 1"),
]


DIFFERENCING = [
    *ERROR_ORACLES,
    ("complement", "SELECT count(*) AS n FROM adult WHERE NOT (age = 19 AND race = 'Other' AND "
     "sex = 'Male' AND income = '{v}')"),
    ("complement-grouped", "SELECT sex, count(*) AS n FROM adult WHERE NOT (age = 19 AND "
     "race = 'Other' AND sex = 'Male' AND income = '{v}') GROUP BY sex"),
]


def _both_incomes(attack: Attack, template: str, role: str) -> dict[str, tuple[object, object]]:
    adult = attack.raw["adult"]
    pinned = adult[(adult.age == 19) & (adult.race == "Other") & (adult.sex == "Male")]
    assert len(pinned) == 1
    allowed = REFUSED + (errors.VerificationError, errors.BackendError)
    outcomes = {}
    for value in ("<=50K", ">50K"):
        out = attempt(attack, template.format(v=value), role, allowed=allowed, checksums=False)
        outcomes[value] = (type(out.error).__name__ if out.error else None, out.rows)
    return outcomes


@pytest.mark.parametrize("role", ["guarded", "auditor"])
@pytest.mark.parametrize("template", [pytest.param(s, id=t) for t, s in ERROR_ORACLES])
def test_error_is_no_oracle(attack: Attack, role: str, template: str) -> None:
    """Whether the query errs must not depend on one person's sensitive value."""
    outcomes = _both_incomes(attack, template, role)
    errs = {value: outcome[0] for value, outcome in outcomes.items()}
    assert errs["<=50K"] == errs[">50K"], f"the error reveals the pinned person's income: {errs}"


@pytest.mark.parametrize("role", ["guarded", "auditor"])
@pytest.mark.parametrize("template", [pytest.param(s, id=t) for t, s in DIFFERENCING])
def test_no_differencing(attack: Attack, role: str, template: str) -> None:
    """Two large aggregates that differ only by whether one person has a value: released
    values all come from ≥ k contributors, yet their difference is that person's income.
    Beyond the per-value guarantee of issue 13; recorded as a known limitation."""
    outcomes = _both_incomes(attack, template, role)
    assert outcomes["<=50K"] == outcomes[">50K"], (
        f"the answers differ by the pinned person's income: {outcomes}"
    )

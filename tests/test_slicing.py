"""Slicing properties on the real Adult data (seed 004), both strategies, DuckDB."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlglot import exp

import paradise
from paradise.anonymize.base import OperatorContext, column, helper
from paradise.anonymize.dialects import stable_row_key
from paradise.anonymize.slicing import Slicing, SlicingParams, _window_round_robin
from paradise.tools.demo_data import load_demo
from tests.anonymize.helpers import TEST_KEY

GROUPS = (("age", "workclass"), ("occupation", "relationship"), ("race",), ("sex",))


def _traced_slicing(buckets: int, strategy: str, *, bucket_by: str | None = None):
    """Slice Adult with each group carrying the original row id, exposing the bucket.

    ``strategy`` ``window_functions`` runs the window-function form that PostgreSQL and
    MySQL get (DuckDB's ``window`` uses sorts and POSITIONAL JOIN) on DuckDB.
    """
    cols = [c for g in GROUPS for c in g]
    traced = [(*g, f"id{j}") for j, g in enumerate(GROUPS)]
    relation = exp.select(
        *(column(c) for c in cols),
        *(exp.alias_(column("id"), f"id{j}", quoted=True) for j in range(len(GROUPS))),
    ).from_(exp.Table(this=exp.to_identifier("adult", quoted=True)))
    columns = tuple(cols) + tuple(f"id{j}" for j in range(len(GROUPS)))
    params = SlicingParams(
        groups=tuple(traced),
        buckets=None if bucket_by else buckets,
        bucket_by=bucket_by,
        strategy="window" if strategy == "window_functions" else strategy,
    )
    params = params.model_copy(update={"strategy": strategy})
    ctx = OperatorContext(table="adult", dialect="duckdb", columns=columns)
    if params.strategy == "window_functions":
        groups = Slicing().linkable_units(params, ctx)
        query = _window_round_robin(
            relation,
            groups,
            params,
            ctx,
            lambda src: stable_row_key(
                [column(c, src) for c in columns], TEST_KEY, "0", "duckdb"
            ),
        )
        return query, columns
    return Slicing().apply(relation, params, ctx), columns


@pytest.mark.parametrize(
    ("strategy", "buckets"),
    [
        ("window_functions", 1),
        ("window_functions", 100),
        ("window", 1),
        ("window", 7),
        ("window", 100),
        ("window", 500),
        ("per_bucket", 1),
        ("per_bucket", 25),
    ],
)
def test_slicing_properties(proc: paradise.Processor, adult, strategy: str, buckets: int) -> None:
    query, columns = _traced_slicing(buckets, strategy)
    if strategy != "per_bucket":
        query = query.select(column(helper("bucket"), helper("g0")), append=True)
    out = proc.backend.connection.sql(query.sql("duckdb")).df()
    original = adult.set_index("id")
    # same row count; every original row appears exactly once in every group
    assert len(out) == len(adult)
    for j in range(len(GROUPS)):
        assert sorted(out[f"id{j}"]) == sorted(adult["id"])
    # tuples of one group stay together: each group's values are its source row's values
    for j, group in enumerate(GROUPS):
        source = original.loc[out[f"id{j}"], list(group)].reset_index(drop=True)
        assert (source.values == out[list(group)].values).all()
    # per bucket, every group's tuples come from the same set of rows
    if strategy != "per_bucket":
        bucket_of = dict(zip(out["id0"], out[helper("bucket")], strict=True))
        for j in range(1, len(GROUPS)):
            assert (out[f"id{j}"].map(bucket_of) == out[helper("bucket")]).all()
        sizes = Counter(out[helper("bucket")])
        assert len(sizes) == buckets and max(sizes.values()) - min(sizes.values()) <= 1
    # the links across groups are actually permuted (not the identity)
    assert (out["id0"] != out["id1"]).mean() > (0.5 if buckets < 1000 else 0)


def test_slicing_by_attribute(proc: paradise.Processor, adult) -> None:
    query, _ = _traced_slicing(0, "window", bucket_by="race")
    out = proc.backend.connection.sql(query.sql("duckdb")).df()
    race = adult.set_index("id")["race"]
    for j in range(1, len(GROUPS)):
        assert (race.loc[out[f"id{j}"]].values == out["race"].values).all()


def test_sql_size_does_not_grow_with_buckets(proc: paradise.Processor) -> None:
    sizes = {n: len(_traced_slicing(n, "window")[0].sql("duckdb")) for n in (1, 10, 500)}
    assert max(sizes.values()) - min(sizes.values()) <= 16  # only the digits of n differ
    per_bucket = {n: len(_traced_slicing(n, "per_bucket")[0].sql("duckdb")) for n in (1, 10)}
    assert per_bucket[10] > 5 * per_bucket[1]


def test_select_star_analyst_multisets(proc: paradise.Processor, adult) -> None:
    result = proc.query("SELECT * FROM adult", role="analyst")
    out = result.to_pandas()
    assert len(out) == len(adult) == 32561
    assert "id" not in out.columns
    groups = result.annotations.tables[0].operators[0]["params"]["groups"]
    for group in groups:
        got = Counter(map(tuple, out[group].astype(str).values.tolist()))
        want = Counter(map(tuple, adult[group].astype(str).values.tolist()))
        assert got == want, group
    # at least one cross-group link differs from the original: rows are re-linked
    merged = Counter(map(tuple, out[["age", "occupation"]].astype(str).values.tolist()))
    assert merged != Counter(map(tuple, adult[["age", "occupation"]].astype(str).values.tolist()))
    ann = result.annotations
    assert ann.tables[0].operators[0]["params"]["buckets"] == 100
    assert ann.k_required == 5 and ann.k_achieved is not None


def test_output_order_is_shuffled(proc: paradise.Processor, adult) -> None:
    out = proc.query("SELECT age, workclass FROM adult", role="analyst").to_pandas()
    first = out.head(200)[["age", "workclass"]].astype(str).values.tolist()
    stored = adult.head(200)[["age", "workclass"]].astype(str).values.tolist()
    assert first != stored
    again = proc.query("SELECT age, workclass FROM adult", role="analyst").to_pandas()
    assert again.head(200).values.tolist() != out.head(200).values.tolist()


def test_only_the_groups_a_query_reads_are_sliced(live_proc: paradise.Processor, adult) -> None:
    proc = live_proc  # the live relation, recomputed per query (no release)
    # count(*) reads no column: nothing to permute, one column read
    counted = proc.explain("SELECT count(*) AS n FROM adult", role="analyst").sql
    assert "ROW_NUMBER" not in counted and '"workclass"' not in counted
    # one group (age, workclass): rows stay whole, the order is randomized
    one = proc.query("SELECT age, workclass FROM adult", role="analyst")
    assert "ROW_NUMBER" not in one.annotations.sql and "RAND" in one.annotations.sql.upper()
    got = Counter(map(tuple, one.to_pandas().astype(str).values.tolist()))
    assert got == Counter(map(tuple, adult[["age", "workclass"]].astype(str).values.tolist()))
    # two groups: exactly those two are sliced against each other
    two = proc.query("SELECT age, sex FROM adult", role="analyst")
    sql = two.annotations.sql
    assert helper("g1") in sql and helper("g2") not in sql  # two groups joined, no third
    frame = two.to_pandas()
    assert Counter(frame["sex"]) == Counter(adult["sex"])
    assert Counter(frame["age"]) == Counter(adult["age"])
    assert {u.columns for u in two.annotations.units} == {("age",), ("sex",)}


def test_buckets_are_stable_across_queries_and_permutations_fresh(proc: paradise.Processor) -> None:
    """Repeating a query must not re-draw buckets: otherwise co-occurrence counts over many
    answers would single out each row's true partner (probability 1/|bucket| vs 1/N)."""
    runs = []
    for _ in range(2):
        query, _ = _traced_slicing(100, "window")
        query = query.select(column(helper("bucket"), helper("g0")), append=True)
        runs.append(proc.backend.connection.sql(query.sql("duckdb")).df())
    first, second = (dict(zip(r["id0"], r[helper("bucket")], strict=True)) for r in runs)
    assert first == second
    pairs = [set(zip(r["id0"], r["id1"], strict=True)) for r in runs]
    assert len(pairs[0] & pairs[1]) < 0.05 * len(pairs[0])


def test_pipeline_buckets_do_not_depend_on_the_columns_read(
    live_proc: paradise.Processor,
) -> None:
    proc = live_proc
    narrow = proc.explain("SELECT age, sex FROM adult", role="analyst").sql
    wide = proc.explain("SELECT age, sex, race, income FROM adult", role="analyst").sql
    # both rank rows by the same row key over all visible columns
    key = "HASH(" + narrow.split("HASH(")[1].split(') AS "_paradise_rowkey"')[0]
    assert key in wide and '"income"' in key and '"occupation"' in key


@pytest.mark.parametrize(
    "split", [{"bucket_by": "race"}, {"buckets": 20, "order_by": ["age"]}], ids=["bucket_by", "order_by"]
)
def test_slicing_split_column_is_read_when_the_query_does_not_name_it(split, adult) -> None:
    """Column pruning keeps the columns slicing splits by (issue 13: it dropped them)."""
    from paradise.policy.model import RolePolicy

    role = RolePolicy.model_validate(
        {
            "role": "splitter",
            "tables": {
                "adult": {
                    "columns": {
                        "id": "identifier",
                        "age": "quasi_identifier",
                        "race": "quasi_identifier",
                        "sex": "quasi_identifier",
                        "income": "sensitive",
                    },
                    "privacy": {"k": 1, "on_violation": "report"},
                    "transform": [
                        {"slicing": {"groups": [["sex"], ["income"]], **split}}
                    ],
                }
            },
        }
    )
    proc = paradise.connect(":memory:", policies={"splitter": role})
    load_demo(proc)
    answer = proc.query("SELECT sex, income FROM adult", role="splitter")
    expected = adult.groupby(["sex"]).size().to_dict()
    got: dict[str, int] = {}
    for sex, _income in answer.rows:
        got[sex] = got.get(sex, 0) + 1
    assert got == expected
    income = proc.query("SELECT income, count(*) AS n FROM adult GROUP BY income", role="splitter")
    assert dict(income.rows) == adult.groupby("income").size().to_dict()


def test_stable_bucket_keys_are_keyed_by_the_secret(proc: paradise.Processor) -> None:
    """The order slicing cuts buckets from repeats under one key and is unrelated under
    another key or to the public row hash (which anyone could compute from a guessed row)."""
    from scipy import stats

    from paradise.anonymize.dialects import row_hash
    from paradise.anonymize.secret import draw_key

    cols = [column(c) for c in ("age", "workclass", "education", "sex")]

    def order(expr: exp.Expr) -> list[int]:
        query = exp.select(exp.alias_(expr, "k")).from_("adult").order_by("id")
        return [r[0] for r in proc.backend.connection.sql(query.sql("duckdb")).fetchall()]

    one = order(stable_row_key(cols, TEST_KEY, "0", "duckdb"))
    assert one == order(stable_row_key(cols, TEST_KEY, "0", "duckdb"))
    others = [
        order(stable_row_key(cols, draw_key(b"another server secret!", "tester"), "0", "duckdb")),
        order(stable_row_key(cols, TEST_KEY, "1", "duckdb")),  # another label
        order(row_hash(cols, "duckdb")),
    ]
    for other in others:
        rho = stats.spearmanr(one, other).statistic
        assert abs(rho) < 0.03

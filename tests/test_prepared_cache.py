"""The cache of prepared queries: per role, dialect, text and parameters; deterministic only."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

import paradise
from paradise.errors import QueryRejected
from paradise.prepared_cache import PreparedCache, prepared_key
from paradise.processor import Processor
from paradise.tools.demo_data import load_demo
from tests.conftest import live_policies


@pytest.fixture(scope="module")
def proc() -> Iterator[Processor]:
    processor = paradise.connect(":memory:", read_dialect="postgres")
    load_demo(processor)
    yield processor
    processor.close()


def test_second_run_reuses_the_preparation(proc: Processor) -> None:
    proc.refresh()
    sql = "SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex"
    first = proc.query(sql, role="analyst")
    assert len(proc._prepared) == 1 and "parse" in first.annotations.timings_ms
    second = proc.query(sql, role="analyst")
    assert second.rows == first.rows == [("Female", 10771), ("Male", 21790)]
    assert "prepare (cached)" in second.annotations.timings_ms
    assert second.annotations.sql == first.annotations.sql
    assert len(proc._prepared) == 1


def test_roles_dialects_and_parameters_do_not_share_entries(proc: Processor) -> None:
    proc.refresh()
    proc.query("SELECT fnlwgt FROM adult LIMIT 3", role="analyst")
    with pytest.raises(QueryRejected):  # fnlwgt is an identifier for the public role
        proc.query("SELECT fnlwgt FROM adult LIMIT 3", role="public")
    sql = "SELECT count(*) AS n FROM adult WHERE age > $1"
    old = proc.query(sql, role="auditor", params=[80]).rows
    young = proc.query(sql, role="auditor", params=[20]).rows
    assert old != young
    proc.query("SELECT count(*) AS n FROM adult", role="auditor", read_dialect="mysql")
    proc.query("SELECT count(*) AS n FROM adult", role="auditor")
    assert len(proc._prepared) == 5


def test_refresh_empties_the_cache(proc: Processor) -> None:
    proc.query("SELECT 1 AS one", role="analyst")
    assert len(proc._prepared) >= 1
    proc.refresh()
    assert len(proc._prepared) == 0


def test_data_dependent_preparations_are_not_cached(proc: Processor) -> None:
    live_proc = Processor(proc.backend, live_policies(proc.policies), read_dialect="postgres")
    # live, microaggregation and local suppression read the data at rewrite time
    live_proc.query("SELECT age, sex FROM adult LIMIT 5", role="statistics_office")
    assert len(live_proc._prepared) == 0


def test_preparations_over_a_release_are_cached(proc: Processor) -> None:
    proc.refresh()
    # from a release, the plan reads no data: the preparation is kept (and revalidated)
    proc.query("SELECT age, sex FROM adult LIMIT 5", role="statistics_office")
    assert len(proc._prepared) == 1


def test_cache_is_bounded_and_thread_safe() -> None:
    cache: PreparedCache[int] = PreparedCache(maxsize=8)

    def work(offset: int) -> None:
        for i in range(500):
            key = prepared_key(f"q{(i + offset) % 20}", role="r", read_dialect=None, params=None)
            assert key is not None
            cache.put(key, i)
            cache.get(key)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(cache) == 8
    assert prepared_key("q", role="r", read_dialect=None, params=[1]) != prepared_key(
        "q", role="r", read_dialect=None, params=[True]
    )

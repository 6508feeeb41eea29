"""Shared fixtures: an embedded DuckDB with the demo data, the original Adult rows."""

from __future__ import annotations

import os

import pytest

import paradise
from paradise.backends.base import ResultSet
from paradise.backends.duckdb import DuckDBBackend
from paradise.policy import PolicySet
from paradise.tools.demo_data import load_demo

# The server secret keyed draws and pseudonyms derive from (paradise.anonymize.secret):
# seeded policies (statistics_office) are refused without one. Tests of the unconfigured
# case remove it with monkeypatch.
TEST_SECRET = "paradise test-suite secret, never used in production"
os.environ.setdefault("PARADISE_SECRET", TEST_SECRET)


class RecordingDuckDB(DuckDBBackend):
    """A real DuckDB backend that also records every statement it was asked to run."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.statements: list[str] = []

    def execute(self, sql: str) -> ResultSet:
        self.statements.append(sql)
        return super().execute(sql)


@pytest.fixture(scope="session")
def proc() -> paradise.Processor:
    """A processor on in-memory DuckDB with the bundled policies and Adult loaded."""
    backend = RecordingDuckDB()
    processor = paradise.connect(backend)
    load_demo(processor)
    processor.catalog()  # read once now: a test that counts statements must not see it
    return processor


def live_policies(policies: PolicySet) -> PolicySet:
    """``policies`` with every table recomputed per query (``release: {mode: live}``)."""
    from paradise.policy.release import ReleasePolicy

    live = ReleasePolicy(mode="live", acknowledge_averaging=True)
    return {
        role: policy.model_copy(
            update={
                "tables": {
                    name: table.model_copy(update={"release": live})
                    for name, table in policy.tables.items()
                }
            }
        )
        for role, policy in policies.items()
    }


@pytest.fixture(scope="session")
def live_proc(proc: paradise.Processor) -> paradise.Processor:
    """A processor over ``proc``'s database that recomputes every table per query (no
    releases): for tests of the operators' live SQL."""
    return paradise.Processor(proc.backend, live_policies(proc.policies))


@pytest.fixture(scope="session")
def adult(proc: paradise.Processor):
    """The stored Adult table as a pandas DataFrame (read directly, not through paradise)."""
    return proc.backend.connection.sql("SELECT * FROM adult ORDER BY id").df()


from hypothesis import settings  # noqa: E402

settings.register_profile("ci", max_examples=50, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile(__import__("os").environ.get("HYPOTHESIS_PROFILE", "dev"))

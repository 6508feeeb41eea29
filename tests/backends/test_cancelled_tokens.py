"""A cancel reaches the statements its query starts later, on every backend.

A query runs several statements (its release check, its answer, a rebuild); a cancel that
arrives between two of them, or before one on another thread has started, must still end
the query. Real engines, real tokens; nothing is simulated.
"""

from __future__ import annotations

import pytest

from paradise.backends.cancel import query_token
from paradise.errors import ParadiseError
from tests.backends.conftest import Database


def test_a_statement_started_after_its_query_was_cancelled_is_refused(
    database: Database,
) -> None:
    backend = database.connect()
    try:
        cancelled, other = object(), object()
        with query_token(cancelled):
            assert backend.execute("SELECT 1 AS x").rows == [(1,)]
        backend.interrupt(cancelled)  # type: ignore[call-arg]  # nothing runs just now
        with query_token(cancelled), pytest.raises(ParadiseError) as info:
            backend.execute("SELECT 2 AS x")
        assert info.value.sqlstate == "57014"
        with query_token(other):  # another query is not touched
            assert backend.execute("SELECT 3 AS x").rows == [(3,)]
        assert backend.execute("SELECT 4 AS x").rows == [(4,)]  # nor one without a token
    finally:
        backend.close()


def test_cancelling_every_query_is_not_remembered(database: Database) -> None:
    """``interrupt()`` without a token stops what runs now, not every later query."""
    backend = database.connect()
    try:
        backend.interrupt()
        with query_token(object()):
            assert backend.execute("SELECT 1 AS x").rows == [(1,)]
        assert backend.execute("SELECT 1 AS x").rows == [(1,)]
    finally:
        backend.close()

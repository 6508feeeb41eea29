"""A bounded cache of prepared (checked and rewritten) queries, keyed by role and SQL text.

Parsing, qualifying and rewriting cost about a millisecond per query; a proxy or an
application that sends the same statement again under the same role gets the same
:class:`~paradise.pipeline.Prepared` back. Only *deterministic* preparations are kept:
one that read the database at rewrite time (operators with rewrite-time aggregates,
e.g. MDAV groups or suppression counts) is never cached, since its SQL depends on the
data. Randomness lives in the generated SQL (``RANDOM()``), so a cached statement
still draws fresh noise and permutations on every run. :meth:`Processor.refresh
<paradise.processor.Processor.refresh>` empties the cache (catalog or policy changes).

Example:
    >>> cache = PreparedCache(maxsize=2)
    >>> key = prepared_key("SELECT 1", role="analyst", read_dialect="postgres", params=[1, "1"])
    >>> key
    ('analyst', 'postgres', 'SELECT 1', (('int', 1), ('str', '1')))
    >>> cache.put(key, "prepared"); cache.get(key), len(cache)
    ('prepared', 1)
    >>> prepared_key("SELECT 1", role="a", read_dialect=None, params=[[1]]) is None  # unhashable
    True
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["PreparedCache", "prepared_key"]

V = TypeVar("V")


def prepared_key(
    sql: str, *, role: str, read_dialect: str | None, params: Sequence[Any] | None
) -> tuple[Hashable, ...] | None:
    """The cache key of a query, or ``None`` if its parameters cannot be part of a key.

    Parameter values are keyed with their type name, so ``1``, ``True`` and ``"1"`` differ.
    """
    values: tuple[tuple[str, Any], ...] = ()
    if params:
        values = tuple((type(p).__name__, p) for p in params)
        try:
            hash(values)
        except TypeError:
            return None
    return (role, read_dialect, sql, values)


class PreparedCache(Generic[V]):
    """A thread-safe least-recently-used mapping with at most ``maxsize`` entries."""

    def __init__(self, maxsize: int = 1024) -> None:
        self.maxsize = maxsize
        self._entries: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

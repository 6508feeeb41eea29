"""Reserved names of releases: the tables, the metadata table and the build locks.

Every name starts with ``_paradise_``, a prefix no user query can name: a table reference
must resolve to a table the role's policy lists (:mod:`paradise.rewrite.resolve_tables`),
and CTE names with the prefix are refused. Names stay within the 63/64-character limits of
PostgreSQL and MariaDB: long role or table names are shortened, and a digest of the
exact (role, table) pair keeps two pairs from sharing a name.

Example:
    >>> release_table("statistics_office", "adult", 3)
    '_paradise_rel_statistics_off_adult_465ad4_v3'
    >>> len(release_table("r" * 80, "t" * 80, 99999) + "_s12") <= 63
    True
"""

from __future__ import annotations

import hashlib

__all__ = ["METADATA_TABLE", "TABLE_PREFIX", "lock_key", "release_prefix", "release_table"]

METADATA_TABLE = "_paradise_releases"
"""One row per built (or failed) release version."""

TABLE_PREFIX = "_paradise_rel_"
"""Release tables are named ``_paradise_rel_<role>_<table>_<digest>_v<version>``."""

_PART = 14  # characters kept of the role and of the table name (names stay <= 63 with a
# version and a build-stage suffix)


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text.lower())[:_PART]


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def release_prefix(role: str, table: str) -> str:
    """The common prefix of every version of the release of (``role``, ``table``)."""
    return f"{TABLE_PREFIX}{_slug(role)}_{_slug(table)}_{_digest(role, table)[:6]}_v"


def release_table(role: str, table: str, version: int) -> str:
    """The table holding version ``version`` of the release of (``role``, ``table``)."""
    return f"{release_prefix(role, table)}{version}"


def lock_key(schema: str, role: str, table: str) -> tuple[int, str]:
    """The build lock of a release: a signed 64-bit key (PostgreSQL advisory locks) and a
    name of at most 64 characters (MariaDB ``GET_LOCK``), both unique per schema."""
    digest = _digest("paradise-release", schema, role, table)
    number = int(digest[:16], 16)
    if number >= 2**63:
        number -= 2**64
    return number, f"paradise_release_{digest[:40]}"

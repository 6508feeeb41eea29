"""Releases: a role's anonymized relation of a table, materialized once inside the database.

A release is built, verified and versioned once and then read by every query of the
role instead of recomputing the table's operators (:mod:`paradise.release.manager`), so
repeated questions see the same randomization and run at the speed of a plain table.
Policies choose per table (``release:``, :mod:`paradise.policy.release`).

Modules: ``names`` (reserved names), ``key`` (the keyed contributor key), ``fingerprint``
(has the source changed?), ``lock`` (one builder at a time), ``store`` (the metadata
table), ``verify`` (k and l in SQL), ``relation`` (the plan of a query over a release),
``build`` (one build) and ``manager`` (what to serve, when to rebuild).
"""

from __future__ import annotations

from paradise.release.build import ReleaseSpec, build_release, drop_release, spec_for
from paradise.release.manager import Releases, ReleaseSource
from paradise.release.names import METADATA_TABLE, TABLE_PREFIX, release_table
from paradise.release.store import ReleaseRecord, load_records

__all__ = [
    "METADATA_TABLE",
    "TABLE_PREFIX",
    "ReleaseRecord",
    "ReleaseSource",
    "ReleaseSpec",
    "Releases",
    "build_release",
    "drop_release",
    "load_records",
    "release_table",
    "spec_for",
]

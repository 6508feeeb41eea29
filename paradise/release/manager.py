"""Which release a query reads, and when a release is (re)built: :class:`Releases`.

A processor holds one :class:`Releases`. The pipeline asks it, per stored table a query
reads, for the table's plan (:meth:`Releases.plan`): ``None`` for tables served live,
otherwise a plan whose relation reads the current release. Before it answers, it makes
sure the release may be served:

* no release yet, or one built under another policy digest (policy, catalog columns or
  keys changed): build one first, whatever the refresh rule says;
* ``refresh: on_change``: compare the source fingerprint (before every answer, or at most
  every ``check_every``); changed: rebuild first;
* ``refresh: every <d>``: once the release is older than ``d``, compare; changed: rebuild;
* ``refresh: manual``: serve it; answers say how old it is.

A rebuild that fails keeps the current version (its answers then carry a note), and the
same failure is not retried until the source or the policy changes. One statement per
answer reads the current version from the metadata table (and the fingerprint where a
comparison is due), so processes sharing a database serve the same version.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from paradise.anonymize.base import RewriteDatabase
from paradise.backends.base import Backend
from paradise.backends.pool import QueryCancelled
from paradise.errors import BackendError, ParadiseError
from paradise.plan import TablePlan
from paradise.release import store
from paradise.release.background import in_background
from paradise.release.build import ReleaseSpec, build_release, drop_release, spec_for
from paradise.release.fingerprint import CHECKSUM, fingerprint_query, fingerprint_values
from paradise.release.relation import release_plan
from paradise.release.store import ReleaseRecord
from paradise.rewrite.context import RewriteContext

__all__ = ["ReleaseSource", "Releases"]

_PLAN_CACHE_SIZE = 512


@dataclass
class _State:
    """What this process knows about the release of one (role, table)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    record: ReleaseRecord | None = None
    checked_at: float = float("-inf")  # monotonic time of the last fingerprint match
    failure: tuple[str, str, ParadiseError] | None = None  # (fingerprint, digest, error)
    note: str | None = None


def _uses_checksum(record: ReleaseRecord | None) -> bool:
    return record is not None and record.fingerprint.startswith(CHECKSUM + ":")


class ReleaseSource:
    """The pipeline's view of releases: a plan per table, or None to plan it live."""

    def plan(
        self,
        ctx: RewriteContext,
        table: str,
        *,
        needed: frozenset[str],
        contributor: bool,
    ) -> TablePlan | None:
        raise NotImplementedError

    def current(self, ctx: RewriteContext, plans: Mapping[str, TablePlan]) -> bool:
        """Whether every release ``plans`` read is still the one to serve."""
        raise NotImplementedError

    def current_later(
        self, ctx: RewriteContext, plans: Mapping[str, TablePlan]
    ) -> Callable[[], bool]:
        """Start :meth:`current`; the returned call waits for its verdict.

        The caller runs its answer in between and serves it only on ``True``. Here the
        check runs at once; :class:`Releases` runs it beside the answer where it can.
        """
        verdict = self.current(ctx, plans)
        return lambda: verdict

    def annotation(self, plan: TablePlan) -> dict[str, Any] | None:
        """The release part of a table's annotation (version, age, refresh, notes)."""
        raise NotImplementedError


class Releases(ReleaseSource):
    """Releases of one database, shared by every query of a processor (thread-safe).

    Args:
        backend: the database; builds use its ``run()`` path, checks its ``execute()``.
        database: rewrite-time database access for operators while a release is built.
        build: whether a missing or stale release may be built (False: serve what exists,
            plan the rest live; used by ``explain``).
    """

    def __init__(
        self,
        backend: Backend,
        database: Callable[[], RewriteDatabase],
        *,
        build: bool = True,
    ) -> None:
        self.backend = backend
        self._database = database
        self._build = build
        self._lock = threading.Lock()
        self._states: dict[tuple[str, str], _State] = {}
        self._plans: dict[tuple[Any, ...], TablePlan] = {}
        self._specs: dict[tuple[str, str], tuple[Any, Any, ReleaseSpec]] = {}
        self._sql: dict[tuple[Any, ...], tuple[str, int]] = {}
        self.builds = 0
        """Releases this object built (a process-local count, for tests and benchmarks)."""

    def without_builds(self) -> Releases:
        """A view that serves existing releases but never builds (shares this state)."""
        view = Releases(self.backend, self._database, build=False)
        view._states, view._plans, view._specs = self._states, self._plans, self._specs
        view._sql = self._sql
        view._lock = self._lock
        return view

    # --- the pipeline's hook ------------------------------------------------------------
    def plan(
        self,
        ctx: RewriteContext,
        table: str,
        *,
        needed: frozenset[str],
        contributor: bool,
    ) -> TablePlan | None:
        policy = ctx.bound_policy(table)
        if policy is None or policy.release_mode != "materialized":
            return None
        spec = self.spec(ctx, table)
        record = self._serve(spec)
        if record is None:
            return None
        key = (spec.role, spec.table, record.version, record.built_at, needed, contributor)
        with self._lock:
            cached = self._plans.get(key)
        if cached is not None:
            return cached
        plan = release_plan(
            spec.table,
            spec.policy,
            record.plan,
            record.release_table,
            spec.schema,
            needed,
            contributor=contributor,
            release={
                "version": record.version,
                "built_at": record.built_at,
                "role": spec.role,
            },
        )
        with self._lock:
            if len(self._plans) >= _PLAN_CACHE_SIZE:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def current(self, ctx: RewriteContext, plans: Mapping[str, TablePlan]) -> bool:
        for plan in plans.values():
            if plan.release is None:
                continue
            record = self._serve(self.spec(ctx, plan.table))
            if record is None or (record.version, record.built_at) != (
                plan.release["version"],
                plan.release["built_at"],
            ):
                return False
        return True

    def current_later(
        self, ctx: RewriteContext, plans: Mapping[str, TablePlan]
    ) -> Callable[[], bool]:
        """:meth:`current` on another query session while the caller runs its answer.

        Only where the backend's query sessions are independent (``concurrent_reads``:
        paradise's DuckDB, PostgreSQL and MySQL backends); otherwise, and where no release
        is read, the check runs before this returns. See :mod:`paradise.release.background`.
        """
        if not any(plan.release is not None for plan in plans.values()):
            return lambda: True
        if not getattr(self.backend, "concurrent_reads", False):
            return super().current_later(ctx, plans)
        return in_background(lambda: self.current(ctx, plans))

    def annotation(self, plan: TablePlan) -> dict[str, Any] | None:
        if plan.release is None:
            return None
        info = plan.release
        state = self._states.get((info["role"], plan.table))
        spec_entry = self._specs.get((info["role"], plan.table))
        rule = spec_entry[2].policy.release if spec_entry is not None else None
        record = state.record if state is not None else None
        age = None
        if record is not None and record.version == info["version"]:
            age = record.age_seconds(time.time())
        out: dict[str, Any] = {
            "version": info["version"],
            "built_at": info["built_at"],
            "age_seconds": age,
            "refresh": rule.refresh if rule is not None else None,
        }
        if state is not None and state.note:
            out["note"] = state.note
        return out

    # --- state ---------------------------------------------------------------------------
    def spec(self, ctx: RewriteContext, table: str) -> ReleaseSpec:
        """The release spec of ``table`` for ``ctx``'s role (cached per policy and catalog)."""
        key = (ctx.role, table)
        policy = ctx.bound_policy(table)
        with self._lock:
            entry = self._specs.get(key)
        if entry is not None and entry[0] is policy and entry[1] is ctx.catalog:
            return entry[2]
        spec = spec_for(ctx, table)
        with self._lock:
            self._specs[key] = (policy, ctx.catalog, spec)
        return spec

    def _state(self, key: tuple[str, str]) -> _State:
        with self._lock:
            state = self._states.get(key)
            if state is None:
                state = self._states[key] = _State()
            return state

    def forget(self) -> None:
        """Drop what this process remembers (the database's releases stay)."""
        with self._lock:
            self._states.clear()
            self._plans.clear()
            self._specs.clear()

    # --- serving -------------------------------------------------------------------------
    def _serve(self, spec: ReleaseSpec) -> ReleaseRecord | None:
        """The version to serve for ``spec``, built or rebuilt first where the rules say."""
        state = self._state(spec.key)
        with state.lock:
            now = time.monotonic()
            record = state.record
            due = self._comparison_due(spec, record, now, state.checked_at)
            if record is not None and not due and spec.policy.release.check_every is not None:
                if record.policy_digest == spec.digest:
                    return record  # inside the check window: serve without a statement
            checksum = _uses_checksum(record)
            version, source = self._check(spec, compare=due, checksum=checksum)
            if version is None:
                record = None
            elif record is None or record.version != version:
                # another process built it, or this process has not read it yet: compare
                # against this version, as its own rule says
                record = store.load_record(
                    self.backend, spec.schema, spec.role, spec.table, version
                )
                state.checked_at = float("-inf")
                source = None
                if record is not None and self._comparison_due(
                    spec, record, now, state.checked_at
                ):
                    _v, source = self._check(spec, compare=True, checksum=_uses_checksum(record))
            state.record = record
            reason = None
            if record is None:
                reason = "missing"
            elif record.policy_digest != spec.digest:
                reason = "policy"
            elif source is not None and source != record.fingerprint:
                reason = "source"
            elif source is not None:
                state.checked_at = now
                state.note = None
            if reason is None:
                return record
            if not self._build:
                return record if reason == "source" else None
            return self._rebuild(spec, state, reason, source)

    def _comparison_due(
        self, spec: ReleaseSpec, record: ReleaseRecord | None, now: float, checked_at: float
    ) -> bool:
        """Whether the source fingerprint must be compared before serving ``record``."""
        rule = spec.policy.release
        if record is None or rule.refresh == "manual":
            return False
        interval = rule.refresh_seconds
        if interval is not None:
            old = record.age_seconds(time.time()) >= interval
            return old and now - checked_at >= interval
        return now - checked_at >= rule.check_seconds

    def _check(
        self, spec: ReleaseSpec, *, compare: bool, checksum: bool
    ) -> tuple[int | None, str | None]:
        """One statement: the current version (and the source fingerprint if ``compare``)."""
        sql, width = self._check_sql(spec, compare, checksum)
        if not getattr(self, "_metadata_seen", False):
            if not store.metadata_exists(self.backend, spec.schema):
                store.ensure_metadata(self.backend, spec.schema)
            self._metadata_seen = True
        try:
            (row,) = self.backend.execute(sql).rows
        except BackendError:
            if store.metadata_exists(self.backend, spec.schema):
                raise
            # no metadata table yet: create it (the writable path) and ask again
            store.ensure_metadata(self.backend, spec.schema)
            (row,) = self.backend.execute(sql).rows
        current = int(row[1]) if row[1] is not None else None
        if not width:
            return current, None
        return current, fingerprint_values(spec.dialect, tuple(row[2:]), checksum=checksum)

    def _check_sql(self, spec: ReleaseSpec, compare: bool, checksum: bool) -> tuple[str, int]:
        key = (spec.key, spec.schema, compare, checksum)
        with self._lock:
            cached = self._sql.get(key)
        if cached is not None:
            return cached
        version = exp.alias_(
            store.current_version(spec.schema, spec.role, spec.table), "_paradise_v", quoted=True
        )
        one = exp.Literal.number(1)  # a NULL version alone would be an empty CSV line (PG)
        query = exp.select(one, version)
        width = 0
        if compare:
            fp = fingerprint_query(spec.dialect, spec.schema, spec.table, checksum=checksum)
            width = len(fp.expressions)
            fields = [
                exp.column(f"_paradise_f{i}", "_paradise_fp", quoted=True) for i in range(width)
            ]
            query = exp.select(one.copy(), version, *fields).from_(
                fp.subquery(exp.to_identifier("_paradise_fp", quoted=True))
            )
        built = (query.sql(spec.dialect), width)
        with self._lock:
            self._sql[key] = built
        return built

    def _rebuild(
        self, spec: ReleaseSpec, state: _State, reason: str, source: str | None
    ) -> ReleaseRecord | None:
        old = state.record if reason == "source" else None
        failure = state.failure
        if failure is not None and failure[1] == spec.digest and (
            source is None or failure[0] == source
        ):
            if old is None:
                raise failure[2]
            return old
        try:
            record, built = build_release(self.backend, spec, self._database(), reuse=True)
        except ParadiseError as exc:
            if exc.sqlstate == QueryCancelled.sqlstate:  # a cancel or a timeout
                # the query that triggered it was cancelled: not a failure of this release
                # (remembered, it would serve the old version, or refuse, until the source
                # changed again); the next query builds afresh
                raise
            # the build may have changed how the source looks (DuckDB checkpoints it): the
            # fingerprint to remember is the one after the attempt
            checksum = _uses_checksum(old)
            try:
                _v, after = self._check(spec, compare=True, checksum=checksum)
            except ParadiseError:
                after = source
            state.failure = (after or "", spec.digest, exc)
            if old is None:
                raise
            state.note = (
                f"the source changed since version {old.version} was built, and the rebuild "
                f"failed ({type(exc).__name__}); serving version {old.version}"
            )
            return old
        if built:
            with self._lock:
                self.builds += 1
        state.record = record
        state.failure = None
        state.note = None
        state.checked_at = time.monotonic()
        return record

    # --- operations (CLI, library) -------------------------------------------------------
    def build(self, ctx: RewriteContext, table: str, *, force: bool = True) -> ReleaseRecord:
        """Build the release of ``table`` for ``ctx``'s role now (``force``: a new version
        even if the current one is fresh)."""
        spec = self.spec(ctx, table)
        state = self._state(spec.key)
        with state.lock:
            record, built = build_release(self.backend, spec, self._database(), reuse=not force)
            if built:
                with self._lock:
                    self.builds += 1
            state.record, state.failure, state.note = record, None, None
            state.checked_at = time.monotonic()
            return record

    def status(self, ctx: RewriteContext, table: str) -> dict[str, Any]:
        """The current version of ``table``'s release for ``ctx``'s role and whether it is
        fresh (its source fingerprint and policy digest still match)."""
        spec = self.spec(ctx, table)
        version, _ = self._check(spec, compare=False, checksum=False)
        record = (
            store.load_record(self.backend, spec.schema, spec.role, spec.table, version)
            if version is not None
            else None
        )
        fresh: bool | None = None
        if record is not None:
            _v, source = self._check(spec, compare=True, checksum=_uses_checksum(record))
            fresh = source == record.fingerprint and record.policy_digest == spec.digest
        failed = [
            r
            for r in store.load_records(self.backend, spec.schema, spec.role, spec.table)
            if r.status == store.FAILED
            and (record is None or r.version > record.version)
        ]
        return {
            "role": spec.role,
            "table": spec.table,
            "mode": spec.policy.release_mode,
            "refresh": spec.policy.release.refresh,
            "record": record,
            "fresh": fresh,
            "failed": failed[-1] if failed else None,
        }

    def drop(self, ctx: RewriteContext, table: str) -> list[str]:
        """Drop every version of ``table``'s release for ``ctx``'s role."""
        spec = self.spec(ctx, table)
        state = self._state(spec.key)
        with state.lock:
            dropped = drop_release(self.backend, spec)
            state.record, state.failure, state.note = None, None, None
            state.checked_at = float("-inf")
        with self._lock:
            self._plans.clear()
        return dropped

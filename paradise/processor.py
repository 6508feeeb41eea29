"""The library front door: ``paradise.connect(target, policies=...)`` returns a Processor.

A processor answers queries (:meth:`~Processor.query`, :meth:`~Processor.describe`,
:meth:`~Processor.explain`), builds releases (:meth:`~Processor.release`) and knows its
policies and catalog (:meth:`~Processor.context`, :meth:`~Processor.catalog`,
:meth:`~Processor.refresh`); that is all. Features are functions over it: the DB-API
connection (:mod:`paradise.dbapi`), the risk and utility report
(:func:`paradise.report.build_report`), static anonymization
(:func:`paradise.tools.anonymize_table.anonymize_table`) and the demo data
(:func:`paradise.tools.demo_data.load_demo`).

Example:
    >>> import paradise
    >>> proc = paradise.connect(":memory:", policies=paradise.bundled_policies())
    >>> from paradise.tools.demo_data import load_demo
    >>> load_demo(proc)
    >>> result = proc.query("SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex", role="analyst")
    >>> result.rows
    [('Female', 10771), ('Male', 21790)]
    >>> result.annotations.tables[0].operators[0]["operator"]
    'slicing'
"""  # noqa: E501

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paradise import pipeline
from paradise.anonymize.secret import DrawKey, ServerSecret, draw_key, resolve_secret
from paradise.backends import Backend, connect_backend
from paradise.errors import QueryRejected
from paradise.plan import TablePlan
from paradise.policy import PolicySet, RolePolicy, load_policies
from paradise.prepared_cache import PreparedCache
from paradise.release import ReleaseRecord, Releases
from paradise.result import ExplainResult, Result
from paradise.rewrite.context import RewriteContext

__all__ = ["PSEUDONYM_SECRET_ENV", "Processor", "connect"]

PSEUDONYM_SECRET_ENV = "PARADISE_PSEUDONYM_SECRET"
"""The older environment variable of the pseudonym secret (``PARADISE_SECRET`` replaces it)."""


class Processor:
    """Runs queries under role policies against one backend.

    Safe to share between threads: per-query state lives in the pipeline's
    frozen values; the only shared state is the catalog, the plan cache, the cache of
    prepared queries (:mod:`paradise.prepared_cache`) and what it knows of the releases
    (:attr:`releases`), all guarded by locks.
    """

    def __init__(
        self,
        backend: Backend,
        policies: PolicySet,
        *,
        role: str | None = None,
        read_dialect: str | None = None,
        pseudonym_secret: str | bytes | None = None,
        secret: str | bytes | None = None,
        secret_file: str | Path | None = None,
    ) -> None:
        self.backend = backend
        self.policies = dict(policies)
        self.default_role = role
        self.read_dialect = read_dialect
        self._catalog: dict[str, dict[str, str]] | None = None
        self._schema: str | None = None
        self._plans: dict[tuple[str, str, bool, frozenset[str]], TablePlan] = {}
        self._prepared: PreparedCache[pipeline.Prepared] = PreparedCache()
        # the server secret (paradise.anonymize.secret); pseudonyms keep the older,
        # pseudonym-only secret where one is given, so existing pseudonyms do not change
        self._secret = resolve_secret(secret, secret_file, legacy=pseudonym_secret)
        legacy = pseudonym_secret or os.environ.get(PSEUDONYM_SECRET_ENV) or None
        if legacy is not None:
            self._pseudonym_secret: bytes | None = (
                legacy.encode("utf-8") if isinstance(legacy, str) else legacy
            )
        else:
            self._pseudonym_secret = self._secret.value if self._secret is not None else None
        self._lock = threading.Lock()
        self.releases = Releases(backend, lambda: pipeline.BackendAccess(backend))
        """The releases of this database (:mod:`paradise.release`)."""
        if role is not None:
            self.policy(role)

    # --- policies and catalog -------------------------------------------------------------
    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(sorted(self.policies))

    def policy(self, role: str | None) -> RolePolicy:
        """The policy of ``role`` (or the default role)."""
        name = role or self.default_role
        if name is None:
            if len(self.policies) == 1:
                return next(iter(self.policies.values()))
            raise QueryRejected(
                "no role given",
                hint=f"pass role=... (one of: {', '.join(self.roles)})",
            )
        if name not in self.policies:
            raise QueryRejected(
                f'unknown role "{name}"', hint=f"known roles: {', '.join(self.roles) or 'none'}"
            )
        return self.policies[name]

    def catalog(self) -> Mapping[str, Mapping[str, str]]:
        """The backend's tables and columns (cached; :meth:`refresh` after schema changes)."""
        with self._lock:
            if self._catalog is None:
                self._catalog = self.backend.catalog()
                self._schema = self.backend.schema()
            return self._catalog

    def schema(self) -> str:
        """The schema (MySQL: database) the catalog's tables live in (cached with it)."""
        self.catalog()
        assert self._schema is not None
        return self._schema

    def refresh(self) -> None:
        """Forget the cached catalog, anonymization plans and prepared queries."""
        with self._lock:
            self._catalog = None
            self._schema = None
            self._plans.clear()
            self._prepared.clear()
        self.releases.forget()

    def context(
        self, role: str | None = None, *, read_dialect: str | None = None
    ) -> RewriteContext:
        """The rewrite context of ``role``; ``read_dialect`` overrides the processor's."""
        return RewriteContext(
            policy=self.policy(role),
            catalog=self.catalog(),
            dialect=self.backend.dialect,
            read_dialect=read_dialect or self.read_dialect,
            pseudonym_secret=self._pseudonym_secret,
            secret=self._secret,
            schema=self.schema(),
        )

    @property
    def secret(self) -> ServerSecret | None:
        """The configured server secret (None: none; see :mod:`paradise.anonymize.secret`)."""
        return self._secret

    def draw_key(self, role: str) -> DrawKey | None:
        """The key of ``role``'s repeatable draws (None: no server secret configured)."""
        return draw_key(self._secret, role) if self._secret is not None else None

    # --- queries --------------------------------------------------------------------------
    def query(
        self,
        sql: str,
        role: str | None = None,
        params: Sequence[Any] | None = None,
        *,
        read_dialect: str | None = None,
    ) -> Result:
        """Run ``sql`` under ``role``: rewritten, executed in the database, verified, annotated.

        ``read_dialect`` is the dialect ``sql`` is written in when it differs from the
        processor's (the proxy's MySQL listener passes ``"mysql"``).
        """
        ctx = self.context(role, read_dialect=read_dialect)
        return pipeline.run(
            sql,
            ctx,
            self.backend,
            params=params,
            plan_cache=self._plans,
            prepared_cache=self._prepared,
            releases=self.releases,
        )

    def describe(
        self,
        sql: str,
        role: str | None = None,
        params: Sequence[Any] | None = None,
        *,
        read_dialect: str | None = None,
    ) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """Column names and types ``query`` would answer, without reading rows (or ``None``)."""
        ctx = self.context(role, read_dialect=read_dialect)
        return pipeline.describe(sql, ctx, self.backend, params=params, plan_cache=self._plans)

    def explain(
        self, sql: str, role: str | None = None, params: Sequence[Any] | None = None
    ) -> ExplainResult:
        """The generated SQL and plan for ``sql`` under ``role``, without running it."""
        return pipeline.explain(
            sql,
            self.context(role),
            params=params,
            backend=self.backend,
            releases=self.releases.without_builds(),
        )

    # --- releases (issue 14) --------------------------------------------------------------
    def release(
        self, table: str, role: str | None = None, *, rebuild: bool = False
    ) -> ReleaseRecord:
        """Make sure ``table`` has a current, fresh release for ``role``; return it.

        Builds one if there is none, or if the source or the policy changed since the
        current one was built; ``rebuild`` builds a new version in any case. Queries of the
        role read it where the table's policy says ``release: {mode: materialized}`` (the
        default for randomizing operators). See :mod:`paradise.release`.
        """
        ctx = self.context(role)
        canonical = _canonical(ctx.catalog, table)
        return self.releases.build(ctx, canonical, force=rebuild)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Processor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _canonical(catalog: Mapping[str, Any], table: str) -> str:
    """The catalog's spelling of ``table`` (unchanged if the catalog has no such table)."""
    if table in catalog:
        return table
    matches = [name for name in catalog if name.lower() == table.lower()]
    return matches[0] if len(matches) == 1 else table


def connect(
    target: str | Backend = ":memory:",
    *,
    policies: str | Path | PolicySet | None = None,
    role: str | None = None,
    read_dialect: str | None = None,
    pseudonym_secret: str | bytes | None = None,
    secret: str | bytes | None = None,
    secret_file: str | Path | None = None,
) -> Processor:
    """Open a processor on ``target`` (DuckDB path, ``:memory:`` or database URL).

    Args:
        target: where the data lives, or an open backend.
        policies: a directory of role policy YAML files, or loaded policies
            (default: the bundled example policies).
        role: the default role for queries (and for DB-API cursors over the processor).
        read_dialect: the SQL dialect queries are written in (default: the backend's).
        secret: the server secret that keyed draws (seeded noise and PRAM, slicing's
            stable buckets) and pseudonyms are derived from; server configuration,
            never a value from the querying user. Default: ``secret_file``, then the
            environment variables ``PARADISE_SECRET`` and ``PARADISE_SECRET_FILE`` (see
            :mod:`paradise.anonymize.secret`).
        secret_file: a file holding the server secret.
        pseudonym_secret: the older, pseudonym-only secret (default: the environment
            variable ``PARADISE_PSEUDONYM_SECRET``); where given it keeps deciding the
            pseudonyms, and it serves as the server secret when no other is configured.
    """
    backend = connect_backend(target) if isinstance(target, str) else target
    if policies is None:
        policies = bundled_policies()
    loaded = load_policies(policies) if isinstance(policies, str | Path) else policies
    return Processor(
        backend,
        loaded,
        role=role,
        read_dialect=read_dialect,
        pseudonym_secret=pseudonym_secret,
        secret=secret,
        secret_file=secret_file,
    )


def bundled_policies() -> Path:
    """The directory of the example policies shipped with paradise."""
    return Path(__file__).parent / "data" / "policies"

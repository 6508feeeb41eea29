"""The typed context every rewrite rule receives."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from paradise.anonymize.secret import ServerSecret
from paradise.policy.model import RolePolicy, TablePolicy

__all__ = ["Catalog", "RewriteContext"]

Catalog = Mapping[str, Mapping[str, str]]
"""table name -> {column name -> SQL type}, in the backend's column order."""


@dataclass(frozen=True)
class RewriteContext:
    """What the rewrite of one query may use: the role's policy, the catalog, the dialect.

    Attributes:
        policy: the role's policy.
        catalog: the backend's tables and columns (lower-case table names as keys).
        dialect: sqlglot dialect the SQL is generated for.
        read_dialect: sqlglot dialect the user's SQL is parsed in.
        pseudonym_secret: the server's secret for keyed pseudonyms (never from the user).
        secret: the server secret keyed draws are derived from (None: none configured).
        schema: the schema the catalog's tables live in; anonymized relations read them
            schema-qualified (None: unqualified).
    """

    policy: RolePolicy
    catalog: Catalog
    dialect: str
    read_dialect: str | None = None
    tables_used: dict[str, str] = field(default_factory=dict, compare=False)
    pseudonym_secret: bytes | None = field(default=None, repr=False, compare=False)
    secret: ServerSecret | None = field(default=None, repr=False, compare=False)
    schema: str | None = None

    @property
    def role(self) -> str:
        return self.policy.role

    def table_policy(self, table: str) -> TablePolicy | None:
        return self.policy.table(table)

    def bound_policy(self, table: str) -> TablePolicy | None:
        """The policy entry of the catalog table ``table`` (its exact, canonical name).

        A policy names a table exactly, or in another letter case when the catalog holds
        exactly one table of that name in any case; a catalog table that only resembles a
        policy entry while another table matches it exactly is bound to nothing.
        """
        if table in self.policy.tables:
            return self.policy.tables[table]
        lowered = table.lower()
        for key, value in self.policy.tables.items():
            if key.lower() != lowered or key in self.catalog:
                continue
            if sum(1 for name in self.catalog if name.lower() == lowered) == 1:
                return value
        return None

    def columns_of(self, table: str) -> Mapping[str, str] | None:
        """The backend columns of ``table`` (case-insensitive lookup), or None."""
        if table in self.catalog:
            return self.catalog[table]
        lowered = table.lower()
        for name, cols in self.catalog.items():
            if name.lower() == lowered:
                return cols
        return None

    def visible_schema(self, table: str) -> dict[str, str]:
        """The columns of ``table`` the role may see, with their types."""
        cols = self.columns_of(table) or {}
        tp = self.bound_policy(table)
        if tp is None:
            return {}
        visible = tp.visible_columns(cols)
        pseudonyms = tp.pseudonym_columns()
        return {c: "VARCHAR" if c in pseudonyms else cols[c] for c in visible}

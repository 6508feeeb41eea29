"""Typed, frozen policy models (DESIGN §3).

A *role policy* says, per table, which columns a role may see and how they are
classified, which privacy model the answer must meet, and which anonymization
operators turn the stored table into the relation the role queries.

Example:
    >>> policy = RolePolicy.model_validate({
    ...     "role": "analyst",
    ...     "tables": {"adult": {
    ...         "columns": {"id": "identifier", "age": "quasi_identifier", "income": "sensitive"},
    ...         "privacy": {"k": 5, "l": 2},
    ...         "transform": [{"slicing": {"groups": [["age"], ["income"]], "buckets": 10}}],
    ...     }},
    ... })
    >>> policy.tables["adult"].visible_columns(["id", "age", "income"])
    ('age', 'income')
    >>> policy.tables["adult"].transform[0].name
    'slicing'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from paradise.policy.operators import OperatorParams, operator_names, operator_params
from paradise.policy.preferences import Preferences
from paradise.policy.release import ReleasePolicy, default_mode, randomized

__all__ = [
    "AggregateRules",
    "CellSuppression",
    "ColumnClass",
    "ColumnRule",
    "OnViolation",
    "Preferences",
    "PrivacyModel",
    "Release",
    "ReleasePolicy",
    "RolePolicy",
    "Step",
    "TablePolicy",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ColumnClass(StrEnum):
    """How a column is treated: identifiers are never released."""

    IDENTIFIER = "identifier"
    QUASI_IDENTIFIER = "quasi_identifier"
    SENSITIVE = "sensitive"
    INSENSITIVE = "insensitive"


class OnViolation(StrEnum):
    """What verification does with result rows that break k-anonymity / l-diversity.

    ``suppress`` sets the quasi-identifier values of violating rows to NULL,
    ``refuse`` raises :class:`~paradise.errors.VerificationError`, and
    ``report`` releases the answer and only annotates the achieved k and l. ``report``
    is allowed only for tables that are transformed by an operator whose own
    guarantee the policy relies on (e.g. slicing's bucket permutation).
    """

    SUPPRESS = "suppress"
    REFUSE = "refuse"
    REPORT = "report"


class Release(StrEnum):
    """How an identifier column is released: never (the default) or as a keyed pseudonym."""

    NEVER = "never"
    PSEUDONYM = "pseudonym"


class ColumnRule(_Frozen):
    """A column's classification (YAML: ``age: quasi_identifier`` or ``age: {class: ...}``).

    ``release: pseudonym`` (identifiers only) releases the column as a keyed HMAC-SHA256
    pseudonym (see :mod:`paradise.anonymize.pseudonym`) instead of hiding it.

    Example:
        >>> ColumnRule.model_validate({"class": "identifier", "release": "pseudonym"}).release
        <Release.PSEUDONYM: 'pseudonym'>
    """

    class_: ColumnClass = Field(alias="class")
    release: Release = Release.NEVER

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"class": value}
        return value

    @model_validator(mode="after")
    def _release_only_identifiers(self) -> ColumnRule:
        if self.release is Release.PSEUDONYM and self.class_ is not ColumnClass.IDENTIFIER:
            raise ValueError("release: pseudonym is only allowed for class identifier")
        return self


class PrivacyModel(_Frozen):
    """The privacy model a released answer must meet."""

    k: int = Field(default=1, ge=1, description="smallest equivalence class on quasi-identifiers")
    l: int | None = Field(  # noqa: E741
        default=None, ge=1, description="distinct l-diversity of sensitive columns"
    )
    on_violation: OnViolation = OnViolation.SUPPRESS


class Step(_Frozen):
    """One anonymization operator with its validated parameters."""

    name: str
    params: OperatorParams

    @model_validator(mode="before")
    @classmethod
    def _from_mapping(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, Mapping) and set(value) != {"name", "params"}:
            if len(value) != 1:
                raise ValueError(
                    "each transform step is a mapping with exactly one operator name, "
                    f"one of: {', '.join(operator_names())}"
                )
            ((name, params),) = value.items()
            model = operator_params(name)
            if model is None:
                raise ValueError(
                    f"unknown operator {name!r}; known operators: {', '.join(operator_names())}"
                )
            # the validation context (e.g. the policy file's directory, for an
            # operator's mapping files) reaches the operator's parameters
            validated = model.model_validate(params or {}, context=info.context)
            return {"name": name, "params": validated}
        return value


class CellSuppression(_Frozen):
    """Hierarchical cell suppression of ROLLUP results (seed 002).

    Values in ``[min, max]`` at the lowest level are suppressed (published as the
    interval ``min-max``); secondary and tertiary suppression protect them from
    the totals; ``function`` picks the partner cell; the audit proves the result.
    """

    min: float = Field(ge=0)
    max: float
    function: Literal["max", "min"] = "max"

    @model_validator(mode="after")
    def _order(self) -> CellSuppression:
        if self.max < self.min:
            raise ValueError("cell_suppression.max must be >= min")
        return self


class AggregateRules(_Frozen):
    """What aggregate queries over a table must respect (DESIGN §4.6).

    Attributes:
        min_cell_size: the smallest number of distinct contributors a released group
            may have: distinct data subjects where the table declares a ``subject_key``,
            else distinct rows of the table (repeating a row never adds a contributor).
        count: states what a cell's size counts; ``subjects`` needs the table's
            ``subject_key`` and ``rows`` is refused where one is declared (one person's
            many rows would fill a cell). Absent: subjects if declared, else rows.
        allowed: aggregate function -> columns it may be applied to (``"*"``:
            any visible column). Absent: every aggregate on every visible column.
        small_cells: what happens to a group below ``min_cell_size``: ``suppress``
            (its aggregate values become NULL), ``interval`` (published as the
            interval ``1-(min_cell_size-1)`` for counts, NULL otherwise), ``refuse``.
        detail: ``allow`` row-level queries, or ``refuse`` them (aggregate use only).
        cell_suppression: hierarchical suppression of ``GROUP BY ROLLUP`` results.
    """

    min_cell_size: int = Field(default=1, ge=1)
    count: Literal["rows", "subjects"] | None = None
    allowed: dict[str, tuple[str, ...]] | None = None
    small_cells: Literal["suppress", "interval", "refuse"] = "suppress"
    detail: Literal["allow", "refuse"] = "allow"
    cell_suppression: CellSuppression | None = None

    @field_validator("allowed")
    @classmethod
    def _lower(cls, value: dict[str, tuple[str, ...]] | None) -> dict[str, tuple[str, ...]] | None:
        if value is None:
            return None
        known = {"count", "sum", "avg", "min", "max", "stddev", "variance", "median"}
        for name in value:
            if name.lower() not in known:
                raise ValueError(f"unknown aggregate {name!r}; known: {', '.join(sorted(known))}")
        return {k.lower(): v for k, v in value.items()}


class TablePolicy(_Frozen):
    """What one role may see of one table, and how it is anonymized."""

    columns: dict[str, ColumnRule]
    privacy: PrivacyModel = PrivacyModel()
    transform: tuple[Step, ...] = ()
    aggregates: AggregateRules | None = None
    subject_key: str | None = None
    preferences: Preferences | None = None
    release: ReleasePolicy = ReleasePolicy()
    description: str | None = None

    @field_validator("columns")
    @classmethod
    def _columns_not_empty(cls, value: dict[str, ColumnRule]) -> dict[str, ColumnRule]:
        if not value:
            raise ValueError("a table policy must classify at least one column")
        return value

    @model_validator(mode="after")
    def _check_consistency(self) -> TablePolicy:
        if self.privacy.on_violation is OnViolation.REPORT and not self.transform:
            raise ValueError(
                "privacy.on_violation 'report' needs a transform whose guarantee the policy "
                "relies on; use 'suppress' or 'refuse' for untransformed tables"
            )
        if self.privacy.l is not None and not self.columns_of(ColumnClass.SENSITIVE):
            raise ValueError("privacy.l is set but no column is classified 'sensitive'")
        for step in self.transform:
            step.params.check_columns(self.columns)
        rules = self.aggregates
        if rules is not None:
            if rules.count == "rows" and self.subject_key is not None:
                raise ValueError(
                    "aggregates.count 'rows' counts one person's rows as many contributors; "
                    f"this table declares subject_key {self.subject_key!r}, so cells count "
                    "distinct subjects (remove aggregates.count)"
                )
            if rules.count == "subjects":
                if self.subject_key is None:
                    raise ValueError("aggregates.count 'subjects' needs the table's subject_key")
                if any(s.name == "slicing" for s in self.transform):
                    raise ValueError(
                        "aggregates.count 'subjects' cannot be used with slicing: the subject "
                        "key would not stay linked to the grouped columns"
                    )
            for func, cols in (rules.allowed or {}).items():
                for col in cols:
                    if col != "*" and self.class_of(col) in (None, ColumnClass.IDENTIFIER):
                        raise ValueError(
                            f"aggregates.allowed.{func} names {col!r}, "
                            "which is not a visible column"
                        )
        return self

    @model_validator(mode="after")
    def _check_subjects(self) -> TablePolicy:
        if self.subject_key is not None and self.subject_key not in self.columns:
            raise ValueError(f"subject_key {self.subject_key!r} is not a classified column")
        if self.subject_key is not None and any(s.name == "slicing" for s in self.transform):
            raise ValueError(
                "slicing cannot be combined with subject_key: it separates the subject from "
                "the column groups, so contributors could not be counted as people"
            )
        if self.preferences is not None:
            if self.subject_key is None:
                raise ValueError("preferences need the table's subject_key")
            for name in self.preferences.coarsen:
                if name not in self.columns:
                    raise ValueError(f"preferences.coarsen names unknown column {name!r}")
        self._check_release()
        return self

    def _check_release(self) -> None:
        rule = self.release
        drawn = randomized(step.name for step in self.transform)
        if rule.acknowledge_averaging and rule.mode != "live":
            raise ValueError("release.acknowledge_averaging only applies to release.mode 'live'")
        if rule.mode == "live" and drawn and not rule.acknowledge_averaging:
            raise ValueError(
                f"release.mode 'live' recomputes {', '.join(drawn)} for every answer, so "
                "averaging answers undoes the randomization; set "
                "release.acknowledge_averaging: true to accept that, or use 'materialized'"
            )
        if self.preferences is not None and self.release_mode == "materialized":
            raise ValueError(
                "release.mode 'materialized' is not available for tables with preferences "
                "(they shape rows per query); set release.mode: live"
                + (" with release.acknowledge_averaging: true" if drawn else "")
            )

    @property
    def release_mode(self) -> Literal["materialized", "live"]:
        """``release.mode``, or its default from the table's operators."""
        return self.release.mode or default_mode(step.name for step in self.transform)

    def pseudonym_columns(self) -> tuple[str, ...]:
        """Identifier columns released as keyed pseudonyms, in policy order."""
        return tuple(n for n, r in self.columns.items() if r.release is Release.PSEUDONYM)

    def columns_of(self, *classes: ColumnClass) -> tuple[str, ...]:
        """Names of the policy's columns in the given classes, in policy order."""
        return tuple(name for name, rule in self.columns.items() if rule.class_ in classes)

    def class_of(self, column: str) -> ColumnClass | None:
        """The class of ``column`` (None: not classified, hence hidden)."""
        rule = self.columns.get(column)
        return None if rule is None else rule.class_

    def visible_columns(self, table_columns: Iterable[str]) -> tuple[str, ...]:
        """The table's columns this role may see, in table order.

        Identifiers and columns the policy does not classify are hidden (fail closed).
        """
        hidden = {ColumnClass.IDENTIFIER, None}
        pseudonyms = set(self.pseudonym_columns())
        return tuple(c for c in table_columns if self.class_of(c) not in hidden or c in pseudonyms)


class RolePolicy(_Frozen):
    """All rules of one role (one YAML file in ``policies/``)."""

    role: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$")
    description: str | None = None
    tables: dict[str, TablePolicy] = {}

    def table(self, name: str) -> TablePolicy | None:
        """The policy for ``name`` (case-insensitive), or None if the role may not read it."""
        if name in self.tables:
            return self.tables[name]
        lowered = name.lower()
        for key, value in self.tables.items():
            if key.lower() == lowered:
                return value
        return None

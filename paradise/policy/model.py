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
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from paradise.anonymize.registry import OPERATORS, OperatorParams

__all__ = [
    "ColumnClass",
    "ColumnRule",
    "OnViolation",
    "PrivacyModel",
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


class ColumnRule(_Frozen):
    """A column's classification (YAML: ``age: quasi_identifier`` or ``age: {class: ...}``)."""

    class_: ColumnClass = Field(alias="class")

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"class": value}
        return value


class PrivacyModel(_Frozen):
    """The privacy model a released answer must meet."""

    k: int = Field(default=1, ge=1, description="smallest equivalence class on quasi-identifiers")
    l: int | None = Field(
        default=None, ge=1, description="distinct l-diversity of sensitive columns"
    )  # noqa: E741
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
                    f"one of: {', '.join(sorted(OPERATORS))}"
                )
            ((name, params),) = value.items()
            if name not in OPERATORS:
                raise ValueError(
                    f"unknown operator {name!r}; known operators: {', '.join(sorted(OPERATORS))}"
                )
            model = OPERATORS[name].Params
            # the validation context (e.g. the policy file's directory, for an
            # operator's mapping files) reaches the operator's parameters
            validated = model.model_validate(params or {}, context=info.context)
            return {"name": name, "params": validated}
        return value


class TablePolicy(_Frozen):
    """What one role may see of one table, and how it is anonymized."""

    columns: dict[str, ColumnRule]
    privacy: PrivacyModel = PrivacyModel()
    transform: tuple[Step, ...] = ()
    subject_key: str | None = None
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
        return self

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
        return tuple(c for c in table_columns if self.class_of(c) not in hidden)


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

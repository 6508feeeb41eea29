"""Data subjects' own preferences (PArADISE's "Privatheitsansprüche", DESIGN §3 (2)).

A table's policy may name a *preferences source*: per data subject (keyed by the
table's ``subject_key``) the rules that person set about their own data. Rules are
held in *long form*, one rule per row, so the same SQL serves a table in the
database and a YAML file:

=========  =================================================================
column     meaning
=========  =================================================================
subject    the subject's key (the data table's ``subject_key`` value)
rule       ``withhold`` (do not share ``attribute``; ``*`` = nothing at all),
           ``aggregate_only`` (use my rows in aggregates only), or
           ``coarsen`` (release ``attribute`` no finer than ``level``)
attribute  a column of the data table (``withhold``, ``coarsen``)
level      a coarsening level declared in the policy (``coarsen``)
purpose    the role the rule is for; NULL/absent: every role
=========  =================================================================

Anything paradise does not understand fails closed: an unknown rule, or a rule
naming a column the table does not have, excludes the subject's rows; an unknown
coarsening level, or a ``coarsen`` rule for a column the policy declares no
levels for, withholds that value.

Example:
    >>> prefs = Preferences.model_validate({"table": "subject_preferences", "subject": "sid",
    ...     "coarsen": {"ts": "time", "room": {"zone": {"kitchen": "day area"}}}})
    >>> prefs.coarsen["ts"].levels
    ('minute', 'hour', 'day', 'month', 'year')
    >>> prefs.coarsen["room"].levels, prefs.coarsen["room"].kind
    (('zone',), 'mapping')
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

__all__ = [
    "PREFERENCE_COLUMNS",
    "RULES",
    "TIME_LEVELS",
    "Coarsening",
    "PreferenceRow",
    "Preferences",
    "SubjectRule",
]

RULES = ("withhold", "aggregate_only", "coarsen")
"""The rule names a preferences source may use."""

TIME_LEVELS = ("minute", "hour", "day", "month", "year")
"""Levels of a ``time`` coarsening, finest first (no ``week``: engines disagree on its start)."""

PREFERENCE_COLUMNS = ("rule", "attribute", "level", "purpose")
"""Columns of a preferences table besides the subject column."""

PreferenceRow = tuple[Any, str, str | None, str | None, str | None]
"""(subject, rule, attribute, level, purpose) — one rule in long form."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Coarsening(_Frozen):
    """The coarsening levels one column offers, finest first.

    ``kind: time`` truncates a date/time column to :data:`TIME_LEVELS`; ``kind:
    mapping`` maps each value to a coarser one per named level (values missing from
    a level's mapping become NULL).
    """

    kind: Literal["time", "mapping"]
    mappings: dict[str, dict[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, value: Any) -> Any:
        if value == "time":
            return {"kind": "time"}
        if isinstance(value, Mapping) and "kind" not in value:
            return {"kind": "mapping", "mappings": value}
        return value

    @model_validator(mode="after")
    def _check(self) -> Coarsening:
        if self.kind == "mapping" and not self.mappings:
            raise ValueError(
                "a mapping coarsening needs at least one level: {level: {value: coarser}}"
            )
        if self.kind == "time" and self.mappings:
            raise ValueError("a time coarsening takes no mappings")
        return self

    @property
    def levels(self) -> tuple[str, ...]:
        """Level names, finest first."""
        return TIME_LEVELS if self.kind == "time" else tuple(self.mappings)


class SubjectRule(_Frozen):
    """One entry of a preferences YAML file.

    Example (YAML)::

        - {subject: 17, withhold: [room]}
        - {subject: 23, aggregate_only: true, purposes: [assistant]}
        - {subject: 5, coarsen: {ts: hour}}
    """

    subject: int | str
    withhold: tuple[str, ...] = ()
    aggregate_only: bool = False
    coarsen: dict[str, str] = {}
    purposes: tuple[str, ...] | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> SubjectRule:
        if not (self.withhold or self.aggregate_only or self.coarsen):
            raise ValueError("a subject rule needs withhold, aggregate_only or coarsen")
        return self

    def rows(self) -> list[PreferenceRow]:
        """This entry in long form (one row per rule and purpose)."""
        purposes: tuple[str | None, ...] = self.purposes or (None,)
        out: list[PreferenceRow] = []
        for purpose in purposes:
            out += [(self.subject, "withhold", a, None, purpose) for a in self.withhold]
            if self.aggregate_only:
                out.append((self.subject, "aggregate_only", None, None, purpose))
            out += [(self.subject, "coarsen", a, lv, purpose) for a, lv in self.coarsen.items()]
        return out


class Preferences(_Frozen):
    """Where a table's data-subject preferences live, and which coarsening levels exist.

    Exactly one of ``table`` (a table in the same database, long form; its subject
    column is ``subject``, default ``subject_id``) or ``file`` (YAML list of
    :class:`SubjectRule`, relative to the policy file) is given.
    """

    table: str | None = None
    subject: str = "subject_id"
    file: str | None = None
    coarsen: dict[str, Coarsening] = {}
    _rules: tuple[PreferenceRow, ...] = PrivateAttr(default=())

    @field_validator("table", "subject")
    @classmethod
    def _plain_name(cls, value: str | None) -> str | None:
        if value is not None and (not value or not all(ch.isalnum() or ch == "_" for ch in value)):
            raise ValueError(f"{value!r} must be a plain table/column name (letters, digits, _)")
        return value

    @model_validator(mode="after")
    def _one_source(self, info: ValidationInfo) -> Preferences:
        if (self.table is None) == (self.file is None):
            raise ValueError("preferences need exactly one of 'table' or 'file'")
        if self.file is not None:
            base = (info.context or {}).get("policy_dir") if info.context else None
            path = Path(base or ".") / self.file
            self._rules = tuple(r for entry in _read_rules(path) for r in entry.rows())
        return self

    @property
    def rules(self) -> tuple[PreferenceRow, ...]:
        """The rules read from ``file`` in long form (empty for a ``table`` source)."""
        return self._rules


def _read_rules(path: Path) -> list[SubjectRule]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read preferences file {str(path)!r}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ValueError(f"preferences file {str(path)!r} is not valid YAML") from exc
    if not isinstance(data, list):
        raise ValueError(f"preferences file {str(path)!r} must be a list of subject rules")
    rules = []
    for i, entry in enumerate(data):
        try:
            rules.append(SubjectRule.model_validate(entry))
        except ValueError as exc:
            first = str(exc).splitlines()
            detail = first[2].strip() if len(first) > 2 else str(exc)
            raise ValueError(f"preferences file {str(path)!r} entry {i}: {detail}") from exc
    return rules

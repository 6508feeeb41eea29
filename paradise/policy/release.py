"""The ``release:`` rule of a table policy: materialize the anonymized relation once, or recompute it.

A *release* is a table's anonymized relation for one role, built once inside the database,
verified once and reused by every query of that role (:mod:`paradise.release`). Live
recomputation draws fresh randomness for every answer, so averaging or differencing
answers undoes it; for tables whose operators draw randomness (or need rewrite-time
database work) a release is therefore the default, and ``mode: live`` must be acknowledged
explicitly (``acknowledge_averaging: true``).

Example:
    >>> rule = ReleasePolicy.model_validate({"refresh": "every 15m"})
    >>> rule.refresh_seconds
    900.0
    >>> default_mode(())
    'live'
    >>> default_mode(("generalization", "slicing"))
    'materialized'
    >>> try:
    ...     ReleasePolicy.model_validate({"refresh": "sometimes"})
    ... except ValueError as exc:
    ...     print(exc.errors()[0]["msg"])
    Value error, refresh must be on_change, manual or 'every <n><s|m|h|d>' (e.g. every 30m), got 'sometimes'
"""  # noqa: E501

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "LIVE_OPERATORS",
    "ReleasePolicy",
    "default_mode",
    "parse_duration",
    "randomized",
]

LIVE_OPERATORS = frozenset({"generalization"})
"""Operators that draw no randomness and need no rewrite-time database work: recomputing
them per query gives the same relation every time. Every other operator (and any operator
added later, until it is listed here) makes ``materialized`` the default (fail closed)."""

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``30s``, ``15m``, ``2h`` or ``1d``.

    >>> parse_duration("2h"), parse_duration("1.5m")
    (7200.0, 90.0)
    """
    match = _DURATION.match(text)
    if match is None or float(match[1]) <= 0:
        raise ValueError(f"a duration is a positive number with s, m, h or d, got {text!r}")
    return float(match[1]) * _UNITS[match[2]]


def randomized(operators: Iterable[str]) -> tuple[str, ...]:
    """The operators (by name) that are not known to give the same relation on every run."""
    return tuple(name for name in operators if name not in LIVE_OPERATORS)


def default_mode(operators: Iterable[str]) -> Literal["materialized", "live"]:
    """``materialized`` if any operator draws randomness or needs rewrite-time work."""
    return "materialized" if randomized(operators) else "live"


class ReleasePolicy(BaseModel):
    """How a table's anonymized relation is served to a role.

    Attributes:
        mode: ``materialized`` (one verified release per role, reused by every query) or
            ``live`` (recomputed for every query). None: ``materialized`` when any
            operator of the table's ``transform`` draws randomness or needs rewrite-time
            work, ``live`` otherwise.
        refresh: when a release whose source changed is rebuilt: ``on_change`` (before the
            next answer), ``manual`` (only by ``paradise release build|refresh``; answers
            say how old the release is), or ``every <duration>`` (rebuilt before an answer
            once it is older than the duration and its source changed).
        check_every: with ``on_change``, compare the source fingerprint at most this often
            (e.g. ``5s``); None: before every answer.
        acknowledge_averaging: required with ``mode: live`` for randomized operators:
            every answer then draws anew, and averaging answers undoes the randomization.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["materialized", "live"] | None = None
    refresh: str = "on_change"
    check_every: str | None = None
    acknowledge_averaging: bool = Field(default=False)

    @field_validator("refresh")
    @classmethod
    def _refresh(cls, value: str) -> str:
        text = value.strip()
        if text in ("on_change", "manual"):
            return text
        if text.startswith("every "):
            try:
                parse_duration(text[len("every ") :])
            except ValueError:
                pass
            else:
                return text
        raise ValueError(
            "refresh must be on_change, manual or 'every <n><s|m|h|d>' (e.g. every 30m), "
            f"got {value!r}"
        )

    @field_validator("check_every")
    @classmethod
    def _check_every(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @property
    def refresh_seconds(self) -> float | None:
        """The interval of ``refresh: every <duration>`` in seconds (None: other modes)."""
        if self.refresh.startswith("every "):
            return parse_duration(self.refresh[len("every ") :])
        return None

    @property
    def check_seconds(self) -> float:
        """How long a fingerprint comparison stays valid (0: before every answer)."""
        return parse_duration(self.check_every) if self.check_every is not None else 0.0

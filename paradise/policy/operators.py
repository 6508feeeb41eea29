"""The operators a policy may name, and the base of their parameter models.

A policy's ``transform`` steps name operators; the policy model validates each step's
parameters with the model its operator registered here (:func:`register_operator`). The
operators themselves (:mod:`paradise.anonymize.registry`) depend on the policy, never
the reverse; paradise's own operators register when ``paradise`` is imported.

Example:
    >>> import paradise
    >>> "slicing" in operator_names()
    True
    >>> operator_params("no such operator") is None
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = [
    "OperatorParams",
    "ParamsFileError",
    "operator_names",
    "operator_params",
    "register_operator",
]


class OperatorParams(BaseModel):
    """Base of every operator's parameter model (validated when the policy loads)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def check_columns(self, classes: Mapping[str, Any]) -> None:
        """Raise ``ValueError`` if the parameters name columns the policy does not allow.

        ``classes`` maps each column the table policy classifies to its rule.
        """


class ParamsFileError(ValueError):
    """A problem in a file an operator's parameters name (a hierarchy CSV, say), located by
    the file's own line; the policy loader adds the policy's line."""

    def __init__(self, file: Path, line: int | None, problem: str) -> None:
        self.file = file
        self.line = line
        self.problem = problem
        where = f"{file}:{line}" if line is not None else str(file)
        super().__init__(f"{where}: {problem}")


_PARAMS: dict[str, type[OperatorParams]] = {}


def register_operator(name: str, params: type[OperatorParams]) -> None:
    """Let policies name the operator ``name``, its parameters validated by ``params``."""
    _PARAMS[name] = params


def operator_params(name: str) -> type[OperatorParams] | None:
    """The parameter model of the operator ``name`` (None: no such operator)."""
    return _PARAMS.get(name)


def operator_names() -> tuple[str, ...]:
    """The names of every registered operator, sorted."""
    return tuple(sorted(_PARAMS))

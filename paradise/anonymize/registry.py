"""The operator registry: YAML key -> operator class."""

from __future__ import annotations

from paradise.anonymize.base import Operator, OperatorParams
from paradise.anonymize.slicing import Slicing

__all__ = ["OPERATORS", "OperatorParams", "operator"]

OPERATORS: dict[str, type[Operator]] = {
    Slicing.name: Slicing,
}


def operator(name: str) -> Operator:
    """An instance of the operator registered under ``name``."""
    return OPERATORS[name]()

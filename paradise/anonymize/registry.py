"""The operator registry: YAML key -> operator class."""

from __future__ import annotations

from paradise.anonymize.base import Operator, OperatorParams
from paradise.anonymize.generalization import Generalization
from paradise.anonymize.local_suppression import LocalSuppression
from paradise.anonymize.mdav import MultivariateMicroaggregation
from paradise.anonymize.microaggregation import Microaggregation
from paradise.anonymize.noise import Noise
from paradise.anonymize.pram import Pram
from paradise.anonymize.slicing import Slicing

__all__ = ["OPERATORS", "OperatorParams", "operator"]

OPERATORS: dict[str, type[Operator]] = {
    Slicing.name: Slicing,
    Microaggregation.name: Microaggregation,
    Generalization.name: Generalization,
    LocalSuppression.name: LocalSuppression,
    Noise.name: Noise,
    Pram.name: Pram,
    MultivariateMicroaggregation.name: MultivariateMicroaggregation,
}


def operator(name: str) -> Operator:
    """An instance of the operator registered under ``name``."""
    return OPERATORS[name]()

"""The operator registry: YAML key -> operator class.

Importing it registers every operator's parameter model with the policy model
(:func:`paradise.policy.operators.register_operator`).
"""

from __future__ import annotations

from paradise.anonymize.base import Operator, OperatorParams
from paradise.anonymize.generalization import Generalization
from paradise.anonymize.local_suppression import LocalSuppression
from paradise.anonymize.mdav import MultivariateMicroaggregation
from paradise.anonymize.microaggregation import Microaggregation
from paradise.anonymize.noise import Noise
from paradise.anonymize.pram import Pram
from paradise.anonymize.slicing import Slicing
from paradise.policy.operators import register_operator

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


for _name, _operator in OPERATORS.items():
    register_operator(_name, _operator.Params)


def operator(name: str) -> Operator:
    """An instance of the operator registered under ``name``."""
    return OPERATORS[name]()

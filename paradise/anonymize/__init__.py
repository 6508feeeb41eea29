"""Anonymization operators: each turns a relation into an anonymized relation in SQL."""

from paradise.anonymize.base import Operator as Operator
from paradise.anonymize.base import OperatorContext as OperatorContext
from paradise.anonymize.registry import OPERATORS as OPERATORS

__all__ = ["OPERATORS", "Operator", "OperatorContext"]

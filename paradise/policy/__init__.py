"""Role policies: typed models and the YAML loader."""

from paradise.policy.load import PolicySet as PolicySet
from paradise.policy.load import load_policies as load_policies
from paradise.policy.load import load_policy_file as load_policy_file
from paradise.policy.model import ColumnClass as ColumnClass
from paradise.policy.model import OnViolation as OnViolation
from paradise.policy.model import RolePolicy as RolePolicy
from paradise.policy.model import TablePolicy as TablePolicy

__all__ = [
    "ColumnClass",
    "OnViolation",
    "PolicySet",
    "RolePolicy",
    "TablePolicy",
    "load_policies",
    "load_policy_file",
]

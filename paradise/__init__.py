"""paradise: a privacy-aware SQL query processor.

SQL goes in; paradise checks it against role policies, rewrites it so the
database computes an anonymized answer, runs it, verifies k-anonymity and
l-diversity, and returns rows with annotations of what was done.
"""

import logging as _logging

# the operators register their parameter models with the policy model, which validates
# policies' transform steps with them (paradise.policy.operators)
from paradise.anonymize import registry as _operators  # noqa: F401
from paradise.errors import BackendError as BackendError
from paradise.errors import ParadiseError as ParadiseError
from paradise.errors import PolicyError as PolicyError
from paradise.errors import QueryError as QueryError
from paradise.errors import QueryRejected as QueryRejected
from paradise.errors import QuerySyntaxError as QuerySyntaxError
from paradise.errors import UndefinedColumn as UndefinedColumn
from paradise.errors import UndefinedTable as UndefinedTable
from paradise.errors import UnsupportedQueryError as UnsupportedQueryError
from paradise.errors import VerificationError as VerificationError
from paradise.policy import RolePolicy as RolePolicy
from paradise.policy import load_policies as load_policies
from paradise.processor import Processor as Processor
from paradise.processor import bundled_policies as bundled_policies
from paradise.processor import connect as connect
from paradise.result import ExplainResult as ExplainResult
from paradise.result import Result as Result

__version__ = "0.1.0"

__all__ = [
    "BackendError",
    "ExplainResult",
    "ParadiseError",
    "PolicyError",
    "Processor",
    "QueryError",
    "QueryRejected",
    "QuerySyntaxError",
    "Result",
    "RolePolicy",
    "UndefinedColumn",
    "UndefinedTable",
    "UnsupportedQueryError",
    "VerificationError",
    "__version__",
    "bundled_policies",
    "connect",
    "load_policies",
]

# a library logs, it does not print: the database's own error text (redacted) goes to the
# "paradise" loggers, which print nothing until the application (or paradise serve)
# configures logging
_logging.getLogger("paradise").addHandler(_logging.NullHandler())

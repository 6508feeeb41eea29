"""Policy check and rewrite rules, run in order by :func:`paradise.pipeline.prepare`.

Each rule is a function ``(expression, ctx) -> expression`` in its own module.
The checking rules run first on the parsed query; ``qualify_query`` then
resolves every name against the columns the role may see; the rewriting rules
(``replace_tables``, ``add_group_counts``, ``shuffle_output``) run on the
qualified query.
"""

from paradise.rewrite.check_aggregate_nesting import check_aggregate_nesting
from paradise.rewrite.check_functions import check_functions
from paradise.rewrite.check_names import check_names
from paradise.rewrite.check_tables import check_tables
from paradise.rewrite.qualify_query import qualify_query

__all__ = [
    "CHECKS",
    "check_aggregate_nesting",
    "check_functions",
    "check_names",
    "check_tables",
    "qualify_query",
]

CHECKS = (check_tables, check_names, check_functions, check_aggregate_nesting)
"""Rules that only inspect the parsed query and refuse it (fail closed)."""

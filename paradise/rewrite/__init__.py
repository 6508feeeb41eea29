"""Policy check and rewrite rules, run in order by :func:`paradise.pipeline.prepare`.

Each rule is a function in its own module. On the parsed query:
``check_grammar`` (a closed allowlist of node types, functions and casts) and
``resolve_tables`` (every table reference is a CTE of the query or a catalog table the
policy lists, renamed to its canonical spelling). ``qualify_query`` then resolves every
name against the columns the role may see; ``group_distinct`` turns DISTINCT and UNION
into grouping; ``analyze_query`` builds the one model of the query every later rule
reads (blocks, references, lineage, touched columns); ``check_aggregates`` holds
aggregates to the policies; ``count_contributors`` carries contributor keys and
protects inner blocks; ``wrap_answer`` lifts the order and limits off the user's query;
``check_generated`` re-reads the statement about to run.
"""

from paradise.rewrite.analyze import analyze_query
from paradise.rewrite.check_aggregates import check_aggregates
from paradise.rewrite.check_generated import check_generated
from paradise.rewrite.count_contributors import count_contributors
from paradise.rewrite.grammar import check_grammar
from paradise.rewrite.group_distinct import group_distinct
from paradise.rewrite.qualify_query import qualify_query
from paradise.rewrite.resolve_tables import resolve_tables

__all__ = [
    "analyze_query",
    "check_aggregates",
    "check_generated",
    "check_grammar",
    "count_contributors",
    "group_distinct",
    "qualify_query",
    "resolve_tables",
]

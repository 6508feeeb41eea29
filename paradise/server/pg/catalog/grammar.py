"""The closed grammar of catalog queries, and their translation to the sandbox's DuckDB.

A catalog query (psql ``\\d``, pgJDBC ``DatabaseMetaData``, SQLAlchemy reflection,
psycopg type look-ups) is answered from the emulated relations of
:mod:`paradise.server.pg.catalog.relations` only. :func:`translate` checks the parsed query
and rewrites it for the sandbox in one pass:

* every table reference must name an emulated ``pg_catalog`` / ``information_schema``
  relation (or a CTE of the query); it is pointed at the sandbox's copy;
* the only table functions are ``unnest`` and ``generate_series``;
* every function is on :data:`FUNCTIONS` (sqlglot function classes whose DuckDB
  rendering is a pure function of its arguments) or :data:`NAMED_FUNCTIONS`
  (PostgreSQL catalog functions, each implemented by a sandbox macro over the emulated
  relations, by a constant, or by a pure DuckDB function);
* casts go to an allowlisted type; ``'name'::regclass``-style casts look the name up
  in the emulated relations;
* every node of the result is checked once more against :data:`NODES`.

Anything else is refused with its name. DuckDB's own table functions, settings, file
readers and catalog never take part: they are not on any list.

Example:
    >>> import sqlglot
    >>> ctx = CatalogContext(user="ana")
    >>> tree = sqlglot.parse_one("SELECT relname FROM pg_catalog.pg_class c", read="postgres")
    >>> translate(tree, ctx).sql("duckdb")
    'SELECT relname FROM emu_pg_catalog.pg_class AS c'
    >>> translate(sqlglot.parse_one("SELECT * FROM duckdb_settings()"), ctx)
    Traceback (most recent call last):
    paradise.errors.UnsupportedQueryError: unsupported query: the function duckdb_settings() is not allowed in a catalog query (rule catalog grammar allowlist (paradise/server/pg/catalog/grammar.py)). Hint: the proxy emulates the catalog functions psql, pgJDBC and SQLAlchemy use.
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sqlglot import exp

from paradise.errors import UnsupportedQueryError
from paradise.server.pg.catalog.relations import FUNCTION_RELATIONS, RELATIONS
from paradise.server.pg.local import VERSION_STRING

__all__ = [
    "FUNCTIONS",
    "INTERNAL_SCHEMA",
    "MACRO_PREFIX",
    "NAMED_FUNCTIONS",
    "NODES",
    "SANDBOX_SCHEMAS",
    "CatalogContext",
    "translate",
]

_RULE = "catalog grammar allowlist (paradise/server/pg/catalog/grammar.py)"
_HINT = "catalog queries may read the pg_catalog and information_schema relations the proxy emulates"  # noqa: E501

SANDBOX_SCHEMAS = {"pg_catalog": "emu_pg_catalog", "information_schema": "emu_information_schema"}
"""Where the sandbox keeps each emulated schema's relations."""
INTERNAL_SCHEMA = "emu_internal"
"""Sandbox helper tables the macros read; no query names them."""
MACRO_PREFIX = "pgfn_"
_RESERVED = ("emu_", MACRO_PREFIX)

_TAIL = frozenset({"with_", "order", "limit", "offset"})
_BINARY = frozenset({"this", "expression"})

NODES: dict[type[exp.Expr], frozenset[str]] = {
    exp.Select: frozenset({"with_", "expressions", "distinct", "from_", "joins", "where",
                           "group", "having", "order", "limit", "offset"}),  # fmt: skip
    exp.Union: frozenset({"this", "expression", "distinct"}) | _TAIL,
    exp.Intersect: frozenset({"this", "expression", "distinct"}) | _TAIL,
    exp.Except: frozenset({"this", "expression", "distinct"}) | _TAIL,
    exp.With: frozenset({"expressions", "recursive"}),
    exp.CTE: frozenset({"this", "alias", "materialized"}),
    exp.Subquery: frozenset({"this", "alias"}),
    exp.TableAlias: frozenset({"this", "columns"}),
    exp.Table: frozenset({"this", "alias", "db"}),
    exp.From: frozenset({"this"}),
    exp.Join: frozenset({"this", "on", "side", "kind", "using"}),
    exp.Where: frozenset({"this"}),
    exp.Group: frozenset({"expressions"}),
    exp.Having: frozenset({"this"}),
    exp.Order: frozenset({"this", "expressions"}),  # "this": array_agg(x ORDER BY y)
    exp.Ordered: frozenset({"this", "desc", "nulls_first"}),
    exp.Limit: frozenset({"this", "expression"}),
    exp.Offset: frozenset({"this", "expression"}),
    exp.Distinct: frozenset({"expressions"}),
    exp.Column: frozenset({"this", "table"}),
    exp.Identifier: frozenset({"this", "quoted"}),
    exp.Star: frozenset(),
    exp.Alias: frozenset({"this", "alias"}),
    exp.Literal: frozenset({"this", "is_string"}),
    exp.ByteString: frozenset({"this", "is_bytes"}),
    exp.Null: frozenset(),
    exp.Boolean: frozenset({"this"}),
    exp.Tuple: frozenset({"expressions"}),
    exp.Array: frozenset({"expressions"}),
    exp.Bracket: frozenset({"this", "expressions"}),
    exp.Slice: frozenset({"this", "expression"}),
    exp.Cast: frozenset({"this", "to"}),
    exp.DataType: frozenset({"this", "expressions", "nested"}),
    exp.DataTypeParam: frozenset({"this"}),
    exp.Paren: frozenset({"this"}),
    exp.Not: frozenset({"this"}),
    exp.Neg: frozenset({"this"}),
    **{cls: _BINARY for cls in (
        exp.Add, exp.Sub, exp.Mul, exp.Mod, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE,
        exp.NullSafeEQ, exp.NullSafeNEQ, exp.And, exp.Or, exp.BitwiseAnd, exp.BitwiseOr,
        exp.BitwiseRightShift, exp.BitwiseLeftShift, exp.ArrayContainsAll, exp.Escape,
    )},  # fmt: skip
    exp.Is: frozenset({"this", "expression", "negate"}),
    exp.Like: frozenset({"this", "expression", "negate"}),
    exp.ILike: frozenset({"this", "expression", "negate"}),
    exp.Div: frozenset({"this", "expression", "typed", "safe"}),
    exp.DPipe: frozenset({"this", "expression", "safe"}),
    exp.Between: frozenset({"this", "low", "high"}),
    exp.In: frozenset({"this", "expressions", "query"}),
    exp.Exists: frozenset({"this"}),
    exp.Any: frozenset({"this"}),
    exp.All: frozenset({"this"}),
    exp.Case: frozenset({"this", "ifs", "default"}),
    exp.If: frozenset({"this", "true", "false"}),
    exp.Window: frozenset({"this", "partition_by", "order", "over"}),
    exp.Dot: frozenset({"this", "expression"}),
}
"""Every node type a translated catalog query may contain, with the arguments it may set."""

FUNCTIONS: frozenset[type[exp.Func]] = frozenset(
    cls
    for name in """
    Count Max Min Sum Avg ArrayAgg GroupConcat LogicalAnd LogicalOr Upper Lower Length
    Coalesce Nullif Greatest Least Abs Round Floor Ceil Concat ConcatWs Substring Trim
    Replace StrPosition Left Right SplitPart RegexpReplace RegexpLike RegexpILike
    ArrayToString ArraySize ArrayPosition RowNumber Rank DenseRank CurrentTimestamp
    CurrentDate Explode Unnest GenerateSeries ExplodingGenerateSeries Translate StartsWith Lpad
    Rpad Initcap StringToArray
    """.split()
    if isinstance(cls := getattr(exp, name, None), type)
)
"""sqlglot function classes a catalog query may use: pure functions of their arguments."""

# PostgreSQL catalog functions: name -> sandbox macro (``pgfn_<name>``) or DuckDB builtin
NAMED_FUNCTIONS: dict[str, str] = {
    **{name: MACRO_PREFIX + name for name in """
    format_type pg_get_userbyid pg_table_is_visible pg_type_is_visible pg_function_is_visible
    pg_collation_is_visible pg_opclass_is_visible pg_operator_is_visible
    pg_conversion_is_visible pg_statistics_obj_is_visible pg_ts_config_is_visible
    pg_encoding_to_char pg_char_to_encoding pg_get_expr pg_get_constraintdef pg_get_indexdef
    pg_get_viewdef pg_get_triggerdef pg_get_ruledef pg_get_functiondef
    pg_get_function_arguments pg_get_function_identity_arguments pg_get_function_result
    pg_get_partkeydef pg_get_partition_constraintdef pg_get_statisticsobjdef_columns
    pg_get_statisticsobjdef pg_get_serial_sequence pg_tablespace_location obj_description
    col_description shobj_description has_table_privilege has_schema_privilege
    has_database_privilege has_column_privilege has_any_column_privilege
    has_function_privilege has_sequence_privilege has_type_privilege pg_has_role
    pg_relation_size pg_total_relation_size pg_table_size pg_indexes_size pg_database_size
    pg_size_pretty quote_ident to_regtype to_regclass to_regnamespace to_regrole to_regproc
    array_upper array_lower cardinality pg_is_in_recovery pg_my_temp_schema
    pg_is_other_temp_schema pg_postmaster_start_time inet_server_addr inet_server_port
    _pg_expandarray array_length pg_relation_is_publishable generate_subscripts quote_literal
    """.split()},
    "json_build_object": "json_object",
    "array_to_string": "array_to_string",
}  # fmt: skip
"""PostgreSQL functions sqlglot parses by name, and what implements each in the sandbox."""

# PostgreSQL type name -> DuckDB type of the sandbox
_CASTS: dict[str, str] = {
    **dict.fromkeys(("text", "varchar", "character varying", "bpchar", "char", "character",
                     '"char"', "name", "unknown", "pg_node_tree", "aclitem"), "VARCHAR"),
    **dict.fromkeys(("int2", "smallint"), "SMALLINT"),
    **dict.fromkeys(("int4", "int", "integer"), "INTEGER"),
    **dict.fromkeys(("int8", "bigint", "oid", "xid", "cid"), "BIGINT"),
    **dict.fromkeys(("bool", "boolean"), "BOOLEAN"),
    **dict.fromkeys(("numeric", "decimal"), "DECIMAL(38,10)"),
    **dict.fromkeys(("float4", "real"), "REAL"),
    **dict.fromkeys(("float8", "double precision", "float"), "DOUBLE"),
    "int2vector": "SMALLINT[]", "oidvector": "BIGINT[]", "date": "DATE",
    "timestamp": "TIMESTAMP", "timestamp without time zone": "TIMESTAMP",
    **dict.fromkeys(("timestamptz", "timestamp with time zone"), "TIMESTAMP WITH TIME ZONE"),
    "time": "TIME", "interval": "INTERVAL",
}  # fmt: skip
# object-identifier types: name -> (relation, name column) to look a name up in
_REG_TYPES: dict[str, tuple[str, str] | None] = {
    "regclass": ("pg_class", "relname"),
    "regnamespace": ("pg_namespace", "nspname"),
    "regrole": ("pg_roles", "rolname"),
    "regtype": None,  # through the type-name table (aliases, arrays)
    "regproc": ("pg_proc", "proname"),
    "regprocedure": ("pg_proc", "proname"),
    "regoper": ("pg_operator", "oprname"),
    "regoperator": ("pg_operator", "oprname"),
    "regconfig": ("pg_ts_config", "cfgname"),
}
_TABLE_FUNCTIONS = (exp.Explode, exp.Unnest, exp.GenerateSeries, exp.ExplodingGenerateSeries)


@dataclass(frozen=True)
class CatalogContext:
    """What a catalog query may learn of its session: user, settings, backend pid."""

    user: str
    setting: Callable[[str], str | None] = field(default=lambda name: None)
    pid: int = 0
    cursors: tuple[tuple[str, bool, bool], ...] = ()  # the session's (name, holdable, binary)


def _refuse(what: str, hint: str = _HINT) -> UnsupportedQueryError:
    return UnsupportedQueryError(
        f"{what} is not allowed in a catalog query", policy_rule=_RULE, hint=hint
    )


def _walk(expression: exp.Expr) -> Iterator[exp.Expr]:
    stack = [expression]
    while stack:
        node = stack.pop()
        yield node
        for value in node.args.values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, exp.Expr):
                    stack.append(item)


def _type_name(data_type: exp.Expr) -> str:
    text = data_type.sql("postgres").lower()
    return text[len("pg_catalog.") :] if text.startswith("pg_catalog.") else text


def unwrap_schema_calls(tree: exp.Expr) -> exp.Expr:
    """``pg_catalog.f(x)`` / ``information_schema.f(x)`` -> ``f(x)`` (in place)."""
    for dot in list(tree.find_all(exp.Dot)):
        head = dot.this
        if (
            isinstance(head, exp.Identifier | exp.Column | exp.Var)
            and head.name.lower() in SANDBOX_SCHEMAS
            and isinstance(dot.expression, exp.Func)
        ):
            dot.replace(dot.expression)
    return tree


def translate(tree: exp.Expr, ctx: CatalogContext) -> exp.Query:
    """Check ``tree`` (parsed as PostgreSQL, parameters bound) and rewrite it for the sandbox.

    Raises:
        UnsupportedQueryError: a construct outside the grammar, named.
    """
    if not isinstance(tree, exp.Query):
        raise _refuse(f"a {tree.key.upper()} statement", "only SELECT reads the catalog")
    tree = unwrap_schema_calls(tree.copy())
    for ident in tree.find_all(exp.Identifier):
        if isinstance(ident.this, str) and ident.this.lower().startswith(_RESERVED):
            raise _refuse(f'the name "{ident.this[:40]}" (reserved for the sandbox)')
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    # children first: a node rebuilt around its children (a cast, an operator) copies
    # them already translated
    for node in reversed(list(_walk(tree))):
        if _attached(node, tree):  # not detached by an earlier replacement
            _translate_node(node, ctx, ctes)
    for node in _walk(tree):
        _check(node, ctes)
    assert isinstance(tree, exp.Query)
    return tree


def _attached(node: exp.Expr, root: exp.Expr) -> bool:
    while node.parent is not None:
        node = node.parent
    return node is root


def _translate_node(node: exp.Expr, ctx: CatalogContext, ctes: set[str]) -> None:
    if isinstance(node, exp.Table):
        _table(node, ctes)
        if node.name == "pg_cursors" and node.db == SANDBOX_SCHEMAS["pg_catalog"] and ctx.cursors:
            _session_cursors(node, ctx)
    elif isinstance(node, exp.Column):
        _column(node, ctx)
    elif isinstance(node, exp.Cast):
        _cast(node)
    elif isinstance(node, exp.Operator):
        node.replace(_operator(node))
    elif isinstance(node, exp.Collate):
        node.replace(node.this)
    elif isinstance(node, exp.Anonymous):
        _named_function(node, ctx)
    elif isinstance(node, exp.CurrentUser | exp.SessionUser):
        node.replace(exp.Literal.string(ctx.user))
    elif isinstance(node, exp.CurrentSchema):
        node.replace(exp.Literal.string("public"))
    elif isinstance(node, exp.CurrentDatabase | exp.CurrentCatalog):
        node.replace(exp.Literal.string("paradise"))
    elif isinstance(node, exp.CurrentVersion):
        node.replace(exp.Literal.string(VERSION_STRING))
    elif isinstance(node, exp.CurrentSchemas):
        implicit = node.this is not None and node.this.sql().lower() in ("true", "'t'", "'true'")
        names = ["pg_catalog", "public"] if implicit else ["public"]
        node.replace(exp.Array(expressions=[exp.Literal.string(n) for n in names]))
    elif isinstance(node, exp.Format):
        node.replace(_format(node))
    elif isinstance(node, exp.Placeholder | exp.Parameter):
        node.replace(exp.null())  # describing an unbound statement: any type


def _table(node: exp.Table, ctes: set[str]) -> None:
    source = node.this
    if isinstance(source, exp.Anonymous) and str(source.this).lower() in FUNCTION_RELATIONS:
        if source.expressions or (node.db and node.db.lower() != "pg_catalog"):
            raise _refuse(f"table function {source.sql('postgres')[:60]}")
        name = str(source.this).lower()
        node.set("this", exp.to_identifier(name))
        node.set("db", exp.to_identifier(SANDBOX_SCHEMAS["pg_catalog"]))
        if node.args.get("alias") is None:
            node.set("alias", exp.TableAlias(this=exp.to_identifier(name)))
        return
    if isinstance(source, exp.Func) and not isinstance(source, _TABLE_FUNCTIONS):
        if not _scalar_allowed(source) or (node.db and node.db.lower() != "pg_catalog"):
            raise _refuse(f"table function {source.sql('postgres')[:60]}")
        # a scalar function in FROM is one row with one column named after its alias
        alias = node.alias or "f"
        row = exp.select(exp.alias_(source.copy(), alias, quoted=True))
        node.replace(exp.Subquery(this=row, alias=exp.TableAlias(this=exp.to_identifier(alias))))
        return
    if isinstance(source, exp.Func):
        if node.args.get("db") and node.db.lower() != "pg_catalog":
            raise _refuse(f"table function {node.db}.{source.sql('postgres')[:60]}")
        node.set("db", None)
        node.set("catalog", None)
        table_alias = node.args.get("alias")
        if (isinstance(table_alias, exp.TableAlias) and not table_alias.columns
                and table_alias.this is not None):  # fmt: skip
            # PostgreSQL: FROM f(x) AS x names the one column x too
            table_alias.set("columns", [exp.to_identifier(table_alias.name)])
        return
    if not isinstance(source, exp.Identifier):
        raise _refuse(f"the table expression {node.sql('postgres')[:60]}")
    name, schema = node.name.lower(), node.db.lower()
    if node.args.get("catalog") and node.catalog.lower() != "paradise":
        raise _refuse(f'the relation "{node.sql("postgres")[:80]}"')
    if not schema and name in ctes:
        return
    schema = schema or "pg_catalog"
    if (schema, name) not in RELATIONS:
        raise UnsupportedQueryError(
            f'relation "{node.sql("postgres")[:80]}" is not a catalog relation the proxy '
            "emulates",
            policy_rule=_RULE,
            hint="query tables through SELECT without pg_catalog/information_schema, or read "
            "the emulated pg_catalog and information_schema relations",
            sqlstate="42P01",
        )
    if node.args.get("alias") is None:
        node.set("alias", exp.TableAlias(this=exp.to_identifier(name)))
    node.set("this", exp.to_identifier(name))
    node.set("db", exp.to_identifier(SANDBOX_SCHEMAS[schema]))
    node.set("catalog", None)


def _session_cursors(node: exp.Table, ctx: CatalogContext) -> None:
    """``pg_cursors`` lists this session's cursors (built from their names, no query text)."""
    rows = [
        exp.select(exp.Literal.string(name), exp.null(), exp.Boolean(this=hold),
                   exp.Boolean(this=binary), exp.false(), exp.null())
        for name, hold, binary in ctx.cursors
    ]  # fmt: skip
    union: exp.Query = exp.select(exp.Star()).from_(node.copy())
    for row in rows:
        union = exp.union(union, row, distinct=False)
    node.replace(exp.Subquery(this=union, alias=exp.TableAlias(this=exp.to_identifier(node.alias))))


def _scalar_allowed(node: exp.Func) -> bool:
    if isinstance(node, exp.Anonymous):
        return node.this in _ALLOWED_ANONYMOUS
    return type(node) in FUNCTIONS


def _format(node: exp.Format) -> exp.Expr:
    """``format('%I.%I', a, b)`` -> ``quote_ident(a) || '.' || quote_ident(b)`` (literal format)."""
    template = node.this
    args = list(node.expressions)
    if not (isinstance(template, exp.Literal) and template.is_string):
        raise _refuse("format() with a computed format string")
    parts: list[exp.Expr] = []
    text, i, used = template.this, 0, 0
    literal = ""
    while i < len(text):
        ch = text[i]
        if ch != "%":
            literal += ch
            i += 1
            continue
        spec = text[i + 1 : i + 2]
        i += 2
        if spec == "%":
            literal += "%"
            continue
        if spec not in ("s", "I", "L") or used >= len(args):
            raise _refuse(f"the format specifier %{spec}")
        if literal:
            parts.append(exp.Literal.string(literal))
            literal = ""
        arg = args[used]
        used += 1
        as_text = exp.cast(arg, exp.DataType.build("VARCHAR"), copy=False)
        if spec == "s":
            parts.append(exp.Coalesce(this=as_text, expressions=[exp.Literal.string("")]))
        else:
            name = "quote_ident" if spec == "I" else "quote_literal"
            parts.append(exp.Anonymous(this=NAMED_FUNCTIONS[name], expressions=[as_text]))
    if literal or not parts:
        parts.append(exp.Literal.string(literal))
    result = parts[0]
    for part in parts[1:]:
        result = exp.DPipe(this=result, expression=part)
    return exp.Paren(this=result)


def _column(node: exp.Column, ctx: CatalogContext) -> None:
    if node.args.get("catalog") or node.args.get("db"):
        node.set("catalog", None)  # pg_catalog.pg_class.relname -> pg_class.relname
        node.set("db", None)
    this = node.this
    if (
        not node.table
        and isinstance(this, exp.Identifier)
        and not this.quoted
        and this.name.lower() == "user"
    ):
        node.replace(exp.Literal.string(ctx.user))


def _pg_array_literal(text: str) -> list[str | None]:
    """Elements of a one-dimensional PostgreSQL array literal such as ``{a,"b c",NULL}``."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise _refuse(f"the array literal {text[:40]!r}", "write arrays as '{a,b}' or ARRAY[...]")
    items: list[str | None] = []
    current, quoted, was_quoted, i = "", False, False, 1
    while i < len(body) - 1:
        ch = body[i]
        if quoted:
            if ch == "\\" and i + 1 < len(body) - 1:
                i += 1
                current += body[i]
            elif ch == '"':
                quoted = False
            else:
                current += ch
        elif ch == '"':
            quoted = was_quoted = True
        elif ch == ",":
            items.append(None if not was_quoted and current.strip().upper() == "NULL"
                         else (current if was_quoted else current.strip()))  # fmt: skip
            current, was_quoted = "", False
        elif ch in "{}":
            raise _refuse("a multi-dimensional array literal")
        else:
            current += ch
        i += 1
    if body != "{}":
        items.append(None if not was_quoted and current.strip().upper() == "NULL"
                     else (current if was_quoted else current.strip()))  # fmt: skip
    return items


def _cast(node: exp.Cast) -> None:
    name = _type_name(node.to)
    array = name.endswith("[]")
    base = name[:-2].strip() if array else name
    if base.startswith(("numeric", "decimal", "varchar", "character", "bpchar")):
        base = base.split("(")[0].strip()
    if base in _REG_TYPES and not array:
        node.replace(_object_id(node, base))
        return
    if base in _REG_TYPES:
        target = "BIGINT[]"
    elif base in _CASTS:
        target = _CASTS[base] + ("[]" if array and not _CASTS[base].endswith("[]") else "")
    else:
        raise _refuse(f"a cast to {name[:40]}", "cast to text, a number, boolean or oid")
    value = node.this
    if (array or target.endswith("[]")) and isinstance(value, exp.Literal) and value.is_string:
        elements = [exp.null() if v is None else exp.Literal.string(v)
                    for v in _pg_array_literal(value.this)]  # fmt: skip
        node.set("this", exp.Array(expressions=elements))
    node.set("to", exp.DataType.build(target, dialect="duckdb"))


def _object_id(node: exp.Cast, kind: str) -> exp.Expr:
    """``'adult'::regclass`` -> its oid; ``oid::regclass`` -> the oid, or its name as text."""
    value: exp.Expr = node.this
    if isinstance(value, exp.Literal) and value.is_string:
        name = value.this.strip()
        if kind in ("regproc", "regprocedure"):  # stored as names (pg_type.typinput ...)
            return exp.Literal.string(name.split("(")[0].rpartition(".")[2].strip('"'))
        if kind == "regtype":
            return _call("to_regtype", exp.Literal.string(name))
        lookup = _REG_TYPES[kind]
        assert lookup is not None
        relation, column = lookup
        bare = name.rpartition(".")[2]
        bare = bare[1:-1].replace('""', '"') if bare.startswith('"') else bare.lower()
        query = exp.select("oid").from_(
            exp.table_(relation, db=SANDBOX_SCHEMAS["pg_catalog"])
        ).where(exp.column(column).eq(exp.Literal.string(bare))).limit(1)
        return exp.Subquery(this=query)
    if isinstance(value, exp.Literal):
        value = exp.cast(value, exp.DataType.build("BIGINT"))
    if _textual(value) and kind in _TO_REG:  # a name computed in the query: look it up
        return _call(_TO_REG[kind], value)
    parent = node.parent
    as_text = isinstance(parent, exp.Cast) and _type_name(parent.to).split("(")[0] in (
        "text", "varchar", "character varying", "name"
    )
    if not as_text and not (isinstance(parent, exp.Alias | exp.Select)):
        return value  # compared or joined: PostgreSQL compares the oid
    return _name_of(value, kind)


_TO_REG = {"regclass": "to_regclass", "regtype": "to_regtype", "regnamespace": "to_regnamespace",
           "regrole": "to_regrole", "regproc": "to_regproc"}  # fmt: skip
_TEXT_NODES = (exp.DPipe, exp.Concat, exp.ConcatWs, exp.Lower, exp.Upper, exp.Trim,
               exp.Substring, exp.ByteString)  # fmt: skip


def _textual(value: exp.Expr) -> bool:
    """Whether an expression is a name (text) rather than an oid."""
    while isinstance(value, exp.Paren):
        value = value.this
    if isinstance(value, _TEXT_NODES):
        return True
    if isinstance(value, exp.Cast):
        return value.to.this in (exp.DataType.Type.VARCHAR, exp.DataType.Type.TEXT)
    if isinstance(value, exp.Anonymous):
        return value.this in (NAMED_FUNCTIONS["quote_ident"], NAMED_FUNCTIONS["quote_literal"])
    return False


def _name_of(oid: exp.Expr, kind: str) -> exp.Expr:
    if kind == "regtype":
        return _call("format_type", oid, exp.null())
    lookup = _REG_TYPES[kind]
    assert lookup is not None
    relation, column = lookup
    query = (
        exp.select(column)
        .from_(exp.table_(relation, db=SANDBOX_SCHEMAS["pg_catalog"], alias="emu_r"))
        .where(exp.column("oid", table="emu_r").eq(oid))
        .limit(1)
    )
    return exp.Coalesce(
        this=exp.Subquery(this=query), expressions=[exp.cast(oid, exp.DataType.build("VARCHAR"))]
    )


def _call(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=NAMED_FUNCTIONS[name], expressions=list(args))


_OPERATORS: dict[str, Callable[[exp.Expr, exp.Expr], exp.Expr]] = {
    "~": lambda a, b: exp.RegexpLike(this=a, expression=b),
    "~*": lambda a, b: exp.RegexpILike(this=a, expression=b),
    "!~": lambda a, b: exp.Not(this=exp.RegexpLike(this=a, expression=b)),
    "!~*": lambda a, b: exp.Not(this=exp.RegexpILike(this=a, expression=b)),
    "=": lambda a, b: exp.EQ(this=a, expression=b),
    "<>": lambda a, b: exp.NEQ(this=a, expression=b),
    "<": lambda a, b: exp.LT(this=a, expression=b),
    ">": lambda a, b: exp.GT(this=a, expression=b),
    "<=": lambda a, b: exp.LTE(this=a, expression=b),
    ">=": lambda a, b: exp.GTE(this=a, expression=b),
}


def _operator(node: exp.Operator) -> exp.Expr:
    """``a OPERATOR(pg_catalog.~) b`` -> the operator's own node."""
    symbol = str(node.args.get("operator", "")).replace("pg_catalog.", "").strip()
    build = _OPERATORS.get(symbol)
    if build is None:
        raise _refuse(f"the operator OPERATOR({symbol[:20]})")
    rhs = node.expression.this if isinstance(node.expression, exp.Collate) else node.expression
    return build(node.this, rhs)


def _named_function(node: exp.Anonymous, ctx: CatalogContext) -> None:
    name = str(node.name).lower()
    args = node.expressions
    if name in FUNCTION_RELATIONS and isinstance(node.parent, exp.Table):
        return  # FROM pg_get_keywords(): the table reference becomes the emulated relation
    if name == "current_setting" and args and isinstance(args[0], exp.Literal):
        value = ctx.setting(args[0].name)
        node.replace(exp.Literal.string(value) if value is not None else exp.null())
        return
    if name == "current_setting" and args:  # a computed name: the documented defaults
        node.set("this", MACRO_PREFIX + "current_setting")
        return
    if name == "pg_backend_pid" and not args:
        node.replace(exp.Literal.number(ctx.pid))
        return
    constants = {"version": VERSION_STRING, "current_database": "paradise",
                 "current_catalog": "paradise", "current_schema": "public",
                 "current_user": ctx.user, "session_user": ctx.user}  # fmt: skip
    if name in constants and not args:
        node.replace(exp.Literal.string(constants[name]))
        return
    if name == "current_schemas" and len(args) == 1:
        implicit = args[0].sql().lower() in ("true", "'t'", "'true'")
        names = ["pg_catalog", "public"] if implicit else ["public"]
        node.replace(exp.Array(expressions=[exp.Literal.string(n) for n in names]))
        return
    if name == "all" and len(args) == 1 and isinstance(node.parent, exp.NEQ):
        comparison = node.parent  # x <> ALL(array) -> NOT list_contains(array, x)
        other = comparison.this if comparison.expression is node else comparison.expression
        contains = exp.Anonymous(this="list_contains", expressions=[args[0], other])
        comparison.replace(exp.Not(this=exp.Paren(this=contains)))
        return
    target = NAMED_FUNCTIONS.get(name)
    if target is None or not isinstance(node.this, str):
        raise _refuse(f"the function {name}()", "the proxy emulates the catalog functions "
                      "psql, pgJDBC and SQLAlchemy use")  # fmt: skip
    node.set("this", target)


_ALLOWED_ANONYMOUS = frozenset(NAMED_FUNCTIONS.values()) | {
    "list_contains", MACRO_PREFIX + "current_setting"
}


def _check(node: exp.Expr, ctes: set[str]) -> None:
    """The translated tree holds only allowlisted nodes, functions, relations and types."""
    if isinstance(node, exp.Anonymous):
        if node.this not in _ALLOWED_ANONYMOUS:
            raise _refuse(f"the function {str(node.this).lower()}()")
        return
    if isinstance(node, exp.Func) and type(node) in FUNCTIONS:
        return
    allowed = NODES.get(type(node))
    if allowed is None:
        if isinstance(node, exp.Func):
            raise _refuse(f"the function {node.sql_name().lower()}()")
        raise _refuse(type(node).__name__)
    for key, value in node.args.items():
        if value is None or value is False or value == [] or key in allowed:
            continue
        raise _refuse(f"{type(node).__name__}.{key}")
    if isinstance(node, exp.Table):
        _check_table(node, ctes)
    elif isinstance(node, exp.Identifier) and not isinstance(node.this, str):
        raise _refuse("a computed identifier")
    elif isinstance(node, exp.Literal) and not isinstance(node.this, str):
        raise _refuse("a computed literal")
    elif isinstance(node, exp.Dot) and not (
        isinstance(node.this, exp.Paren) and isinstance(node.expression, exp.Identifier)
    ):
        raise _refuse(f"the name {node.sql('postgres')[:60]}")
    elif isinstance(node, exp.DataType):
        _check_type(node)
    elif isinstance(node, exp.Join):
        if str(node.side or "").upper() not in ("", "LEFT", "RIGHT", "FULL") or str(
            node.kind or ""
        ).upper() not in ("", "INNER", "OUTER", "CROSS"):
            raise _refuse(f"{node.side} {node.kind} JOIN")
    elif isinstance(node, exp.Window) and node.args.get("over") not in (None, "OVER"):
        raise _refuse("a named window")


def _check_table(node: exp.Table, ctes: set[str]) -> None:
    if isinstance(node.this, _TABLE_FUNCTIONS):
        return
    if not isinstance(node.this, exp.Identifier):
        raise _refuse(f"the table expression {node.sql('duckdb')[:60]}")
    if not node.db:
        if node.name.lower() in ctes:
            return
        raise _refuse(f'relation "{node.name}"')
    schema = next((s for s, sandbox in SANDBOX_SCHEMAS.items() if sandbox == node.db), None)
    if schema is None or (schema, node.name) not in RELATIONS:
        raise _refuse(f'relation "{node.db}.{node.name}"')


_SANDBOX_TYPES = frozenset(
    exp.DataType.build(t, dialect=dialect).this
    for t in (*_CASTS.values(), "BIGINT[]", "VARCHAR[]", "SMALLINT[]", "INTEGER[]")
    for dialect in ("duckdb", None)
)


def _check_type(node: exp.DataType) -> None:
    kind = node.this
    if kind == exp.DataType.Type.ARRAY or kind == exp.DataType.Type.LIST:
        return  # its element type is a DataType node checked on its own
    if kind not in _SANDBOX_TYPES:
        raise _refuse(f"the type {node.sql('duckdb')[:40]}")

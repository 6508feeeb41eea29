"""The emulated catalog: which ``pg_catalog`` / ``information_schema`` relations exist.

Each relation is a column list in PostgreSQL's own types (``oid``, ``name``,
``"char"``, ``aclitem[]`` ...), stored in the sandbox in the nearest DuckDB type. These
are the **only** relations a catalog query may read; their rows are built by
:mod:`paradise.server.pg.catalog.rows` from the tables and columns a role may see, and
relations without rows there (``pg_proc``, ``pg_index``, ``pg_constraint`` ...) are empty.
Nothing here comes from DuckDB's own catalog.

Example:
    >>> RELATIONS["pg_catalog", "pg_namespace"][:2]
    (('oid', 'oid'), ('nspname', 'name'))
    >>> duckdb_type("aclitem[]"), duckdb_type("int2vector"), duckdb_type("timestamptz")
    ('VARCHAR[]', 'SMALLINT[]', 'TIMESTAMP WITH TIME ZONE')
"""

from __future__ import annotations

from paradise.server.pg.catalog.types import TYPES

__all__ = ["FUNCTION_RELATIONS", "RELATIONS", "RELATION_OIDS", "VIEWS", "duckdb_type",
           "pg_type_oid"]  # fmt: skip

_PG = {
    "pg_namespace": "oid oid, nspname name, nspowner oid, nspacl aclitem[]",
    "pg_class": """oid oid, relname name, relnamespace oid, reltype oid, reloftype oid,
        relowner oid, relam oid, relfilenode oid, reltablespace oid, relpages int4,
        reltuples float4, relallvisible int4, reltoastrelid oid, relhasindex bool,
        relisshared bool, relpersistence char, relkind char, relnatts int2, relchecks int2,
        relhasrules bool, relhastriggers bool, relhassubclass bool, relrowsecurity bool,
        relforcerowsecurity bool, relispopulated bool, relreplident char, relispartition bool,
        relrewrite oid, relfrozenxid xid, relminmxid xid, relacl aclitem[], reloptions text[],
        relpartbound pg_node_tree""",
    "pg_attribute": """attrelid oid, attname name, atttypid oid, attstattarget int4,
        attlen int2, attnum int2, attndims int4, attcacheoff int4, atttypmod int4,
        attbyval bool, attalign char, attstorage char, attcompression char, attnotnull bool,
        atthasdef bool, atthasmissing bool, attidentity char, attgenerated char,
        attisdropped bool, attislocal bool, attinhcount int4, attcollation oid,
        attacl aclitem[], attoptions text[], attfdwoptions text[], attmissingval anyarray""",
    "pg_type": """oid oid, typname name, typnamespace oid, typowner oid, typlen int2,
        typbyval bool, typtype char, typcategory char, typispreferred bool, typisdefined bool,
        typdelim char, typrelid oid, typsubscript regproc, typelem oid, typarray oid,
        typinput regproc, typoutput regproc, typreceive regproc, typsend regproc,
        typmodin regproc, typmodout regproc, typanalyze regproc, typalign char,
        typstorage char, typnotnull bool, typbasetype oid, typtypmod int4, typndims int4,
        typcollation oid, typdefaultbin pg_node_tree, typdefault text, typacl aclitem[]""",
    "pg_database": """oid oid, datname name, datdba oid, encoding int4, datlocprovider char,
        datistemplate bool, datallowconn bool, datconnlimit int4, datfrozenxid xid,
        datminmxid xid, dattablespace oid, datcollate text, datctype text, daticulocale text,
        daticurules text, datcollversion text, datacl aclitem[]""",
    "pg_roles": """rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool,
        rolcreatedb bool, rolcanlogin bool, rolreplication bool, rolconnlimit int4,
        rolpassword text, rolvaliduntil timestamptz, rolbypassrls bool, rolconfig text[],
        oid oid""",
    "pg_user": """usename name, usesysid oid, usecreatedb bool, usesuper bool, userepl bool,
        usebypassrls bool, passwd text, valuntil timestamptz, useconfig text[]""",
    "pg_auth_members": """oid oid, roleid oid, member oid, grantor oid, admin_option bool,
        inherit_option bool, set_option bool""",
    "pg_am": "oid oid, amname name, amhandler regproc, amtype char",
    "pg_tablespace": "oid oid, spcname name, spcowner oid, spcacl aclitem[], spcoptions text[]",
    "pg_collation": """oid oid, collname name, collnamespace oid, collowner oid,
        collprovider char, collisdeterministic bool, collencoding int4, collcollate text,
        collctype text, colliculocale text, collicurules text, collversion text""",
    "pg_tables": """schemaname name, tablename name, tableowner name, tablespace name,
        hasindexes bool, hasrules bool, hastriggers bool, rowsecurity bool""",
    "pg_settings": """name text, setting text, unit text, category text, short_desc text,
        extra_desc text, context text, vartype text, source text, min_val text, max_val text,
        enumvals text[], boot_val text, reset_val text, sourcefile text, sourceline int4,
        pending_restart bool""",
    "pg_proc": """oid oid, proname name, pronamespace oid, proowner oid, prolang oid,
        procost float4, prorows float4, provariadic oid, prosupport regproc, prokind char,
        prosecdef bool, proleakproof bool, proisstrict bool, proretset bool,
        provolatile char, proparallel char, pronargs int2, pronargdefaults int2,
        prorettype oid, proargtypes oidvector, proallargtypes oid[], proargmodes char[],
        proargnames text[], proargdefaults pg_node_tree, protrftypes oid[], prosrc text,
        probin text, prosqlbody pg_node_tree, proconfig text[], proacl aclitem[]""",
    "pg_index": """indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2,
        indisunique bool, indnullsnotdistinct bool, indisprimary bool, indisexclusion bool,
        indimmediate bool, indisclustered bool, indisvalid bool, indcheckxmin bool,
        indisready bool, indislive bool, indisreplident bool, indkey int2vector,
        indcollation oidvector, indclass oidvector, indoption int2vector,
        indexprs pg_node_tree, indpred pg_node_tree""",
    "pg_constraint": """oid oid, conname name, connamespace oid, contype char,
        condeferrable bool, condeferred bool, convalidated bool, conrelid oid, contypid oid,
        conindid oid, conparentid oid, confrelid oid, confupdtype char, confdeltype char,
        confmatchtype char, conislocal bool, coninhcount int4, connoinherit bool,
        conkey int2[], confkey int2[], conpfeqop oid[], conppeqop oid[], conffeqop oid[],
        confdelsetcols int2[], conexclop oid[], conbin pg_node_tree""",
    "pg_attrdef": "oid oid, adrelid oid, adnum int2, adbin pg_node_tree",
    "pg_description": "objoid oid, classoid oid, objsubid int4, description text",
    "pg_shdescription": "objoid oid, classoid oid, description text",
    "pg_extension": """oid oid, extname name, extowner oid, extnamespace oid,
        extrelocatable bool, extversion text, extconfig oid[], extcondition text[]""",
    "pg_inherits": "inhrelid oid, inhparent oid, inhseqno int4, inhdetachpending bool",
    "pg_trigger": """oid oid, tgrelid oid, tgparentid oid, tgname name, tgfoid oid,
        tgtype int2, tgenabled char, tgisinternal bool, tgconstrrelid oid, tgconstrindid oid,
        tgconstraint oid, tgdeferrable bool, tginitdeferred bool, tgnargs int2,
        tgattr int2vector, tgargs bytea, tgqual pg_node_tree, tgoldtable name,
        tgnewtable name""",
    "pg_rewrite": """oid oid, rulename name, ev_class oid, ev_type char, ev_enabled char,
        is_instead bool, ev_qual pg_node_tree, ev_action pg_node_tree""",
    "pg_policy": """oid oid, polname name, polrelid oid, polcmd char, polpermissive bool,
        polroles oid[], polqual pg_node_tree, polwithcheck pg_node_tree""",
    "pg_statistic_ext": """oid oid, stxrelid oid, stxname name, stxnamespace oid,
        stxowner oid, stxstattarget int4, stxkeys int2vector, stxkind char[],
        stxexprs pg_node_tree""",
    "pg_publication": """oid oid, pubname name, pubowner oid, puballtables bool,
        pubinsert bool, pubupdate bool, pubdelete bool, pubtruncate bool, pubviaroot bool""",
    "pg_publication_rel": """oid oid, prpubid oid, prrelid oid, prqual pg_node_tree,
        prattrs int2vector""",
    "pg_publication_namespace": "oid oid, pnpubid oid, pnnspid oid",
    "pg_subscription": "oid oid, subdbid oid, subname name, subowner oid, subenabled bool",
    "pg_partitioned_table": """partrelid oid, partstrat char, partnatts int2,
        partdefid oid, partattrs int2vector, partclass oidvector, partcollation oidvector,
        partexprs pg_node_tree""",
    "pg_foreign_table": "ftrelid oid, ftserver oid, ftoptions text[]",
    "pg_foreign_server": """oid oid, srvname name, srvowner oid, srvfdw oid, srvtype text,
        srvversion text, srvacl aclitem[], srvoptions text[]""",
    "pg_foreign_data_wrapper": """oid oid, fdwname name, fdwowner oid, fdwhandler oid,
        fdwvalidator oid, fdwacl aclitem[], fdwoptions text[]""",
    "pg_user_mapping": "oid oid, umuser oid, umserver oid, umoptions text[]",
    "pg_depend": """classid oid, objid oid, objsubid int4, refclassid oid, refobjid oid,
        refobjsubid int4, deptype char""",
    "pg_enum": "oid oid, enumtypid oid, enumsortorder float4, enumlabel name",
    "pg_range": """rngtypid oid, rngsubtype oid, rngmultitypid oid, rngcollation oid,
        rngsubopc oid, rngcanonical regproc, rngsubdiff regproc""",
    "pg_sequence": """seqrelid oid, seqtypid oid, seqstart int8, seqincrement int8,
        seqmax int8, seqmin int8, seqcache int8, seqcycle bool""",
    "pg_sequences": """schemaname name, sequencename name, sequenceowner name,
        data_type regtype, start_value int8, min_value int8, max_value int8,
        increment_by int8, cycle bool, cache_size int8, last_value int8""",
    "pg_views": "schemaname name, viewname name, viewowner name, definition text",
    "pg_matviews": """schemaname name, matviewname name, matviewowner name, tablespace name,
        hasindexes bool, ispopulated bool, definition text""",
    "pg_indexes": "schemaname name, tablename name, indexname name, tablespace name, indexdef text",
    "pg_language": """oid oid, lanname name, lanowner oid, lanispl bool, lanpltrusted bool,
        lanplcallfoid oid, laninline oid, lanvalidator oid, lanacl aclitem[]""",
    "pg_cast": """oid oid, castsource oid, casttarget oid, castfunc oid, castcontext char,
        castmethod char""",
    "pg_operator": """oid oid, oprname name, oprnamespace oid, oprowner oid, oprkind char,
        oprcanmerge bool, oprcanhash bool, oprleft oid, oprright oid, oprresult oid,
        oprcom oid, oprnegate oid, oprcode regproc, oprrest regproc, oprjoin regproc""",
    "pg_opclass": """oid oid, opcmethod oid, opcname name, opcnamespace oid, opcowner oid,
        opcfamily oid, opcintype oid, opcdefault bool, opckeytype oid""",
    "pg_aggregate": "aggfnoid regproc, aggkind char, aggnumdirectargs int2",
    "pg_event_trigger": """oid oid, evtname name, evtevent name, evtowner oid, evtfoid oid,
        evtenabled char, evttags text[]""",
    "pg_default_acl": """oid oid, defaclrole oid, defaclnamespace oid, defaclobjtype char,
        defaclacl aclitem[]""",
    "pg_init_privs": "objoid oid, classoid oid, objsubid int4, privtype char, initprivs aclitem[]",
    "pg_seclabel": "objoid oid, classoid oid, objsubid int4, provider text, label text",
    "pg_conversion": """oid oid, conname name, connamespace oid, conowner oid,
        conforencoding int4, contoencoding int4, conproc regproc, condefault bool""",
    "pg_ts_config": "oid oid, cfgname name, cfgnamespace oid, cfgowner oid, cfgparser oid",
    "pg_stat_activity": """datid oid, datname name, pid int4, leader_pid int4, usesysid oid,
        usename name, application_name text, client_addr inet, client_hostname text,
        client_port int4, backend_start timestamptz, xact_start timestamptz,
        query_start timestamptz, state_change timestamptz, wait_event_type text,
        wait_event text, state text, backend_xid xid, backend_xmin xid, query_id int8,
        query text, backend_type text""",
    "pg_cursors": """name text, statement text, is_holdable bool, is_binary bool,
        is_scrollable bool, creation_time timestamptz""",
    "pg_timezone_names": "name text, abbrev text, utc_offset interval, is_dst bool",
    "pg_available_extensions": """name name, default_version text, installed_version text,
        comment text""",
    "pg_locks": """locktype text, database oid, relation oid, pid int4, mode text,
        granted bool""",
    "pg_stat_user_tables": """relid oid, schemaname name, relname name, seq_scan int8,
        seq_tup_read int8, idx_scan int8, idx_tup_fetch int8, n_tup_ins int8, n_tup_upd int8,
        n_tup_del int8, n_live_tup int8, n_dead_tup int8, last_vacuum timestamptz,
        last_autovacuum timestamptz, last_analyze timestamptz, last_autoanalyze timestamptz""",
    "pg_get_keywords": "word text, catcode char, barelabel bool, catdesc text, baredesc text",
    "pg_prepared_xacts": """transaction xid, gid text, prepared timestamptz, owner name,
        database name""",
}

FUNCTION_RELATIONS = frozenset(("pg_get_keywords",))
"""Set-returning functions emulated as relations (``FROM pg_get_keywords()``), not in pg_class."""

VIEWS = frozenset(
    ("pg_roles pg_user pg_tables pg_settings pg_sequences pg_views pg_matviews pg_indexes "
     "pg_stat_user_tables pg_cursors "
     "pg_stat_activity pg_timezone_names pg_available_extensions pg_locks "
     "pg_prepared_xacts").split()
)  # fmt: skip
"""pg_catalog relations that are views in PostgreSQL (``relkind 'v'``)."""

_INFO = {
    "schemata": """catalog_name sql_identifier, schema_name sql_identifier,
        schema_owner sql_identifier, default_character_set_catalog sql_identifier,
        default_character_set_schema sql_identifier, default_character_set_name sql_identifier,
        sql_path character_data""",
    "tables": """table_catalog sql_identifier, table_schema sql_identifier,
        table_name sql_identifier, table_type character_data,
        self_referencing_column_name sql_identifier, reference_generation character_data,
        user_defined_type_catalog sql_identifier, user_defined_type_schema sql_identifier,
        user_defined_type_name sql_identifier, is_insertable_into yes_or_no,
        is_typed yes_or_no, commit_action character_data""",
    "columns": """table_catalog sql_identifier, table_schema sql_identifier,
        table_name sql_identifier, column_name sql_identifier, ordinal_position cardinal_number,
        column_default character_data, is_nullable yes_or_no, data_type character_data,
        character_maximum_length cardinal_number, character_octet_length cardinal_number,
        numeric_precision cardinal_number, numeric_precision_radix cardinal_number,
        numeric_scale cardinal_number, datetime_precision cardinal_number,
        interval_type character_data, interval_precision cardinal_number,
        character_set_catalog sql_identifier, character_set_schema sql_identifier,
        character_set_name sql_identifier, collation_catalog sql_identifier,
        collation_schema sql_identifier, collation_name sql_identifier,
        domain_catalog sql_identifier, domain_schema sql_identifier,
        domain_name sql_identifier, udt_catalog sql_identifier, udt_schema sql_identifier,
        udt_name sql_identifier, scope_catalog sql_identifier, scope_schema sql_identifier,
        scope_name sql_identifier, maximum_cardinality cardinal_number,
        dtd_identifier sql_identifier, is_self_referencing yes_or_no, is_identity yes_or_no,
        identity_generation character_data, identity_start character_data,
        identity_increment character_data, identity_maximum character_data,
        identity_minimum character_data, identity_cycle yes_or_no,
        is_generated character_data, generation_expression character_data,
        is_updatable yes_or_no""",
    "views": """table_catalog sql_identifier, table_schema sql_identifier,
        table_name sql_identifier, view_definition character_data,
        check_option character_data, is_updatable yes_or_no, is_insertable_into yes_or_no,
        is_trigger_updatable yes_or_no, is_trigger_deletable yes_or_no,
        is_trigger_insertable_into yes_or_no""",
    "table_constraints": """constraint_catalog sql_identifier, constraint_schema sql_identifier,
        constraint_name sql_identifier, table_catalog sql_identifier,
        table_schema sql_identifier, table_name sql_identifier,
        constraint_type character_data, is_deferrable yes_or_no,
        initially_deferred yes_or_no, enforced yes_or_no, nulls_distinct yes_or_no""",
    "key_column_usage": """constraint_catalog sql_identifier, constraint_schema sql_identifier,
        constraint_name sql_identifier, table_catalog sql_identifier,
        table_schema sql_identifier, table_name sql_identifier, column_name sql_identifier,
        ordinal_position cardinal_number, position_in_unique_constraint cardinal_number""",
    "referential_constraints": """constraint_catalog sql_identifier,
        constraint_schema sql_identifier, constraint_name sql_identifier,
        unique_constraint_catalog sql_identifier, unique_constraint_schema sql_identifier,
        unique_constraint_name sql_identifier, match_option character_data,
        update_rule character_data, delete_rule character_data""",
    "constraint_column_usage": """table_catalog sql_identifier, table_schema sql_identifier,
        table_name sql_identifier, column_name sql_identifier,
        constraint_catalog sql_identifier, constraint_schema sql_identifier,
        constraint_name sql_identifier""",
    "check_constraints": """constraint_catalog sql_identifier, constraint_schema sql_identifier,
        constraint_name sql_identifier, check_clause character_data""",
    "routines": """specific_catalog sql_identifier, specific_schema sql_identifier,
        specific_name sql_identifier, routine_catalog sql_identifier,
        routine_schema sql_identifier, routine_name sql_identifier,
        routine_type character_data, data_type character_data,
        routine_definition character_data, external_language character_data""",
    "parameters": """specific_catalog sql_identifier, specific_schema sql_identifier,
        specific_name sql_identifier, ordinal_position cardinal_number,
        parameter_mode character_data, parameter_name sql_identifier,
        data_type character_data""",
    "sequences": """sequence_catalog sql_identifier, sequence_schema sql_identifier,
        sequence_name sql_identifier, data_type character_data""",
    "triggers": """trigger_catalog sql_identifier, trigger_schema sql_identifier,
        trigger_name sql_identifier, event_manipulation character_data,
        event_object_schema sql_identifier, event_object_table sql_identifier,
        action_statement character_data""",
    "table_privileges": """grantor sql_identifier, grantee sql_identifier,
        table_catalog sql_identifier, table_schema sql_identifier, table_name sql_identifier,
        privilege_type character_data, is_grantable yes_or_no, with_hierarchy yes_or_no""",
    "enabled_roles": "role_name sql_identifier",
    "character_sets": """character_set_catalog sql_identifier, character_set_schema sql_identifier,
        character_set_name sql_identifier, character_repertoire sql_identifier,
        form_of_use sql_identifier, default_collate_catalog sql_identifier,
        default_collate_schema sql_identifier, default_collate_name sql_identifier""",
}


def _columns(spec: str) -> tuple[tuple[str, str], ...]:
    out = []
    for part in spec.split(","):
        name, _, type_name = part.strip().partition(" ")
        out.append((name, type_name.strip()))
    return tuple(out)


RELATIONS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    **{("pg_catalog", name): _columns(spec) for name, spec in _PG.items()},
    **{("information_schema", name): _columns(spec) for name, spec in _INFO.items()},
}
"""(schema, relation) -> ((column, PostgreSQL type), ...): the whole readable catalog."""

_KNOWN_OIDS = {
    "pg_type": 1247, "pg_attribute": 1249, "pg_proc": 1255, "pg_class": 1259,
    "pg_database": 1262, "pg_tablespace": 1213, "pg_am": 2601, "pg_attrdef": 2604,
    "pg_constraint": 2606, "pg_depend": 2608, "pg_description": 2609, "pg_index": 2610,
    "pg_inherits": 2611, "pg_namespace": 2615, "pg_rewrite": 2618, "pg_trigger": 2620,
    "pg_extension": 3079, "pg_collation": 3456, "pg_enum": 3501, "pg_auth_members": 1261,
    "pg_shdescription": 2396, "pg_language": 2612, "pg_cast": 2605, "pg_operator": 2617,
    "pg_opclass": 2616, "pg_aggregate": 2600, "pg_policy": 3256, "pg_sequence": 2224,
}  # fmt: skip


def _relation_oids() -> dict[tuple[str, str], int]:
    oids: dict[tuple[str, str], int] = {}
    next_oid = 12000
    for key in RELATIONS:
        known = _KNOWN_OIDS.get(key[1]) if key[0] == "pg_catalog" else None
        if known is None:
            known, next_oid = next_oid, next_oid + 1
        oids[key] = known
    return oids


RELATION_OIDS = _relation_oids()
"""The ``pg_class`` oid of every emulated relation (PostgreSQL's where it has a fixed one)."""

_DUCK = {
    "oid": "BIGINT", "regproc": "VARCHAR", "regtype": "BIGINT", "xid": "BIGINT",
    "int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT", "float4": "REAL",
    "bool": "BOOLEAN", "name": "VARCHAR", "text": "VARCHAR", "char": "VARCHAR",
    "pg_node_tree": "VARCHAR", "aclitem": "VARCHAR", "anyarray": "VARCHAR[]",
    "int2vector": "SMALLINT[]", "oidvector": "BIGINT[]", "bytea": "BLOB", "inet": "VARCHAR",
    "timestamptz": "TIMESTAMP WITH TIME ZONE", "interval": "INTERVAL",
    "sql_identifier": "VARCHAR", "character_data": "VARCHAR", "yes_or_no": "VARCHAR",
    "cardinal_number": "INTEGER",
}  # fmt: skip

_PG_OID = {
    "oid": 26, "regproc": 24, "regtype": 2206, "xid": 28, "int2": 21, "int4": 23, "int8": 20,
    "float4": 700, "bool": 16, "name": 19, "text": 25, "char": 18, "pg_node_tree": 194,
    "aclitem": 1033, "anyarray": 2277, "int2vector": 22, "oidvector": 30, "bytea": 17,
    "inet": 869, "timestamptz": 1184, "interval": 1186, "sql_identifier": 19,
    "character_data": 1043, "yes_or_no": 1043, "cardinal_number": 23,
}  # fmt: skip


def duckdb_type(pg_name: str) -> str:
    """The sandbox's DuckDB type for a catalog column's PostgreSQL type."""
    if pg_name.endswith("[]"):
        inner = duckdb_type(pg_name[:-2])
        return inner if inner.endswith("[]") else inner + "[]"
    return _DUCK[pg_name]


def pg_type_oid(pg_name: str) -> int:
    """The PostgreSQL type oid of a catalog column type (arrays: the array type)."""
    if pg_name.endswith("[]"):
        return TYPES[_PG_OID[pg_name[:-2]]].array or 1009
    return _PG_OID[pg_name]

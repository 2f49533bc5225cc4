"""The PostgreSQL schema: the SQLite engine's tables, with the interval rules enforced by
the database, migrated under an advisory lock so several processes can call `setup()`.

Everything lives in one schema (default `sgam`), beside LangGraph's own tables. The
schema version is `sgam_meta.schema_version`; DDL is transactional in PostgreSQL, so a
migration either lands whole or not at all. No `CREATE INDEX CONCURRENTLY`: it cannot run
inside a transaction, the known failure of LangGraph's PostgresStore set-up.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from sgam_store.core import analysis
from sgam_store.core.errors import (
    ForeignDatabaseError,
    SchemaVersionError,
    StoreUnavailableError,
)
from sgam_store.engines.common import migrations as portable
from sgam_store.engines.common import schema
from sgam_store.engines.common.dialect import POSTGRES, export
from sgam_store.engines.common.schema import ddl

export(globals(), portable, POSTGRES)  # the bookkeeping both engines share

# pg_advisory_xact_lock key for schema changes: "sgam" in ASCII.
MIGRATION_LOCK = 0x7367616D

V1 = [
    """CREATE TABLE facts (
        row_id             bigint PRIMARY KEY,
        fact_id            bigint NOT NULL,
        tenant_id          text NOT NULL,
        namespace          text NOT NULL,
        subject            text NOT NULL,
        attribute          text NOT NULL,
        value              text NOT NULL CHECK (json_typeof(value::json) = 'object'),
        -- Filters read this; `value` keeps the exact text the ledger compares and returns.
        doc                jsonb GENERATED ALWAYS AS (value::jsonb) STORED,
        scalar             integer NOT NULL DEFAULT 0,
        memory_type        text NOT NULL,
        schema_version     integer NOT NULL,
        valid_from         timestamptz NOT NULL,
        valid_to           timestamptz,
        recorded_at        timestamptz NOT NULL,
        known_from         timestamptz NOT NULL,
        known_to           timestamptz,
        created_at         timestamptz NOT NULL,
        supersedes_fact_id bigint,
        source_episode_id  text NOT NULL,
        confidence         double precision,
        retention_policy   text,
        expires_at         timestamptz,
        ttl_minutes        double precision,
        decided_by         text,
        CHECK (valid_to IS NULL OR valid_from < valid_to),
        CHECK (known_to IS NULL OR known_from <= known_to),
        -- No two believed versions of one key overlap in valid time. Deferred: a write
        -- retires and appends inside one transaction; only its end state must hold.
        CONSTRAINT facts_no_overlap EXCLUDE USING gist (
            tenant_id WITH =, namespace WITH =, attribute WITH =,
            tstzrange(valid_from, valid_to) WITH &&
        ) WHERE (known_to IS NULL) DEFERRABLE INITIALLY DEFERRED
    )""",
    # Row ids come in blocks (see versions.ROW_ID_BLOCK): concurrent writers never meet.
    "CREATE SEQUENCE facts_row_ids INCREMENT BY 64",
    # Keys are looked up by (namespace, attribute); tenant_id is in every unique and
    # exclusion constraint, so the tables can be distributed by tenant (e.g. Citus).
    """CREATE UNIQUE INDEX facts_one_open ON facts (namespace, attribute, tenant_id)
       WHERE valid_to IS NULL AND known_to IS NULL""",
    """CREATE UNIQUE INDEX facts_one_start ON facts (namespace, attribute, valid_from, tenant_id)
       WHERE known_to IS NULL""",
    schema.FACTS_KEY_TIME,
    """CREATE INDEX facts_current_ns ON facts (tenant_id, namespace text_pattern_ops)
       WHERE valid_to IS NULL AND known_to IS NULL""",
    *schema.FACT_LOOKUPS,
    schema.FACTS_RETENTION,
    "CREATE INDEX facts_doc ON facts USING gin (doc jsonb_path_ops)",
    # One keyword row per fact. The text-search configuration is the keyword language
    # (sgam_meta.text_search_config); changing it regenerates the column
    # (indexing.set_language).
    """CREATE TABLE fact_keywords (
        fact_id   bigint PRIMARY KEY,
        tenant_id text NOT NULL,
        body      text NOT NULL,
        tsv       tsvector GENERATED ALWAYS AS (to_tsvector({config}, body)) STORED
    )""",
    # On tsv alone, as V1 shipped it (measured then: 6.2 ms for (tenant_id, tsv) against
    # 1.7 ms, a tenant's query at 20k). V7 replaces it with (tenant_id, tsv): measured
    # again with today's keyword statement, the two-column index is the faster.
    "CREATE INDEX fact_keywords_tsv ON fact_keywords USING gin (tsv)",
    ddl(POSTGRES, schema.SGAM_META),
    ddl(POSTGRES, schema.EPISODES),
    schema.EPISODES_THREAD,
    schema.EPISODES_RETENTION,
    ddl(POSTGRES, schema.FACT_SOURCES),
    schema.FACT_SOURCES_EPISODE,
    ddl(POSTGRES, schema.ENDED_SESSIONS),
    """CREATE TABLE backfill_log (
        log_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        fact_id       bigint NOT NULL,
        old_row_id    bigint NOT NULL,
        new_row_id    bigint NOT NULL,
        from_version  integer NOT NULL,
        to_version    integer NOT NULL,
        transforms    text NOT NULL,
        backfilled_at timestamptz NOT NULL
    )""",
    "CREATE INDEX backfill_log_fact ON backfill_log (fact_id)",
    *(ddl(POSTGRES, statement) for statement in schema.MEMORY_CANDIDATES),
    # A candidate left without support goes too: its value came only from those episodes.
    """CREATE FUNCTION candidate_support_last_gone() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         DELETE FROM memory_candidates c WHERE c.candidate_id = OLD.candidate_id
           AND NOT EXISTS (SELECT 1 FROM candidate_support s
                           WHERE s.candidate_id = OLD.candidate_id);
         RETURN NULL;
       END $$""",
    """CREATE TRIGGER candidate_support_last_gone AFTER DELETE ON candidate_support
       FOR EACH ROW EXECUTE FUNCTION candidate_support_last_gone()""",
    ddl(POSTGRES, schema.EPISODE_EXTRACTIONS),
]

V2 = [
    # Filters on one tenant's current facts (filters.TENANT_DOC): facts_doc alone finds
    # every tenant's matches first.
    """CREATE INDEX facts_tenant_doc ON facts
       USING gin (jsonb_set('{}'::jsonb, ARRAY[tenant_id], doc) jsonb_path_ops)
       WHERE valid_to IS NULL AND known_to IS NULL""",
]

# V3: corrections written as new memories (see `schema.SUPERSESSION`).
V3 = [ddl(POSTGRES, statement) for statement in schema.SUPERSESSION]

# The keyword column as `indexing.set_language` recreates it (its index: KEYWORD_INDEX).
TSV_COLUMN = (
    "ALTER TABLE fact_keywords ADD COLUMN tsv tsvector "
    "GENERATED ALWAYS AS (to_tsvector({config}, body)) STORED"
)

# V4: the change feed's indexes; V5: the inspector's per-subject totals (see `schema`).
V4 = list(schema.CHANGE_FEED)
V5 = [schema.CURRENT_COUNT]


def _quote(statement: str) -> str:
    """`statement` as an SQL string literal (for EXECUTE inside a DO block)."""
    return "'" + statement.replace("'", "''") + "'"


# The tables that hold a tenant's rows, each with its `tenant_id` column. fact_vectors is
# created by `ensure_vector_table` (its dims come from the index config), and gets its
# policies there or, when it already exists, from ROW_SECURITY below. The tables that
# name a tenant's facts or episodes by id gained a tenant in V9 (`TENANT_LINKS`); only
# sgam_meta (schema version, language, layout) holds no tenant's data.
TENANT_TABLES = (
    "facts",
    "fact_keywords",
    "episodes",
    "ended_sessions",
    "memory_candidates",
    "supersession_queue",
    "supersession_decisions",
)
# The operation's tenant, set per transaction by the engine (`engine.confine`); missing
# (NULL) matches no row. `true`: a missing setting reads as NULL, not as an error.
TENANT_MATCH = "tenant_id = current_setting('sgam.tenant', true)"
# The all-tenant scope: honored only for the role that ran the migration (the tables'
# owner) and its members, whatever a session sets: the policy names that role (TO), so
# for any other role it does not exist and the tenant policy alone decides.
ALL_TENANTS = "current_setting('sgam.all_tenants', true) = 'on'"


def policies(table: str, tenant_match: str = TENANT_MATCH) -> list[str]:
    """Row security for one table: its rows are the operation's tenant's, or every
    tenant's for the owner's all-tenant scope. Created inert: `enable_row_security`
    turns them on (SGAMStore(..., row_security=True) at setup)."""
    return [  # dropped first: a schema rebuilt by hand may keep them (idempotent)
        f"DROP POLICY IF EXISTS sgam_tenant ON {table}",
        f"DROP POLICY IF EXISTS sgam_all_tenants ON {table}",
        f"CREATE POLICY sgam_tenant ON {table} USING ({tenant_match}) WITH CHECK ({tenant_match})",
        f"CREATE POLICY sgam_all_tenants ON {table} TO CURRENT_USER "
        f"USING ({ALL_TENANTS}) WITH CHECK ({ALL_TENANTS})",
    ]


# Row security (issue 28): policies on every tenant table; see docs/postgres.md.
ROW_SECURITY = [
    *(s for table in TENANT_TABLES for s in policies(table)),
    # A candidate's support rows are visible when the candidate is (its policy applies
    # inside the EXISTS), so a payload is never read without its tenant.
    *policies(
        "candidate_support",
        "EXISTS (SELECT 1 FROM memory_candidates c "
        "WHERE c.candidate_id = candidate_support.candidate_id)",
    ),
    # fact_vectors exists only once a store with an index has opened the database.
    "DO $$ BEGIN IF to_regclass('fact_vectors') IS NOT NULL THEN "
    + " ".join(f"EXECUTE {_quote(s)};" for s in policies("fact_vectors"))
    + " END IF; END $$",
]

# One entry per schema version: ROW_SECURITY is v6; V7 and later are appended below.
MIGRATIONS: list[list[str]] = [V1, V2, V3, V4, V5, ROW_SECURITY]
LATEST = len(MIGRATIONS)


def _tables(cur: Any, schema: str) -> set[str]:
    rows = cur.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
    ).fetchall()
    return {name for (name,) in rows}


def _version(cur: Any, tables: set[str]) -> int:
    if "sgam_meta" not in tables:
        return 0
    row = cur.execute("SELECT value FROM sgam_meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def check_owned(cur: Any, schema: str) -> None:
    """Refuse a schema that another program's tables occupy, before writing to it."""
    tables = _tables(cur, schema)
    if not tables or {"facts", "sgam_meta"} <= tables:
        return
    if {"store", "store_migrations"} <= tables:
        owner = "LangGraph's PostgresStore"
    else:
        owner = "another program (tables: " + ", ".join(sorted(tables)[:5]) + ")"
    raise ForeignDatabaseError(
        f"schema {schema!r} holds tables of {owner}; sgam-store leaves it untouched. "
        "Pass another schema (SGAMStore.from_conn_string(uri, schema=...))"
    )


def read_settings(conn: Any, schema: str, requested_tenant_at: int | None, dims: int | None) -> int:
    """A read-only open's set-up, in place of `migrate` and the settling after it: the
    schema must hold sgam-store's tables at LATEST (nothing is created or upgraded); the
    database's `tenant_at` is returned and the vectors' dims checked, nothing recorded."""
    with conn.transaction():
        cur = conn.cursor()
        tables = _tables(cur, schema)
        if not tables:
            raise StoreUnavailableError(f"schema {schema!r}: {portable.NO_STORE}{_stores(cur)}")
        check_owned(cur, schema)
        found = _version(cur, tables)
        portable.check_version(found, LATEST)
        if found < LATEST:
            raise SchemaVersionError(portable.older(found, LATEST))
        if dims is not None:
            portable.recorded_dims(POSTGRES, cur, dims)
        return portable.read_tenant_at(POSTGRES, cur, requested_tenant_at)


def _stores(cur: Any) -> str:
    """'; schemas holding one: a, b' for the refusal of a schema with no store in it."""
    rows = cur.execute(
        "SELECT table_schema FROM information_schema.tables WHERE table_name = 'sgam_meta' "
        "ORDER BY 1"
    ).fetchall()
    return f"; schemas holding one: {', '.join(s for (s,) in rows)}" if rows else ""


def migrate(conn: Any, schema: str) -> int:
    """Bring the schema to LATEST under the migration lock; return the version found.

    A new database's keywords use the default language's configuration; the store's
    `setup()` may switch an empty one to the language it asks for. A schema already at
    LATEST is left without a statement of DDL, so the application role (which may not
    create anything) can open it."""
    with conn.transaction():
        cur = conn.cursor()
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        if _version(cur, _tables(cur, schema)) == LATEST:
            return LATEST
        cur.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        cur.execute("CREATE EXTENSION IF NOT EXISTS btree_gist SCHEMA public")
        cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        check_owned(cur, schema)
        found = _version(cur, _tables(cur, schema))
        portable.check_version(found, LATEST)
        config = sql.Literal(analysis.DEFAULT_LANGUAGE).as_string(conn) + "::regconfig"
        for version in range(found, LATEST):
            for statement in MIGRATIONS[version]:
                cur.execute(statement.replace("{config}", config))
        if found == 0:
            cur.execute(
                "INSERT INTO sgam_meta (key, value) VALUES ('text_search_config', %s)",
                (analysis.DEFAULT_LANGUAGE,),
            )
        cur.execute(
            "INSERT INTO sgam_meta (key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(LATEST),),
        )
    return found


def settle_tenant_at(conn: Any, requested: int | None) -> int:
    """Record the namespace layout's `tenant_at` once, and return the database's."""
    with conn.transaction():
        cur = conn.cursor()
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        return portable.record_tenant_at(POSTGRES, cur, requested)


def ensure_vector_table(conn: Any, dims: int) -> None:
    """Create the vector table for `dims`, or check an existing one has the same dims.

    No approximate index: every vector search scans exactly (see reads.nearest and V10).
    """
    with conn.transaction():
        cur = conn.cursor()
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        if portable.recorded_dims(POSTGRES, cur, dims):
            return
        cur.execute(
            f"""CREATE TABLE fact_vectors (
                vec_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                fact_id    bigint NOT NULL,
                field      text NOT NULL,
                tenant_id  text NOT NULL,
                is_current boolean NOT NULL,
                embedding  vector({int(dims)}) NOT NULL
            )"""
        )
        cur.execute("CREATE INDEX fact_vectors_fact ON fact_vectors (fact_id)")
        # An exact scan of one tenant's current vectors reads only those (reads.nearest).
        cur.execute("CREATE INDEX fact_vectors_tenant ON fact_vectors (tenant_id) WHERE is_current")
        for statement in policies("fact_vectors"):
            cur.execute(statement)
        if row_security_on(cur):
            cur.execute(_enable_sql("fact_vectors"))
        portable.record_dims(POSTGRES, cur, dims)


def _enable_sql(table: str) -> str:
    # FORCE: the owner is bound too (only superusers and BYPASSRLS roles are not).
    return f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY"


def row_security_on(cur: Any) -> bool:
    """Whether the database enforces the policies (set once by `enable_row_security`)."""
    row = cur.execute(
        "SELECT relrowsecurity AND relforcerowsecurity FROM pg_class WHERE oid = 'facts'::regclass"
    ).fetchone()
    return bool(row[0])


def enable_row_security(conn: Any) -> None:
    """Turn the policies on for every tenant table (idempotent; the owner only). There is
    no turning them off from the library: that is a deliberate `ALTER TABLE` by a DBA."""
    with conn.transaction():
        cur = conn.cursor()
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        if row_security_on(cur):
            return
        vectors = cur.execute("SELECT to_regclass('fact_vectors') IS NOT NULL").fetchone()[0]
        tables = [*TENANT_TABLES, *TENANT_LINKS, *(["fact_vectors"] if vectors else [])]
        for table in tables:
            cur.execute(_enable_sql(table))
        # The policy's `tenant_id = current_setting(...)` is checked before `@@`, which is
        # not leakproof, so under row security a keyword statement cannot read the GIN
        # index: this one finds the tenant's rows instead of a scan of every tenant's.
        # Only here: without the policies, the planner combined it with the GIN index.
        cur.execute("CREATE INDEX IF NOT EXISTS fact_keywords_tenant ON fact_keywords (tenant_id)")


def may_take_all_tenants(conn: Any) -> bool:
    """Whether the connected role sees every tenant under the all-tenant scope: a member
    of a role the all-tenant policy names (the owner), or a role RLS does not bind."""
    row = conn.execute(
        "SELECT (SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user) "
        "OR coalesce((SELECT bool_or(pg_has_role(current_user, r, 'MEMBER')) "
        "FROM pg_policy p, unnest(p.polroles) r "
        "WHERE p.polrelid = 'facts'::regclass AND p.polname = 'sgam_all_tenants'), false)"
    ).fetchone()
    return bool(row[0])


# V7 (issue 28, search speed): the keyword index keyed by tenant first (btree_gin), so a
# tenant's keyword query reads its own matches only, not every tenant's: 4.5 -> 1.6 ms
# for a tenant of 10,000 facts among 100,000 (docs/benchmarks.md). It replaces the index
# on tsv alone: a multicolumn GIN index serves a condition on any of its columns, so
# all-tenant queries and term counts read it too. `indexing.set_language` recreates it.
V7 = [
    "CREATE EXTENSION IF NOT EXISTS btree_gin SCHEMA public",
    "DROP INDEX fact_keywords_tsv",
    "CREATE INDEX fact_keywords_tsv ON fact_keywords USING gin (tenant_id, tsv)",
]
MIGRATIONS.append(V7)

# V8 (issue 28, search in a freshly written database): the keyword index without GIN's
# pending list (`fastupdate = off`). With it, new rows' entries wait unsorted (up to 4 MB)
# until a vacuum, and every keyword statement and term count reads all of them: right
# after a load, one tenant's keyword step took 6 ms for 130 matches.
KEYWORD_INDEX = (
    "CREATE INDEX fact_keywords_tsv ON fact_keywords USING gin (tenant_id, tsv) "
    "WITH (fastupdate = off)"
)
V8 = [
    "ALTER INDEX fact_keywords_tsv SET (fastupdate = off)",
    # Turning it off leaves the pending entries in place: move them into the index.
    "SELECT gin_clean_pending_list('fact_keywords_tsv'::regclass)",
]
MIGRATIONS.append(V8)

# V9 (issue 39): episode ids per tenant (`schema.TENANT_EPISODES`), and a tenant with row
# security on every table that names a tenant's facts or episodes: the application role
# could read and write fact_sources, episode_extractions and backfill_log across
# tenants (one tenant's source link on another's fact changed what its purge kept).
# Each link table's policy also checks, on write, that the row it names is visible to
# the operation: its fact (fact_sources, backfill_log) or its candidate
# (candidate_support); extraction marks are held by their episode's foreign key.
TENANT_LINKS = ("fact_sources", "backfill_log", "candidate_support", "episode_extractions")
_FACT_VISIBLE = "EXISTS (SELECT 1 FROM facts f WHERE f.fact_id = {table}.fact_id)"
_CANDIDATE_VISIBLE = (
    "EXISTS (SELECT 1 FROM memory_candidates c "
    "WHERE c.candidate_id = candidate_support.candidate_id)"
)


def _link_policies(table: str, visible: str | None) -> list[str]:
    """`policies` whose tenant check, for a link table, also needs the row it names."""
    match = TENANT_MATCH if visible is None else f"{TENANT_MATCH} AND {visible}"
    return policies(table, match)


def _add_tenant(table: str, source: str) -> list[str]:
    """`table` gains its rows' tenant from `source` (an UPDATE ... FROM clause); a row
    whose fact or episode is gone names nothing and goes."""
    return [
        f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS tenant_id text",  # a rerun keeps it
        f"UPDATE {table} SET tenant_id = o.tenant_id FROM {source}",
        f"DELETE FROM {table} WHERE tenant_id IS NULL",
        f"ALTER TABLE {table} ALTER COLUMN tenant_id SET NOT NULL",
    ]


_FACT_TENANTS = "(SELECT DISTINCT fact_id, tenant_id FROM facts) o WHERE o.fact_id = {}.fact_id"
V9 = [
    # The owner's migration reads every tenant's rows (FORCE binds it too).
    "SELECT set_config('sgam.all_tenants', 'on', true)",
    *_add_tenant("fact_sources", _FACT_TENANTS.format("fact_sources")),
    *_add_tenant("backfill_log", _FACT_TENANTS.format("backfill_log")),
    *_add_tenant(
        "candidate_support",
        "memory_candidates o WHERE o.candidate_id = candidate_support.candidate_id",
    ),
    *_add_tenant(
        "episode_extractions", "episodes o WHERE o.episode_id = episode_extractions.episode_id"
    ),
    # The primary key goes with the foreign keys that lean on it; each comes back keyed
    # by (tenant, episode).
    "ALTER TABLE episodes DROP CONSTRAINT episodes_pkey CASCADE",
    "ALTER TABLE episodes ADD PRIMARY KEY (tenant_id, episode_id)",
    "ALTER TABLE episode_extractions DROP CONSTRAINT episode_extractions_pkey",
    "ALTER TABLE episode_extractions ADD PRIMARY KEY (tenant_id, episode_id)",
    *(
        f"ALTER TABLE {table} ADD FOREIGN KEY (tenant_id, episode_id) "
        "REFERENCES episodes (tenant_id, episode_id) ON DELETE CASCADE"
        for table in ("episode_extractions", "candidate_support")
    ),
    "DROP INDEX fact_sources_episode",
    "DROP INDEX candidate_support_episode",
    *schema.TENANT_EPISODE_INDEXES,
    *_link_policies("fact_sources", _FACT_VISIBLE.format(table="fact_sources")),
    *_link_policies("backfill_log", _FACT_VISIBLE.format(table="backfill_log")),
    *_link_policies("candidate_support", _CANDIDATE_VISIBLE),
    *_link_policies("episode_extractions", None),
    # A database that enforces row security enforces it on these too.
    "DO $$ BEGIN IF (SELECT relforcerowsecurity FROM pg_class "
    "WHERE oid = 'facts'::regclass) THEN "
    + " ".join(f"EXECUTE {_quote(_enable_sql(t))};" for t in TENANT_LINKS)
    + " END IF; END $$",
]
MIGRATIONS.append(V9)

# V10 (issue 41): no HNSW index on the vectors. Search scans exactly in every scope: on
# realistic memory text, whose sentences repeat, the walk over all tenants found 0.88-0.92
# of the exact top 10 (the rule asks 0.95; see reads._nearest_sql), and an index no
# statement reads only costs every write its insert. fact_vectors exists only once a store
# with an index has opened the database.
V10 = ["DROP INDEX IF EXISTS fact_vectors_hnsw"]
MIGRATIONS.append(V10)
LATEST = len(MIGRATIONS)

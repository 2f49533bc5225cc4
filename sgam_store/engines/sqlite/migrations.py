"""Versioned store DDL: idempotent, safe for two processes opening one file at once.

`PRAGMA user_version` is the schema version. Each migration runs inside
`BEGIN IMMEDIATE`, and the version is re-read after the lock is held, so a second
process that raced us finds the work done and skips it. A database written by a
newer sgam-store is refused rather than touched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sgam_store.core import analysis, namespaces
from sgam_store.core.errors import (
    ForeignDatabaseError,
    SchemaVersionError,
    StoreUnavailableError,
)
from sgam_store.engines.common import migrations as portable
from sgam_store.engines.common import schema
from sgam_store.engines.common.dialect import SQLITE, export
from sgam_store.engines.common.schema import ddl

export(globals(), portable, SQLITE)  # the bookkeeping both engines share

FACTS_DDL = """
CREATE TABLE facts (
    row_id             INTEGER PRIMARY KEY,   -- one version of a fact
    fact_id            INTEGER NOT NULL,      -- stable across versions (row_id of the first)
    tenant_id          TEXT NOT NULL,
    namespace          TEXT NOT NULL,         -- dot-joined (tenant_id, *subject path)
    subject            TEXT NOT NULL,
    attribute          TEXT NOT NULL,         -- the BaseStore key
    value              TEXT NOT NULL CHECK (json_valid(value) AND json_type(value) = 'object'),
    scalar             INTEGER NOT NULL DEFAULT 0,  -- 1: value is {"value": scalar}
    memory_type        TEXT NOT NULL,
    schema_version     INTEGER NOT NULL,
    valid_from         TEXT NOT NULL,         -- valid time, inclusive
    valid_to           TEXT,                  -- valid time, exclusive; NULL = open
    recorded_at        TEXT NOT NULL,         -- when the store first learned the fact
    known_from         TEXT NOT NULL,         -- transaction time: this version became belief
    known_to           TEXT,                  -- transaction time: stopped being belief
    created_at         TEXT NOT NULL,         -- first valid_from for the key (Item.created_at)
    supersedes_fact_id INTEGER,
    source_episode_id  TEXT NOT NULL,
    confidence         REAL,
    retention_policy   TEXT,
    expires_at         TEXT,
    ttl_minutes        REAL,
    decided_by         TEXT,
    CHECK (valid_to IS NULL OR valid_from < valid_to),
    CHECK (known_to IS NULL OR known_from <= known_to)
)
"""

BACKFILL_LOG_FACT = "CREATE INDEX backfill_log_fact ON backfill_log (fact_id)"
# A candidate left without support goes too: its value came only from those episodes.
SUPPORT_TRIGGER = """CREATE TRIGGER candidate_support_last_gone AFTER DELETE ON candidate_support
       WHEN NOT EXISTS (SELECT 1 FROM candidate_support WHERE candidate_id = OLD.candidate_id)
       BEGIN DELETE FROM memory_candidates WHERE candidate_id = OLD.candidate_id; END"""

V1 = [
    FACTS_DDL,
    # One open fact per key in the current belief: the database, not the code, enforces it.
    """CREATE UNIQUE INDEX facts_one_open ON facts (namespace, attribute)
       WHERE valid_to IS NULL AND known_to IS NULL""",
    # Rule 1 backstop: two believed facts never share a key and a valid_from.
    """CREATE UNIQUE INDEX facts_one_start ON facts (namespace, attribute, valid_from)
       WHERE known_to IS NULL""",
    schema.FACTS_KEY_TIME,
    # Current reads by tenant/namespace (search, list_namespaces) touch only open rows.
    """CREATE INDEX facts_current_ns ON facts (tenant_id, namespace)
       WHERE valid_to IS NULL AND known_to IS NULL""",
    *schema.FACT_LOOKUPS,
    # vec0 rowid -> fact; one fact has one vector per embedded field.
    """CREATE TABLE vector_rows (
        vec_rowid INTEGER PRIMARY KEY,
        fact_id   INTEGER NOT NULL,
        field     TEXT NOT NULL
    )""",
    "CREATE INDEX vector_rows_fact ON vector_rows (fact_id)",
    # Keyword index, one row per fact (rowid = fact_id); BM25 ranking comes with FTS5.
    # `scope` holds one token per fact naming its tenant, so a tenant-scoped MATCH only
    # scores that tenant's rows instead of filtering every tenant's matches afterwards.
    """CREATE VIRTUAL TABLE fact_fts USING fts5(
        scope, body, tokenize = 'unicode61 remove_diacritics 2'
    )""",
    # Per-term document counts, so hybrid search can skip terms too common to matter.
    "CREATE VIRTUAL TABLE fact_fts_vocab USING fts5vocab(fact_fts, 'row')",
    ddl(SQLITE, schema.SGAM_META),
    ddl(SQLITE, schema.EPISODES),
    schema.EPISODES_THREAD,
    ddl(SQLITE, schema.FACT_SOURCES),
    schema.FACT_SOURCES_EPISODE,
    schema.FACTS_RETENTION,
    schema.EPISODES_RETENTION,
    ddl(SQLITE, schema.ENDED_SESSIONS),
    # Backfill audit: which version a schema backfill replaced by which. Ids and versions
    # only, never values: values live in the ledger, where erasure finds them.
    """CREATE TABLE backfill_log (
        log_id        INTEGER PRIMARY KEY,
        fact_id       INTEGER NOT NULL,
        old_row_id    INTEGER NOT NULL,
        new_row_id    INTEGER NOT NULL,
        from_version  INTEGER NOT NULL,
        to_version    INTEGER NOT NULL,
        transforms    TEXT NOT NULL,
        backfilled_at TEXT NOT NULL
    )""",
    BACKFILL_LOG_FACT,
    *(ddl(SQLITE, statement) for statement in schema.MEMORY_CANDIDATES),
    SUPPORT_TRIGGER,
    ddl(SQLITE, schema.EPISODE_EXTRACTIONS),
]

# V2: keyword rows numbered tenant first (see index.FACT_BITS), so a tenant-scoped
# keyword search reads one rowid range; the tenant token column goes. And the fact_id
# index covers the current-read rule.
V2 = [
    "CREATE TABLE tenants (slot INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL UNIQUE)",
    "INSERT INTO tenants (tenant_id) SELECT DISTINCT tenant_id FROM facts ORDER BY tenant_id",
    """CREATE VIRTUAL TABLE fact_keywords USING fts5(
        body, tokenize = 'unicode61 remove_diacritics 2'
    )""",
    """INSERT INTO fact_keywords (rowid, body)
       SELECT (t.slot << 40) | k.rowid, k.body FROM fact_fts k  -- 40 = index.FACT_BITS
       JOIN tenants t ON k.scope = 't' || lower(hex(t.tenant_id))""",
    "DROP TABLE fact_fts_vocab",
    "DROP TABLE fact_fts",
    "ALTER TABLE fact_keywords RENAME TO fact_fts",
    "CREATE VIRTUAL TABLE fact_fts_vocab USING fts5vocab(fact_fts, 'row')",
    # Search checks each ranked candidate fact against the read rule: with these columns
    # in the index a current-scope check never reads the table row (measured: 180
    # candidates 0.57 -> 0.31 ms at 100k facts).
    "DROP INDEX facts_fact_id",
    """CREATE INDEX facts_fact_id
       ON facts (fact_id, valid_to, known_to, expires_at, namespace, tenant_id)""",
]

# V3: a tenant's current facts, newest belief first. A listing (a search without a query,
# LangGraph's way to read a namespace) walks it in order and stops at its page: a
# tenant's filtered listing at 20k read all 2,000 of its rows and sorted them, 1.75 ms;
# 0.54 ms this way, an unfiltered one 0.18 ms.
V3 = [
    """CREATE INDEX facts_current_recent ON facts (tenant_id, known_from, row_id)
       WHERE valid_to IS NULL AND known_to IS NULL""",
]

# V4: corrections written as new memories (see `schema.SUPERSESSION`).
V4 = [ddl(SQLITE, statement) for statement in schema.SUPERSESSION]


def _vectors_in_table(conn: Any) -> None:
    """V5: vectors move from vec0 into `vector_rows`, a plain table (see `VECTORS_DDL`)."""
    conn.execute(VECTORS_DDL.replace("vector_rows", "vector_rows_v5"))
    vec0 = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'fact_vectors'").fetchone()
    if vec0:
        conn.execute(
            "INSERT INTO vector_rows_v5 (vec_rowid, fact_id, field, embedding) "
            "SELECT r.vec_rowid, r.fact_id, r.field, v.embedding FROM vector_rows r "
            "JOIN fact_vectors v ON v.rowid = r.vec_rowid"
        )
        conn.execute("DROP TABLE fact_vectors")
    conn.execute("DROP TABLE vector_rows")
    conn.execute("ALTER TABLE vector_rows_v5 RENAME TO vector_rows")
    conn.execute("CREATE INDEX vector_rows_fact ON vector_rows (fact_id)")


# Vectors sit in a plain table, one row per (fact, embedded field), instead of sqlite-vec's
# vec0. Measured at 100k facts x 384 dims (benchmarks/README.md, "Per-put accounting"):
# a vec0 insert cost 23 us in a batch of 100 and ~150 us alone, and clearing a retired
# vector's `is_current` flag 17 us more, against 8 us for a table row and no flag at all.
# What vec0 did better is a search that the in-process mirror does not serve (a
# point-in-time search, or `vector_cache=False`): its KNN read a tenant's 10k vectors in
# 8 ms, a scan with `vec_distance_cosine` reads them in ~26 ms (SqliteStore's own design).
# Writes are every put; those searches are the exception, and still exact.
VECTORS_DDL = """CREATE TABLE vector_rows (
    vec_rowid INTEGER PRIMARY KEY,
    fact_id   INTEGER NOT NULL,
    field     TEXT NOT NULL,
    embedding BLOB NOT NULL  -- float32, sqlite-vec's layout (`serialize_float32`)
)"""

V5: list[str | Callable[[Any], None]] = [
    _vectors_in_table,
    # One index for a key's versions where there were two: every version in valid-time
    # order (the point-in-time and known_at reads), and, with the CASE folding every
    # believed version to 0, still rule 1's backstop (two believed versions never share
    # a key and a start). Measured at 100k facts: 74.6 -> 63.2 us per fact row written.
    "DROP INDEX facts_one_start",
    "DROP INDEX facts_key_time",
    """CREATE UNIQUE INDEX facts_versions ON facts (namespace, attribute, valid_from,
       (CASE WHEN known_to IS NULL THEN 0 ELSE row_id END))""",
]

# The keyword table from V6 on: `body` holds the analyzed terms that are matched and
# ranked (`core.analysis`: stems under a language, the text itself under "simple"), and
# `source`, not indexed, the text as written where it differs, so that a change of
# language rebuilds every row from what was indexed (a put's `index=[...]` fields
# included), and a copy to another store or engine carries text, not one analysis's stems.
KEYWORDS_DDL = """CREATE VIRTUAL TABLE fact_fts USING fts5(
    body, source UNINDEXED, tokenize = 'unicode61 remove_diacritics 2'
)"""


def _keyword_source(conn: Any) -> None:
    """V6: the keyword table gains `source`, and the database records its keyword
    language: rows written before it are unstemmed ("simple"); a new database takes the
    default (`setup()` may record the store's requested one while it is still empty)."""
    conn.execute(KEYWORDS_DDL.replace("fact_fts", "fact_fts_v6"))
    conn.execute("INSERT INTO fact_fts_v6 (rowid, body) SELECT rowid, body FROM fact_fts")
    conn.execute("DROP TABLE fact_fts_vocab")
    conn.execute("DROP TABLE fact_fts")
    conn.execute("ALTER TABLE fact_fts_v6 RENAME TO fact_fts")
    conn.execute("CREATE VIRTUAL TABLE fact_fts_vocab USING fts5vocab(fact_fts, 'row')")
    written = conn.execute("SELECT EXISTS (SELECT 1 FROM facts)").fetchone()[0]
    conn.execute(
        "INSERT INTO sgam_meta (key, value) VALUES ('language', ?)",
        (analysis.LEGACY_LANGUAGE if written else analysis.DEFAULT_LANGUAGE,),
    )


V6: list[str | Callable[[Any], None]] = [_keyword_source]

# V7: the change feed's indexes; V8: the inspector's per-subject totals (see `schema`).
V7: list[str | Callable[[Any], None]] = list(schema.CHANGE_FEED)
V8: list[str | Callable[[Any], None]] = [schema.CURRENT_COUNT]

# V9: the totals' index holds fact_id too (SQLite only; PostgreSQL's stays as V5 made it).
# A search of one user reads the scope's (fact_id, row_id, expires_at) before ranking it
# whole (`reads.in_scope`); fact_id was the one column the index lacked, so each of the
# user's facts was read from the table (25 facts: 38 -> 30 us; 100 facts at 20k: see
# benchmarks/README.md). Replaced, not added: the totals read it as before, and a put
# keeps one index to update.
V9: list[str | Callable[[Any], None]] = [
    "DROP INDEX facts_current_count",
    """CREATE INDEX facts_current_count
       ON facts (tenant_id, namespace, expires_at, valid_to, known_to, fact_id)
       WHERE valid_to IS NULL AND known_to IS NULL""",
]

# V10: facts_current_ns goes (SQLite only). Its rows and its leading columns are
# facts_current_count's, so every read that sought it seeks that one instead, and the
# scans of all current rows walk facts_one_open (EXPLAIN QUERY PLAN over the statements
# the test suite and bench_langmem run); a put updated it for nothing: 0.70 of a batched
# put's 8.85 pages in LangMem's layout at 20k (benchmarks/README.md, "Round 3: the write
# side's statements").
V10: list[str | Callable[[Any], None]] = ["DROP INDEX IF EXISTS facts_current_ns"]


BACKFILL_LOG = """CREATE TABLE backfill_log (
        log_id        INTEGER PRIMARY KEY,
        fact_id       INTEGER NOT NULL,
        old_row_id    INTEGER NOT NULL,
        new_row_id    INTEGER NOT NULL,
        from_version  INTEGER NOT NULL,
        to_version    INTEGER NOT NULL,
        transforms    TEXT NOT NULL,
        backfilled_at TEXT NOT NULL,
        tenant_id     TEXT NOT NULL
    )"""
# Each rebuilt table: its new shape, and how its rows (under the old name) gain a tenant:
# an episode keeps its own; a source link or an audit row takes its fact's (a row whose
# fact is gone names nothing and is dropped); a support row its candidate's; an
# extraction mark its episode's.
_REBUILT = {
    "episodes": (
        schema.TENANT_EPISODES,
        "SELECT * FROM episodes_v10",  # the same columns, in the same order
    ),
    "fact_sources": (
        schema.TENANT_FACT_SOURCES,
        "SELECT s.fact_id, s.episode_id, f.tenant_id FROM fact_sources_v10 s "
        "JOIN (SELECT DISTINCT fact_id, tenant_id FROM facts) f ON f.fact_id = s.fact_id",
    ),
    "backfill_log": (
        BACKFILL_LOG,
        "SELECT b.*, f.tenant_id FROM backfill_log_v10 b "
        "JOIN (SELECT DISTINCT fact_id, tenant_id FROM facts) f ON f.fact_id = b.fact_id",
    ),
    "candidate_support": (
        schema.TENANT_CANDIDATE_SUPPORT,
        "SELECT s.*, c.tenant_id FROM candidate_support_v10 s "
        "JOIN memory_candidates c ON c.candidate_id = s.candidate_id",
    ),
    "episode_extractions": (
        schema.TENANT_EPISODE_EXTRACTIONS,
        "SELECT x.*, e.tenant_id FROM episode_extractions_v10 x "
        "JOIN episodes e ON e.episode_id = x.episode_id",
    ),
}


def _tenant_ids(conn: Any) -> None:
    """V11: episode ids per tenant, and a tenant on every table naming one (see
    `schema.TENANT_EPISODES`). SQLite alters no primary or foreign key, so each table
    is rebuilt: the old ones step aside under a `_v10` name (the children before
    episodes, so their foreign keys follow it), the new ones are filled from them, and
    the old ones go, the children first. Foreign keys stay on throughout."""
    for table in reversed(_REBUILT):
        conn.execute(f"ALTER TABLE {table} RENAME TO {table}_v10")
    for index in ("episodes_thread", "episodes_retention", "fact_sources_episode",
                  "candidate_support_episode", "backfill_log_fact"):  # fmt: skip
        conn.execute(f"DROP INDEX {index}")
    conn.execute("DROP TRIGGER candidate_support_last_gone")
    for table, (create, rows) in _REBUILT.items():
        conn.execute(ddl(SQLITE, create))
        conn.execute(f"INSERT INTO {table} {rows}")
    for table in reversed(_REBUILT):
        conn.execute(f"DROP TABLE {table}_v10")
    indexes = [schema.EPISODES_THREAD, schema.EPISODES_RETENTION, BACKFILL_LOG_FACT]
    for statement in (*indexes, *schema.TENANT_EPISODE_INDEXES, SUPPORT_TRIGGER):
        conn.execute(statement)


V11: list[str | Callable[[Any], None]] = [_tenant_ids]

MIGRATIONS: list[list[str | Callable[[Any], None]]] = [
    V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11,
]  # fmt: skip
LATEST = len(MIGRATIONS)


def _version(conn: Any) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _tables(conn: Any) -> set[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite~_%' "
        "ESCAPE '~'"
    ).fetchall()
    return {name for (name,) in rows}


def check_owned(conn: Any) -> None:
    """Refuse a file that another program wrote, before anything is written to it.

    Ours is a file with no tables yet (user_version 0), or one with sgam-store's
    schema version and its `facts` and `sgam_meta` tables. Anything else, such as a
    LangGraph SqliteStore file or an application's own `facts` table, would gain our
    tables beside data that no read of ours can see.
    """
    try:
        version, tables = _version(conn), _tables(conn)
    except Exception as exc:
        if type(exc).__name__ != "DatabaseError":  # every driver's "file is not a database"
            raise
        raise ForeignDatabaseError(f"not a SQLite database ({exc}); nothing was changed") from exc
    if (version == 0 and not tables) or (version > 0 and {"facts", "sgam_meta"} <= tables):
        return
    if {"store", "store_migrations"} <= tables:
        owner = "LangGraph's SqliteStore"
    else:
        owner = "another program (tables: " + ", ".join(sorted(tables)[:5]) + ")"
    raise ForeignDatabaseError(
        f"this file was written by {owner}; sgam-store leaves it untouched. Open a new file "
        "for SGAMStore and bring the items over: `sgam import --from <this file> "
        "--db <new file>` (or SGAMStore.import_items)"
    )


def check_readable(conn: Any) -> None:
    """A read-only open's check, in place of `migrate`: the file must hold sgam-store's
    schema at LATEST, since a read-only open creates and upgrades nothing. An empty file
    (or one with no tables yet) holds no store; an older schema names how to upgrade it."""
    check_owned(conn)
    found = _version(conn)
    portable.check_version(found, LATEST)
    if found == 0:
        raise StoreUnavailableError(portable.NO_STORE)
    if found < LATEST:
        raise SchemaVersionError(portable.older(found, LATEST))


def read_settings(conn: Any, requested_tenant_at: int | None, dims: int | None) -> int:
    """What `settle_tenant_at` and `ensure_vector_table` check, with nothing recorded:
    the database's `tenant_at` (a mismatch raises), and the vectors' dims when recorded."""
    if dims is not None:
        portable.recorded_dims(SQLITE, conn, dims)
    return portable.read_tenant_at(SQLITE, conn, requested_tenant_at)


@contextmanager
def _immediate(conn: Any) -> Iterator[None]:
    """One write transaction holding the lock from its start; rolled back on any error
    unless SQLite already did (e.g. disk full)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def migrate(conn: Any) -> int:
    """Bring the schema to LATEST; return the version found before."""
    check_owned(conn)
    found = _version(conn)
    portable.check_version(found, LATEST)
    if found == LATEST:
        return found
    with _immediate(conn):
        current = _version(conn)  # re-read under the lock: another process may have migrated
        check_owned(conn)
        for version in range(current, LATEST):
            for step in MIGRATIONS[version]:
                if callable(step):
                    step(conn)
                else:
                    conn.execute(step)
            conn.execute(f"PRAGMA user_version = {version + 1}")
    return found


def settle_tenant_at(conn: Any, requested: int | None) -> int:
    """Record the namespace layout's `tenant_at` once, and return the database's.

    Once recorded it is only read: opening a store takes no write lock for it, as
    `migrate` takes none for a schema already at LATEST."""
    recorded = portable.meta(SQLITE, conn, "tenant_at")
    if recorded is not None:
        return namespaces.settle_tenant_at(recorded, requested, has_facts=True)
    with _immediate(conn):
        return portable.record_tenant_at(SQLITE, conn, requested)


def ensure_vector_table(conn: Any, dims: int) -> None:
    """Record the vectors' `dims` once, or check a recorded one is the same. Once recorded
    it is only read, as `settle_tenant_at` does."""
    if portable.meta(SQLITE, conn, "vector_dims") == str(dims):
        return
    with _immediate(conn):
        if not portable.recorded_dims(SQLITE, conn, dims):
            portable.record_dims(SQLITE, conn, dims)

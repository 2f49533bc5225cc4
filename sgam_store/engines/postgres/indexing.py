"""Keyword and vector rows in PostgreSQL: `fact_keywords` rows upserted by fact id,
`fact_vectors` rows with their `is_current` flag, written set-based once per transaction.
The twin of `engines/sqlite/indexing.py`.

What differs from SQLite: a keyword row is keyed by its fact id alone (the generated
`tsv` column and the (tenant_id, tsv) GIN index scope it), so there are no tenant slots
and no rowid arithmetic; a vector row also carries its tenant and `is_current` flag (SQLite
asks `facts`), sent as pgvector's text form so no adapter package is needed; a vector of the
wrong length is refused with `DimensionMismatchError` before anything is written. There is
no in-process vector mirror here (`PostgresEngine.vector_mirror` is None), so
`flush_vectors` returns None: the writer's "nothing to mirror".
"""

from __future__ import annotations

from typing import Any

import numpy
from psycopg import sql

from sgam_store.core import analysis
from sgam_store.core.errors import DimensionMismatchError
from sgam_store.engines.postgres import migrations

_INSERT_VECTORS = (
    "INSERT INTO fact_vectors (fact_id, field, tenant_id, is_current, embedding) "
    "SELECT f, fl, t, c, e::vector FROM unnest("
    "%s::bigint[], %s::text[], %s::text[], %s::boolean[], %s::text[]) AS u(f, fl, t, c, e)"
)


def has_vectors(cur: Any) -> bool:
    """fact_vectors exists once a store with an index config has set the database up."""
    row = cur.execute("SELECT 1 FROM sgam_meta WHERE key = 'vector_dims'").fetchone()
    return row is not None


def stored_language(conn: Any) -> str:
    """The keyword language: the text-search configuration the `tsv` column uses (the
    language names are PostgreSQL's configuration names, "simple" included)."""
    row = conn.execute("SELECT value FROM sgam_meta WHERE key = 'text_search_config'").fetchone()
    return row[0]


def has_keywords(conn: Any) -> bool:
    """Whether any keyword row exists (a language change then needs a rebuild)."""
    return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM fact_keywords)").fetchone()[0])


def set_language(cur: Any, language: str) -> int:
    """Regenerate every row's `tsv` with `language`'s configuration and record it;
    returns the rows rebuilt.

    A generated column's expression is fixed, so the column is dropped and added again
    with the new one (PostgreSQL computes it for every row), and its GIN index
    (`migrations.KEYWORD_INDEX`, tenant first) rebuilt,
    all in the caller's transaction: DDL is transactional here, and readers wait on the
    table's lock, then see the new index whole."""
    config = sql.Literal(analysis.check_language(language)).as_string(cur.conn)
    cur.execute("SELECT pg_advisory_xact_lock(%s)", (migrations.MIGRATION_LOCK,))
    cur.execute("ALTER TABLE fact_keywords DROP COLUMN tsv")
    cur.execute(migrations.TSV_COLUMN.replace("{config}", f"{config}::regconfig"))
    cur.execute(migrations.KEYWORD_INDEX)
    cur.execute("UPDATE sgam_meta SET value = %s WHERE key = 'text_search_config'", (language,))
    return cur.execute("SELECT count(*) FROM fact_keywords").fetchone()[0]


def flush_keywords(cur: Any, rows: list[tuple[int, str, str]]) -> None:
    """Write keyword rows (fact_id, tenant, text), in one statement per transaction."""
    if not rows:
        return
    latest = {fact_id: (tenant, text) for fact_id, tenant, text in rows}  # one row per fact
    cur.execute(
        "INSERT INTO fact_keywords (fact_id, tenant_id, body) "
        "SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[]) "
        "ON CONFLICT (fact_id) DO UPDATE SET tenant_id = excluded.tenant_id, "
        "body = excluded.body",
        (list(latest), [t for t, _ in latest.values()], [b for _, b in latest.values()]),
    )


def _dims(cur: Any) -> int:
    row = cur.execute("SELECT value FROM sgam_meta WHERE key = 'vector_dims'").fetchone()
    if row is None:
        raise DimensionMismatchError("this database has no vector table: set it up with dims")
    return int(row[0])


def _vector_texts(cur: Any, blobs: list[bytes]) -> list[str]:
    """pgvector's text form of float32 blobs, each checked against the table's dims."""
    dims, texts = _dims(cur), []
    for blob in blobs:
        if len(blob) != 4 * dims:
            raise DimensionMismatchError(
                f"embedding has {len(blob) / 4:g} dims; the index is configured for {dims}"
            )
        floats = numpy.frombuffer(blob, dtype=numpy.float32).tolist()
        texts.append("[" + ",".join(f"{x:.9g}" for x in floats) + "]")  # 9 digits: exact
    return texts


def _insert(cur: Any, rows: list[tuple[int, str, str, bytes, bool]]) -> None:
    """Insert (fact_id, tenant, field, blob, current) vector rows in one statement."""
    texts = _vector_texts(cur, [r[3] for r in rows])
    cur.execute(
        _INSERT_VECTORS,
        (
            [r[0] for r in rows],
            [r[2] for r in rows],
            [r[1] for r in rows],
            [r[4] for r in rows],
            texts,
        ),
    )


def write_vectors(
    cur: Any, fact_id: int, tenant_id: str, vectors: list[tuple[str, bytes]], current: bool
) -> None:
    """Write one fact's vectors now (the backfill's re-embedding), current or not."""
    if vectors:
        _insert(cur, [(fact_id, tenant_id, field, blob, current) for field, blob in vectors])


def flush_vectors(
    cur: Any,
    queued: list[tuple[int, str, list[tuple[str, bytes]]]],
    opened: list[int],
    retired: list[int],
) -> None:
    """Write a transaction's queued vectors and its open/closed changes to `is_current`.

    Deferred to the end of the transaction so that each vector is written once with its
    final `is_current`: a fact opened and retired in the same transaction needs no flip.
    """
    current = set(opened).difference(retired)
    rows = [
        (fid, tenant, f, blob, fid in current) for fid, tenant, vecs in queued for f, blob in vecs
    ]
    if rows:
        _insert(cur, rows)
    written = {fid for fid, _, _ in queued}
    _unmark(cur, [fid for fid in retired if fid not in written])


def _unmark(cur: Any, fact_ids: list[int]) -> None:
    """Clear `is_current` on the vectors of facts that stopped being current."""
    if fact_ids:
        cur.execute(
            "UPDATE fact_vectors SET is_current = false "
            "WHERE fact_id = ANY(%s::bigint[]) AND is_current",
            (fact_ids,),
        )


def indexed_as(cur: Any, fact_id: int, tenant_id: str) -> tuple[str | None, list[str]]:
    """(keyword text as written, or None; vector fields, sorted) of a fact: what a put
    of the same value must reproduce to leave the fact as it is (an identical re-put).
    `fact_vectors` exists only once a store with an index config set the database up."""
    row = cur.execute("SELECT body FROM fact_keywords WHERE fact_id = %s", (fact_id,)).fetchone()
    fields: list[str] = []
    if has_vectors(cur):
        fields = [
            f
            for (f,) in cur.execute(
                "SELECT field FROM fact_vectors WHERE fact_id = %s ORDER BY field", (fact_id,)
            ).fetchall()
        ]
    return (row[0] if row else None), fields


# All tenants' search reads IVFFlat's lists (`reads._listed_sql`) once the table holds
# this many current vectors, where their recall was measured; at 20,000 (20 lists, half of
# them probed) they were no faster than the exact scan in SGAM's layout.
LISTS_MIN_ROWS = 100_000


def train_lists(conn: Any) -> int:
    """(Re)build `fact_vectors_lists`, IVFFlat's index over the current vectors, trained on
    them: pgvector's k-means places its lists where the rows are, so the index is built
    once the table is large (by `vacuum()`), never at set-up on an empty table, and built
    anew as the text drifts. Rows/1,000 lists (pgvector's advice up to 1M rows). Returns
    the lists, 0 where the table is too small (any old index dropped: it was trained on
    other rows). The caller owns the table; DDL is transactional, so readers see the old
    index or the new one, and wait on the table's lock while it is built (seconds at
    100,000 rows)."""
    if not has_vectors(conn) or not _owns_vectors(conn):
        return 0
    with conn.transaction():
        # The owner counts every tenant's rows (FORCE binds it too; the index reads all).
        conn.execute("SELECT set_config('sgam.all_tenants', 'on', true)")
        rows = conn.execute("SELECT count(*) FROM fact_vectors WHERE is_current").fetchone()[0]
        conn.execute("DROP INDEX IF EXISTS fact_vectors_lists")
        if rows < LISTS_MIN_ROWS:
            return 0
        lists = max(1, rows // 1000)
        # k-means holds 50 sample rows a list in memory: 77 MB at 1M rows.
        conn.execute("SELECT set_config('maintenance_work_mem', '256MB', true)")
        conn.execute(
            "CREATE INDEX fact_vectors_lists ON fact_vectors "
            f"USING ivfflat (embedding vector_cosine_ops) WITH (lists = {lists}) WHERE is_current"
        )
    return lists


def _owns_vectors(conn: Any) -> bool:
    """Whether the connected role may build the table's indexes (its owner's member): the
    application role's `vacuum()` leaves the lists as the owner trained them."""
    row = conn.execute(
        "SELECT pg_has_role((SELECT relowner FROM pg_class "
        "WHERE oid = 'fact_vectors'::regclass), 'MEMBER')"
    ).fetchone()
    return bool(row[0])

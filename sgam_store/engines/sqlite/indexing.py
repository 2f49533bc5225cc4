"""Keyword and vector rows in SQLite: FTS5 rows numbered tenant first and analyzed in the
database's language, and vector rows in a plain table, written set-based once per
transaction.

Index rows are keyed by `fact_id`, which survives interval closing, so closing a fact
never re-embeds it and writes nothing here: which facts are current is the ledger's to
say (`facts`), and the vector mirror learns it from the transaction's `VectorDelta`.
"""

from __future__ import annotations

import json
from typing import Any

from sgam_store.core import analysis
from sgam_store.core.errors import InvalidFactError
from sgam_store.engines.sqlite import migrations
from sgam_store.engines.sqlite.vector_cache import VectorDelta

# Keyword rows are numbered tenant first: rowid = slot << FACT_BITS | fact_id, where
# `tenants.slot` numbers the tenant. A tenant-scoped MATCH then reads one rowid range
# (FTS5 seeks to it) instead of intersecting every match with a tenant token, and BM25
# still weighs terms over the whole index, as before.
FACT_BITS = 40
FACT_MASK = (1 << FACT_BITS) - 1
MAX_SLOT = (1 << (63 - FACT_BITS)) - 1  # rowids stay positive 64-bit integers

# The keyword rowids of the facts in a JSON array of fact ids (for deletes).
KEYWORD_ROWIDS = (
    f"SELECT DISTINCT (t.slot << {FACT_BITS}) | f.fact_id FROM facts f "
    "JOIN tenants t ON t.tenant_id = f.tenant_id "
    "WHERE f.fact_id IN (SELECT value FROM json_each(?))"
)


def tenant_slot(conn: Any, tenant_id: str) -> int | None:
    """The tenant's slot, or None if it never had a keyword row."""
    row = conn.execute("SELECT slot FROM tenants WHERE tenant_id = ?", (tenant_id,)).fetchone()
    return row[0] if row else None


def slot_range(slot: int) -> tuple[int, int]:
    """The first and last keyword rowid of a tenant's slot."""
    return slot << FACT_BITS, (slot << FACT_BITS) | FACT_MASK


def _slots(cur: Any, tenants: set[str]) -> dict[str, int]:
    """Slots of these tenants, numbering new ones (in this write transaction)."""
    cur.executemany(
        "INSERT OR IGNORE INTO tenants (tenant_id) VALUES (?)", [(t,) for t in sorted(tenants)]
    )
    slots = dict(
        cur.execute(
            "SELECT tenant_id, slot FROM tenants WHERE tenant_id IN "
            "(SELECT value FROM json_each(?))",
            (json.dumps(sorted(tenants)),),
        ).fetchall()
    )
    if max(slots.values(), default=0) > MAX_SLOT:
        raise InvalidFactError(f"more than {MAX_SLOT} tenants: keyword rowids would overflow")
    return slots


def stored_language(conn: Any) -> str:
    """The language the keyword rows are analyzed in (`core.analysis`), as recorded."""
    row = conn.execute("SELECT value FROM sgam_meta WHERE key = 'language'").fetchone()
    return row[0] if row else analysis.LEGACY_LANGUAGE


def has_keywords(conn: Any) -> bool:
    """Whether any keyword row exists (a language change then needs a rebuild)."""
    return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM fact_fts)").fetchone()[0])


def _keyword_rows(
    analyzer: analysis.Analyzer, rows: list[tuple[int, str]]
) -> list[tuple[int, str, str | None]]:
    """(rowid, body, source) of (rowid, text) pairs: `source` only where it differs."""
    if not analyzer.stems:
        return [(rowid, text, None) for rowid, text in rows]
    return [(rowid, analyzer.index_text(text), text) for rowid, text in rows]


_INSERT_KEYWORDS = "INSERT INTO fact_fts (rowid, body, source) VALUES (?, ?, ?)"


def flush_keywords(cur: Any, rows: list[tuple[int, str, str]]) -> None:
    """Write keyword rows (fact_id, tenant, text), in one statement per transaction.

    The language is read here, inside the write transaction, so a row is analyzed as
    the database's other rows are, even when another process rebuilt them since this
    store opened."""
    if not rows:
        return
    slots = _slots(cur, {tenant for _, tenant, _ in rows})
    if max(fact_id for fact_id, _, _ in rows) > FACT_MASK:
        raise InvalidFactError(f"fact id beyond {FACT_MASK}: keyword rowids would overflow")
    # In rowid order: FTS5 writes its pending terms out as a new segment whenever a
    # rowid is not above the last one, and tenant-first rowids of a batch that mixes
    # tenants would do that at nearly every row (LangMem's layout at 20k, a batch of 100:
    # the statement 64-86 -> 26-40 us a put).
    numbered = sorted(
        (slots[tenant] << FACT_BITS | fact_id, text) for fact_id, tenant, text in rows
    )
    analyzer = analysis.analyzer(stored_language(cur))
    cur.executemany(_INSERT_KEYWORDS, _keyword_rows(analyzer, numbered))


REBUILD_BATCH = 5000


def set_language(cur: Any, language: str) -> int:
    """Re-analyze every keyword row in `language` and record it; returns the rows rebuilt.

    A new table is filled from the old one's text as written and takes its place, all in
    the caller's write transaction: readers see the old index or the new one, never a
    mix. Rowids are kept, so tenant slots and every fact's row stay as they were."""
    analyzer = analysis.analyzer(analysis.check_language(language))
    cur.execute(migrations.KEYWORDS_DDL.replace("fact_fts", "fact_fts_rebuilt"))
    last, count = -1, 0
    while batch := cur.execute(
        "SELECT rowid, COALESCE(source, body) FROM fact_fts WHERE rowid > ? ORDER BY rowid LIMIT ?",
        (last, REBUILD_BATCH),
    ).fetchall():
        cur.executemany(
            _INSERT_KEYWORDS.replace("fact_fts", "fact_fts_rebuilt"),
            _keyword_rows(analyzer, batch),
        )
        last, count = batch[-1][0], count + len(batch)
    cur.execute("DROP TABLE fact_fts_vocab")
    cur.execute("DROP TABLE fact_fts")
    cur.execute("ALTER TABLE fact_fts_rebuilt RENAME TO fact_fts")
    cur.execute("CREATE VIRTUAL TABLE fact_fts_vocab USING fts5vocab(fact_fts, 'row')")
    cur.execute(
        "INSERT INTO sgam_meta (key, value) VALUES ('language', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (language,),
    )
    return count


_INSERT_VECTOR = "INSERT INTO vector_rows (fact_id, field, embedding) VALUES (?, ?, ?)"


def write_vectors(
    cur: Any, fact_id: int, tenant_id: str, vectors: list[tuple[str, bytes]], current: bool
) -> None:
    """Write one fact's vectors now (the backfill, a copy). A row here carries neither
    tenant nor current flag (PostgreSQL's does): `facts` says both."""
    cur.executemany(_INSERT_VECTOR, [(fact_id, field, blob) for field, blob in vectors])


def flush_vectors(
    cur: Any,
    queued: list[tuple[int, str, list[tuple[str, bytes]]]],
    opened: list[int],
    retired: list[int],
) -> VectorDelta:
    """Write a transaction's queued vectors, and say what changed for the mirror: the
    vectors of facts still current at the end, and the facts no longer current."""
    current = set(opened).difference(retired)
    delta = VectorDelta(retired=list(retired))
    rows = [(fid, tenant, f, blob) for fid, tenant, vecs in queued for f, blob in vecs]
    if rows:
        top = cur.execute("SELECT COALESCE(MAX(vec_rowid), 0) FROM vector_rows").fetchone()[0]
        ids = range(top + 1, top + 1 + len(rows))
        cur.executemany(
            "INSERT INTO vector_rows (vec_rowid, fact_id, field, embedding) VALUES (?, ?, ?, ?)",
            [(rid, r[0], r[2], r[3]) for rid, r in zip(ids, rows, strict=True)],
        )
        delta.added = [
            (rid, r[0], r[1], r[3]) for rid, r in zip(ids, rows, strict=True) if r[0] in current
        ]
    return delta


def has_vectors(cur: Any) -> bool:
    """Whether a store with an index config has opened the file (it records the dims)."""
    row = cur.execute("SELECT 1 FROM sgam_meta WHERE key = 'vector_dims'").fetchone()
    return row is not None


def indexed_as(cur: Any, fact_id: int, tenant_id: str) -> tuple[str | None, list[str]]:
    """(keyword text as written, or None; vector fields, sorted) of a fact: what a put
    of the same value must reproduce to leave the fact as it is (an identical re-put)."""
    slot = tenant_slot(cur, tenant_id)
    keyword = None
    if slot is not None:
        row = cur.execute(
            "SELECT COALESCE(source, body) FROM fact_fts WHERE rowid = ?",
            (slot << FACT_BITS | fact_id,),
        ).fetchone()
        keyword = row[0] if row else None
    fields = cur.execute(
        "SELECT field FROM vector_rows WHERE fact_id = ? ORDER BY field", (fact_id,)
    ).fetchall()
    return keyword, [f for (f,) in fields]

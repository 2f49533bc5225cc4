"""Keyword and vector rows in SQLite: FTS5 rows numbered tenant first, and vector rows
in a plain table, written set-based once per transaction.

Index rows are keyed by `fact_id`, which survives interval closing, so closing a fact
never re-embeds it and writes nothing here: which facts are current is the ledger's to
say (`facts`), and the vector mirror learns it from the transaction's `VectorDelta`.
"""

from __future__ import annotations

import json
from typing import Any

from sgam_store.core.errors import InvalidFactError
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


def flush_keywords(cur: Any, rows: list[tuple[int, str, str]]) -> None:
    """Write keyword rows (fact_id, tenant, text), in one statement per transaction."""
    if not rows:
        return
    slots = _slots(cur, {tenant for _, tenant, _ in rows})
    if max(fact_id for fact_id, _, _ in rows) > FACT_MASK:
        raise InvalidFactError(f"fact id beyond {FACT_MASK}: keyword rowids would overflow")
    cur.executemany(
        "INSERT INTO fact_fts (rowid, body) VALUES (?, ?)",
        [(slots[tenant] << FACT_BITS | fact_id, text) for fact_id, tenant, text in rows],
    )


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

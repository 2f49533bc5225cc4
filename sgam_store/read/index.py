"""What gets indexed for search: embedding config, field text, vectors and keyword rows.

Index rows are keyed by `fact_id`, which survives interval closing, so closing a
fact never re-embeds it: only the vec0 `is_current` flag changes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import sqlite_vec
from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig, ensure_embeddings, get_text_at_path, tokenize_path

from sgam_store.core.errors import DimensionMismatchError, InvalidFactError
from sgam_store.read.vector_cache import VectorDelta

WHOLE_VALUE = "$"


@dataclass(frozen=True)
class IndexSpec:
    """A validated `index=` config: LangGraph's IndexConfig, plus SqliteStore's `text_fields`."""

    dims: int
    embeddings: Embeddings
    fields: tuple[str, ...]
    config: dict[str, Any]

    @classmethod
    def from_config(cls, index: IndexConfig | dict[str, Any]) -> IndexSpec:
        config = dict(index)
        if "dims" not in config or "embed" not in config:
            raise InvalidFactError("index config needs 'dims' and 'embed'")
        fields = config.get("fields") or config.get("text_fields") or [WHOLE_VALUE]
        for path in fields:
            tokenize_path(path)  # raises on a malformed path, before anything is stored
        return cls(
            dims=int(config["dims"]),
            embeddings=ensure_embeddings(config["embed"]),
            fields=tuple(fields),
            config=config,
        )

    def texts(
        self, value: dict[str, Any], fields: list[str] | None = None
    ) -> list[tuple[str, str]]:
        """(field, text) pairs to embed for one value; missing fields are skipped."""
        return field_texts(value, fields or list(self.fields))

    def check(self, vector: list[float]) -> bytes:
        if len(vector) != self.dims:
            raise DimensionMismatchError(
                f"embedding has {len(vector)} dims; the index is configured for {self.dims}"
            )
        # One C-level sum instead of a Python loop: NaN or infinity anywhere makes it
        # non-finite (only a vector of values near 1e308 would be refused wrongly).
        if not math.isfinite(sum(vector)):
            raise InvalidFactError("the embedding contains NaN or infinity; nothing was stored")
        return sqlite_vec.serialize_float32(vector)


def field_texts(value: dict[str, Any], paths: list[str]) -> list[tuple[str, str]]:
    """(field, text) pairs at these paths of a value; missing fields are skipped.

    Needs no index config: a put's own `index=[...]` names fields for the keyword row
    even on a store that embeds nothing.
    """
    pairs: list[tuple[str, str]] = []
    for path in paths:
        if path == WHOLE_VALUE:
            pairs.append((path, json.dumps(value, ensure_ascii=False)))
            continue
        for i, text in enumerate(get_text_at_path(value, path)):
            pairs.append((f"{path}.{i}" if i else path, text))
    return pairs


def keyword_text(subject: str, attribute: str, value: dict[str, Any]) -> str:
    """Text for the FTS5 row: the key's names plus every string or number in the value.

    Subject and attribute are included so "passport deadline" finds `passport_deadline`
    (unicode61 splits on '_' and '.').
    """
    parts = [subject, attribute]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                parts.append(str(key))
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)
        elif node is not None and not isinstance(node, bool):
            parts.append(str(node))

    walk(value)
    return " ".join(parts)


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


def write_vectors(
    cur: Any, fact_id: int, tenant_id: str, vectors: list[tuple[str, bytes]], current: bool
) -> None:
    for field, blob in vectors:
        cur.execute("INSERT INTO vector_rows (fact_id, field) VALUES (?, ?)", (fact_id, field))
        cur.execute(
            "INSERT INTO fact_vectors (rowid, tenant_id, embedding, is_current) "
            "VALUES (?, ?, ?, ?)",
            (cur.lastrowid, tenant_id, blob, int(current)),
        )


def flush_vectors(
    cur: Any,
    queued: list[tuple[int, str, list[tuple[str, bytes]]]],
    opened: list[int],
    retired: list[int],
    tenant_of: dict[int, str],
) -> VectorDelta:
    """Write a transaction's queued vectors and mirror its open/closed changes into vec0.

    Deferred to the end of the transaction so that each vector is written once with its
    final `is_current`: a fact opened and retired in the same transaction needs no flip.
    """
    current = set(opened).difference(retired)
    delta = VectorDelta(retired=list(retired))
    # vec0 writes are ~15x dearer when consecutive rows switch tenant partition, so both
    # the inserts and the flips run grouped by tenant.
    rows = sorted(
        ((fid, tenant, f, blob) for fid, tenant, vecs in queued for f, blob in vecs),
        key=lambda r: r[1],
    )
    if rows:
        top = cur.execute("SELECT COALESCE(MAX(vec_rowid), 0) FROM vector_rows").fetchone()[0]
        ids = range(top + 1, top + 1 + len(rows))
        cur.executemany(
            "INSERT INTO vector_rows (vec_rowid, fact_id, field) VALUES (?, ?, ?)",
            [(rid, r[0], r[2]) for rid, r in zip(ids, rows, strict=True)],
        )
        cur.executemany(
            "INSERT INTO fact_vectors (rowid, tenant_id, embedding, is_current) "
            "VALUES (?, ?, ?, ?)",
            [(rid, r[1], r[3], int(r[0] in current)) for rid, r in zip(ids, rows, strict=True)],
        )
        delta.added = [
            (rid, r[0], r[1], r[3]) for rid, r in zip(ids, rows, strict=True) if r[0] in current
        ]
    written = {fid for fid, _, _ in queued}
    _unmark(cur, [fid for fid in retired if fid not in written], tenant_of)
    return delta


def _unmark(cur: Any, fact_ids: list[int], tenant_of: dict[int, str]) -> None:
    """Clear vec0's `is_current` on the vectors of facts that stopped being current."""
    if not fact_ids:
        return
    owners = cur.execute(
        "SELECT vec_rowid, fact_id FROM vector_rows "
        "WHERE fact_id IN (SELECT value FROM json_each(?))",
        (json.dumps(fact_ids),),
    ).fetchall()
    owners.sort(key=lambda r: (tenant_of.get(r[1], ""), r[0]))
    # One rowid per statement: vec0 refuses set-based UPDATEs ("partition key" error).
    cur.executemany(
        "UPDATE fact_vectors SET is_current = 0 WHERE rowid = ?", [(r[0],) for r in owners]
    )

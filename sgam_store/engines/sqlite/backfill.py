"""The schema backfill's statements on SQLite: `engines/common/backfill.py` in its dialect,
and whether a row is still believed, its vectors and its keyword row.

The rewrite itself (plans, transforms, re-embedding, new versions through the ledger) is
`sgam_store.lifecycle.backfill`'s.
"""

from __future__ import annotations

import json
from typing import Any

from sgam_store.core.models import FactRow
from sgam_store.engines.common import backfill
from sgam_store.engines.common.dialect import SQLITE, export
from sgam_store.engines.common.predicates import aliased_columns, believed_sql
from sgam_store.engines.sqlite.indexing import FACT_BITS, KEYWORD_ROWIDS
from sgam_store.engines.sqlite.predicates import as_list, in_list

export(globals(), backfill, SQLITE)


def with_vectors(conn: Any, fact_ids: list[int]) -> list[int]:
    """The fact ids among `fact_ids` that have vector rows."""
    rows = conn.execute(
        f"SELECT DISTINCT fact_id FROM vector_rows WHERE {in_list('fact_id')}",
        (as_list(fact_ids),),
    ).fetchall()
    return [r[0] for r in rows]


def unembedded_batch(conn: Any, after: int, limit: int) -> list[FactRow]:
    """Up to `limit` believed rows of facts after fact id `after`, in fact id order, that
    have a keyword row and no vectors: written without an embedding (a put with
    index=False has neither, and stays out)."""
    rows = conn.execute(
        f"SELECT {aliased_columns(FactRow)} FROM facts f "
        "JOIN tenants t ON t.tenant_id = f.tenant_id "
        f"WHERE {believed_sql('f')} AND f.fact_id > ? "
        "AND NOT EXISTS (SELECT 1 FROM vector_rows v WHERE v.fact_id = f.fact_id) "
        "AND EXISTS (SELECT 1 FROM fact_fts k "
        f"WHERE k.rowid = (t.slot << {FACT_BITS}) | f.fact_id) "
        "ORDER BY f.fact_id LIMIT ?",
        (after, limit),
    ).fetchall()
    return [FactRow._make(row) for row in rows]


def still_believed(cur: Any, row_id: int) -> bool:
    """Whether the version exists and is not retired (another writer may have since)."""
    row = cur.execute("SELECT known_to FROM facts WHERE row_id = ?", (row_id,)).fetchone()
    return row == (None,)


def delete_keyword_row(cur: Any, fact_id: int) -> bool:
    """Delete the fact's keyword row; whether it had one."""
    deleted = cur.execute(
        f"DELETE FROM fact_fts WHERE rowid IN ({KEYWORD_ROWIDS})", (json.dumps([fact_id]),)
    ).rowcount
    return bool(deleted)

"""The schema backfill's statements on PostgreSQL: `engines/common/backfill.py` in its
dialect, and whether a row is still believed, its vectors and its keyword row. Keyword
rows are `fact_keywords` rows keyed by fact_id and vectors live in `fact_vectors` (no
FTS5 slots, no vec0 pair); and since writers run in parallel, `still_believed` locks the
row's key (`versions.lock_keys`) before answering, so no writer of that key can retire
the row between the answer and the rewrite. The rewrite itself is
`sgam_store.lifecycle.backfill`'s.
"""

from __future__ import annotations

from typing import Any

from sgam_store.core.models import FactRow
from sgam_store.engines.common import backfill
from sgam_store.engines.common.dialect import POSTGRES, export
from sgam_store.engines.common.predicates import aliased_columns, believed_sql
from sgam_store.engines.postgres.versions import lock_keys

export(globals(), backfill, POSTGRES)


def with_vectors(conn: Any, fact_ids: list[int]) -> list[int]:
    """The fact ids among `fact_ids` that have vector rows."""
    rows = conn.execute(
        "SELECT DISTINCT fact_id FROM fact_vectors WHERE fact_id = ANY(%s::bigint[])",
        (list(fact_ids),),
    ).fetchall()
    return [r[0] for r in rows]


def unembedded_batch(conn: Any, after: int, limit: int) -> list[FactRow]:
    """Up to `limit` believed rows of facts after fact id `after`, in fact id order, that
    have a keyword row and no vectors: written without an embedding (a put with
    index=False has neither, and stays out)."""
    rows = conn.execute(
        f"SELECT {aliased_columns(FactRow)} FROM facts f "
        "JOIN fact_keywords k ON k.fact_id = f.fact_id "
        f"WHERE {believed_sql('f')} AND f.fact_id > %s "
        "AND NOT EXISTS (SELECT 1 FROM fact_vectors v WHERE v.fact_id = f.fact_id) "
        "ORDER BY f.fact_id LIMIT %s",
        (after, limit),
    ).fetchall()
    return [FactRow._make(row) for row in rows]


def still_believed(cur: Any, row_id: int) -> bool:
    """Whether the version exists and is not retired (another writer may have since),
    its key locked so that stays so until the transaction ends."""
    key = cur.execute(
        "SELECT namespace, attribute FROM facts WHERE row_id = %s", (row_id,)
    ).fetchone()
    if key is None:
        return False
    lock_keys(cur, [(key[0], key[1])])
    row = cur.execute("SELECT known_to FROM facts WHERE row_id = %s", (row_id,)).fetchone()
    return row == (None,)


def delete_keyword_row(cur: Any, fact_id: int) -> bool:
    """Delete the fact's keyword row; whether it had one."""
    deleted = cur.execute("DELETE FROM fact_keywords WHERE fact_id = %s", (fact_id,)).rowcount
    return bool(deleted)

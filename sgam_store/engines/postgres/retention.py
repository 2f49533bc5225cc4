"""Retention's selections on PostgreSQL: `engines/common/retention.py` in its dialect,
and the open facts a policy reaches. Writers run in parallel here, so `open_facts_due`,
whose rows the caller closes through the ledger, locks their keys (`versions.lock_keys`)
and re-reads them, as `versions.expired` does: a key another writer changed meanwhile is
not closed twice."""

from __future__ import annotations

from typing import Any

from sgam_store.core.models import FactRow
from sgam_store.engines.common import retention
from sgam_store.engines.common.dialect import POSTGRES, export
from sgam_store.engines.postgres.predicates import current_sql
from sgam_store.engines.postgres.versions import COLUMNS, lock_keys

export(globals(), retention, POSTGRES)


def _open_rows(cur: Any, where: str, params: tuple[Any, ...]) -> list[FactRow]:
    rows = cur.execute(
        f"SELECT {COLUMNS} FROM facts WHERE {where} AND {current_sql()} ORDER BY row_id", params
    ).fetchall()
    return [FactRow._make(row) for row in rows]


def open_facts_due(cur: Any, policy: str, cutoff: str) -> list[FactRow]:
    """Open facts of the current belief under `policy` recorded at or before `cutoff`,
    their keys locked."""
    due = _open_rows(cur, "retention_policy = %s AND recorded_at <= %s", (policy, cutoff))
    if not due:
        return []
    lock_keys(cur, [(r.namespace, r.attribute) for r in due])
    # Locked after reading: re-read so a version retired meanwhile is not closed twice.
    return _open_rows(cur, "row_id = ANY(%s::bigint[])", ([r.row_id for r in due],))

"""Retention's selections on SQLite: `engines/common/retention.py` in its dialect, and the
open facts a policy reaches (the one writer needs no key locks)."""

from __future__ import annotations

from typing import Any

from sgam_store.core.models import FactRow
from sgam_store.engines.common import retention
from sgam_store.engines.common.dialect import SQLITE, export
from sgam_store.engines.common.predicates import COLUMNS, current_sql

export(globals(), retention, SQLITE)


def open_facts_due(cur: Any, policy: str, cutoff: str) -> list[FactRow]:
    """Open facts of the current belief under `policy` recorded at or before `cutoff`."""
    rows = cur.execute(
        f"SELECT {COLUMNS} FROM facts WHERE retention_policy = ? AND recorded_at <= ? "
        f"AND {current_sql()}",
        (policy, cutoff),
    ).fetchall()
    return [FactRow._make(row) for row in rows]

"""The `facts` table's statements on SQLite: `engines/common/versions.py` (the lookups the
ledger's interval rule decides on, the bitemporal reads) and what is SQLite's own: the
instant, the row ids and the writes.

The rule itself (`sgam_store.ledger`) holds no SQL: it calls these through the engine
(`SQLiteEngine.versions`), so another engine supplies the same functions.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from sgam_store.core.clock import CLOCK
from sgam_store.core.models import FactRow
from sgam_store.engines.common import versions
from sgam_store.engines.common.dialect import SQLITE, export
from sgam_store.engines.common.predicates import COLUMNS, F_COLUMNS

__all__ = ["COLUMNS", "F_COLUMNS"]  # and the statements `export` binds
_INSERT = f"INSERT INTO facts ({COLUMNS}) VALUES ({', '.join('?' * len(FactRow._fields))})"
export(globals(), versions, SQLITE)


# ---------------------------------------------------------------- the write rule's lookups


def clock(cur: Any) -> Callable[[], str]:
    """The transaction's instant: the process clock, safe at any moment because
    `BEGIN IMMEDIATE` holds the write lock for the whole transaction."""
    return CLOCK.now


def row_ids(cur: Any) -> Callable[[], int]:
    """New row ids for one transaction: numbered after the highest so far, which is safe
    because `BEGIN IMMEDIATE` admits one writer at a time."""
    ids = itertools.count(
        cur.execute("SELECT COALESCE(MAX(row_id), 0) FROM facts").fetchone()[0] + 1
    )
    return lambda: next(ids)


# ---------------------------------------------------------------- the write rule's writes


def insert_many(cur: Any, rows: list[FactRow]) -> None:
    """Versions in key order: most of `facts`' indexes lead with the namespace or its
    tenant, so a batch mixing users then updates each index leaf by leaf instead of
    descending to a random one per row (LangMem's layout at 20k, a batch of 100: the
    statement 75-87 -> 44-64 us a put). No two rows of one flush can collide on a unique
    index in any order: a key's second write in a transaction reads it first, which
    sends the rows before it (`ledger.Tx.cur`)."""
    cur.executemany(_INSERT, sorted(rows, key=_key_order))


def _key_order(row: FactRow) -> tuple[str, str]:
    return row.namespace, row.attribute


def end_beliefs(cur: Any, row_ids: list[int], now: str) -> None:
    """The versions stop being believed at `now` (their only in-place change)."""
    cur.executemany("UPDATE facts SET known_to = ? WHERE row_id = ?", [(now, r) for r in row_ids])

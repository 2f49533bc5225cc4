"""The `facts` table's statements on PostgreSQL: `engines/common/versions.py`, plus the
per-key advisory locks that stand in for SQLite's one-writer-at-a-time, the instant, the
row ids and the writes.

Every lookup the write rule decides on locks its key first (`lock_keys`), inside the
transaction, so two writers of one key take turns while writers of other keys do not
wait. A batch locks all its keys at once in one sorted order, so batches cannot deadlock
on each other; a later single lookup of a key not in the batch may still meet a deadlock,
which the engine retries.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sgam_store.core import namespaces
from sgam_store.core.clock import CLOCK, MICROSECOND, shift
from sgam_store.core.errors import InvalidFactError
from sgam_store.core.models import FactRow
from sgam_store.engines.common import versions
from sgam_store.engines.common.dialect import POSTGRES, export, locking
from sgam_store.engines.common.predicates import COLUMNS, F_COLUMNS

__all__ = ["COLUMNS", "F_COLUMNS"]  # and the statements `export` binds
_INSERT = f"INSERT INTO facts ({COLUMNS}) VALUES ({', '.join(['%s'] * len(FactRow._fields))})"
# A JSON-escaped NUL: \u0000 preceded by an even number of backslashes.
_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
ROW_ID_BLOCK = 64  # the sequence's increment: one nextval numbers this many versions


class StaleInstant(Exception):
    """A key locked after the transaction took its instant had a newer version: the
    engine retries the transaction, locking that key before the instant is taken."""


def lock_keys(cur: Any, keys: list[tuple[str, str]]) -> None:
    """Take the transaction's advisory lock on each key not yet locked, in hash order, and
    raise the floor of the transaction's instant above the keys' newest versions.

    The instant must follow every version it may retire (`known_from <= known_to`), and
    writers in other processes, or on other machines, stamp with their own clocks.
    """
    todo = sorted({k for k in keys if k not in cur.locked and _tenant(cur, k) not in cur.owned})
    if not todo:
        return
    _share_tenants(cur, {_tenant(cur, k) for k in todo})
    _advisory_locks(cur, "pg_advisory_xact_lock", [f"{ns}\x1f{attr}" for ns, attr in todo])
    cur.locked.update(todo)
    newest = POSTGRES.execute_planned(
        cur,
        "SELECT MAX(f.known_from) FROM unnest(%s::text[], %s::text[]) AS k(ns, attr) "
        "JOIN facts f ON f.namespace = k.ns AND f.attribute = k.attr",
        ([ns for ns, _ in todo], [attr for _, attr in todo]),
    ).fetchone()[0]
    if newest is None:
        return
    if cur.now is not None and newest >= cur.now:
        raise StaleInstant(f"a key changed after this transaction's instant {cur.now}")
    cur.floor = max(cur.floor or newest, newest)


# The portable statements, their write lookups locking keys first.
export(globals(), versions, locking(POSTGRES, lock_keys))


def _advisory_locks(cur: Any, function: str, names: list[str]) -> None:
    """Take `function`'s transaction-scoped advisory lock on each name, in hash order, so
    that transactions taking several never wait on each other in a cycle."""
    cur.execute(
        f"SELECT {function}(h) FROM (SELECT hashtextextended(k, 0) AS h "
        "FROM unnest(%s::text[]) AS k ORDER BY 1 OFFSET 0) AS locks",
        (names,),
    )


def _tenant(cur: Any, key: tuple[str, str]) -> str:
    return cur.layout.split(namespaces.from_text(key[0]))[0]


def _tenant_lock(tenant: str) -> str:
    return f"tenant\x1f{tenant}"


def _share_tenants(cur: Any, tenants: set[str]) -> None:
    """Hold each tenant's advisory lock shared, before any of its keys: writers of one
    tenant never wait for each other on it, and an erasure holds it exclusively."""
    todo = sorted(tenants - cur.tenants)
    if todo:
        _advisory_locks(cur, "pg_advisory_xact_lock_shared", [_tenant_lock(t) for t in todo])
        cur.tenants.update(todo)


def own_tenant(cur: Any, tenant: str) -> None:
    """Hold the tenant's advisory lock exclusively, until the transaction ends: no writer
    of the tenant is running or can start, so its keys need no locks of their own. One
    lock table entry however many keys the tenant has (an erasure of every key, each
    locked, overflowed max_locks_per_transaction)."""
    if tenant not in cur.owned:
        cur.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_tenant_lock(tenant),)
        )
        cur.owned.add(tenant)
        cur.tenants.add(tenant)


def clock(cur: Any) -> Callable[[], str]:
    """The transaction's instant: the process clock, but after the newest version of
    every key locked so far (see `lock_keys`)."""

    def now() -> str:
        instant = CLOCK.now()
        if cur.floor is not None and instant <= cur.floor:
            instant = shift(cur.floor, MICROSECOND)
        cur.now = instant
        return instant

    return now


# ---------------------------------------------------------------- the write rule's lookups


def row_ids(cur: Any) -> Callable[[], int]:
    """New row ids for one transaction, a block of the sequence at a time: concurrent
    writers never draw the same id, and gaps are harmless."""

    def allocate() -> int:
        if not cur.row_ids:
            start = cur.execute("SELECT nextval('facts_row_ids')").fetchone()[0]
            cur.row_ids.extend(range(start + ROW_ID_BLOCK - 1, start - 1, -1))
        return cur.row_ids.pop()

    return allocate


# ---------------------------------------------------------------- the write rule's writes


def insert_many(cur: Any, rows: list[FactRow]) -> None:
    """Append versions; a value with a NUL character is refused, typed: PostgreSQL's
    text and jsonb cannot hold one (SQLite can)."""
    if any(_NUL.search(row.value) for row in rows):
        raise InvalidFactError("PostgreSQL cannot store a NUL character (\\u0000) in a value")
    cur.executemany(_INSERT, rows)


def end_beliefs(cur: Any, row_ids: list[int], now: str) -> None:
    """The versions stop being believed at `now` (their only in-place change)."""
    cur.execute(
        "UPDATE facts SET known_to = %s WHERE row_id = ANY(%s::bigint[])", (now, list(row_ids))
    )

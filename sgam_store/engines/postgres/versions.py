"""The `facts` table's statements on PostgreSQL: the twin of `engines/sqlite/versions.py`,
plus the per-key advisory locks that stand in for SQLite's one-writer-at-a-time.

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
from sgam_store.engines.common.dialect import POSTGRES, export
from sgam_store.engines.postgres.predicates import believed_sql, current_sql, visible

COLUMNS = ", ".join(FactRow._fields)
F_COLUMNS = ", ".join(f"f.{name}" for name in FactRow._fields)
_INSERT = f"INSERT INTO facts ({COLUMNS}) VALUES ({', '.join(['%s'] * len(FactRow._fields))})"
_KEY = "namespace = %s AND attribute = %s"
export(globals(), versions, POSTGRES)
# A JSON-escaped NUL: \u0000 preceded by an even number of backslashes.
_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
ROW_ID_BLOCK = 64  # the sequence's increment: one nextval numbers this many versions


def _one(cur: Any, sql: str, params: tuple[Any, ...]) -> FactRow | None:
    row = cur.execute(sql, params).fetchone()
    return None if row is None else FactRow._make(row)


def _all(cur: Any, sql: str, params: tuple[Any, ...]) -> list[FactRow]:
    return [FactRow._make(row) for row in cur.execute(sql, params).fetchall()]


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
    newest = cur.execute(
        "SELECT MAX(f.known_from) FROM unnest(%s::text[], %s::text[]) AS k(ns, attr) "
        "JOIN facts f ON f.namespace = k.ns AND f.attribute = k.attr",
        ([ns for ns, _ in todo], [attr for _, attr in todo]),
    ).fetchone()[0]
    if newest is None:
        return
    if cur.now is not None and newest >= cur.now:
        raise StaleInstant(f"a key changed after this transaction's instant {cur.now}")
    cur.floor = max(cur.floor or newest, newest)


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


def containing(cur: Any, ns: str, attribute: str, instant: str) -> FactRow | None:
    """The believed version whose interval contains `instant` (at most one exists)."""
    lock_keys(cur, [(ns, attribute)])
    cond, params = visible(instant, None, alias="")
    return _one(
        cur,
        f"SELECT {COLUMNS} FROM facts WHERE {_KEY} AND {cond} ORDER BY valid_from DESC LIMIT 1",
        (ns, attribute, *params),
    )


def next_start(cur: Any, ns: str, attribute: str, instant: str) -> str | None:
    """The earliest believed start after `instant`."""
    lock_keys(cur, [(ns, attribute)])
    return cur.execute(
        f"SELECT MIN(valid_from) FROM facts WHERE {_KEY} AND {believed_sql()} AND valid_from > %s",
        (ns, attribute, instant),
    ).fetchone()[0]


def latest_start(cur: Any, ns: str, attribute: str) -> str | None:
    """The latest believed start of a key."""
    lock_keys(cur, [(ns, attribute)])
    return cur.execute(
        f"SELECT MAX(valid_from) FROM facts WHERE {_KEY} AND {believed_sql()}",
        (ns, attribute),
    ).fetchone()[0]


def first_created(cur: Any, ns: str, attribute: str) -> str | None:
    """The earliest `created_at` among a key's believed versions."""
    lock_keys(cur, [(ns, attribute)])
    return cur.execute(
        f"SELECT MIN(created_at) FROM facts WHERE {_KEY} AND {believed_sql()}",
        (ns, attribute),
    ).fetchone()[0]


def open_version(cur: Any, ns: str, attribute: str) -> FactRow | None:
    """The key's open version in the current belief."""
    lock_keys(cur, [(ns, attribute)])
    return _one(
        cur, f"SELECT {COLUMNS} FROM facts WHERE {_KEY} AND {current_sql()}", (ns, attribute)
    )


def key_tails(cur: Any, keys: list[tuple[str, str]]) -> list[tuple[FactRow, str]]:
    """(latest believed version, earliest believed created_at) of many keys, one statement,
    after locking them all. Keys with no believed version are absent."""
    lock_keys(cur, keys)
    rows = cur.execute(
        "WITH k(ns, attr) AS (SELECT * FROM unnest(%s::text[], %s::text[])), "
        "m AS (SELECT f.namespace AS ns, f.attribute AS attr, MAX(f.valid_from) AS start, "
        "MIN(f.created_at) AS first FROM k JOIN facts f ON f.namespace = k.ns "
        f"AND f.attribute = k.attr AND {believed_sql('f')} GROUP BY f.namespace, f.attribute) "
        f"SELECT {F_COLUMNS}, m.first FROM m JOIN facts f ON f.namespace = m.ns "
        f"AND f.attribute = m.attr AND f.valid_from = m.start AND {believed_sql('f')}",
        ([ns for ns, _ in keys], [attr for _, attr in keys]),
    ).fetchall()
    return [(FactRow._make(row[:-1]), row[-1]) for row in rows]


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


def move_created(cur: Any, ns: str, attribute: str, start: str) -> None:
    """A delayed fact became the key's first: believed versions take its start as
    `created_at` (derived metadata, so no new versions)."""
    cur.execute(
        f"UPDATE facts SET created_at = %s WHERE {_KEY} AND {believed_sql()} AND created_at > %s",
        (start, ns, attribute, start),
    )


# ---------------------------------------------------------------- expiry (TTL)


def open_ttl(cur: Any, ns: str, attribute: str) -> tuple[int, float] | None:
    """(row id, ttl minutes) of the key's open version, if it has a TTL."""
    lock_keys(cur, [(ns, attribute)])
    return cur.execute(
        f"SELECT row_id, ttl_minutes FROM facts WHERE {_KEY} AND {current_sql()} "
        "AND ttl_minutes IS NOT NULL",
        (ns, attribute),
    ).fetchone()


def expired(cur: Any, now: str) -> list[FactRow]:
    """Open versions whose `expires_at` has passed by `now`, their keys locked."""
    rows = _all(
        cur,
        f"SELECT {COLUMNS} FROM facts WHERE expires_at IS NOT NULL AND expires_at <= %s "
        f"AND {current_sql()}",
        (now,),
    )
    lock_keys(cur, [(r.namespace, r.attribute) for r in rows])
    # Locked after reading: re-read so a version retired meanwhile is not closed twice.
    return (
        _all(
            cur,
            f"SELECT {COLUMNS} FROM facts WHERE row_id = ANY(%s) AND {current_sql()}",
            ([r.row_id for r in rows],),
        )
        if rows
        else []
    )

"""The `facts` table's statements on SQLite: the lookups and writes the ledger's interval
rule is decided on, and the bitemporal reads.

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
from sgam_store.engines.sqlite.predicates import (
    KEY_PAIRS,
    as_list,
    believed_sql,
    current_sql,
    visible,
)

COLUMNS = ", ".join(FactRow._fields)
F_COLUMNS = ", ".join(f"f.{name}" for name in FactRow._fields)
_INSERT = f"INSERT INTO facts ({COLUMNS}) VALUES ({', '.join('?' * len(FactRow._fields))})"
_KEY = "namespace = ? AND attribute = ?"
export(globals(), versions, SQLITE)


def _one(cur: Any, sql: str, params: tuple[Any, ...]) -> FactRow | None:
    row = cur.execute(sql, params).fetchone()
    return None if row is None else FactRow._make(row)


def _all(cur: Any, sql: str, params: tuple[Any, ...]) -> list[FactRow]:
    return [FactRow._make(row) for row in cur.execute(sql, params).fetchall()]


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


def containing(cur: Any, ns: str, attribute: str, instant: str) -> FactRow | None:
    """The believed version whose interval contains `instant` (at most one exists)."""
    cond, params = visible(instant, None, alias="")
    return _one(
        cur,
        f"SELECT {COLUMNS} FROM facts WHERE {_KEY} AND {cond} ORDER BY valid_from DESC LIMIT 1",
        (ns, attribute, *params),
    )


def next_start(cur: Any, ns: str, attribute: str, instant: str) -> str | None:
    """The earliest believed start after `instant`."""
    return cur.execute(
        f"SELECT MIN(valid_from) FROM facts WHERE {_KEY} AND {believed_sql()} AND valid_from > ?",
        (ns, attribute, instant),
    ).fetchone()[0]


def latest_start(cur: Any, ns: str, attribute: str) -> str | None:
    """The latest believed start of a key."""
    return cur.execute(
        f"SELECT MAX(valid_from) FROM facts WHERE {_KEY} AND {believed_sql()}",
        (ns, attribute),
    ).fetchone()[0]


def first_created(cur: Any, ns: str, attribute: str) -> str | None:
    """The earliest `created_at` among a key's believed versions."""
    return cur.execute(
        f"SELECT MIN(created_at) FROM facts WHERE {_KEY} AND {believed_sql()}",
        (ns, attribute),
    ).fetchone()[0]


def open_version(cur: Any, ns: str, attribute: str) -> FactRow | None:
    """The key's open version in the current belief."""
    return _one(
        cur, f"SELECT {COLUMNS} FROM facts WHERE {_KEY} AND {current_sql()}", (ns, attribute)
    )


def key_tails(cur: Any, keys: list[tuple[str, str]]) -> list[tuple[FactRow, str]]:
    """(latest believed version, earliest believed created_at) of many keys, one statement.

    Aggregates per key over its believed rows (facts_versions: namespace, attribute,
    valid_from), then fetches each key's latest row by that index.
    Keys with no believed version are absent.
    """
    rows = cur.execute(
        f"WITH k(ns, attr) AS ({KEY_PAIRS}), "
        "m AS (SELECT f.namespace AS ns, f.attribute AS attr, MAX(f.valid_from) AS start, "
        "MIN(f.created_at) AS first FROM k JOIN facts f ON f.namespace = k.ns "
        f"AND f.attribute = k.attr AND {believed_sql('f')} GROUP BY f.namespace, f.attribute) "
        f"SELECT {F_COLUMNS}, m.first FROM m JOIN facts f ON f.namespace = m.ns "
        f"AND f.attribute = m.attr AND f.valid_from = m.start AND {believed_sql('f')}",
        (as_list(keys),),
    ).fetchall()
    return [(FactRow._make(row[:-1]), row[-1]) for row in rows]


# ---------------------------------------------------------------- the write rule's writes


def insert_many(cur: Any, rows: list[FactRow]) -> None:
    cur.executemany(_INSERT, rows)


def end_beliefs(cur: Any, row_ids: list[int], now: str) -> None:
    """The versions stop being believed at `now` (their only in-place change)."""
    cur.executemany("UPDATE facts SET known_to = ? WHERE row_id = ?", [(now, r) for r in row_ids])


def move_created(cur: Any, ns: str, attribute: str, start: str) -> None:
    """A delayed fact became the key's first: believed versions take its start as
    `created_at` (derived metadata, so no new versions)."""
    cur.execute(
        f"UPDATE facts SET created_at = ? WHERE {_KEY} AND {believed_sql()} AND created_at > ?",
        (start, ns, attribute, start),
    )


# ---------------------------------------------------------------- expiry (TTL)


def open_ttl(cur: Any, ns: str, attribute: str) -> tuple[int, float] | None:
    """(row id, ttl minutes) of the key's open version, if it has a TTL."""
    return cur.execute(
        f"SELECT row_id, ttl_minutes FROM facts WHERE {_KEY} AND {current_sql()} "
        "AND ttl_minutes IS NOT NULL",
        (ns, attribute),
    ).fetchone()


def expired(cur: Any, now: str) -> list[FactRow]:
    """Open versions whose `expires_at` has passed by `now`."""
    return _all(
        cur,
        f"SELECT {COLUMNS} FROM facts WHERE expires_at IS NOT NULL AND expires_at <= ? "
        f"AND {current_sql()}",
        (now,),
    )

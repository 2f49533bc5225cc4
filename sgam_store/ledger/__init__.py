"""The fact ledger: the interval rule, written once, and the bitemporal reads.

Representation (bitemporal, append-only versions). Each row of `facts` is one
*version* of a fact. Valid time is `[valid_from, valid_to)`; transaction time is
`[known_from, known_to)`, the span during which the store believed that version.
Rows are never edited in place except to set `known_to`: closing an interval
retires the old version (`known_to = now`) and appends a copy with the new
`valid_to`. `fact_id` stays the same across versions, so `supersedes_fact_id`
links and vectors keep pointing at the fact. Therefore:

- current belief   = rows with `known_to IS NULL`;
- what was true at V, as believed at K = rows with `valid_from <= V < valid_to`
  and `known_from <= K < known_to`;
- a correction recorded later cannot leak into a read whose K precedes it.

Every write runs in one `BEGIN IMMEDIATE` transaction (lock taken before the first
read), retried as a whole on busy/locked, a bounded number of times with jitter.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NamedTuple, TypeVar

from sgam_store.core import clock, namespaces, schema_migration
from sgam_store.core.errors import (
    ConflictError,
    InvalidFactError,
    KeptExistingError,
    ValueTooLargeError,
)
from sgam_store.core.models import Fact, MemoryFact
from sgam_store.engines.sqlite.predicates import (
    KEY_PAIRS,
    as_list,
    belief,
    believed_sql,
    current_sql,
    visible,
)
from sgam_store.ledger import episodes
from sgam_store.ledger.policies import Claim, ConflictPolicy, Decision

T = TypeVar("T")

class FactRow(NamedTuple):
    """One stored version of a fact: the `facts` table's columns, in order, read by name.

    Timestamps are the stored fixed-width UTC text; `value` is the JSON text.
    """

    row_id: int
    fact_id: int
    tenant_id: str
    namespace: str
    subject: str
    attribute: str
    value: str
    scalar: int
    memory_type: str
    schema_version: int
    valid_from: str
    valid_to: str | None
    recorded_at: str
    known_from: str
    known_to: str | None
    created_at: str
    supersedes_fact_id: int | None
    source_episode_id: str
    confidence: float | None
    retention_policy: str | None
    expires_at: str | None
    ttl_minutes: float | None
    decided_by: str | None


COLUMNS = ", ".join(FactRow._fields)
_INSERT = f"INSERT INTO facts ({COLUMNS}) VALUES ({', '.join('?' * len(FactRow._fields))})"

DEFAULT_MAX_VALUE_BYTES = 1 << 20


@dataclass
class Tx:
    """One write transaction: its cursor, its instant, and fact ids it changed."""

    cur: Any
    now: str
    next_row_id: int
    opened: list[int] = field(default_factory=list)  # fact ids written as open/current
    retired: list[int] = field(default_factory=list)  # fact ids that stopped being current
    tenant_of: dict[int, str] = field(default_factory=dict)  # of retired facts: flip order
    # Index rows queued by the store and written set-based when the transaction ends.
    keyword_rows: list[tuple[int, str, str]] = field(default_factory=list)
    vector_rows: list[tuple[int, str, list[tuple[str, bytes]]]] = field(default_factory=list)
    delta: Any = None  # what a vector cache must mirror once this transaction commits
    tails: dict[tuple[str, str], KeyTail] = field(default_factory=dict)  # see `prefetch`

    def allocate(self) -> int:
        self.next_row_id += 1
        return self.next_row_id


@dataclass(frozen=True)
class KeyTail:
    """A key's believed state as one batched read found it: its latest version (None if
    the key has none), and the earliest `created_at` among its versions."""

    latest: FactRow | None
    first_created: str | None

    def answers(self, instant: str) -> bool:
        """True when `instant` is at or after every believed start: then the latest
        version alone decides the rule (intervals never overlap)."""
        return self.latest is None or instant >= self.latest.valid_from


def encode_value(value: Any, max_bytes: int = DEFAULT_MAX_VALUE_BYTES) -> tuple[str, int]:
    """JSON for a value in item form: objects as-is, scalars wrapped as {"value": x}."""
    scalar = not isinstance(value, dict)
    body = {"value": value} if scalar else value
    try:
        text = json.dumps(body, ensure_ascii=False, allow_nan=False)
        size = len(text.encode())  # a lone surrogate fails here: SQLite text is UTF-8
    except (TypeError, ValueError, RecursionError) as exc:
        # UnicodeEncodeError is a ValueError; RecursionError means nesting too deep to store.
        raise InvalidFactError(f"value is not storable JSON: {type(exc).__name__}: {exc}") from None
    if size > max_bytes:
        raise ValueTooLargeError(f"value is {size} bytes; the limit is {max_bytes}")
    return text, int(scalar)


def row_to_fact(row: Sequence[Any]) -> Fact:
    """A stored version (a `FactRow`, or a plain row of `COLUMNS`) as a `Fact`."""
    r = FactRow._make(row)
    value, version, scalar = schema_migration.present(r._asdict())  # dual-read: newest shape
    return Fact(
        fact_id=r.fact_id,
        tenant_id=r.tenant_id,
        subject=r.subject,
        attribute=r.attribute,
        value=value["value"] if scalar else value,
        valid_from=clock.parse_stored(r.valid_from),
        valid_to=clock.parse_stored(r.valid_to),
        supersedes_fact_id=r.supersedes_fact_id,
        source_episode_id=r.source_episode_id,
        recorded_at=clock.parse_stored(r.recorded_at),
        known_from=clock.parse_stored(r.known_from),
        known_to=clock.parse_stored(r.known_to),
        created_at=clock.parse_stored(r.created_at),
        memory_type=r.memory_type,
        schema_version=version,
        confidence=r.confidence,
        retention_policy=r.retention_policy,
        expires_at=clock.parse_stored(r.expires_at),
        decided_by=r.decided_by,
    )


def fetch_row(cur: Any, sql: str, params: Sequence[Any]) -> FactRow | None:
    """The first row of a `SELECT {COLUMNS} ...` statement, by name."""
    row = cur.execute(sql, params).fetchone()
    return None if row is None else FactRow._make(row)


# ---------------------------------------------------------------- write rule


def append_version(tx: Tx, row: FactRow, **changes: Any) -> int:
    """Retire a believed version and append its copy with `changes`, believed from now.

    Versions are append-only: a closed interval (the write rule, delete, expiry) and a
    rewritten value (schema backfill) are both a new version, so `known_at` reads from
    before still see the old one. Returns the new row id.
    """
    new = row._replace(row_id=tx.allocate(), known_from=tx.now, known_to=None, **changes)
    _end_belief(tx, row, still_current=new.valid_to is None)
    tx.cur.execute(_INSERT, new)
    return new.row_id


def retire(tx: Tx, row: FactRow) -> None:
    """End a version's belief (`known_to` = now) with no successor version."""
    _end_belief(tx, row, still_current=False)


def _end_belief(tx: Tx, row: FactRow, *, still_current: bool) -> None:
    tx.tails.pop((row.namespace, row.attribute), None)  # later lookups read the table
    tx.cur.execute("UPDATE facts SET known_to = ? WHERE row_id = ?", (tx.now, row.row_id))
    if row.valid_to is None and not still_current:  # the fact is no longer current
        tx.retired.append(row.fact_id)
        tx.tenant_of[row.fact_id] = row.tenant_id


def close_row(tx: Tx, row: FactRow, instant: str) -> None:
    """End a believed open version at `instant`: closed there (history kept) if it had
    started by then, withdrawn from belief if it had not (it never held)."""
    if row.valid_from < instant:
        append_version(tx, row, valid_to=instant)
    else:
        retire(tx, row)


def _find_containing(tx: Tx, ns: str, attribute: str, instant: str) -> FactRow | None:
    """The believed version whose interval contains `instant` (at most one exists)."""
    tail = tx.tails.get((ns, attribute))
    if tail is not None and tail.answers(instant):
        row = tail.latest
        holds = row is not None and (row.valid_to is None or row.valid_to > instant)
        return row if holds else None
    cond, params = visible(instant, None, alias="")
    return fetch_row(
        tx.cur,
        f"SELECT {COLUMNS} FROM facts WHERE namespace = ? AND attribute = ? AND {cond} "
        "ORDER BY valid_from DESC LIMIT 1",
        (ns, attribute, *params),
    )


def _next_start(tx: Tx, ns: str, attribute: str, instant: str) -> str | None:
    tail = tx.tails.get((ns, attribute))
    if (
        tail is not None
        and tail.answers(instant)
        and (tail.latest is None or instant > tail.latest.valid_from)
    ):
        return None  # nothing believed starts after it
    row = tx.cur.execute(
        "SELECT MIN(valid_from) FROM facts WHERE namespace = ? AND attribute = ? "
        f"AND {believed_sql()} AND valid_from > ?",
        (ns, attribute, instant),
    ).fetchone()
    return row[0]


def replace_fact(
    tx: Tx,
    fact: MemoryFact,
    *,
    ttl_minutes: float | None = None,
    decided_by: str | None = None,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    policy: ConflictPolicy | None = None,
    encoded: tuple[str, int] | None = None,
) -> int:
    """Apply the design's write rule for one fact inside `tx`; return the new row id.

    `encoded` is `encode_value(fact.value)` when the caller already computed it.

    1. same key and same valid_from already believed -> ConflictError (nothing written),
       unless `policy` decides: "keep" raises KeptExistingError (nothing written);
       "replace" retires the stored version (no copy) and the new fact takes its place:
       same start, its end, `supersedes_fact_id` = it, `decided_by` = the policy;
    2. else the version containing valid_from is closed there, and the new fact inherits
       its old end and records `supersedes_fact_id`;
    3. else (it predates everything) the new fact ends where the next one begins.
    """
    value_text, scalar = encoded or encode_value(fact.value, max_value_bytes)
    ns = namespaces.to_text(fact.namespace)
    start = fact.valid_from
    containing = _find_containing(tx, ns, fact.attribute, start)
    if containing is not None:
        end, supersedes = containing.valid_to, containing.fact_id
        if containing.valid_from == start:
            decided_by = _decide_equal_start(tx, containing, fact, policy).decided_by
            retire(tx, containing)  # the new fact takes its place: same start, its end
        else:
            append_version(tx, containing, valid_to=start)
    else:
        end, supersedes = _next_start(tx, ns, fact.attribute, start), None
    created = _first_start(tx, ns, fact.attribute, start)
    if created == start:
        # A delayed fact that is now the key's first: created_at (Item.created_at, "the
        # key's first valid_from") is derived metadata, so believed versions follow it.
        tx.cur.execute(
            "UPDATE facts SET created_at = ? WHERE namespace = ? AND attribute = ? "
            f"AND {believed_sql()} AND created_at > ?",
            (start, ns, fact.attribute, start),
        )
    expires = fact.expires_at
    if expires is None and ttl_minutes is not None:
        expires = clock.shift(tx.now, timedelta(minutes=ttl_minutes))
    row_id = tx.allocate()
    tx.cur.execute(
        _INSERT,
        (
            row_id,
            row_id,
            fact.tenant_id,
            ns,
            fact.subject,
            fact.attribute,
            value_text,
            scalar,
            fact.memory_type,
            fact.schema_version,
            start,
            end,
            tx.now,
            tx.now,
            None,
            created,
            supersedes,
            fact.source_episode_id,
            fact.confidence,
            fact.retention_policy,
            expires,
            ttl_minutes,
            decided_by,
        ),
    )
    tx.tails.pop((ns, fact.attribute), None)  # this key changed: later lookups read the table
    if end is None:
        tx.opened.append(row_id)
    return row_id


def _decide_equal_start(
    tx: Tx, row: FactRow, fact: MemoryFact, policy: ConflictPolicy | None
) -> Decision:
    """Rule 1: without a policy, or when it cannot decide, the conflict stands."""
    where = (
        f"{fact.tenant_id}/{fact.subject}.{fact.attribute} already has a fact valid from "
        f"{fact.valid_from} (fact_id={row.fact_id})"
    )
    if policy is None:
        raise ConflictError(f"{where}; resolve with a conflict policy")
    existing = row_to_fact(row)
    decision = policy.decide(
        _claim(tx, existing.value, existing.source_episode_id, existing.tenant_id, row.recorded_at),
        _claim(tx, fact.value, fact.source_episode_id, fact.tenant_id, tx.now),
    )
    if decision is None:
        raise ConflictError(f"{where}; policy {policy.name!r} could not decide")
    if decision.action == "keep":
        raise KeptExistingError(
            f"{where}; {decision.decided_by} kept it: {decision.reason}",
            decision=decision,
            existing=existing,
        )
    return decision


def _claim(tx: Tx, value: Any, source: str, tenant_id: str, fact_recorded_at: str) -> Claim:
    """A conflict side as policies see it: its source episode, if it is one of the tenant's."""
    episode = None if episodes.is_external(source) else episodes.load(tx.cur, source, tenant_id)
    recorded = clock.fmt(episode.recorded_at) if episode else fact_recorded_at
    return Claim(value=value, source_episode_id=source, episode=episode, recorded_at=recorded)


def _first_start(tx: Tx, ns: str, attribute: str, fallback: str) -> str:
    tail = tx.tails.get((ns, attribute))
    if tail is not None:
        return min(tail.first_created, fallback) if tail.first_created else fallback
    row = tx.cur.execute(
        "SELECT MIN(created_at) FROM facts WHERE namespace = ? AND attribute = ? "
        f"AND {believed_sql()}",
        (ns, attribute),
    ).fetchone()
    return min(row[0], fallback) if row[0] else fallback


def close_fact(tx: Tx, ns: str, attribute: str, at: str | None = None) -> int | None:
    """Close the open fact of a key at `at` (default now); history is kept.

    A fact that starts after `at` never held, so it is withdrawn from belief instead.
    Returns the closed fact_id, or None when the key had no open fact.
    """
    cond, params = visible(None, None, alias="")
    row = fetch_row(
        tx.cur,
        f"SELECT {COLUMNS} FROM facts WHERE namespace = ? AND attribute = ? AND {cond}",
        (ns, attribute, *params),
    )
    if row is None:
        return None
    close_row(tx, row, at or tx.now)
    return row.fact_id


_F_COLUMNS = ", ".join(f"f.{name}" for name in FactRow._fields)


def prefetch(tx: Tx, keys: list[tuple[str, str]]) -> None:
    """Read the believed tail of many keys in one statement (a batch of puts), so that
    `put_start` and the write rule's lookups need no query per put.

    The rule itself is unchanged: its lookups answer from a key's tail while the instant
    is at or after the key's latest start, and the tail is dropped as soon as this
    transaction writes to the key.
    """
    wanted = list(dict.fromkeys(keys))
    if not wanted:
        return
    # Aggregate per key over its believed rows (facts_one_start: namespace, attribute,
    # valid_from WHERE known_to IS NULL), then fetch each key's latest row by that index.
    rows = tx.cur.execute(
        f"WITH k(ns, attr) AS ({KEY_PAIRS}), "
        "m AS (SELECT f.namespace AS ns, f.attribute AS attr, MAX(f.valid_from) AS start, "
        "MIN(f.created_at) AS first FROM k JOIN facts f ON f.namespace = k.ns "
        f"AND f.attribute = k.attr AND {believed_sql('f')} GROUP BY f.namespace, f.attribute) "
        f"SELECT {_F_COLUMNS}, m.first FROM m JOIN facts f ON f.namespace = m.ns "
        f"AND f.attribute = m.attr AND f.valid_from = m.start AND {believed_sql('f')}",
        (as_list(wanted),),
    ).fetchall()
    tails = {key: KeyTail(None, None) for key in wanted}
    for row in rows:
        latest = FactRow._make(row[:-1])
        tails[(latest.namespace, latest.attribute)] = KeyTail(latest, row[-1])
    tx.tails.update(tails)


def put_start(tx: Tx, ns: str, attribute: str) -> str:
    """valid_from for a `put`: now, or just after the key's latest start if that is later.

    A put must become the current fact: two puts in one microsecond, or a clock that
    lags another process's, would otherwise collide or land behind the open fact.
    """
    tail = tx.tails.get((ns, attribute))
    if tail is not None:
        row: Any = (tail.latest.valid_from if tail.latest else None,)
    else:
        row = tx.cur.execute(
            "SELECT MAX(valid_from) FROM facts WHERE namespace = ? AND attribute = ? "
            f"AND {believed_sql()}",
            (ns, attribute),
        ).fetchone()
    if row[0] is None or row[0] < tx.now:
        return tx.now
    return clock.shift(row[0], clock.MICROSECOND)


# ---------------------------------------------------------------- transactions


class Writer:
    """Runs the ledger's write transactions on an engine: each body gets a fresh `Tx`."""

    def __init__(self, engine: Any, on_commit: Callable[[Tx], None] | None = None) -> None:
        self.engine = engine
        self.on_commit = on_commit  # sees each committed Tx, under the engine's lock

    def run(self, body: Callable[[Tx], T]) -> T:
        """Run `body` in one write transaction, retried whole by the engine when busy."""

        def in_transaction(cur: Any) -> tuple[Tx, T]:
            top = cur.execute("SELECT COALESCE(MAX(row_id), 0) FROM facts").fetchone()[0]
            tx = Tx(cur=cur, now=clock.CLOCK.now(), next_row_id=top)
            return tx, body(tx)

        def committed(outcome: tuple[Tx, T]) -> None:
            if self.on_commit is not None:
                self.on_commit(outcome[0])

        return self.engine.transaction(in_transaction, committed=committed)[1]


# ---------------------------------------------------------------- reads


def fact_at(
    conn: Any, ns: str, attribute: str, at: str | None, known_at: str | None = None
) -> Fact | None:
    cond, params = visible(at, known_at, alias="")
    row = conn.execute(
        f"SELECT {COLUMNS} FROM facts WHERE namespace = ? AND attribute = ? AND {cond} "
        "ORDER BY valid_from DESC LIMIT 1",
        (ns, attribute, *params),
    ).fetchone()
    return row_to_fact(row) if row else None


def history(conn: Any, ns: str, attribute: str, known_at: str | None = None) -> list[Fact]:
    """Every fact of a key as believed at `known_at` (default: now), by valid_from."""
    cond, params = belief(known_at)
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM facts WHERE namespace = ? AND attribute = ? AND {cond} "
        "ORDER BY valid_from",
        (ns, attribute, *params),
    ).fetchall()
    return [row_to_fact(r) for r in rows]


def believed(
    conn: Any,
    tenant_id: str | None = None,
    subject: str | None = None,
    attribute: str | None = None,
    known_at: str | None = None,
) -> list[Fact]:
    """`history` for many keys at once: every fact believed now (or at `known_at`), open
    and closed, key by key in valid-time order, optionally narrowed to a tenant, subject
    or attribute. For inspection (`sgam ledger`), not for answering questions."""
    cond, params = belief(known_at)
    for column, value in (("tenant_id", tenant_id), ("subject", subject), ("attribute", attribute)):
        if value is not None:
            cond, params = f"{cond} AND {column} = ?", [*params, value]
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM facts WHERE {cond} "
        "ORDER BY tenant_id, subject, attribute, valid_from",
        params,
    ).fetchall()
    return [row_to_fact(r) for r in rows]


# ---------------------------------------------------------------- expiry (TTL)


def refresh_expiry(tx: Tx, keys: list[tuple[str, str]]) -> None:
    """Move expires_at to now + ttl for open facts read with refresh (metadata, not belief)."""
    for ns, attribute in keys:
        row = tx.cur.execute(
            "SELECT row_id, ttl_minutes FROM facts WHERE namespace = ? AND attribute = ? "
            f"AND {current_sql()} AND ttl_minutes IS NOT NULL",
            (ns, attribute),
        ).fetchone()
        if row:
            row_id, ttl_minutes = row
            expires = clock.shift(tx.now, timedelta(minutes=ttl_minutes))
            tx.cur.execute("UPDATE facts SET expires_at = ? WHERE row_id = ?", (expires, row_id))


def close_expired(tx: Tx) -> int:
    """Close open facts whose expires_at has passed, at that instant; history is kept."""
    rows = tx.cur.execute(
        f"SELECT {COLUMNS} FROM facts WHERE expires_at IS NOT NULL AND expires_at <= ? "
        f"AND {current_sql()}",
        (tx.now,),
    ).fetchall()
    for row in map(FactRow._make, rows):
        close_row(tx, row, row.expires_at)
    return len(rows)

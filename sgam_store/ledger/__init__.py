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

The rule is decided here and written once; its statements are the engine's
(`tx.versions`, `engine.versions`: `engines/sqlite/versions.py` on SQLite), and every
write runs in one engine transaction that takes the write lock before its first read,
retried as a whole when the database is busy.
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
    ValueTooDeepError,
    ValueTooLargeError,
)
from sgam_store.core.models import Fact, FactDraft, FactRow, MemoryFact
from sgam_store.ledger import episodes
from sgam_store.ledger.policies import Claim, ConflictPolicy, Decision

T = TypeVar("T")


DEFAULT_MAX_VALUE_BYTES = 1 << 20
# Lists and objects nest at most this deep in a value (docs/write-path.md, "What a value may
# be"). Agents' values are a few levels deep (LangMem's {"content": ...} is 1, a profile
# with lists of objects 3-4); a thousand levels made every reader that walks a value
# recursively fail (json's decoder near Python's recursion limit, the inspector's
# pages), and SQLite's json_valid refuses past 1000. 100 leaves any real value far
# inside, and every reader far from a limit.
MAX_VALUE_DEPTH = 100
_CONTAINERS = (dict, list, tuple)
# `json.dumps` with any option builds a new encoder per call (~1 us of a put): one,
# reused, gives the same text (it holds no state between calls).
_VALUE_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


@dataclass
class Tx:
    """One write transaction: its cursor, its instant, and fact ids it changed.

    Version writes are buffered and sent set-based (one statement per kind) the moment
    anything else touches the cursor: every statement goes through `cur`, so a later
    read or write always sees them, in order (`flush`)."""

    cursor: Any
    clock: Callable[[], str]  # the engine's instant for this transaction (see `now`)
    row_ids: Callable[[], int]  # the engine's allocator of new version row ids
    versions: Any  # the engine's statements on fact versions (engines/sqlite/versions.py)
    engine: Any = None  # the engine, for its other statement sets (`tx.engine.candidates`)
    opened: list[int] = field(default_factory=list)  # fact ids written as open/current
    retired: list[int] = field(default_factory=list)  # fact ids that stopped being current
    # Index rows queued by the store and written set-based when the transaction ends.
    keyword_rows: list[tuple[int, str, str]] = field(default_factory=list)
    vector_rows: list[tuple[int, str, list[tuple[str, bytes]]]] = field(default_factory=list)
    delta: Any = None  # what a vector cache must mirror once this transaction commits
    tails: dict[tuple[str, str], KeyTail] = field(default_factory=dict)  # see `prefetch`
    # Tails this transaction's own puts left, known exactly; `settle` makes them `tails`.
    written: dict[tuple[str, str], KeyTail] = field(default_factory=dict)
    # (fact_id, tenant_id) of new keys to queue for review, written by the store's `finish`.
    review: list[tuple[int, str]] = field(default_factory=list)
    _now: str | None = field(default=None, repr=False)
    _inserts: list[FactRow] = field(default_factory=list, repr=False)
    _inserted: set[int] = field(default_factory=set, repr=False)  # their row ids
    _ends: list[int] = field(default_factory=list, repr=False)  # row ids, believed before

    @property
    def cur(self) -> Any:
        """The transaction's cursor, with the buffered version writes sent."""
        self.flush()
        return self.cursor

    def insert(self, row: FactRow) -> None:
        """Append a version (buffered)."""
        self._inserts.append(row)
        self._inserted.add(row.row_id)

    def end_belief(self, row_id: int) -> None:
        """End a version's belief at `now` (buffered, unless it is one this transaction
        still has buffered: then in order)."""
        if row_id in self._inserted:
            self.flush()
            self.versions.end_beliefs(self.cursor, [row_id], self.now)
        else:
            self._ends.append(row_id)

    def flush(self) -> None:
        """Send the buffered writes: the ends of belief first, which only take versions out
        of the belief (so no constraint can fail for their order), then the inserts."""
        if self._ends:
            ends, self._ends = self._ends, []
            self.versions.end_beliefs(self.cursor, ends, self.now)
        if self._inserts:
            rows, self._inserts = self._inserts, []
            self._inserted.clear()
            self.versions.insert_many(self.cursor, rows)

    @property
    def now(self) -> str:
        """The transaction's instant, read on first use: an engine that locks keys as the
        body reads them (PostgreSQL) needs it taken after those locks (`versions.clock`)."""
        if self._now is None:
            self._now = self.clock()
        return self._now

    def allocate(self) -> int:
        return self.row_ids()

    @property
    def layout(self) -> namespaces.Layout:
        """Where the engine's namespaces name their tenant."""
        return self.engine.layout if self.engine is not None else namespaces.DEFAULT_LAYOUT


class KeyTail(NamedTuple):
    """A key's believed state as one batched read found it (or this transaction's own
    write left it): its latest version (None if the key has none), and the earliest
    `created_at` among its versions. A tuple: a batch builds one or two a put."""

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
    _check_depth(value)
    try:
        text = _VALUE_JSON.encode(body)
        size = len(text.encode())  # a lone surrogate fails here: SQLite text is UTF-8
    except (TypeError, ValueError, RecursionError) as exc:
        # UnicodeEncodeError is a ValueError; RecursionError means nesting too deep to store.
        raise InvalidFactError(f"value is not storable JSON: {type(exc).__name__}: {exc}") from None
    if size > max_bytes:
        raise ValueTooLargeError(f"value is {size} bytes; the limit is {max_bytes}")
    return text, int(scalar)


def _check_depth(value: Any) -> None:
    """Refuse a value nested deeper than MAX_VALUE_DEPTH, walked without recursion (the
    check itself must not hit the limit it guards against); a scalar is depth 0."""
    level, layer = 0, [value] if isinstance(value, _CONTAINERS) else []
    while layer:
        level += 1
        if level > MAX_VALUE_DEPTH:
            raise ValueTooDeepError(
                f"value nests lists and objects more than {MAX_VALUE_DEPTH} levels deep"
            )
        layer = [
            child
            for node in layer
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, _CONTAINERS)
        ]


def row_to_fact(row: Sequence[Any]) -> Fact:
    """A stored version (a `FactRow`, or a plain row of `COLUMNS`) as a `Fact`."""
    r = FactRow._make(row)
    value, version, scalar = schema_migration.present(r._asdict())  # dual-read: newest shape
    return Fact(
        fact_id=r.fact_id,
        tenant_id=r.tenant_id,
        namespace=namespaces.from_text(r.namespace),
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


# ---------------------------------------------------------------- write rule


def append_version(tx: Tx, row: FactRow, **changes: Any) -> int:
    """Retire a believed version and append its copy with `changes`, believed from now.

    Versions are append-only: a closed interval (the write rule, delete, expiry) and a
    rewritten value (schema backfill) are both a new version, so `known_at` reads from
    before still see the old one. Returns the new row id.
    """
    new = row._replace(row_id=tx.allocate(), known_from=tx.now, known_to=None, **changes)
    _end_belief(tx, row, still_current=new.valid_to is None)
    tx.insert(new)
    return new.row_id


def retire(tx: Tx, row: FactRow) -> None:
    """End a version's belief (`known_to` = now) with no successor version."""
    _end_belief(tx, row, still_current=False)


def _end_belief(tx: Tx, row: FactRow, *, still_current: bool) -> None:
    tx.tails.pop((row.namespace, row.attribute), None)  # later lookups read the table
    tx.written.pop((row.namespace, row.attribute), None)
    tx.end_belief(row.row_id)
    if row.valid_to is None and not still_current:  # the fact is no longer current
        tx.retired.append(row.fact_id)


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
    return tx.versions.containing(tx.cur, ns, attribute, instant)


def _next_start(tx: Tx, ns: str, attribute: str, instant: str) -> str | None:
    tail = tx.tails.get((ns, attribute))
    if (
        tail is not None
        and tail.answers(instant)
        and (tail.latest is None or instant > tail.latest.valid_from)
    ):
        return None  # nothing believed starts after it
    return tx.versions.next_start(tx.cur, ns, attribute, instant)


def replace_fact(
    tx: Tx,
    fact: MemoryFact | FactDraft,
    *,
    ttl_minutes: float | None = None,
    decided_by: str | None = None,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    policy: ConflictPolicy | None = None,
    encoded: tuple[str, int] | None = None,
    ns: str | None = None,
) -> int:
    """Apply the design's write rule for one fact inside `tx`; return the new row id.

    `encoded` is `encode_value(fact.value)` when the caller already computed it, `ns`
    the key's namespace text when the caller built it from a checked namespace (the
    store's puts: `_validate` checked the op's).

    1. same key and same valid_from already believed -> ConflictError (nothing written),
       unless `policy` decides: "keep" raises KeptExistingError (nothing written);
       "replace" retires the stored version (no copy) and the new fact takes its place:
       same start, its end, `supersedes_fact_id` = it, `decided_by` = the policy;
    2. else the version containing valid_from is closed there, and the new fact inherits
       its old end and records `supersedes_fact_id`;
    3. else (it predates everything) the new fact ends where the next one begins.
    """
    value_text, scalar = encoded or encode_value(fact.value, max_value_bytes)
    if ns is None:
        ns = namespaces.to_text(tx.layout.check_item(tx.layout.join(fact.tenant_id, fact.subject)))
    start = fact.valid_from
    key = (ns, fact.attribute)
    tail = tx.tails.get(key)
    # The key's whole believed state is known and the fact starts after all of it: the
    # new row is then its latest version, so its tail after this write is known too.
    last = tail is not None and (tail.latest is None or start > tail.latest.valid_from)
    # Read before the rule writes: a write drops the key's prefetched tail, and every
    # believed version carries the same created_at, which the rule's writes keep.
    first = _first_created(tx, ns, fact.attribute)
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
    created = min(first, start) if first else start
    if first is not None and first > start:
        # A delayed fact that is now the key's first: created_at (Item.created_at, "the
        # key's first valid_from") is derived metadata, so believed versions follow it.
        # A new key has no versions to update.
        tx.versions.move_created(tx.cur, ns, fact.attribute, start)
    expires = fact.expires_at
    if expires is None and ttl_minutes is not None:
        expires = clock.shift(tx.now, timedelta(minutes=ttl_minutes))
    row_id = tx.allocate()
    row = FactRow(
        row_id=row_id,
        fact_id=row_id,
        tenant_id=fact.tenant_id,
        namespace=ns,
        subject=fact.subject,
        attribute=fact.attribute,
        value=value_text,
        scalar=scalar,
        memory_type=fact.memory_type,
        schema_version=fact.schema_version,
        valid_from=start,
        valid_to=end,
        recorded_at=tx.now,
        known_from=tx.now,
        known_to=None,
        created_at=created,
        supersedes_fact_id=supersedes,
        source_episode_id=fact.source_episode_id,
        confidence=fact.confidence,
        retention_policy=fact.retention_policy,
        expires_at=expires,
        ttl_minutes=ttl_minutes,
        decided_by=decided_by,
    )
    tx.insert(row)
    tx.tails.pop(key, None)  # this key changed: later lookups of this caller read the table
    if last:
        tx.written[key] = KeyTail(row, created)
    else:
        tx.written.pop(key, None)
    if end is None:
        tx.opened.append(row_id)
    return row_id


def _decide_equal_start(
    tx: Tx, row: FactRow, fact: MemoryFact | FactDraft, policy: ConflictPolicy | None
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
    external = episodes.is_external(source)
    episode = None if external else episodes.load(tx.engine, tx.cur, source, tenant_id)
    recorded = clock.fmt(episode.recorded_at) if episode else fact_recorded_at
    return Claim(value=value, source_episode_id=source, episode=episode, recorded_at=recorded)


def _first_created(tx: Tx, ns: str, attribute: str) -> str | None:
    """The earliest `created_at` among the key's believed versions (None: it has none)."""
    tail = tx.tails.get((ns, attribute))
    if tail is not None:
        return tail.first_created
    return tx.versions.first_created(tx.cur, ns, attribute)


def close_fact(tx: Tx, ns: str, attribute: str, at: str | None = None) -> int | None:
    """Close the open fact of a key at `at` (default now); history is kept.

    A fact that starts after `at` never held, so it is withdrawn from belief instead.
    Returns the closed fact_id, or None when the key had no open fact.
    """
    row = tx.versions.open_version(tx.cur, ns, attribute)
    if row is None:
        return None
    close_row(tx, row, at or tx.now)
    return row.fact_id


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
    tails = {key: KeyTail(None, None) for key in wanted}
    for latest, first in tx.versions.key_tails(tx.cur, wanted):
        tails[(latest.namespace, latest.attribute)] = KeyTail(latest, first)
    tx.tails.update(tails)


def settle(tx: Tx) -> None:
    """Make the tails this transaction's puts left (`Tx.written`) known to later lookups:
    between the callers of a group (write/group.py), so a key an earlier caller wrote
    needs no new read. Within one caller they stay apart: a key its batch wrote is read
    from the table, so an identical re-put in the same batch still versions."""
    tx.tails.update(tx.written)
    tx.written.clear()


def put_start(tx: Tx, ns: str, attribute: str) -> str:
    """valid_from for a `put`: now, or just after the key's latest start if that is later.

    A put must become the current fact: two puts in one microsecond, or a clock that
    lags another process's, would otherwise collide or land behind the open fact.
    """
    return start_after_latest(tx, ns, attribute, tx.now)


def start_after_latest(tx: Tx, ns: str, attribute: str, start: str) -> str:
    """`start`, or just after the key's latest start if that is not earlier: the new
    version becomes the current one (an import's item times, to the second, can tie)."""
    tail = tx.tails.get((ns, attribute))
    if tail is not None:
        latest = tail.latest.valid_from if tail.latest else None
    else:
        latest = tx.versions.latest_start(tx.cur, ns, attribute)
    if latest is None or latest < start:
        return start
    return clock.shift(latest, clock.MICROSECOND)


def unchanged_version(
    tx: Tx,
    ns: str,
    attribute: str,
    encoded: tuple[str, int],
    *,
    ttl: float | None,
    kind: tuple[str, int],
) -> FactRow | None:
    """The key's current version when a put of `encoded` (value text, scalar flag) with
    `ttl` minutes, of `kind` (memory type, value schema version), would restate it: the
    same value, TTL and kind, open, begun by now (or opened by this transaction, a
    group's earlier caller: write/group.py) and not expired. None otherwise, and for a
    key this transaction already wrote (its prefetched tail is gone): then the put
    versions.

    Read from the tail `prefetch` took under the transaction's key locks, so no other
    writer can change the version between this check and the commit."""
    tail = tx.tails.get((ns, attribute))
    row = tail.latest if tail is not None else None
    if row is None or row.valid_to is not None:
        return None
    if row.valid_from > tx.now and row.fact_id not in tx.opened:
        return None
    if row.expires_at is not None and row.expires_at <= tx.now:
        return None
    if (row.value, row.scalar) != encoded or (row.memory_type, row.schema_version) != kind:
        return None
    return row if row.ttl_minutes == ttl else None


def renew(tx: Tx, row: FactRow) -> None:
    """Restart a restated version's TTL from now (metadata, not belief: no new version)."""
    if row.ttl_minutes is not None:
        expires = clock.shift(tx.now, timedelta(minutes=row.ttl_minutes))
        tx.versions.set_expiry(tx.cur, row.row_id, expires)


# ---------------------------------------------------------------- transactions


class Writer:
    """Runs the ledger's write transactions on an engine: each body gets a fresh `Tx`."""

    def __init__(self, engine: Any, on_commit: Callable[[Tx], None] | None = None) -> None:
        self.engine = engine
        self.on_commit = on_commit  # sees each committed Tx, under the engine's lock

    def run(self, body: Callable[[Tx], T]) -> T:
        """Run `body` in one write transaction, retried whole by the engine when busy."""

        versions = self.engine.versions

        def in_transaction(cur: Any) -> tuple[Tx, T]:
            tx = Tx(cur, versions.clock(cur), versions.row_ids(cur), versions, engine=self.engine)
            result = body(tx)
            tx.flush()
            return tx, result

        def committed(outcome: tuple[Tx, T]) -> None:
            if self.on_commit is not None:
                self.on_commit(outcome[0])

        return self.engine.transaction(in_transaction, committed=committed)[1]


# ---------------------------------------------------------------- reads


def fact_at(
    engine: Any, ns: str, attribute: str, at: str | None, known_at: str | None = None
) -> Fact | None:
    """The key's fact visible at `at` (None: the open one) as believed at `known_at`."""
    with engine.reading() as conn:
        row = engine.versions.visible_at(conn, ns, attribute, at, known_at)
    return row_to_fact(row) if row else None


def history(engine: Any, ns: str, attribute: str, known_at: str | None = None) -> list[Fact]:
    """Every fact of a key as believed at `known_at` (default: now), by valid_from."""
    with engine.reading() as conn:
        rows = engine.versions.history(conn, ns, attribute, known_at)
    return [row_to_fact(r) for r in rows]


def predecessors(
    engine: Any, facts: list[Fact], known_at: str | None = None, depth: int = 8
) -> list[Fact]:
    """The history of the other keys whose facts `facts` (one key's) superseded:
    corrections written as new memories link across keys. Oldest link first, up to
    `depth` keys back; links within the key (a policy's replacement) are not followed."""
    ids = {f.fact_id for f in facts}
    links = [f.supersedes_fact_id for f in facts if f.supersedes_fact_id not in (None, *ids)]
    if not links or depth == 0:
        return []
    key = (namespaces.to_text(facts[0].namespace), facts[0].attribute)
    with engine.reading() as conn:
        rows = [engine.versions.latest_of(conn, fact_id) for fact_id in links]
    other = [r for r in rows if r is not None and (r.namespace, r.attribute) != key]
    if not other:  # erased since, or links within this key
        return []
    earlier = history(engine, other[0].namespace, other[0].attribute, known_at)
    return predecessors(engine, earlier, known_at, depth - 1) + earlier


def believed(
    engine: Any,
    tenant_id: str | None = None,
    subject: str | None = None,
    attribute: str | None = None,
    known_at: str | None = None,
) -> list[Fact]:
    """`history` for many keys at once: every fact believed now (or at `known_at`), open
    and closed, key by key in valid-time order, optionally narrowed to a tenant, subject
    or attribute. For inspection (`sgam ledger`), not for answering questions."""
    narrow = {"tenant_id": tenant_id, "subject": subject, "attribute": attribute}
    with engine.reading() as conn:
        rows = engine.versions.believed(conn, narrow, known_at)
    return [row_to_fact(r) for r in rows]


def citing(
    engine: Any, tenant_id: str, episode_id: str, known_at: str | None, limit: int
) -> list[Fact]:
    """The facts of `tenant_id` believed now (or at `known_at`) that cite the episode, at
    most `limit`: what an episode's page lists, read by source, never by tenant."""
    with engine.reading() as conn:
        rows = engine.episodes.citing(conn, tenant_id, episode_id, known_at, limit)
    return [row_to_fact(r) for r in rows]


# ---------------------------------------------------------------- expiry (TTL)


def refresh_expiry(tx: Tx, keys: list[tuple[str, str]]) -> None:
    """Move expires_at to now + ttl for open facts read with refresh (metadata, not belief)."""
    for ns, attribute in keys:
        found = tx.versions.open_ttl(tx.cur, ns, attribute)
        if found:
            row_id, ttl_minutes = found
            expires = clock.shift(tx.now, timedelta(minutes=ttl_minutes))
            tx.versions.set_expiry(tx.cur, row_id, expires)


def close_expired(tx: Tx) -> int:
    """Close open facts whose expires_at has passed, at that instant; history is kept."""
    due = tx.versions.expired(tx.cur, tx.now)
    for row in due:
        close_row(tx, row, row.expires_at)
    return len(due)

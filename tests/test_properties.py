"""Property-based tests of the interval rule against a tiny reference model.

`IntervalMachine` (hypothesis `RuleBasedStateMachine`) drives a real `SGAMStore` and a
pure-Python model of the design's write rule (`model_write`, `model_close`) side by
side, over four keys in two tenants ('acme' and 'acme2'; subjects 'mira' and the nested
'mira.docs'; attributes 'deadline' and 'city'), so cross-key leakage shows up as a
mismatch. Rules:

- `write`: `replace_fact` at a `valid_from` from a small pool of 2026 instants (day
  offsets from 2026-05-01, a few hours, some 1 µs apart), given as 'Z' text, '+02:00'
  text or a `datetime` in another zone. The small pool makes same-instant conflicts
  (`ConflictError`, nothing written) and delayed, out-of-order inserts common; half the
  writes (and an initial seeding of 0-4 writes) go to one busy key so histories grow long.
- `write_recent`: `replace_fact` at an instant of this run's own past: a step's exact
  transaction time (= a put's start or a delete's end) or a wall-clock instant between
  two steps (inside the gap a delete followed by a put leaves).
- `delete`: `store.delete(namespace, key)` closes the open fact at the wall-clock now.
- `put`: `store.put` starts a new fact at now.
- `probe`: as believed at an earlier instant (`known_at` = the wall clock after step j,
  exactly step j's transaction time, or 1 µs before it), every key's `history` and
  current fact, plus `fact_at` and an `as_of(at, known_at).get` view at a random instant,
  compared with the model snapshot of that instant.

After every write, delete or put, the same reads run exactly at its transaction time
(the new belief: `known_from` is inclusive) and 1 µs before (the old belief: `known_to`
is exclusive), on both sides of every boundary that changed. After every step the
invariants compare each key's current belief with the model: `history` (values,
intervals, `fact_id` and `supersedes_fact_id` links; also stated directly: sorted, no
overlaps, contiguous where the model is, at most one open fact and it is last), the
current fact, `get`, and `fact_at` on both sides of every interval boundary.
`recorded_at` / `known_from` must fall inside the wall-clock bracket of the step that
wrote them. Instants the model cannot know in advance (the transaction time of a delete
or put) are taken from the store only after checking they lie in that bracket.
`--hypothesis-show-statistics` shows how often each case (conflict, split, delayed
insert, gap fill, delete) occurred.

Budget: 60 examples of up to 25 steps by default (about 5 s on 2 cores). For a longer
local run set the environment variable SGAM_HYPOTHESIS_EXAMPLES, e.g.
``SGAM_HYPOTHESIS_EXAMPLES=2000 .venv/bin/python -m pytest tests/test_properties.py``.
No example database is written (`database=None`); a failure prints its steps and a
`@reproduce_failure` blob.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from sgam_store import ConflictError, Fact, MemoryFact, SGAMStore
from tests import pg

US = timedelta(microseconds=1)
EXAMPLES = int(os.environ.get("SGAM_HYPOTHESIS_EXAMPLES", "60"))

Key = tuple[str, str, str]  # (tenant_id, subject, attribute)
KEYS: tuple[Key, ...] = (
    ("acme", "mira", "deadline"),
    ("acme", "mira", "city"),
    ("acme2", "mira", "deadline"),
    ("acme", "mira.docs", "deadline"),
)

BASE = datetime(2026, 5, 1, tzinfo=UTC)
_CORE = [BASE + timedelta(days=d, hours=h) for d in (0, 1, 3, 7, 14, 30) for h in (0, 9)]
POOL = sorted({*_CORE, _CORE[2] + US, _CORE[5] + US, _CORE[8] - US})
PROBES = st.one_of(
    st.sampled_from(POOL),
    st.sampled_from(POOL).map(lambda t: t - US),
    st.datetimes(
        min_value=datetime(2026, 4, 25), max_value=datetime(2026, 6, 15), timezones=st.just(UTC)
    ),
)
FORMATS = ("z", "offset", "datetime")
# Half the writes go to one busy key so long histories form; the rest spread over all keys.
WRITE_KEYS = st.one_of(st.just(KEYS[0]), st.sampled_from(KEYS))


def namespace(key: Key) -> tuple[str, ...]:
    tenant, subject, _ = key
    return (tenant, *subject.split("."))


def as_given(instant: datetime, form: str) -> str | datetime:
    """The same instant in one of the forms the store accepts."""
    if form == "z":
        return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if form == "offset":
        return instant.astimezone(timezone(timedelta(hours=2))).isoformat()
    return instant.astimezone(timezone(timedelta(hours=-5)))


def now() -> datetime:
    return datetime.now(UTC)


# ------------------------------------------------------------------ reference model


@dataclass(frozen=True)
class ModelFact:
    mid: int  # model id; the store's fact_id is learned when the fact is written
    value: object
    valid_from: datetime
    valid_to: datetime | None
    supersedes: int | None
    since_op: int  # step whose transaction made this version the belief


class ModelConflict(Exception):
    pass


def model_write(
    facts: tuple[ModelFact, ...], mid: int, value: object, start: datetime, op: int
) -> tuple[tuple[ModelFact, ...], ModelFact]:
    """The design's write rule, stated as plainly as possible."""
    if any(f.valid_from == start for f in facts):
        raise ModelConflict
    containing = [
        f for f in facts if f.valid_from <= start and (f.valid_to is None or start < f.valid_to)
    ]
    assert len(containing) <= 1, "model invariant: intervals never overlap"
    rest = [f for f in facts if f not in containing]
    if containing:
        old = containing[0]
        new = ModelFact(mid, value, start, old.valid_to, old.mid, op)
        rest.append(replace(old, valid_to=start, since_op=op))
    else:
        later = [f.valid_from for f in facts if f.valid_from > start]
        new = ModelFact(mid, value, start, min(later, default=None), None, op)
    return tuple(sorted([*rest, new], key=lambda f: f.valid_from)), new


def model_close(facts: tuple[ModelFact, ...], at: datetime, op: int) -> tuple[ModelFact, ...]:
    """Close the open fact at `at` (only past facts are generated, so it always held)."""
    return tuple(replace(f, valid_to=at, since_op=op) if f.valid_to is None else f for f in facts)


def model_open(facts: tuple[ModelFact, ...]) -> ModelFact | None:
    return next((f for f in facts if f.valid_to is None), None)


def model_at(facts: tuple[ModelFact, ...], at: datetime | None) -> ModelFact | None:
    if at is None:
        return model_open(facts)
    hits = [f for f in facts if f.valid_from <= at and (f.valid_to is None or at < f.valid_to)]
    assert len(hits) <= 1
    return hits[0] if hits else None


def edges(facts: Iterable[ModelFact]) -> set[datetime]:
    """Valid instants on both sides of every interval boundary."""
    out: set[datetime] = set()
    for f in facts:
        out |= {f.valid_from - US, f.valid_from}
        if f.valid_to is not None:
            out |= {f.valid_to - US, f.valid_to}
    return out


State = dict[Key, tuple[ModelFact, ...]]


@dataclass(frozen=True)
class Snapshot:
    """The model as the store should have believed it from `tx` (exact) until `after`."""

    state: State
    after: datetime  # wall clock taken after the step returned
    tx: datetime | None  # the step's exact transaction time when the store revealed it


# ------------------------------------------------------------------ state machine


class IntervalMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = self.open_store()
        self.store.setup()
        self.state: State = {k: () for k in KEYS}
        self.sid: dict[int, int] = {}  # model id -> store fact_id
        self.created_op: dict[int, int] = {}  # model id -> step that first wrote it
        self.brackets: list[tuple[datetime, datetime]] = []  # per step: wall clock around it
        self.snapshots: list[Snapshot] = []
        self.counter = 0
        self._step(lambda: None)
        self._snapshot()  # snapshot 0: before any write

    def teardown(self) -> None:
        self.store.close()

    def open_store(self) -> SGAMStore:
        return SGAMStore(":memory:")

    # -------------------------------------------------------------- helpers

    def _step(self, action):
        """Run one store call between two distinct wall-clock instants."""
        time.sleep(0.0012)  # previous snapshot's `after` < this step's transaction time
        before = now()
        try:
            return action()
        finally:
            self.brackets.append((before, now()))

    def _snapshot(self, tx: datetime | None = None) -> None:
        self.snapshots.append(Snapshot(dict(self.state), self.brackets[-1][1], tx))

    def _in_bracket(self, instant: datetime, op: int, what: str) -> None:
        lo, hi = self.brackets[op]
        assert lo <= instant <= hi, f"{what} {instant} is outside its step's [{lo}, {hi}]"

    def _project(self, f: ModelFact | None) -> tuple | None:
        if f is None:
            return None
        sup = None if f.supersedes is None else self.sid[f.supersedes]
        return (self.sid[f.mid], f.value, f.valid_from, f.valid_to, sup)

    @staticmethod
    def _project_store(f: Fact | None) -> tuple | None:
        if f is None:
            return None
        return (f.fact_id, f.value, f.valid_from, f.valid_to, f.supersedes_fact_id)

    def _check_fact(self, key: Key, got: Fact | None, want: ModelFact | None, where: str) -> None:
        assert self._project_store(got) == self._project(want), (
            f"{key} {where}: store {self._project_store(got)} != model {self._project(want)}"
        )
        if got is None or want is None:
            return
        assert (got.tenant_id, got.subject, got.attribute) == key, f"{where}: leaked {got}"
        self._in_bracket(got.recorded_at, self.created_op[want.mid], f"{where} recorded_at")
        self._in_bracket(got.known_from, want.since_op, f"{where} known_from")

    def _check_history(self, key: Key, got: list[Fact], want: tuple[ModelFact, ...], where: str):
        assert [self._project_store(f) for f in got] == [self._project(f) for f in want], (
            f"{key} {where} history differs:\n store {[self._project_store(f) for f in got]}"
            f"\n model {[self._project(f) for f in want]}"
        )
        for g, w in zip(got, want, strict=True):
            self._check_fact(key, g, w, where)
        # Structural properties, stated independently of the model.
        starts = [f.valid_from for f in got]
        assert starts == sorted(set(starts)), f"{key} {where}: not strictly ordered"
        for a, b in pairwise(got):
            assert a.valid_to is not None and a.valid_to <= b.valid_from, f"{key}: overlap"
        assert all(f.valid_to is not None for f in got[:-1]), f"{key}: open fact not last"
        assert len({f.fact_id for f in got}) == len(got), f"{key}: duplicate fact_id"

    # -------------------------------------------------------------- rules

    @initialize(starts=st.lists(st.sampled_from(POOL), max_size=4))
    def seed_busy_key(self, starts: list[datetime]) -> None:
        for start in starts:
            self._write(KEYS[0], start, "z")

    @rule(key=WRITE_KEYS, start=st.sampled_from(POOL), form=st.sampled_from(FORMATS))
    def write(self, key: Key, start: datetime, form: str) -> None:
        self._write(key, start, form)

    @rule(key=WRITE_KEYS, pick=st.integers(min_value=0), exact=st.booleans())
    def write_recent(self, key: Key, pick: int, exact: bool) -> None:
        """A valid_from taken from this run's own past: a step's exact transaction time
        (equal to a put's start or a delete's end) or an instant between two steps (inside
        the gap a delete then a put leaves). Still in the past, so `delete` stays simple."""
        snap = self.snapshots[pick % len(self.snapshots)]
        self._write(key, snap.tx if exact and snap.tx else snap.after, "offset")

    def _write(self, key: Key, start: datetime, form: str) -> None:
        self.counter += 1
        mid, value = self.counter, f"v{self.counter}"
        op = len(self.brackets)
        fact = MemoryFact(
            tenant_id=key[0],
            subject=key[1],
            attribute=key[2],
            value=value,
            valid_from=as_given(start, form),
            source_episode_id=f"e{mid}",
        )
        try:
            facts, new = model_write(self.state[key], mid, value, start, op)
        except ModelConflict:
            event("write: same valid_from -> ConflictError")
            with pytest.raises(ConflictError):
                self._step(lambda: self.store.replace_fact(fact))
            self._snapshot()  # nothing changed: the invariants check that
            return
        event(f"write: {'splits an interval' if new.supersedes else 'predates or fills a gap'}")
        if new.supersedes is None and any(f.valid_from < start for f in self.state[key]):
            event("write: fills a gap after a delete")
        got = self._step(lambda: self.store.replace_fact(fact))
        assert got.fact_id not in self.sid.values(), f"fact_id {got.fact_id} reused"
        self.sid[mid], self.created_op[mid] = got.fact_id, op
        self.state[key] = facts
        self._check_fact(key, got, new, "replace_fact result")
        assert got.source_episode_id == f"e{mid}" and got.known_to is None
        self._snapshot(tx=got.known_from)
        self._check_transaction_edges(key)

    @rule(key=st.sampled_from(KEYS))
    def delete(self, key: Key) -> None:
        op = len(self.brackets)
        was_open = model_open(self.state[key])
        self._step(lambda: self.store.delete(namespace(key), key[2]))
        event(f"delete: {'no open fact' if was_open is None else 'closes the open fact'}")
        if was_open is None:
            self._snapshot()
            return
        # The closing instant is the delete's transaction time: the model only knows its
        # bracket, so read it from the store and check it lies there.
        closed = [f for f in self.store.history(*key) if f.fact_id == self.sid[was_open.mid]]
        assert len(closed) == 1, f"{key}: deleted fact {was_open} missing from history"
        at = closed[0].valid_to
        assert at is not None, f"{key}: delete left {closed[0]} open"
        self._in_bracket(at, op, "delete's closing instant")
        self.state[key] = model_close(self.state[key], at, op)
        self._snapshot(tx=at)
        self._check_transaction_edges(key)

    @rule(key=st.sampled_from(KEYS))
    def put(self, key: Key) -> None:
        self.counter += 1
        mid, value = self.counter, {"note": f"p{self.counter}"}
        op = len(self.brackets)
        self._step(lambda: self.store.put(namespace(key), key[2], value))
        got = self.store.fact_at(*key)
        assert got is not None and got.value == value, f"{key}: put not current: {got}"
        assert got.fact_id not in self.sid.values(), f"put reused fact_id {got.fact_id}"
        # A put starts at its transaction time (every generated valid_from is earlier).
        self._in_bracket(got.valid_from, op, "put's valid_from")
        self.sid[mid], self.created_op[mid] = got.fact_id, op
        self.state[key], new = model_write(self.state[key], mid, value, got.valid_from, op)
        self._check_fact(key, got, new, "put result")
        self._snapshot(tx=got.valid_from)
        self._check_transaction_edges(key)

    @rule(
        key=st.sampled_from(KEYS),
        at=st.none() | PROBES,
        pick=st.integers(min_value=0),
        mode=st.sampled_from(("after", "exact", "just_before")),
    )
    def probe(self, key: Key, at: datetime | None, pick: int, mode: str) -> None:
        """A point-in-time read as believed at an earlier transaction instant."""
        j = pick % len(self.snapshots)
        snap = self.snapshots[j]
        if mode == "after" or snap.tx is None:
            known, want = snap.after, snap.state
        elif mode == "exact":  # known_from is inclusive
            known, want = snap.tx, snap.state
        else:  # 1 µs earlier the previous belief still held (known_to is exclusive)
            known, want = snap.tx - US, self.snapshots[j - 1].state
        self._check_belief(known, want, f"known_at={known} ({mode} step {j})", key, [at])

    def _check_belief(
        self,
        known: datetime,
        state: State,
        where: str,
        focus: Key | None = None,
        points: Iterable[datetime | None] = (),
    ) -> None:
        """Reads as believed at `known` answer from `state`: every key's history and current
        fact, and for `focus` the fact (and the as_of view's item) at each valid instant."""
        for key in KEYS:
            hist = self.store.history(*key, known_at=known)
            self._check_history(key, hist, state[key], where)
            for f in hist:
                assert f.known_from <= known and (f.known_to is None or known < f.known_to), (
                    f"{key} {where}: {f} was not believed at {known}"
                )
            got = self.store.fact_at(*key, known_at=known)
            self._check_fact(key, got, model_open(state[key]), f"current, {where}")
        if focus is None:
            return
        for at in points:
            want = model_at(state[focus], at)
            got = self.store.fact_at(*focus, at=at, known_at=known)
            self._check_fact(focus, got, want, f"at={at}, {where}")
            if at is not None:
                item = self.store.as_of(at, known_at=known).get(namespace(focus), focus[2])
                self._check_item(focus, item, want, f"as_of({at}), {where}")

    def _check_transaction_edges(self, key: Key) -> None:
        """Right after a step changed `key`: exactly at its transaction time the new belief
        holds (known_from is inclusive), 1 µs earlier the old one (known_to is exclusive)."""
        new, old = self.snapshots[-1], self.snapshots[-2]
        assert new.tx is not None
        op = len(self.brackets) - 1
        changed = [f for f in new.state[key] if f.since_op == op]
        points = edges(new.state[key]) ^ edges(old.state[key]) | edges(changed)
        self._check_belief(new.tx, new.state, "at the step's transaction time", key, points)
        self._check_belief(new.tx - US, old.state, "1 µs before the step", key, points)

    def _check_item(self, key: Key, item, want: ModelFact | None, where: str) -> None:
        if want is None:
            assert item is None, f"{key} {where}: view returned {item}, model has nothing"
            return
        assert item is not None, f"{key} {where}: view returned nothing, model has {want}"
        body = want.value if isinstance(want.value, dict) else {"value": want.value}
        assert (item.namespace, item.key, item.value) == (namespace(key), key[2], body), where

    # -------------------------------------------------------------- invariants

    @invariant()
    def current_belief_matches_model(self) -> None:
        for key in KEYS:
            facts = self.state[key]
            self._check_history(key, self.store.history(*key), facts, "now")
            self._check_fact(key, self.store.fact_at(*key), model_open(facts), "current")
            self._check_item(key, self.store.get(namespace(key), key[2]), model_open(facts), "get")
            for at in sorted(edges(facts)):
                got = self.store.fact_at(*key, at=at)
                self._check_fact(key, got, model_at(facts, at), f"at={at}")

    @invariant()
    def model_is_well_formed(self) -> None:
        """The reference model itself keeps the rule's invariants (guards the oracle)."""
        for facts in self.state.values():
            assert all(a.valid_to is not None for a in facts[:-1])
            for a, b in pairwise(facts):
                assert a.valid_to <= b.valid_from


IntervalMachine.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=25,
    deadline=None,
    database=None,
    print_blob=True,
)
TestIntervalRule = IntervalMachine.TestCase


class PostgresIntervalMachine(IntervalMachine):
    """The same rule on the PostgreSQL engine: a fresh schema per example."""

    def open_store(self) -> SGAMStore:
        uri, schema = pg.fresh_schema()
        return SGAMStore(uri, schema=schema)


PostgresIntervalMachine.TestCase.settings = settings(
    IntervalMachine.TestCase.settings, max_examples=max(10, EXAMPLES // 4)
)
TestIntervalRulePostgres = PostgresIntervalMachine.TestCase


# ------------------------------------------------------------------ the seed's check


def test_seed_check(tmp_path: Path) -> None:
    """e1, then e2, then a delayed e0 (design.md, "Write rule"), on a real database file."""
    key = ("acme", "mira", "passport_deadline")

    def fact(value: str, start: str, episode: str) -> MemoryFact:
        return MemoryFact(tenant_id=key[0], subject=key[1], attribute=key[2], value=value,
                          valid_from=start, source_episode_id=episode)  # fmt: skip

    with SGAMStore.from_conn_string(str(tmp_path / "seed.db")) as store:
        store.setup()
        e1 = store.replace_fact(fact("2026-07-15", "2026-06-01T09:00:00Z", "e1"))
        e2 = store.replace_fact(fact("2026-06-30", "2026-06-03T10:00:00Z", "e2"))
        e0 = store.replace_fact(fact("2026-08-01", "2026-05-30T08:00:00Z", "e0"))

        current = store.fact_at(*key)
        assert (current.fact_id, current.value) == (e2.fact_id, "2026-06-30")
        june2 = store.fact_at(*key, at="2026-06-02T00:00:00Z")
        assert (june2.fact_id, june2.value) == (e1.fact_id, "2026-07-15")
        may31 = store.fact_at(*key, at="2026-05-31T00:00:00Z")
        assert (may31.fact_id, may31.value) == (e0.fact_id, "2026-08-01")
        assert may31.valid_to == e1.valid_from == datetime(2026, 6, 1, 9, tzinfo=UTC)
        assert e2.supersedes_fact_id == e1.fact_id
        assert e0.supersedes_fact_id is None
        assert [f.fact_id for f in store.history(*key)] == [e0.fact_id, e1.fact_id, e2.fact_id]


def test_created_at_is_the_first_start_of_the_key() -> None:
    """`Fact.created_at` is documented as "valid_from of the first fact for this key"."""
    key = ("acme", "mira", "city")

    def write(value: str, start: str) -> Fact:
        return store.replace_fact(
            MemoryFact(
                tenant_id=key[0],
                subject=key[1],
                attribute=key[2],
                value=value,
                valid_from=start,
                source_episode_id=value,
            )
        )

    with SGAMStore.from_conn_string(":memory:") as store:
        store.setup()
        write("A", "2026-06-05T00:00:00Z")
        write("B", "2026-06-01T00:00:00Z")  # delayed: now the key's first fact
        first = datetime(2026, 6, 1, tzinfo=UTC)
        assert store.get(namespace(key), key[2]).created_at == first  # A, still open
        c = write("C", "2026-06-10T00:00:00Z")  # splits A's interval
        assert c.created_at == first  # store: 2026-06-05 (A's)
        assert store.get(namespace(key), key[2]).created_at == first

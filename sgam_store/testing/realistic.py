"""A real agent's memory, made on demand (issue 38): a store of the shapes agents really
write, seeded, at any size from 1,000 to 1M facts, so the inspector, the CLI, the docs'
checks and the benchmarks run on it beside the demo's eight facts.

Two layouts:

- "langmem": LangMem's `("memories", user)` with `tenant_at=1`: thousands of users (each
  a tenant), uuid keys, `{"content": ...}` values from a sentence to several KB, written by
  puts whose source is the user's message, some memories rewritten hundreds of times;
- "sgam": tenants with thousands of subjects, typed attributes written through the write
  service (`apply_updates`) from episodes: updates, corrections at an equal start decided
  by a policy (retired versions), and delayed facts that start before what is stored.

Both carry `msg:<uuid>` episodes of real length, a review queue hundreds deep beside
decided and undone reviews, TTLs (some already passed), unicode, long keys, keys with
leading and trailing spaces, and hostile HTML in values and names. Every write goes
through the public API: one transaction per SGAM episode; LangMem's messages commit their
puts together, as concurrent agent turns do. The generator keeps a few numbers per
subject or user, never a list of every key or episode, so memory does not grow with
the facts written: 1M facts build in ~100 MB of heap.

Same seed, same store: namespaces, keys, values, sources and the SGAM layout's valid
times repeat. What the store stamps itself does not: `recorded_at`, and a put's
`valid_from` (the moment of the put, as for any agent).

    python -m sgam_store.testing.realistic --layout sgam --facts 100000 OUT.db
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import uuid
from array import array
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Literal

from langchain_core.runnables.config import set_config_context
from langgraph.store.base import PutOp

from sgam_store import (
    ConfigurationError,
    Fact,
    LatestRecordedWins,
    MemoryFact,
    SGAMStore,
    Verdict,
    normalize_subject,
)
from sgam_store.testing import phrases

Layout = Literal["langmem", "sgam"]
Key = tuple[tuple[str, ...], str]  # (namespace, key), as BaseStore names an item

GROUP = 32  # LangMem layout: messages whose puts are committed together
SAMPLED = 20  # episode ids `Realistic` names
MIN_FACTS = 1000  # below this the deep key (DEEP_WEEKS * 7 versions) would be most of it
DEEP_WEEKS = 75  # the deep key gets a version a day: 525 versions
START = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)  # the first episode (a Monday)
SPAN = timedelta(days=600)  # episodes spread from START over this long
BIG_SHARE = 0.7  # of the SGAM layout's facts, in its big tenant
FACTS_PER_SUBJECT = 15
FACTS_PER_USER = 35  # LangMem layout: memories per user, on average
TTL_MINUTES = 30 * 24 * 60  # a 30-day memory
EXPIRED = 12  # memories whose TTL passed before the store was built
HOSTILE_TENANT = '<script>alert("tenant")</script> Søn & Co'
HOSTILE_NAME = "  <img src=x onerror=alert(1)> Zoë Ñúñez  "
HOSTILE_KEY = "  <b>café ☕ préféré</b> \"quoted\" & 'single'  "
HOSTILE_VALUE = '<script>alert("value")</script> <a href="javascript:alert(2)">ok</a> 日本語 😀'
LONG_KEY = "what_i_told_the_assistant_about_" + "the_kitchen_budget_and_the_builders_dates_" * 5
SGAM_TENANTS = ("acme-travel", "globex-support", "initech-hr", "umbrella-health", HOSTILE_TENANT)
SGAM_SOURCE_POLICY = LatestRecordedWins()  # a correction at an equal start replaces


@dataclass(frozen=True)
class Realistic:
    """What `build` made, so a test finds things without searching.

    `subjects`: the big tenant's subjects (SGAM layout) or the number of users (LangMem
    layout, where each user is a tenant of one subject, "memories"). Keys are
    `(namespace, key)` as BaseStore names an item. `review_queue`: memories waiting for
    the supersession review; `decided` reviews were recorded, `undone` of them undone.
    """

    path: str
    layout: Layout
    seed: int
    tenant_at: int
    tenants: list[str]
    big_tenant: str
    subjects: int
    facts: int  # facts written (fact ids); `rows` counts their versions' rows
    rows: int
    episodes: int
    deep_key: Key
    deep_versions: int
    long_memory: Key
    long_memory_bytes: int
    hostile_key: Key
    hostile_tenant: str
    long_key: Key
    review_queue: int
    decided: int
    undone: int
    decision_ids: list[int]
    expired: int  # facts whose TTL had passed at build time
    episode_ids: list[str]  # a sample of recorded episodes' ids
    delayed: int = 0  # SGAM layout: facts that start before their key's stored facts
    corrections: int = 0  # SGAM layout: equal-start corrections a policy applied


def build(path: str, *, layout: Layout, facts: int, seed: int = 0) -> Realistic:
    """Create the store at `path` (a new SQLite file or an empty PostgreSQL database)
    holding about `facts` facts of `layout`, deterministic for `seed`."""
    if layout not in ("langmem", "sgam"):
        raise ConfigurationError(f"layout must be 'langmem' or 'sgam', got {layout!r}")
    if isinstance(facts, bool) or not isinstance(facts, int) or facts < MIN_FACTS:
        raise ConfigurationError(f"facts must be an integer >= {MIN_FACTS}, got {facts!r}")
    maker = _LangMem if layout == "langmem" else _Sgam
    return maker(path, facts, seed).run()


@dataclass
class _Review:
    """The review phase's outcome."""

    queued: int = 0
    decision_ids: list[int] = field(default_factory=list)
    undone: int = 0


class _Builder:
    """What both layouts share: ids from the seed, episodes, puts with a message as their
    source, the hostile corner, expired memories and the review phase."""

    layout: Layout
    tenant_at: int

    def __init__(self, path: str, facts: int, seed: int) -> None:
        self.path, self.target, self.seed = path, facts, seed
        self.rng = random.Random(seed)
        self.episodes = 0
        # A reservoir of SAMPLED (number, id) of the episodes recorded so far: a sample
        # without holding every id (a 1M-fact store records ~300k episodes).
        self.sampled: list[tuple[int, str]] = []
        self.sampler = random.Random(seed)
        # (tenant, subject) -> keys written once and never touched by TTL or review
        self.plain: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.store: SGAMStore | None = None

    # ------------------------------------------------------------------ helpers

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def open(self, *, review: bool) -> SGAMStore:
        store = SGAMStore(self.path, index=None, tenant_at=self.tenant_at, review_new_keys=review)
        store.setup()
        return store

    def episode(
        self,
        tenant: str,
        text: str,
        when: datetime | None = None,
        *,
        kind: str = "user_message",
        speaker: str | None = "user",
    ) -> str:
        """Record a message; its id is `msg:<uuid>`, what facts cite."""
        episode_id = f"msg:{self.uuid()}"
        assert self.store is not None
        self.store.record_episode(
            tenant,
            text,
            source_kind=kind,  # type: ignore[arg-type]
            speaker=speaker,
            thread_id=f"thread-{tenant[:24]}-{self.episodes % 7}",
            occurred_at=when,
            episode_id=episode_id,
        )
        self.keep_sample(episode_id)
        return episode_id

    def keep_sample(self, episode_id: str) -> None:
        """Reservoir sampling (Vitter's algorithm R): each recorded episode ends up in
        the sample with the same chance, in memory of SAMPLED ids."""
        if self.episodes < SAMPLED:
            self.sampled.append((self.episodes, episode_id))
        elif (slot := self.sampler.randrange(self.episodes + 1)) < SAMPLED:
            self.sampled[slot] = (self.episodes, episode_id)
        self.episodes += 1

    def put(self, episode_id: str, ops: list[PutOp]) -> None:
        """Puts in one transaction, their source the episode: the config a graph run
        would carry (`configurable.episode_id`), set directly, because a RunnableLambda's
        invoke costs ~0.8 ms of callbacks a put (a quarter of a LangMem build)."""
        assert self.store is not None
        with set_config_context({"configurable": {"episode_id": episode_id}}) as context:
            context.run(self.store.batch, ops)

    def put_together(self, messages: list[tuple[str, list[PutOp]]]) -> None:
        """Each message's puts, sourced by it, as concurrent `abatch` calls: the store
        commits concurrent puts in one transaction (write/group.py), so a message costs
        a fraction of a commit, as agent turns writing at the same time do."""
        store = self.store
        assert store is not None

        async def gathered() -> None:
            with ExitStack() as held:  # each call's config stays set until it has run
                calls = [
                    asyncio.create_task(
                        store.abatch(ops),
                        context=held.enter_context(
                            set_config_context({"configurable": {"episode_id": episode_id}})
                        ),
                    )
                    for episode_id, ops in messages
                ]
                await asyncio.gather(*calls)

        # In a thread of its own: the caller may be running an event loop already (a
        # notebook, a Playwright test), where asyncio.run refuses to start another.
        with ThreadPoolExecutor(1) as worker:
            worker.submit(asyncio.run, gathered()).result()

    def namespace(self, tenant: str, subject: str) -> tuple[str, ...]:
        assert self.store is not None
        return self.store.layout.fact_namespace(tenant, subject)

    # ------------------------------------------------------------------ shared corners

    def hostile(self, tenant: str) -> tuple[Key, Key]:
        """HTML, unicode, spaces and a long key in names and values; two versions of the
        hostile key. Returns (hostile key, long key)."""
        namespace = self.namespace(tenant, self.subject_label(HOSTILE_NAME))
        for n, extra in enumerate(("", " (updated)")):
            said = self.episode(tenant, f"{HOSTILE_VALUE} Please remember this{extra}.")
            self.put(
                said,
                [
                    PutOp(namespace, HOSTILE_KEY, {"content": HOSTILE_VALUE + extra}),
                    PutOp(namespace, f" trailing space {n} ", {"content": "Zoë\u2019s café ☕"}),
                    PutOp(namespace, LONG_KEY + str(n), {"content": "مرحبا — שלום — 你好"}),
                ],
            )
        return (namespace, HOSTILE_KEY), (namespace, LONG_KEY + "0")

    def subject_label(self, name: str) -> str:
        """A subject named `name` (the layout decides what else the namespace holds)."""
        return name

    def expired(self, tenant: str, subject: str) -> int:
        """Memories whose TTL passed long ago: still history, no longer current."""
        assert self.store is not None
        for n in range(EXPIRED):
            said = self.episode(tenant, f"My door code this week is {1000 + n}.", START)
            self.store.replace_fact(
                MemoryFact(
                    tenant_id=tenant,
                    subject=subject,
                    attribute=f"door_code_{self.uuid()[:8]}",
                    value={"content": f"My door code this week is {1000 + n}."},
                    valid_from=START + timedelta(days=n),
                    expires_at=START + timedelta(days=n + 7),
                    source_episode_id=said,
                )
            )
        return EXPIRED

    def review(self, queued: int, decided: int, undone: int) -> _Review:
        """Corrections written under new keys (LangMem's way), queued for review: `decided`
        of them reviewed (most "supersedes"), `undone` of those undone, and `queued` left
        waiting, four in five in the big tenant."""
        assert self.store is not None
        store = self.store
        outcome = _Review(queued=queued)
        for n, (tenant, subject, old_key) in enumerate(self.review_targets(decided)):
            new = self.correction(tenant, subject)
            old = store.fact_at(tenant, subject, old_key)
            assert old is not None
            kind = "supersedes" if n < 2 * undone or self.rng.random() < 0.7 else "independent"
            evidence = {"new": new.value, "old": old.value}
            verdict = Verdict(old.fact_id, kind, "the new memory restates it", 0.82, evidence)
            by = "model:scripted" if n % 2 else "person:reviewer"
            [made] = store.apply_supersession(
                new.fact_id, [verdict], decided_by=by, tenant_id=tenant
            )
            outcome.decision_ids.append(made.decision_id)
            if n < undone:
                store.undo_supersession(made.decision_id, tenant_id=tenant)
                outcome.undone += 1
        subjects = sorted(self.plain, key=lambda ts: (ts[0] != self.big_tenant(), ts))
        big = [ts for ts in subjects if ts[0] == self.big_tenant()]
        others = subjects[len(big) :] or big
        for n in range(queued):
            self.correction(*(others[n % len(others)] if n % 5 == 4 else big[n % len(big)]))
        return outcome

    def correction(self, tenant: str, subject: str) -> Fact:
        """A correction put under a new key, as LangMem writes one."""
        assert self.store is not None
        text = f"{self.rng.choice(phrases.CORRECTIONS)} {phrases.memory(self.rng)}"
        said = self.episode(tenant, phrases.message(self.rng, [text]))
        key = self.uuid()
        self.put(said, [PutOp(self.namespace(tenant, subject), key, {"content": text})])
        found = self.store.fact_at(tenant, subject, key)
        assert found is not None
        return found

    def review_targets(self, count: int) -> list[tuple[str, str, str]]:
        """(tenant, subject, key) of `count` distinct plain current memories, from the big
        tenant first, at most six a subject."""
        found: list[tuple[str, str, str]] = []
        for tenant, subject in sorted(self.plain, key=lambda ts: (ts[0] != self.big_tenant(), ts)):
            found += [(tenant, subject, key) for key in self.plain[(tenant, subject)][:6]]
            if len(found) >= count:
                return found[:count]
        raise ConfigurationError(f"too few memories for {count} reviews: build more facts")

    def big_tenant(self) -> str:
        raise NotImplementedError

    def review_sizes(self) -> tuple[int, int, int]:
        """(queued, decided, undone): a queue hundreds deep at any size."""
        queued = min(400, max(120, self.target // 20))
        decided = max(30, queued // 4)
        return queued, decided, max(6, decided // 5)

    def sample(self) -> list[str]:
        return [episode_id for _, episode_id in sorted(self.sampled)]

    def run(self) -> Realistic:
        raise NotImplementedError

    def described(
        self, reviewed: _Review, made: tuple[Key, tuple[Key, int], Key, Key, int], **own: Any
    ) -> Realistic:
        """What `build` made: the fields every layout fills alike (`made`: the deep key,
        the long memory and its size, the hostile and the long key, the expired count),
        then the layout's `own`."""
        deep, long_memory, hostile, long_key, expired = made
        return Realistic(
            path=self.path,
            layout=self.layout,
            seed=self.seed,
            tenant_at=self.tenant_at,
            deep_key=deep,
            deep_versions=DEEP_WEEKS * 7,
            long_memory=long_memory[0],
            long_memory_bytes=long_memory[1],
            hostile_key=hostile,
            hostile_tenant=HOSTILE_TENANT,
            long_key=long_key,
            review_queue=reviewed.queued,
            decided=len(reviewed.decision_ids),
            undone=reviewed.undone,
            decision_ids=reviewed.decision_ids,
            expired=expired,
            episode_ids=self.sample(),
            **own,
        )

    def counts(self) -> dict[str, int]:
        assert self.store is not None
        rows = self.store.stats()["rows"]
        return {"facts": rows["facts"], "rows": rows["fact_rows"], "episodes": rows["episodes"]}

    def check_empty(self) -> None:
        assert self.store is not None
        if self.store.stats()["rows"]["fact_rows"]:
            self.store.close()
            raise ConfigurationError(f"{self.path} already holds facts: build a new store")


class _Sgam(_Builder):
    """Tenants of people (subjects) and their typed attributes, from episodes."""

    layout: Layout = "sgam"
    tenant_at = 0

    def big_tenant(self) -> str:
        return SGAM_TENANTS[0]

    def run(self) -> Realistic:
        self.store = self.open(review=False)
        self.check_empty()
        queued, decided, undone = self.review_sizes()
        budget = self.target - DEEP_WEEKS * 7 - queued - decided - EXPIRED - 6
        people = self.people(budget)
        deep = self.deep(people[SGAM_TENANTS[0]][0])
        long_memory = self.long_memory(people[SGAM_TENANTS[0]][1])
        delayed, corrections = self.episodes_of(people, budget)
        hostile, long_key = self.hostile(SGAM_TENANTS[0])
        expired = self.expired(SGAM_TENANTS[1], people[SGAM_TENANTS[1]][0][1])
        self.store.close()
        self.store = self.open(review=True)
        try:
            reviewed = self.review(queued, decided, undone)
            subjects = len(self.store.for_tenant(SGAM_TENANTS[0]).list_namespaces(limit=2**31))
            counts = self.counts()
        finally:
            self.store.close()
        return self.described(
            reviewed,
            (deep, long_memory, hostile, long_key, expired),
            tenants=sorted(SGAM_TENANTS),
            big_tenant=SGAM_TENANTS[0],
            subjects=subjects,
            delayed=delayed,
            corrections=corrections,
            **counts,
        )

    def people(self, budget: int) -> dict[str, list[tuple[str, str]]]:
        """Each tenant's subjects as (shown name, subject id): the big tenant's share of
        the facts at FACTS_PER_SUBJECT each, the rest shared by the other tenants."""
        out = {}
        for n, tenant in enumerate(SGAM_TENANTS):
            share = BIG_SHARE if n == 0 else (1 - BIG_SHARE) / (len(SGAM_TENANTS) - 1)
            count = max(int(budget * share) // FACTS_PER_SUBJECT, 5)
            out[tenant] = [self.person(i) for i in range(count)]
        return out

    def person(self, number: int) -> tuple[str, str]:
        (first, first_slug), (last, last_slug) = (
            self.rng.choice(phrases.FIRST),
            self.rng.choice(phrases.LAST),
        )
        return f"{first} {last}", normalize_subject(f"{first_slug}_{last_slug}_{number:05d}")

    def deep(self, person: tuple[str, str]) -> Key:
        """A step counter's daily value, synced weekly: DEEP_WEEKS * 7 versions of one key."""
        tenant, (name, subject) = SGAM_TENANTS[0], person
        for week in range(DEEP_WEEKS):
            days = [START + timedelta(days=7 * week + d, hours=13) for d in range(7)]
            lines = [f"{day:%Y-%m-%d}: {self.rng.randint(1500, 16000)} steps" for day in days]
            text = f"Weekly sync from {name}'s step counter. " + "; ".join(lines) + "."
            said = self.episode(tenant, text, days[-1], kind="tool_result", speaker="step-sync")
            updates = [
                self.update(line, subject, "daily_steps", int(line.split()[1]), day, "profile")
                for line, day in zip(lines, days, strict=True)
            ]
            self.apply(tenant, said, updates)
        return self.namespace(tenant, subject), "daily_steps"

    def long_memory(self, person: tuple[str, str]) -> tuple[Key, int]:
        """A several-KB notes memory, so a page shows a long value."""
        tenant, (_, subject) = SGAM_TENANTS[0], person
        text = phrases.notes(self.rng, 60)
        said = self.episode(tenant, phrases.message(self.rng, [text]), START)
        self.apply(tenant, said, [self.update(text, subject, "notes", {"content": text}, START)])
        return (self.namespace(tenant, subject), "notes"), len(text.encode())

    def update(
        self,
        evidence: str,
        subject: str,
        attribute: str,
        value: Any,
        when: datetime,
        kind: str = "profile",
    ) -> dict[str, Any]:
        return {
            "evidence": evidence,
            "subject": subject,
            "attribute": attribute,
            "current_value": None,
            "change": "new",
            "value": value,
            "valid_from": when.isoformat(),
            "memory_type": kind,
        }

    def apply(self, tenant: str, episode_id: str, updates: list[dict[str, Any]]) -> int:
        assert self.store is not None
        result = self.store.apply_updates(
            updates, tenant_id=tenant, episode_id=episode_id, policy=SGAM_SOURCE_POLICY
        )
        return len(result.written)

    def episodes_of(self, people: dict[str, list[tuple[str, str]]], budget: int) -> tuple[int, int]:
        """Conversations in time order until `budget` facts are written; returns the
        delayed facts and the corrections among them."""
        weights = [BIG_SHARE] + [(1 - BIG_SHARE) / (len(SGAM_TENANTS) - 1)] * 4
        # (tenant, subject) -> attribute -> its latest valid_from
        started: dict[tuple[str, str], _Starts] = defaultdict(_Starts)
        written = delayed = corrections = 0
        count = max(budget // 6, 1)
        for n in range(count * 2):
            if written >= budget:
                break
            tenant = self.rng.choices(SGAM_TENANTS, weights)[0]
            name, subject = self.rng.choice(people[tenant])
            when = START + SPAN * min(n, count) / count
            when += timedelta(seconds=self.rng.randint(0, 600))
            said, updates, late, fixed = self.conversation(
                subject, when, started[(tenant, subject)]
            )
            episode_id = self.episode(tenant, said, when, speaker=name)
            written += self.apply(tenant, episode_id, updates)
            delayed, corrections = delayed + late, corrections + fixed
        self.plain.update((ts, starts.said()) for ts, starts in started.items())
        return delayed, corrections

    def conversation(
        self, subject: str, when: datetime, started: _Starts
    ) -> tuple[str, list[dict[str, Any]], int, int]:
        """One person's message and the candidates it yields: 3-9 attributes, sometimes a
        correction of an earlier one (at its start) or a fact that began weeks ago.
        `started`: the subject's attributes so far, each with its latest start."""
        corrected = None
        said = started.said()
        if said and self.rng.random() < 0.04:
            corrected = self.rng.choice(sorted(said))
        pool = [a for a in phrases.ATTRIBUTES if a != corrected]
        statements, updates, late = [], [], 0
        for attribute in self.rng.sample(pool, self.rng.randint(3, 9)):
            sentence, value, kind = phrases.statement(self.rng, attribute)
            start = when + timedelta(seconds=len(updates))
            if attribute in started and self.rng.random() < 0.05:
                start -= timedelta(days=self.rng.randint(3, 90))
                late += 1
            else:
                started[attribute] = start
            statements.append(sentence)
            updates.append(self.update(sentence, subject, attribute, value, start, kind))
        if corrected is not None:
            sentence, value, kind = phrases.statement(self.rng, corrected)
            statements.append(f"{self.rng.choice(phrases.CORRECTIONS)} {sentence}")
            updates.append(
                self.update(sentence, subject, corrected, value, started[corrected], kind)
            )
        return phrases.message(self.rng, statements), updates, late, int(corrected is not None)


class _Starts:
    """One subject's attributes so far, each with its latest start, as twelve integers
    (microseconds after START; -1: never said), where a dict of datetimes took ~1.2 KB:
    a 1M-fact store has ~65,000 subjects."""

    __slots__ = ("offsets",)
    index: ClassVar[dict[str, int]] = {a: n for n, a in enumerate(phrases.ATTRIBUTES)}

    def __init__(self) -> None:
        self.offsets = array("q", [-1]) * len(self.index)

    def __contains__(self, attribute: str) -> bool:
        return self.offsets[self.index[attribute]] >= 0

    def __getitem__(self, attribute: str) -> datetime:
        return START + timedelta(microseconds=self.offsets[self.index[attribute]])

    def __setitem__(self, attribute: str, start: datetime) -> None:
        self.offsets[self.index[attribute]] = (start - START) // timedelta(microseconds=1)

    def said(self) -> list[str]:
        return [attribute for attribute in self.index if attribute in self]


class _LangMem(_Builder):
    """LangMem's memories: `("memories", user)`, uuid keys, `{"content": ...}` values."""

    layout: Layout = "langmem"
    tenant_at = 1

    def __init__(self, path: str, facts: int, seed: int) -> None:
        super().__init__(path, facts, seed)
        self.users: list[str] = []

    def big_tenant(self) -> str:
        return self.users[0]

    def subject_label(self, name: str) -> str:
        return f"memories.{name}"

    def run(self) -> Realistic:
        self.store = self.open(review=False)
        self.check_empty()
        queued, decided, undone = self.review_sizes()
        budget = self.target - DEEP_WEEKS * 7 - queued - decided - EXPIRED - 6
        self.users = [f"user-{self.uuid()[:13]}" for _ in range(max(budget // FACTS_PER_USER, 10))]
        self.users[-1] = HOSTILE_TENANT
        big = self.users[0]
        deep = self.deep(big)
        long_memory = self.long_memory(big)
        self.memories(budget)
        hostile, long_key = self.hostile(big)
        expired = self.expired(self.users[1], "memories")
        self.store.close()
        self.store = self.open(review=True)
        try:
            reviewed = self.review(queued, decided, undone)
            counts = self.counts()
        finally:
            self.store.close()
        return self.described(
            reviewed,
            (deep, long_memory, hostile, long_key, expired),
            tenants=sorted(self.users),
            big_tenant=big,
            subjects=len(self.users),
            **counts,
        )

    def deep(self, user: str) -> Key:
        """A training log the user rewrites every day: DEEP_WEEKS * 7 versions."""
        key, namespace = self.uuid(), ("memories", user)
        for day in range(DEEP_WEEKS * 7):
            city = self.rng.choice(phrases.CITIES)
            text = (
                f"My training log: day {day + 1} of the plan, {self.rng.randint(3, 21)} km "
                f"today around {city}; weekly total so far {self.rng.randint(10, 70)} km."
            )
            said = self.episode(user, phrases.message(self.rng, [text]))
            self.put(said, [PutOp(namespace, key, {"content": text})])
        return namespace, key

    def long_memory(self, user: str) -> tuple[Key, int]:
        text = phrases.notes(self.rng, 60)
        key, namespace = self.uuid(), ("memories", user)
        said = self.episode(user, phrases.message(self.rng, [text]))
        self.put(said, [PutOp(namespace, key, {"content": text})])
        return (namespace, key), len(text.encode())

    def memories(self, budget: int) -> None:
        """Users' messages, each giving 1-6 memories (new ones, rewrites of earlier ones,
        a few long notes, a few with a TTL), until `budget` are written."""
        keys: dict[str, int] = defaultdict(int)  # user -> how many keys they have
        written = 0
        waiting: list[tuple[str, list[PutOp]]] = []
        while written < budget:
            user = self.users[0] if self.rng.random() < 0.25 else self.rng.choice(self.users)
            ops: list[PutOp] = []
            statements = []
            for _ in range(min(self.rng.randint(1, 6), budget - written)):
                op, text = self.memory(user, keys, {op.key for op in ops})
                ops.append(op)
                statements.append(text)
            waiting.append((self.episode(user, phrases.message(self.rng, statements)), ops))
            written += len(ops)
            if len(waiting) == GROUP or written >= budget:
                self.put_together(waiting)
                waiting = []

    def memory(self, user: str, keys: dict[str, int], taken: set[str]) -> tuple[PutOp, str]:
        """One memory put: a rewrite of one of the user's earlier keys (a quarter), else
        a new key. `keys`: each user's key count (their keys are `user_key(user, n)`)."""
        roll = self.rng.random()
        text = phrases.notes(self.rng, self.rng.randint(10, 60)) if roll < 0.01 else None
        text = text or phrases.memory(self.rng)
        key = None
        if keys[user] > len(taken) and self.rng.random() < 0.25:
            while key is None or key in taken:  # `taken`: at most five of the message's
                key = self.user_key(user, self.rng.randrange(keys[user]))
        else:
            key = self.user_key(user, keys[user])
            keys[user] += 1
        value: dict[str, Any] = {"content": text}
        if roll > 0.9:  # LangMem's memory manager writes its schema's shape
            value = {"kind": "Memory", "content": {"content": text}}
        ttl = TTL_MINUTES if 0.01 <= roll < 0.04 else None
        if ttl is None and key not in self.plain[(user, "memories")] and keys[user] < 8:
            self.plain[(user, "memories")].append(key)
        return PutOp(("memories", user), key, value, ttl=ttl), text

    def user_key(self, user: str, number: int) -> str:
        """A user's `number`th memory key, a uuid made from the seed, the user and the
        number: rewrites find earlier keys without a list of every key written."""
        digest = hashlib.blake2b(f"{self.seed}/{user}/{number}".encode(), digest_size=16)
        return str(uuid.UUID(bytes=digest.digest(), version=4))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="a new SQLite file, or an empty PostgreSQL URI")
    parser.add_argument("--layout", choices=("langmem", "sgam"), default="sgam")
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    made = build(args.out, layout=args.layout, facts=args.facts, seed=args.seed)
    for name, value in vars(made).items():
        if name not in ("tenants", "episode_ids", "decision_ids"):
            print(f"{name:>18}: {value!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

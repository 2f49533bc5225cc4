"""Fuzzing the BaseStore surface against a reference model (hypothesis stateful testing).

`StoreMachine` drives a real SGAMStore on a SQLite file and a small pure-Python model
of the BaseStore semantics with SGAM meaning, side by side:

- `put` = a new current value; the previous one is closed and kept in history;
  `delete` = the open fact is closed (history kept). Within one batch every write has
  the batch's instant T: the first put of a key starts at T, later ones 1 µs apart, and
  a delete closes at T, so a put deleted in its own batch never held and leaves history;
- `get` / `search` / `list_namespaces` see current facts only; a batch's reads see the
  state before its writes; `search` without a query lists newest first with exact
  offset/limit, and filters apply `$eq $ne $gt $gte $lt $lte` to (nested) fields;
  a keyword query finds exactly the current items containing the word;
- `for_tenant(t)` views take and return namespaces relative to `t` and see only `t`;
- `as_of(instant)` views (and their tenant views) answer exactly as the model did at
  that instant, after any number of later writes.

Writes go through `put`, `delete`, `batch`, `abatch` and tenant views, including
batches that mix reads and writes of the same key. Namespaces cover two tenants where
one is a prefix of the other, nested subjects and a subject named like the other tenant.
`tests/test_properties.py` covers the interval rule of `replace_fact`; this machine
covers the BaseStore surface and the views.

Budget: SGAM_FUZZ_EXAMPLES (60) runs of up to SGAM_FUZZ_STEPS (40) steps; for a longer
local run: ``SGAM_FUZZ_EXAMPLES=1000 SGAM_FUZZ_STEPS=60 .venv/bin/python -m pytest
tests/test_fuzz_store.py``. No example database is written (`database=None`).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from langgraph.store.base import GetOp, Item, MatchCondition, PutOp, SearchOp

from sgam_store import SGAMStore
from sgam_store.core.clock import utc_now
from tests import pg

EXAMPLES = int(os.environ.get("SGAM_FUZZ_EXAMPLES", "60"))
STEPS = int(os.environ.get("SGAM_FUZZ_STEPS", "40"))

TENANTS = ("acme", "acme2")
SUBJECTS = ((), ("mira",), ("mira", "docs"), ("acme2",))
KEYS = ("k1", "k2")
NAMESPACES = tuple((t, *s) for t in TENANTS for s in SUBJECTS)
WORDS = ("alpha", "bravo", "charlie", "delta")  # only ever in "text": keyword queries
TAGS = ("red", "blue")

Ns = tuple[str, ...]
Key = tuple[Ns, str]

VALUES = st.fixed_dictionaries(
    {
        "text": st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join),
        "n": st.integers(-3, 3),
        "nested": st.fixed_dictionaries({"n": st.integers(0, 2)}),
    },
    optional={"tag": st.sampled_from(TAGS)},
)
FILTERS = st.one_of(
    st.none(),
    st.sampled_from(TAGS).map(lambda t: {"tag": t}),
    st.sampled_from(TAGS).map(lambda t: {"tag": {"$ne": t}}),
    st.tuples(st.sampled_from(("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")), st.integers(-3, 3))
    .map(lambda p: {"n": {p[0]: p[1]}}),
    st.integers(0, 2).map(lambda n: {"nested.n": n}),
    st.tuples(st.integers(-3, 3), st.sampled_from(TAGS)).map(lambda p: {"n": p[0], "tag": p[1]}),
)  # fmt: skip
NS = st.sampled_from(NAMESPACES)
KEY = st.tuples(NS, st.sampled_from(KEYS))


# ------------------------------------------------------------------ reference model


@dataclass
class Version:
    value: dict
    start: tuple[int, int]  # (batch number, µs within the batch)
    end: tuple[int, int] | None = None
    order: int = 0  # insertion order of the put: listings are newest first


@dataclass
class Model:
    history: dict[Key, list[Version]] = field(default_factory=dict)
    batches: int = 0
    puts: int = 0
    touched: set[Key] = field(default_factory=set)  # keys written since the last check

    def open(self, key: Key) -> Version | None:
        hist = self.history.get(key, [])
        return hist[-1] if hist and hist[-1].end is None else None

    def apply(self, writes: list[tuple[Key, dict | None]]) -> None:
        """One batch: every write shares the batch's instant (the ledger's tx.now)."""
        self.batches += 1
        now = (self.batches, 0)
        written: set[Key] = set()
        for key, value in writes:
            self.touched.add(key)
            hist = self.history.setdefault(key, [])
            current = self.open(key)
            if restates(current, value) and current.start <= now and key not in written:
                continue  # an identical re-put keeps the version (docs/write-path.md)
            written.add(key)
            if value is None:  # delete: close at now; a fact starting at/after now never held
                if current is not None:
                    if current.start < now:
                        current.end = now
                    else:
                        hist.remove(current)
                continue
            latest = max((v.start for v in hist), default=None)
            start = now if latest is None or latest < now else (latest[0], latest[1] + 1)
            if current is not None:
                current.end = start
            self.puts += 1
            hist.append(Version(dict(value), start, None, self.puts))

    def current(self) -> dict[Key, Version]:
        return {k: v for k in self.history if (v := self.open(k)) is not None}

    def snapshot(self) -> dict[Key, dict]:
        return {k: v.value for k, v in self.current().items()}


def restates(current: Version | None, value: dict | None) -> bool:
    """Whether a put of `value` restates the open version: the same JSON, key order
    included (the store compares the stored text)."""
    return (
        current is not None and value is not None and json.dumps(current.value) == json.dumps(value)
    )


def matches_filter(value: dict, flt: dict | None) -> bool:
    """The filter semantics of the README: equality, or comparison operators per field."""
    for path, spec in (flt or {}).items():
        got: Any = value
        for part in path.split("."):
            got = got.get(part) if isinstance(got, dict) else None
        ops = spec if isinstance(spec, dict) else {"$eq": spec}
        for op, want in ops.items():
            if op == "$eq":
                ok = got == want and type(got) is type(want)
            elif op == "$ne":
                ok = not (got == want and type(got) is type(want))
            elif not isinstance(got, int) or isinstance(got, bool):
                ok = False  # order comparisons only hold between numbers
            else:
                ok = {"$gt": got > want, "$gte": got >= want, "$lt": got < want,
                      "$lte": got <= want}[op]  # fmt: skip
            if not ok:
                return False
    return True


def ns_matches(ns: Ns, cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if cond.match_type == "prefix" else ns[len(ns) - len(path) :]
    return all(p in ("*", label) for p, label in zip(path, part, strict=True))


# ------------------------------------------------------------------ the machine


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="sgam-fuzz-")
        self.store = self.open_store()
        self.store.setup()
        self.model = Model()
        self.snapshots: list[tuple[str, dict[Key, dict]]] = []

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def open_store(self) -> SGAMStore:
        return SGAMStore(str(Path(self.dir) / "fuzz.db"))

    # -------------------------------------------------------------- helpers

    def _after_write(self) -> None:
        """Record the instant right after a write, and make sure the next write is later."""
        instant = utc_now()
        while utc_now() <= instant:
            pass
        self.snapshots.append((instant, self.model.snapshot()))

    def _view(self, tenant: str | None) -> Any:
        return self.store if tenant is None else self.store.for_tenant(tenant)

    @staticmethod
    def _rel(ns: Ns, tenant: str | None) -> Ns:
        return ns if tenant is None else ns[1:]

    def _expected_listing(
        self, prefix: Ns, flt: dict | None, tenant: str | None
    ) -> list[tuple[Ns, str, dict]]:
        """Current items under `prefix` (absolute), newest put first."""
        items = [
            (key, v)
            for key, v in self.model.current().items()
            if key[0][: len(prefix)] == prefix
            and (tenant is None or key[0][0] == tenant)
            and matches_filter(v.value, flt)
        ]
        items.sort(key=lambda kv: -kv[1].order)
        return [(self._rel(k[0], tenant), k[1], v.value) for k, v in items]

    @staticmethod
    def _items(items: list[Item]) -> list[tuple[Ns, str, dict]]:
        return [(tuple(i.namespace), i.key, i.value) for i in items]

    def _write_ops(self, writes: list[tuple[Key, dict | None]], tenant: str | None) -> list:
        return [PutOp(self._rel(ns, tenant), key, value) for (ns, key), value in writes]

    # -------------------------------------------------------------- writes

    @rule(key=KEY, value=VALUES, via=st.sampled_from(("put", "batch", "abatch", "view_put")))
    def put(self, key: Key, value: dict, via: str) -> None:
        ns, k = key
        if via == "put":
            self.store.put(ns, k, value)
        elif via == "batch":
            self.store.batch([PutOp(ns, k, value)])
        elif via == "abatch":
            asyncio.run(self.store.abatch([PutOp(ns, k, value)]))
        else:
            self.store.for_tenant(ns[0]).put(ns[1:], k, value)
        self.model.apply([(key, value)])
        self._after_write()

    @rule(key=KEY, via=st.sampled_from(("store", "view")))
    def delete(self, key: Key, via: str) -> None:
        ns, k = key
        if via == "store":
            self.store.delete(ns, k)
        else:
            self.store.for_tenant(ns[0]).delete(ns[1:], k)
        self.model.apply([(key, None)])
        self._after_write()

    @rule(
        focus=KEY,
        ops=st.lists(
            st.tuples(
                st.sampled_from(("put", "delete", "get", "search")),
                st.one_of(st.none(), KEY),  # None: the batch's focus key
                VALUES,
                FILTERS,
            ),
            min_size=1,
            max_size=5,
        ),
        tenant=st.sampled_from((None, *TENANTS)),
        use_async=st.booleans(),
    )
    def mixed_batch(self, focus: Key, ops: list, tenant: str | None, use_async: bool) -> None:
        """Reads and writes in one batch, often of one key: reads see the state before it."""
        ops = [(kind, key or focus, v, f) for kind, key, v, f in ops]
        if tenant is not None:
            ops = [(kind, ((tenant, *key[0][1:]), key[1]), v, f) for kind, key, v, f in ops]
        before = self.model.current()
        batch: list = []
        writes: list[tuple[Key, dict | None]] = []
        for kind, (ns, k), value, flt in ops:
            rel = self._rel(ns, tenant)
            if kind in ("put", "delete"):
                body = value if kind == "put" else None
                batch.append(PutOp(rel, k, body))
                writes.append(((ns, k), body))
            elif kind == "get":
                batch.append(GetOp(rel, k))
            else:
                batch.append(SearchOp(rel[:1], filter=flt, limit=100))
        view = self._view(tenant)
        results = asyncio.run(view.abatch(batch)) if use_async else view.batch(batch)
        for (kind, (ns, k), _, flt), got in zip(ops, results, strict=True):
            if kind == "get":
                want = before.get((ns, k))
                assert (got.value if got else None) == (want.value if want else None), (ns, k)
            elif kind == "search":
                prefix = ns[:1] if tenant is None else (tenant, *self._rel(ns, tenant)[:1])
                expected = {
                    (self._rel(key[0], tenant), key[1]): v.value
                    for key, v in before.items()
                    if key[0][: len(prefix)] == prefix and matches_filter(v.value, flt)
                }
                assert {(tuple(i.namespace), i.key): i.value for i in got} == expected
            else:
                assert got is None
        self.model.apply(writes)
        self._after_write()

    # -------------------------------------------------------------- reads

    @rule(key=KEY, via=st.sampled_from(("store", "view")))
    def get(self, key: Key, via: str) -> None:
        ns, k = key
        tenant = ns[0] if via == "view" else None
        item = self._view(tenant).get(self._rel(ns, tenant), k)
        want = self.model.open(key)
        assert (item.value if item else None) == (want.value if want else None)
        if item is not None:
            assert (tuple(item.namespace), item.key) == (self._rel(ns, tenant), k)
        for other in TENANTS:  # another tenant's view, same relative namespace
            if other != ns[0] and via == "view":
                got = self.store.for_tenant(other).get(ns[1:], k)
                mine = self.model.open(((other, *ns[1:]), k))
                assert (got.value if got else None) == (mine.value if mine else None)

    @rule(
        prefix=st.sampled_from(((), *((t,) for t in TENANTS), *NAMESPACES)),
        flt=FILTERS,
        limit=st.integers(1, 12),
        offset=st.integers(0, 6),
        tenant=st.sampled_from((None, *TENANTS)),
    )
    def search(
        self, prefix: Ns, flt: dict | None, limit: int, offset: int, tenant: str | None
    ) -> None:
        if tenant is not None:
            prefix = (tenant, *prefix[1:])
        got = self._view(tenant).search(
            self._rel(prefix, tenant), filter=flt, limit=limit, offset=offset
        )
        expected = self._expected_listing(prefix, flt, tenant)[offset : offset + limit]
        assert self._items(got) == expected

    @rule(word=st.sampled_from(WORDS), tenant=st.sampled_from((None, *TENANTS)), flt=FILTERS)
    def keyword_search(self, word: str, tenant: str | None, flt: dict | None) -> None:
        got = self._view(tenant).search((), query=word, filter=flt, limit=100)
        expected = {
            (ns, k): value
            for ns, k, value in self._expected_listing((), flt, tenant)
            if word in value["text"].split()
        }
        assert {(tuple(i.namespace), i.key): i.value for i in got} == expected
        scores = [i.score for i in got]
        assert all(s == 1.0 for s in scores)  # calibrated: each hit holds the one word
        assert scores == sorted(scores, reverse=True)

    @rule(
        prefix=st.sampled_from(((), ("acme",), ("acme2",), ("*",), ("acme", "*"), ("*", "mira"))),
        suffix=st.sampled_from(((), ("mira",), ("docs",), ("*",), ("mira", "*"), ("acme2",))),
        max_depth=st.none() | st.integers(1, 3),
        limit=st.integers(1, 10),
        offset=st.integers(0, 4),
        tenant=st.sampled_from((None, *TENANTS)),
    )
    def list_namespaces(
        self,
        prefix: Ns,
        suffix: Ns,
        max_depth: int | None,
        limit: int,
        offset: int,
        tenant: str | None,
    ) -> None:
        got = self._view(tenant).list_namespaces(
            prefix=prefix or None, suffix=suffix or None, max_depth=max_depth,
            limit=limit, offset=offset,
        )  # fmt: skip
        spaces = {
            self._rel(ns, tenant)
            for ns, _ in self.model.current()
            if tenant is None or ns[0] == tenant
        }
        conditions = []
        if prefix:
            conditions.append(MatchCondition("prefix", prefix))
        if suffix:
            conditions.append(MatchCondition("suffix", suffix))
        found = {
            ns[:max_depth] if max_depth is not None else ns
            for ns in spaces
            if all(ns_matches(ns, c) for c in conditions)
        }
        assert got == sorted(found)[offset : offset + limit]

    @precondition(lambda self: self.snapshots)
    @rule(pick=st.integers(min_value=0), tenant=st.sampled_from((None, *TENANTS)))
    def as_of(self, pick: int, tenant: str | None) -> None:
        """A past instant answers as the model did then, however much was written since."""
        instant, state = self.snapshots[pick % len(self.snapshots)]
        if tenant is None:
            view = self.store.as_of(instant)
        elif pick % 2:
            view = self.store.as_of(instant).for_tenant(tenant)
        else:
            view = self.store.for_tenant(tenant).as_of(instant)
        want = {
            (self._rel(ns, tenant), k): value
            for (ns, k), value in state.items()
            if tenant is None or ns[0] == tenant
        }
        got = {(tuple(i.namespace), i.key): i.value for i in view.search((), limit=100)}
        assert got == want, f"as_of({instant})"
        for (ns, k), value in want.items():
            assert view.get(ns, k).value == value
        assert sorted(view.list_namespaces(limit=100)) == sorted({ns for ns, _ in want})

    @rule(key=KEY)
    def history(self, key: Key) -> None:
        ns, k = key
        hist = self.store.history(ns[0], ".".join(ns[1:]), k)
        model = self.model.history.get(key, [])
        assert [f.value for f in hist] == [v.value for v in model]
        assert [f.valid_to is None for f in hist] == [v.end is None for v in model]
        for a, b in pairwise(hist):
            assert a.valid_to is not None and a.valid_to <= b.valid_from

    # -------------------------------------------------------------- invariants

    @invariant()
    def everything_current_matches(self) -> None:
        got = self._items(self.store.search((), limit=1000))
        assert got == self._expected_listing((), None, None)

    @invariant()
    def written_keys_keep_their_history(self) -> None:
        for key in self.model.touched:
            self.history(key)
        self.model.touched.clear()


StoreMachine.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, database=None
)
test_store_machine = StoreMachine.TestCase


class PostgresStoreMachine(StoreMachine):
    """The same BaseStore surface on the PostgreSQL engine: a fresh schema per example."""

    def open_store(self) -> SGAMStore:
        uri, schema = pg.fresh_schema()
        return SGAMStore(uri, schema=schema)


PostgresStoreMachine.TestCase.settings = settings(
    StoreMachine.TestCase.settings, max_examples=max(10, EXAMPLES // 4)
)
test_store_machine_postgres = PostgresStoreMachine.TestCase

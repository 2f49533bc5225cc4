"""The in-process vector cache answers exactly what vec0 answers, and stays coherent.

Coherence cases: this store's own writes (mirrored after COMMIT), another store on the
same file (another connection: `PRAGMA data_version`), a rolled-back write, erasure.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from langgraph.store.base import PutOp

from sgam_store import MemoryFact, SGAMStore
from tests.conftest import HashEmbeddings

WORDS = [
    "passport",
    "deadline",
    "visa",
    "flight",
    "hotel",
    "meeting",
    "invoice",
    "budget",
    "garden",
    "piano",
]


def _index() -> dict:
    return {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}


def _open(path: str, **kwargs: object) -> SGAMStore:
    store = SGAMStore(path, index=_index(), retrieval={"mode": "vector"}, **kwargs)
    store.setup()
    return store


@pytest.fixture
def pair(db_path: str) -> Iterator[tuple[SGAMStore, SGAMStore]]:
    """Two stores on one file: two connections, two caches."""
    a, b = _open(db_path), _open(db_path)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def _keys(items: list) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(i.namespace), i.key) for i in items]


def _fill(store: SGAMStore, n: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    for i in range(n):
        text = " ".join([*rng.sample(WORDS, 3), f"item{i}"])  # distinct: no score ties
        store.put((f"t{i % 3}", f"s{i % 7}"), f"k{i}", {"text": text, "n": i % 4})


def _by_score(items: list) -> list[tuple[float, list]]:
    """Results grouped by score (rounded: vec0 and numpy round float32 differently), keys
    sorted inside a group: the order among equal scores is arbitrary."""
    groups: dict[float, list] = {}
    for item in items:
        groups.setdefault(round(item.score, 5), []).append((tuple(item.namespace), item.key))
    return [(score, sorted(keys)) for score, keys in groups.items()]


def test_cache_matches_vec0(db_path: str) -> None:
    """Same results and scores as a store searching vec0, with filters and prefixes, and
    pages that tile the full ranking."""
    cached = _open(db_path)
    direct = _open(db_path, vector_cache=False)
    try:
        _fill(cached, 120)
        for query in ("passport visa", "piano garden hotel", "budget"):
            for prefix, flt in (((), None), (("t1",), None), (("t2", "s3"), None), ((), {"n": 2})):
                got = cached.search(prefix, query=query, filter=flt, limit=200)
                want = direct.search(prefix, query=query, filter=flt, limit=200)
                assert _by_score(got) == _by_score(want)
                assert [i.score for i in got] == pytest.approx([i.score for i in want], abs=1e-6)
                pages = [
                    cached.search(prefix, query=query, filter=flt, limit=7, offset=offset)
                    for offset in range(0, len(got), 7)
                ]
                assert [_keys(p) for p in pages] == [
                    _keys(got[o : o + 7]) for o in range(0, len(got), 7)
                ]
    finally:
        cached.close()
        direct.close()


def test_own_writes_are_seen_without_rebuild(vstore: SGAMStore) -> None:
    vstore.put(("acme", "mira"), "note", {"text": "passport deadline"})
    assert _keys(vstore.search(("acme",), query="passport deadline"))  # builds the cache
    cache = vstore._cache
    assert cache is not None
    blocks = cache.blocks
    vstore.put(("acme", "mira"), "note", {"text": "piano lessons"})
    vstore.put(("acme", "joe"), "trip", {"text": "passport deadline"})
    hits = vstore.search(("acme",), query="passport deadline", limit=5)
    assert cache.blocks is blocks, "own writes must be mirrored, not trigger a rebuild"
    assert (hits[0].key, hits[0].value["text"]) == ("trip", "passport deadline")
    assert all(h.value["text"] != "passport deadline" or h.key == "trip" for h in hits)


def test_write_in_one_store_is_seen_by_search_in_the_other(
    pair: tuple[SGAMStore, SGAMStore],
) -> None:
    a, b = pair
    a.put(("acme", "mira"), "note", {"text": "passport deadline"})
    assert _keys(b.search(("acme",), query="passport deadline")) == [(("acme", "mira"), "note")]
    a.put(("acme", "mira"), "note", {"text": "piano lessons"})  # supersedes the old value
    a.put(("acme", "joe"), "trip", {"text": "passport visa"})
    hits = b.search(("acme",), query="passport", limit=10)
    assert {(h.key, h.value["text"]) for h in hits} == {
        ("note", "piano lessons"),
        ("trip", "passport visa"),
    }
    a.delete(("acme", "joe"), "trip")
    assert [h.key for h in b.search(("acme",), query="passport visa")] == ["note"]
    b.put(("acme", "ann"), "hobby", {"text": "garden"})
    assert "hobby" in [h.key for h in a.search((), query="garden")]


def test_two_stores_sharing_one_connection(db_path: str) -> None:
    """No other connection committed, so data_version is unchanged: the rowid mark catches it."""
    a = _open(db_path)
    b = SGAMStore(a.conn, index=_index(), retrieval={"mode": "vector"})
    try:
        a.put(("acme", "mira"), "note", {"text": "budget"})
        assert [h.key for h in b.search(("acme",), query="budget")] == ["note"]
        a.put(("acme", "joe"), "trip", {"text": "budget invoice"})
        assert {h.key for h in b.search(("acme",), query="budget invoice")} == {"note", "trip"}
    finally:
        a.close()


def test_rolled_back_write_leaves_cache_unchanged(vstore: SGAMStore) -> None:
    vstore.put(("acme", "mira"), "note", {"text": "passport"})
    vstore.search(("acme",), query="passport")

    def failing(tx: object) -> None:
        facts = vstore.facts
        facts.write(tx, _fact("hotel"), facts.vectors_for({"text": "hotel"}))  # type: ignore[arg-type]
        facts.finish(tx)  # type: ignore[arg-type]
        raise RuntimeError("abort")

    with pytest.raises(RuntimeError):
        vstore.facts.run(failing)
    assert [h.key for h in vstore.search(("acme",), query="hotel")] == ["note"]


def test_erasure_then_new_facts(vstore: SGAMStore) -> None:
    """Purged facts leave the results, and a reused fact id carries only its new vector."""
    vstore.put(("acme", "mira"), "a", {"text": "passport"})
    vstore.put(("acme", "mira"), "b", {"text": "garden"})
    vstore.search(("acme",), query="passport")
    vstore.purge("acme", "mira", "b")
    vstore.put(("acme", "mira"), "c", {"text": "piano"})
    hits = vstore.search(("acme",), query="piano", limit=5)
    assert (hits[0].key, hits[0].value["text"]) == ("c", "piano")
    assert {h.key for h in hits} == {"a", "c"}


def test_cache_off_searches_vec0(db_path: str) -> None:
    store = _open(db_path, vector_cache=False)
    try:
        store.put(("acme", "mira"), "note", {"text": "passport"})
        assert [h.key for h in store.search(("acme",), query="passport")] == ["note"]
        assert store._cache is None
    finally:
        store.close()


def test_as_of_search_uses_vec0_history(vstore: SGAMStore) -> None:
    vstore.put(("acme", "mira"), "note", {"text": "passport deadline"})
    before = vstore.fact_at("acme", "mira", "note")
    assert before is not None
    vstore.search(("acme",), query="passport")
    vstore.put(("acme", "mira"), "note", {"text": "piano lessons"})
    view = vstore.as_of(before.recorded_at)
    assert [h.value["text"] for h in view.search(("acme",), query="passport")] == [
        "passport deadline"
    ]


def _fact(text: str) -> MemoryFact:
    return MemoryFact(
        tenant_id="acme",
        subject="zed",
        attribute="hotel",
        value={"text": text},
        valid_from="2026-06-01T00:00:00Z",
        source_episode_id="external:test",
    )


def test_overlapped_hybrid_search_answers_as_the_sequential_one(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hybrid search may scan the cache in a worker thread while FTS5 runs: same answers,
    including pages, filters, tenant prefixes, a missing tenant and deleted facts."""
    import sgam_store.read.candidates as candidates_module

    store = SGAMStore(db_path, index=_index())  # hybrid, the default
    store.setup()
    _fill(store, 240)
    for i in range(0, 240, 9):
        store.delete((f"t{i % 3}", f"s{i % 7}"), f"k{i}")
    rng = random.Random(5)
    searches = [
        (prefix, " ".join(rng.sample(WORDS, 2)), flt, offset)
        for prefix in [(), ("t0",), ("t1", "s3"), ("nobody",)]
        for flt in [None, {"n": 2}, {"n": {"$gte": 1}}]
        for offset in (0, 7)
    ]

    def answers() -> list:
        return [
            [
                (tuple(i.namespace), i.key, round(i.score, 6))
                for i in store.search(prefix, query=query, filter=flt, limit=6, offset=offset)
            ]
            for prefix, query, flt, offset in searches
        ]

    monkeypatch.setattr(candidates_module, "OVERLAP_MIN_VECTORS", 10**9)
    sequential = answers()
    assert store._ranker._pool is None  # nothing went to the scanner thread
    monkeypatch.setattr(candidates_module, "OVERLAP_MIN_VECTORS", 1)
    monkeypatch.setattr(candidates_module, "_CORES", 2)
    overlapped = answers()
    assert store._ranker._pool is not None  # the scans ran in the scanner thread
    assert overlapped == sequential
    assert sum(map(len, sequential)) > 60  # the searches found things to compare
    store.close()
    assert store._ranker._pool is None


def test_overlapped_search_in_a_forked_child(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A forked child inherits the scanner executor without its thread; its search must
    start a thread of its own rather than wait forever."""
    import os
    import time

    import sgam_store.read.candidates as candidates_module

    monkeypatch.setattr(candidates_module, "OVERLAP_MIN_VECTORS", 1)
    monkeypatch.setattr(candidates_module, "_CORES", 2)
    store = SGAMStore(db_path, index=_index())
    store.setup()
    _fill(store, 30)
    expected = _keys(store.search(("t1",), query="passport visa"))
    assert expected and store._ranker._pool is not None
    pid = os.fork()
    if pid == 0:  # the child: exit code says whether it got the parent's answer
        os._exit(0 if _keys(store.search(("t1",), query="passport visa")) == expected else 1)
    deadline = time.monotonic() + 30
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's search hung")
    assert os.waitstatus_to_exitcode(done[1]) == 0
    store.close()


def test_candidate_checks_read_only_the_covering_index(db_path: str) -> None:
    """Search checks each ranked candidate against the read rule; for current reads that
    check must be answered from the fact_id index alone (no table row per candidate)."""
    store = SGAMStore(db_path, index=_index())
    store.setup()
    _fill(store, 60)
    checks: list[str] = []

    def trace(sql: str) -> None:
        if "f.fact_id IN" in sql and not sql.startswith("EXPLAIN"):
            checks.append(sql)

    store.conn.set_trace_callback(trace)
    store.search(("t1",), query="passport visa")
    store.for_tenant("t2").search((), query="hotel budget")
    store.conn.set_trace_callback(None)
    assert len(checks) >= 2
    for sql in checks:
        plan = " ".join(row[3] for row in store.conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert "COVERING INDEX facts_fact_id" in plan, plan
    store.close()


def test_a_tenant_listing_walks_its_recent_index_without_sorting(db_path: str) -> None:
    """A listing (search without a query) of a tenant, filtered or not, reads the tenant's
    current facts newest first from facts_current_recent and stops at its page."""
    store = SGAMStore(db_path)
    store.setup()
    store.batch([PutOp(("t1", f"s{n}"), "k", {"kind": f"k{n % 3}"}) for n in range(60)])
    listings: list[str] = []

    def trace(sql: str) -> None:
        if "ORDER BY f.known_from DESC" in sql and not sql.startswith("EXPLAIN"):
            listings.append(sql)

    store.conn.set_trace_callback(trace)
    assert len(store.search(("t1",), limit=5)) == 5
    found = store.search(("t1",), filter={"kind": "k1"}, limit=5)
    assert [i.value["kind"] for i in found] == ["k1"] * 5
    assert [i.key for i in store.for_tenant("t1").search((), limit=2)] == ["k", "k"]
    store.conn.set_trace_callback(None)
    assert len(listings) == 3
    for sql in listings:
        plan = " ".join(row[3] for row in store.conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert "facts_current_recent" in plan and "TEMP B-TREE" not in plan, plan
    store.close()


@pytest.mark.parametrize("centering", [False, True])
def test_hybrid_search_of_several_fields_matches_vec0(db_path: str, centering: bool) -> None:
    """A hybrid search takes its keyword hits' cosines (and a small whole tenant's every
    cosine) from the mirror's scan, each fact by its best field: as vec0's rows give
    them, across tenants and within one."""
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text", "title"]}
    retrieval = {"centering": centering}
    cached = SGAMStore(db_path, index=index, retrieval=retrieval)
    direct = SGAMStore(db_path, index=index, retrieval=retrieval, vector_cache=False)
    rng = random.Random(3)
    try:
        cached.setup()
        for i in range(90):
            value = {"text": " ".join([*rng.sample(WORDS, 3), f"item{i}"])}
            if i % 3:
                value["title"] = " ".join(rng.sample(WORDS, 2))
            cached.put((f"t{i % 3}", f"s{i % 5}"), f"k{i}", value)
        for query in ("passport visa", "piano garden hotel", "budget item7"):
            for prefix in ((), ("t1",), ("t2", "s3")):
                got = cached.search(prefix, query=query, limit=40)
                want = direct.search(prefix, query=query, limit=40)
                assert _keys(got) == _keys(want)
                assert [i.score for i in got] == pytest.approx([i.score for i in want], abs=1e-6)
    finally:
        cached.close()
        direct.close()

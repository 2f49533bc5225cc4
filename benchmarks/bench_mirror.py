"""The vector mirror's encodings (float32, float16, int8): recall, memory and speed.

    python benchmarks/bench_mirror.py                          # 100k hash vectors, 10k MiniLM
    python benchmarks/bench_mirror.py --size 1000000 --minilm-size 0 --peer sqlite

bench_store's workload (every planned write: the load, the updates, the single puts) goes
into one SGAM file; one store per encoding opens it with vector-only ranking, and the
tenant, all-tenant and subject searches run round-robin across them (and SqliteStore,
with `--peer sqlite`, for the ratio bench_store reports). Quality is measured against an
exact float32 numpy ranking of the current vectors: recall@10, and the share of queries
whose top 10 is the exact one, as a set and in order. Memory is measured in a fresh
process per encoding: RSS before and after the mirror is built, and its arrays' bytes.

Two kinds of vectors: bench_store's hash vectors (random directions: neighbours barely
closer than anything else, the hard case for ranking on rounded scores) and
all-MiniLM-L6-v2 over the same texts (`--minilm-size`, the `local` extra; these texts
differ in a few tokens, so their vectors crowd together). Also printed: how int8 with a
scale per vector compares with a scale per dimension, on the same vectors.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from bench_store import SQLITE, open_sqlite
from harness import (
    FULL,
    TOP_K,
    CachedHashEmbeddings,
    Workload,
    aligned,
    environment,
    index_config,
    plan,
    round_robin,
)
from langgraph.store.base import BaseStore, SearchItem

from sgam_store import LocalMiniLM, SGAMStore

MODES = ("float32", "float16", "int8")
RERANK_DEPTH = 128  # what int8 re-ranks for the ranker's first depth (64) for a top 10
Key = tuple[tuple[str, ...], str]
Query = tuple[tuple[str, ...], str]  # (prefix, text)


class MiniLMVectors(CachedHashEmbeddings):
    """bench_store's embedder serving all-MiniLM-L6-v2's vectors (offline, from the
    `local` extra) instead of hashed ones, computed for every text before timing."""

    def warm(self, texts: Sequence[str], lists: bool = True) -> None:
        model = LocalMiniLM()
        unique = list(dict.fromkeys(texts))
        started = time.perf_counter()
        parts = []
        for start in range(0, len(unique), 512):
            parts.append(np.asarray(model.embed_documents(unique[start : start + 512]), np.float32))
            done = start + len(parts[-1])
            print(
                f"  MiniLM: {done:,} of {len(unique):,} texts, {time.perf_counter() - started:.0f}s"
            )
        self.matrix = np.concatenate(parts)
        self.rows = {text: row for row, text in enumerate(unique)}
        self.cache = {t: self.matrix[r].tolist() for t, r in self.rows.items()} if lists else {}
        self.misses = self.unstaged = 0


# ---------------------------------------------------------------------- ground truth


class Exact:
    """Exact float32 cosine rankings of the current vectors, per search prefix."""

    def __init__(self, workload: Workload, embedder: CachedHashEmbeddings) -> None:
        self.keys: list[Key] = list(workload.final)
        rows = [embedder.rows[workload.final[k]["text"]] for k in self.keys]
        self.matrix = embedder.matrix[rows]
        self.tenant = np.asarray([k[0][0] for k in self.keys])
        self.subject = np.asarray([k[0][1] for k in self.keys])
        self.embedder = embedder

    def top(self, prefix: tuple[str, ...], query: str) -> list[Key]:
        rows = np.arange(len(self.keys))
        if prefix:
            rows = rows[self.tenant == prefix[0]]
        if len(prefix) > 1:
            rows = rows[self.subject[rows] == prefix[1]]
        sims = self.matrix[rows] @ self.embedder.vector(query)
        return [self.keys[i] for i in rows[np.argsort(-sims, kind="stable")[:TOP_K]]]


def quality(found: list[list[Key]], want: list[list[Key]]) -> dict[str, float]:
    """recall@10, and the shares of queries whose top 10 equals `want`'s as a set and in
    order."""
    pairs = list(zip(found, want, strict=False))  # the shorter: what ran in the budget
    return {
        "recall@10": statistics.mean(len(set(f) & set(w)) / len(w) for f, w in pairs),
        "same set": statistics.mean(set(f) == set(w) for f, w in pairs),
        "same order": statistics.mean(f == w for f, w in pairs),
    }


def scale_study(exact: Exact, queries: list[Query]) -> dict[str, dict[str, float]]:
    """int8 on its own (no re-rank): a scale per vector (the mirror's) against a scale per
    dimension. `recall@10` ranks on the int8 scores alone; `top 10 in re-rank` is the
    share of queries whose exact top 10 lies within the best RERANK_DEPTH by int8, which
    is when the mirror's exact re-rank returns the exact top 10."""
    matrix = exact.matrix / np.linalg.norm(exact.matrix, axis=1, keepdims=True)
    per_vector = np.abs(matrix).max(axis=1, keepdims=True) / 127
    per_dimension = np.abs(matrix).max(axis=0, keepdims=True) / 127
    out = {}
    for name, scale in (("per vector", per_vector), ("per dimension", per_dimension)):
        approx = np.rint(matrix / scale).astype(np.int8).astype(np.float32) * scale
        recalls, within = [], []
        for prefix, text in queries:
            rows = np.arange(len(exact.keys))
            if prefix:
                rows = rows[exact.tenant == prefix[0]]
            q = exact.embedder.vector(text)
            truth = set(rows[_best(matrix[rows] @ q, TOP_K)].tolist())
            order = rows[_best(approx[rows] @ q, RERANK_DEPTH)]
            recalls.append(len(truth & set(order[:TOP_K].tolist())) / TOP_K)
            within.append(truth <= set(order.tolist()))
        out[name] = {
            "recall@10": statistics.mean(recalls),
            "top 10 in re-rank": statistics.mean(within),
        }
    return out


def _best(sims: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k highest values, best first."""
    top = np.argpartition(-sims, k - 1)[:k] if len(sims) > k else np.arange(len(sims))
    return top[np.argsort(-sims[top], kind="stable")]


# ---------------------------------------------------------------------- memory


def rss() -> dict[str, int]:
    """This process's resident memory now, in bytes (Linux): all of it, the private
    (anonymous) part, and the file-backed part (SQLite's memory-mapped database pages,
    which the kernel may drop)."""
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return {name: int(fields[key].split()[0]) * 1024 for name, key in RSS_FIELDS.items()}


RSS_FIELDS = {"rss": "VmRSS", "anon": "RssAnon", "file": "RssFile"}


def probe(mode: str, db: str) -> dict[str, Any]:
    """In this (fresh) process: RSS before and after building the `mode` mirror of `db`."""
    embedder = CachedHashEmbeddings()  # the query's vector is computed on the spot
    store = SGAMStore(db, index=index_config(embedder), retrieval={"vector_mirror": mode})
    store.setup()
    store.search(("nobody",), limit=TOP_K)  # a listing: warms the read path, not the mirror
    gc.collect()
    before = rss()
    store.search((), query="build the mirror", limit=TOP_K)
    gc.collect()
    after = rss()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # hand the build's freed heap back to the OS
    trimmed = rss()
    mirror = store.stats()["vector_mirror"]
    return {
        "vectors": mirror["vectors"],
        **{f"{name} delta": after[name] - before[name] for name in RSS_FIELDS},
        "anon delta after malloc_trim": trimmed["anon"] - before["anon"],
        "nbytes": mirror["bytes"],
        "exact file bytes": mirror["exact_bytes"],
    }


def memory(db: str) -> dict[str, dict[str, Any]]:
    """`probe` per encoding, each in a process of its own."""
    out = {}
    for mode in MODES:
        command = [sys.executable, __file__, "--probe", mode, "--db", db]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        out[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


# ---------------------------------------------------------------------- one run


def load(store: BaseStore, workload: Workload, embedder: CachedHashEmbeddings) -> float:
    """Every planned write, in order, each batch's texts staged first; seconds taken."""
    started = time.perf_counter()
    batches = (
        workload.load_batches + workload.update_batches + [[op] for op in workload.single_puts]
    )
    for batch in batches:
        embedder.stage([op.value["text"] for op in batch])  # type: ignore[index]
        store.batch(batch)
    return time.perf_counter() - started


def run(kind: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    """Load `size` facts with `kind` vectors, then measure every encoding."""
    workload = plan(size, FULL, args.seed)
    embedder = MiniLMVectors() if kind == "minilm" else CachedHashEmbeddings()
    embedder.warm(workload.texts(), lists=False)
    queries: dict[str, list[Query]] = {
        "tenant": [((t,), q) for t, q in workload.tenant_queries],
        "all-tenant": [((), q) for q in workload.global_queries],
        "subject": list(workload.subject_queries),
    }
    exact = Exact(workload, embedder)
    result: dict[str, Any] = {"kind": kind, "size": size, "ops": {}, "quality": {}}
    with tempfile.TemporaryDirectory(prefix="sgam-mirror-", dir=args.tmpdir) as tmp:
        db = str(Path(tmp) / "sgam.db")
        writer = SGAMStore(db, index=index_config(embedder))
        writer.setup()
        result["load_s"] = load(writer, workload, embedder)
        writer.close()
        stores: dict[str, BaseStore] = {}
        for mode in MODES:
            store = SGAMStore(
                db,
                index=index_config(embedder),
                retrieval={"mode": "vector", "vector_mirror": mode},
            )
            store.setup()
            started = time.perf_counter()
            store.search((), query=workload.global_queries[0], limit=TOP_K)
            result.setdefault("build_s", {})[mode] = time.perf_counter() - started
            stores[mode] = store
        peer = open_sqlite(Path(tmp), embedder, False) if args.peer == "sqlite" else None
        if peer is not None:
            result["peer_load_s"] = load(peer.store, workload, embedder)
            stores[SQLITE] = peer.store
        try:
            for label, scoped in queries.items():
                found = time_searches(label, scoped, stores, embedder, result, args)
                truth = [exact.top(prefix, text) for prefix, text in scoped]
                for mode in MODES:  # over the queries it ran within the time budget
                    result["quality"].setdefault(label, {})[mode] = {
                        "queries": len(found[mode]),
                        "vs exact numpy": quality(found[mode], truth),
                        "vs float32 mirror": quality(found[mode], found["float32"]),
                    }
        finally:
            for store in stores.values():
                if isinstance(store, SGAMStore):
                    store.close()
            if peer is not None:
                peer.close()
        result["memory"] = memory(db)
    result["int8 scale"] = scale_study(exact, queries["tenant"] + queries["all-tenant"])
    result["embedder misses"] = embedder.misses
    return result


def time_searches(
    label: str,
    scoped: list[Query],
    stores: dict[str, BaseStore],
    embedder: CachedHashEmbeddings,
    result: dict[str, Any],
    args: argparse.Namespace,
) -> dict[str, list[list[Key]]]:
    """Round-robin timings of one kind of search; every store's result keys per query."""

    def searcher(store: BaseStore) -> Callable[[Query], list[SearchItem]]:
        return lambda q: store.search(q[0], query=q[1], limit=TOP_K)

    timings = round_robin(
        {name: searcher(store) for name, store in stores.items()},
        scoped,
        budget_s=args.budget,
        min_samples=10,
        prepare=lambda q: embedder.stage([q[1]]),
    )
    result["ops"][label] = {name: statistics.median(s) for name, s in timings.seconds.items()}
    return {
        name: [[(tuple(i.namespace), i.key) for i in items] for items in outputs]
        for name, outputs in timings.outputs.items()
        if name in MODES
    }


# ---------------------------------------------------------------------- report


def report(result: dict[str, Any]) -> str:
    lines = [
        f"\n== {result['size']:,} facts, {result['kind']} vectors (load {result['load_s']:.0f}s) =="
    ]
    names = [*MODES, *([SQLITE] if SQLITE in result["ops"]["tenant"] else [])]
    rows = [["search (median ms)", *names, *(f"{SQLITE}/{m}" for m in MODES if SQLITE in names)]]
    for label, medians in result["ops"].items():
        cells = [f"{medians[n] * 1e3:.3f}" for n in names]
        ratios = [f"{medians[SQLITE] / medians[m]:.1f}x" for m in MODES if SQLITE in names]
        rows.append([label, *cells, *ratios])
    lines.append(aligned(rows))
    rows = [["quality", "vs", *MODES]]
    for label, per_mode in result["quality"].items():
        for versus in ("vs exact numpy", "vs float32 mirror"):
            for metric in ("recall@10", "same set", "same order"):
                cells = [f"{per_mode[m][versus][metric]:.3f}" for m in MODES]
                rows.append([f"{label} {metric}", versus.removeprefix("vs "), *cells])
    lines.append(aligned(rows))
    rows = [["memory", *MODES]]
    mem = result["memory"]
    per_100k = {m: 100_000 / max(mem[m]["vectors"], 1) / 2**20 for m in MODES}
    for field, label in (
        ("nbytes", "mirror arrays, MiB per 100k"),
        ("rss delta", "RSS delta, MiB per 100k"),
        ("anon delta", "  of which private (anonymous)"),
        ("file delta", "  of which file-backed (database mmap)"),
        ("anon delta after malloc_trim", "private after malloc_trim"),
        ("exact file bytes", "exact rows file (page cache), MiB per 100k"),
    ):
        rows.append([label, *(f"{mem[m][field] * per_100k[m]:.1f}" for m in MODES)])
    rows.append(["build (first search), s", *(f"{result['build_s'][m]:.2f}" for m in MODES)])
    lines.append(aligned(rows))
    scale = result["int8 scale"]
    lines.append(
        "int8 alone (no re-rank), tenant + all-tenant queries: "
        + "; ".join(
            f"scale {name}: recall@10 {v['recall@10']:.3f}, exact top 10 within the best "
            f"{RERANK_DEPTH} {v['top 10 in re-rank']:.3f}"
            for name, v in scale.items()
        )
    )
    lines.append(f"embedder misses: {result['embedder misses']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="facts with hash vectors")
    parser.add_argument(
        "--minilm-size", type=int, default=10_000, help="facts with MiniLM (0: none)"
    )
    parser.add_argument("--peer", choices=["sqlite"], help="also time SqliteStore's searches")
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per store and search")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tmpdir", default=None)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--probe", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(probe(args.probe, args.db)))
        return 0
    print("environment: " + ", ".join(f"{k} {v}" for k, v in environment().items()), flush=True)
    results = []
    for kind, size in (("hash", args.size), ("minilm", args.minilm_size)):
        if size:
            results.append(run(kind, size, args))
            print(report(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"environment": environment(), "runs": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

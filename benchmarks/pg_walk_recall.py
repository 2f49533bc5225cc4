"""Where PostgreSQL's vector search may walk HNSW: recall@10 and time of the walk against the
exact scan, on MiniLM vectors of realistic memory text (issue 41's rule: a large scope may be
approximate only where recall@10 against exact search is >= 0.95 on real embeddings).

The text is `sgam_store.testing.realistic`'s LangMem layout (first-person memories, thousands
of users, some users with thousands of memories); queries are the first sentence of 100
memories. Vectors come from the bundled all-MiniLM-L6-v2, embedded once and cached beside the
store file. Recall counts a hit as right when its exact similarity reaches the 10th best's: the
text repeats (as agents' memories do), and among equal vectors any ten are the top ten.

    python benchmarks/pg_walk_recall.py --facts 20000            # ~20 min, most of it embedding

Both scopes are searched through the public API, vector-only: all users (past 5,000 current
vectors, the HNSW walk) and the largest user (exact up to 20,000), each now and as of now (a
point-in-time search scans exactly), so the walk's time and recall stand beside the scan's.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from harness import Databases
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from sgam_store import LocalMiniLM, SGAMStore
from sgam_store.testing.realistic import build

Memory = tuple[tuple[str, ...], str, dict[str, Any]]


def memories(path: Path, facts: int) -> list[Memory]:
    """The current memories of a LangMem-layout realistic store (built if absent)."""
    if not path.exists():
        build(str(path), layout="langmem", facts=facts, seed=0)
    found: list[Memory] = []
    with SGAMStore.from_conn_string(str(path), tenant_at=1) as store:
        for ns in store.list_namespaces(limit=10**7):
            for offset in range(0, 10**7, 500):
                page = store.search(ns, limit=500, offset=offset)
                found += [(tuple(i.namespace), i.key, i.value) for i in page if i.namespace == ns]
                if len(page) < 500:
                    break
    return [m for m in found if isinstance(m[2].get("content"), str)]


def vectors(cache: Path, texts: list[str], queries: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """MiniLM vectors of the texts and queries, computed once and kept in `cache`."""
    if cache.exists():
        saved = np.load(cache)
        return saved["texts"], saved["queries"]
    model = LocalMiniLM()
    found = np.asarray(model.embed_documents(texts), dtype=np.float32)
    asked = np.asarray(model.embed_documents(queries), dtype=np.float32)
    np.savez(cache, texts=found, queries=asked)
    return found, asked


class Lookup(Embeddings):
    """The cached vectors served to the store: what it embeds is what the exact search sees."""

    def __init__(self, texts: list[str], found: np.ndarray) -> None:
        self.table = dict(zip(texts, found.tolist(), strict=True))

    def add(self, texts: list[str], found: np.ndarray) -> Lookup:
        self.table.update(zip(texts, found.tolist(), strict=True))
        return self

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text]


def measure(
    store: SGAMStore,
    memories_: list[Memory],
    vecs: np.ndarray,
    asked: list[np.ndarray],
    queries: list[str],
    user: str | None,
) -> list[str]:
    """Median time and recall@10 (mean, worst) of one scope's vector search, as it runs now
    (past the exact limit, the walk) and as of now (a point-in-time search, always an exact
    scan), against numpy's exact top 10 over the same vectors."""
    keys = {(m[0], m[1]): i for i, m in enumerate(memories_)}
    matrix = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    owners = np.array([m[0][1] for m in memories_])
    scope = ("memories",) if user is None else ("memories", user)
    lines = []
    as_of_now = store.as_of(datetime.now(UTC))
    for label, reader in (("now", store), ("as of now: exact scan", as_of_now)):
        times, recalls = [], []
        for query, vec in zip(queries, asked, strict=True):
            scores = matrix @ (vec / np.linalg.norm(vec))
            if user is not None:
                scores = np.where(owners == user, scores, -np.inf)
            tenth = np.sort(scores)[-10]
            started = time.perf_counter()
            hits = reader.search(scope, query=query, limit=10)
            times.append(time.perf_counter() - started)
            right = sum(scores[keys[(tuple(h.namespace), h.key)]] >= tenth - 1e-5 for h in hits)
            recalls.append(right / 10)
        size = len(memories_) if user is None else int((owners == user).sum())
        lines.append(
            f"{user or 'all users'} ({size:,} memories) | {label} | "
            f"{statistics.median(times) * 1e3:.2f} ms | "
            f"{statistics.mean(recalls):.3f} (worst {min(recalls):.1f})"
        )
    return lines


def analyze(uri: str) -> None:
    """Planner statistics, as a database in use has them (a fresh load has none)."""
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("ANALYZE")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=20_000)
    parser.add_argument("--work", default="/tmp/sgam-walk-recall", help="store and vector cache")
    parser.add_argument("--pg-uri", help="a PostgreSQL server (default: an embedded one)")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    found = memories(work / f"langmem-{args.facts}.db", args.facts)
    texts = [m[2]["content"] for m in found]
    queries = [t.split(". ")[0][:200] for t in random.Random(7).sample(texts, 100)]
    text_vecs, query_vecs = vectors(work / f"minilm-{args.facts}.npz", texts, queries)
    databases = Databases(args.pg_uri)
    try:
        embed = Lookup(texts, text_vecs).add(queries, query_vecs)
        index = {"dims": 384, "embed": embed, "fields": ["content"]}
        uri = databases.fresh()
        vector_only = {"mode": "vector"}
        with SGAMStore.from_conn_string(
            uri, tenant_at=1, index=index, retrieval=vector_only
        ) as store:
            store.setup()
            ops = [PutOp(ns, key, value) for ns, key, value in found]
            for start in range(0, len(ops), 500):
                store.batch(ops[start : start + 500])
            analyze(uri)
            users: dict[str, int] = {}
            for ns, _, _ in found:
                users[ns[1]] = users.get(ns[1], 0) + 1
            biggest = max(users, key=users.__getitem__)
            print(f"{len(found):,} memories of {len(users):,} users (analyzed)")
            print("scope | search | median | recall@10 against exact")
            for user in (None, biggest):
                for line in measure(store, found, text_vecs, list(query_vecs), queries, user):
                    print(line, flush=True)
    finally:
        databases.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

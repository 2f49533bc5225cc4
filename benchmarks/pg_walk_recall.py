"""Where PostgreSQL's vector search may walk HNSW: recall@10 and time of the walk against the
exact scan, on MiniLM vectors of realistic memory text (issue 41's rule: a large scope may be
approximate only where recall@10 against exact search is >= 0.95 on real embeddings).

The text is `sgam_store.testing.realistic`'s LangMem layout (first-person memories, thousands
of users, some users with thousands of memories); queries are the first sentence of 100
memories. Vectors come from the bundled all-MiniLM-L6-v2, embedded once and cached beside the
store file. Recall counts a hit as right when its exact similarity reaches the 10th best's: the
text repeats (as agents' memories do), and among equal vectors any ten are the top ten.

    python benchmarks/pg_walk_recall.py --facts 20000            # ~20 min, most of it embedding

Both scopes are read through the engine's own statements: the whole store (all tenants) and
its largest tenant, exactly (`_current_scan`) and by the walk (`_walk`) at several ef_search.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from harness import Databases
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from sgam_store import LocalMiniLM, SGAMStore
from sgam_store.engines.postgres import reads
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

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text]


def measure(store: SGAMStore, asked: np.ndarray, tenant: str | None, ef: int | None) -> str:
    """Median time and recall@10 (mean, worst) of one scope, exact (ef None) or walked."""
    with store.engine.reading() as conn:
        rows = conn.execute(
            "SELECT fact_id, tenant_id, embedding::text FROM fact_vectors WHERE is_current"
        ).fetchall()
    ids = {int(r[0]): i for i, r in enumerate(rows)}
    matrix = np.array([json.loads(r[2]) for r in rows], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    owners = np.array([r[1] for r in rows])
    times, recalls = [], []
    for query in asked:
        scores = matrix @ (query / np.linalg.norm(query))
        if tenant is not None:
            scores = np.where(owners == tenant, scores, -np.inf)
        tenth = np.sort(scores)[-10]
        vec = reads._vector(query.tobytes())
        with store.engine.snapshot() as conn:
            started = time.perf_counter()
            if ef is None:
                hits = reads._current_scan(conn, vec, 10, tenant)
            else:
                hits = _walk_at(conn, vec, tenant, ef)
            times.append(time.perf_counter() - started)
        recalls.append(sum(scores[ids[f]] >= tenth - 1e-5 for f, _ in hits) / 10)
    how = "exact scan" if ef is None else f"walk, ef_search {ef}"
    size = len(rows) if tenant is None else int((owners == tenant).sum())
    return (
        f"{tenant or 'all tenants'} ({size} vectors) | {how} | "
        f"{statistics.median(times) * 1e3:.2f} ms | "
        f"{statistics.mean(recalls):.3f} (worst {min(recalls):.1f})"
    )


def _walk_at(conn: Any, vec: Any, tenant: str | None, ef: int) -> list[tuple[int, float]]:
    """The engine's walk with ef_search held at `ef` (it derives it from k otherwise)."""
    floor, reads.EF_SEARCH_MIN = reads.EF_SEARCH_MIN, ef
    try:
        return reads._walk(conn, vec, 10, tenant)
    finally:
        reads.EF_SEARCH_MIN = floor


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
        index = {"dims": 384, "embed": Lookup(texts, text_vecs), "fields": ["content"]}
        with SGAMStore.from_conn_string(databases.fresh(), tenant_at=1, index=index) as store:
            store.setup()
            ops = [PutOp(ns, key, value) for ns, key, value in found]
            for start in range(0, len(ops), 500):
                store.batch(ops[start : start + 500])
            with store.engine.maintenance() as conn:
                conn.execute("ANALYZE")
            users: dict[str, int] = {}
            for ns, _, _ in found:
                users[ns[1]] = users.get(ns[1], 0) + 1
            biggest = max(users, key=users.__getitem__)
            print(f"{len(found):,} memories of {len(users):,} users (analyzed)")
            print("scope | search | median | recall@10 against exact")
            for tenant in (None, biggest):
                for ef in (None, 40, 100, 200):
                    print(measure(store, query_vecs, tenant, ef), flush=True)
    finally:
        databases.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

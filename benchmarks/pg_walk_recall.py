"""Why PostgreSQL's vector search never walks HNSW: recall@10 of pgvector's HNSW walk
against the exact scan, on MiniLM vectors of bench_table's realistic text (issue 41's rule:
a scope may be approximate only where recall@10 against exact search is >= 0.95).

The memories are bench_table's workload (`plan`: its layouts, sizes and seed), their vectors
its cache (`--cache-dir`, embedded once); the queries are its all-tenant questions. The
vectors go into a bare table on the server (COPY), with pgvector's HNSW cosine index as
SGAM's schema v9 built it (m 16, ef_construction 64), so what is measured is the index,
not the store. The text repeats as people's memories do: the script prints how often, since
that is what the walk trips on (a group of equal vectors links to itself in the graph).
A hit counts when its exact similarity reaches the 10th best's: among equal vectors any
ten are the top ten.

    python benchmarks/pg_walk_recall.py --layout sgam --size 20000
    python benchmarks/pg_walk_recall.py --layout langmem --size 100000 --ef 100,1000
    python benchmarks/pg_walk_recall.py --layout sgam --size 20000 --distinct   # copies merged
    python benchmarks/pg_walk_recall.py --layout langmem --size 100000 --ivf 200 --ef 5,10
    python benchmarks/pg_walk_recall.py --layout sgam --size 100000 --store

The walk is measured as a walk (sequential scans off: from ef_search 200 on 5,307 vectors
the planner chose the exact scan instead, and reported its recall as the walk's), the exact
scan as a sort of a fenced subquery, which no index can order. Commit bb23f09 (schema v11,
reverted) measured the store's own path, a walk over distinct vectors, with `--store`.
`--ivf LISTS` builds pgvector's IVFFlat index instead (k-means lists, trained on the rows
loaded), and `--ef` then names `ivfflat.probes`: a list scan has no graph for copies to sink.
`--store` measures the store's own all-tenant search instead, through public names: exact
before `vacuum()`, then through the lists it trains (100,000 vectors or more), at the
probes the store ships.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from pathlib import Path

import numpy as np
import psycopg
from bench_table import TIE, Exact, MiniLMVectors, Workload, analyze, open_sgam, plan
from harness import TOP_K, Databases, Samples


def literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.8g}" for x in vector) + "]"


def load(uri: str, matrix: np.ndarray, m: int, ef_construction: int, lists: int = 0) -> float:
    """The vectors into table v, then the HNSW index (an IVFFlat one of `lists` lists
    instead, when given); the index build's seconds."""
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE TABLE v (id int, e vector({matrix.shape[1]}))")
        with conn.cursor().copy("COPY v (id, e) FROM STDIN") as copy:
            for i, row in enumerate(matrix):
                copy.write_row((i, literal(row)))
        started = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '512MB'")
        if lists:
            conn.execute(
                f"CREATE INDEX ON v USING ivfflat (e vector_cosine_ops) WITH (lists = {lists})"
            )
        else:
            conn.execute(
                "CREATE INDEX ON v USING hnsw (e vector_cosine_ops) "
                f"WITH (m = {m}, ef_construction = {ef_construction})"
            )
        conn.execute("ANALYZE v")
        return time.perf_counter() - started


def measure(
    uri: str, matrix: np.ndarray, queries: np.ndarray, efs: list[int], knob: str = "hnsw.ef_search"
) -> None:
    """Per ef_search (or `knob`'s value: ivfflat.probes): mean and worst recall@10 of the
    index scan, its median ms; then the exact scan's."""
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    with psycopg.connect(uri, autocommit=True) as conn:
        for label, setting in [*((f"index, {knob} {ef}", ef) for ef in efs), ("exact", 0)]:
            # The walk itself: at a high ef_search the planner's cost model prefers the
            # exact scan, which would be measured in its place. The exact scan sorts a
            # fenced subquery's rows (OFFSET 0), which no index can order.
            if setting:
                conn.execute(f"SET {knob} = {setting}")
            conn.execute(f"SET enable_seqscan = {'off' if setting else 'on'}")
            walk = "SELECT id FROM v ORDER BY e <=> %s::vector LIMIT %s"
            scan = "SELECT id FROM (SELECT id, e <=> %s::vector AS d FROM v OFFSET 0) AS s "
            scan += "ORDER BY d LIMIT %s"
            recalls, ms = [], []
            for q in queries:
                scores = unit @ (q / np.linalg.norm(q))
                tenth = -np.partition(-scores, TOP_K - 1)[TOP_K - 1]
                started = time.perf_counter()
                ids = conn.execute(walk if setting else scan, (literal(q), TOP_K)).fetchall()
                ms.append((time.perf_counter() - started) * 1000)
                recalls.append(sum(scores[i] >= tenth - TIE for (i,) in ids) / TOP_K)
            print(
                f"  {label:<22} recall@10 {np.mean(recalls):.3f} (worst {min(recalls):.1f})"
                f"  {statistics.median(ms):6.2f} ms"
            )


def measure_store(uri: str, workload: Workload, embedder: MiniLMVectors) -> None:
    """The store's own path (`--store`), through public names only: bench_table's
    memories put into SGAMStore and analyzed, its all-tenant searches run before
    `vacuum()` (no lists: the exact scan) and after it (the lists it trains, at the probes
    the store ships); recall@10 of the vector-only search against exact (bench_table's
    `Exact`), the median ms of it and of hybrid search. Other probes: `--ivf`."""
    tenant_at = workload.layout.tenant_at
    vector = open_sgam(uri, embedder, tenant_at, vector=True)
    hybrid = open_sgam(uri, embedder, tenant_at, vector=False)
    started = time.perf_counter()
    for batch in workload.batches:
        vector.store.batch(batch)
    analyze(uri)
    print(f"  loaded and analyzed in {time.perf_counter() - started:.0f}s")
    truth = Exact(workload, embedder)
    try:
        for label in ("exact (before vacuum)", "lists (after vacuum)"):
            if label.startswith("lists"):
                vector.store.vacuum()
            recalls, ms, hybrid_ms = [], [], []
            for query in workload.everywhere:
                for contender, times in ((vector, ms), (hybrid, hybrid_ms)):
                    started = time.perf_counter()
                    found = contender.store.search(query[0], query=query[1], limit=TOP_K)
                    times.append((time.perf_counter() - started) * 1000)
                    if contender is vector:
                        recalls.append(truth.recall(query, found))
            print(
                f"  {label:<22} recall@10 {np.mean(recalls):.3f} (worst {min(recalls):.1f})"
                f"  vector {statistics.median(ms):6.2f} ms  hybrid "
                f"{statistics.median(hybrid_ms):6.2f} ms"
            )
    finally:
        vector.close()
        hybrid.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", default="sgam", choices=["langmem", "sgam"])
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument(
        "--ef", default="40,100,400,1000", help="hnsw.ef_search values (ivfflat.probes with --ivf)"
    )
    parser.add_argument("--ivf", type=int, default=0, help="an IVFFlat index of this many lists")
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=64)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--distinct", action="store_true", help="index each text once")
    parser.add_argument(
        "--store", action="store_true", help="SGAMStore's own path: exact, then the lists"
    )
    parser.add_argument("--seed", type=int, default=7, help="bench_table's workload seed")
    parser.add_argument("--pg-uri", help="an existing PostgreSQL server (default: embedded)")
    parser.add_argument(
        "--cache-dir", type=Path, default=Path.home() / ".cache" / "sgam-store" / "bench-vectors"
    )
    args = parser.parse_args()
    samples = Samples(0, 0, 1, args.queries, 0.5, 1)
    workload = plan(args.layout, args.size, samples, args.seed)
    embedder = MiniLMVectors(args.cache_dir)
    embedder.warm(workload.texts(), lists=args.store)
    texts = [value["content"] for value in workload.memories.values()]
    copies = Counter(texts)
    print(
        f"{args.layout} layout, {len(texts):,} memories: {len(copies):,} distinct texts, "
        f"the most repeated {copies.most_common(1)[0][1]:,} times"
    )
    indexed = list(copies) if args.distinct else texts
    matrix = np.stack([embedder.vector(t) for t in indexed])
    queries = np.stack([embedder.vector(q) for _, q in workload.everywhere])
    databases = Databases(args.pg_uri)
    try:
        uri = databases.fresh()
        if args.store:
            measure_store(uri, workload, embedder)
            return
        built = load(uri, matrix, args.m, args.ef_construction, args.ivf)
        shape = f"IVFFlat, {args.ivf} lists" if args.ivf else f"HNSW, m {args.m}, "
        shape += "" if args.ivf else f"ef_construction {args.ef_construction}"
        print(
            f"  {len(indexed):,} vectors indexed in {built:.0f}s ({shape}); {len(queries)} queries"
        )
        knob = "ivfflat.probes" if args.ivf else "hnsw.ef_search"
        measure(uri, matrix, queries, [int(ef) for ef in args.ef.split(",")], knob)
    finally:
        databases.close()


if __name__ == "__main__":
    main()

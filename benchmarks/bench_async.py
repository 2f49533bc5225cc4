"""Concurrent async reads on PostgreSQL: SGAMStore's `abatch` against LangGraph's
AsyncPostgresStore, which runs on psycopg's native async pool.

SGAMStore's async methods run its sync engine in a worker thread. This measures what
that costs where async matters, many coroutines at once on one event loop (a LangGraph
server's requests): throughput, latency percentiles, and how late the loop's own ticks
run while the reads are in flight.

    python benchmarks/bench_async.py                       # embedded PostgreSQL 18
    python benchmarks/bench_async.py --facts 4000 --concurrency 1,8,64

Both stores get the same facts (bench_store's workload and embedder), a pool of the same
size on the same server, and alternate run by run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

from harness import QUICK, TOP_K, CachedHashEmbeddings, Databases, index_config, plan
from langgraph.store.base import BaseStore

from sgam_store import SGAMStore

Call = Callable[[BaseStore, int], Awaitable[Any]]


async def open_sgam(uri: str, embedder: CachedHashEmbeddings, pool: int) -> BaseStore:
    store = SGAMStore(uri, index=index_config(embedder), pool_size=pool)
    await asyncio.to_thread(store.setup)
    return store


async def open_langgraph(
    uri: str, embedder: CachedHashEmbeddings, pool: int, stack: AsyncExitStack
) -> BaseStore:
    from langgraph.store.postgres import AsyncPostgresStore

    opened = AsyncPostgresStore.from_conn_string(
        uri, index=index_config(embedder), pool_config={"min_size": pool, "max_size": pool}
    )
    store = await stack.enter_async_context(opened)
    await store.setup()
    return store


async def lag_probe(lags: list[float], stop: asyncio.Event) -> None:
    """How late a 1 ms sleep wakes, sampled until `stop`: the loop's responsiveness."""
    while not stop.is_set():
        t = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(time.perf_counter() - t - 0.001)


async def drive(store: BaseStore, call: Call, concurrency: int, calls: int) -> dict[str, float]:
    """`calls` calls from `concurrency` coroutines; latencies, throughput and loop lag."""
    latencies: list[float] = []
    lags: list[float] = []
    stop = asyncio.Event()
    counter = iter(range(calls))

    async def worker() -> None:
        for i in counter:
            t = time.perf_counter()
            await call(store, i)
            latencies.append(time.perf_counter() - t)

    probe = asyncio.create_task(lag_probe(lags, stop))
    started = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(concurrency)])
    wall = time.perf_counter() - started
    stop.set()
    await probe
    cuts = statistics.quantiles(latencies, n=100)
    return {
        "per_s": calls / wall,
        "p50_ms": cuts[49] * 1e3,
        "p99_ms": cuts[98] * 1e3,
        "lag_p99_ms": statistics.quantiles(lags, n=100)[98] * 1e3 if len(lags) > 1 else 0.0,
    }


def calls_for(keys: list[Any], queries: list[tuple[str, str]]) -> dict[str, Call]:
    async def get(store: BaseStore, i: int) -> Any:
        namespace, key = keys[i % len(keys)]
        return await store.aget(namespace, key)

    async def search(store: BaseStore, i: int) -> Any:
        tenant, text = queries[i % len(queries)]
        return await store.asearch((tenant,), query=text, limit=TOP_K)

    return {"get": get, "tenant search": search}


async def run(args: argparse.Namespace) -> None:
    workload = plan(args.facts, QUICK, args.seed)
    embedder = CachedHashEmbeddings()
    embedder.warm(workload.texts())
    databases = Databases(args.pg_uri)
    async with AsyncExitStack() as stack:
        stores = {
            "SGAMStore": await open_sgam(databases.fresh(), embedder, args.pool),
            "AsyncPostgresStore": await open_langgraph(
                databases.fresh(), embedder, args.pool, stack
            ),
        }
        for store in stores.values():
            for batch in workload.load_batches:
                await store.abatch(batch)
        calls = calls_for(workload.keys, workload.tenant_queries)
        print(f"{args.facts:,} facts, pool of {args.pool}, {args.calls} calls per run, median")
        print(
            f"{'operation':<14}{'tasks':>6}  {'store':<19}{'calls/s':>9}{'p50 ms':>9}"
            f"{'p99 ms':>9}{'loop lag p99 ms':>17}"
        )
        for name, call in calls.items():
            for concurrency in args.concurrency:
                runs: dict[str, list[dict[str, float]]] = {s: [] for s in stores}
                for _ in range(args.runs):
                    for label, store in stores.items():
                        runs[label].append(await drive(store, call, concurrency, args.calls))
                for label, samples in runs.items():
                    m = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
                    print(
                        f"{name:<14}{concurrency:>6}  {label:<19}{m['per_s']:>9.0f}"
                        f"{m['p50_ms']:>9.2f}{m['p99_ms']:>9.2f}{m['lag_p99_ms']:>17.2f}"
                    )
        closing = stores["SGAMStore"]
        assert isinstance(closing, SGAMStore)
        closing.close()
    databases.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=4000, help="facts to load (multiple of 200)")
    parser.add_argument("--concurrency", default="1,8,64", help="comma list of task counts")
    parser.add_argument("--calls", type=int, default=600, help="calls per run")
    parser.add_argument("--runs", type=int, default=3, help="alternating runs per store")
    parser.add_argument("--pool", type=int, default=8, help="connections per store")
    parser.add_argument("--pg-uri", help="an existing PostgreSQL server (default: embedded)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())

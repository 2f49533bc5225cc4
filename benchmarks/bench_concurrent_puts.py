"""Concurrent writers: many threads (or asyncio tasks) each doing single puts, against one
thread doing the same puts, and against LangGraph's SqliteStore and AsyncSqliteStore.

The workload of a LangGraph server's agent turns: every writer puts one memory at a
time, half to keys of its own and half to 32 keys all writers share. SGAMStore lets
the puts that arrive while a write transaction is in progress share a commit
(`sgam_store/write/group.py`); this prints what that buys.

    python benchmarks/bench_concurrent_puts.py              # 16 threads x 150, 64 tasks
    python benchmarks/bench_concurrent_puts.py --quick      # fewer rounds and puts
    python benchmarks/bench_concurrent_puts.py --postgres   # SGAM on PostgreSQL too

Each round runs every contender on a fresh file, in turn, alternating the order round
by round; figures are medians. LangGraph's stores run twice: on SQLite's default pragmas
(rollback journal, `synchronous=FULL`, as `from_conn_string` opens them: an fsync per
commit), and on SGAM's (WAL, `synchronous=NORMAL`, as in bench_store.py). After each
SGAM run, every put must be a version in its key's history (0 lost), or the benchmark
stops. "SGAM 1 thread, batches of N" writes the same puts N to a transaction from one
thread: what a group of N costs per put with no thread hand-overs, so the ceiling for N
concurrent writers (each has one put in flight).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import aiosqlite
from harness import Databases, aligned, environment
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.sqlite import SqliteStore
from langgraph.store.sqlite.aio import AsyncSqliteStore

from sgam_store import SGAMStore, connect

SHARED_KEYS = 32
STOCK = "stock pragmas"  # what from_conn_string gives: an fsync per commit
EQUAL = "SGAM's pragmas"
# SGAM's pragmas (sgam_store.connect), given to AsyncSqliteStore's connection as well.
PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    f"PRAGMA mmap_size = {256 * 1024 * 1024}",
    "PRAGMA busy_timeout = 5000",
)
Put = tuple[tuple[str, ...], str, dict[str, Any]]


def writer_puts(writer: int, count: int) -> list[Put]:
    """One writer's puts: even ones to its own keys, odd ones to the shared keys."""
    puts: list[Put] = []
    for n in range(count):
        value = {"text": f"writer {writer} put {n}: prefers tea, moves in May", "n": n}
        if n % 2:
            puts.append((("bench", "shared"), f"s{(writer + n) % SHARED_KEYS}", value))
        else:
            puts.append((("bench", f"w{writer}"), f"k{n}", value))
    return puts


def in_threads(store: BaseStore, work: list[list[Put]]) -> float:
    """Seconds for one thread per writer to do its puts, started together."""
    go = threading.Barrier(len(work) + 1)

    def run(puts: list[Put]) -> None:
        go.wait()
        for ns, key, value in puts:
            store.put(ns, key, value)

    threads = [threading.Thread(target=run, args=(puts,)) for puts in work]
    for t in threads:
        t.start()
    go.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - start


async def in_tasks(store: BaseStore, work: list[list[Put]]) -> float:
    """Seconds for one task per writer to do its puts with `aput`."""

    async def run(puts: list[Put]) -> None:
        for ns, key, value in puts:
            await store.aput(ns, key, value)

    start = time.perf_counter()
    await asyncio.gather(*(run(puts) for puts in work))
    return time.perf_counter() - start


def sgam_run(target: str, work: list[list[Put]], mode: str) -> float:
    """`mode`: "threads" (one per writer), "tasks" (one asyncio task per writer), or
    "one" (every writer's puts in one thread); "batch" does the same in one thread in
    batches of len(work) puts: what one transaction of that many costs, with no other
    thread to hand over to, so the most a group of that size can give. Then checks
    that every put is a version of its key."""
    store = SGAMStore(target)
    store.setup()
    try:
        if mode == "threads":
            seconds = in_threads(store, work)
        elif mode == "tasks":
            seconds = asyncio.run(in_tasks(store, work))
        elif mode == "one":
            seconds = in_threads(store, [[put for puts in work for put in puts]])
        else:
            seconds = in_batches(store, work)
        check_history(store, work)
    finally:
        store.close()
    return seconds


def in_batches(store: BaseStore, work: list[list[Put]]) -> float:
    """Seconds to write the n-th put of every writer as one batch, n after n."""
    batches = [[PutOp(*puts[n]) for puts in work] for n in range(len(work[0]))]
    start = time.perf_counter()
    for ops in batches:
        store.batch(ops)
    return time.perf_counter() - start


def check_history(store: SGAMStore, work: list[list[Put]]) -> None:
    """Every put is a version in its key's history: none lost, none merged."""
    wanted: dict[tuple[tuple[str, ...], str], set[str]] = {}
    for puts in work:
        for ns, key, value in puts:
            wanted.setdefault((ns, key), set()).add(value["text"])
    for (ns, key), texts in wanted.items():
        found = [f.value["text"] for f in store.history(ns[0], ns[1], key)]
        if len(found) != len(texts) or set(found) != texts:
            sys.exit(f"{ns}/{key}: {len(texts)} puts, history holds {len(found)}: lost puts")


def sqlite_store_run(path: Path, work: list[list[Put]], stock: bool) -> float:
    """`stock`: SqliteStore.from_conn_string's connection, SQLite's default pragmas
    (rollback journal, synchronous=FULL: an fsync per commit); else SGAM's."""
    if stock:
        with SqliteStore.from_conn_string(str(path)) as store:
            store.setup()
            return in_threads(store, work)
    conn = connect(str(path))
    try:
        store = SqliteStore(conn)
        store.setup()
        return in_threads(store, work)
    finally:
        conn.close()


async def async_sqlite_store_run(path: Path, work: list[list[Put]], stock: bool) -> float:
    async with aiosqlite.connect(str(path), isolation_level=None) as conn:
        for pragma in () if stock else PRAGMAS:
            await conn.execute(pragma)
        store = AsyncSqliteStore(conn)
        await store.setup()
        return await in_tasks(store, work)


def contenders(
    threads: int, tasks: int, puts: int, pg: Databases | None
) -> dict[str, Callable[[Path], float]]:
    """Name -> run(a fresh file's path) -> seconds. The names say how many puts each
    does: the thread work's, or the task work's (with "task" in the name)."""
    thread_work = [writer_puts(w, puts) for w in range(threads)]
    task_work = [writer_puts(w, puts) for w in range(tasks)]
    runs: dict[str, Callable[[Path], float]] = {
        "SGAM 1 thread": lambda p: sgam_run(str(p), thread_work, "one"),
        f"SGAM {threads} threads": lambda p: sgam_run(str(p), thread_work, "threads"),
        f"SGAM 1 thread, batches of {threads}": lambda p: sgam_run(str(p), thread_work, "batch"),
    }
    for stock, label in ((True, STOCK), (False, EQUAL)):
        runs[f"SqliteStore {threads} threads, {label}"] = partial(
            sqlite_store_run, work=thread_work, stock=stock
        )
    runs |= {
        "SGAM 1 thread (task puts)": lambda p: sgam_run(str(p), task_work, "one"),
        f"SGAM {tasks} tasks": lambda p: sgam_run(str(p), task_work, "tasks"),
        f"SGAM 1 thread, batches of {tasks} (task puts)": lambda p: sgam_run(
            str(p), task_work, "batch"
        ),
    }
    for stock, label in ((True, STOCK), (False, EQUAL)):
        runs[f"AsyncSqliteStore {tasks} tasks, {label}"] = partial(
            lambda p, stock: asyncio.run(async_sqlite_store_run(p, task_work, stock)),
            stock=stock,
        )
    if pg is not None:
        runs |= {
            "PostgreSQL: SGAM 1 thread": lambda _: sgam_run(pg.fresh(), thread_work, "one"),
            f"PostgreSQL: SGAM {threads} threads": lambda _: sgam_run(
                pg.fresh(), thread_work, "threads"
            ),
            f"PostgreSQL: SGAM {tasks} tasks": lambda _: sgam_run(pg.fresh(), task_work, "tasks"),
        }
    return runs


def ratio(rate: dict[str, float], faster: str, slower: str) -> str:
    return f"  {faster} / {slower}: {rate[faster] / rate[slower]:.2f}x"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--tasks", type=int, default=64)
    p.add_argument("--puts", type=int, default=150, help="per thread or task")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="3 rounds of 60 puts per writer")
    p.add_argument("--postgres", action="store_true", help="also SGAM on PostgreSQL")
    p.add_argument("--pg-uri", help="a server for --postgres (default: an embedded one)")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.puts = 3, 60
    pg = Databases(args.pg_uri) if args.postgres else None
    try:
        seconds = measure(contenders(args.threads, args.tasks, args.puts, pg), args.rounds)
    finally:
        if pg is not None:
            pg.close()
    report(seconds, args)


def measure(runs: dict[str, Callable[[Path], float]], rounds: int) -> dict[str, list[float]]:
    """Every contender once per round on a fresh file, the order reversed every other
    round."""
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for n, name in enumerate(names if r % 2 == 0 else names[::-1]):
                seconds[name].append(runs[name](Path(tmp) / f"r{r}-{n}.db"))
    return seconds


def report(seconds: dict[str, list[float]], args: argparse.Namespace) -> None:
    t, k = args.threads, args.tasks
    total = {name: (k if "task" in name else t) * args.puts for name in seconds}
    rate = {name: total[name] / statistics.median(times) for name, times in seconds.items()}
    lines = [["contender", "puts", "puts/s (median)", "us/put", "min s", "max s"]]
    for name, times in seconds.items():
        lines.append(
            [
                name,
                str(total[name]),
                f"{rate[name]:,.0f}",
                f"{1e6 / rate[name]:,.0f}",
                f"{min(times):.2f}",
                f"{max(times):.2f}",
            ]
        )
    print(f"{args.rounds} alternating rounds; half of each writer's puts go to its own keys,")
    print(f"half to {SHARED_KEYS} shared keys; every SGAM put checked in history (0 lost)\n")
    print(aligned(lines))
    print("\nratios (throughput):")
    print(ratio(rate, f"SGAM {t} threads", "SGAM 1 thread"))
    for label in (STOCK, EQUAL):
        print(ratio(rate, f"SGAM {t} threads", f"SqliteStore {t} threads, {label}"))
    print(ratio(rate, f"SGAM 1 thread, batches of {t}", "SGAM 1 thread"))
    print(ratio(rate, f"SGAM {k} tasks", "SGAM 1 thread (task puts)"))
    for label in (STOCK, EQUAL):
        print(ratio(rate, f"SGAM {k} tasks", f"AsyncSqliteStore {k} tasks, {label}"))
    print(ratio(rate, f"SGAM 1 thread, batches of {k} (task puts)", "SGAM 1 thread (task puts)"))
    if args.postgres:
        print(ratio(rate, f"PostgreSQL: SGAM {t} threads", "PostgreSQL: SGAM 1 thread"))
        print(ratio(rate, f"PostgreSQL: SGAM {k} tasks", "PostgreSQL: SGAM 1 thread"))
    print()
    for key, val in environment().items():
        print(f"{key}: {val}")


if __name__ == "__main__":
    main()

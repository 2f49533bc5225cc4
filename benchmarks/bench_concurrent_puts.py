"""Concurrent writers: many threads (or asyncio tasks) each doing single puts, against one
thread doing the same puts, and against LangGraph's SqliteStore and AsyncSqliteStore.

The workload of a LangGraph server's agent turns: every writer puts one memory at a
time, half to keys of its own and half to 32 keys all writers share. SGAMStore groups
the puts that arrive while a write transaction is in progress into the next one
(`sgam_store/write/group.py`); this prints what that buys.

    python benchmarks/bench_concurrent_puts.py              # 16 threads x 150, 64 tasks
    python benchmarks/bench_concurrent_puts.py --quick      # fewer rounds and puts

Each round runs every contender on a fresh file, in turn, alternating the order round
by round; figures are medians. After each SGAM run, every put must be a version in its
key's history (0 lost), or the benchmark stops.
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
from pathlib import Path
from typing import Any

from harness import aligned, environment
from langgraph.store.base import BaseStore
from langgraph.store.sqlite import SqliteStore
from langgraph.store.sqlite.aio import AsyncSqliteStore

from sgam_store import SGAMStore

SHARED_KEYS = 32
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


def sgam_run(path: Path, work: list[list[Put]], mode: str) -> float:
    """`mode`: "threads" (one per writer), "one" (every writer's puts in one thread),
    or "tasks"; then checks that every put is a version of its key."""
    store = SGAMStore(str(path))
    store.setup()
    try:
        if mode == "threads":
            seconds = in_threads(store, work)
        elif mode == "one":
            seconds = in_threads(store, [[put for puts in work for put in puts]])
        else:
            seconds = asyncio.run(in_tasks(store, work))
        check_history(store, work)
    finally:
        store.close()
    return seconds


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


def sqlite_store_run(path: Path, work: list[list[Put]]) -> float:
    with SqliteStore.from_conn_string(str(path)) as store:
        store.setup()
        return in_threads(store, work)


async def async_sqlite_store_run(path: Path, work: list[list[Put]]) -> float:
    async with AsyncSqliteStore.from_conn_string(str(path)) as store:
        await store.setup()
        return await in_tasks(store, work)


def contenders(threads: int, tasks: int, puts: int) -> dict[str, Callable[[Path], float]]:
    thread_work = [writer_puts(w, puts) for w in range(threads)]
    task_work = [writer_puts(w, puts) for w in range(tasks)]
    return {
        "SGAM 1 thread": lambda p: sgam_run(p, thread_work, "one"),
        f"SGAM {threads} threads": lambda p: sgam_run(p, thread_work, "threads"),
        f"SqliteStore {threads} threads": lambda p: sqlite_store_run(p, thread_work),
        "SGAM 1 thread (task puts)": lambda p: sgam_run(p, task_work, "one"),
        f"SGAM {tasks} tasks": lambda p: sgam_run(p, task_work, "tasks"),
        f"AsyncSqliteStore {tasks} tasks": lambda p: asyncio.run(
            async_sqlite_store_run(p, task_work)
        ),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--tasks", type=int, default=64)
    p.add_argument("--puts", type=int, default=150, help="per thread or task")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="3 rounds of 60 puts per writer")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.puts = 3, 60
    runs = contenders(args.threads, args.tasks, args.puts)
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for n, name in enumerate(names if r % 2 == 0 else names[::-1]):
                seconds[name].append(runs[name](Path(tmp) / f"r{r}-{n}.db"))
    threads_total = args.threads * args.puts
    tasks_total = args.tasks * args.puts
    rate = {
        name: (tasks_total if "task" in name else threads_total) / statistics.median(times)
        for name, times in seconds.items()
    }
    lines = [["contender", "puts", "puts/s (median)", "min s", "max s"]]
    for name, times in seconds.items():
        total = tasks_total if "task" in name else threads_total
        lines.append(
            [name, str(total), f"{rate[name]:,.0f}", f"{min(times):.2f}", f"{max(times):.2f}"]
        )
    print(f"{args.rounds} alternating rounds; half of each writer's puts go to its own keys,")
    print(f"half to {SHARED_KEYS} shared keys; every SGAM put checked in history (0 lost)\n")
    print(aligned(lines))
    t, k = args.threads, args.tasks
    print("\nratios (throughput):")
    print(
        f"  SGAM {t} threads / SGAM 1 thread:       "
        f"{rate[f'SGAM {t} threads'] / rate['SGAM 1 thread']:.2f}x"
    )
    print(
        f"  SGAM {t} threads / SqliteStore {t} threads: "
        f"{rate[f'SGAM {t} threads'] / rate[f'SqliteStore {t} threads']:.2f}x"
    )
    print(
        f"  SGAM {k} tasks / SGAM 1 thread:         "
        f"{rate[f'SGAM {k} tasks'] / rate['SGAM 1 thread (task puts)']:.2f}x"
    )
    print(
        f"  SGAM {k} tasks / AsyncSqliteStore {k} tasks: "
        f"{rate[f'SGAM {k} tasks'] / rate[f'AsyncSqliteStore {k} tasks']:.2f}x"
    )
    print()
    for key, val in environment().items():
        print(f"{key}: {val}")


if __name__ == "__main__":
    main()

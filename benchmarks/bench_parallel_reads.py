"""Search throughput of one SGAMStore shared by several threads, against one thread.

Issue 17 ("Reads in parallel"): a SQLite store lends each reading thread a connection of
its own (WAL readers), so threads no longer queue behind one connection. This measures
what that buys on this machine, with bench_store.py's workload and embedder:

    .venv/bin/python benchmarks/bench_parallel_reads.py                    # 20k and 100k
    .venv/bin/python benchmarks/bench_parallel_reads.py --size 20000 --mode hybrid

For each size it loads a fresh file; then for each ranking (`--mode`: the default hybrid,
vector only, keyword only) and each search (one tenant, all tenants) it alternates rounds
of 1 thread and of `--threads` threads (1, N, 1, N, ...), each searching for `--seconds`,
and reports the median searches/s of each and their ratio, with the process's CPU time
per wall second during the 1-thread rounds: a hybrid search already runs its vector scan
beside its keyword ranking (read/candidates.py), so one thread keeps more than one core busy.
Every answer is compared with the 1-thread answer to the same query; a mismatch is
counted (and makes the exit status 1). Bounded: load + modes x 2 x rounds x 2 x seconds.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import QUICK, TOP_K, CachedHashEmbeddings, Workload, index_config, plan

from sgam_store import SGAMStore

MODES = ("hybrid", "vector", "keyword")
Search = Callable[[int], list[Any]]


@dataclass
class Round:
    rate: float  # searches per second, all threads together
    cpu: float  # process CPU seconds per wall second
    mismatches: int


def load(path: Path, workload: Workload, embedder: CachedHashEmbeddings) -> float:
    """Fill a fresh store file with the workload's load batches; seconds taken."""
    store = SGAMStore(str(path), index=index_config(embedder))
    store.setup()
    start = time.perf_counter()
    for batch in workload.load_batches:
        store.batch(batch)
    store.close()
    return time.perf_counter() - start


def searches(store: SGAMStore, workload: Workload) -> dict[str, tuple[Search, int]]:
    """Each search as (search with the i-th query, number of queries)."""
    tenant, everywhere = workload.tenant_queries, workload.global_queries
    return {
        "tenant search": (
            lambda i: store.search((tenant[i][0],), query=tenant[i][1], limit=TOP_K),
            len(tenant),
        ),
        "all-tenant search": (
            lambda i: store.search((), query=everywhere[i], limit=TOP_K),
            len(everywhere),
        ),
    }


def keys(items: list[Any]) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(item.namespace), item.key) for item in items]


def run_round(search: Search, count: int, threads: int, seconds: float, expected: list) -> Round:
    """`threads` threads searching for `seconds`, each starting at another query."""
    done, wrong = [0] * threads, [0] * threads
    start = threading.Barrier(threads + 1)
    stop_at: list[float] = []

    def worker(n: int) -> None:
        start.wait()
        i = n * 7
        while time.perf_counter() < stop_at[0]:
            q = i % count
            if keys(search(q)) != expected[q]:
                wrong[n] += 1
            done[n] += 1
            i += 1

    pool = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    began, cpu = time.perf_counter(), time.process_time()
    stop_at.append(began + seconds)
    start.wait()
    for t in pool:
        t.join()
    wall = time.perf_counter() - began
    return Round(sum(done) / wall, (time.process_time() - cpu) / wall, sum(wrong))


def compare(search: Search, count: int, args: argparse.Namespace) -> dict[str, Any]:
    """Alternating rounds of 1 and `args.threads` threads; medians and their ratio."""
    expected = [keys(search(i)) for i in range(count)]  # warms the mirror too
    rounds: dict[int, list[Round]] = {1: [], args.threads: []}
    for _ in range(args.rounds):
        for threads in rounds:
            rounds[threads].append(run_round(search, count, threads, args.seconds, expected))
    one = statistics.median(r.rate for r in rounds[1])
    many = statistics.median(r.rate for r in rounds[args.threads])
    return {
        "rates": {str(n): [r.rate for r in rs] for n, rs in rounds.items()},
        "median_1": one,
        "median_n": many,
        "ratio": many / one,
        "cpu_per_wall_1": statistics.median(r.cpu for r in rounds[1]),
        "mismatches": sum(r.mismatches for rs in rounds.values() for r in rs),
    }


def run_size(size: int, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    workload = plan(size, QUICK, args.seed)
    embedder = CachedHashEmbeddings()
    embedder.warm(workload.texts())
    out: dict[str, Any] = {"size": size, "threads": args.threads, "rows": {}}
    with tempfile.TemporaryDirectory(prefix="sgam-par-", dir=args.tmpdir) as tmp:
        path = Path(tmp) / "sgam.db"
        out["load_s"] = load(path, workload, embedder)
        log(f"{size:,} facts loaded in {out['load_s']:.1f}s")
        for mode in args.mode or MODES:
            store = SGAMStore(str(path), index=index_config(embedder), retrieval={"mode": mode})
            store.setup()
            try:
                for label, (search, count) in searches(store, workload).items():
                    row = out["rows"][f"{label}, {mode}"] = compare(search, count, args)
                    log(
                        f"  {label}, {mode}: 1 thread {row['median_1']:.0f}/s "
                        f"(CPU/wall {row['cpu_per_wall_1']:.2f}), {args.threads} threads "
                        f"{row['median_n']:.0f}/s, ratio {row['ratio']:.2f} "
                        f"(mismatches {row['mismatches']})"
                    )
            finally:
                store.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, action="append", help="facts (default 20k, 100k)")
    parser.add_argument("--mode", choices=MODES, action="append", help="ranking (default all)")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=2.0, help="per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each thread count")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tmpdir", default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    print(f"sgam_store from {Path(inspect.getfile(SGAMStore)).parent}", flush=True)
    sizes = args.size or [20_000, 100_000]
    results = [run_size(n, args, lambda line: print(line, flush=True)) for n in sizes]
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 1 if any(r["mismatches"] for res in results for r in res["rows"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())

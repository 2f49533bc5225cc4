"""Several LangGraph server replicas on one PostgreSQL database: throughput and latency
by replica count, measured side by side in one run (issue 28, part 2).

    python benchmarks/bench_replicas.py                          # 1, 2, 3 replicas
    python benchmarks/bench_replicas.py --counts 1,3 --clients 24 --duration 20

For each replica count, in turn (`--rounds` repeats the sequence, reversed every other
round, so a drift of the machine's load does not favour one count):

1. a fresh database on one PostgreSQL server (embedded PostgreSQL 18, or `--pg-uri`),
   seeded with the same `--facts` facts (same seed) through SGAMStore;
2. that many `langgraph dev` replicas on loopback, all with SGAM_PG_URI set to it
   (tests/replicas.py), started at once;
3. `--clients` concurrent `langgraph_sdk` clients, spread round-robin over the replicas,
   each doing one request after another: a put (share `--put-share`) of a random key
   in a keyspace every replica writes, else a keyword search of a random tenant; for
   `--warmup` seconds (not counted), then `--duration` seconds.

Reported per count: completed requests/s, p50/p99 latency of puts, of searches and of
both, errors (exceptions and non-2xx answers), the CPU the clients used (cores), and
the machine's load average. The clients run in this process, on the same machine as the
servers and PostgreSQL, so on a small machine the figures say how one machine's cores
are shared, not how far replicas on separate hosts would scale.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from langgraph_sdk import get_client
from load_langgraph_dev import seed, sentence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests import pg  # noqa: E402  (the repository root first)
from tests.replicas import Replica, replicas  # noqa: E402

KEYS_PER_TENANT = 200  # the put keyspace: overlapping across clients and replicas


@dataclass
class Sample:
    """One count's latencies (seconds) by operation, and its errors."""

    replicas: int
    seconds: float
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"put": [], "search": []})
    errors: list[str] = field(default_factory=list)
    client_cores: float = 0.0  # CPU this process (the clients) used, per wall second
    load_average: float = 0.0  # the machine's 1-minute load average at the end

    def all(self) -> list[float]:
        return self.latencies["put"] + self.latencies["search"]


async def load(servers: list[Replica], args: argparse.Namespace) -> Sample:
    sample = Sample(len(servers), args.duration)
    start = time.perf_counter()
    measure_from, stop_at = start + args.warmup, start + args.warmup + args.duration

    async def client(n: int) -> None:
        rng = random.Random(n)
        async with get_client(url=servers[n % len(servers)].url, timeout=30) as c:
            while (begun := time.perf_counter()) < stop_at:
                tenant = f"t{rng.randrange(args.tenants)}"
                if rng.random() < args.put_share:
                    op = "put"
                    call = c.store.put_item(
                        (tenant, f"user{rng.randrange(20)}"),
                        key=f"note-{rng.randrange(KEYS_PER_TENANT)}",
                        value={
                            "text": f"The {sentence(rng, 2, 4)} note says {sentence(rng, 4, 9)}."
                        },
                    )
                else:
                    op = "search"
                    call = c.store.search_items([tenant], query=sentence(rng, 2, 4), limit=10)
                try:
                    await call
                except Exception as error:  # counted and reported, never hidden
                    sample.errors.append(repr(error))
                    continue
                done = time.perf_counter()
                if begun >= measure_from and done <= stop_at:
                    sample.latencies[op].append(done - begun)

    cpu = time.process_time()
    await asyncio.gather(*(client(n) for n in range(args.clients)))
    sample.client_cores = (time.process_time() - cpu) / (time.perf_counter() - start)
    sample.load_average = os.getloadavg()[0]
    return sample


def measure(count: int, args: argparse.Namespace) -> Sample:
    uri = pg.fresh_database()
    # The same facts for every count: the searches rank them, the puts supersede them.
    seed(uri, args.embedding, args.facts, args.tenants, users=20, keys=KEYS_PER_TENANT, rng_seed=28)
    with (
        tempfile.TemporaryDirectory(prefix="sgam-replicas-") as tmp,
        replicas(count, uri, Path(tmp), embedding=args.embedding) as servers,
    ):
        print(f"{count} replica(s): {args.clients} clients, {args.warmup:g} s warmup + "
              f"{args.duration:g} s ...", flush=True)  # fmt: skip
        sample = asyncio.run(load(servers, args))
        if sample.errors:  # the servers' side of it, before their logs are deleted
            for server in servers:
                print(f"  replica {server.index} log:\n{server.log_tail(args.log_chars)}")
        return sample


def ms(values: list[float], q: int) -> str:
    if len(values) < 2:
        return "-"
    return f"{statistics.quantiles(values, n=100)[q - 1] * 1000:.0f}"


def table(samples: list[Sample]) -> str:
    head = (
        "| replicas | requests/s | put p50 / p99 (ms) | search p50 / p99 (ms) "
        "| all p50 / p99 (ms) | errors | client CPU (cores) | load average |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    rows = []
    for s in samples:
        put, search, every = s.latencies["put"], s.latencies["search"], s.all()
        rows.append(
            f"| {s.replicas} | {len(every) / s.seconds:,.0f} | {ms(put, 50)} / {ms(put, 99)} "
            f"| {ms(search, 50)} / {ms(search, 99)} | {ms(every, 50)} / {ms(every, 99)} "
            f"| {len(s.errors)} | {s.client_cores:.2f} | {s.load_average:.1f} |"
        )
    return "\n".join([head, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="1,2,3", help="replica counts, in order")
    parser.add_argument("--rounds", type=int, default=1, help="repeat the counts (reversed)")
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds not measured")
    parser.add_argument("--put-share", type=float, default=0.5, help="share of puts")
    parser.add_argument("--facts", type=int, default=2_000)
    parser.add_argument("--tenants", type=int, default=8)
    parser.add_argument("--embedding", choices=["local", "none"], default="none")
    parser.add_argument("--log-chars", type=int, default=3000, help="log tail shown on errors")
    parser.add_argument("--pg-uri", help="an existing PostgreSQL server (default: embedded)")
    args = parser.parse_args()
    if args.pg_uri:
        os.environ["SGAM_TEST_PG_URI"] = args.pg_uri
    counts = [int(c) for c in args.counts.split(",")]
    samples = []
    try:
        for r in range(args.rounds):
            for count in counts if r % 2 == 0 else counts[::-1]:
                samples.append(measure(count, args))
                for error in samples[-1].errors[:3]:
                    print(f"  error: {error}")
    finally:
        pg.stop()
    samples.sort(key=lambda s: s.replicas)  # stable: rounds stay in run order per count
    print(f"\nembedding {args.embedding}, {args.facts} facts, put share {args.put_share:g}")
    print(table(samples))


if __name__ == "__main__":
    main()

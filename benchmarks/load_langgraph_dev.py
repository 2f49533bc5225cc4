"""Search load through a real `langgraph dev` server on loopback: throughput, latency, errors.

Issue 19 measured SGAMStore behind LangGraph's Store API with 64 concurrent clients: with
the local MiniLM embedding a search took one `encode` call per request and queued behind
it, and every call drew a tqdm bar into the server log. This is that load, bounded in
time and requests, loopback only:

    .venv/bin/python benchmarks/load_langgraph_dev.py                      # 64 clients, 30 s
    .venv/bin/python benchmarks/load_langgraph_dev.py --clients 16 --duration 10 --embedding none

1. Seeds a fresh SQLite file (`--facts` facts over `--tenants` tenants) with the server's
   own index config (`default_index()`, as graphs/store.py builds it for SGAM_EMBEDDING=local).
2. Starts `langgraph dev` on a free 127.0.0.1 port from a temporary directory, with the
   repository's langgraph.json anchored at the repository (as tests/test_langgraph_server.py
   does), and waits for /ok.
3. Runs `--clients` concurrent clients, each posting `/store/items/search` with a tenant
   prefix and a query of 3-6 random words, one request after another, for `--warmup`
   seconds (not counted) and then `--duration` seconds, or until `--max-requests`.
   Queries are almost never repeated, so an embedding cache does not flatter the result
   (`--queries N` draws them from N fixed ones instead, to see the cache at work).
4. Reports requests/s, p50/p99 latency, errors (transport errors, non-200 answers, and
   items from another tenant), and the progress bars ("Batches") in the server log.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
from langgraph.store.base import PutOp

from sgam_store import SGAMStore, default_index

ROOT = Path(__file__).resolve().parent.parent
LANGGRAPH = Path(sys.executable).parent / "langgraph"
VOCABULARY = (  # seeded facts and queries draw from it, so searches match something
    "passport deadline visa renewal flight hotel booking invoice payment refund contract "
    "meeting agenda project budget report review doctor appointment dentist insurance "
    "policy claim address phone email birthday anniversary gift dinner restaurant lunch "
    "coffee tea allergy peanut gluten vegetarian vegan diet gym running yoga swimming "
    "piano guitar lesson school exam grade teacher homework train ticket bus car rental "
    "parking garage repair plumber electrician landlord lease rent deposit salary bonus "
    "tax return pension savings loan mortgage bank card password account subscription "
    "newsletter podcast book novel movie series concert theatre museum holiday beach "
    "mountain hiking camping tent weather umbrella jacket shoes size color blue green"
)
WORDS = VOCABULARY.split()


@dataclass
class Result:
    embedding: str
    clients: int
    duration_s: float
    requests: int
    throughput_rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    progress_bars: int
    log_lines: int


def sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def seed(
    target: str,
    embedding: str,
    facts: int,
    tenants: int,
    *,
    users: int = 50,
    keys: int | None = None,
    rng_seed: int = 19,
) -> None:
    """Write the facts the searches rank, with the server's own index config: `users`
    subjects per tenant; `keys` caps the key space (None: a key per fact), so that later
    puts to those keys supersede."""
    rng = random.Random(rng_seed)
    index = default_index() if embedding == "local" else None
    with SGAMStore.from_conn_string(target, index=index) as store:
        store.setup()
        ops = [
            PutOp(
                (f"t{i % tenants}", f"user{i % users}"),
                f"note-{i if keys is None else i % keys}",
                {"text": f"The {sentence(rng, 2, 4)} note mentions {sentence(rng, 4, 9)}."},
            )
            for i in range(facts)
        ]
        for start in range(0, len(ops), 200):
            store.batch(ops[start : start + 200])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def langgraph_dev(workdir: Path, db: Path, embedding: str) -> Iterator[tuple[str, Path]]:
    """`langgraph dev` on a free loopback port; its whole process group is stopped after."""
    if not LANGGRAPH.exists():
        sys.exit("langgraph-cli[inmem] is not installed (pip install -e '.[dev]')")
    config = json.loads((ROOT / "langgraph.json").read_text())
    anchored = {
        **config,
        "dependencies": [str(ROOT / d) for d in config["dependencies"]],
        "graphs": {k: str(ROOT / v) for k, v in config["graphs"].items()},
        "store": {**config["store"], "path": str(ROOT / config["store"]["path"])},
    }
    (workdir / "langgraph.json").write_text(json.dumps(anchored))
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "SGAM_DB_PATH": str(db),
        "SGAM_EMBEDDING": embedding,
    }
    port = free_port()
    log_path = workdir / "server.log"
    command = [str(LANGGRAPH), "dev", "--no-browser", "--port", str(port)]
    command += ["--host", "127.0.0.1", "--no-reload", "--config", "langgraph.json"]
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            command, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                if proc.poll() is not None:
                    sys.exit(f"langgraph dev exited:\n{log_path.read_text()[-4000:]}")
                try:
                    if httpx.get(f"{url}/ok", timeout=1, trust_env=False).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    sys.exit(f"no /ok in 120 s:\n{log_path.read_text()[-4000:]}")
                time.sleep(0.25)
            yield url, log_path
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=15)


class Connection:
    """One keep-alive HTTP/1.1 connection on asyncio streams.

    Not httpx: its async client spent ~7 ms of CPU per request at 64 connections here
    (the client process at 100% of a core, the server at 33%), so it measured itself.
    This one costs a fraction of that, leaving both cores to the server.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, host: str, port: int) -> Connection:
        return cls(*await asyncio.open_connection(host, port))

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        data = json.dumps(body).encode()
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        self.writer.write(f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
        status_line, *header_lines = (await self.reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        headers = dict(
            line.decode().lower().split(": ", 1) for line in header_lines if b": " in line
        )
        if "content-length" in headers:
            payload = await self.reader.readexactly(int(headers["content-length"]))
        else:  # chunked
            parts = []
            while size := int((await self.reader.readuntil(b"\r\n")).strip(), 16):
                parts.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            await self.reader.readexactly(2)
            payload = b"".join(parts)
        return int(status_line.split()[1]), json.loads(payload)

    def close(self) -> None:
        self.writer.close()


async def load(url: str, args: argparse.Namespace) -> tuple[list[float], int]:
    """Latencies (s) of the requests started after the warmup and done by its end, and
    the errors among all requests."""
    latencies: list[float] = []
    errors = 0
    sent = 0
    host, port = url.removeprefix("http://").split(":")
    pool = random.Random(0)
    fixed = [sentence(pool, 3, 6) for _ in range(args.queries)]
    start = time.perf_counter()
    measure_from, stop_at = start + args.warmup, start + args.warmup + args.duration

    async def client(n: int) -> None:
        nonlocal errors, sent
        rng = random.Random(n)
        connection = await Connection.open(host, int(port))
        try:
            while (begun := time.perf_counter()) < stop_at and sent < args.max_requests:
                sent += 1
                tenant = f"t{rng.randrange(args.tenants)}"
                query = rng.choice(fixed) if fixed else sentence(rng, 3, 6)
                body = {"namespace_prefix": [tenant], "query": query, "limit": 10}
                try:
                    status, answer = await connection.post("/store/items/search", body)
                    ok = status == 200 and all(
                        item["namespace"][0] == tenant for item in answer["items"]
                    )
                except (OSError, asyncio.IncompleteReadError, ValueError):
                    ok = False
                    connection.close()
                    connection = await Connection.open(host, int(port))
                done = time.perf_counter()
                if not ok:
                    errors += 1
                elif begun >= measure_from and done <= stop_at:
                    latencies.append(done - begun)
        finally:
            connection.close()

    await asyncio.gather(*(client(n) for n in range(args.clients)))
    return latencies, errors


def run(args: argparse.Namespace) -> Result:
    with tempfile.TemporaryDirectory(prefix="sgam-load-") as tmp:
        workdir = Path(tmp)
        db = workdir / "load.db"
        print(f"seeding {args.facts} facts over {args.tenants} tenants ...", flush=True)
        seed(str(db), args.embedding, args.facts, args.tenants)
        with langgraph_dev(workdir, db, args.embedding) as (url, log_path):
            before = len(log_path.read_text().splitlines())
            print(f"{args.clients} clients, {args.warmup:g} s warmup + {args.duration:g} s ...")
            latencies, errors = asyncio.run(load(url, args))
            lines = log_path.read_text().splitlines()[before:]
        cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
        return Result(
            embedding=args.embedding,
            clients=args.clients,
            duration_s=args.duration,
            requests=len(latencies),
            throughput_rps=len(latencies) / args.duration,
            p50_ms=cuts[49] * 1000,
            p99_ms=cuts[98] * 1000,
            errors=errors,
            progress_bars=sum("Batches" in line for line in lines),
            log_lines=len(lines),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--duration", type=float, default=30.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds not measured")
    parser.add_argument("--max-requests", type=int, default=200_000, help="cap on requests")
    parser.add_argument("--facts", type=int, default=2_000)
    parser.add_argument("--tenants", type=int, default=8)
    parser.add_argument("--embedding", choices=["local", "none"], default="local")
    parser.add_argument(
        "--queries", type=int, default=0,
        help="draw queries from this many fixed ones (repeats; 0: a new one per request)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="append the result as a JSON line here")
    args = parser.parse_args()
    result = run(args)
    print(
        f"{result.embedding}: {result.throughput_rps:,.0f} req/s, p50 {result.p50_ms:.0f} ms, "
        f"p99 {result.p99_ms:.0f} ms, {result.errors} errors, {result.requests} requests; "
        f"server log: {result.progress_bars} progress bars in {result.log_lines} lines"
    )
    if args.json:
        with args.json.open("a") as out:
            out.write(json.dumps(asdict(result)) + "\n")


if __name__ == "__main__":
    main()

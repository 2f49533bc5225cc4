"""A writer process for the concurrency and crash tests (run as `python -m tests.store_worker`).

It opens its own SGAMStore(s) on a shared SQLite file and writes the shared keys of
`tests.reliability.KEYS` from one or more threads, each thread through its own connection
(or all through one store with `--shared`). Every write is reported on stdout as JSON
lines, flushed one by one: an *intent* before it starts, an *ack* once it returned
(i.e. committed), or an *error*. A parent that kills this process with SIGKILL can still
read every ack it printed. Values are unique ("<name> t<thread> n<seq> ..."), so a value
identifies its write.

Writes: `put`, a `batch` of two puts and a get (atomic), `replace_fact` at a unique
past `valid_from` (no ConflictError by construction), and `delete`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import GetOp, PutOp

from sgam_store import MemoryFact, SGAMStore

from .reliability import KEYS, index_config, split

_out = threading.Lock()
PAST = datetime(2020, 1, 1, tzinfo=UTC)


def emit(msg: dict[str, Any]) -> None:
    line = json.dumps(msg) + "\n"
    with _out:
        sys.stdout.write(line)
        sys.stdout.flush()


def value(name: str, seq: int) -> dict[str, Any]:
    return {"text": f"{name} n{seq} passport deadline", "writer": name}


def write_loop(
    store: SGAMStore,
    name: str,
    number: int,
    writes: int,
    seed: int,
    emit: Callable[[dict[str, Any]], None] = emit,
) -> None:
    """`writes` random writes (0: until killed), each reported through `emit`."""
    rng = random.Random(seed)
    seq = 0
    while writes == 0 or seq < writes:
        seq += 1
        wid = f"{name}:{seq}"
        roll = rng.random()
        ns, key = rng.choice(KEYS)
        try:
            if roll < 0.55:
                item = {"ns": ns, "key": key, "value": value(name, seq)}
                emit({"intent": wid, "writer": name, "op": "put", "items": [item]})
                store.put(ns, key, item["value"])
                emit({"ack": wid})
            elif roll < 0.75:
                (ns1, k1), (ns2, k2) = rng.sample(KEYS, 2)
                items = [
                    {"ns": ns1, "key": k1, "value": value(name, seq) | {"part": 1}},
                    {"ns": ns2, "key": k2, "value": value(f"{name}b", seq) | {"part": 2}},
                ]
                emit({"intent": wid, "writer": name, "op": "batch", "items": items})
                ops = [PutOp(tuple(i["ns"]), i["key"], i["value"]) for i in items]
                store.batch([*ops, GetOp(ns1, k1)])
                emit({"ack": wid})
            elif roll < 0.92:
                start = PAST + timedelta(seconds=number * 100_000 + seq)
                item = {"ns": ns, "key": key, "value": value(name, seq)}
                emit({"intent": wid, "writer": name, "op": "replace", "items": [item]})
                tenant, subject = split(ns)
                fact = store.replace_fact(
                    MemoryFact(
                        tenant_id=tenant,
                        subject=subject,
                        attribute=key,
                        value=item["value"],
                        valid_from=start,
                        source_episode_id=f"external:{wid}",
                    )
                )
                stored = {"fact_id": fact.fact_id, "valid_from": fact.valid_from.isoformat()}
                emit({"ack": wid, "fact": stored})
            else:
                emit({"intent": wid, "writer": name, "op": "delete", "items": [{"ns": ns}]})
                store.delete(ns, key)
                emit({"ack": wid})
        except Exception as exc:  # reported, never swallowed: the parent asserts on errors
            emit({"error": wid, "type": type(exc).__name__, "msg": str(exc)})


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("db")
    p.add_argument("name")
    p.add_argument("--number", type=int, default=0, help="unique per worker (< 1000)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--writes", type=int, default=0, help="per thread; 0 = until killed")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shared", action="store_true", help="all threads share one store")
    p.add_argument("--wait-go", action="store_true", help="print ready, wait for a stdin line")
    args = p.parse_args(argv)

    def make() -> SGAMStore:
        store = SGAMStore(args.db, index=index_config())
        store.setup()
        return store

    shared = make() if args.shared else None
    stores = [shared or make() for _ in range(args.threads)]
    if args.wait_go:
        emit({"ready": args.name})
        sys.stdin.readline()
    threads = [
        threading.Thread(
            target=write_loop,
            args=(stores[t], f"{args.name}t{t}", args.number * 10 + t, args.writes, args.seed + t),
        )
        for t in range(args.threads)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    emit({"done": args.name})


if __name__ == "__main__":
    main()

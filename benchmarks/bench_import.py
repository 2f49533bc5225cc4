"""Moving in from LangGraph's SqliteStore: `SGAMStore.import_items` against SqliteStore's own
batched put of the same items, and the floor under any import: the `facts` rows alone.

Three timings per round, alternated over rounds and reported as medians:
- SqliteStore: `batch()` of 100 puts at a time into a fresh file (what the items cost there);
- SGAM import: `import_items(<that file>)` into a fresh SGAM file (keyword index, no vectors);
- facts floor: the same number of `facts` rows written by one `executemany` in one
  transaction into a fresh SGAM file, with no rule, no keyword rows and no Python per item.
  An import can be no faster than this, however its indexing is deferred.

    python benchmarks/bench_import.py                 # 20,000 items, 3 rounds
    python benchmarks/bench_import.py --size 100000
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from langgraph.store.base import PutOp
from langgraph.store.sqlite import SqliteStore

from sgam_store import SGAMStore, connect

STAMP = "2026-01-01T00:00:00.000000Z"


def items(size: int, seed: int) -> list[PutOp]:
    """LangMem-shaped items: ("memories", user), a uuid key each, {"content": ...}."""
    rng = random.Random(seed)
    return [
        PutOp(
            ("memories", f"user-{n % 200:03d}"),
            str(uuid.UUID(int=rng.getrandbits(128))),
            {"content": f"memory {n}: prefers tea in the morning, trips in May"},
        )
        for n in range(size)
    ]


def sqlite_store_load(path: Path, ops: list[PutOp]) -> float:
    conn = connect(str(path))  # the same pragmas as SGAM's files
    store = SqliteStore(conn)
    store.setup()
    start = time.perf_counter()
    for i in range(0, len(ops), 100):
        store.batch(ops[i : i + 100])
    seconds = time.perf_counter() - start
    conn.close()
    return seconds


def sgam_import(source: Path, target: Path) -> float:
    with SGAMStore.from_conn_string(str(target), tenant_at=1) as store:
        store.setup()
        start = time.perf_counter()
        report = store.import_items(str(source))
        seconds = time.perf_counter() - start
    assert report.written == report.read, report
    return seconds


def facts_floor(target: Path, ops: list[PutOp]) -> float:
    """`facts` rows for the items in one executemany: the physical cost of the ledger."""
    with SGAMStore.from_conn_string(str(target)) as store:
        store.setup()
        conn = store.engine.conn
        columns = [row[1] for row in conn.execute("PRAGMA table_info(facts)")]
        fixed = {"scalar": 0, "memory_type": "semantic", "schema_version": 1,
                 "valid_from": STAMP, "recorded_at": STAMP, "known_from": STAMP,
                 "created_at": STAMP, "source_episode_id": "import:bench"}  # fmt: skip
        rows = [
            [{"row_id": n, "fact_id": n, "tenant_id": op.namespace[1],
              "namespace": ".".join(op.namespace), "subject": op.namespace[0],
              "attribute": op.key, "value": json.dumps(op.value), **fixed}.get(c)
             for c in columns]
            for n, op in enumerate(ops, 1)
        ]  # fmt: skip
        marks = ", ".join("?" * len(columns))
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(f"INSERT INTO facts ({', '.join(columns)}) VALUES ({marks})", rows)
        conn.execute("COMMIT")
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ops = items(args.size, seed=7)
    times: dict[str, list[float]] = {"SqliteStore put": [], "SGAM import": [], "facts floor": []}
    for n in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "langgraph.db"
            times["SqliteStore put"].append(sqlite_store_load(source, ops))
            times["SGAM import"].append(sgam_import(source, Path(tmp) / "sgam.db"))
            times["facts floor"].append(facts_floor(Path(tmp) / "floor.db", ops))
        print(
            f"round {n + 1}: "
            + ", ".join(f"{k} {args.size / v[-1]:,.0f}/s" for k, v in times.items())
        )
    base = statistics.median(times["SqliteStore put"])
    print(
        f"\n{args.size:,} items, medians of {args.rounds} rounds "
        "(items/s; ratio = SqliteStore time / time)"
    )
    for name, seconds in times.items():
        median = statistics.median(seconds)
        print(f"  {name:16} {args.size / median:>10,.0f}/s  {base / median:5.2f}x")


if __name__ == "__main__":
    main()

"""Per-put accounting: what one put costs, statement by statement and page by page.

For a put of a new key and a put that overwrites one, alone and in batches of 100,
on a store already holding `--size` facts (bench_store's workload), it prints:

- microseconds per put in each SQL statement (profile_sgam's timed connection);
- pages written per commit, from the growth of the write-ahead log with checkpoints
  off (every frame is one page written);
- the same page counts for LangGraph's SqliteStore doing the same puts,
- and the physical reference: raw rows/s into a two-column table on this machine.

    python benchmarks/put_accounting.py                 # 100k facts
    python benchmarks/put_accounting.py --size 20000 --samples 100
    python benchmarks/put_accounting.py --layout langmem --size 20000

`--layout langmem` writes bench_langmem's memories instead (200 users, a uuid key each,
`tenant_at=1`, "content" embedded): its load minus the last batches, then those batches
of 100 new memories and single new memories, as measured.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bench_langmem
from harness import (
    BATCH,
    FULL,
    CachedHashEmbeddings,
    Key,
    Workload,
    environment,
    fact_value,
    index_config,
    plan,
)
from langgraph.store.base import PutOp
from langgraph.store.sqlite import SqliteStore
from profile_sgam import SqlTimer, TimedConnection

from sgam_store import SGAMStore, connect

WAL_HEADER = 32  # bytes before the first frame
WAL_FRAME_HEADER = 24  # bytes before each page in a WAL frame


class WalPages:
    """Pages a database's commits write, read from the write-ahead log with checkpoints
    off: every frame appended is one page written, and its header names the page."""

    def __init__(self, conn: Any, path: Path) -> None:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn = conn
        self.wal = Path(f"{path}-wal")
        self.frame = conn.execute("PRAGMA page_size").fetchone()[0] + WAL_FRAME_HEADER

    def size(self) -> int:
        return self.wal.stat().st_size if self.wal.exists() else 0

    def pages(self, step: Callable[[], Any]) -> list[int]:
        """The page numbers `step`'s commits wrote (a page written twice counts twice)."""
        before = max(self.size(), WAL_HEADER)
        step()
        with self.wal.open("rb") as wal:
            wal.seek(before)
            frames = wal.read()
        return [
            int.from_bytes(frames[at : at + 4], "big")
            for at in range(0, len(frames) - self.frame + 1, self.frame)
        ]

    def owners(self, pages: list[int]) -> Counter[str]:
        """Pages per table or index that owns them now (SQLite's dbstat)."""
        owner = dict(self.conn.execute("SELECT pageno, name FROM dbstat").fetchall())
        return Counter(owner.get(page, "(free or header)") for page in pages)


def phases(workload: Workload, samples: int) -> dict[str, list[list[PutOp]]]:
    """The four kinds of write, each a list of commits (a commit: its puts)."""
    counter = 10**7  # versions beyond any the workload used, so every text is new

    def put(key: Key, fresh_key: bool) -> PutOp:
        nonlocal counter
        counter += 1
        (tenant, subject), attribute = key
        attribute = f"new{counter}" if fresh_key else attribute
        return PutOp(key[0], attribute, fact_value(tenant, subject, attribute, counter))

    keys = workload.keys
    step = max(1, len(keys) // (samples * BATCH))

    def picks(offset: int, n: int) -> list[Key]:
        return [keys[(offset + i * step * 7919) % len(keys)] for i in range(n)]

    batches = max(1, samples // 10)
    return {
        "new key, alone": [[put(k, True)] for k in picks(1, samples)],
        "update, alone": [[put(k, False)] for k in picks(2, samples)],
        "new keys, batch of 100": [
            [put(k, True) for k in picks(3 + b, BATCH)] for b in range(batches)
        ],
        "updates, batch of 100": [
            [put(k, False) for k in picks(5 + b * 13, BATCH)] for b in range(batches)
        ],
    }


@dataclass
class Phase:
    """One kind of write on one store: median us per put, pages written by table."""

    us_per_put: float
    pages: Counter[str]
    puts: int
    statements: dict[str, float] = field(default_factory=dict)  # us per put

    def per_put(self, count: float) -> float:
        return count / self.puts


def _run(wal: WalPages, store: Any, commits: list[list[PutOp]]) -> tuple[float, Counter[str]]:
    """Each commit's ops in one `batch`: the median us per put, and the pages written."""
    times, written = [], []
    for ops in commits:
        start = time.perf_counter()
        written += wal.pages(lambda ops=ops: store.batch(ops))
        times.append((time.perf_counter() - start) / len(ops))
    return statistics.median(times) * 1e6, wal.owners(written)


def load(store: Any, batches: list[list[PutOp]]) -> None:
    for batch in batches:
        store.batch(batch)


@dataclass
class Layout:
    """What a run writes and how both stores are opened: bench_store's or LangMem's."""

    load_batches: list[list[PutOp]]
    writes: dict[str, list[list[PutOp]]]
    index: dict[str, Any]
    sgam_options: dict[str, Any]
    warm_prefix: tuple[str, ...]  # a search that loads the vector mirror before timing
    texts: list[str]  # every text the run embeds


def store_layout(size: int, samples: int, seed: int, embedder: Any) -> Layout:
    workload = plan(size, FULL, seed)
    writes = phases(workload, samples)
    texts = [op.value["text"] for ops in writes.values() for c in ops for op in c]  # type: ignore[index]
    return Layout(
        workload.load_batches,
        writes,
        index_config(embedder),
        {},
        ("tenant00",),
        workload.texts() + texts,
    )


def langmem_layout(size: int, samples: int, seed: int, embedder: Any) -> Layout:
    """bench_langmem's plan: the last batches of its load, and its single puts, are
    what is measured; the rest is loaded first."""
    workload = bench_langmem.plan(size, bench_langmem.QUICK, seed)
    batches = max(1, samples // 10)
    return Layout(
        workload.load_batches[:-batches],
        {
            "new memory, alone": [[op] for op in workload.single_puts[:samples]],
            "new memories, batch of 100": workload.load_batches[-batches:],
        },
        bench_langmem.langmem_index(embedder),
        {"tenant_at": 1},
        (bench_langmem.ROOT_LABEL,),
        workload.texts(),
    )


def sgam_accounting(directory: Path, layout: Layout) -> dict[str, Phase]:
    """Per phase: us per put, pages by table, and us per put in each statement."""
    path = directory / "sgam.db"
    loader = SGAMStore(str(path), index=layout.index, **layout.sgam_options)
    load(loader, layout.load_batches)
    loader.close()
    conn, timer = connect(str(path)), SqlTimer()
    wal = WalPages(conn, path)
    store = SGAMStore(TimedConnection(conn, timer), index=layout.index, **layout.sgam_options)
    store.setup()
    store.search(layout.warm_prefix, query="warm the vector mirror", limit=1)
    out = {}
    for phase, commits in layout.writes.items():
        timer.reset()
        us, pages = _run(wal, store, commits)
        puts = sum(len(ops) for ops in commits)
        per_put = {sql: s / puts * 1e6 for sql, s in timer.seconds.items()}
        out[phase] = Phase(us, pages, puts, per_put)
    conn.close()
    return out


def sqlite_store_pages(directory: Path, layout: Layout) -> dict[str, Phase]:
    """Per phase: us per put and pages by table, for LangGraph's SqliteStore."""
    path = directory / "sqlite_store.db"
    conn = connect(str(path))  # SGAM's pragmas, as in bench_store
    store = SqliteStore(conn, index=layout.index)  # type: ignore[arg-type]
    store.setup()
    load(store, layout.load_batches)
    wal = WalPages(conn, path)
    out = {}
    for phase, commits in layout.writes.items():
        us, pages = _run(wal, store, commits)
        out[phase] = Phase(us, pages, sum(len(ops) for ops in commits))
    conn.close()
    return out


def raw_rows_per_second(directory: Path, rows: int = 200_000) -> float:
    """The physical reference: rows/s of one executemany into a two-column table."""
    conn = connect(str(directory / "raw.db"))
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)")
    data = [(i, f"value {i:08d} noted in a session") for i in range(rows)]
    start = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO t (k, v) VALUES (?, ?)", data)
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return rows / elapsed


def report(sgam: dict[str, Phase], peer: dict[str, Phase], top: int) -> None:
    for name, phase in sgam.items():
        other = peer[name]
        print(f"\n=== {name} ===")
        for label, p in (("SGAMStore", phase), ("SqliteStore", other)):
            total = p.per_put(sum(p.pages.values()))
            tables = ", ".join(f"{t} {p.per_put(n):.2f}" for t, n in p.pages.most_common(top))
            print(f"  {label:11s} {p.us_per_put:8.1f} us/put, {total:5.2f} pages/put: {tables}")
        print("  SGAM's SQL, us per put (timed connection):")
        for sql, cost in sorted(phase.statements.items(), key=lambda kv: -kv[1])[:top]:
            short = sql if len(sql) <= 110 else sql[:107] + "..."
            print(f"  {cost:8.1f}  {short}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="facts loaded first")
    parser.add_argument("--samples", type=int, default=200, help="single puts per phase")
    parser.add_argument("--top", type=int, default=10, help="statements listed per phase")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--layout",
        choices=("store", "langmem"),
        default="store",
        help="bench_store's facts (default) or bench_langmem's memories",
    )
    args = parser.parse_args(argv)
    print(f"sgam_store source sha256 {environment()['sgam_store source sha256']}")
    embedder = CachedHashEmbeddings()
    make = langmem_layout if args.layout == "langmem" else store_layout
    layout = make(args.size, args.samples, args.seed, embedder)
    embedder.warm([*layout.texts, "warm the vector mirror"])
    with tempfile.TemporaryDirectory(prefix="sgam-accounting-") as tmp:
        directory = Path(tmp)
        raw = raw_rows_per_second(directory)
        sgam = sgam_accounting(directory, layout)
        peer = sqlite_store_pages(directory, layout)
    print(f"size {args.size:,}; raw SQLite insert, 2 columns: {raw:,.0f} rows/s")
    report(sgam, peer, args.top)
    print(f"\nembedder cache misses: {embedder.misses}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

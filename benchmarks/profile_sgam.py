"""Profile SGAMStore's batched put and its searches: Python hot spots and SQL hot spots.

cProfile shows where Python time goes, but every SQL statement is one opaque
`execute` to it. So the store also runs on a connection wrapper that times each
statement (execute plus its fetches) by SQL text, which says *which* query to fix.
Uses bench_store's workload and embedder, so the numbers line up with the benchmark.

    python benchmarks/profile_sgam.py                  # 20k facts
    python benchmarks/profile_sgam.py --size 100000 --top 20 --dump /tmp/prof
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from harness import FULL, TOP_K, CachedHashEmbeddings, Workload, environment, index_config, plan

from sgam_store import SGAMStore, connect


class SqlTimer:
    """Wall time and call count per SQL statement (whitespace-normalised text)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()

    def add(self, sql: str, elapsed: float, calls: int = 1) -> None:
        self.seconds[sql] += elapsed
        self.calls[sql] += calls

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()


_KEYS: dict[str, str] = {}
_COLUMNS = re.compile(r"^(SELECT |INSERT INTO \w+ \()(.{60,}?)( FROM |\) VALUES)")


def _key(sql: str) -> str:
    """Whitespace-normalised SQL, memoised: the wrapper must stay cheap next to SQLite."""
    key = _KEYS.get(sql)
    if key is None:
        key = re.sub(r"\s+", " ", sql).strip()
        # Long column lists hide what tells statements apart (FROM/WHERE): count them instead.
        key = _COLUMNS.sub(lambda m: f"{m[1]}<{len(m[2])} chars of columns>{m[3]}", key)
        _KEYS[sql] = key
    return key


class TimedCursor:
    """A cursor whose execute and fetch time is charged to the statement it ran."""

    def __init__(self, cursor: Any, timer: SqlTimer) -> None:
        self._cursor = cursor
        self._timer = timer
        self._sql = ""

    def _timed(self, call: Callable[[], Any], calls: int = 0) -> Any:
        start = time.perf_counter()
        try:
            return call()
        finally:
            self._timer.add(self._sql, time.perf_counter() - start, calls)

    def execute(self, sql: str, params: Any = ()) -> TimedCursor:
        self._sql = _key(sql)
        self._timed(lambda: self._cursor.execute(sql, params), calls=1)
        return self

    def executemany(self, sql: str, rows: Any) -> TimedCursor:
        self._sql = _key(sql)
        self._timed(lambda: self._cursor.executemany(sql, rows), calls=1)
        return self

    def fetchone(self) -> Any:
        return self._timed(self._cursor.fetchone)

    def fetchall(self) -> list[Any]:
        return self._timed(self._cursor.fetchall)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class TimedConnection:
    """Wraps an sgam_store connection; every statement goes through a TimedCursor."""

    def __init__(self, conn: Any, timer: SqlTimer) -> None:
        self._conn = conn
        self._timer = timer

    def cursor(self) -> TimedCursor:
        return TimedCursor(self._conn.cursor(), self._timer)

    def execute(self, sql: str, params: Any = ()) -> TimedCursor:
        return self.cursor().execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> TimedCursor:
        return self.cursor().executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def python_report(profile: cProfile.Profile, wall: float, top: int) -> None:
    """Top functions by cumulative time, as shares of the phase's wall time."""
    stats = pstats.Stats(profile)
    rows = []
    for (filename, line, func), (_, ncalls, _tt, cum, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = filename.split("site-packages/")[-1].split("/work/main/")[-1]
        rows.append((cum, ncalls, f"{where}:{line}({func})" if line else func))
    rows.sort(reverse=True)
    print(f"  Python (cProfile), {wall:.2f}s wall under the profiler:")
    print(f"  {'cum share':>9} {'cum s':>8} {'calls':>8}  function")
    shown = [r for r in rows if not any(s in r[2] for s in ("profile_sgam", "bench_store", "<"))]
    for cum, ncalls, name in shown[:top]:
        print(f"  {cum / wall:>9.1%} {cum:>8.3f} {ncalls:>8}  {name}")


def sql_report(timer: SqlTimer, wall: float, top: int) -> None:
    """Top SQL statements by time (execute + fetch), as shares of the phase's wall time."""
    total = sum(timer.seconds.values())
    print(f"  SQL (timed connection, no profiler), {wall:.2f}s wall, SQL {total / wall:.0%} of it:")
    print(f"  {'share':>9} {'seconds':>8} {'calls':>8}  statement")
    for sql, seconds in sorted(timer.seconds.items(), key=lambda kv: -kv[1])[:top]:
        short = sql if len(sql) <= 220 else sql[:217] + "..."
        print(f"  {seconds / wall:>9.1%} {seconds:>8.3f} {timer.calls[sql]:>8}  {short}")


def phases(workload: Workload, store: SGAMStore) -> list[tuple[str, Callable[[], None]]]:
    """The operations to profile, each a closure over the whole phase's samples."""

    def load() -> None:
        for batch in workload.load_batches:
            store.batch(batch)

    def update() -> None:
        for batch in workload.update_batches:
            store.batch(batch)

    def tenant_search() -> None:
        for tenant, query in workload.tenant_queries:
            store.search((tenant,), query=query, limit=TOP_K)

    def global_search() -> None:
        for query in workload.global_queries:
            store.search((), query=query, limit=TOP_K)

    def filtered_list() -> None:
        for tenant, kind in workload.list_filters:
            store.search((tenant,), filter={"kind": kind}, limit=TOP_K)

    n = len(workload.tenant_queries)
    return [
        (f"load: {len(workload.load_batches)} batches x 100 puts", load),
        (f"update: {len(workload.update_batches)} batches x 100 puts", update),
        (f"tenant vector search x{n}", tenant_search),
        (f"all-tenant vector search x{n}", global_search),
        (f"filtered list x{n}", filtered_list),
    ]


def run_pass(
    workload: Workload, directory: Path, embedder: CachedHashEmbeddings, timer: SqlTimer | None
) -> list[tuple[str, float, cProfile.Profile | None, dict[str, float], Counter[str]]]:
    """Run every phase on a fresh store: under cProfile, or (with `timer`) timing SQL."""
    conn = connect(str(directory / ("sql.db" if timer else "python.db")))
    store = SGAMStore(TimedConnection(conn, timer) if timer else conn, index=index_config(embedder))
    store.setup()
    out = []
    for title, run in phases(workload, store):
        profile = None if timer else cProfile.Profile()
        if timer:
            timer.reset()
        start = time.perf_counter()
        if profile:
            profile.runcall(run)
        else:
            run()
        wall = time.perf_counter() - start
        sql = (dict(timer.seconds), Counter(timer.calls)) if timer else ({}, Counter())
        out.append((title, wall, profile, *sql))
    conn.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000, help="facts to load (multiple of 200)")
    parser.add_argument("--top", type=int, default=12, help="rows per listing")
    parser.add_argument("--dump", type=Path, help="directory for .prof files (snakeviz etc.)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    print(
        f"sgam_store source sha256 {environment()['sgam_store source sha256']}, size {args.size:,}"
    )
    workload = plan(args.size, FULL, args.seed)
    embedder = CachedHashEmbeddings()
    embedder.warm(workload.texts())
    with tempfile.TemporaryDirectory(prefix="sgam-profile-") as tmp:
        python_pass = run_pass(workload, Path(tmp), embedder, None)
        sql_pass = run_pass(workload, Path(tmp), embedder, SqlTimer())
    for (title, wall, profile, _, _), (_, sql_wall, _, seconds, calls) in zip(
        python_pass, sql_pass, strict=True
    ):
        print(f"\n=== {title} ===")
        assert profile is not None
        python_report(profile, wall, args.top)
        timer = SqlTimer()
        timer.seconds.update(seconds)
        timer.calls.update(calls)
        sql_report(timer, sql_wall, args.top)
        if args.dump:
            args.dump.mkdir(parents=True, exist_ok=True)
            slug = re.sub(r"\W+", "_", title.split(":")[0].split(" x")[0]).strip("_")
            profile.dump_stats(args.dump / f"{slug}.prof")
    print(f"\nembedder cache misses: {embedder.misses}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

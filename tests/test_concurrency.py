"""Concurrency: processes and threads writing the same keys of one SQLite file.

What is proven, on a real file with real processes (`tests/store_worker.py`):

- no acknowledged write is lost: after the run every acked `put`, `batch` and
  `replace_fact` value is in its key's history, nothing else is, and each writer's puts
  to a key appear in the order they were acked;
- no invariant breaks (see `tests.reliability.check_file`): per key at most one open
  fact, believed intervals ordered and non-overlapping, the CHECKs, FTS rows and vec0's
  `is_current` flag in step with the ledger; reads taken *during* the run see the same;
- "database is locked" never reaches a caller: writers report any exception and none
  may occur; a lock held past the bounded retries gives `StoreBusyError`; a lock
  released during the retries is waited out;
- 100 concurrent `abatch` calls, while another process writes the same keys, never
  stall the event loop (loop lag measured by a ticker task; the ticker is first shown
  to catch a blocking call).

Two bugs this module found are fixed and kept as regression tests: a hybrid search
read without one snapshot, so a write committed between its vector and keyword
statements made it return the superseded fact as well (the stress readers caught it;
`test_hybrid_search_reads_one_snapshot` pins the moment deterministically); and a
store's lazy `setup()` took the write lock outside any retry, so its "database is
locked" reached the caller.

Budgets (environment variables, for longer local runs):
  SGAM_STRESS_PROCS (4) writer processes, each with SGAM_STRESS_THREADS (2) threads
  with their own connections, plus one process whose threads share one store;
  SGAM_STRESS_WRITES (100) writes per thread; SGAM_ASYNC_CALLS (100) concurrent
  abatch calls; SGAM_MAX_LOOP_LAG (0.25) seconds of tolerated event-loop lag.
  e.g. ``SGAM_STRESS_PROCS=8 SGAM_STRESS_WRITES=500 .venv/bin/python -m pytest
  tests/test_concurrency.py``
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise

import pytest
from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp

from sgam_store import MemoryFact, SGAMStore, StoreBusyError
from sgam_store.engines.sqlite import connection

from .reliability import (
    KEYS,
    ROOT,
    Journal,
    Worker,
    check_acknowledged,
    check_file,
    check_writer_order,
    index_config,
    open_store,
    split,
)
from .store_worker import write_loop

ENGINES = ("sqlite", "postgres")  # tests that take `target` run on every engine

PROCS = int(os.environ.get("SGAM_STRESS_PROCS", "4"))
THREADS = int(os.environ.get("SGAM_STRESS_THREADS", "2"))
WRITES = int(os.environ.get("SGAM_STRESS_WRITES", "100"))
ASYNC_CALLS = int(os.environ.get("SGAM_ASYNC_CALLS", "100"))
MAX_LAG = float(os.environ.get("SGAM_MAX_LOOP_LAG", "0.25"))
SHORT_TIMEOUT_MS = 25  # busy_timeout of the stores that must give up quickly


@dataclass
class ReadLog:
    reads: int = 0
    failures: list[BaseException] = field(default_factory=list)


def check_reads(store: SGAMStore, log: ReadLog) -> None:
    """One round of reads, each of which must be self-consistent mid-run."""
    for ns, key in KEYS:
        hist = store.history(*split(ns), key)
        assert all(f.valid_to is not None for f in hist[:-1]), f"{ns}/{key}: open fact not last"
        for a, b in pairwise(hist):
            assert a.valid_to is not None and a.valid_to <= b.valid_from, f"{ns}/{key}: overlap"
        item = store.get(ns, key)
        assert item is None or item.value["text"], item
        log.reads += 2
    for prefix in (("acme",), ("acme2",), ()):
        for query in (None, "passport deadline"):
            hits = store.search(prefix, query=query, limit=50)
            keys = [(tuple(h.namespace), h.key) for h in hits]
            assert all(k[0][: len(prefix)] == prefix for k in keys), f"outside {prefix}: {keys}"
            # A key twice means two current facts, or a superseded one read from an
            # older state than the rest (a search must read one snapshot).
            assert len(keys) == len(set(keys)), f"{query!r}: a key returned twice: {keys}"
            log.reads += 1
    assert set(store.list_namespaces()) <= {ns for ns, _ in KEYS}
    log.reads += 1


def run_reader(db: str, stop: threading.Event, log: ReadLog) -> None:
    store = SGAMStore(db, index=index_config())
    try:
        while not stop.is_set():
            check_reads(store, log)
            time.sleep(0.02)  # leave the CPU to the writers (2-core CI)
    except BaseException as exc:  # surfaced by the test
        log.failures.append(exc)
    finally:
        store.close()


@pytest.mark.slow
def test_processes_and_threads_lose_no_write(target: str) -> None:
    open_store(target).close()
    journal = Journal()
    args = ("--threads", str(THREADS), "--writes", str(WRITES), "--wait-go")
    workers = [Worker(target, f"p{i}", i, journal, *args) for i in range(PROCS)]
    workers.append(Worker(target, "shared", PROCS, journal, *args, "--shared"))
    for w in workers:  # imports take seconds: start writing together, or there is no race
        assert w.ready.wait(120), w.stderr
    started = time.monotonic()
    for w in workers:
        w.go()
    stop, log = threading.Event(), ReadLog()
    reader = threading.Thread(target=run_reader, args=(target, stop, log))
    reader.start()
    try:
        for w in workers:
            w.finish()
    finally:
        stop.set()
        reader.join()
    elapsed = time.monotonic() - started
    assert not log.failures, log.failures[0]
    assert journal.errors == [], f"writers saw errors: {journal.errors[:3]}"
    expected = (PROCS + 1) * THREADS * WRITES
    assert len(journal.acks) == len(journal.intents) == expected
    stats = check_acknowledged(target, journal)
    sequences = check_writer_order(target, journal)
    assert sequences > 0 and stats.facts == len(journal.values(journal.acks))
    print(
        f"\n[concurrency] {PROCS + 1} processes x {THREADS} threads: {expected} writes acked "
        f"in {elapsed:.1f}s, "
        f"{stats.facts} facts / {stats.rows} rows, 0 lost; {log.reads} reads checked mid-run"
    )


def test_threads_with_own_and_shared_connections(db_path: str) -> None:
    """In one process: four threads with their own store (connection), two sharing one."""
    open_store(db_path).close()
    journal = Journal()
    shared = open_store(db_path)
    own = [open_store(db_path) for _ in range(4)]
    stores = [*own, shared, shared]
    threads = [
        threading.Thread(
            target=write_loop, args=(s, f"th{i}", 900 + i, 25, i), kwargs={"emit": journal.record}
        )
        for i, s in enumerate(stores)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in [*own, shared]:
        s.close()
    assert journal.errors == []
    assert len(journal.acks) == 25 * len(stores)
    check_acknowledged(db_path, journal)
    check_writer_order(db_path, journal)


# ------------------------------------------------------------------ a lock held elsewhere

HOLDER = """
import sqlean, sys, time
conn = sqlean.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
hold = float(sys.argv[2])
if hold < 0:
    sys.stdin.readline()
else:
    time.sleep(hold)
conn.execute("ROLLBACK")
print("released", flush=True)
"""


def hold_write_lock(db: str, seconds: float = -1) -> subprocess.Popen:
    """Another process takes the write lock (BEGIN IMMEDIATE); -1 = until told on stdin."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, db, str(seconds)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def release(proc: subprocess.Popen) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    proc.wait(10)
    assert proc.returncode == 0


def impatient_store(db: str, **kwargs) -> SGAMStore:
    """A store whose connection waits only SHORT_TIMEOUT_MS per attempt on a busy file."""
    store = SGAMStore(connection.connect(db, timeout_ms=SHORT_TIMEOUT_MS), **kwargs)
    store.setup()
    return store


def fact_rows(db: str) -> int:
    conn = connection.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM facts").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.slow
def test_lock_held_past_retries_gives_store_busy_error_and_writes_nothing(db_path: str) -> None:
    store = impatient_store(db_path, index=index_config())
    store.put(("acme", "mira"), "deadline", {"text": "before the lock"})
    rows = fact_rows(db_path)
    holder = hold_write_lock(db_path)
    try:
        writes = {
            "put": lambda: store.put(("acme", "mira"), "deadline", {"text": "blocked"}),
            "replace_fact": lambda: store.replace_fact(
                MemoryFact(
                    tenant_id="acme",
                    subject="mira",
                    attribute="deadline",
                    value={"text": "blocked"},
                    valid_from="2021-01-01T00:00:00Z",
                    source_episode_id="external:test",
                )
            ),
        }
        for name, write in writes.items():
            start = time.monotonic()
            with pytest.raises(StoreBusyError, match="locked after"):
                write()  # an OperationalError here would fail the test
            elapsed = time.monotonic() - start
            # bounded: 8 attempts of 25 ms plus capped, jittered backoff (about 1.6 s)
            assert 0.3 < elapsed < 8, f"{name} gave up after {elapsed:.2f}s"
            # WAL: readers are not blocked by the writer, and see the last commit
            assert store.get(("acme", "mira"), "deadline").value == {"text": "before the lock"}
            assert len(store.search(("acme",), query="before lock")) == 1
    finally:
        release(holder)
    assert fact_rows(db_path) == rows, "a write that raised StoreBusyError left rows behind"
    store.put(("acme", "mira"), "deadline", {"text": "after the lock"})
    assert store.get(("acme", "mira"), "deadline").value == {"text": "after the lock"}
    store.close()
    check_file(db_path)


def test_lock_released_during_retries_is_waited_out(db_path: str) -> None:
    """The busy timeout alone (25 ms) is far shorter than the hold (0.4 s): success means
    the whole transaction was retried."""
    store = impatient_store(db_path)
    holder = hold_write_lock(db_path, 0.4)
    start = time.monotonic()
    store.put(("acme", "mira"), "deadline", {"text": "waited"})
    elapsed = time.monotonic() - start
    holder.wait(10)
    assert elapsed > 0.2, f"the put did not wait for the lock ({elapsed:.3f}s)"
    assert store.get(("acme", "mira"), "deadline").value == {"text": "waited"}
    assert len(store.history("acme", "mira", "deadline")) == 1
    store.close()


def lazy_vector_store(db: str) -> SGAMStore:
    """A vector store not yet set up, whose connection gives up quickly on a busy file."""
    return SGAMStore(connection.connect(db, timeout_ms=SHORT_TIMEOUT_MS), index=index_config())


@pytest.mark.slow
def test_first_use_of_a_vector_store_while_locked(db_path: str) -> None:
    """A store's lazy setup takes the write lock when it must record the vectors' dims
    (the file's first vector store): held past the retries, the first call (here a read)
    raises StoreBusyError, never the driver's "database is locked"; the same store works
    once the lock is gone, and a lock released during the retries is waited out. Once
    the dims are recorded, setup only reads them, so a read waits for nobody."""
    open_store(db_path, index=False).close()
    holder = hold_write_lock(db_path)
    store = lazy_vector_store(db_path)
    try:
        start = time.monotonic()
        with pytest.raises(StoreBusyError):
            store.get(("acme", "mira"), "deadline")
        assert time.monotonic() - start < 30, "setup's retries are not bounded"
    finally:
        release(holder)
    assert store.get(("acme", "mira"), "deadline") is None
    store.conn.close()
    holder = hold_write_lock(db_path)
    try:
        reader = lazy_vector_store(db_path)
        assert reader.get(("acme", "mira"), "deadline") is None  # dims recorded: no lock
        reader.conn.close()
    finally:
        release(holder)
    holder = hold_write_lock(db_path, 0.4)
    late = lazy_vector_store(db_path)
    late.put(("acme", "mira"), "deadline", {"text": "after the lock"})
    holder.wait(10)
    assert late.get(("acme", "mira"), "deadline").value == {"text": "after the lock"}
    late.conn.close()


def test_hybrid_search_reads_one_snapshot(db_path: str) -> None:
    """Deterministic form of the race the stress readers caught: another connection
    commits a correction exactly when the keyword statement starts (SQLite's statement
    trace hook picks the moment; the write is real, from another connection)."""
    reader, writer = open_store(db_path), open_store(db_path)
    reader.put(("acme", "mira"), "deadline", {"text": "passport deadline July 15"})
    fired: list[str] = []

    def between_statements(sql: str) -> None:
        if "bm25(fact_fts)" in sql and not fired:
            fired.append(sql)
            writer.put(("acme", "mira"), "deadline", {"text": "passport deadline June 30"})

    reader.conn.set_trace_callback(between_statements)
    try:
        hits = reader.search(("acme",), query="passport deadline")
    finally:
        reader.conn.set_trace_callback(None)
        writer.close()
    texts = [h.value["text"] for h in hits]
    reader.close()
    assert fired, "the keyword statement never ran"
    assert len(texts) == 1, f"one key, one current fact; search returned {texts}"


# ------------------------------------------------------------------ async callers


async def ticker(lags: list[float], stop: asyncio.Event, period: float = 0.005) -> None:
    """Records how late each wake-up is: a blocked loop shows up as a large lag."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        before = loop.time()
        await asyncio.sleep(period)
        lags.append(loop.time() - before - period)


async def test_the_ticker_catches_a_blocked_loop() -> None:
    """The lag measurement can fail: a synchronous 0.3 s call on the loop shows up."""
    lags: list[float] = []
    stop = asyncio.Event()
    task = asyncio.create_task(ticker(lags, stop))
    await asyncio.sleep(0.02)
    time.sleep(0.3)  # what a sync SQLite call on the loop would do
    await asyncio.sleep(0.02)
    stop.set()
    await task
    assert max(lags) >= 0.25


@pytest.fixture
def heap_of_earlier_tests_frozen() -> Iterator[None]:
    """Objects earlier tests left in this process (a loaded model's, say) moved out of the
    collector's reach for the test: a full collection of them, in whatever thread happens
    to trigger it, holds the GIL for hundreds of ms and would be counted as the store
    blocking the loop. Objects the test itself makes are collected as usual."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.mark.slow
@pytest.mark.usefixtures("heap_of_earlier_tests_frozen")
async def test_concurrent_abatch_under_load_does_not_block_the_loop(db_path: str) -> None:
    store = open_store(db_path)
    journal = Journal()
    background = Worker(db_path, "bg", 7, journal, "--threads", "2", "--wait-go")
    await asyncio.to_thread(background.ready.wait, 60)
    background.go()
    lags: list[float] = []
    stop = asyncio.Event()
    tick = asyncio.create_task(ticker(lags, stop))

    async def call(i: int) -> str:
        ns, key = KEYS[i % len(KEYS)]
        text = f"async n{i} passport deadline"
        results = await store.abatch(
            [
                PutOp(ns, key, {"text": text, "writer": "async"}),
                GetOp(ns, key),
                SearchOp(ns[:1], query="passport deadline", limit=5),
                SearchOp(ns[:1], filter={"writer": "async"}, limit=5),
                ListNamespacesOp(max_depth=2),
            ]
        )
        assert len(results) == 5
        return text

    start = time.monotonic()
    try:
        written = await asyncio.gather(*(call(i) for i in range(ASYNC_CALLS)))
    finally:
        stop.set()
        await tick
        background.kill()
        store.close()
    elapsed = time.monotonic() - start
    assert journal.errors == [], journal.errors[:3]
    assert background.acks > 0, "the background writer made no write: no load"
    check_acknowledged(db_path, journal, extra=set(written))
    stats = check_file(db_path)
    stored = {t for texts in stats.values.values() for t in texts}
    assert set(written) <= stored, "an awaited abatch put is missing"
    worst = max(lags)
    assert worst < MAX_LAG, f"event loop stalled {worst * 1000:.0f} ms during abatch calls"
    print(
        f"\n[async] {ASYNC_CALLS} concurrent abatch calls in {elapsed:.2f}s with "
        f"{background.acks} background writes: max loop lag {worst * 1000:.1f} ms "
        f"over {len(lags)} ticks"
    )


def test_checks_catch_a_lost_write_and_an_overlap(db_path: str) -> None:
    """The oracles above can fail: tamper with the file and they notice."""
    journal = Journal()
    store = open_store(db_path)
    write_loop(store, "w", 1, 30, 3, emit=journal.record)
    store.close()
    check_acknowledged(db_path, journal)
    conn = connection.connect(db_path)
    victim = next(iter(journal.values(journal.acks)))
    conn.execute(
        "UPDATE facts SET value = json_set(value, '$.text', 'tampered') "
        "WHERE json_extract(value, '$.text') = ?",
        (victim,),
    )
    with pytest.raises(AssertionError, match="lost"):
        check_acknowledged(db_path, journal)
    ns, attr = conn.execute(
        "SELECT namespace, attribute FROM facts WHERE known_to IS NULL "
        "GROUP BY namespace, attribute HAVING count(*) >= 2 LIMIT 1"
    ).fetchone()
    first = conn.execute(
        "SELECT row_id FROM facts WHERE namespace = ? AND attribute = ? AND known_to IS NULL "
        "ORDER BY valid_from LIMIT 1",
        (ns, attr),
    ).fetchone()[0]
    conn.execute("UPDATE facts SET valid_to = '9999-01-01T00:00:00.000000Z' WHERE row_id = ?",
                 (first,))  # fmt: skip
    conn.close()
    with pytest.raises(AssertionError, match="overlaps"):
        check_file(db_path)

"""WAL checkpoints on a thread of their own (`engines/sqlite/checkpoint.py`), on real
files: the thread copies what the writer commits, the writer's own checkpoint at `CAP`
keeps the WAL bounded under writers that never pause, a secure purge's TRUNCATE
checkpoint waits for the thread (of every store of this process on the file) instead of
failing, and closing a store stops the thread before SQLite's final checkpoint.
"""

from __future__ import annotations

import gc
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import PutOp

from sgam_store import SGAMStore
from sgam_store.engines.sqlite import checkpoint, connection
from sgam_store.engines.sqlite.checkpoint import Checkpointer

WAIT_S = 10.0
LETTERS = "bcfhjkmnpqrtvwxz"


def open_store(path: str | Path) -> SGAMStore:
    store = SGAMStore(str(path))
    store.setup()
    return store


def checkpointer(store: SGAMStore) -> Checkpointer:
    pool = store.engine.pool
    assert pool is not None
    return pool.checkpointer


def words(rng: random.Random, n: int) -> str:
    """Words found nowhere else, so that every put writes new keyword pages."""
    return " ".join("zq" + "".join(rng.choice(LETTERS) for _ in range(8)) for _ in range(n))


def wal_pages(path: str | Path) -> float:
    """The -wal file's size in pages: its high-water mark, as nothing here truncates it."""
    wal = Path(f"{path}-wal")
    return wal.stat().st_size / 4096 if wal.exists() else 0.0


def until(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@contextmanager
def writers(store: SGAMStore, tenant: str, threads: int = 2) -> Iterator[list[int]]:
    """Threads putting to `tenant` until the body ends; yields the count of puts done."""
    stop, done, errors = threading.Event(), [0], []

    def write(n: int) -> None:
        rng = random.Random(n)
        try:
            while not stop.is_set():
                store.put((tenant, f"w{n}"), f"k{done[0] % 50}", {"text": words(rng, 20)})
                done[0] += 1
        except BaseException as exc:
            errors.append(exc)

    pool = [threading.Thread(target=write, args=(n,), daemon=True) for n in range(threads)]
    for t in pool:
        t.start()
    try:
        assert until(lambda: done[0] > 20), "the writers did not start"
        yield done
    finally:
        stop.set()
        for t in pool:
            t.join(WAIT_S)
    assert not errors, errors[0]


def test_the_thread_copies_what_the_writer_commits(db_path: str) -> None:
    """Fewer pages than `CAP`, so the writer never checkpoints: the file grows anyway."""
    store = open_store(db_path)
    assert store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == checkpoint.CAP
    size = os.path.getsize(db_path)
    rng = random.Random(1)
    for i in range(150):
        store.put(("acme", "mira"), f"k{i}", {"text": words(rng, 10)})
    assert wal_pages(db_path) < checkpoint.CAP
    assert until(lambda: checkpointer(store).passes > 0)
    assert until(lambda: os.path.getsize(db_path) > size), "no page reached the file"
    store.close()


def test_the_wal_stays_bounded_under_writers_that_never_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PASSIVE checkpoint chasing busy writers rarely lets the WAL start over; past
    `CAP` pages the writer's own checkpoint catches up. The writers commit several times
    `CAP` pages (every page of the final file came through the WAL at least once). The
    WAL may pass `CAP` by what they append while a pass that began below it runs."""
    monkeypatch.setattr(checkpoint, "CAP", 500)
    path = tmp_path / "busy.db"
    store = open_store(path)
    with writers(store, "acme", threads=8) as done:
        assert until(lambda: os.path.getsize(path) / 4096 > 3 * checkpoint.CAP or done[0] > 20000)
    assert os.path.getsize(path) / 4096 > 3 * checkpoint.CAP, "too few pages to tell"
    assert checkpointer(store).passes > 0
    # Without the catch-up, 24,000 pages here; without the thread, SQLite's own 1.2-1.4x.
    assert wal_pages(path) < 3 * checkpoint.CAP
    store.close()


def test_a_secure_purge_waits_for_every_checkpointer_on_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two stores on one file, both writing, their threads checkpointing after every
    commit: each secure purge still truncates the WAL (SQLite would fail it at once,
    `(1, -1, -1)`, while a pass held the lock), and no byte of what it erased is left in
    any file."""
    monkeypatch.setattr(checkpoint, "CHANGED", 1)
    directory = tmp_path / "db"
    directory.mkdir()
    path = directory / "m.db"
    purger, other = open_store(path), open_store(path)
    rng = random.Random(2)
    with writers(other, "globex") as done, writers(purger, "initech"):
        for round_ in range(6):
            secret = words(rng, 3)
            purger.put(("acme", f"s{round_}"), "note", {"text": secret})
            # passes run meanwhile
            assert until(lambda start=done[0]: done[0] > start + 50)
            report = purger.purge("acme", f"s{round_}", secure_delete=True)
            assert report.checkpointed, f"round {round_}: the WAL was not truncated"
            files = [p.read_bytes() for p in directory.iterdir() if p.is_file()]
            left = [w for w in secret.split() if any(w[-7:].encode() in f for f in files)]
            assert left == [], f"round {round_}: erased words still in the files"
    assert checkpointer(purger).passes > 0 and checkpointer(other).passes > 0
    purger.close()
    other.close()


def test_close_stops_the_thread_before_the_final_checkpoint(db_path: str) -> None:
    store = open_store(db_path)
    with writers(store, "acme"):
        assert until(lambda: checkpointer(store).passes > 0)
    thread = checkpointer(store).thread
    store.close()
    assert not thread.is_alive()
    assert not os.path.exists(f"{db_path}-wal"), "the last close did not checkpoint the WAL"
    reopened = open_store(db_path)
    assert reopened.get(("acme", "w0"), "k0") is not None
    reopened.close()


def test_a_store_dropped_without_close_stops_its_thread(db_path: str) -> None:
    store = open_store(db_path)
    store.put(("acme", "mira"), "city", {"text": "Lisbon"})
    thread = checkpointer(store).thread
    del store
    gc.collect()
    assert until(lambda: not thread.is_alive()), "the thread outlived its store"


def a_long_pass(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SGAMStore, Any]:
    """A store whose thread is copying thousands of pages, and a connection of its own
    to the file: the writes come first, with the thread held back, then one more put
    lets it go."""
    monkeypatch.setattr(checkpoint, "CAP", 100_000)
    monkeypatch.setattr(checkpoint, "CHANGED", 10**9)
    store = open_store(path)
    rng = random.Random(3)
    store.batch([PutOp(("acme", "mira"), f"k{i}", {"text": words(rng, 40)}) for i in range(3000)])
    assert wal_pages(path) > 2000
    probe = connection.connect(str(path))
    monkeypatch.setattr(checkpoint, "CHANGED", 1)
    store.put(("acme", "mira"), "last", {"text": "go"})
    assert until(lambda: checkpointer(store).running)
    return store, probe


def test_a_bare_truncate_fails_at_once_while_a_pass_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `truncate` is for: SQLite does not wait for the checkpoint lock."""
    path = tmp_path / "m.db"
    store, probe = a_long_pass(path, monkeypatch)
    assert tuple(probe.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()) == (1, -1, -1)
    probe.close()
    store.close()


def test_truncate_waits_for_the_pass_of_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no retry (`wait_s=0`), the pause alone lets the TRUNCATE through."""
    path = tmp_path / "m.db"
    store, probe = a_long_pass(path, monkeypatch)
    assert checkpoint.truncate(probe, wait_s=0)
    assert not checkpointer(store).running and wal_pages(path) == 0
    probe.close()
    store.close()

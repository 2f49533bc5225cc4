"""Reads in parallel (issue 17): a SQLite file's reads run on a pool of reader connections.

What is proven, on real files with real threads:

- reads run side by side, each on a connection of its own, and `close()` closes them all;
- every read sees every write acknowledged before it started (gets, and searches through
  the in-process vector mirror), while writers of this store and of another store on the
  same file commit; no read keeps an old snapshot open afterwards;
- the reads of one `batch()` see one snapshot although another connection commits
  between its statements;
- a write from inside a read neither deadlocks nor goes unseen;
- ':memory:' (and a caller's own connection) keep the single shared connection.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp

from sgam_store import SGAMStore
from sgam_store.engines.sqlite import connection

from .conftest import HashEmbeddings

DIMS = 32
WAIT_S = 10.0  # generous bound on any wait that must not block
GET_SQL = "ORDER BY f.valid_from DESC LIMIT 1"  # how a get's statement ends (traced)


def index() -> dict[str, Any]:
    return {"dims": DIMS, "embed": HashEmbeddings(DIMS), "fields": ["text"]}


def open_store(target: Any, **kwargs: Any) -> SGAMStore:
    store = SGAMStore(target, index=index(), **kwargs)
    store.setup()
    return store


def open_files(path: str) -> int:
    """How many file descriptors of this process are open on the database file."""
    real = os.path.realpath(path)
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed since listed
            count += os.readlink(f"/proc/self/fd/{fd}") == real
    return count


@contextmanager
def traced(store: SGAMStore, callback: Callable[[str], None]) -> Iterator[None]:
    """Run `callback` as every statement of the store starts (its readers' too)."""
    store.conn.set_trace_callback(callback)
    try:
        yield
    finally:
        store.conn.set_trace_callback(None)


def run_threads(targets: list[Callable[[], None]]) -> None:
    """Run each target in a thread; re-raise the first failure; fail if one hangs."""
    errors: list[BaseException] = []

    def guarded(target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except BaseException as exc:
                errors.append(exc)

        return run

    threads = [threading.Thread(target=guarded(t), daemon=True) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S * 3)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


# ------------------------------------------------------------------ the pool itself


def test_reads_run_side_by_side_on_a_bounded_pool_closed_by_close(db_path: str) -> None:
    """`READERS` threads are inside a read statement at the same moment (behind one
    connection and its lock, the first would wait for the others in vain), one more
    thread waits for a reader instead of opening another connection, and `close()`
    closes every connection to the file."""
    readers = connection.READERS
    store = open_store(db_path)
    store.put(("acme", "mira"), "deadline", {"text": "passport deadline June 30"})
    lock, entered, together = threading.Lock(), [], threading.Event()
    open_during: list[int] = []

    def meet(sql: str) -> None:
        if GET_SQL not in sql:
            return
        with lock:
            entered.append(sql)
            if len(entered) == readers:
                together.set()
            first = len(entered) <= readers
        if first:
            assert together.wait(WAIT_S), "the reads were never inside a statement together"
        open_during.append(open_files(db_path))

    def read() -> None:
        item = store.get(("acme", "mira"), "deadline")
        assert item is not None and item.value["text"] == "passport deadline June 30"

    with traced(store, meet):
        run_threads([read] * (readers + 1))
    assert len(entered) == readers + 1
    assert max(open_during) == 1 + readers, f"writer + {readers} readers open: {open_during}"
    store.close()
    assert open_files(db_path) == 0, "close() left connections to the file open"
    with pytest.raises(connection.driver().ProgrammingError):
        store.get(("acme", "mira"), "deadline")


def test_no_read_keeps_a_snapshot_open(db_path: str) -> None:
    """After reads of every kind from several threads, a TRUNCATE checkpoint from another
    connection, which cannot finish while any connection holds a read transaction, finds
    no reader in its way: an idle reader never serves a stale snapshot."""
    store = open_store(db_path)
    for i in range(20):
        store.put(("acme", f"s{i % 3}"), f"k{i}", {"text": f"memory number {i}"})

    def reads() -> None:
        store.get(("acme", "s0"), "k0")
        store.batch([GetOp(("acme", "s1"), "k1"), GetOp(("acme", "s2"), "k2")])
        store.search(("acme",), query="memory number", limit=5)
        store.search(("acme", "s1"), query="memory", limit=5)
        store.search(("acme",), limit=5)
        store.list_namespaces(prefix=("acme",))
        store.history("acme", "s0", "k0")
        store.fact_at("acme", "s0", "k0", at="2030-01-01T00:00:00Z")

    run_threads([reads] * 3)
    store.put(("acme", "s0"), "k0", {"text": "a newer memory"})  # frames in the WAL
    probe = connection.connect(db_path, timeout_ms=0)
    busy, _, _ = probe.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    probe.close()
    assert busy == 0, "a reader connection still holds a read transaction"
    assert store.get(("acme", "s0"), "k0").value["text"] == "a newer memory"
    store.close()


def test_a_write_from_inside_a_read_does_not_deadlock(db_path: str) -> None:
    """A thread that writes while it reads (here: from a read statement's trace) must not
    wait for itself: its commit waits for readers, and it is one."""
    store = open_store(db_path)
    store.put(("acme", "mira"), "deadline", {"text": "July 15"})
    fired: list[str] = []

    def write_once(sql: str) -> None:
        if GET_SQL in sql and not fired:
            fired.append(sql)
            store.put(("acme", "mira"), "city", {"text": "Lisbon"})

    def read() -> None:
        with traced(store, write_once):
            store.get(("acme", "mira"), "deadline")

    run_threads([read])
    assert fired
    assert store.get(("acme", "mira"), "city").value == {"text": "Lisbon"}
    store.close()


def test_a_secure_purge_checkpoints_while_threads_read(db_path: str) -> None:
    """A secure purge ends with a TRUNCATE checkpoint, which waits for every open read
    transaction. Readers busy searching must let it through: none may wait for the
    writer while it holds a read transaction open (it did, and each purge then waited
    out the 5 s busy timeout and reported the WAL not truncated)."""
    store = open_store(db_path)
    for i in range(200):
        store.put(("acme", f"s{i % 10}"), f"k{i}", {"text": f"secret number {i}"})
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            store.search(("acme",), query="secret number", limit=5)
            store.get(("acme", "s1"), "k1")

    def purge() -> None:
        time.sleep(0.2)  # the readers are at it
        try:
            for i in range(5):
                start = time.monotonic()
                report = store.purge(tenant_id="acme", subject=f"s{i}", secure_delete=True)
                assert report.checkpointed, f"purge {i}: a reader kept the WAL busy"
                assert time.monotonic() - start < 2.5, f"purge {i} waited on the readers"
        finally:
            stop.set()

    run_threads([read] * 4 + [purge])
    assert store.search(("acme", "s0"), query="secret number", limit=5) == []
    store.close()


@pytest.mark.parametrize("kind", ["memory", "caller's connection"])
def test_single_connection_targets_are_shared_by_threads(db_path: str, kind: str) -> None:
    """':memory:' exists on its one connection (another would open another, empty
    database), and a caller's connection is theirs to share: every thread reads through
    it, and the store opens no connection of its own."""
    target = ":memory:" if kind == "memory" else connection.connect(db_path)
    store = open_store(target)
    for i in range(10):
        store.put(("acme", "mira"), f"k{i}", {"text": f"fact {i}"})

    def read() -> None:
        for i in range(10):
            assert store.get(("acme", "mira"), f"k{i}").value == {"text": f"fact {i}"}
        hits = store.search(("acme",), query="fact", limit=20)
        assert {h.key for h in hits} == {f"k{i}" for i in range(10)}

    run_threads([read] * 4)
    if kind != "memory":
        assert open_files(db_path) == 1, "the store opened connections besides the caller's"
    store.close()


# ------------------------------------------------------------------ snapshots


# A statement each ranking runs after the batch's gets: the keyword ranking's, and the
# candidate check that admits the vector ranking's hits (traced with its parameters).
AFTER_THE_GETS = {"hybrid": "bm25(fact_fts)", "vector": "INDEXED BY facts_fact_id"}


@pytest.mark.parametrize("mode", sorted(AFTER_THE_GETS))
def test_a_batch_reads_one_snapshot_while_another_store_commits(db_path: str, mode: str) -> None:
    """Another store on the file rewrites both keys in one transaction after the batch's
    gets ran and before its search's next statement: the search still answers from the
    gets' state (its vectors from the mirror included); the next read sees the new one."""
    store, other = open_store(db_path, retrieval={"mode": mode}), open_store(db_path)
    ns = ("acme", "mira")
    store.put(ns, "a", {"text": "alpha one"})
    store.put(ns, "b", {"text": "beta one"})
    fired: list[str] = []

    def rewrite(sql: str) -> None:
        if AFTER_THE_GETS[mode] in sql and not fired:
            fired.append(sql)
            other.batch(
                [PutOp(ns, "a", {"text": "alpha two"}), PutOp(ns, "b", {"text": "beta two"})]
            )

    ops = [GetOp(ns, "a"), GetOp(ns, "b"), SearchOp(("acme",), query="alpha beta", limit=10)]
    with traced(store, rewrite):
        a, b, hits = store.batch(ops)
    assert fired, "the statement after the gets never ran"
    assert (a.value, b.value) == ({"text": "alpha one"}, {"text": "beta one"})
    assert sorted(h.value["text"] for h in hits) == ["alpha one", "beta one"]
    hits = store.search(("acme",), query="alpha beta", limit=10)
    assert sorted(h.value["text"] for h in hits) == ["alpha two", "beta two"]
    other.close()
    store.close()


# ------------------------------------------------------------------ read-your-writes


VERSION = re.compile(r" v(\d+)$")


Key = tuple[str, str]  # (tenant, "subject/attribute")


@dataclass
class Acks:
    """Per key, what it held when its last write returned (version, alive), and how many
    of its deletes had started and had returned: a read may miss a key acknowledged alive
    only if a delete of it started before the read ended and had not returned before the
    read began."""

    state: dict[Key, tuple[int, bool]] = field(default_factory=dict)
    started: dict[Key, int] = field(default_factory=dict)
    returned: dict[Key, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def put(self, key: Key, version: int) -> None:
        with self.lock:
            self.state[key] = (version, True)

    @contextmanager
    def deleting(self, key: Key) -> Iterator[None]:
        with self.lock:
            self.started[key] = self.started.get(key, 0) + 1
            version = self.state.get(key, (0, False))[0]
        yield
        with self.lock:
            self.state[key] = (version, False)
            self.returned[key] = self.returned.get(key, 0) + 1

    def before(self) -> tuple[dict[Key, tuple[int, bool]], dict[Key, int]]:
        """The acks, and the deletes returned, at one moment."""
        with self.lock:
            return dict(self.state), dict(self.returned)

    def started_now(self) -> dict[Key, int]:
        with self.lock:
            return dict(self.started)


def found_of(items: list[Any]) -> dict[Key, list[int]]:
    """{(tenant, "subject/attribute"): versions read} of a page of items."""
    out: dict[Key, list[int]] = {}
    for item in items:
        key = (item.namespace[0], f"{item.namespace[1]}/{item.key}")
        out.setdefault(key, []).append(int(VERSION.search(item.value["text"]).group(1)))
    return out


@dataclass
class Read:
    """One read to check: the acks and the deletes returned before it, and the deletes
    started by its end."""

    before: dict[Key, tuple[int, bool]]
    returned: dict[Key, int]
    started: dict[Key, int]
    tenant: str
    what: str

    def check(self, found: dict[Key, list[int]], scope: str) -> None:
        """Every key under `scope` ("", "subject/" or "subject/attribute") acknowledged
        before the read is there at that version or a later one, absent only if deleted or
        being deleted, and there once."""
        for key, versions in found.items():
            assert len(versions) == 1, f"{self.what}: {key} read {len(versions)}x: {versions}"
        for key, (version, alive) in self.before.items():
            if key[0] != self.tenant or not key[1].startswith(scope):
                continue
            got = found.get(key)
            if got is None:
                deleting = self.started.get(key, 0) > self.returned.get(key, 0)
                assert not alive or deleting, (
                    f"{self.what}: {key} v{version} was acknowledged, the read missed it"
                )
            else:
                assert got[0] > version or (got[0] == version and alive), (
                    f"{self.what}: {key} read v{got[0]}, acknowledged v{version} ({alive=})"
                )


def writer_loop(
    store: SGAMStore, tenant: str, acks: Acks, stop: threading.Event, seed: int
) -> Callable[[], None]:
    """Puts (and now and then deletes) of this tenant's keys until `stop`; each ack
    recorded after the call returned."""

    def run() -> None:
        rng = random.Random(seed)
        version = 0
        while not stop.is_set():
            version += 1
            subject, attribute = f"s{rng.randrange(2)}", f"k{rng.randrange(4)}"
            key = (tenant, f"{subject}/{attribute}")
            if rng.random() < 0.15:
                with acks.deleting(key):
                    store.delete((tenant, subject), attribute)
            else:
                store.put((tenant, subject), attribute, {"text": f"{tenant} note v{version}"})
                acks.put(key, version)
            time.sleep(rng.random() * 0.002)

    return run


def reader_loop(
    store: SGAMStore,
    tenants: list[str],
    acks: Acks,
    stop: threading.Event,
    seed: int,
    reads: list[int],
) -> Callable[[], None]:
    """Vector-only searches (every current fact of a tenant is in the page, so a vector
    the mirror lacks is a missing key), subject searches and gets, each checked against
    the acks taken just before it."""

    def run() -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            tenant, subject = rng.choice(tenants), f"s{rng.randrange(2)}"
            attribute = f"k{rng.randrange(4)}"
            before, returned = acks.before()
            kind = rng.randrange(3)
            if kind == 0:
                what, scope = "tenant search", ""
                items = store.search((tenant,), query="note", limit=50)
            elif kind == 1:
                what, scope = "subject search", f"{subject}/"
                items = store.search((tenant, subject), query="note", limit=50)
            else:
                what, scope = "get", f"{subject}/{attribute}"
                item = store.get((tenant, subject), attribute)
                items = [item] if item else []
            read = Read(before, returned, acks.started_now(), tenant, what)
            read.check(found_of(items), scope)
            reads.append(1)

    return run


@pytest.mark.parametrize("seed", [1, 2])
def test_every_read_sees_every_acknowledged_write(db_path: str, seed: int) -> None:
    """Two writer threads of the store and a second store on the same file (another
    connection, whose commits the mirror must notice by itself) write while three reader
    threads search and get; every read is checked against the writes acknowledged before
    it began. The searches rank by vectors alone, through the in-process mirror."""
    store = open_store(db_path, retrieval={"mode": "vector"})
    other = open_store(db_path, retrieval={"mode": "vector"})
    acks, stop, reads = Acks(), threading.Event(), []
    tenants = ["t0", "t1", "t2"]
    writers = [
        writer_loop(store, "t0", acks, stop, seed * 10),
        writer_loop(store, "t1", acks, stop, seed * 10 + 1),
        writer_loop(other, "t2", acks, stop, seed * 10 + 2),
    ]
    readers = [reader_loop(store, tenants, acks, stop, seed * 10 + 3 + i, reads) for i in range(3)]

    def stop_later() -> None:
        time.sleep(2.0)
        stop.set()

    run_threads([*writers, *readers, stop_later])
    assert len(reads) > 100, f"only {len(reads)} reads ran"
    # At rest, the mirror holds exactly the current facts' vectors.
    final, _ = acks.before()
    for tenant in tenants:
        items = store.search((tenant,), query="note", limit=50)
        Read(final, {}, {}, tenant, "final search").check(found_of(items), "")
        alive = {k for k, (_, up) in final.items() if k[0] == tenant and up}
        assert {(i.namespace[0], f"{i.namespace[1]}/{i.key}") for i in items} == alive
    other.close()
    store.close()


def test_reads_after_a_put_on_another_thread_see_it(tmp_path: Path) -> None:
    """The plainest form: a put returns on one thread, then (signalled) reads on other
    threads, each on its own reader connection, must see it, vector search included."""
    store = open_store(str(tmp_path / "ryw.db"), retrieval={"mode": "vector"})
    store.search(("acme",), query="warm the mirror")
    for round_ in range(30):
        text = f"fact number {round_} v{round_}"
        done = threading.Event()
        seen: list[bool] = []

        def write(text: str = text, done: threading.Event = done) -> None:
            store.put(("acme", "mira"), "deadline", {"text": text})
            done.set()

        def read(text: str = text, done: threading.Event = done, seen: list = seen) -> None:
            assert done.wait(WAIT_S)
            item = store.get(("acme", "mira"), "deadline")
            hits = store.search(("acme",), query="fact number", limit=5)
            seen.append(item.value["text"] == text and [h.value["text"] for h in hits] == [text])

        run_threads([write, read, read, read])
        assert seen == [True] * 3, f"round {round_}: a read missed the put"
    store.close()

"""Group commit (`sgam_store/write/group.py`): concurrent puts share a transaction.

On real SQLite files, from threads (`put`, `batch`) and asyncio tasks (`aput`,
`abatch`). To make a group deterministic, a second connection holds the database's
write lock (`BEGIN IMMEDIATE`, as another process would) while callers arrive: the
first caller's transaction waits for the lock, the others queue behind it, and when
the lock is released they commit in that one transaction. Rows written by one
transaction share its instant (`known_from`), which is how the tests see a group.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import pairwise

import pytest
from langgraph.store.base import GetOp, PutOp

from sgam_store import MemoryFact, SGAMStore
from sgam_store.core.errors import ConflictError, InvalidFactError
from sgam_store.engines.postgres import roles
from sgam_store.engines.sqlite import connection
from sgam_store.write.group import LIMIT, GroupCommit

from . import pg
from .conftest import HashEmbeddings
from .reliability import Journal, Worker, check_acknowledged, check_file, open_store
from .test_rls import as_role

NS = ("acme", "mira")
SETTLE = 0.3  # seconds for started callers to reach the queue


@pytest.fixture
def store(db_path: str) -> Iterator[SGAMStore]:
    s = SGAMStore(db_path, index={"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]})
    s.setup()
    yield s
    s.close()


@contextmanager
def write_lock_held(path: str) -> Iterator[None]:
    """Another connection holds the write lock until the block ends."""
    other = connection.connect(path)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("COMMIT")
        other.close()


def in_threads(calls: list[Callable[[], object]], path: str) -> list[object]:
    """Run the calls in threads that start one after another while the write lock is
    held, so they queue in this order; each thread's result or exception, in order."""
    outcomes: list[object] = [None] * len(calls)

    def run(n: int) -> None:
        try:
            outcomes[n] = calls[n]()
        except Exception as error:
            outcomes[n] = error

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(calls))]
    with write_lock_held(path):
        for t in threads:
            t.start()
            time.sleep(SETTLE / len(calls))  # arrival order = start order
        time.sleep(SETTLE)
    for t in threads:
        t.join(30)
    return outcomes


def instants(store: SGAMStore, keys: list[str], ns: tuple[str, ...] = NS) -> set[datetime]:
    """The transaction instants of every version of these keys."""
    return {f.known_from for key in keys for f in store.history(ns[0], ns[1], key)}


def texts(store: SGAMStore, key: str, ns: tuple[str, ...] = NS) -> list[str]:
    return [f.value["text"] for f in store.history(ns[0], ns[1], key)]


def test_puts_from_threads_that_arrive_together_share_one_commit(
    store: SGAMStore, db_path: str
) -> None:
    keys = [f"k{n}" for n in range(6)]
    calls = [lambda k=k: store.put(NS, k, {"text": f"value of {k}"}) for k in keys]
    assert in_threads(calls, db_path) == [None] * 6
    assert len(instants(store, keys)) == 1  # one transaction for all six callers
    for k in keys:
        assert store.get(NS, k).value == {"text": f"value of {k}"}
        hits = store.search(NS, query=f"value of {k}", limit=6)
        assert k in [h.key for h in hits]  # keyword and vector rows landed too
    check_file(db_path)


def test_a_lone_put_commits_without_waiting_for_company(store: SGAMStore) -> None:
    start = time.perf_counter()
    store.put(NS, "alone", {"text": "nobody else is writing"})
    assert time.perf_counter() - start < 1.0
    store.put(NS, "alone2", {"text": "one more"})
    assert len(instants(store, ["alone", "alone2"])) == 2  # each its own transaction


def test_puts_of_one_key_version_in_arrival_order(store: SGAMStore, db_path: str) -> None:
    values = ["first", "second", "second", "third", "first"]
    calls = [lambda v=v: store.put(NS, "city", {"text": v}) for v in values]
    assert in_threads(calls, db_path) == [None] * 5
    history = store.history(*NS, "city")
    # As if each had committed alone: the identical re-put restates, the others version.
    assert [f.value["text"] for f in history] == ["first", "second", "third", "first"]
    assert all(a.valid_to == b.valid_from for a, b in pairwise(history))
    assert history[-1].valid_to is None
    assert len({f.known_from for f in history}) == 1


def test_a_group_reads_its_keys_once_and_queues_reviews_once(
    store: SGAMStore, db_path: str
) -> None:
    """Later callers of a group find the keys earlier ones wrote without a new read (the
    tails those writes left), and new keys are queued for review in one statement after
    every version is written, not once per caller between them."""
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    values = ["first", "second", "second", "third"]
    calls = [lambda v=v: store.put(NS, "city", {"text": v}) for v in values]
    calls += [lambda n=n: store.put(NS, f"new{n}", {"text": f"new {n}"}) for n in range(3)]
    assert in_threads(calls, db_path) == [None] * 7
    store.conn.set_trace_callback(None)
    read = [
        key
        for s in statements
        if s.startswith("WITH k(ns, attr)")
        for _, key in json.loads(re.search(r"json_each\('(.*?)'\)", s)[1])
    ]
    # The leader's read, then one for the keys of the callers its group absorbed: the
    # key the leader wrote is not read again, however many callers write it after.
    assert sorted(read) == ["city", "new0", "new1", "new2"]
    assert not [s for s in statements if "MAX(valid_from)" in s]  # no per-put lookup
    facts = [n for n, s in enumerate(statements) if s.startswith("INSERT INTO facts")]
    queued = [n for n, s in enumerate(statements) if "INSERT INTO supersession_queue" in s]
    assert len(queued) == 4 and min(queued) > max(facts)  # city and new0..2, at the end
    assert texts(store, "city") == ["first", "second", "third"]
    assert len(instants(store, ["city", "new0", "new1", "new2"])) == 1


def test_a_delete_after_a_put_in_one_group_keeps_the_put_in_history(
    store: SGAMStore, db_path: str
) -> None:
    calls = [
        lambda: store.put(NS, "plan", {"text": "pro plan"}),
        lambda: store.delete(NS, "plan"),
    ]
    assert in_threads(calls, db_path) == [None, None]
    (fact,) = store.history(*NS, "plan")
    assert fact.value == {"text": "pro plan"} and fact.valid_to is not None
    assert store.get(NS, "plan") is None
    # Within one caller's batch, as before: the put never held, so nothing is left.
    store.batch([PutOp(NS, "trial", {"text": "trial plan"}), PutOp(NS, "trial", None)])
    assert store.history(*NS, "trial") == []


def test_a_batch_in_a_group_stays_atomic_and_reads_before_its_writes(
    store: SGAMStore, db_path: str
) -> None:
    store.put(NS, "a", {"text": "old a"})
    calls = [
        lambda: store.put(NS, "b", {"text": "b by one caller"}),
        lambda: store.batch(
            [PutOp(NS, "a", {"text": "new a"}), PutOp(NS, "c", {"text": "c"}), GetOp(NS, "a")]
        ),
    ]
    outcomes = in_threads(calls, db_path)
    assert outcomes[0] is None
    assert outcomes[1][2].value == {"text": "old a"}  # its read saw the state before
    assert texts(store, "a") == ["old a", "new a"] and texts(store, "c") == ["c"]
    assert len(instants(store, ["b", "c"])) == 1


def test_a_group_holds_at_most_limit_puts_unless_one_batch_is_larger(
    store: SGAMStore, db_path: str
) -> None:
    """Four callers of 100-put batches (LIMIT is 256): the first two share a commit, the
    last two the next one; a caller's batch above LIMIT still commits whole."""
    assert LIMIT == 256

    def batch(caller: int, size: int = 100) -> Callable[[], object]:
        ops = [
            PutOp(("acme", f"c{caller}"), f"k{n}", {"text": f"{caller} {n}"}) for n in range(size)
        ]
        return lambda: store.batch(ops)

    assert in_threads([batch(c) for c in range(4)], db_path) == [[None] * 100] * 4
    by_caller = [
        instants(store, [f"k{n}" for n in range(100)], ("acme", f"c{c}")) for c in range(4)
    ]
    assert all(len(i) == 1 for i in by_caller)
    assert by_caller[0] == by_caller[1] != by_caller[2] == by_caller[3]
    store.batch([PutOp(("acme", "big"), f"k{n}", {"text": str(n)}) for n in range(300)])
    assert len(instants(store, [f"k{n}" for n in range(300)], ("acme", "big"))) == 1


def test_a_bad_put_fails_its_caller_alone(store: SGAMStore, db_path: str) -> None:
    calls = [
        lambda: store.put(NS, "ok1", {"text": "fine"}),
        lambda: store.put(NS, "bad", "not a dict"),  # type: ignore[arg-type]
        lambda: store.put(NS, "ok2", {"text": "fine too"}, ttl=-1),  # a bad TTL
        lambda: store.put(NS, "ok3", {"text": "also fine"}),
    ]
    outcomes = in_threads(calls, db_path)
    assert outcomes[0] is None and outcomes[3] is None
    assert isinstance(outcomes[1], InvalidFactError)
    assert isinstance(outcomes[2], InvalidFactError)
    assert store.get(NS, "bad") is None and store.get(NS, "ok2") is None
    assert len(instants(store, ["ok1", "ok3"])) == 1


def test_a_conflict_inside_the_transaction_fails_its_caller_alone(
    store: SGAMStore, db_path: str
) -> None:
    """A ledger conflict (an equal valid_from) raised inside the group's transaction
    rolls it back; the group then runs caller by caller, so only that caller fails."""
    taken = datetime(2024, 5, 1, tzinfo=UTC)
    store.replace_fact(_fact("deadline", "June", taken))
    group: GroupCommit[MemoryFact] = GroupCommit(
        store.facts, lambda tx, facts: [store.facts.write(tx, f, []) for f in facts]
    )
    facts = [
        _fact("city", "Lyon", taken),
        _fact("deadline", "July", taken),  # the same valid_from as the stored fact
        _fact("pet", "cat", taken),
    ]
    calls = [lambda f=f: group.submit([(None, f)]) for f in facts]
    errors = [outcome[0] for outcome in in_threads(calls, db_path)]
    assert errors[0] is None and errors[2] is None
    assert isinstance(errors[1], ConflictError)
    assert texts(store, "deadline") == ["June"]
    assert texts(store, "city") == ["Lyon"] and texts(store, "pet") == ["cat"]
    check_file(db_path, index=False)  # these facts were written without vectors


def _fact(attribute: str, text: str, start: datetime) -> MemoryFact:
    return MemoryFact(
        tenant_id="acme",
        subject="mira",
        attribute=attribute,
        value={"text": text},
        valid_from=start,
        source_episode_id="external:test",
    )


def test_many_threads_lose_no_put_and_read_their_own_writes(store: SGAMStore) -> None:
    """16 threads, half their puts to own keys and half to 8 shared ones; each reads
    its own write back right after its put returns; every put is in history."""
    failures: list[str] = []

    def writer(w: int) -> None:
        for n in range(20):
            key, ns = (f"s{n % 8}", ("acme", "shared")) if n % 2 else (f"k{n}", ("acme", f"w{w}"))
            text = f"writer {w} put {n}"
            store.put(ns, key, {"text": text})
            if n % 2 == 0 and store.get(ns, key).value["text"] != text:
                failures.append(f"{w}/{n}: read {store.get(ns, key).value}")
            if n % 2 == 0 and key not in [h.key for h in store.search(ns, query=text)]:
                failures.append(f"{w}/{n}: not found by search")

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == []
    shared = [t for n in range(8) for t in texts(store, f"s{n}", ("acme", "shared"))]
    assert sorted(shared) == sorted(
        f"writer {w} put {n}" for w in range(16) for n in range(1, 20, 2)
    )
    for w in range(16):
        for n in range(0, 20, 2):
            assert texts(store, f"k{n}", ("acme", f"w{w}")) == [f"writer {w} put {n}"]


async def test_aputs_from_many_tasks_commit_together_and_fail_alone(
    store: SGAMStore, db_path: str
) -> None:
    async def put(n: int) -> None:
        value = {"text": f"task {n}"} if n != 5 else ["not", "a", "dict"]
        await store.aput(("acme", "tasks"), f"t{n}", value)  # type: ignore[arg-type]

    with write_lock_held(db_path):
        pending = asyncio.gather(*(put(n) for n in range(20)), return_exceptions=True)
        await asyncio.sleep(SETTLE)
    outcomes = await pending
    assert isinstance(outcomes[5], InvalidFactError)
    assert [o for n, o in enumerate(outcomes) if n != 5] == [None] * 19
    keys = [f"t{n}" for n in range(20) if n != 5]
    assert len(instants(store, keys, ("acme", "tasks"))) == 1
    for n in range(20):
        item = await store.aget(("acme", "tasks"), f"t{n}")
        assert (item is None) if n == 5 else item.value == {"text": f"task {n}"}


class CountingEmbeddings(HashEmbeddings):
    """Counts `embed_documents` calls (a model call each) and refuses one text."""

    def __init__(self) -> None:
        super().__init__(16)
        self.calls: list[int] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        if any("refused" in text for text in texts):
            raise ValueError("the model refuses this text")
        return super().embed_documents(texts)


async def test_gathered_aputs_embed_in_one_call_and_a_refused_text_fails_alone(
    db_path: str,
) -> None:
    embeddings = CountingEmbeddings()
    store = SGAMStore(db_path, index={"dims": 16, "embed": embeddings, "fields": ["text"]})
    store.setup()
    try:
        await asyncio.gather(*(store.aput(NS, f"t{n}", {"text": f"task {n}"}) for n in range(12)))
        assert embeddings.calls == [12]  # one model call for the twelve callers
        hits = await store.asearch(NS, query="task 7", limit=1)
        assert [h.key for h in hits] == ["t7"]  # each put got its own text's vector
        embeddings.calls.clear()
        words = ["fine", "fine", "refused", "fine"]
        outcomes = await asyncio.gather(
            *(store.aput(NS, f"r{n}", {"text": f"{w} {n}"}) for n, w in enumerate(words)),
            return_exceptions=True,
        )
        assert embeddings.calls == [4, 1, 1, 1, 1]  # the shared call failed: one each
        assert isinstance(outcomes[2], ValueError)
        assert [o for n, o in enumerate(outcomes) if n != 2] == [None] * 3
        assert await store.aget(NS, "r2") is None
        assert [(await store.aget(NS, f"r{n}")).value["text"] for n in (0, 1, 3)] == [
            "fine 0",
            "fine 1",
            "fine 3",
        ]
    finally:
        store.close()


async def test_abatch_of_puts_from_tasks_is_atomic_per_caller(store: SGAMStore) -> None:
    good = [PutOp(("acme", "b"), f"g{n}", {"text": f"good {n}"}) for n in range(3)]
    bad = [
        PutOp(("acme", "b"), "x", {"text": "x"}),
        PutOp(("acme", "b"), "y", {"text": "y"}, ttl=0),
    ]
    outcomes = await asyncio.gather(store.abatch(good), store.abatch(bad), return_exceptions=True)
    assert outcomes[0] == [None, None, None]
    assert isinstance(outcomes[1], InvalidFactError)
    assert await store.aget(("acme", "b"), "x") is None  # nothing of the bad batch
    assert [(await store.aget(("acme", "b"), f"g{n}")).value for n in range(3)] == [
        {"text": f"good {n}"} for n in range(3)
    ]


async def test_many_tasks_lose_no_put(store: SGAMStore) -> None:
    async def writer(w: int) -> None:
        for n in range(10):
            key = f"s{(w + n) % 4}" if n % 2 else f"w{w}-{n}"
            await store.aput(("acme", "many"), key, {"text": f"task {w} put {n}"})

    await asyncio.gather(*(writer(w) for w in range(48)))
    found = [t for k in {f"s{n}" for n in range(4)} for t in texts(store, k, ("acme", "many"))]
    assert len(found) == 48 * 5 and len(set(found)) == 48 * 5


@pytest.mark.slow
def test_a_process_killed_mid_group_loses_no_acknowledged_put(db_path: str) -> None:
    """Eight threads share one store (so their puts group), the process is killed
    with SIGKILL mid-stream: every put it acknowledged is there, nothing half-done."""
    open_store(db_path).close()
    journal = Journal()
    for r in range(3):
        worker = Worker(db_path, f"g{r}", r + 1, journal, "--threads", "8", "--shared")
        deadline = time.monotonic() + 120
        while worker.acks < 40 + 20 * r:
            assert time.monotonic() < deadline, worker.stderr
            time.sleep(0.005)
        worker.kill()
        assert journal.errors == [], journal.errors[:3]
        check_acknowledged(db_path, journal)
    assert len(journal.acks) >= 40 + 40 + 80


def test_under_row_security_each_tenant_groups_apart(pg_server: str) -> None:
    """PostgreSQL with row security, as an application role that may not take the
    all-tenant scope: a transaction runs in one tenant's scope, so concurrent puts of
    several tenants (threads, and tasks gathered on one loop) group per tenant and all
    land; a mixed group would be refused the all-tenant scope."""
    uri = pg.fresh_database()
    with SGAMStore.from_conn_string(uri, row_security=True) as owner:
        owner.setup()
    role = "app_" + uuid.uuid4().hex[:12]
    roles.create_app_role(uri, role)
    tenants = ["t1", "t2", "t3", "t4"]
    with SGAMStore.from_conn_string(as_role(uri, role)) as store:
        store.setup()

        def writer(w: int) -> None:
            for n in range(10):
                store.put((tenants[(w + n) % 4], "kim"), "note", {"text": f"{w} {n}"})

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)

        async def tasks() -> None:
            await asyncio.gather(
                *(store.aput((tenants[n % 4], "kim"), f"k{n}", {"text": str(n)}) for n in range(40))
            )

        asyncio.run(tasks())
        notes = [f.value["text"] for t in tenants for f in store.history(t, "kim", "note")]
        assert sorted(notes) == sorted(f"{w} {n}" for w in range(8) for n in range(10))
        for n in range(40):
            assert store.get((tenants[n % 4], "kim"), f"k{n}").value == {"text": str(n)}

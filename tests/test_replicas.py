"""Several LangGraph server replicas on one PostgreSQL database (issue 28, part 2).

Three `langgraph dev` processes on loopback share one database through SGAM_PG_URI
(tests/replicas.py), started at once on a database without our schema or extensions, so
their `setup()` calls race. `langgraph_sdk` clients then drive them all at once, each
phase bounded in time:

- puts on keys every replica writes, and on each client's own keys, each read back
  through another replica as soon as it is acknowledged (get, and search by filter);
- agent runs that write memory on every replica: the hot-path `remember` tool, and the
  background manager that each turn schedules on its replica (scripted models);
- the same puts while one replica is killed with SIGKILL (its whole process group).

Afterwards the ledger, read through SGAMStore on the same database, must hold every
acknowledged write, one open fact per key, and no overlapping believed versions.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from graphs.scheduling import memory_thread_id
from graphs.scripted import ScriptedChatModel, to_message
from sgam_store import Fact, ReviewReport, SGAMStore, resolve_supersessions
from sgam_store.managers.supersession import REVIEWED_ELSEWHERE
from sgam_store.tools import MemoryScope
from tests import pg
from tests.conftest import HashEmbeddings
from tests.replicas import Replica, replicas

pytest.importorskip("langgraph_api")
langgraph_sdk = pytest.importorskip("langgraph_sdk")
pytestmark = pytest.mark.slow

TENANT = "acme"  # the agents' tenant
OPS = "ops"  # the store traffic's tenant: its puts of new keys queue a supersession
# review, which the agents' managers (reviewing their own tenant) must not see
SHARED_KEYS = ("tone", "city", "plan")  # every replica writes them, in each phase's subject
CLIENTS_PER_REPLICA = 3
PHASE_SECONDS = 4.0  # each load phase; the whole module stays well under two minutes
REQUEST_TIMEOUT = 20.0
RUNS_PER_REPLICA = 4  # agent turns per replica, half written on the hot path
VALID_FROM = "2026-06-01T09:00:00Z"


# ---------------------------------------------------------------- scripted agent turns


def turn_name(replica: int, n: int) -> str:
    return f"r{replica}-t{n}"


def said(replica: int, n: int) -> str:
    return f"My topic {replica}.{n} is value-{replica}-{n}."


def topic(replica: int, n: int) -> str:
    return f"topic_{replica}_{n}"


def hot_path(n: int) -> bool:
    """Even turns call `remember` themselves; odd ones leave the fact to the manager."""
    return n % 2 == 0


def turn_scripts(replica: int, n: int) -> dict[str, list[dict[str, Any]]]:
    """The agent's and the extraction model's replies for one turn (own names: turns on one
    replica run at once, and a scripted model replays its replies in call order)."""
    fact = {"attribute": topic(replica, n), "value": f"value-{replica}-{n}"}
    if hot_path(n):
        remember = {"name": "remember", "args": {**fact, "evidence": said(replica, n)}}
        agent = [{"tool_calls": [remember]}, {"content": "Noted."}]
        updates: list[dict[str, Any]] = []  # the hot path already wrote it
    else:
        agent = [{"content": "Noted."}]
        updates = [
            {
                **fact,
                "evidence": said(replica, n),
                "subject": "mira",
                "current_value": None,
                "change": "new",
                "valid_from": VALID_FROM,
            }
        ]
    extract = [{"tool_calls": [{"name": "MemoryUpdates", "args": {"updates": updates}}]}]
    name = turn_name(replica, n)
    return {f"agent-{name}": agent, f"extract-{name}": extract}


def all_scripts(count: int) -> dict[str, list[dict[str, Any]]]:
    scripts: dict[str, list[dict[str, Any]]] = {}
    for replica in range(count):
        for n in range(RUNS_PER_REPLICA):
            scripts.update(turn_scripts(replica, n))
    return scripts


# ---------------------------------------------------------------- the cluster


@dataclass
class Cluster:
    uri: str
    replicas: list[Replica]


def bare_database() -> str:
    """A new database from template0: no extensions and no schema, so the replicas'
    `setup()` calls race on everything they create."""
    import psycopg

    name = "r_" + uuid.uuid4().hex[:16]
    with psycopg.connect(pg.base_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
    return pg.with_database(pg.base_uri(), name)


@pytest.fixture(scope="module")
def cluster(pg_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    uri = bare_database()
    workdir = tmp_path_factory.mktemp("replicas")
    with replicas(3, uri, workdir, scripts=all_scripts(3)) as started:
        yield Cluster(uri, started)


def client(replica: Replica) -> Any:
    return langgraph_sdk.get_client(url=replica.url, timeout=REQUEST_TIMEOUT)


# ---------------------------------------------------------------- store traffic


@dataclass
class Put:
    """One put: where it went, and what another replica answered right after its ack."""

    namespace: tuple[str, str]
    key: str
    value: dict[str, Any]
    acked: bool = False
    read_back: dict[str, Any] | None = None  # get through another replica
    found: list[str] | None = None  # keys a filter search through another replica found


@dataclass
class Traffic:
    """One phase's puts and client errors; its shared keys live under their own subject."""

    shared: tuple[str, str]
    puts: list[Put] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def subjects(self) -> set[str]:
        return {self.shared[1]} | {p.namespace[1] for p in self.puts}


async def writer(
    name: str, write: Replica, read: Replica, deadline: float, traffic: Traffic
) -> None:
    """Put through `write`, then read through `read`, until the deadline or a first error."""
    async with client(write) as w, client(read) as r:
        seq = 0
        while time.monotonic() < deadline:
            seq += 1
            own = seq % 2 == 1
            namespace = (OPS, name) if own else traffic.shared
            key = f"k{seq}" if own else SHARED_KEYS[seq % len(SHARED_KEYS)]
            value = {"text": f"note {seq} from {name}", "writer": name, "seq": seq}
            put = Put(namespace, key, value)
            traffic.puts.append(put)
            try:
                await w.store.put_item(namespace, key=key, value=value)
                put.acked = True
                put.read_back = (await r.store.get_item(namespace, key=key) or {}).get("value")
                if own:
                    hits = await r.store.search_items(
                        [OPS], filter={"writer": name, "seq": seq}, limit=5
                    )
                    put.found = [item["key"] for item in hits["items"]]
                else:
                    await r.store.search_items([OPS], query=f"note from {name}", limit=10)
            except Exception as error:  # every error is a finding; the caller decides
                traffic.errors.append(f"{name} via {write.index}/{read.index}: {error!r}")
                return


async def drive(pairs: list[tuple[Replica, Replica]], seconds: float, traffic: Traffic) -> None:
    """CLIENTS_PER_REPLICA writers per (write, read) pair, all at once, for `seconds`."""
    deadline = time.monotonic() + seconds
    writers = [
        writer(f"w{write.index}c{c}-{uuid.uuid4().hex[:6]}", write, read, deadline, traffic)
        for write, read in pairs
        for c in range(CLIENTS_PER_REPLICA)
    ]
    await asyncio.wait_for(asyncio.gather(*writers), timeout=seconds + 2 * REQUEST_TIMEOUT)


# ---------------------------------------------------------------- the ledger afterwards


def believed(uri: str, tenant: str) -> dict[tuple[str, str], list[Fact]]:
    """Every believed version of every key of `tenant`, by (subject, attribute), in
    valid-time order."""
    with SGAMStore.from_conn_string(uri) as store:
        facts = store.ledger(tenant)
    keys: dict[tuple[str, str], list[Fact]] = defaultdict(list)
    for fact in facts:
        keys[(fact.subject, fact.attribute)].append(fact)
    return {k: sorted(v, key=lambda f: f.valid_from) for k, v in keys.items()}


def assert_intervals_hold(keys: dict[tuple[str, str], list[Fact]]) -> None:
    """One open fact per key, and believed versions that never overlap in valid time."""
    for key, versions in keys.items():
        assert sum(f.valid_to is None for f in versions) <= 1, key
        for older, newer in itertools.pairwise(versions):
            assert older.valid_to is not None and older.valid_to <= newer.valid_from, key


def assert_no_acknowledged_put_lost(traffic: Traffic, uri: str) -> None:
    """Every acknowledged put is a believed version of its key; every version is a put
    that was sent; and what another replica read right after the ack was that version
    or a later one of the same key (read-your-writes across replicas)."""
    keys = believed(uri, OPS)
    assert_intervals_hold(keys)
    sent = {(p.namespace[1], p.key, p.value["seq"], p.value["writer"]) for p in traffic.puts}
    for (subject, attribute), versions in keys.items():
        if subject not in traffic.subjects():
            continue  # another phase's keys
        for f in versions:
            assert (subject, attribute, f.value["seq"], f.value["writer"]) in sent
    acked = [p for p in traffic.puts if p.acked]
    assert acked, "no put was acknowledged"
    for put in acked:
        values = [f.value for f in keys[(put.namespace[1], put.key)]]
        assert put.value in values, f"acknowledged put lost: {put}"
        if put.read_back is None and put.found is None:
            continue  # acknowledged, then its replica died before the read went out
        assert put.read_back in values, f"read back a value never written: {put}"
        assert values.index(put.read_back) >= values.index(put.value), f"stale read: {put}"
        if put.found is not None:  # the client's own key: nobody else writes it
            assert put.found == [put.key], f"search through another replica missed: {put}"


# ---------------------------------------------------------------- the tests


def test_replicas_started_at_once_on_a_bare_database_all_come_up_with_one_schema(
    cluster: Cluster,
) -> None:
    assert all(r.alive() for r in cluster.replicas)
    for replica in cluster.replicas:
        log = replica.log.read_text(errors="replace")
        assert "Traceback" not in log, replica.log_tail()
    import psycopg

    with psycopg.connect(cluster.uri) as conn:
        extensions = {n for (n,) in conn.execute("SELECT extname FROM pg_extension").fetchall()}
        assert {"vector", "btree_gist"} <= extensions
        version = conn.execute("SELECT value FROM sgam.sgam_meta WHERE key = 'schema_version'")
        assert len(version.fetchall()) == 1


def test_puts_on_shared_keys_are_read_back_through_another_replica_and_none_is_lost(
    cluster: Cluster,
) -> None:
    reps = cluster.replicas
    pairs = [(reps[i], reps[(i + 1) % len(reps)]) for i in range(len(reps))]
    traffic = Traffic(shared=(OPS, "shared-all-up"))
    asyncio.run(drive(pairs, PHASE_SECONDS, traffic))
    assert traffic.errors == []
    acked = Counter(p.value["writer"] for p in traffic.puts if p.acked)
    assert len(acked) == len(pairs) * CLIENTS_PER_REPLICA and min(acked.values()) >= 2
    shared = {p.key for p in traffic.puts if p.acked and p.namespace == traffic.shared}
    assert shared == set(SHARED_KEYS)  # the keys really were written through every replica
    writers_per_key = defaultdict(set)
    for p in traffic.puts:
        if p.namespace == traffic.shared:
            writers_per_key[p.key].add(p.value["writer"][:2])
    assert all(len(w) == len(reps) for w in writers_per_key.values())
    assert_no_acknowledged_put_lost(traffic, cluster.uri)


async def agent_turn(replica: Replica, n: int) -> tuple[str, str]:
    """One agent turn on `replica`; returns (its thread, the memory thread of its manager)."""
    name = turn_name(replica.index, n)
    context = {
        "tenant_id": TENANT,
        "user_id": "mira",
        "model": f"scripted:agent-{name}",
        "memory_model": f"scripted:extract-{name}",
        "memory_delay_seconds": 0,
    }
    message = {"role": "user", "content": said(replica.index, n), "id": f"m-{name}"}
    async with client(replica) as c:
        thread = (await c.threads.create())["thread_id"]
        out = await c.runs.wait(thread, "agent", input={"messages": [message]}, context=context)
    assert out["messages"][-1]["content"] == "Noted.", out
    return thread, memory_thread_id(MemoryScope(TENANT, "mira", thread))


async def manager_settled(replica: Replica, memory_thread: str) -> bool:
    async with client(replica) as c:
        try:
            runs = await c.runs.list(memory_thread)
        except langgraph_sdk.errors.NotFoundError:
            return False  # the agent's submission has not created the thread yet
    return bool(runs) and all(r["status"] == "success" for r in runs)


async def agents_on_every_replica(reps: list[Replica]) -> list[tuple[Replica, str, str]]:
    turns = [(r, n) for r in reps for n in range(RUNS_PER_REPLICA)]
    threads = await asyncio.gather(*(agent_turn(r, n) for r, n in turns))
    deadline = time.monotonic() + 60
    for (replica, _), (_, memory_thread) in zip(turns, threads, strict=True):
        while not await manager_settled(replica, memory_thread):
            assert time.monotonic() < deadline, f"manager run on {replica.index} not done"
            await asyncio.sleep(0.25)
    return [(r, str(n), thread) for (r, n), (thread, _) in zip(turns, threads, strict=True)]


def test_agent_turns_and_background_managers_on_every_replica_write_memory_once(
    cluster: Cluster,
) -> None:
    reps = cluster.replicas
    done = asyncio.run(asyncio.wait_for(agents_on_every_replica(reps), timeout=90))
    with SGAMStore.from_conn_string(cluster.uri) as store:
        for replica, n, thread in done:
            versions = store.history(TENANT, "mira", topic(replica.index, int(n)))
            assert [f.value for f in versions] == [f"value-{replica.index}-{n}"]
            said_by = store.who_said(versions[0])
            assert (said_by.content, said_by.thread_id) == (said(replica.index, int(n)), thread)

    async def read_elsewhere() -> None:  # each turn's fact, through the next replica
        for replica, n, _ in done:
            other = reps[(replica.index + 1) % len(reps)]
            async with client(other) as c:
                item = await c.store.get_item((TENANT, "mira"), key=topic(replica.index, int(n)))
            assert item["value"] == {"value": f"value-{replica.index}-{n}"}

    asyncio.run(read_elsewhere())
    assert_intervals_hold(believed(cluster.uri, TENANT))


def test_killing_one_replica_mid_run_loses_no_acknowledged_write(cluster: Cluster) -> None:
    survivors, victim = cluster.replicas[:2], cluster.replicas[2]
    pairs = [(survivors[0], survivors[1]), (survivors[1], survivors[0]), (victim, survivors[0])]
    traffic = Traffic(shared=(OPS, "shared-kill"))

    async def run() -> None:
        load = asyncio.create_task(drive(pairs, PHASE_SECONDS, traffic))
        await asyncio.sleep(PHASE_SECONDS / 2)
        await asyncio.to_thread(victim.kill)
        await load

    asyncio.run(run())
    assert not victim.alive()
    victims = [e for e in traffic.errors if e.startswith(f"w{victim.index}")]
    assert traffic.errors == victims  # the survivors' clients saw no error
    assert len(victims) == CLIENTS_PER_REPLICA  # each of the victim's clients lost its link
    victim_acked = [p for p in traffic.puts if p.acked and p.value["writer"].startswith("w2")]
    assert victim_acked, "the victim acknowledged nothing before it was killed"
    assert_no_acknowledged_put_lost(traffic, cluster.uri)


# ---------------------------------------------------------------- concurrent reviews


def test_two_replicas_reviewing_one_tenant_at_once_both_finish(pg_server: str) -> None:
    """Two stores on one database, as two replicas hold, run the supersession review of
    one tenant at the same moment (each inside a one-second model call): one applies, the
    other finds its memory reviewed and says so, and neither run fails."""
    uri = pg.fresh_database()
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    verdict = {"candidate": 1, "decision": "supersedes", "reason": "she moved"}
    reply = {"tool_calls": [{"name": "SupersessionVerdicts", "args": {"verdicts": [verdict]}}]}
    with (
        SGAMStore.from_conn_string(uri, index=index) as first,
        SGAMStore.from_conn_string(uri, index=index) as second,
    ):
        first.setup()
        second.setup()
        first.put(("rv", "mira"), "home", {"text": "Mira lives in Lisbon"})
        second.put(("rv", "mira"), "city", {"text": "Mira lives in Porto now"})

        def review(store: SGAMStore) -> ReviewReport:
            model = ScriptedChatModel(replies=[to_message(reply)], seconds=[1.0])
            return resolve_supersessions(store, model, tenant_id="rv")

        with ThreadPoolExecutor(2) as pool:
            reports = [f.result() for f in [pool.submit(review, s) for s in (first, second)]]
        assert sum(len(r.superseded) for r in reports) == 1
        reasons = [d.reason for r in reports for d in r.dismissals]
        assert reasons.count(REVIEWED_ELSEWHERE) == 1, reasons
        (old,) = [f for f in first.history("rv", "mira", "home") if f.valid_to is not None]
        assert old.valid_to == first.fact_at("rv", "mira", "city").valid_from

"""What the PostgreSQL engine adds or must hold on its own: the database enforces the
interval rule, set-up is safe from several processes, foreign or mismatched schemas are
refused, and what PostgreSQL cannot store is refused with a typed error.

The store contract itself runs on both engines in the other modules (`ENGINES`)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp
from langgraph.store.postgres import PostgresStore

from sgam_store import (
    ConfigurationError,
    ForeignDatabaseError,
    InvalidFactError,
    SGAMStore,
    StoreBusyError,
)
from sgam_store.engines.postgres import migrations
from tests import pg
from tests.db import rows, scalar

from .conftest import HashEmbeddings

ENGINES = ("sqlite", "postgres")


@pytest.fixture
def uri(pg_server: str) -> str:
    return pg.fresh_database()


def sql(uri: str, statement: str, params: Any = None) -> list[tuple]:
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SET search_path TO sgam, public")
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def test_the_database_refuses_overlapping_and_second_open_versions(uri: str) -> None:
    with SGAMStore.from_conn_string(uri) as store:
        store.put(("acme", "mira"), "deadline", {"value": "2026-06-30"})
        store.put(("acme", "mira"), "deadline", {"value": "2026-07-15"})
    copy_open = (
        "INSERT INTO facts (row_id, fact_id, tenant_id, namespace, subject, attribute, value, "
        "scalar, memory_type, schema_version, valid_from, valid_to, recorded_at, known_from, "
        "created_at, source_episode_id) SELECT row_id + 1000, fact_id + 1000, tenant_id, "
        "namespace, subject, attribute, value, scalar, memory_type, schema_version, {start}, "
        "NULL, recorded_at, known_from, created_at, source_episode_id FROM facts "
        "WHERE valid_to IS NULL AND known_to IS NULL"
    )
    with pytest.raises(psycopg.errors.UniqueViolation, match="facts_one_open"):
        sql(uri, copy_open.format(start="valid_from + interval '1 day'"))
    # A closed copy starting inside the open one's interval: the exclusion constraint.
    overlapping = copy_open.replace(
        "NULL, recorded_at", "valid_from + interval '2 days', recorded_at"
    )
    with pytest.raises(psycopg.errors.ExclusionViolation, match="facts_no_overlap"):
        sql(uri, overlapping.format(start="valid_from + interval '1 day'"))
    with pytest.raises(psycopg.errors.CheckViolation):
        sql(uri, "UPDATE facts SET valid_to = valid_from WHERE valid_to IS NULL")
    assert sql(uri, "SELECT count(*) FROM facts") == [(3,)]  # nothing landed


def test_setup_from_several_processes_at_once_migrates_once(uri: str) -> None:
    script = (
        "import sys\n"
        "from sgam_store import SGAMStore\n"
        "from tests.conftest import HashEmbeddings\n"
        "index = {'dims': 8, 'embed': HashEmbeddings(8), 'fields': ['text']}\n"
        "with SGAMStore.from_conn_string(sys.argv[1], index=index) as s:\n"
        "    s.setup()\n"
        "    s.put(('acme', sys.argv[2]), 'k', {'text': 'hello'})\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, uri, f"p{i}"], stderr=subprocess.PIPE)
        for i in range(4)
    ]
    errors = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    assert sql(uri, "SELECT value FROM sgam_meta WHERE key = 'schema_version'") == [
        (str(migrations.LATEST),)
    ]
    assert sql(uri, "SELECT count(*) FROM facts") == [(4,)]
    assert sql(uri, "SELECT count(*) FROM fact_vectors") == [(4,)]


def test_a_version_1_schema_is_upgraded_in_place_with_its_facts(uri: str) -> None:
    with SGAMStore.from_conn_string(uri) as store:
        store.put(("acme", "mira"), "pet", {"kind": "cat"})
    sql(uri, "DROP INDEX facts_tenant_doc")  # what v2, v3, v4 and v5 added
    sql(uri, "DROP TABLE supersession_queue, supersession_decisions")
    sql(uri, "DROP INDEX facts_changes, facts_withdrawn, facts_superseders")
    sql(uri, "DROP INDEX facts_current_count")
    sql(uri, "UPDATE sgam_meta SET value = '1' WHERE key = 'schema_version'")
    with SGAMStore.from_conn_string(uri) as store:
        store.setup()
        assert [i.key for i in store.search(("acme",), filter={"kind": "cat"})] == ["pet"]
    assert sql(uri, "SELECT count(*) FROM pg_indexes WHERE indexname = 'facts_tenant_doc'") == [
        (1,)
    ]
    assert sql(uri, "SELECT value FROM sgam_meta WHERE key = 'schema_version'") == [
        (str(migrations.LATEST),)
    ]


def test_a_schema_holding_langgraphs_tables_is_refused_untouched(uri: str) -> None:
    with PostgresStore.from_conn_string(uri) as lg:
        lg.setup()
        lg.put(("acme",), "k", {"v": 1})
    before = sql(
        uri, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
    )
    with (
        pytest.raises(ForeignDatabaseError, match="PostgresStore"),
        SGAMStore.from_conn_string(uri, schema="public") as store,
    ):
        store.setup()
    after = sql(
        uri, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
    )
    assert sorted(after) == sorted(before)
    # Beside them, in its own schema (the default), SGAM works.
    with SGAMStore.from_conn_string(uri) as store:
        store.put(("acme",), "k", {"v": 2})
        assert store.get(("acme",), "k").value == {"v": 2}
    with PostgresStore.from_conn_string(uri) as lg:
        assert lg.get(("acme",), "k").value == {"v": 1}


def test_options_that_cannot_work_are_refused(uri: str) -> None:
    with pytest.raises(ConfigurationError, match="schema"):
        SGAMStore(uri, schema="Robert'); DROP TABLE facts;--")
    with SGAMStore.from_conn_string(uri, retrieval={"language": "english"}) as store:
        store.put(("acme",), "k", {"v": "keywords now exist"})
    with (
        pytest.raises(ConfigurationError, match="english"),
        SGAMStore.from_conn_string(uri, retrieval={"language": "spanish"}) as store,
    ):
        store.setup()
    with pytest.raises(TypeError, match="schema"):
        SGAMStore(":memory:", schema="sgam")  # a PostgreSQL option on SQLite


def test_a_nul_character_is_refused_with_a_typed_error_and_nothing_written(uri: str) -> None:
    with SGAMStore.from_conn_string(uri) as store:
        with pytest.raises(InvalidFactError, match="NUL"):
            store.put(("acme", "mira"), "note", {"text": "a\x00b"})
        assert store.get(("acme", "mira"), "note") is None
        assert scalar(store, "SELECT count(*) FROM facts") == 0
        store.put(("acme", "mira"), "note", {"text": "a\\u0000b"})  # the six characters
        assert store.get(("acme", "mira"), "note").value == {"text": "a\\u0000b"}
        assert store.search(("acme",), filter={"text": "a\x00b"}) == []


def test_a_tenant_scoped_vector_search_fills_its_page(target: str) -> None:
    """Many tenants, one vector index: each tenant's search still returns a full page of
    its own facts (an index walk that post-filters by tenant would come back short)."""
    index = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    tenants = [f"t{i:02d}" for i in range(30)]
    with SGAMStore.from_conn_string(target, index=index, retrieval={"mode": "vector"}) as store:
        store.setup()
        for tenant in tenants:
            store.batch(
                [
                    PutOp((tenant, "u"), f"k{j}", {"text": f"{tenant} note {j} about travel"})
                    for j in range(40)
                ]
            )
        for tenant in tenants:
            hits = store.search((tenant,), query="a note about travel", limit=10)
            assert len(hits) == 10, tenant
            assert {h.namespace[0] for h in hits} == {tenant}
        assert len(rows(store, "SELECT fact_id FROM facts")) == 30 * 40


def test_a_server_restart_under_an_open_pool_is_survived(uri: str) -> None:
    with SGAMStore.from_conn_string(uri) as store:
        store.put(("acme", "mira"), "city", {"text": "Lima"})
        if not pg.restart():
            pytest.skip("SGAM_TEST_PG_URI names an outside server; it is not restarted")
        store.put(("acme", "mira"), "city", {"text": "Quito"})  # the pool reconnects
        assert store.get(("acme", "mira"), "city").value == {"text": "Quito"}
        assert [f.value for f in store.history("acme", "mira", "city")] == [
            {"text": "Lima"},
            {"text": "Quito"},
        ]


@pytest.fixture
def few_locks(uri: str) -> Iterator[str]:
    """The server restarted with a small lock table: 10 x 20 connections (default 64 x 100),
    which 2,000 key locks overflowed (measured)."""
    with psycopg.connect(pg.base_uri(), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET max_locks_per_transaction = 10")
        conn.execute("ALTER SYSTEM SET max_connections = 20")
    if not pg.restart():
        pytest.skip("SGAM_TEST_PG_URI names an outside server; it is not reconfigured")
    try:
        yield uri
    finally:
        with psycopg.connect(pg.base_uri(), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM RESET max_locks_per_transaction")
            conn.execute("ALTER SYSTEM RESET max_connections")
        pg.restart()


def test_a_tenant_of_more_keys_than_the_lock_table_holds_is_purged(few_locks: str) -> None:
    with SGAMStore.from_conn_string(few_locks, pool_size=2) as store:
        store.setup()
        assert scalar(store, "SHOW max_locks_per_transaction") == "10"
        for start in range(0, 2500, 250):  # 2,500 keys: a lock each would overflow
            store.batch(
                [PutOp(("acme", f"s{n}"), "k", {"n": n}) for n in range(start, start + 250)]
            )
        store.put(("beta", "s0"), "k", {"n": 0})
        with pytest.raises(StoreBusyError, match="split the batch"):  # one batch: 2,500 locks
            store.batch([PutOp(("gamma", f"s{n}"), "k", {"n": n}) for n in range(2500)])
        assert store.search(("gamma",)) == []
        report = store.purge("acme")
        assert len(report.fact_ids) == 2500
        assert store.search(("acme",)) == [] and store.get(("beta", "s0"), "k") is not None


def test_a_purge_racing_writers_never_brings_erased_versions_back(uri: str) -> None:
    with SGAMStore.from_conn_string(uri) as store:
        store.setup()
        stop = threading.Event()

        def write(worker: int) -> None:
            n = 0
            while not stop.is_set():
                store.batch(
                    [PutOp(("acme", f"s{k}"), "k", {"w": worker, "n": n}) for k in range(5)]
                )
                n += 1

        threads = [threading.Thread(target=write, args=(w,)) for w in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        started = datetime.now(UTC)
        store.purge("acme")
        time.sleep(0.3)
        stop.set()
        for t in threads:
            t.join()
        survivors = rows(store, "SELECT known_from FROM facts WHERE tenant_id = 'acme'")
        assert survivors, "writers kept writing after the purge"
        assert all(datetime.fromisoformat(k) > started for (k,) in survivors)

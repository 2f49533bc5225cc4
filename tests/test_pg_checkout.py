"""The PostgreSQL pool checks a connection at checkout without a round trip, and still
replaces one the server closed (`connection.check_quietly`), and query vectors travel in
pgvector's binary form (`connection.BinaryVector`) with the same distances as text."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest
from psycopg_pool import ConnectionPool

from sgam_store import SGAMStore
from sgam_store.engines.postgres import connection
from tests import pg


@pytest.fixture
def store(pg_server: str) -> Iterator[SGAMStore]:
    with SGAMStore.from_conn_string(pg.fresh_database(), pool_size=1) as s:
        s.setup()
        s.put(("acme", "mira"), "city", {"text": "Lima"})
        yield s


@pytest.fixture
def empty_queries(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every call of the pool's own check (the empty query), recorded."""
    calls: list[object] = []
    real = ConnectionPool.check_connection

    def counted(conn: psycopg.Connection) -> None:
        calls.append(conn)
        real(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted))
    return calls


def backend_pid(store: SGAMStore) -> int:
    with store.engine.pool.connection() as conn:
        return conn.info.backend_pid


def test_an_idle_healthy_connection_is_checked_out_without_a_round_trip(
    store: SGAMStore, empty_queries: list[object]
) -> None:
    for _ in range(20):
        assert store.get(("acme", "mira"), "city").value == {"text": "Lima"}
    assert empty_queries == []


def test_a_connection_the_server_closed_is_replaced_at_checkout(
    store: SGAMStore, empty_queries: list[object]
) -> None:
    pid = backend_pid(store)
    with psycopg.connect(pg.base_uri(), autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
    time.sleep(0.2)  # the server's notice and end of stream reach the socket
    assert store.get(("acme", "mira"), "city").value == {"text": "Lima"}  # no error
    assert len(empty_queries) == 1  # the pool's check ran, failed, and a new one served
    assert backend_pid(store) != pid


def test_a_binary_query_vector_gives_the_texts_distances(store: SGAMStore) -> None:
    floats = np.random.default_rng(3).standard_normal(384).astype(np.float32)
    text = "[" + ",".join(map(repr, floats.tolist())) + "]"
    binary = connection.BinaryVector.of(floats.tobytes())
    with store.engine.pool.connection() as conn:
        same = conn.execute("SELECT %s::vector = %s::vector", (binary, text)).fetchone()
        d = conn.execute("SELECT %s::vector <=> %s::vector", (binary, text)).fetchone()
    assert same == (True,) and d == (0.0,)

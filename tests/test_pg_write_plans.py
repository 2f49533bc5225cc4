"""A put's key lookups on PostgreSQL are planned for their parameters on every call,
never kept as a prepared statement's generic plan (`Dialect.execute_planned`).

A prepared statement keeps the generic plan PostgreSQL built after its fifth run until the
next ANALYZE. Built while `facts` was nearly empty, that plan scans the table: right after
20k facts were loaded, a single put's key lookups took 11.3 and 2.9 ms instead of 0.46
and 0.43 (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sgam_store import SGAMStore
from tests import pg

KEY_LOOKUPS = ("WITH k(ns, attr) AS", "SELECT MAX(f.known_from) FROM unnest")


@pytest.fixture
def store(pg_server: str) -> Iterator[SGAMStore]:
    with SGAMStore.from_conn_string(pg.fresh_database(), pool_size=1) as s:
        s.setup()
        yield s


def prepared(store: SGAMStore) -> list[str]:
    """The statements the store's one pooled connection holds prepared."""
    with store.engine.pool.connection() as conn:
        return [row[0] for row in conn.execute("SELECT statement FROM pg_prepared_statements")]


def test_key_lookups_are_never_prepared_while_other_statements_are(store: SGAMStore) -> None:
    for i in range(12):  # past psycopg's prepare_threshold (5), on a nearly empty table
        store.put(("acme", "mira"), f"k{i % 3}", {"text": f"value {i}"})
        assert store.get(("acme", "mira"), f"k{i % 3}").value == {"text": f"value {i}"}
    statements = prepared(store)
    assert statements, "the connection prepares statements at all"
    assert [s for s in statements if any(k in s for k in KEY_LOOKUPS)] == []


def test_history_is_kept_when_lookups_are_planned_per_call(store: SGAMStore) -> None:
    for i in range(8):
        store.put(("acme", "mira"), "city", {"text": f"city {i}"})
    versions = store.history("acme", "mira", "city")
    assert [v.value for v in versions][-1] == {"text": "city 7"}
    assert len(versions) == 8

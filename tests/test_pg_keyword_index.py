"""The PostgreSQL keyword index keeps no pending list (schema v8, `fastupdate = off`).

GIN's pending list holds new rows' entries unsorted until a vacuum, and every keyword
statement reads all of it: in a freshly loaded database a tenant's keyword step and each
common-term count took milliseconds more. These tests read the index as the server
reports it (pgstattuple's `pgstatginindex`).
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from sgam_store import SGAMStore
from sgam_store.engines.postgres import migrations
from tests import pg

from .conftest import HashEmbeddings


@pytest.fixture
def uri(pg_server: str) -> str:
    return pg.fresh_database()


def sql(uri: str, statement: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SET search_path TO sgam, public")
        cur = conn.execute(statement)
        return cur.fetchall() if cur.description else []


def fastupdate(uri: str) -> list[str] | None:
    return sql(uri, "SELECT reloptions FROM pg_class WHERE relname = 'fact_keywords_tsv'")[0][0]


def pending_pages(uri: str) -> int:
    """The index's pending-list pages, read without moving them (pgstattuple)."""
    sql(uri, "CREATE EXTENSION IF NOT EXISTS pgstattuple SCHEMA public")
    return sql(uri, "SELECT pending_pages FROM pgstatginindex('fact_keywords_tsv'::regclass)")[0][0]


def put_notes(uri: str, n: int, start: int = 0) -> None:
    index = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    with SGAMStore.from_conn_string(uri, index=index) as store:
        store.setup()
        for i in range(start, start + n):
            store.put(("acme", f"u{i % 7}"), f"k{i}", {"text": f"passport renewal note {i}"})


def test_new_keyword_rows_go_straight_into_the_index(uri: str) -> None:
    put_notes(uri, 300)
    assert fastupdate(uri) == ["fastupdate=off"]
    assert pending_pages(uri) == 0


def test_a_version_7_index_with_a_pending_list_is_upgraded_and_emptied(uri: str) -> None:
    put_notes(uri, 10)
    sql(uri, "ALTER INDEX fact_keywords_tsv RESET (fastupdate)")  # as v7 built it
    put_notes(uri, 300, start=10)
    assert pending_pages(uri) > 0  # entries left in the pending list
    sql(uri, "UPDATE sgam_meta SET value = '7' WHERE key = 'schema_version'")
    put_notes(uri, 0)  # setup() migrates
    assert sql(uri, "SELECT value FROM sgam_meta WHERE key = 'schema_version'") == [
        (str(migrations.LATEST),)
    ]
    assert fastupdate(uri) == ["fastupdate=off"]
    assert pending_pages(uri) == 0  # the migration moved them
    with SGAMStore.from_conn_string(uri) as store:
        found = store.search(("acme",), query="passport 250", limit=400)
    assert len(found) == 310


def test_a_language_change_rebuilds_the_index_without_a_pending_list(uri: str) -> None:
    put_notes(uri, 20)
    with SGAMStore.from_conn_string(uri) as store:
        assert store.set_language("simple") == 20
    assert sql(uri, "SELECT value FROM sgam_meta WHERE key = 'text_search_config'") == [("simple",)]
    assert fastupdate(uri) == ["fastupdate=off"]

"""PostgreSQL's vector search is exact in every scope (`engines/postgres/reads.py`, issue 41).

Memory text repeats: many users tell an agent the same sentence, and equal texts have
equal vectors. An HNSW walk that meets a large group of copies stays among them (their
links point at each other), so it missed the true neighbours beside them. These tests
build that shape on a real server: hundreds of copies of one text across tenants, a
tenant whose keys were rewritten many times (their superseded versions near the query),
and check each page against cosine similarity computed here. Before schema v10 a scope
larger than its `exact_max` was walked; the tests lower those limits where they exist,
so the old walk is what they would meet.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import psycopg
import pytest
from langgraph.store.base import PutOp

from sgam_store import SGAMStore
from sgam_store.core.errors import TenantScopeError
from sgam_store.engines.postgres import indexing, migrations, reads, roles
from tests import pg

from .conftest import HashEmbeddings

DIMS = 64
FLOOD = "the very same sentence that every user tells the agent"
FLOOD_TENANTS = [f"org{t}" for t in range(6)]
COPIES = 100  # of FLOOD in each flood tenant
TOPICS = ("travel plans", "billing for kubernetes", "lunch with the team", "hiring a designer")
QUERIES = ("kubernetes billing", "travel plans in june", "hiring", "team lunch")


def note(j: int) -> str:
    return f"acme note {j} on {TOPICS[j % len(TOPICS)]} and {TOPICS[j * 3 % 4]} draft {j % 7}"


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`vacuum()` trains all tenants' vector lists from 50 current vectors (one list per
    1,000, so one here); the list statements built (the real ones, recorded on their
    way) are returned."""
    monkeypatch.setattr(indexing, "LISTS_MIN_ROWS", 50)
    built: list[str] = []
    real = reads._listed_sql

    def recorded(query: str) -> str:
        built.append(real(query))
        return built[-1]

    monkeypatch.setattr(reads, "_listed_sql", recorded)
    return built


def lists_of(uri: str) -> list[tuple[str]]:
    with psycopg.connect(uri, autocommit=True) as conn:
        return conn.execute(
            "SELECT indexname FROM pg_indexes WHERE indexname = 'fact_vectors_lists'"
        ).fetchall()


def open_store(uri: str, embedder: HashEmbeddings, mode: str = "vector") -> SGAMStore:
    index = {"dims": DIMS, "embed": embedder, "fields": ["text"]}
    return SGAMStore.from_conn_string(uri, index=index, retrieval={"mode": mode})


def load(store: SGAMStore, acme_keys: int, rewrites: int) -> dict[tuple[str, str], str]:
    """The flood across tenants, then acme's keys, each rewritten `rewrites` times with
    text near the queries before its current text: {(tenant, key): current text}."""
    current: dict[tuple[str, str], str] = {}
    flood = [
        PutOp((t, "people"), f"f{i}", {"text": FLOOD}) for t in FLOOD_TENANTS for i in range(COPIES)
    ]
    store.batch(flood)
    current.update({(op.namespace[0], op.key): FLOOD for op in flood})
    for r in range(rewrites):
        stale = [" ".join(QUERIES) + f" old {r}"] * acme_keys
        store.batch([PutOp(("acme", "notes"), f"k{j}", {"text": t}) for j, t in enumerate(stale)])
    store.batch([PutOp(("acme", "notes"), f"k{j}", {"text": note(j)}) for j in range(acme_keys)])
    current.update({("acme", f"k{j}"): note(j) for j in range(acme_keys)})
    return current


def best(embedder: HashEmbeddings, texts: dict[tuple[str, str], str], query: str) -> list[float]:
    """The ten best cosine similarities to `query` among `texts`, computed here."""
    docs = np.array(embedder.embed_documents(list(texts.values())))
    sims = docs @ np.array(embedder.embed_query(query))
    return sorted(sims.tolist(), reverse=True)[:10]


def check_page(hits: list[Any], texts: dict[tuple[str, str], str], want: list[float]) -> None:
    """A full page of current versions of the scope, at the exact ten best similarities."""
    assert len(hits) == len(want)
    for hit in hits:
        assert texts[(hit.namespace[0], hit.key)] == hit.value["text"]
    assert [h.score for h in hits] == pytest.approx(want, abs=1e-5)


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_all_tenants_search_finds_the_nearest_beside_a_flood_of_copies(
    pg_server: str, listed: list[str], mode: str
) -> None:
    """All tenants' search reads the trained lists (vector search and hybrid search's
    first step alike), and its page is the exact one."""
    embedder, uri = HashEmbeddings(DIMS), pg.fresh_database()
    with open_store(uri, embedder, mode) as store:
        store.setup()
        current = load(store, acme_keys=40, rewrites=0)
        store.vacuum()
        assert lists_of(uri) == [("fact_vectors_lists",)]
        for query in QUERIES:
            want = best(embedder, current, query)
            for _ in range(2):  # the first search sizes the scope; the second remembers it
                hits = store.search((), query=query, limit=10)
                if mode == "vector":
                    check_page(hits, current, want)
                else:  # hybrid search's first step scans the vectors too
                    assert len(hits) == 10
                    assert all(current[(h.namespace[0], h.key)] == h.value["text"] for h in hits)
    assert listed


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_a_tenants_page_is_its_current_versions_when_neighbours_are_not(
    pg_server: str, listed: list[str], mode: str
) -> None:
    """acme's 120 keys were each rewritten 3 times with the queries' own words, and 600
    copies of one text belong to other tenants: the nearest vectors in the table are
    superseded versions and other tenants'. acme's page is still its ten nearest current
    versions, in full."""
    embedder = HashEmbeddings(DIMS)
    with open_store(pg.fresh_database(), embedder, mode) as store:
        store.setup()
        current = load(store, acme_keys=120, rewrites=3)
        store.vacuum()  # the lists trained: a tenant's scope still scans exactly
        acme = {ref: text for ref, text in current.items() if ref[0] == "acme"}
        for query in QUERIES:
            hits = store.search(("acme",), query=query, limit=10)
            assert {h.namespace[0] for h in hits} == {"acme"}
            if mode == "vector":
                check_page(hits, acme, best(embedder, acme, query))
            else:
                assert len(hits) == 10
                assert all(acme[("acme", h.key)] == h.value["text"] for h in hits)


def test_a_version_9_vector_index_is_dropped_and_search_stays_exact(pg_server: str) -> None:
    """Schema v10 drops the HNSW index v9 built: no statement reads it, every write paid
    for it."""
    uri, embedder = pg.fresh_database(), HashEmbeddings(DIMS)
    with open_store(uri, embedder) as store:
        store.setup()
        current = load(store, acme_keys=20, rewrites=0)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SET search_path TO sgam, public")
        conn.execute(
            "CREATE INDEX fact_vectors_hnsw ON fact_vectors "
            "USING hnsw (embedding vector_cosine_ops) WHERE is_current"
        )
        conn.execute("UPDATE sgam_meta SET value = '9' WHERE key = 'schema_version'")
    with open_store(uri, embedder) as store:
        store.setup()
        check_page(
            store.search((), query="hiring", limit=10), current, best(embedder, current, "hiring")
        )
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SET search_path TO sgam, public")
        assert conn.execute(
            "SELECT value FROM sgam_meta WHERE key = 'schema_version'"
        ).fetchall() == [(str(migrations.LATEST),)]
        indexes = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'fact_vectors' ORDER BY 1"
        ).fetchall()
    assert indexes == [
        ("fact_vectors_fact",),
        ("fact_vectors_pkey",),
        ("fact_vectors_tenant",),
        ("fact_vectors_tenant_scan",),
    ]


def test_all_tenants_search_after_erasure_fresh_writes_and_in_the_past(
    pg_server: str, listed: list[str]
) -> None:
    """The all-tenant scope beside the flood, through the lists: a purged tenant's copies
    are found nowhere, a text written a moment ago is the next search's first hit, and a
    search in the past (exact: every version) ranks the versions believed then (acme's
    superseded texts)."""
    embedder = HashEmbeddings(DIMS)
    with open_store(pg.fresh_database(), embedder) as store:
        store.setup()
        load(store, acme_keys=20, rewrites=1)
        store.vacuum()
        stale = " ".join(QUERIES) + " old 0"
        # When the last key's stale version began, every key held its stale version.
        then = store.as_of(store.history("acme", "notes", "k19")[0].valid_from)
        assert [h.value["text"] for h in then.search((), query=stale, limit=10)] == [stale] * 10
        assert stale not in {h.value["text"] for h in store.search((), query=stale, limit=10)}
        for tenant in FLOOD_TENANTS[:-1]:
            store.purge(tenant)
        hits = store.search((), query=FLOOD, limit=COPIES + 10)
        assert {h.namespace[0] for h in hits if h.value["text"] == FLOOD} == {FLOOD_TENANTS[-1]}
        store.put(("newco", "people"), "fresh", {"text": "quarterly llama grooming schedule"})
        hits = store.search((), query="quarterly llama grooming schedule", limit=1)
    assert [(h.namespace, h.key, h.score) for h in hits] == [
        (("newco", "people"), "fresh", pytest.approx(1.0))
    ]
    assert listed


def test_only_all_tenants_current_search_reads_the_lists(pg_server: str, listed: list[str]) -> None:
    """A tenant's scan is fenced from the lists (partial on current rows, they could
    order it, approximately) even with sequential scans off; a point in time scans every
    version; a table under the minimum has no lists and scans exactly."""
    embedder, uri = HashEmbeddings(DIMS), pg.fresh_database()
    with open_store(uri, embedder) as store:
        store.setup()
        load(store, acme_keys=20, rewrites=1)
        store.vacuum()
        store.as_of(store.history("acme", "notes", "k19")[0].valid_from).search((), query="hiring")
        store.search(("acme",), query="hiring")
        assert listed == []
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("SET search_path TO sgam, public")
            conn.execute("SET enable_seqscan = off")
            sql = "EXPLAIN " + reads._nearest_sql("acme", True)
            plan = conn.execute(sql, ["[" + ",".join(["0.1"] * DIMS) + "]", "acme", 10])
            assert "fact_vectors_lists" not in str(plan.fetchall())
        for tenant in FLOOD_TENANTS:
            store.purge(tenant)
        store.vacuum()
        assert lists_of(uri) == []
        store.search((), query="hiring")
    assert listed == []


def test_lists_under_row_security(pg_server: str, listed: list[str]) -> None:
    """The owner's `vacuum()` trains the lists over every tenant's rows (row security
    binds the owner too); the application role's leaves them, and its tenant's search
    (the only scope it may take) scans exactly."""
    from tests.test_rls import as_role

    embedder, uri = HashEmbeddings(DIMS), pg.fresh_database()
    index = {"dims": DIMS, "embed": embedder, "fields": ["text"]}
    with SGAMStore.from_conn_string(uri, index=index, row_security=True) as owner:
        owner.setup()
        load(owner, acme_keys=20, rewrites=0)
        owner.vacuum()
        assert lists_of(uri) == [("fact_vectors_lists",)]
        role = "app_" + uuid.uuid4().hex[:12]
        roles.create_app_role(uri, role)
        with open_store(as_role(uri, role), embedder) as app:
            app.vacuum()
            hits = app.for_tenant("org1").search(("people",), query=FLOOD, limit=5)
            with pytest.raises(TenantScopeError):
                app.search((), query=FLOOD)
        assert lists_of(uri) == [("fact_vectors_lists",)]
        everywhere = owner.search((), query=FLOOD, limit=COPIES)
    assert [h.namespace for h in hits] == [("people",)] * 5  # relative to org1
    assert [h.value["text"] for h in everywhere] == [FLOOD] * COPIES
    assert listed

"""PostgreSQL's vector search (`engines/postgres/reads.py`, issue 41): exact in a tenant's
scope and at a point in time; across all tenants, in a large table, a walk over distinct
vectors (schema v11's heads), each expanded to the rows that hold it.

Memory text repeats: many users tell an agent the same sentence, and equal texts have
equal vectors. An HNSW walk over every row that meets a large group of copies stays among
them (their links point at each other), so it missed the true neighbours beside them.
These tests build that shape on a real server: hundreds of copies of one text across
tenants, a tenant whose keys were rewritten many times (their superseded versions near the
query), and check each page against cosine similarity computed here. The `walked` fixture
lowers the size from which all tenants' search walks, and the database is analyzed (the
walk goes by the table's counted size), so the walk is what they meet; the heads it walks
are checked through erasure, row security, history, fresh writes and the migration.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import numpy as np
import psycopg
import pytest
from langgraph.store.base import PutOp

from sgam_store import SGAMStore
from sgam_store.core.errors import TenantScopeError
from sgam_store.engines.postgres import migrations, reads, roles
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
def walked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """All tenants' search walks the heads past 50 vectors; the walk statements built
    (the real ones, recorded on their way) are returned."""
    monkeypatch.setattr(reads, "ALL_TENANTS_EXACT_MAX", 50)
    built: list[str] = []
    real = reads._walk_sql

    def recorded(query: str) -> str:
        built.append(real(query))
        return built[-1]

    monkeypatch.setattr(reads, "_walk_sql", recorded)
    return built


def analyze(uri: str) -> None:
    """The table's size counted, as autovacuum soon does after a load."""
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("ANALYZE sgam.fact_vectors")


def owner_rows(uri: str, sql: str) -> list[tuple[Any, ...]]:
    """`sql`'s rows, read by the server's superuser (no row security binds it)."""
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SET search_path TO sgam, public")
        return conn.execute(sql).fetchall()


def heads_per_vector(uri: str) -> Counter[tuple[int, int]]:
    """How many distinct vectors have (rows, heads)."""
    rows = owner_rows(
        uri, "SELECT count(*), count(*) FILTER (WHERE is_head) FROM fact_vectors GROUP BY digest"
    )
    return Counter(map(tuple, rows))


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
    pg_server: str, walked: list[str], mode: str
) -> None:
    """600 copies of one text are one head: the walk over heads, expanded, gives the exact
    page (hybrid search's first step walks as well)."""
    embedder, uri = HashEmbeddings(DIMS), pg.fresh_database()
    with open_store(uri, embedder, mode) as store:
        store.setup()
        current = load(store, acme_keys=40, rewrites=0)
        analyze(uri)
        copies = COPIES * len(FLOOD_TENANTS)
        assert heads_per_vector(uri) == Counter({(1, 1): 40, (copies, 1): 1})
        for query in QUERIES:
            hits = store.search((), query=query, limit=10)
            if mode == "vector":
                check_page(hits, current, best(embedder, current, query))
            else:
                assert len(hits) == 10
                assert all(current[(h.namespace[0], h.key)] == h.value["text"] for h in hits)
        flood = store.search((), query=FLOOD, limit=10)
    assert walked, "the searches walked the heads"
    assert [h.value["text"] for h in flood] == [FLOOD] * 10
    assert len({(h.namespace, h.key) for h in flood}) == 10  # ten rows of one head


def test_a_small_or_uncounted_table_and_a_tenant_scan_exactly(
    pg_server: str, walked: list[str]
) -> None:
    """Small scopes stay exact: a table never analyzed (its size unknown), a tenant's
    scope and a point in time never walk."""
    embedder, uri = HashEmbeddings(DIMS), pg.fresh_database()
    with open_store(uri, embedder) as store:
        store.setup()
        current = load(store, acme_keys=20, rewrites=1)
        store.search((), query="hiring", limit=10)  # not analyzed yet
        analyze(uri)
        acme = {ref: text for ref, text in current.items() if ref[0] == "acme"}
        want = best(embedder, acme, "hiring")
        check_page(store.search(("acme",), query="hiring", limit=10), acme, want)
        store.as_of(store.history("acme", "notes", "k0")[-1].valid_from).search((), query="hiring")
    assert walked == []


@pytest.mark.usefixtures("walked")
@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_a_tenants_page_is_its_current_versions_when_neighbours_are_not(
    pg_server: str, mode: str
) -> None:
    """acme's 120 keys were each rewritten 3 times with the queries' own words, and 600
    copies of one text belong to other tenants: the nearest vectors in the table are
    superseded versions and other tenants'. acme's page is still its ten nearest current
    versions, in full."""
    embedder = HashEmbeddings(DIMS)
    with open_store(pg.fresh_database(), embedder, mode) as store:
        store.setup()
        current = load(store, acme_keys=120, rewrites=3)
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
        ("fact_vectors_digest",),
        ("fact_vectors_fact",),
        ("fact_vectors_heads",),
        ("fact_vectors_pkey",),
        ("fact_vectors_tenant",),
    ]


def test_an_erased_head_hands_over_and_an_erased_vector_leaves(
    pg_server: str, walked: list[str]
) -> None:
    """org0 wrote the flood first, so its row is the text's head. Purged, org0 leaves no
    row; another tenant's copy becomes the head, and the walk still finds the copies. Once
    every copy is purged the text is stored nowhere and found nowhere."""
    embedder, uri = HashEmbeddings(DIMS), pg.fresh_database()
    with open_store(uri, embedder) as store:
        store.setup()
        load(store, acme_keys=20, rewrites=0)
        analyze(uri)
        head = owner_rows(uri, "SELECT tenant_id FROM fact_vectors WHERE is_head ORDER BY vec_id")
        assert head[0] == ("org0",)
        store.purge("org0")
        assert owner_rows(uri, "SELECT 1 FROM fact_vectors WHERE tenant_id = 'org0'") == []
        copies = COPIES * (len(FLOOD_TENANTS) - 1)
        assert heads_per_vector(uri) == Counter({(1, 1): 20, (copies, 1): 1})
        hits = store.search((), query=FLOOD, limit=10)
        assert [h.value["text"] for h in hits] == [FLOOD] * 10
        assert "org0" not in {h.namespace[0] for h in hits}
        store.purge("org3", "people")  # a subject: not the head's tenant
        for tenant in FLOOD_TENANTS[1:]:
            store.purge(tenant)
        assert heads_per_vector(uri) == Counter({(1, 1): 20})
        hits = store.search((), query=FLOOD, limit=10)
    assert walked
    assert {h.namespace[0] for h in hits} == {"acme"}


def test_a_write_is_found_by_the_next_walk(pg_server: str, walked: list[str]) -> None:
    """Read your writes: a new text is its own head at once, and a copy of the flood
    written after its head's tenant is purged is found by the next search."""
    embedder, uri = HashEmbeddings(DIMS), pg.fresh_database()
    with open_store(uri, embedder) as store:
        store.setup()
        load(store, acme_keys=20, rewrites=0)
        analyze(uri)
        store.put(("newco", "people"), "fresh", {"text": "quarterly llama grooming schedule"})
        hits = store.search((), query="quarterly llama grooming schedule", limit=1)
        assert [(h.namespace, h.key, h.score) for h in hits] == [
            (("newco", "people"), "fresh", pytest.approx(1.0))
        ]
        for tenant in FLOOD_TENANTS:
            store.purge(tenant)
        store.put(("newco", "people"), "again", {"text": FLOOD})
        hits = store.search((), query=FLOOD, limit=1)
    assert walked
    assert [(h.namespace, h.key) for h in hits] == [(("newco", "people"), "again")]


def test_history_is_searched_exactly_beside_the_walk(pg_server: str, walked: list[str]) -> None:
    """A point-in-time search reads every version exactly: acme's superseded texts are
    the nearest then, though the walk (current rows only) never returns them now."""
    embedder, uri = HashEmbeddings(DIMS), pg.fresh_database()
    with open_store(uri, embedder) as store:
        store.setup()
        load(store, acme_keys=20, rewrites=1)
        analyze(uri)
        stale = " ".join(QUERIES) + " old 0"
        # When the last key's stale version began, every key held its stale version.
        then = store.as_of(store.history("acme", "notes", "k19")[0].valid_from)
        then = then.search((), query=stale, limit=10)
        now = store.search((), query=stale, limit=10)
    assert walked
    assert [h.value["text"] for h in then] == [stale] * 10
    assert stale not in {h.value["text"] for h in now}


def test_a_confined_writer_elects_its_own_heads(pg_server: str) -> None:
    """Row security: a tenant's writer sees its own rows only, so a copy of a vector whose
    head is another tenant's becomes a head of its own (its row's flag tells it nothing
    of other tenants), and the tenant's search, exact, finds it; the owner's walk across
    tenants returns both tenants' copies."""
    from tests.test_rls import as_role

    embedder, uri = HashEmbeddings(DIMS), pg.fresh_database()
    with SGAMStore.from_conn_string(
        uri, index={"dims": DIMS, "embed": embedder, "fields": ["text"]}, row_security=True
    ) as owner:
        owner.setup()
        owner.batch([PutOp(("acme", "people"), f"a{i}", {"text": FLOOD}) for i in range(60)])
        role = "app_" + uuid.uuid4().hex[:12]
        roles.create_app_role(uri, role)
        with open_store(as_role(uri, role), embedder) as app:
            umbrella = app.for_tenant("umbrella")
            umbrella.put(("people",), "u0", {"text": FLOOD})
            hits = umbrella.search(("people",), query=FLOOD, limit=5)
            assert [(h.key, h.score) for h in hits] == [("u0", pytest.approx(1.0))]
            with pytest.raises(TenantScopeError):
                app.search((), query=FLOOD)
        assert owner_rows(uri, "SELECT tenant_id FROM fact_vectors WHERE is_head") == [
            ("acme",),
            ("umbrella",),
        ]
        analyze(uri)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(reads, "ALL_TENANTS_EXACT_MAX", 50)
            hits = owner.search((), query=FLOOD, limit=100)
    assert Counter(h.namespace[0] for h in hits) == {"acme": 60, "umbrella": 1}


def test_version_10_gains_heads_and_its_walk(pg_server: str, walked: list[str]) -> None:
    """Schema v11 on a v10 database: each stored vector's first row becomes its head, the
    indexes are built, and the walk finds what the exact scan did."""
    uri, embedder = pg.fresh_database(), HashEmbeddings(DIMS)
    with open_store(uri, embedder) as store:
        store.setup()
        current = load(store, acme_keys=30, rewrites=1)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SET search_path TO sgam, public")
        conn.execute("DROP INDEX fact_vectors_heads, fact_vectors_digest")
        conn.execute("ALTER TABLE fact_vectors DROP COLUMN is_head, DROP COLUMN digest")
        conn.execute("UPDATE sgam_meta SET value = '10' WHERE key = 'schema_version'")
    with open_store(uri, embedder) as store:
        store.setup()
        analyze(uri)
        copies = COPIES * len(FLOOD_TENANTS)
        assert heads_per_vector(uri) == Counter({(1, 1): 30, (30, 1): 1, (copies, 1): 1})
        assert owner_rows(uri, "SELECT min(vec_id) FROM fact_vectors WHERE is_head") == [(1,)]
        for query in QUERIES:
            want = best(embedder, current, query)
            check_page(store.search((), query=query, limit=10), current, want)
    assert walked

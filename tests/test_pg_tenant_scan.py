"""A tenant's exact vector scan on PostgreSQL reads its vectors from one index (schema v11,
`migrations.TENANT_SCAN`), not from table pages shared with every other tenant.

The plan is the behaviour under test: the results are the exact scan's either way
(test_pg_vector_scopes checks the pages), and the speed follows from the pages read.
"""

from __future__ import annotations

import psycopg
import pytest
from langgraph.store.base import PutOp

from sgam_store import SGAMStore
from sgam_store.engines.postgres import migrations, reads
from tests import pg

from .conftest import HashEmbeddings
from .test_pg_vector_scopes import best, check_page, load, open_store

QUERY = "kubernetes billing"


def sql(uri: str, statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SET search_path TO sgam, public")
        cursor = conn.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def tenant_scan_plan(uri: str, embedder: HashEmbeddings, tenant: str) -> str:
    """EXPLAIN of the statement `reads.nearest` runs for one tenant's current vectors,
    after a vacuum (autovacuum's work on a live database)."""
    sql(uri, "VACUUM (ANALYZE) fact_vectors")
    vector = str(embedder.embed_query(QUERY))
    statement = "EXPLAIN " + reads._nearest_sql(tenant, current=True, query="%s::vector")
    return "\n".join(r[0] for r in sql(uri, statement, (vector, tenant, 10)))  # type: ignore[misc]


TENANTS = [f"org{t}" for t in range(6)]


def interleaved(store: SGAMStore, keys: int) -> dict[tuple[str, str], str]:
    """`keys` notes a tenant, written tenant after tenant key by key, as many tenants'
    traffic arrives: each tenant's rows spread over the whole table. {(tenant, key): text}"""
    texts = {
        (t, f"k{j}"): f"{t} note {j} on billing draft {j % 7}" for j in range(keys) for t in TENANTS
    }
    store.batch([PutOp((t, "notes"), k, {"text": text}) for (t, k), text in texts.items()])
    return texts


def test_a_tenants_scan_reads_its_vectors_from_the_index(pg_server: str) -> None:
    """One of six tenants whose rows share the table's pages, at 384 dims (five vectors a
    page): its scan is index-only, through its covering index, and its page exact."""
    dims = migrations.SCAN_DIMS
    uri, embedder = pg.fresh_database(), HashEmbeddings(dims)
    index = {"dims": dims, "embed": embedder, "fields": ["text"]}
    with SGAMStore.from_conn_string(uri, index=index, retrieval={"mode": "vector"}) as store:
        store.setup()
        texts = interleaved(store, keys=150)
        plan = tenant_scan_plan(uri, embedder, "org2")
        mine = {ref: text for ref, text in texts.items() if ref[0] == "org2"}
        check_page(
            store.search(("org2",), query=QUERY, limit=10), mine, best(embedder, mine, QUERY)
        )
    assert "Index Only Scan using fact_vectors_tenant_scan" in plan, plan


def test_a_version_10_database_gains_the_index_and_answers_the_same(pg_server: str) -> None:
    uri, embedder = pg.fresh_database(), HashEmbeddings(64)
    with open_store(uri, embedder) as store:
        store.setup()
        current = load(store, acme_keys=40, rewrites=1)
    sql(uri, "DROP INDEX fact_vectors_tenant_scan")
    sql(uri, "UPDATE sgam_meta SET value = '10' WHERE key = 'schema_version'")
    with open_store(uri, embedder) as store:
        store.setup()
        acme = {ref: text for ref, text in current.items() if ref[0] == "acme"}
        check_page(
            store.search(("acme",), query=QUERY, limit=10), acme, best(embedder, acme, QUERY)
        )
    assert sql(uri, "SELECT value FROM sgam_meta WHERE key = 'schema_version'") == [
        (str(migrations.LATEST),)
    ]
    assert "fact_vectors_tenant_scan" in tenant_scan_plan(uri, embedder, "acme")


@pytest.mark.parametrize("dims", [migrations.SCAN_DIMS + 1, 1536])
def test_vectors_too_large_for_an_index_row_get_no_covering_index(
    pg_server: str, dims: int
) -> None:
    """A btree row holds 2,704 bytes: a 1,536-dim vector (6 KB) could never be written
    into it, so above SCAN_DIMS the scan reads the table as before, and writes work."""
    uri, embedder = pg.fresh_database(), HashEmbeddings(dims)
    index = {"dims": dims, "embed": embedder, "fields": ["text"]}
    with SGAMStore.from_conn_string(uri, index=index) as store:
        store.setup()
        store.put(("acme", "notes"), "k", {"text": QUERY})
        assert store.search(("acme",), query=QUERY, limit=1)[0].key == "k"
    names = sql(uri, "SELECT indexname FROM pg_indexes WHERE tablename = 'fact_vectors'")
    assert ("fact_vectors_tenant_scan",) not in names
    # A database made before the index, upgraded: the migration leaves it out too.
    sql(uri, "UPDATE sgam_meta SET value = '10' WHERE key = 'schema_version'")
    with SGAMStore.from_conn_string(uri, index=index) as store:
        store.setup()
    assert sql(uri, "SELECT indexname FROM pg_indexes WHERE tablename = 'fact_vectors'") == names


def test_a_long_tenant_id_still_fits_beside_a_384_dim_vector(pg_server: str) -> None:
    """The covering index's row holds the tenant id and the vector: at SCAN_DIMS a
    1,000-byte tenant id still writes and reads back."""
    uri, embedder = pg.fresh_database(), HashEmbeddings(migrations.SCAN_DIMS)
    index = {"dims": migrations.SCAN_DIMS, "embed": embedder, "fields": ["text"]}
    tenant = "t" * 1000
    with SGAMStore.from_conn_string(uri, index=index) as store:
        store.setup()
        store.batch([PutOp((tenant, "notes"), f"k{i}", {"text": f"{QUERY} {i}"}) for i in range(3)])
        assert len(store.search((tenant,), query=QUERY, limit=10)) == 3

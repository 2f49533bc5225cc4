"""How PostgreSQL's searches reach their candidates (`engines/postgres/reads.py`).

Vector search scans exactly in every scope (schema v10 dropped the HNSW index:
tests/test_pg_vector_scopes.py), checked here against cosine similarity computed here, for
a tenant and across tenants.

A tenant's keyword query reads the keyword index with the tenant as an index condition
(schema v7), also after `set_language` rebuilt the column and its index."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from langgraph.store.base import PutOp

from sgam_store import SGAMStore
from sgam_store.engines.postgres import reads
from tests import pg

from .conftest import HashEmbeddings

TENANTS = ("acme", "globex", "initech")
PER_TENANT = 60
TOPICS = ("travel", "billing", "kubernetes", "lunch", "hiring", "the roadmap")
QUERIES = ("a note about travel plans", "billing for kubernetes", "who is hiring")


def text(tenant: str, j: int) -> str:
    return f"{tenant} note {j} about {TOPICS[j % len(TOPICS)]} and {TOPICS[j * 7 % 5]}"


def exact(embedder: HashEmbeddings, query: str, tenant: str | None) -> dict[str, float]:
    """{key: cosine similarity to `query`} of every fact in scope, computed here."""
    keys = [(t, j) for t in TENANTS if tenant in (None, t) for j in range(PER_TENANT)]
    docs = np.array(embedder.embed_documents([text(t, j) for t, j in keys]))
    sims = docs @ np.array(embedder.embed_query(query))
    return {f"{t}/k{j}": float(sim) for (t, j), sim in zip(keys, sims, strict=True)}


def test_vector_search_is_exact_in_a_tenant_and_across_tenants(pg_server: str) -> None:
    embedder = HashEmbeddings(64)
    index = {"dims": 64, "embed": embedder, "fields": ["text"]}
    uri = pg.fresh_database()
    with SGAMStore.from_conn_string(uri, index=index, retrieval={"mode": "vector"}) as store:
        store.setup()
        store.batch(
            [
                PutOp((t, "notes"), f"k{j}", {"text": text(t, j)})
                for t in TENANTS
                for j in range(PER_TENANT)
            ]
        )
        for query in QUERIES:
            for scope in [*TENANTS, None]:
                sims = exact(embedder, query, scope)
                best = sorted(sims.values(), reverse=True)[:10]
                hits = store.search((scope,) if scope else (), query=query, limit=10)
                got = {f"{h.namespace[0]}/{h.key}": h.score for h in hits}
                # Each hit at its own similarity, and those the ten best (ties aside).
                assert got == pytest.approx({k: sims[k] for k in got}, abs=1e-5)
                assert [h.score for h in hits] == pytest.approx(best, abs=1e-5), scope


def keyword_plan(uri: str, tenant: str | None) -> str:
    """EXPLAIN of the store's keyword statement for "travel", in `tenant` or across all."""
    query = reads.KeywordQuery("'travel'", tenant)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SET search_path TO sgam, public")
        conn.execute("SET enable_seqscan = off")  # a few rows: the planner would scan them
        captured: list[str] = []

        class Explaining:
            def execute(self, sql: str, params: tuple) -> psycopg.Cursor:
                captured.extend(r[0] for r in conn.execute("EXPLAIN " + sql, params))
                return conn.execute(sql, params)

        reads.keyword_hits(Explaining(), query, 10)
    return "\n".join(captured)


def test_a_tenants_keyword_query_reads_only_its_own_matches(pg_server: str) -> None:
    uri = pg.fresh_database()
    with SGAMStore.from_conn_string(uri) as store:
        store.setup()
        store.batch([PutOp((t, "notes"), "k", {"text": f"{t} travel plans"}) for t in TENANTS])
        for language in (None, "simple"):
            if language:
                store.set_language(language)
            plan = keyword_plan(uri, "acme")
            assert "Bitmap Index Scan on fact_keywords_tsv" in plan, plan
            assert "Index Cond: ((tenant_id = 'acme'::text) AND (tsv @@" in plan, plan
            assert "Filter: (tenant_id" not in plan, plan
            assert "Index Cond: (tsv @@" in keyword_plan(uri, None)
            assert [h.key for h in store.search(("globex",), query="travel")] == ["k"]

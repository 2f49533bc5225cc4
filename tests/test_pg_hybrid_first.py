"""PostgreSQL's first step of hybrid search in one statement (`reads.hybrid_first`)
answers exactly what the separate statements answer, and a hybrid search through it
returns the same page, scores included, as one through those statements.

Varied data: three tenants, subjects, facts without vectors (no embedded field),
replaced and deleted versions; searched per tenant, across tenants, under a subject
prefix, with a filter, and at a past point in time."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp, SearchOp

from sgam_store import SGAMStore
from sgam_store.core import clock
from sgam_store.engines.postgres import reads
from sgam_store.read import scope
from tests import pg

TENANTS = ("acme", "globex", "initech")
WORDS = ("travel", "billing", "kubernetes", "lunch", "hiring", "roadmap", "budget", "paris")
QUERIES = ("travel budget for paris", "kubernetes hiring", "lunch", "nothing matches zzz")


class WordEmbeddings(Embeddings):
    """Sum of one seeded random vector per word: texts sharing words are similar, and
    distinct texts never tie (float sums), so 'the n nearest' has one answer."""

    def _embed(self, text: str) -> list[float]:
        total = np.zeros(32)
        for word in text.lower().split():
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            total += np.random.default_rng(seed).standard_normal(32)
        return total.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def body(tenant: str, j: int) -> dict[str, Any]:
    words = " ".join(WORDS[(j * k) % len(WORDS)] for k in (1, 3, 5))
    doc: dict[str, Any] = {"kind": "a" if j % 3 else "b"}
    if j % 7:  # every seventh fact has no text: a keyword row, no vectors
        doc["text"] = f"{tenant} note {j} {words}"
    else:
        doc["other"] = f"{tenant} {words}"
    return doc


@pytest.fixture(scope="module")
def store(pg_server: str) -> Iterator[tuple[SGAMStore, str]]:
    index = {"dims": 32, "embed": WordEmbeddings(), "fields": ["text"]}
    with SGAMStore.from_conn_string(pg.fresh_database(), index=index) as s:
        s.setup()
        ns = [(t, f"user{j % 4}") for t in TENANTS for j in range(50)]
        s.batch([PutOp(n, f"k{j}", body(n[0], j)) for j, n in enumerate(ns)])
        time.sleep(0.01)
        past = clock.normalize(datetime.now(UTC))
        time.sleep(0.01)
        # Replaced and deleted versions: the point-in-time search still sees the old ones.
        s.batch([PutOp(n, f"k{j}", body(n[0], j + 1)) for j, n in enumerate(ns) if j % 5 == 0])
        s.batch([PutOp(n, f"k{j}", None) for j, n in enumerate(ns) if j % 11 == 0])
        yield s, past


CASES = {
    "tenant": dict(prefix=("acme",)),
    "all tenants": dict(prefix=()),
    "subject prefix": dict(prefix=("globex", "user1")),
    "filter": dict(prefix=("initech",), filter={"kind": "b"}),
    "limit 3 offset 2": dict(prefix=("acme",), limit=3, offset=2),
}


def page(store: SGAMStore, case: dict[str, Any], query: str, at: str | None) -> list:
    view = store.as_of(at) if at else store
    hits = view.search(
        case["prefix"],
        query=query,
        filter=case.get("filter"),
        limit=case.get("limit", 10),
        offset=case.get("offset", 0),
    )
    return [(h.namespace, h.key, round(h.score, 9)) for h in hits]


@pytest.mark.parametrize("past", [False, True], ids=["current", "point in time"])
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_hybrid_search_is_the_same_through_one_statement(
    store: tuple[SGAMStore, str], monkeypatch: pytest.MonkeyPatch, case: str, past: bool
) -> None:
    s, at = store
    # The subject prefix is ranked tenant-wide (not as a small scope), through hybrid_first.
    monkeypatch.setattr(scope, "SMALL_SCOPE_MAX", 0)
    calls: list[bool] = []
    step = reads.hybrid_first

    def counted(*args: Any) -> Any:
        answer = step(*args)
        calls.append(answer is not None)
        return answer

    for query in QUERIES:
        monkeypatch.setattr(reads, "hybrid_first", counted, raising=False)
        one = page(s, CASES[case], query, at if past else None)
        monkeypatch.delattr(reads, "hybrid_first")
        separate = page(s, CASES[case], query, at if past else None)
        assert one == separate, query
        assert one or query == QUERIES[-1]
    assert calls and all(calls)  # the statement answered every search


def test_the_statement_answers_as_the_separate_statements(
    store: tuple[SGAMStore, str],
) -> None:
    s, at = store
    vec = s._ranker.embed_queries([SearchOp(("acme",), query="travel budget")])[0]
    with s.engine.snapshot() as conn:
        for tenant, prefix, filter, when in [
            ("acme", (), None, None),
            (None, (), None, None),
            ("globex", ("globex", "user2"), {"kind": "a"}, None),
            ("initech", ("initech",), None, at),
        ]:
            terms = reads.keyword_terms(conn, "travel budget paris")
            sized = (terms, reads.highest_row_id(conn))
            assert reads.keyword_terms_sized(conn, "travel budget paris") == sized
            query = reads.keyword_query(conn, terms, tenant)
            first = reads.hybrid_first(conn, when, when, tenant, prefix, filter, query, vec, 8, 16)
            assert first is not None
            assert first.keyword == (reads.keyword_hits(conn, query, 8), False)
            current = when is None
            hits, done, _ = reads.nearest(conn, vec, 16, tenant, current)
            assert first.vector == (hits, done)
            ids = [fid for fid, _ in first.keyword[0] + first.vector[0]]
            scope = (when, when, tenant, prefix, filter)
            assert first.admitted == reads.admitted(conn, *scope, ids)
            assert 0 < len(first.admitted) < len(set(ids)) or filter is None
            kw_ids = [fid for fid, _ in first.keyword[0]]
            assert first.cosines == pytest.approx(reads.similarities(conn, kw_ids, vec))


def test_optional_features_are_declared_and_offered() -> None:
    """`core.engine.OPTIONAL` names features outside the required interface, each offered
    by some engine: neutral code asks for them with getattr and has a way without."""
    from sgam_store.core.engine import OPTIONAL, STATEMENTS
    from sgam_store.engines.sqlite import reads as sqlite_reads

    for group, names in OPTIONAL.items():
        assert not names & STATEMENTS[group]
        for name in names:
            assert hasattr(reads, name) or hasattr(sqlite_reads, name), name
    assert not hasattr(sqlite_reads, "hybrid_first")  # SQLite ranks through the interface

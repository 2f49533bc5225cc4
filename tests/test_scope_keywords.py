"""Hybrid search of a small scope (one user's memories under LangMem's layout) asks for the
per-term counts only when they can change the answer: `scope_keyword_hits` must give the
hits the always-count rule gives, on both engines, and a put is found by the next search."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.store.base import SearchOp

from sgam_store import SGAMStore
from sgam_store.read import terms as read_terms
from tests.conftest import HashEmbeddings

FREQUENT = {"coffee": 0.6, "tea": 0.3}  # share of a user's memories holding each
VOCABULARY = [
    *FREQUENT,
    *[
        "python",
        "garden",
        "chess",
        "sailing",
        "budget",
        "travel",
        "report",
        "deadline",
        "manager",
        "sister",
    ],
    *[
        "hiking",
        "opera",
        "sushi",
        "roadmap",
        "standup",
        "review",
        "morning",
        "evening",
        "prefers",
        "likes",
    ],
]
ENGINES = ("sqlite", "postgres")
USERS = {"u0": 12, "u1": 45, "u2": 90}  # below, near and above the scope's common ceiling


@pytest.fixture
def langmem_store(target: str) -> Iterator[SGAMStore]:
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["content"]}
    with SGAMStore.from_conn_string(target, index=index, tenant_at=1) as s:
        s.setup()
        yield s


def fill(store: SGAMStore, rng: random.Random) -> None:
    """Each user's memories: a few words each, two of them frequent, so some query terms
    are in more than a quarter of a large user's memories and some in few."""
    for user, n in USERS.items():
        for i in range(n):
            words = rng.sample(VOCABULARY[len(FREQUENT) :], 3)
            words += [w for w, p in FREQUENT.items() if rng.random() < p]
            store.put(("memories", user), f"m{i}", {"content": " ".join(words)})


def fts_scores(
    engine: Any, conn: Any, terms: list[str], user: str, ids: list[int]
) -> read_terms.Hits:
    """The index's own scores of a scope (`keyword_scores`), the reference for both rules."""
    query = engine.reads.keyword_query(conn, terms, user)
    return engine.reads.keyword_scores(conn, query, ids) if query else []


def assert_hits_as_always_counted(
    engine: Any, conn: Any, op: SearchOp, mirrors: list[Any]
) -> tuple[list[int], read_terms.Hits]:
    """`scope_keyword_hits` of `op`'s user, through the index's statements (mirror None)
    and each given mirror, equal the rule as first written: the scope's fact ids and
    those hits."""
    tenant = op.namespace_prefix[1]
    found = engine.reads.in_scope(conn, None, None, tenant, op.namespace_prefix, None, 500)
    ids = sorted(found)
    want = always_counted(engine, conn, op, ids, read_terms.TermStats())
    for mirror in mirrors:
        scorer = read_terms.ScopeScorer(engine, conn, tenant, ids, mirror)
        got = read_terms.scope_keyword_hits(engine, conn, op.query, scorer, read_terms.TermStats())
        assert got == want, (tenant, op.query, mirror)
    return ids, want


def always_counted(
    engine: Any, conn: Any, op: SearchOp, ids: list[int], stats: Any
) -> read_terms.Hits:
    """The rule as first written, on the index's statements: count every term in the scope
    once it is large."""
    user = op.namespace_prefix[1]
    terms = engine.reads.keyword_terms(conn, op.query)
    terms = read_terms.drop_common_terms(engine, conn, terms, stats)
    ceiling = max(read_terms.SCOPE_COMMON_MIN_ROWS, read_terms.SCOPE_COMMON_SHARE * len(ids))
    if len(ids) > ceiling:
        terms = [t for t in terms if len(fts_scores(engine, conn, [t], user, ids)) <= ceiling]
    return fts_scores(engine, conn, terms, user, ids)


def test_scope_hits_equal_the_always_counted_rule(langmem_store: SGAMStore) -> None:
    """Scored in process (SQLite's keyword mirror) or by the index, the same hits, scores
    and order as the rule that always counts."""
    rng = random.Random(31)
    fill(langmem_store, rng)
    engine = langmem_store.engine
    make_mirror = getattr(engine.reads, "keyword_mirror", None)
    mirrors = [None, make_mirror()] if make_mirror is not None else [None]
    counted = dropped = 0
    with engine.reading() as conn:
        for _ in range(120):
            user = rng.choice(list(USERS))
            query = " ".join(rng.sample(VOCABULARY, rng.randint(1, 4)))
            op = SearchOp(("memories", user), query=query, limit=10)
            ids, want = assert_hits_as_always_counted(engine, conn, op, mirrors)
            full = fts_scores(engine, conn, engine.reads.keyword_terms(conn, query), user, ids)
            counted += len(full) > max(read_terms.SCOPE_COMMON_MIN_ROWS, len(ids) / 4)
            dropped += len(want) != len(full)
    # both branches ran: queries whose matches exceed the ceiling, and terms dropped
    assert counted > 0 and dropped > 0


def test_a_put_is_found_by_the_next_per_user_search(langmem_store: SGAMStore) -> None:
    fill(langmem_store, random.Random(7))
    for user in USERS:
        langmem_store.put(("memories", user), "new", {"content": "zanzibar ferry tickets"})
        hits = langmem_store.search(("memories", user), query="zanzibar ferry", limit=3)
        assert hits and hits[0].key == "new" and hits[0].namespace == ("memories", user)
        only_vectors = langmem_store.search(("memories", user), query="coffee chess", limit=200)
        assert {h.namespace for h in only_vectors} == {("memories", user)}

"""A per-user hybrid search leaves out the query's terms that none of the user's memories
hold before it counts terms over the whole keyword index (`ScopeScorer.held`): such a term
adds 0.0 to every score, so the hits, scores and order are those of the rule that counts
every term, and the count statement (fts5vocab walking the term's posting lists) does not
run for it."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from langgraph.store.base import SearchOp

from sgam_store import SGAMStore
from tests.conftest import HashEmbeddings
from tests.test_scope_keywords import VOCABULARY, assert_hits_as_always_counted

ENGINES = ("sqlite", "postgres")
USERS = {"u0": 10, "u1": 40, "u2": 80}
ELSEWHERE = ["zanzibar", "ferry", "tickets", "quokka"]  # only "other" holds them
NOWHERE = ["xylophone", "1234567"]  # no memory holds them


@pytest.fixture
def langmem_store(target: str) -> Iterator[SGAMStore]:
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["content"]}
    with SGAMStore.from_conn_string(target, index=index, tenant_at=1) as s:
        s.setup()
        rng = random.Random(5)
        for user, n in USERS.items():
            for i in range(n):
                words = rng.sample(VOCABULARY, 4)
                s.put(("memories", user), f"m{i}", {"content": " ".join(words)})
        for i in range(30):
            words = rng.sample(ELSEWHERE, 2) + rng.sample(VOCABULARY, 1)
            s.put(("memories", "other"), f"m{i}", {"content": " ".join(words)})
        yield s


def test_terms_no_scope_fact_holds_change_no_hit(langmem_store: SGAMStore) -> None:
    engine = langmem_store.engine
    make_mirror = getattr(engine.reads, "keyword_mirror", None)
    mirrors = [None, make_mirror()] if make_mirror is not None else [None]
    rng = random.Random(9)
    with engine.reading() as conn:
        for _ in range(80):
            user = rng.choice(list(USERS))
            words = rng.sample(VOCABULARY, rng.randint(0, 3))
            words += rng.sample(ELSEWHERE + NOWHERE, rng.randint(1, 2))
            rng.shuffle(words)
            op = SearchOp(("memories", user), query=" ".join(words), limit=10)
            assert_hits_as_always_counted(engine, conn, op, mirrors)


@pytest.mark.sqlite_only
def test_a_term_no_scope_fact_holds_is_not_counted(langmem_store: SGAMStore) -> None:
    """SQLite's in-process scorer knows what the scope holds: only the held term is
    counted (its count is what BM25 weighs it by), the other user's is not."""
    counted: list[str] = []

    def trace(sql: str) -> None:
        if "fact_fts_vocab" in sql:
            counted.append(sql)

    langmem_store.conn.set_trace_callback(trace)
    try:
        found = langmem_store.search(("memories", "u1"), query="zanzibar chess", limit=5)
    finally:
        langmem_store.conn.set_trace_callback(None)
    assert found and all(i.namespace == ("memories", "u1") for i in found)
    assert any("'chess'" in sql for sql in counted)
    assert not any("zanzibar" in sql for sql in counted)


@pytest.mark.sqlite_only
def test_the_index_size_comes_with_the_keyword_state(langmem_store: SGAMStore) -> None:
    """The common-term cut's `highest_row_id` is read in the keyword mirror's state
    statement: no statement of its own, and the same cut (the hits above)."""
    statements: list[str] = []
    langmem_store.conn.set_trace_callback(statements.append)
    try:
        found = langmem_store.search(("memories", "u2"), query="chess sailing", limit=5)
    finally:
        langmem_store.conn.set_trace_callback(None)
    assert found
    state = [s for s in statements if "fact_fts_data" in s]
    assert len(state) == 1 and "max(row_id)" in state[0]
    assert not any(s.startswith("SELECT max(row_id)") for s in statements)

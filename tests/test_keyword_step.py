"""A large scope's keyword step reads a bounded number of postings (`read.candidates`).

A whole tenant's keyword search ranks, of each query term held by more than
`RECENT_POSTINGS` of the tenant's rows, its newest postings only; a term held by fewer
keeps every posting, and with no term cut the ranking is the unbounded one. Lowered here
to 16 so that a store of a hundred memories shows it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langgraph.store.base import PutOp

from sgam_store import SGAMStore
from sgam_store.engines.sqlite import reads as sqlite_reads
from sgam_store.read import candidates

ENGINES = ("sqlite", "postgres")
POSTINGS = 16
COMMON = 120  # memories holding "alpha", oldest first
RARE = 3  # the oldest ones also hold "zeta"


@pytest.fixture
def filled(store: SGAMStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[SGAMStore]:
    monkeypatch.setattr(candidates, "RECENT_POSTINGS", POSTINGS)
    ops = []
    for n in range(COMMON):
        rare = " zeta" if n < RARE else ""
        kind = "old" if n < COMMON // 2 else "new"
        ops.append(PutOp(("acme", f"s{n:03d}"), "note", {"text": f"alpha{rare}", "kind": kind}))
    ops.append(PutOp(("other", "x"), "note", {"text": "alpha zeta"}))
    store.batch(ops)
    yield store


def _subjects(found: list) -> list[str]:
    return [item.namespace[1] for item in found]


def test_recent_postings_per_term(filled: SGAMStore) -> None:
    """The statement both engines answer alike: the newest postings of each term in the
    tenant, each fact once, and whether that was all of them."""
    engine = filled.engine
    with engine.reading() as conn:
        terms = engine.reads.keyword_terms(conn, "alpha zeta")
        ids, complete = engine.reads.keyword_recent(conn, terms, "acme", POSTINGS)
        every, whole = engine.reads.keyword_recent(conn, terms, "acme", COMMON)
        none, empty = engine.reads.keyword_recent(conn, terms, "nobody", POSTINGS)
    assert not complete and len(ids) == POSTINGS + RARE == len(set(ids))
    assert ids[:POSTINGS] == sorted(every, reverse=True)[:POSTINGS]  # newest first
    assert set(ids[POSTINGS:]) == set(sorted(every)[:RARE])  # the rare term's, all
    assert whole and len(every) == COMMON
    assert none == [] and empty


def test_a_rare_term_keeps_every_posting(filled: SGAMStore) -> None:
    """The oldest memories hold the rare term: ranked first though far past the common
    term's newest postings, and only the tenant's."""
    found = filled.search(("acme",), query="zeta alpha", limit=RARE + 1)
    assert sorted(_subjects(found)[:RARE]) == [f"s{n:03d}" for n in range(RARE)]
    assert "zeta" not in found[RARE].value["text"]


def test_a_common_term_ranks_its_newest_postings(filled: SGAMStore) -> None:
    found = filled.search(("acme",), query="alpha", limit=10)
    with filled.engine.reading() as conn:
        newest, _ = filled.engine.reads.keyword_recent(conn, ["alpha"], "acme", POSTINGS)
    ids = [filled.fact_at("acme", item.namespace[1], item.key).fact_id for item in found]
    assert len(found) == 10 and set(ids) <= set(newest)


def test_a_filter_deepens_to_older_postings(filled: SGAMStore) -> None:
    """A filter that rejects every newest posting: the step ranks every row then, so
    the page is still full and matches the filter."""
    found = filled.search(("acme",), query="alpha", filter={"kind": "old"}, limit=10)
    assert len(found) == 10 and all(item.value["kind"] == "old" for item in found)


def test_no_term_cut_is_the_unbounded_ranking(
    filled: SGAMStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(candidates, "RECENT_POSTINGS", COMMON)
    bounded = filled.search(("acme",), query="alpha zeta", limit=20)
    monkeypatch.setattr(candidates, "RECENT_POSTINGS", 10**9)
    unbounded = filled.search(("acme",), query="alpha zeta", limit=20)
    assert [(i.namespace, i.key, i.score) for i in bounded] == [
        (i.namespace, i.key, i.score) for i in unbounded
    ]


@pytest.mark.sqlite_only
def test_bm25_reads_a_bounded_number_of_rows(filled: SGAMStore) -> None:
    """FTS5's bm25() reads each matching row's size (its docsize table): an unbounded
    ranking of "alpha" reads all 120; the bounded step scores its candidates in process."""
    statements: list[str] = []
    filled.search(("acme",), query="alpha", limit=10)  # warm: the keyword mirror
    filled.conn.set_trace_callback(statements.append)
    try:
        filled.search(("acme",), query="alpha", limit=10)
    finally:
        filled.conn.set_trace_callback(None)
    sizes = sum("fact_fts_docsize" in s for s in statements)
    assert sizes <= POSTINGS


@pytest.mark.sqlite_only
def test_past_the_mirror_the_candidates_are_read_for_the_call(
    filled: SGAMStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index larger than the keyword mirror holds (1M facts) still scores a bounded
    set in process: its rows are read for the call, with the same hits and scores."""
    queries = ["alpha", "alpha zeta", "zeta"]
    mirrored = [filled.search(("acme",), query=q, limit=10) for q in queries]
    monkeypatch.setattr(sqlite_reads, "KEYWORD_MIRROR_ROWS", 10)
    statements: list[str] = []
    filled.conn.set_trace_callback(statements.append)
    try:
        read = [filled.search(("acme",), query=q, limit=10) for q in queries]
    finally:
        filled.conn.set_trace_callback(None)
    assert read == mirrored
    assert not any(s == "SELECT rowid, body FROM fact_fts" for s in statements)  # not whole
    assert sum("fact_fts_docsize" in s for s in statements) <= POSTINGS

"""PostgreSQL's small-scope ranking in one statement (`reads.scope_scored`) answers
exactly what `in_scope`, `keyword_scores` and `similarities` answer, and a search of a
scope deeper than its tenant returns the same page, scores included, through it as
through those statements.

The data is test_pg_hybrid_first's (three tenants, subjects, facts without vectors,
replaced and deleted versions); searched under subject prefixes, with a filter, with
limit and offset, at a past point in time, and in each retrieval mode."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from langgraph.store.base import SearchOp

from sgam_store import SGAMStore
from sgam_store.engines.postgres import reads
from sgam_store.read import scope
from tests.test_pg_hybrid_first import QUERIES, WORDS, page, store  # noqa: F401 (the fixture)

CASES = {
    "subject": dict(prefix=("globex", "user1")),
    "another subject": dict(prefix=("acme", "user3")),
    "filter": dict(prefix=("initech", "user2"), filter={"kind": "b"}),
    "limit 3 offset 2": dict(prefix=("acme", "user0"), limit=3, offset=2),
}


STEP = reads.scope_scored


def counted(monkeypatch: pytest.MonkeyPatch, calls: list[bool]) -> None:
    """`scope_scored` in place again, each answer noted in `calls` (None: declined)."""
    step = STEP

    def through(*args: Any) -> Any:
        answer = step(*args)
        calls.append(answer is not None)
        return answer

    monkeypatch.setattr(reads, "scope_scored", through, raising=False)


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
@pytest.mark.parametrize("past", [False, True], ids=["current", "point in time"])
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_small_scope_search_is_the_same_through_one_statement(
    store: tuple[SGAMStore, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    case: str,
    past: bool,
    mode: str,
) -> None:
    s, at = store
    monkeypatch.setattr(s, "retrieval", replace(s.retrieval, mode=mode))
    calls: list[bool] = []
    for query in QUERIES:
        counted(monkeypatch, calls)
        one = page(s, CASES[case], query, at if past else None)
        monkeypatch.delattr(reads, "scope_scored")
        separate = page(s, CASES[case], query, at if past else None)
        assert one == separate, query
        assert one or query == QUERIES[-1]
    assert calls and all(calls)  # the statement answered every search


def test_a_scope_too_large_is_ranked_tenant_wide_as_before(
    store: tuple[SGAMStore, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over SMALL_SCOPE_MAX the statement declines (None) and the search ranks the
    tenant, with the terms read for the statement: same page as without the feature."""
    s, _ = store
    monkeypatch.setattr(scope, "SMALL_SCOPE_MAX", 5)
    calls: list[bool] = []
    for query in QUERIES:
        counted(monkeypatch, calls)
        one = page(s, CASES["subject"], query, None)
        monkeypatch.delattr(reads, "scope_scored")
        assert one == page(s, CASES["subject"], query, None), query
    assert calls and not any(calls)


def test_the_statement_answers_as_the_separate_statements(
    store: tuple[SGAMStore, str],  # noqa: F811
) -> None:
    s, at = store
    vec = s._ranker.embed_queries([SearchOp(("acme",), query="travel budget")])[0]
    with s.engine.snapshot() as conn:
        for tenant, prefix, filter, when, text in [
            ("acme", ("acme", "user1"), None, None, "travel budget paris"),
            ("globex", ("globex", "user2"), {"kind": "a"}, None, " ".join(WORDS)),
            ("initech", ("initech", "user3"), None, at, " ".join(WORDS)),
            ("acme", ("acme", "user0"), None, None, ""),
        ]:
            scope = (when, when, tenant, prefix, filter)
            terms = reads.keyword_terms(conn, text)
            query = reads.keyword_query(conn, terms, tenant)
            scored = reads.scope_scored(conn, *scope, 100, query, vec)
            assert scored is not None
            members = reads.in_scope(conn, *scope, 101)
            assert scored.members == members and members
            ids = sorted(members)
            expected = reads.keyword_scores(conn, query, ids) if query else []
            assert scored.keyword == expected
            assert bool(expected) == bool(text)
            assert scored.cosines == reads.similarities(conn, ids, vec)
            assert 0 < len(scored.cosines) < len(members)  # some facts have no vectors
            too_few = len(members) - 1
            assert reads.scope_scored(conn, *scope, too_few, query, vec) is None

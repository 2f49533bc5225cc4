"""`explain_search`: the hits and order of `search`, each with its two contributions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest

from sgam_store import SGAMStore
from sgam_store.core.errors import TenantScopeError
from tests.conftest import HashEmbeddings, told

ENGINES = ("sqlite", "postgres")

TEXTS = {
    "diet": "alice is vegetarian and avoids meat",
    "pet": "alice has a cat named miso",
    "city": "alice lives in lisbon near the river",
    "job": "alice works as a marine biologist",
    "vegan": "vegetarian",
}


def _fill(store: SGAMStore) -> None:
    for key, text in TEXTS.items():
        store.put(("acme", "alice"), key, {"text": text})
    store.put(("other", "bob"), "diet", {"text": "bob is vegetarian too"})


def _hits(items: list) -> list[tuple]:
    return [(tuple(i.namespace), i.key, i.score) for i in items]


@pytest.mark.parametrize("query", ["vegetarian", "alice cat", "river fish", "zzz qqq"])
def test_explained_hits_are_search_hits_in_order(vstore: SGAMStore, query: str) -> None:
    _fill(vstore)
    for prefix in [("acme",), ("acme", "alice"), ()]:
        found = vstore.search(prefix, query=query, limit=4)
        explained = vstore.explain_search(prefix, query, limit=4)
        assert _hits([e.item for e in explained]) == _hits(found)
        assert [e.score for e in explained] == [i.score for i in found]


def test_exact_keyword_match_and_vector_only_hit(vstore: SGAMStore) -> None:
    _fill(vstore)
    explained = {e.item.key: e for e in vstore.explain_search(("acme",), "vegetarian")}
    exact = explained["vegan"]
    assert exact.keyword == 1.0 and exact.keyword_rank is not None
    assert exact.cosine is not None and exact.vector_rank is not None
    # Memories holding no term of the query were found by vectors alone.
    for key in ("pet", "city", "job"):
        assert explained[key].keyword is None and explained[key].keyword_rank is None
        assert explained[key].cosine is not None and explained[key].vector_rank is not None
    ranks = sorted(e.vector_rank for e in explained.values())
    assert ranks == list(range(1, len(explained) + 1))  # every fact within the vector depth


def test_half_the_terms_held(vstore: SGAMStore) -> None:
    _fill(vstore)
    explained = {e.item.key: e for e in vstore.explain_search(("acme",), "cat lisbon")}
    assert explained["pet"].keyword == 0.5 and explained["city"].keyword == 0.5


def test_keyword_only_store_has_no_vector_side(store: SGAMStore) -> None:
    _fill(store)
    found = store.search(("acme",), query="alice vegetarian", limit=10)
    explained = store.explain_search(("acme",), "alice vegetarian", limit=10)
    assert _hits([e.item for e in explained]) == _hits(found)
    share = {e.item.key: e.keyword for e in explained}
    # Every keyword row holds its subject, "alice"; "vegetarian" only diet's and vegan's.
    assert share["diet"] == share["vegan"] == 1.0 and share["pet"] == 0.5
    # Keywords alone rank the search, so each hit's keyword rank is its place.
    assert [e.keyword_rank for e in explained] == list(range(1, len(explained) + 1))
    assert all(e.cosine is None and e.vector_rank is None for e in explained)


def test_without_a_query_it_is_the_listing(store: SGAMStore) -> None:
    _fill(store)
    explained = store.explain_search(("acme",), None, limit=3)
    assert _hits([e.item for e in explained]) == _hits(store.search(("acme",), limit=3))
    assert all(e.score is None and e.keyword is None for e in explained)


def test_tenant_view_is_confined(vstore: SGAMStore) -> None:
    _fill(vstore)
    view = vstore.for_tenant("acme")
    explained = view.explain_search((), "vegetarian", limit=10)
    assert _hits([e.item for e in explained]) == _hits(view.search((), query="vegetarian"))
    assert {tuple(e.item.namespace) for e in explained} == {("alice",)}
    with pytest.raises(TenantScopeError):
        view.for_tenant("other")


def test_point_in_time_view(vstore: SGAMStore) -> None:
    _fill(vstore)
    past = vstore.as_of("2000-01-01T00:00:00+00:00")
    assert past.explain_search(("acme",), "vegetarian") == []
    now = vstore.as_of("2100-01-01T00:00:00+00:00")
    explained = now.explain_search(("acme",), "vegetarian", limit=10)
    found = now.search(("acme",), query="vegetarian", limit=10)
    assert _hits([e.item for e in explained]) == _hits(found) and explained


@pytest.mark.parametrize(
    "retrieval",
    [{"threshold": 0.2}, {"fusion": "rrf"}, {"mode": "vector"}, {"mode": "keyword"}],
)
def test_every_retrieval_setting_explains_searchs_hits(target: str, retrieval: dict) -> None:
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    with SGAMStore.from_conn_string(target, index=index, retrieval=retrieval) as store:
        store.setup()
        _fill(store)
        for query in ("vegetarian", "alice cat lisbon"):
            explained = store.explain_search(("acme",), query, limit=3, offset=1)
            found = store.search(("acme",), query=query, limit=3, offset=1)
            assert _hits([e.item for e in explained]) == _hits(found)
            if retrieval.get("mode") == "keyword":
                assert all(e.cosine is None for e in explained)
            if retrieval.get("mode") == "vector":
                assert all(e.keyword is None and e.cosine is not None for e in explained)


def _keyword_rankings(store: SGAMStore, call: Any) -> int:
    """How many keyword-index queries (an FTS5 MATCH) `call` runs; FTS5's own internal
    statements (traced with a leading comment) are not the store's."""
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        call()
    finally:
        store.conn.set_trace_callback(None)
    return sum(" MATCH " in s and not s.startswith("--") for s in statements)


@pytest.mark.sqlite_only
@pytest.mark.parametrize("fixture", ["store", "vstore"])
def test_explain_ranks_once(request: pytest.FixtureRequest, fixture: str) -> None:
    """The explanation reports the search's own rankings: it runs the keyword queries
    `search` runs, no more (it used to rank the keywords a second time for the ranks)."""
    store = request.getfixturevalue(fixture)
    _fill(store)
    for n in range(40):
        store.put(("acme", f"s{n}"), "note", {"text": f"alice note {n} about vegetarian food"})
    query = "alice vegetarian river"
    for prefix in [("acme",), ()]:
        search = partial(store.search, prefix, query=query, limit=5)
        explain = partial(store.explain_search, prefix, query, limit=5)
        searched, explained = _keyword_rankings(store, search), _keyword_rankings(store, explain)
        assert searched >= 1 and explained == searched


# Rosa's turns, a month apart: she moved to Seville in April (r2, the event).
ROSA = [
    ("r0", "Rosa: the bakery on our corner closed, so sad", "2025-01-10"),
    ("r1", "Rosa: we live in a tiny flat in Denver, lovely neighbourhood", "2025-02-10"),
    ("r2", "Rosa: first week after relocating to Seville, the new job keeps me busy", "2025-04-10"),
    ("r3", "Rosa: Seville was the right call, I live near the river now", "2025-05-10"),
]


@contextmanager
def _rosa(target: str, **retrieval: Any) -> Iterator[SGAMStore]:
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    with SGAMStore.from_conn_string(target, index=index, retrieval=retrieval) as store:
        store.setup()
        told(store, "rosa", ROSA)
        yield store


def _windows(explained: list) -> dict[str, tuple[bool | None, bool]]:
    return {e.item.key: (e.in_window, e.anchor) for e in explained}


def test_a_named_time_says_which_hits_are_in_its_window(target: str) -> None:
    with _rosa(target) as store:
        asked = store.as_of("2025-08-01T12:00:00Z")
        dated = asked.explain_search(("rosa",), "What did Rosa say in February?", limit=4)
        found = asked.search(("rosa",), query="What did Rosa say in February?", limit=4)
        plain = asked.explain_search(("rosa",), "What did Rosa say about Denver?", limit=4)
    assert _hits([e.item for e in dated]) == _hits(found)
    assert _windows(dated) == {"r0": (False, False), "r1": (True, False),
                               "r2": (False, False), "r3": (False, False)}  # fmt: skip
    assert {window for window, _ in _windows(plain).values()} == {None}  # no time named


@pytest.mark.parametrize("mode", ["rank", "filter"])
def test_an_event_names_its_memory_and_the_time_before_it(target: str, mode: str) -> None:
    query = "Where did Rosa live before relocating to Seville?"
    with _rosa(target, time_window=mode) as store:
        explained = store.explain_search(("rosa",), query, limit=4)
        assert _hits([e.item for e in explained]) == _hits(
            store.search(("rosa",), query=query, limit=4)
        )
    windows = _windows(explained)
    assert windows["r1"] == (True, False)
    if mode == "rank":  # the event's own memory is its anchor, not in the time before it
        assert windows["r2"] == (False, True) and windows["r3"] == (False, False)
    else:  # only the time before it is returned
        assert set(windows) <= {"r0", "r1"}

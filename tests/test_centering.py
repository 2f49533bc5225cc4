"""Centered cosines in a small scope (issue 40): `retrieval={"centering": True}` ranks a
hybrid search's candidates by cosine about the scope's mean vector, so turns that lean the
way the whole conversation leans (a speaker's name, small talk) stop outranking the turn
that answers. On by default (since session 46); off, the plain cosines rank; reported scores stay
plain cosines either way; a setting that is not a bool is refused."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest

from sgam_store import ConfigurationError, SGAMStore
from sgam_store.read import scope, scoring
from sgam_store.read.scoring import centered
from tests.conftest import Placed

ENGINES = ("sqlite", "postgres")
DIMS = 8

# Every turn of Leo's leans along axis 0 (his voice, the chat's register); small talk
# says little else (each its own minor axis), the answer says more (axis 7). The
# question names Leo, so it leans along axis 0 too; its words match no turn's, so
# vectors alone decide.
SMALL_TALK = {f"chatter number {n}": {0: 0.95, 1 + n: 0.31} for n in range(5)}
ANSWER = {"signed up for a photography course": {0: 0.6, 7: 0.8}}
QUESTION = {"Which classes is Leo taking?": {0: 0.95, 7: 0.31}}


def _open(target: str, vector_cache: bool = True, **retrieval: object) -> SGAMStore:
    embed = Placed({**SMALL_TALK, **ANSWER, **QUESTION}, DIMS)
    index = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    return SGAMStore.from_conn_string(
        target, index=index, retrieval=retrieval, vector_cache=vector_cache
    )


@pytest.fixture
def chat(target: str) -> Iterator[str]:
    with _open(target) as store:
        store.setup()
        for n, text in enumerate([*SMALL_TALK, *ANSWER]):
            store.put(("acme", "leo"), f"t{n}", {"text": text})
    yield target


def _hits(target: str, prefix: tuple[str, ...] = ("acme", "leo"), **retrieval: object) -> list:
    with _open(target, **retrieval) as store:
        hits = store.search(prefix, query=next(iter(QUESTION)), limit=3)
        return [(hit.key, hit.score) for hit in hits]


@pytest.mark.parametrize("prefix", [("acme", "leo"), ("acme",)], ids=["subject", "tenant"])
def test_centering_ranks_the_answer_above_small_talk(chat: str, prefix: tuple) -> None:
    plain = _hits(chat, prefix, centering=False)
    assert "t5" not in [key for key, _ in plain]  # the speaker's small talk fills the page
    spread = _hits(chat, prefix, centering=True)
    assert spread[0][0] == "t5"
    scores = [score for _, score in spread]
    assert scores == sorted(scores, reverse=True)
    # Scores stay plain cosines: the best of the page is small talk's 0.95*0.95.
    assert spread[0][1] == pytest.approx(max(score for _, score in plain), abs=1e-6)


def test_the_engine_chooses_by_default(chat: str, engine: str) -> None:
    """On SQLite (vectors in process) a search centers unless told not to; on PostgreSQL
    (vectors in the server) it does not unless told to."""
    chosen = engine == "sqlite"
    assert _hits(chat) == _hits(chat, centering=chosen) != _hits(chat, centering=not chosen)


def test_centered_cosines_take_each_facts_best_field() -> None:
    matrix = np.array([[1, 0, 0], [0.8, 0.6, 0], [0.8, 0, 0.6]], np.float32)
    query = np.array([0.8, 0.6, 0], np.float32).tobytes()
    sims = centered(np.array([1, 2, 2]), matrix, query)
    assert set(sims) == {1, 2} and sims[2] > sims[1]
    assert all(-1 - 1e-6 <= s <= 1 + 1e-6 and math.isfinite(s) for s in sims.values())


@pytest.mark.parametrize("bad", ["yes", 1, 0.0])
def test_a_centering_that_is_not_a_bool_is_refused(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="centering must be True, False or None"):
        SGAMStore(":memory:", retrieval={"centering": bad})


def test_a_scope_past_the_small_ceiling_is_ranked_plainly(
    chat: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above SMALL_SCOPE_MAX facts the scope's vectors are not read: centering is ignored
    there (the ceiling lowered to 3 here, below the tenant's 6 facts)."""
    monkeypatch.setattr(scoring, "SMALL_SCOPE_MAX", 3)
    assert _hits(chat, ("acme",), centering=True) == _hits(chat, ("acme",), centering=False)


@pytest.mark.parametrize("prefix", [("acme", "leo"), ("acme",)], ids=["subject", "tenant"])
def test_the_mirror_and_the_database_give_the_same_vectors(chat: str, prefix: tuple) -> None:
    """SQLite's in-process mirror (float32, or int8 with its exact rows) and the stored
    vectors (`vector_cache=False`, PostgreSQL) center alike."""
    read = _hits(chat, prefix, centering=True)
    for retrieval in ({"vector_cache": False}, {"vector_mirror": "int8"}):
        other = _hits(chat, prefix, centering=True, **retrieval)
        assert [key for key, _ in other] == [key for key, _ in read]
        assert [score for _, score in other] == pytest.approx([score for _, score in read])


def _statements(target: str, prefix: tuple[str, ...], **retrieval: object) -> tuple[list, list]:
    """(hits, every statement the search ran) on SQLite, the mirror built beforehand."""
    with _open(target, **retrieval) as store:
        store.search(prefix, query=next(iter(QUESTION)), limit=1)
        ran: list[str] = []
        store.conn.set_trace_callback(ran.append)
        try:
            hits = store.search(prefix, query=next(iter(QUESTION)), limit=3, filter=None)
        finally:
            store.conn.set_trace_callback(None)
        return [(hit.key, hit.score) for hit in hits], ran


def _scope_reads(statements: list[str]) -> int:
    return sum("json_group_array(fact_id)" in sql for sql in statements)


def test_a_whole_tenant_past_the_ceiling_is_not_read_again(
    chat: str, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mirror already counts a whole tenant's facts: one past SMALL_SCOPE_MAX is
    ranked plainly without reading SMALL_SCOPE_MAX + 1 of them a search (a tenant of
    5,000 facts: 0.9 ms a search), as a deeper prefix the scope stage counted is."""
    if engine != "sqlite":
        pytest.skip("the vector mirror is SQLite's")
    monkeypatch.setattr(scoring, "SMALL_SCOPE_MAX", 3)
    hits, ran = _statements(chat, ("acme",), centering=True)
    assert _scope_reads(ran) == 0
    assert hits == _hits(chat, ("acme",), centering=False)
    monkeypatch.setattr(scope, "SMALL_SCOPE_MAX", 3)
    hits, ran = _statements(chat, ("acme", "leo"), centering=True)
    assert _scope_reads(ran) == 1  # the scope stage's count, not a second one
    assert hits == _hits(chat, ("acme", "leo"), centering=False)


def test_a_filter_that_leaves_few_facts_still_centers(
    chat: str, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mirror holds a tenant's facts unfiltered, so a filtered search of a tenant
    past the ceiling still counts its scope, and centers it when few facts pass."""
    monkeypatch.setattr(scoring, "SMALL_SCOPE_MAX", 5)
    with _open(chat) as store:
        store.put(("acme", "leo"), "extra", {"text": "chatter number 0"})
    plain = [
        (hit.key, hit.score)
        for hit in _search(chat, centering=False, filter={"text": {"$ne": "chatter number 0"}})
    ]
    spread = _search(chat, centering=True, filter={"text": {"$ne": "chatter number 0"}})
    assert spread[0].key == "t5" != plain[0][0]


def _search(target: str, **retrieval: object) -> list:
    filter_ = retrieval.pop("filter")
    with _open(target, **retrieval) as store:
        return store.search(("acme",), query=next(iter(QUESTION)), limit=3, filter=filter_)

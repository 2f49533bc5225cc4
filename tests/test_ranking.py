"""Hybrid ranking: matching the query's words always counts, and the score, a similarity as
in LangGraph's stores, never rises down the list.

Vectors come from a fixed table, so cosine ties are exact and only the keyword signal can
order the tied facts.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import ClassVar

import pytest
from langchain_core.embeddings import Embeddings

from sgam_store import SGAMStore
from sgam_store.read.ranking import fuse_relative, fuse_rrf

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine


class TableEmbeddings(Embeddings):
    """The vector of the first table word found in the text (else the filler vector)."""

    TABLE: ClassVar[dict[str, list[float]]] = {
        "query": [1.0, 0.2, 0.0, 0.0],
        "alpha": [1.0, 0.0, 0.0, 0.0],  # the strong keyword hit: closest to the query
        "tied": [1.0, 1.0, 0.0, 0.0],  # the weak keyword hit and the vector-only hit
    }
    FILLER: ClassVar[list[float]] = [0.0, 0.0, 1.0, 0.0]

    def _embed(self, text: str) -> list[float]:
        for word, vector in self.TABLE.items():
            if word in text.split():
                return vector
        return self.FILLER

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.TABLE["query"]


@pytest.fixture(params=["relative", "rrf"])
def store(request):
    index = {"dims": 4, "embed": TableEmbeddings(), "fields": ["text"]}
    retrieval = {"fusion": request.param}
    with SGAMStore.from_conn_string(":memory:", index=index, retrieval=retrieval) as s:
        s.setup()
        s.put(("acme", "s"), "strong", {"text": "alpha zulu alpha zulu alpha"})
        s.put(("acme", "s"), "weak", {"text": "tied zulu " + " ".join(["filler"] * 30)})
        s.put(("acme", "s"), "vector_only", {"text": "tied"})
        for i in range(40):  # keeps "zulu" under the common-term cut (10% of rows)
            s.put(("acme", "s"), f"other{i}", {"text": f"unrelated words number{i}"})
        yield s


def test_a_weak_keyword_match_beats_an_equal_vector_only_hit(store: SGAMStore) -> None:
    hits = store.search(("acme",), query="zulu", limit=10)
    order = [h.key for h in hits]
    assert order[0] == "strong"
    assert order.index("weak") < order.index("vector_only")
    scores = {h.key: h.score for h in hits}
    assert scores["weak"] >= scores["vector_only"]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    )


def test_hybrid_scores_never_rise_down_the_list(store: SGAMStore) -> None:
    for query in ("zulu", "alpha tied", "number3 zulu", "nothing matches this"):
        hits = store.search(("acme",), query=query, limit=50)
        scores = [h.score for h in hits]
        assert scores, query
        assert scores == sorted(scores, reverse=True), query
        assert all(-1 <= s <= 1 for s in scores), query
        # on the similarity scale: each score is the cosine of the hit or of one below it
        table = TableEmbeddings()
        sims = [cosine(table.embed_query(query), table._embed(h.value["text"])) for h in hits]
        for i, score in enumerate(scores):
            assert score == pytest.approx(max(sims[i:]), abs=1e-6), (query, i)


def test_one_result_scores_its_cosine_similarity_as_langgraph_stores_do() -> None:
    index = {"dims": 4, "embed": TableEmbeddings(), "fields": ["text"]}
    with SGAMStore.from_conn_string(":memory:", index=index) as s:
        s.put(("acme",), "only", {"text": "tied words"})
        for query in ("tied", "unrelated"):
            (hit,) = s.search(("acme",), query=query)
            want = cosine(TableEmbeddings.TABLE["query"], TableEmbeddings.TABLE["tied"])
            assert hit.score == pytest.approx(want, abs=1e-6)


def test_threshold_cuts_on_the_reported_score(store: SGAMStore) -> None:
    everything = store.search(("acme",), query="zulu", limit=50)
    floor = everything[2].score
    store.retrieval = type(store.retrieval)(fusion=store.retrieval.fusion, threshold=floor)
    kept = store.search(("acme",), query="zulu", limit=50)
    assert [h.key for h in kept] == [h.key for h in everything if h.score >= floor]


def _ranking(rng: random.Random, ids: list[int]) -> list[tuple[int, float, int]]:
    scored = [(fid, rng.uniform(-1, 1), fid) for fid in ids]
    return sorted(scored, key=lambda t: -t[1])


@pytest.mark.parametrize("seed", range(20))
def test_fusion_is_monotone_and_every_keyword_hit_adds(seed: int) -> None:
    rng = random.Random(seed)
    union = list(range(30))
    keyword_ids = rng.sample(union, 8)
    vector = _ranking(rng, union)
    keyword = [(fid, abs(s), row) for fid, s, row in _ranking(rng, keyword_ids)]
    keyword.sort(key=lambda t: -t[1])
    signals = [(1.0, vector), (1.0, keyword)]
    for fused in (fuse_relative(*signals), fuse_rrf(signals, 60)):
        scores = [s for _, s, _ in fused]
        assert scores == sorted(scores, reverse=True)
        assert all(0 <= s <= 1 for s in scores)
    # Without the keyword signal each keyword hit would score its vector share alone;
    # with it, even the weakest keyword hit gains.
    alone = {fid: s for fid, s, _ in fuse_relative((1.0, vector), (1.0, []))}
    both = {fid: s for fid, s, _ in fuse_relative((1.0, vector), (1.0, keyword))}
    assert all(both[fid] > alone[fid] for fid in keyword_ids)


WORDS = [
    "passport",
    "visa",
    "lima",
    "quito",
    "tea",
    "coffee",
    "trip",
    "june",
    "july",
    "dentist",
    "cat",
    "dog",
]


@pytest.fixture
def subjects(target: str) -> Iterator[SGAMStore]:
    """One tenant of 40 subjects x 6 facts of mixed words: a subject is a small scope."""
    from .conftest import HashEmbeddings

    rng = random.Random(5)
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    store = SGAMStore(target, index=index)
    store.setup()
    for s in range(40):
        for a in range(6):
            text = " ".join(rng.sample(WORDS, 3))
            store.put(("acme", f"s{s:02d}"), f"a{a}", {"text": text, "n": a % 2})
    yield store
    store.close()


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
def test_a_subject_ranked_directly_answers_as_the_tenant_wide_ranking(
    subjects: SGAMStore, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sgam_store.read import ranking

    queries = [(f"s{s:02d}", " ".join(WORDS[s % 12 : s % 12 + 2])) for s in range(0, 40, 3)]

    def answers(**kw: object) -> list:
        subjects.retrieval = type(subjects.retrieval)(mode=mode)
        found = [subjects.search(("acme", s), query=q, limit=4, **kw) for s, q in queries]
        return [[(i.key, round(i.score, 6)) for i in items] for items in found]

    direct = answers()
    filtered = answers(filter={"n": 1})
    monkeypatch.setattr(ranking, "SMALL_SCOPE_MAX", 0)  # every scope ranked tenant-wide
    if mode == "hybrid":  # fused over the same candidates at most: the same best hit
        assert [a[:1] for a in direct] == [a[:1] for a in answers()]
    else:
        assert direct == answers()
        assert filtered == answers(filter={"n": 1})
    assert all(len(a) == 4 for a in direct if mode != "keyword")

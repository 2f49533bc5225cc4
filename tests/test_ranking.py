"""Hybrid ranking: matching the query's words always counts, and the score, a similarity as
in LangGraph's stores, never rises down the list.

Vectors come from a fixed table, so cosine ties are exact and only the keyword signal can
order the tied facts.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterator
from typing import ClassVar

import pytest
from langchain_core.embeddings import Embeddings

from sgam_store import SGAMStore
from sgam_store.read.fusion import fuse_relative, fuse_rrf

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
    from sgam_store.read import scope

    queries = [(f"s{s:02d}", " ".join(WORDS[s % 12 : s % 12 + 2])) for s in range(0, 40, 3)]

    def answers(**kw: object) -> list:
        # Uncentered: a prefix the scope stage counted past its ceiling (0 below) is
        # ranked tenant-wide as it comes, where a subject's own facts are centered.
        subjects.retrieval = type(subjects.retrieval)(mode=mode, centering=False)
        found = [subjects.search(("acme", s), query=q, limit=4, **kw) for s, q in queries]
        return [[(i.key, round(i.score, 6)) for i in items] for items in found]

    direct = answers()
    filtered = answers(filter={"n": 1})
    monkeypatch.setattr(scope, "SMALL_SCOPE_MAX", 0)  # every scope ranked tenant-wide
    if mode == "hybrid":  # fused over the same candidates at most: the same best hit
        assert [a[:1] for a in direct] == [a[:1] for a in answers()]
    else:
        assert direct == answers()
        assert filtered == answers(filter={"n": 1})
    assert all(len(a) == 4 for a in direct if mode != "keyword")


# ---------------------------------------------------------------- calibrated keyword scores


def keyword_hits(store: SGAMStore, query: str, limit: int = 10) -> list[tuple[str, float]]:
    return [(h.key, h.score) for h in store.search(("acme",), query=query, limit=limit)]


@pytest.fixture
def plain(target: str) -> Iterator[SGAMStore]:
    """No index: keyword search, as on a plain install."""
    with SGAMStore.from_conn_string(target) as s:
        s.setup()
        yield s


def test_an_exact_match_scores_high_in_a_three_memory_store(plain: SGAMStore) -> None:
    """BM25's weights collapse when a term is in most rows (1.94e-06 here before); the
    calibrated score does not depend on the other rows."""
    plain.put(("acme", "a"), "old", {"text": "Alice's passport deadline is 2026-07-15"})
    plain.put(("acme", "a"), "new", {"text": "Alice's passport deadline moved to 2026-06-30"})
    plain.put(("acme", "a"), "tea", {"text": "Alice likes green tea"})
    hits = dict(keyword_hits(plain, "passport deadline"))
    assert set(hits) == {"old", "new"} and min(hits.values()) >= 0.9
    own = "Alice's passport deadline moved to 2026-06-30"
    ranked = keyword_hits(plain, own)
    assert ranked[0] == ("new", 1.0)  # the query's own text, stored
    assert dict(ranked)["tea"] < 0.5 * dict(ranked)["old"] < 0.5


def test_one_shared_token_scores_low_and_the_same_at_any_store_size(target: str) -> None:
    """The issue's example: one shared token of the query's six, at 50 and 2,000
    memories, and against a memory that shares all six."""
    from langgraph.store.base import PutOp

    query = "Mira's passport deadline moved to June 30"
    found = {}
    for size in (50, 2000):
        with SGAMStore.from_conn_string(target) as s:
            s.setup()
            s.batch([PutOp(("acme", "notes"), f"n{i}", {"text": f"note number {i} about "
                           f"topic {i % 7} and travel plans"}) for i in range(size)])  # fmt: skip
            s.put(("acme", "mira"), "deadline", {"text": query})
            hits = dict(keyword_hits(s, query, limit=100))
            found[size] = (hits.pop("deadline"), hits["n30"], max(hits.values()))
            s.purge("acme")
    assert found[50] == found[2000]
    full, one, best_other = found[50]
    assert full == 1.0 and one == best_other == pytest.approx(1 / 6)


def test_a_memory_sharing_no_term_does_not_appear(plain: SGAMStore) -> None:
    plain.put(("acme", "a"), "tea", {"text": "Alice likes green tea"})
    plain.put(("acme", "a"), "dl", {"text": "passport deadline"})
    assert [k for k, _ in keyword_hits(plain, "passport deadlines")] == ["dl"]
    assert keyword_hits(plain, "visa office hours") == []


@pytest.mark.parametrize("seed", range(4))
def test_calibration_keeps_the_order_and_never_rises(plain: SGAMStore, seed: int) -> None:
    """Order: the engine's keyword ranking's, untouched. Score: each hit's share of the
    query's terms, lowered to the lowest share above it."""
    rng = random.Random(seed)
    for n in range(60):
        plain.put(("acme", f"s{n % 5}"), f"k{n}", {"text": " ".join(rng.sample(WORDS, 4))})
    query = " ".join(rng.sample(WORDS, 5))
    hits = plain.search(("acme",), query=query, limit=60)
    engine = plain.engine
    with engine.reading() as conn:
        terms = engine.reads.keyword_terms(conn, query)
        match = engine.reads.keyword_query(conn, terms, "acme")
        order = [fid for fid, _ in engine.reads.keyword_hits(conn, match, 100)]
    ids = [plain.fact_at("acme", h.namespace[1], h.key).fact_id for h in hits]
    assert ids == [fid for fid in order if fid in set(ids)] and len(ids) == len(order)
    shares = [len(set(terms) & set(engine_terms(plain, h.value["text"]))) / len(set(terms))
              for h in hits]  # fmt: skip
    assert hits and min(shares) > 0  # every hit holds a query term
    assert [h.score for h in hits] == [min(shares[: i + 1]) for i in range(len(hits))]


def engine_terms(store: SGAMStore, text: str) -> list[str]:
    """`text` analyzed as the store's keyword rows are."""
    with store.engine.reading() as conn:
        return store.engine.reads.keyword_terms(conn, text)


@pytest.mark.parametrize("size", [50, 2000])
@pytest.mark.parametrize("weak", ["random", "hashed"])
def test_hybrid_on_a_weak_embedding_ranks_the_exact_match_above_one_shared_digit(
    target: str, size: int, weak: str
) -> None:
    """Random vectors (an embedding that carries no meaning) or hashed words and
    trigrams: the memory holding every word of the query still ranks above one that
    shares a digit, and the score stays a cosine, as today."""
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langgraph.store.base import PutOp

    from .conftest import HashEmbeddings

    embed = DeterministicFakeEmbedding(size=16) if weak == "random" else HashEmbeddings(16)
    index = {"dims": 16, "embed": embed, "fields": ["text"]}
    query = "Mira's passport deadline is 2026-06-30"
    with SGAMStore.from_conn_string(target, index=index) as s:
        s.setup()
        s.batch([PutOp(("acme", "notes"), f"n{i}", {"text": f"note number {i} about topic "
                       f"{i % 7} and travel plans"}) for i in range(size)])  # fmt: skip
        s.put(("acme", "mira"), "deadline", {"text": "Correction: " + query})
        hits = s.search(("acme",), query=query, limit=size + 1)
        keys = [h.key for h in hits]
        assert keys.index("deadline") < keys.index("n30")
        table = index["embed"]
        q = table.embed_query(query)
        own = cosine(q, table.embed_documents(["Correction: " + query])[0])
        assert hits[keys.index("deadline")].score >= own - 1e-6  # a cosine, as today


def score_table() -> list[tuple[str, str, str]]:
    """The (query, memory, score) rows of docs/read-path.md's keyword-score table."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "read-path.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| ([\d.]+|—) \|$", doc, re.M)
    assert len(rows) >= 6, "the table of keyword scores moved or changed shape"
    return rows


def test_the_documented_keyword_scores_are_what_search_reports(target: str) -> None:
    for query, memory, documented in score_table():
        with SGAMStore.from_conn_string(target) as s:
            s.setup()
            s.put(("acme", "x"), "k1", {"text": memory})
            hits = s.search(("acme",), query=query)
            found = f"{hits[0].score:.2f}" if hits else "—"
            assert found == documented, (query, memory)
            s.purge("acme")

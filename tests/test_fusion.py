"""Fusion: hybrid search finds what either signal alone misses, its scores never rise down
the list in either fusion mode, and a term common in the searched scope does not count.

The fixed vectors below make each single signal fail on a different question: vectors
rank a reworded decoy above the passport turn, keywords rank a turn full of the question's
words above the adoption turn. Hybrid has to answer both.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import Embeddings

from sgam_store import SGAMStore
from sgam_store.core.errors import ConfigurationError
from sgam_store.read import terms
from sgam_store.read.fusion import fuse, fuse_relative, fuse_rrf
from sgam_store.read.query import RetrievalConfig

from .conftest import HashEmbeddings

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine

ADOPTION = "Maya: we adopted a beagle and named it Biscuit"
DOG_TALK = "Maya: dog names, dog names, I would never name a dog"
PASSPORT = "Maya: the passport deadline moved to June 30"
DECOY = "Maya: my travel papers are due soon"
PET_QUESTION = "What did Maya name the dog?"
PASSPORT_QUESTION = "When is Maya's passport deadline?"


class FixedEmbeddings(Embeddings):
    """Hand-placed vectors: the adoption turn is nearest the pet question and the decoy
    nearest the passport question; everything else points away."""

    VECTORS: ClassVar[dict[str, list[float]]] = {
        PET_QUESTION: [1.0, 0.0, 0.0],
        PASSPORT_QUESTION: [0.0, 1.0, 0.0],
        ADOPTION: [0.98, 0.2, 0.0],
        DOG_TALK: [0.05, 0.0, 1.0],
        PASSPORT: [0.0, 0.9, 0.44],
        DECOY: [0.0, 0.98, 0.2],
    }
    FILLER: ClassVar[list[float]] = [0.0, 0.0, 1.0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.VECTORS.get(t, self.FILLER) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.VECTORS[text]


@pytest.fixture
def turns(target: str) -> Iterator[SGAMStore]:
    index = {"dims": 3, "embed": FixedEmbeddings(), "fields": ["text"]}
    with SGAMStore.from_conn_string(target, index=index) as store:
        store.setup()
        for key, text in [("adoption", ADOPTION), ("dog_talk", DOG_TALK),
                          ("passport", PASSPORT), ("decoy", DECOY)]:  # fmt: skip
            store.put(("acme", "maya"), key, {"text": text})
        for i in range(6):
            store.put(("acme", "maya"), f"chat{i}", {"text": f"Maya: the weather, part {i}"})
        yield store


def best(store: SGAMStore, prefix: tuple[str, ...], question: str, mode: str) -> str:
    store.retrieval = RetrievalConfig(mode=mode)
    return store.search(prefix, query=question, limit=3)[0].key


@pytest.mark.parametrize("prefix", [("acme", "maya"), ("acme",)], ids=["subject", "tenant"])
def test_hybrid_answers_where_each_signal_alone_fails(
    turns: SGAMStore, prefix: tuple[str, ...]
) -> None:
    assert best(turns, prefix, PET_QUESTION, "keyword") == "dog_talk"  # keywords fail
    assert best(turns, prefix, PASSPORT_QUESTION, "vector") == "decoy"  # vectors fail
    assert best(turns, prefix, PET_QUESTION, "vector") == "adoption"
    assert best(turns, prefix, PASSPORT_QUESTION, "keyword") == "passport"
    assert best(turns, prefix, PET_QUESTION, "hybrid") == "adoption"
    assert best(turns, prefix, PASSPORT_QUESTION, "hybrid") == "passport"


@pytest.mark.parametrize("fusion", ["relative", "rrf"])
@pytest.mark.parametrize("prefix", [("acme", "maya"), ("acme",)], ids=["subject", "tenant"])
def test_store_scores_never_rise_down_the_list(
    turns: SGAMStore, fusion: str, prefix: tuple[str, ...]
) -> None:
    turns.retrieval = RetrievalConfig(fusion=fusion)
    for question in (PET_QUESTION, PASSPORT_QUESTION):
        scores = [item.score for item in turns.search(prefix, query=question, limit=10)]
        assert len(scores) == 10
        assert scores == sorted(scores, reverse=True)


def _ranked(scores: dict[int, float]) -> list[tuple[int, float, int]]:
    return sorted(((fid, s, fid) for fid, s in scores.items()), key=lambda t: (-t[1], t[0]))


@settings(max_examples=200, deadline=None)
@given(
    cosines=st.lists(st.floats(-1, 1), min_size=1, max_size=25),
    bm25=st.lists(st.floats(0, 0.99), max_size=25),
    vector_weight=st.floats(0, 3),
    keyword_weight=st.floats(0, 3),
    fusion=st.sampled_from(["relative", "rrf"]),
)
def test_fused_scores_never_rise_with_rank(
    cosines: list[float],
    bm25: list[float],
    vector_weight: float,
    keyword_weight: float,
    fusion: str,
) -> None:
    if vector_weight + keyword_weight == 0:
        return
    cosine = dict(enumerate(cosines))
    keyword = _ranked({fid: s for fid, s in enumerate(bm25) if fid in cosine})
    vector = _ranked(cosine)
    cfg = RetrievalConfig(fusion=fusion, vector_weight=vector_weight, keyword_weight=keyword_weight)
    signals = [(vector_weight, vector), (keyword_weight, keyword)]
    raw = fuse_rrf(signals, cfg.rrf_k) if fusion == "rrf" else fuse_relative(*signals)
    for ranked in (raw, fuse(vector, keyword, cosine, cfg)):
        scores = [s for _, s, _ in ranked]
        assert scores == sorted(scores, reverse=True)
        assert {fid for fid, _, _ in ranked} == set(cosine)


@pytest.fixture
def chat(target: str) -> Iterator[SGAMStore]:
    """One conversation of 80 turns, each opening with its speaker's name."""
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    with SGAMStore.from_conn_string(target, index=index) as store:
        store.setup()
        for i in range(80):
            words = " ".join(["and so on"] * (i % 7))
            store.put(("acme", "maya"), f"t{i:02d}", {"text": f"Maya: news number{i} {words}"})
        yield store


def test_a_name_in_most_of_the_scope_does_not_count(
    chat: SGAMStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def keys(mode: str) -> list[str]:
        # the levers over vectors off: this is about the keyword side's common terms
        chat.retrieval = RetrievalConfig(mode=mode, centering=False, redundancy=0)
        return [i.key for i in chat.search(("acme", "maya"), query="Maya tennis", limit=10)]

    # "Maya" is in every turn of the scope: hybrid ranks as vectors alone would.
    assert keys("hybrid") == keys("vector")
    monkeypatch.setattr(terms, "SCOPE_COMMON_SHARE", 1.0)  # counted: the shortest turns win
    assert keys("hybrid") != keys("vector")


@pytest.mark.parametrize(
    "overrides",
    [
        {"depth": 0},
        {"vector_weight": -1.0},
        {"keyword_weight": math.nan},
        {"vector_weight": 0.0, "keyword_weight": 0.0},
        {"rrf_k": -1},
        {"keyword_floor": 1.5},
    ],
)
def test_fusion_settings_are_checked(overrides: dict[str, float]) -> None:
    with pytest.raises(ConfigurationError):
        RetrievalConfig(**overrides)  # type: ignore[arg-type]

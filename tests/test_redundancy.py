"""Maximal marginal relevance over the candidates' vectors (`RetrievalConfig.redundancy`,
`fusion.novel`; issue 40): copies of one turn stop filling a page.

Vectors are placed by hand (a stand-in for a model): three keys hold the same small talk,
nearest the question; a second answer is a little less near and points elsewhere. At 0
(the default) the copies fill the page; at 0.2 the second answer comes second. Real stores on both
engines; scores never rise down the page; pages agree with one longer page; a setting
out of [0, 1) is refused."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from sgam_store import ConfigurationError, SGAMStore
from sgam_store.read.fusion import novel

ENGINES = ("sqlite", "postgres")
DIMS = 6
PLACED = {
    "the usual small talk": (0.9, 0.436, 0, 0, 0, 0),
    "a different reply": (0.89, -0.456, 0, 0, 0, 0),
    "something else": (0.5, 0, 0.866, 0, 0, 0),
    "Which answers are there?": (1, 0, 0, 0, 0, 0),
}
KEYS = {"a1": "the usual small talk", "a2": "the usual small talk",
        "a3": "the usual small talk", "b": "a different reply", "c": "something else"}  # fmt: skip


class Placed(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(PLACED[t]) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return list(PLACED[text])


def _open(target: str, **retrieval: object) -> SGAMStore:
    index = {"dims": DIMS, "embed": Placed(), "fields": ["text"]}
    # centering off: this is about the page's copies, not the scope's lean
    return SGAMStore.from_conn_string(
        target, index=index, retrieval={"centering": False, **retrieval}
    )


@pytest.fixture
def chat(target: str) -> Iterator[str]:
    with _open(target) as store:
        store.setup()
        for key, text in KEYS.items():
            store.put(("acme", "leo"), key, {"text": text})
    yield target


def _page(target: str, limit: int = 3, offset: int = 0, **retrieval: object) -> list:
    with _open(target, **retrieval) as store:
        hits = store.search(("acme", "leo"), query="Which answers are there?",
                            limit=limit, offset=offset)  # fmt: skip
        return [(hit.key, hit.score) for hit in hits]


def test_copies_give_way_to_a_second_answer(chat: str) -> None:
    plain = [key for key, _ in _page(chat, redundancy=0)]
    assert plain == ["a1", "a2", "a3"]  # the fused order: the copies fill the page
    assert _page(chat) == _page(chat, redundancy=0)  # off by default
    novel_page = _page(chat, redundancy=0.2)
    assert novel_page[0][0] == "a1" and novel_page[1][0] == "b"
    scores = [score for _, score in novel_page]
    assert scores == sorted(scores, reverse=True)


def test_pages_agree_with_one_longer_page(chat: str) -> None:
    whole = [key for key, _ in _page(chat, limit=4, redundancy=0.2)]
    pages = _page(chat, limit=2, redundancy=0.2) + _page(chat, limit=2, offset=2, redundancy=0.2)
    pages = [key for key, _ in pages]
    assert pages == whole and len(set(whole)) == 4


@pytest.mark.parametrize("bad", [-0.1, 1, 1.5, math.nan, "0.2", True])
def test_a_redundancy_outside_0_1_is_refused(bad: object) -> None:
    with pytest.raises(ConfigurationError, match=r"redundancy must be a number in \[0, 1\)"):
        SGAMStore(":memory:", retrieval={"redundancy": bad})


def test_novel_keeps_the_rest_in_order_and_reads_only_the_head() -> None:
    fused = [(fid, 1 - fid / 10, fid) for fid in range(8)]
    rows = {0: (1, 0), 1: (1, 0), 2: (0.6, 0.8), 3: (0, 1)}
    asked: list[list[int]] = []

    def units(ids: list[int]) -> np.ndarray:
        asked.append(ids)
        return np.array([rows.get(i, (0, 0)) for i in ids], np.float32)

    out = novel(fused, units, 4, 2, 0.5)
    assert asked == [[0, 1, 2, 3]]
    # 3 shares no direction with 0; 1 and 2 follow in the fused order
    assert [fid for fid, _, _ in out] == [0, 3, 1, 2, 4, 5, 6, 7]
    assert novel(fused, units, 4, 2, 0.0) == fused

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
from langchain_core.embeddings import Embeddings

from sgam_store import ConfigurationError, SGAMStore
from sgam_store.read import scoring
from sgam_store.read.scoring import centered

ENGINES = ("sqlite", "postgres")
DIMS = 8

# Every turn of Leo's leans along axis 0 (his voice, the chat's register); small talk
# says little else (each its own minor axis), the answer says more (axis 7). The
# question names Leo, so it leans along axis 0 too; its words match no turn's, so
# vectors alone decide.
SMALL_TALK = {f"chatter number {n}": {0: 0.95, 1 + n: 0.31} for n in range(5)}
ANSWER = {"signed up for a photography course": {0: 0.6, 7: 0.8}}
QUESTION = {"Which classes is Leo taking?": {0: 0.95, 7: 0.31}}


class Placed(Embeddings):
    """Vectors placed by hand (a stand-in for a model, as conftest's HashEmbeddings is):
    each text's components, by axis."""

    def __init__(self, table: dict[str, dict[int, float]]) -> None:
        self.table = table

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * DIMS
        for axis, value in self.table[text].items():
            vec[axis] = value
        return vec

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def _open(target: str, vector_cache: bool = True, **retrieval: object) -> SGAMStore:
    embed = Placed({**SMALL_TALK, **ANSWER, **QUESTION})
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

"""Diversification over source episodes (issue 40, lever 2): `retrieval={"diversity": d}`
spreads a hybrid search's first hits over the episodes they came from, so near-copies
from one conversation do not crowd another conversation out of the page. Off (the
default) the order is today's, to the byte; a diversity outside [0, 1) is refused."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgam_store import ConfigurationError, MemoryFact, SGAMStore
from sgam_store.read.fusion import spread

from .conftest import HashEmbeddings

ENGINES = ("sqlite", "postgres")

# Four turns of one evening repeat the question's words; the other evening's answer says
# less of them, so fused alone it ranks below all four.
MONDAY = [f"Maya: tea and chess, tea and chess again, round {n}" for n in range(4)]
FRIDAY = "Maya: we played chess at the club, with green tea"
QUESTION = "tea and chess"


def _turn(text: str, n: int, episode: str) -> MemoryFact:
    return MemoryFact(tenant_id="acme", subject="maya", attribute=f"t{n}",
                      value={"text": text}, valid_from=f"2025-03-0{n + 1}T18:00:00Z",
                      source_episode_id=episode)  # fmt: skip


def _open(target: str, **retrieval: object) -> SGAMStore:
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    return SGAMStore.from_conn_string(target, index=index, retrieval=retrieval)


@pytest.fixture
def chats(target: str) -> Iterator[str]:
    with _open(target) as store:
        store.setup()
        for n, text in enumerate(MONDAY):
            store.replace_fact(_turn(text, n, "monday"))
        store.replace_fact(_turn(FRIDAY, len(MONDAY), "friday"))
        store.put(("acme", "notes"), "unrelated", {"text": "the boiler needs a check"})
    yield target


def _keys(target: str, prefix: tuple[str, ...], **retrieval: object) -> list[str]:
    with _open(target, **retrieval) as store:
        return [hit.key for hit in store.search(prefix, query=QUESTION, limit=3)]


@pytest.mark.parametrize("prefix", [("acme", "maya"), ("acme",)], ids=["subject", "tenant"])
def test_diversity_brings_the_other_episode_into_the_page(chats: str, prefix: tuple) -> None:
    plain = _keys(chats, prefix)
    assert "t4" not in plain and len(plain) == 3  # the Monday copies fill the page
    spread = _keys(chats, prefix, diversity=0.5)
    assert spread[0] == plain[0] and "t4" in spread[:2]


def test_diversity_off_is_todays_order_to_the_byte(chats: str) -> None:
    def hits(**retrieval: object) -> list[tuple]:
        with _open(chats, **retrieval) as store:
            found = store.search(("acme",), query=QUESTION, limit=10)
            return [(h.namespace, h.key, h.value, h.score) for h in found]

    assert hits(diversity=0.0) == hits() and hits()


@pytest.mark.parametrize("bad", [-0.1, 1.0, 2, float("nan"), "0.2", True])
def test_diversity_outside_its_range_is_refused(db_path: str, bad: object) -> None:
    with pytest.raises(ConfigurationError, match="diversity"):
        SGAMStore(db_path, retrieval={"diversity": bad})


def _greedy(fused: list[tuple], episodes: dict[int, str], n: int, d: float) -> list[tuple]:
    """Maximal marginal relevance as written: every pick scans every hit left."""
    head, seen, picked = list(fused[:n]), set(), []
    while head:
        gains = [(1 - d) * s - d * (episodes.get(r) in seen) for _, s, r in head]
        hit = head.pop(gains.index(max(gains)))
        picked.append(hit)
        if hit[2] in episodes:
            seen.add(episodes[hit[2]])
    return picked + list(fused[n:])


@settings(max_examples=300, deadline=None)
@given(
    scores=st.lists(st.floats(0, 1), max_size=40),
    labels=st.lists(st.sampled_from("abcd-"), min_size=40, max_size=40),
    n=st.integers(1, 45),
    d=st.floats(0, 0.99),
)
def test_spread_is_mmr_in_one_pass(
    scores: list[float], labels: list[str], n: int, d: float
) -> None:
    fused = [(i, s, 100 + i) for i, s in enumerate(sorted(scores, reverse=True))]
    episodes = {100 + i: e for i, e in enumerate(labels) if e != "-"}  # "-": none known
    asked: list[list[int]] = []

    def episodes_of(rows: list[int]) -> dict[int, str]:
        asked.append(rows)
        return {r: episodes[r] for r in rows if r in episodes}

    assert spread(fused, episodes_of, n, d) == _greedy(fused, episodes, n, d)
    assert asked == [[row for _, _, row in fused[:n]]]  # the first n hits' episodes alone


def test_an_unknown_retrieval_setting_is_named(db_path: str) -> None:
    """A typo ("diversty") is a ConfigurationError that names it and the known settings,
    and no file is made."""
    with pytest.raises(ConfigurationError, match=r"'diversty'.*known: .*diversity"):
        SGAMStore(db_path, retrieval={"diversty": 0.1})
    assert not os.path.exists(db_path)

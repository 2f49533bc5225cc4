"""Hubness in a centered ranking (issue 40, session 47): a memory like many others of its
scope (small talk said every week) is near every query, so `retrieval={"hubness": h}`
lowers each fact by h times its mean centered cosine with its 10 nearest facts
(`scoring.hubs`), CSLS's ranking at 0.5, the default. Checked against a float64
reference of that definition, both ways a centered search is taken (the kept `Centre`
with its `scope_hubs`, and the direct `centered`), and through the store on both
engines: the answer passes the near copies, the scores stay plain cosines, 0 turns it
off, and a setting that is not a finite number >= 0 is refused."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgam_store import ConfigurationError, SGAMStore
from sgam_store.read.scoring import HUB_NEIGHBOURS, Centre, centered, scope_hubs
from tests.conftest import Placed

ENGINES = ("sqlite", "postgres")
DIMS = 24
# Leo's turns all lean along axis 0. Six near copies of one bit of small talk (axis 1);
# the answer and fifteen other turns say something of their own (an axis each): 22
# facts, more than twice the neighbours a fact's hubness averages.
SMALL_TALK = {f"chatter number {n}": {0: 0.9, 1: 0.43, 2: 0.01 * n} for n in range(6)}
ANSWER = {"signed up for a photography course": {0: 0.6, 3: 0.8}}
OTHERS = {f"other news {n}": {0: 0.6, 4 + n: 0.8} for n in range(15)}
# The question leans toward the small talk more than toward the answer; its words match
# no turn's, so vectors alone decide.
QUESTION = {"Which classes are being taken?": {0: 0.8, 1: 0.5, 3: 0.4}}


def _open(target: str, **retrieval: object) -> SGAMStore:
    embed = Placed({**SMALL_TALK, **ANSWER, **OTHERS, **QUESTION}, DIMS)
    index = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    return SGAMStore.from_conn_string(target, index=index, retrieval=retrieval)


@pytest.fixture
def chat(target: str) -> Iterator[str]:
    with _open(target) as store:
        store.setup()
        for n, text in enumerate([*SMALL_TALK, *ANSWER, *OTHERS]):
            store.put(("acme", "leo"), f"t{n}", {"text": text})
    yield target


def _hits(target: str, prefix: tuple[str, ...], **retrieval: object) -> list[tuple[str, float]]:
    with _open(target, **{"centering": True, **retrieval}) as store:
        hits = store.search(prefix, query=next(iter(QUESTION)), limit=3)
        return [(hit.key, hit.score) for hit in hits]


@pytest.mark.parametrize("prefix", [("acme", "leo"), ("acme",)], ids=["subject", "tenant"])
def test_the_answer_passes_the_near_copies(chat: str, prefix: tuple[str, ...]) -> None:
    answer = f"t{len(SMALL_TALK)}"
    copies = _hits(chat, prefix, hubness=0)
    assert copies[0][0] != answer  # centered alone, the small talk leads
    hubs = _hits(chat, prefix)  # the default, 0.5
    assert hubs[0][0] == answer
    assert hubs == _hits(chat, prefix, hubness=0.5)
    # Scores stay the plain cosines: the page's best is the small talk's, now second.
    plain = dict(_hits(chat, prefix, centering=False, hubness=0))
    assert hubs[0][1] == pytest.approx(max(plain.values()), abs=1e-6)


def test_a_point_in_time_view_ranks_alike(chat: str) -> None:
    """A view at an instant centers its scope's rows directly (`centered`), not through
    the kept `Centre`: the same order."""
    with _open(chat, centering=True) as store:
        now = store.search(("acme", "leo"), query=next(iter(QUESTION)), limit=3)
        view = store.as_of("2999-01-01T00:00:00Z")
        then = view.search(("acme", "leo"), query=next(iter(QUESTION)), limit=3)
    assert [hit.key for hit in then] == [hit.key for hit in now]


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), True, "0.5", None])
def test_a_hubness_that_does_not_rank_is_refused(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="hubness must be a finite number >= 0"):
        SGAMStore(":memory:", retrieval={"hubness": bad})


def _reference(rows: np.ndarray, query: np.ndarray, hubness: float) -> np.ndarray:
    """The definition, in float64: cosines about the mean of the unit rows, less hubness
    times each row's mean cosine (about the mean) with its HUB_NEIGHBOURS nearest, in a
    scope of more than twice that many."""
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    mean = unit.mean(axis=0)
    rel = unit - mean
    rel /= np.linalg.norm(rel, axis=1, keepdims=True)
    q = query / np.linalg.norm(query) - mean
    sims = rel @ (q / np.linalg.norm(q))
    if len(rows) <= 2 * HUB_NEIGHBOURS:  # no neighbourhood: half the scope or more
        return sims
    gram = rel @ rel.T
    np.fill_diagonal(gram, -np.inf)
    return sims - hubness * np.sort(gram, axis=1)[:, -HUB_NEIGHBOURS:].mean(axis=1)


@st.composite
def scopes(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """A scope's rows leaning one way (as a conversation's do), some repeated, none at
    the mean, and a query."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(2, 60))
    rows = rng.normal(size=(n, DIMS))
    rows[:, 0] += draw(st.floats(0, 3))
    for i in draw(st.lists(st.integers(0, n - 1), max_size=6)):
        rows[i] = rows[draw(st.integers(0, n - 1))] + rng.normal(scale=0.05, size=DIMS)
    query = rng.normal(size=DIMS)
    query[0] += draw(st.floats(0, 3))
    return rows.astype(np.float32), query.astype(np.float32)


@settings(max_examples=200, deadline=None)
@given(scopes(), st.sampled_from([0.0, 0.5, 1.0, 3.0]))
def test_both_ways_give_the_definition(scope: tuple[np.ndarray, np.ndarray], h: float) -> None:
    rows, query = scope
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    apart = np.linalg.norm(unit - unit.mean(axis=0), axis=1)
    if apart.min() < 1e-2:
        return  # a row at the mean has no direction about it (tests/test_centering_speed.py)
    want = _reference(rows.astype(np.float64), query.astype(np.float64), h)
    plain = (unit @ (query / np.linalg.norm(query))).astype(np.float64)
    kept = Centre.of(unit).cosines(plain, query.tobytes()) - h * scope_hubs(rows)
    direct = centered(np.arange(len(rows)), rows, query.tobytes(), h)
    assert kept == pytest.approx(want, abs=2e-4)
    assert [direct[i] for i in range(len(rows))] == pytest.approx(want, abs=2e-4)


def test_a_scope_of_twenty_facts_or_fewer_ranks_as_without_it(target: str) -> None:
    """Twice the neighbours or fewer, a fact's nearest are most of the scope: no
    neighbourhood to be dense in, so no fact is lowered (four dinners, three alike)."""
    with _open(target) as store:
        store.setup()
        for n, text in enumerate([*SMALL_TALK, *ANSWER, *OTHERS][: 2 * HUB_NEIGHBOURS]):
            store.put(("acme", "leo"), f"t{n}", {"text": text})
    assert _hits(target, ("acme", "leo")) == _hits(target, ("acme", "leo"), hubness=0)

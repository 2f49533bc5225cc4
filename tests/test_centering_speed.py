"""Centering at the cost of a plain search (issue 40): a small scope's centered cosines
follow from the plain ones and the scope's `Centre`, which SQLite's vector mirror keeps
until the scope's tenant is written. The shortcut must rank as `centered` does (the
direct form, still used for facts of several fields and for point-in-time views); a
kept centre must never outlive a write; an unchanged scope is not read again, and a
tenant's whole scope is ready before its first search."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgam_store import SGAMStore
from sgam_store.read import scoring
from sgam_store.read.scoring import centered
from tests.conftest import HashEmbeddings

DIMS = 32
TOLERANCE = 1e-5  # float32 rounding, through a difference of nearly equal terms
WORDS = ["passport", "visa", "flight", "hotel", "invoice", "budget", "garden", "piano"]


def _agree(fast: dict[int, float], direct: dict[int, float], tolerance: dict[int, float]) -> None:
    """Same facts, same cosines to each one's rounding, and no two facts whose cosines
    differ by more than their rounding in the other order."""
    assert fast.keys() == direct.keys()
    for fid, sim in direct.items():
        assert fast[fid] == pytest.approx(sim, abs=tolerance[fid])
    ranked = sorted(direct, key=direct.__getitem__)
    for low, high in itertools.pairwise(ranked):
        if direct[high] - direct[low] > tolerance[high] + tolerance[low]:
            assert fast[high] > fast[low]


def _rounding(ids: np.ndarray, rows: np.ndarray) -> dict[int, float]:
    """How far float32 leaves each fact's centered cosine uncertain: ~1e-7 of its unit
    vector, over its distance from the mean (near copies of one text are ~1e-3 apart,
    so their cosines about the mean are known to ~1e-4 only, in either way of taking
    them)."""
    wide = rows.astype(np.float64)
    norms = np.linalg.norm(wide, axis=1, keepdims=True)
    unit = np.divide(wide, norms, out=np.zeros_like(wide), where=norms > 0)
    apart = np.linalg.norm(unit - unit.mean(axis=0), axis=1)
    bound = TOLERANCE + 1e-6 / np.maximum(apart, 1e-9)
    return dict(zip(ids.tolist(), bound.tolist(), strict=True))


@st.composite
def scopes(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """A scope's rows (some leaning one way, as a conversation's do; some repeated, some
    zero) and a query."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(1, 40))
    rows = rng.normal(size=(n, 8)).astype(np.float32)
    rows[:, 0] += draw(st.floats(0, 4))  # the shared direction
    for i in draw(st.lists(st.integers(0, n - 1), max_size=3)):
        rows[i] = rows[draw(st.integers(0, n - 1))]  # a repeated text
    if draw(st.booleans()):
        rows[draw(st.integers(0, n - 1))] = 0  # no direction
    if draw(st.booleans()):  # near copies of one text: every vector close to the mean
        rows = (rows[0] + rng.normal(scale=1e-3, size=rows.shape)).astype(np.float32)
    query = rng.normal(size=8).astype(np.float32)
    query[0] += draw(st.floats(0, 4))
    return rows, query


@settings(max_examples=300, deadline=None)
@given(scopes(), st.booleans())
def test_the_centre_gives_the_centered_cosines(
    scope: tuple[np.ndarray, np.ndarray], as_stored: bool
) -> None:
    """From unit rows (the float32 mirror's, int8's exact ones) or rows of any length (a
    float16 mirror's are not quite unit), each fact's plain cosine as a search reads it."""
    rows, query = scope
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit = rows if as_stored else np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    q = query / np.linalg.norm(query)
    plain = (unit @ q).astype(np.float64)
    ids = np.arange(len(rows)) * 7 + 3
    sims = scoring.Centre.of(unit).cosines(plain, query.tobytes())
    fast = dict(zip(ids.tolist(), sims.tolist(), strict=True))
    _agree(fast, centered(ids, rows, query.tobytes()), _rounding(ids, rows))


def test_a_scope_of_one_fact_has_no_direction_about_its_mean() -> None:
    row = np.array([[0.6, 0.8, 0.0]], np.float32)
    query = np.array([1, 0, 0], np.float32).tobytes()
    assert scoring.Centre.of(row).cosines(np.array([0.6]), query).tolist() == [0.0]
    assert centered(np.array([5]), row, query) == {5: 0.0}


# ---------------------------------------------------------------------- in a store

LEO = ("acme", "leo")
QUERIES = ["what did Leo say about the passport", "Leo jazz and tea", "budget for the hotel"]


def _open(path: str, fields: tuple[str, ...] = ("text",), **options: object) -> SGAMStore:
    index = {"dims": DIMS, "embed": HashEmbeddings(DIMS), "fields": list(fields)}
    vector_cache = bool(options.pop("vector_cache", True))
    retrieval = {"centering": True, **options}
    store = SGAMStore(path, index=index, retrieval=retrieval, vector_cache=vector_cache)
    store.setup()
    return store


def _fill(store: SGAMStore, seed: int = 5) -> None:
    """Two users' conversations of 40 turns, every turn leaning on its speaker's name."""
    rng = random.Random(seed)
    for user in ("leo", "ann"):
        for n in range(40):
            text = f"{user} says {' '.join(rng.sample(WORDS, 3))} ({n})"
            store.put(("acme", user), f"t{n}", {"text": text, "title": f"{user}, turn {n}"})


@pytest.fixture
def chats(db_path: str) -> Iterator[tuple[SGAMStore, SGAMStore]]:
    """Two stores on one file, centering: one through the mirror (the shortcut), one from
    the stored vectors (`centered`, as a point-in-time view or PostgreSQL does)."""
    fast, direct = _open(db_path), _open(db_path, vector_cache=False)
    _fill(fast)
    try:
        yield fast, direct
    finally:
        fast.close()
        direct.close()


def _same(a: Any, b: Any, prefix: tuple[str, ...] = LEO) -> None:
    for query in QUERIES:
        one = a.search(prefix, query=query, limit=10)
        two = b.search(prefix, query=query, limit=10)
        assert [h.key for h in one] == [h.key for h in two], query
        assert [h.score for h in one] == pytest.approx([h.score for h in two], abs=1e-5)


def _kept(store: SGAMStore) -> list[Any]:
    """The values the store's mirror would serve for centered scopes: those derived from
    its blocks as they are (an entry a write aged stays until pushed out, never served)."""
    assert store._cache is not None
    kept = store._cache.kept.values()
    return [value for block, version, _, value in kept if block.version == version]


@pytest.mark.parametrize("prefix", [LEO, ("acme",)], ids=["subject", "tenant"])
def test_the_shortcut_ranks_as_the_stored_vectors_do(
    chats: tuple[SGAMStore, SGAMStore], prefix: tuple[str, ...]
) -> None:
    fast, direct = chats
    _same(fast, direct, prefix)
    assert _kept(fast), "the mirror's path took the shortcut"


def test_an_unchanged_scope_is_not_read_again(
    chats: tuple[SGAMStore, SGAMStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After its first centered search, a scope's vectors are not read again (its centre
    is kept) until a write: before, every search read and centered its whole matrix."""
    fast, _ = chats
    cache = fast._cache
    assert cache is not None
    fast.search(LEO, query=QUERIES[0])  # takes the centre
    reads: list[int] = []
    units = cache.units
    monkeypatch.setattr(cache, "units", lambda ids: reads.append(len(ids)) or units(ids))
    for query in QUERIES * 3:
        fast.search(LEO, query=query)
    assert reads == []


def test_a_write_never_leaves_a_stale_centre(chats: tuple[SGAMStore, SGAMStore]) -> None:
    """Every write into the scope's tenant (a new turn, a changed one, a deletion, another
    store's commit) drops what was kept: the next search centers the scope as it is."""
    fast, direct = chats
    _same(fast, direct)
    before = _kept(fast)
    writes = [
        lambda: fast.put(LEO, "new", {"text": "Leo says passport passport passport"}),
        lambda: fast.put(LEO, "t3", {"text": "Leo says jazz tea jazz tea"}),
        lambda: fast.delete(LEO, "t7"),
        lambda: fast.put(("acme", "ann"), "t1", {"text": "ann says hotel budget"}),
        lambda: direct.put(LEO, "t9", {"text": "Leo says chess recipe budget"}),
    ]
    for write in writes:
        write()
        _same(fast, direct)
        now = _kept(fast)
        assert not any(value is old for value in now for old in before)
        before = now


def test_a_write_to_another_tenant_keeps_the_centre(chats: tuple[SGAMStore, SGAMStore]) -> None:
    fast, _ = chats
    fast.search(LEO, query=QUERIES[0])
    before = _kept(fast)
    fast.put(("beta", "zoe"), "t0", {"text": "zoe says visa flight"})
    fast.search(LEO, query=QUERIES[1])
    assert all(any(value is old for value in _kept(fast)) for old in before)


def test_a_stale_entry_is_not_served(chats: tuple[SGAMStore, SGAMStore]) -> None:
    """The same facts, their rows changed since (a compaction moved them, an erased id
    was reused): the block's version moved, so the value is derived again."""
    fast, _ = chats
    cache = fast._cache
    assert cache is not None
    fast.search(LEO, query=QUERIES[0])
    (key, (block, _, _, value)), *_ = cache.kept.items()
    ids = np.frombuffer(key[1], np.int64)
    assert cache.derived(ids, scoring.Centre.of) is value
    block.version += 1  # what any change of the tenant's rows does (`_Block`)
    assert cache.derived(ids, scoring.Centre.of) is not value


def test_a_point_in_time_view_centers_what_was_current(chats: tuple[SGAMStore, SGAMStore]) -> None:
    fast, direct = chats
    then = datetime.now(UTC)
    for n in range(0, 40, 3):
        fast.put(LEO, f"t{n}", {"text": f"Leo says piano piano ({n})"})
    _same(fast.as_of(then), direct.as_of(then))
    _same(fast, direct)
    assert [h.key for h in fast.as_of(then).search(LEO, query="Leo piano")] != [
        h.key for h in fast.search(LEO, query="Leo piano")
    ]


def test_facts_of_several_fields_take_the_direct_path(tmp_path: Path) -> None:
    """A fact with a vector per field is scored by its best field about the mean, which
    the plain best cosine does not give: those scopes center their rows directly."""
    path = str(tmp_path / "fields.db")
    fast = _open(path, ("text", "title"))
    direct = _open(path, ("text", "title"), vector_cache=False)
    try:
        _fill(fast)
        _same(fast, direct)
        assert _kept(fast) == []
    finally:
        fast.close()
        direct.close()


def test_the_int8_mirror_centers_its_exact_rows(db_path: str) -> None:
    fast, direct = _open(db_path, vector_mirror="int8"), _open(db_path, vector_cache=False)
    try:
        _fill(fast)
        _same(fast, direct)
        assert _kept(fast)
    finally:
        fast.close()
        direct.close()


def _searched_once(db_path: str) -> tuple[SGAMStore, Any]:
    """A store of two tenants (acme: leo's and ann's 40 turns each; beta: zoe's 12), its
    mirror built and primed by one centered search of leo's turns; and the mirror."""
    fast = _open(db_path)
    _fill(fast)
    for n in range(12):
        fast.put(("beta", "zoe"), f"z{n}", {"text": f"zoe says visa tea ({n})"})
    fast.search(LEO, query=QUERIES[0])
    assert fast._cache is not None
    return fast, fast._cache


def test_the_first_centered_search_prepares_every_tenant(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tenant's whole scope is ready before its first search (`VectorCache._prime`): a
    benchmark's or an agent's users are each searched rarely, so a centre taken at a
    tenant's first search would be taken at nearly every search."""
    fast, cache = _searched_once(db_path)
    try:
        reads: list[int] = []
        rows = cache._rows
        monkeypatch.setattr(cache, "_rows", lambda b, p: reads.append(len(p)) or rows(b, p))
        for prefix in [("beta",), ("acme",)]:
            fast.search(prefix, query="zoe visa")
        assert reads == []
    finally:
        fast.close()


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.integers(0, 10**6), st.sampled_from([-0.5, 0.0, 0.25, 0.3, 0.9])),
    st.integers(0, 12),
)
def test_the_best_of_arrays_is_best_first(values: dict[int, float], n: int) -> None:
    values = dict(sorted(values.items()))  # by id, as `_centered` hands them on
    sims = np.fromiter(values.values(), np.float64, len(values))
    assert scoring._ranked(list(values), sims, n) == (scoring.best_first(values, n), values)


def test_hubs_are_prepared_within_their_budget(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tenant's hubs cost a product of its rows with themselves, so the first search
    after a build prepares them for HUB_PRIME_ROWS rows of tenants only (20 here: zoe's
    12, not acme's 80); a tenant past the budget derives its own at its first search."""
    monkeypatch.setattr(scoring, "HUB_PRIME_ROWS", 20)
    fast, cache = _searched_once(db_path)
    try:
        hubs = sorted(rows for (derive, _), (_, _, rows, _) in cache.kept.items()
                      if derive is scoring.scope_hubs)  # fmt: skip
        assert hubs == [12, 40]  # beta's whole tenant, and the scope searched
        fast.search(("acme",), query=QUERIES[0])
        hubs = [rows for (derive, _), (_, _, rows, _) in cache.kept.items()
                if derive is scoring.scope_hubs]  # fmt: skip
        assert 80 in hubs
    finally:
        fast.close()

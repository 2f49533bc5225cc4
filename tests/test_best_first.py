"""A small scope's vector ranking (`scoring.best_first`): best cosine first, ties by fact
id, exactly as `heapq.nsmallest` with the key (-cosine, id) gave it, for cosines in any
insertion order, with ties, signed zeros and any depth."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from sgam_store.read.scoring import best_first

COSINES = st.sampled_from([-1.0, -0.0, 0.0, 0.25, 0.5, 1.0]) | st.floats(-1.0, 1.0)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.integers(0, 10**9), COSINES, max_size=150), st.integers(0, 200))
def test_best_first_is_heapqs_order(cosine: dict[int, float], n: int) -> None:
    want = heapq.nsmallest(n, cosine.items(), key=lambda kv: (-kv[1], kv[0]))
    got = best_first(cosine, n)
    assert [(fid, repr(sim)) for fid, sim in got] == [(fid, repr(sim)) for fid, sim in want]

"""`fusion.similarity_scores` with `keep` (what the fusion stage hands a page: its first
`search.want` hits): the first `keep` hits of the whole order, each scored exactly as in
it (the best cosine at or below its rank, the rest's best taken in without a score each),
for orders with hits lacking a cosine, ties and signed zeros."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sgam_store.read.fusion import similarity_scores

COSINES = st.sampled_from([-1.0, -0.0, 0.0, 0.5, 1.0]) | st.floats(-1.0, 1.0) | st.none()


@settings(max_examples=500, deadline=None)
@given(st.lists(COSINES, max_size=60), st.integers(0, 70))
def test_kept_hits_score_as_in_the_whole_order(cosines: list[float | None], keep: int) -> None:
    fused = [(fid, 1.0 - fid / 100, 1000 + fid) for fid in range(len(cosines))]
    cosine = {fid: value for fid, value in enumerate(cosines) if value is not None}
    keyword = [(fid, 0.5, 1000 + fid) for fid in range(3)]
    whole = similarity_scores(fused, cosine, keyword)
    kept = similarity_scores(fused, cosine, keyword, keep)
    if not cosine:
        assert kept == whole == keyword  # no vectors: the keyword order stands
        return
    assert [(f, repr(s), r) for f, s, r in kept] == [(f, repr(s), r) for f, s, r in whole[:keep]]
    assert len(whole) == len(fused)

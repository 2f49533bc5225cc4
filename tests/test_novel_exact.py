"""`fusion.novel`, the redundancy lever's maximal marginal relevance, picks exactly what
the textbook loop picks: every pick the argmax, over every hit left, of (1 - redundancy)
x its fused score over the best's, less redundancy x its cosine with the closest hit
picked. The shipped loop scans a best-first order only as far as a hit could still win,
in plain Python over a 30-hit head; here it meets that reference on orders with ties,
copies (cosine 1), opposite vectors, orders that are not best-first and every depth. A
single pick moves nothing, so no vector is read for it."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sgam_store.read.fusion import novel

SCORES = st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0.0, 1.0)


def reference(fused: list, units: np.ndarray, n: int, k: int, redundancy: float) -> list:
    """Maximal marginal relevance as written down: the whole head weighed each pick."""
    head, rest = fused[:n], fused[n:]
    if not head:
        return fused
    cosines = units @ units.T
    scores = np.array([score for _, score, _ in head], np.float64)
    with np.errstate(over="ignore"):  # a subnormal best score: gains of inf, as in Python
        gain = (1 - redundancy) * scores / (scores[0] or 1.0)
    closest = np.zeros(len(head))
    picked: list[int] = []
    for _ in range(min(k, len(head))):
        value = gain - redundancy * closest
        value[picked] = -np.inf
        take = int(np.argmax(value))
        picked.append(take)
        np.maximum(closest, cosines[take], out=closest)
    return [head[i] for i in picked] + [h for i, h in enumerate(head) if i not in picked] + rest


@st.composite
def cases(draw: st.DrawFn) -> tuple[list, np.ndarray, int, int, float]:
    size = draw(st.integers(0, 40))
    scores = draw(st.lists(SCORES, min_size=size, max_size=size))
    if draw(st.booleans()):
        scores.sort(reverse=True)  # what fusion hands on: best first
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((size, 8)).astype(np.float32)
    copies = rng.integers(0, max(size, 1), size)
    for i in np.flatnonzero(rng.random(size) < 0.3):
        rows[i] = -rows[copies[i]] if rng.random() < 0.2 else rows[copies[i]]
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    units = rows / np.where(norms > 0, norms, 1)
    fused = [(100 + i, score, 1000 + i) for i, score in enumerate(scores)]
    n = draw(st.integers(0, size + 2))
    k = draw(st.integers(0, n + 2))
    redundancy = draw(st.sampled_from([0.05, 0.2, 0.5, 0.9]) | st.floats(0.0, 0.99))
    return fused, units, n, k, redundancy


@settings(max_examples=600, deadline=None)
@given(cases())
def test_novel_picks_what_the_textbook_loop_picks(
    case: tuple[list, np.ndarray, int, int, float],
) -> None:
    fused, units, n, k, redundancy = case
    at = {fid: i for i, (fid, _, _) in enumerate(fused)}
    got = novel(fused, lambda ids: units[[at[fid] for fid in ids]], n, k, redundancy)
    want = reference(fused, units[: len(fused[:n])], n, k, redundancy) if redundancy else fused
    assert got == want


def test_one_pick_reads_no_vectors() -> None:
    """A page of one hit (or none) is the fused order's first: nothing to weigh."""
    fused = [(fid, 1 - fid / 10, fid) for fid in range(6)]
    asked: list[list[int]] = []

    def units(ids: list[int]) -> np.ndarray:
        asked.append(ids)
        return np.eye(len(ids), dtype=np.float32)

    assert novel(fused, units, 6, 1, 0.5) == fused
    assert novel(fused, units, 6, 0, 0.5) == fused
    assert asked == []
    assert novel(fused, units, 6, 2, 0.5) == fused  # orthogonal: the order stands
    assert asked == [list(range(6))]

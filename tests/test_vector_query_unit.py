"""The vector mirror scales a search's query with `VectorCache._query`, and its rows with
`_unit`: the two must give the same float32 bits, or a query's cosines (and so the order
of near ties) would differ from the rows' own arithmetic."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sgam_store.engines.sqlite.vector_cache import VectorCache, _unit

FLOATS = st.floats(-(2.0**49), 2.0**49, width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 1536).flatmap(lambda n: arrays(np.float32, n, elements=FLOATS)))
def test_a_query_is_scaled_to_the_bits_rows_are(vector: np.ndarray) -> None:
    blob = vector.tobytes()
    query = VectorCache(len(vector))._query(blob)
    assert query.dtype == np.float32 and query.shape == (len(vector),)
    assert query.tobytes() == _unit([blob], len(vector))[0].tobytes()


def test_a_zero_query_stays_zero_and_the_blob_is_not_written() -> None:
    blob = np.zeros(8, dtype=np.float32).tobytes()
    query = VectorCache(8)._query(blob)
    assert not query.any()
    query[0] = 1.0  # a copy: the caller's bytes are untouched
    assert blob == bytes(32)

"""Items are built from stored rows with orjson where it reads a value as json does
(`items._loads`): any value json wrote must come back exactly as json reads it."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sgam_store.read.items import _loads

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # past 64 bits too: orjson would make those floats
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),  # lone surrogates included
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN, and of the same types throughout (1 is not 1.0)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))


@settings(max_examples=300, deadline=None)
@given(values)
def test_a_value_reads_back_as_json_reads_it(value: Any) -> None:
    text = json.dumps(value)
    assert same(_loads(text), json.loads(text))


def test_what_orjson_reads_otherwise() -> None:
    cases = [
        '{"n": 12345678901234567890123}',
        '{"x": NaN}',
        '"\\ud800"',
        '{"a": 1, "a": 2}',
        "18446744073709551616",  # 2**64: the first positive integer orjson rounds
        '{"a": [{"b": -9223372036854775809}]}',  # below -2**63, nested
        '[1e19, 18446744073709551615, -9223372036854775808, "12345678901234567890123"]',
    ]
    for text in cases:
        assert same(_loads(text), json.loads(text)), text

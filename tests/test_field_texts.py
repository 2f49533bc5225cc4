"""`read.index.field_texts` gives, for every field path, the texts LangGraph's
`get_text_at_path` gives (its own shortcut for a plain key and its cached path tokens
must not change what is embedded or indexed)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import get_text_at_path

from sgam_store.read.index import field_texts

KEYS = st.sampled_from(["content", "kind", "a", "b", "*", "[0]", "a.b", ""])
LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
PATHS = st.sampled_from(
    [
        "content",
        "kind",
        "a",
        "a.b",
        "a[0]",
        "a[*]",
        "a[-1].b",
        "*",
        "*.b",
        "{a,b}",
        "{content, a.b}",
        "[0]",
        "missing",
        ".",
        "a.",
        "",
    ]
)


def langgraph_texts(value: dict[str, Any], path: str) -> list[tuple[str, str]]:
    return [(f"{path}.{i}" if i else path, t) for i, t in enumerate(get_text_at_path(value, path))]


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=4), st.lists(PATHS, min_size=1, max_size=3))
def test_field_texts_are_langgraphs(value: dict[str, Any], paths: list[str]) -> None:
    expected = [pair for path in paths for pair in langgraph_texts(value, path)]
    assert field_texts(value, paths) == expected
    assert field_texts(value, paths) == expected  # again, from the cached tokens


def test_a_plain_key_that_holds_no_string_is_read_as_langgraph_reads_it() -> None:
    value = {"content": {"text": "nested"}, "n": 3, "s": "words"}
    assert field_texts(value, ["content", "n", "s", "gone"]) == [
        ("content", '{"text": "nested"}'),
        ("n", "3"),
        ("s", "words"),
    ]

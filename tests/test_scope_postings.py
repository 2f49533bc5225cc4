"""The keyword mirror finds a scope's rows holding a token in one joined string of the
scope's rows (`ScopeKeywords._holding`); it must name exactly the rows a test of each
row names, in order, for tokens that are prefixes, suffixes or parts of others."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sgam_store.engines.sqlite.reads import ScopeKeywords, _KeywordState, _mirror_rows

WORDS = ["tea", "te", "ea", "t", "1", "12", "123", "user", "tea1", "a"]
BODY = st.lists(st.sampled_from([*WORDS, "Tea!", "tea-time"]), max_size=8).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(BODY, max_size=40))
def test_rows_holding_a_token_are_those_each_rows_test_finds(bodies: list[str]) -> None:
    mirrored = _mirror_rows(list(enumerate(bodies)))
    rows = [(i, mirrored[i][1], mirrored[i][2]) for i in range(len(bodies))]
    scope = ScopeKeywords(_KeywordState(None), rows)
    for token in [*WORDS, "time", "absent"]:
        expected = [i for i, text in enumerate(scope.texts) if f" {token} " in text]
        assert scope.holds(token) == bool(expected), token  # before and after the postings
        assert scope._holding(token) == expected, token
        assert scope.holding(token) == len(expected)
        assert scope.holds(token) == bool(expected), token

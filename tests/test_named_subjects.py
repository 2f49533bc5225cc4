"""Subjects named in the question (issue 40, lever 5): with `retrieval={"named_subjects":
True}` a hybrid search ranks first the memories of the subjects under its prefix that
the query names as a word. Off (the default) the order is today's, to the byte; a value
other than True or False is refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sgam_store import ConfigurationError, SGAMStore

from .conftest import HashEmbeddings

ENGINES = ("sqlite", "postgres")

QUESTION = "what does Leo say about tea and chess?"


def _open(target: str, **retrieval: object) -> SGAMStore:
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    return SGAMStore.from_conn_string(target, index=index, retrieval=retrieval)


@pytest.fixture
def people(target: str) -> Iterator[str]:
    """Maya's notes repeat the question's words, Leo's name among them; Leo's one note
    says less of them."""
    with _open(target) as store:
        store.setup()
        for n in range(4):
            text = f"Leo says tea and chess, tea and chess {n}"
            store.put(("acme", "maya"), f"m{n}", {"text": text})
        store.put(("acme", "leo"), "l0", {"text": "a club evening with green tea"})
        store.put(("acme", "ana"), "a0", {"text": "the boiler needs a check"})
    yield target


def _hits(target: str, prefix: tuple[str, ...], **retrieval: object) -> list[tuple]:
    with _open(target, **retrieval) as store:
        found = store.search(prefix, query=QUESTION, limit=3)
        return [(h.namespace, h.key, h.value, h.score) for h in found]


def test_the_named_subject_ranks_first(people: str) -> None:
    plain = [key for _, key, _, _ in _hits(people, ("acme",))]
    assert plain[0] != "l0"  # Maya's near-copies lead on both signals
    named = _hits(people, ("acme",), named_subjects=True)
    assert named[0][:2] == (("acme", "leo"), "l0")
    assert [key for _, key, _, _ in named[1:]] == [k for k in plain if k != "l0"][:2]
    scores = [score for *_, score in named]
    assert scores == sorted(scores, reverse=True)  # still never rising


def test_a_label_the_prefix_holds_or_no_label_named_changes_nothing(people: str) -> None:
    # Inside ("acme", "leo") Leo is the prefix itself; "tea" names no subject.
    for prefix, query_hits in [(("acme", "leo"), QUESTION), (("acme",), "tea and chess")]:
        with _open(people) as plain, _open(people, named_subjects=True) as named:
            assert [h.key for h in named.search(prefix, query=query_hits)] == [
                h.key for h in plain.search(prefix, query=query_hits)
            ]


def test_named_subjects_off_is_todays_order_to_the_byte(people: str) -> None:
    assert _hits(people, ("acme",), named_subjects=False) == _hits(people, ("acme",))


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_named_subjects_takes_a_boolean(db_path: str, bad: object) -> None:
    with pytest.raises(ConfigurationError, match="named_subjects"):
        SGAMStore(db_path, retrieval={"named_subjects": bad})

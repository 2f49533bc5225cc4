"""A string filter matches a JSON string only. SQLite's `json_extract` gives an object or
an array as its JSON text, so a filter spelling that text must not match the container;
a plain string's equality test skips the type test (engines/sqlite/filters.py), which is
safe only because container text starts with '{' or '['. Both engines, current and
filtered-listing paths, the remembered page included."""

from __future__ import annotations

from sgam_store import SGAMStore

ENGINES = ("sqlite", "postgres")

VALUES = {
    "object": {"v": {"a": 1}},
    "array": {"v": ["a", 1]},
    "text-object": {"v": '{"a":1}'},
    "text-array": {"v": '["a",1]'},
    "text": {"v": "fact"},
    "number": {"v": 1},
    "true": {"v": True},
    "nested": {"v": {"w": "fact"}},
}


def _keys(store: SGAMStore, flt: dict) -> list[str]:
    return sorted(i.key for i in store.search(("acme", "u1"), filter=flt, limit=50))


def test_string_filters_match_strings_and_never_a_containers_text(store: SGAMStore) -> None:
    for key, value in VALUES.items():
        store.put(("acme", "u1"), key, value)
    store.put(("acme", "u2"), "other", {"v": "fact"})  # another prefix: never listed
    expected = {
        "fact": ["text"],
        '{"a":1}': ["text-object"],
        '["a",1]': ["text-array"],
        "1": [],  # the number 1 and true are not the string "1"
        "": [],
    }
    for _ in range(2):  # the second read may come from the connection's remembered page
        for text, found in expected.items():
            assert _keys(store, {"v": text}) == found, text
            assert _keys(store, {"v": {"$eq": text}}) == found, text
    assert _keys(store, {"v": {"w": "fact"}}) == ["nested"]
    assert _keys(store, {"v": {"$ne": "fact"}}) == sorted(set(VALUES) - {"text"})


def test_a_matching_string_changed_to_an_object_stops_matching(store: SGAMStore) -> None:
    store.put(("acme", "u1"), "k", {"v": "fact", "n": 1})
    assert _keys(store, {"v": "fact"}) == ["k"]
    store.put(("acme", "u1"), "k", {"v": {"fact": 1}, "n": 1})
    assert _keys(store, {"v": "fact"}) == []
    assert _keys(store, {"n": 1}) == ["k"]

"""How deep a value may nest (issue 39, item 7): a write past `MAX_VALUE_DEPTH` levels of
lists and objects is refused whole with a typed error, and a value stored deeper before
the cap (the issue's 988 levels) never makes a read of the library fail."""

from __future__ import annotations

from typing import Any

import pytest

from sgam_store import InvalidFactError, MemoryFact, SGAMStore, ValueTooDeepError
from sgam_store.ledger import MAX_VALUE_DEPTH
from tests.test_tenant_migration import write

ENGINES = ("sqlite", "postgres")


def nested(depth: int) -> Any:
    """A list `depth` levels deep, built without recursion."""
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def test_a_value_past_the_limit_is_refused_and_nothing_is_written(store: SGAMStore) -> None:
    store.put(("acme", "mira"), "deep", {"list": nested(MAX_VALUE_DEPTH - 1)})  # 100 levels
    for too_deep in ({"list": nested(MAX_VALUE_DEPTH)}, {"list": nested(988)}):
        with pytest.raises(ValueTooDeepError, match=f"{MAX_VALUE_DEPTH} levels"):
            store.put(("acme", "mira"), "deep", too_deep)
        with pytest.raises(InvalidFactError):  # the class a caller already catches
            store.replace_fact(
                MemoryFact(tenant_id="acme", subject="mira", attribute="scalar",
                           value=too_deep, valid_from="2026-06-01T00:00:00Z",
                           source_episode_id="external:test")
            )  # fmt: skip
    assert len(store.history("acme", "mira", "deep")) == 1
    assert store.fact_at("acme", "mira", "scalar") is None


def test_a_candidate_past_the_limit_is_rejected_with_its_reason(store: SGAMStore) -> None:
    episode = store.record_episode("acme", "my list", source_kind="user_message")
    result = store.apply_updates(
        [{"evidence": "my list", "subject": "mira", "attribute": "list", "current_value": None,
          "change": "new", "value": nested(500), "valid_from": "2026-06-01T00:00:00Z"}],
        tenant_id="acme", episode_id=episode.episode_id,
    )  # fmt: skip
    assert result.written == [] and "levels deep" in repr(result.rejected)


def test_a_deep_value_stored_before_the_limit_reads_everywhere(store: SGAMStore) -> None:
    """The issue's value, 988 levels, as a file written before the cap holds it."""
    store.put(("acme", "mira"), "deep", {"text": "shallow for now"})
    store.put(("acme", "mira"), "other", {"text": "a neighbour"})
    write(
        store,
        "UPDATE facts SET value = ? WHERE attribute = 'deep'",
        ('{"text": ' + "[" * 988 + "]" * 988 + "}",),
    )
    reads = {
        "get": lambda: store.get(("acme", "mira"), "deep"),
        "search": lambda: store.search(("acme",), limit=10),
        "query": lambda: store.search(("acme",), query="neighbour"),
        "history": lambda: store.history("acme", "mira", "deep"),
        "versions": lambda: store.versions("acme", "mira", "deep"),
        "ledger": lambda: store.ledger("acme"),
        "changes": lambda: store.changes("2000-01-01T00:00:00Z", tenant_id="acme"),
        "recall": lambda: store.recall("acme", subjects=["mira"]),
        "as_of": lambda: store.as_of("2100-01-01T00:00:00Z").get(("acme", "mira"), "deep"),
    }
    for name, read in reads.items():
        assert read() is not None, name

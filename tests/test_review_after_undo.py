"""Review and undo agree (issue 38, "Review and undo disagree"): once a person has undone
a decision, the memory it restored is not put before a model again against the memories
that person saw, neither on the inspector's review page (`pending_reviews`) nor by
`resolve_supersessions`, and both list the same reviews with the same candidates."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sgam_store import SGAMStore, Verdict, resolve_supersessions
from sgam_store.managers.supersession import pending_reviews
from sgam_store.testing import ScriptedChatModel, verdicts
from tests.conftest import HashEmbeddings

ENGINES = ("sqlite", "postgres")
NS = ("memories", "alice")


@pytest.fixture
def mem(target: str) -> Iterator[SGAMStore]:
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["content"]}
    with SGAMStore.from_conn_string(target, index=index, tenant_at=1) as store:
        store.setup()
        yield store


def queue(store: SGAMStore) -> dict[str, list[str]]:
    """What the review page shows: each waiting memory's key and its candidates' keys."""
    reviews, _ = pending_reviews(store, "alice")
    return {r.new.attribute: [c.fact.attribute for c in r.candidates] for r in reviews}


def content(store: SGAMStore, key: str) -> Any:
    item = store.get(NS, key)
    return None if item is None else item.value["content"]


def test_a_memory_a_person_restored_is_not_reviewed_again(mem: SGAMStore) -> None:
    mem.put(NS, "m1", {"content": "Mira's passport deadline is 2026-07-15"})
    mem.put(NS, "m2", {"content": "Mira's passport deadline is 2026-06-30"})
    mem.put(NS, "m3", {"content": "Mira's passport office is in Lyon"})
    assert queue(mem) == {"m2": ["m1"], "m3": ["m2", "m1"]}

    # A person, in the inspector: m2 supersedes m1; then, on second thought, undone.
    old = mem.fact_at("alice", "memories", "m1")
    (decision,) = mem.apply_supersession(
        mem.fact_at("alice", "memories", "m2").fact_id,
        [Verdict(old.fact_id, "supersedes", "looked like a correction")],
        decided_by="sgam ui",
        tenant_id="alice",
    )
    mem.undo_supersession(decision.decision_id, tenant_id="alice")
    assert content(mem, "m1").endswith("2026-07-15")  # restored

    # The page no longer offers m1 against a memory the person saw; the run reviews
    # exactly what the page shows, and m1 stands whatever the model answers.
    shown = queue(mem)
    assert shown == {"m3": ["m2"]}
    model = ScriptedChatModel(replies=[verdicts("supersedes", "supersedes")])
    report = resolve_supersessions(mem, model, tenant_id="alice")
    assert report.reviewed == len(shown) == len(model.prompts)
    prompt = model.prompts[0][-1].content
    assert "2026-06-30" in prompt and "2026-07-15" not in prompt
    assert content(mem, "m1").endswith("2026-07-15")

    # A memory written after the undo is new to that person: reviewed against m1.
    mem.put(NS, "m4", {"content": "Mira's passport deadline moved to 2026-05-01"})
    assert "m1" in queue(mem)["m4"]

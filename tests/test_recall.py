"""The read path: exact state is the authority; search only supports; history is labelled."""

from __future__ import annotations

import numpy as np
import pytest

from sgam_store import MemoryFact, SGAMStore

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine


E1 = "Mira prefers concise answers. Her passport deadline is 2026-07-15."
E2 = "Mira corrected the deadline. It is now 2026-06-30."
QUESTION = "What is Mira's passport deadline?"


def write(store: SGAMStore, attribute: str, value: str, valid_from: str, ep: str) -> None:
    store.replace_fact(
        MemoryFact(
            tenant_id="acme",
            subject="mira",
            attribute=attribute,
            value=value,
            valid_from=valid_from,
            source_episode_id=ep,
        )
    )


def seed(store: SGAMStore) -> None:
    write(store, "passport_deadline", "2026-07-15", "2026-06-01T09:00:00Z", "e1")
    write(store, "answer_style", "concise", "2026-06-01T09:00:00Z", "e1")
    write(store, "passport_deadline", "2026-06-30", "2026-06-03T10:00:00Z", "e2")
    store.replace_fact(
        MemoryFact(
            tenant_id="acme2",
            subject="mira",
            attribute="passport_deadline",
            value="2027-01-01",
            valid_from="2026-06-03T10:00:00Z",
            source_episode_id="x1",
        )
    )


@pytest.mark.slow
def test_stale_answer_guarantee(tmp_path, minilm) -> None:
    # Description memory: similarity over the raw episodes ranks the superseded sentence first.
    q, docs = np.array(minilm.embed_query(QUESTION)), np.array(minilm.embed_documents([E1, E2]))
    assert (docs @ q).argmax() == 0, "precondition: similarity prefers the stale sentence"

    index = {"dims": 384, "embed": minilm, "fields": ["value"]}
    with SGAMStore.from_conn_string(str(tmp_path / "m.db"), index=index) as store:
        seed(store)
        ctx = store.recall("acme", QUESTION, subjects=["mira"], attributes=["passport_deadline"])
        assert [f.value for f in ctx.facts] == ["2026-06-30"]
        assert [f.value for f in ctx.history] == ["2026-07-15"]
        current_lines = ctx.text.split("History")[0]
        assert "2026-06-30" in current_lines and "2026-07-15" not in current_lines
        assert "was mira.passport_deadline = '2026-07-15'" in ctx.text
        assert "2027-01-01" not in ctx.text  # another tenant's Mira never appears

        june2 = store.recall(
            "acme", QUESTION, attributes=["passport_deadline"], at="2026-06-02T00:00:00Z"
        )
        assert [f.value for f in june2.facts] == ["2026-07-15"]
        assert june2.history == []


def test_recall_by_question_only_uses_search_then_state(store: SGAMStore) -> None:
    seed(store)
    ctx = store.recall("acme", "passport deadline")
    assert ctx.facts[0].value == "2026-06-30"
    assert all(f.tenant_id == "acme" for f in ctx.facts + ctx.evidence + ctx.history)
    assert "[source: e2; fact" in ctx.text


def test_recall_filters_and_evidence(store: SGAMStore) -> None:
    seed(store)
    ctx = store.recall("acme", "concise answers", attributes=["passport_deadline"])
    assert [f.attribute for f in ctx.facts] == ["passport_deadline"]
    assert [f.attribute for f in ctx.evidence] == ["answer_style"]
    assert "supporting evidence" in ctx.text
    none = store.recall("acme", None, memory_types=["compliance_note"])
    assert none.facts == [] and "(none)" in none.text


def test_hybrid_threshold_and_modes(db_path: str) -> None:
    from .conftest import HashEmbeddings

    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    texts = ["passport deadline June 30", "grocery list milk eggs", "prefers concise answers"]
    with SGAMStore.from_conn_string(db_path, index=index, retrieval={"threshold": 0.3}) as s:
        for i, text in enumerate(texts):
            s.put(("acme", "mira"), f"k{i}", {"text": text})
        hits = s.search(("acme",), query="passport deadline", limit=10)
        assert hits and hits[0].key == "k0"
        assert all(h.score >= 0.3 for h in hits)
    with pytest.raises(ValueError):
        SGAMStore(":memory:", retrieval={"mode": "fuzzy"})


def test_search_hits_never_stand_in_for_a_selection_that_matched_nothing(store: SGAMStore) -> None:
    seed(store)
    ctx = store.recall("acme", "passport deadline", subjects=["nobody"])
    assert ctx.facts == []
    assert "(none)" in ctx.text.split("Related")[0]
    assert ctx.evidence[0].attribute == "passport_deadline"

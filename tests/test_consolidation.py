"""Consolidation: weak signals wait as candidates; recurrence across distinct episodes, or a
confirmation, promotes them to facts that cite every supporting episode."""

from __future__ import annotations

from typing import Any

import pytest

from sgam_store import Episode, SGAMStore
from sgam_store.managers.consolidation import (
    ConsolidationConfig,
    confirm_candidate,
    consolidate,
    is_extracted,
    list_candidates,
    similarity_key,
    sweep_candidates,
)
from tests.db import rows, scalar

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine

HABITS = ConsolidationConfig(recurrence=3, repeat_memory_types=frozenset({"habit"}))


def said(store: SGAMStore, n: int, text: str, tenant: str = "acme", **kw: Any) -> Episode:
    return store.record_episode(
        tenant,
        text,
        source_kind="user_message",
        speaker="mira",
        thread_id="t1",
        occurred_at=f"2026-06-0{n}T09:00:00Z",
        episode_id=f"{tenant}-e{n}",
        **kw,
    )


def csv(evidence: str, n: int, value: str = "CSV", **fields: Any) -> dict[str, Any]:
    return {
        "evidence": evidence,
        "subject": "mira",
        "attribute": "export_format",
        "current_value": None,
        "change": "new",
        "value": value,
        "valid_from": f"2026-06-0{n}T09:00:00Z",
        "memory_type": "habit",
        "confidence": 0.9,
        **fields,
    }


def sources(store: SGAMStore, fact_id: int) -> set[str]:
    return {
        r[0]
        for r in rows(store, "SELECT episode_id FROM fact_sources WHERE fact_id = ?", (fact_id,))
    }


def test_a_habit_becomes_a_fact_on_its_third_distinct_episode(store: SGAMStore) -> None:
    e1 = said(store, 1, "Export the report as CSV please.")
    first = consolidate(
        store, [csv("as CSV please", 1)], tenant_id="acme", episode_id=e1.episode_id, config=HABITS
    )
    assert first.written == [] and store.fact_at("acme", "mira", "export_format") is None
    (held,) = first.held
    assert (held.reason, held.status, held.episode_ids) == (
        "needs_repetition",
        "pending",
        [e1.episode_id],
    )

    # The same episode again is the same evidence, not a second occurrence.
    again = consolidate(
        store, [csv("as CSV please", 1)], tenant_id="acme", episode_id=e1.episode_id, config=HABITS
    )
    assert again.held[0].episode_ids == [e1.episode_id]

    e2 = said(store, 2, "Can I get it as csv.")
    second = consolidate(
        store,
        [csv("as csv.", 2, "csv.")],
        tenant_id="acme",
        episode_id=e2.episode_id,
        config=HABITS,
    )
    assert second.held[0].candidate_id == held.candidate_id  # "csv." is similar to "CSV"
    assert store.fact_at("acme", "mira", "export_format") is None

    e3 = said(store, 3, "CSV again, thanks")
    third = consolidate(
        store, [csv("CSV again", 3)], tenant_id="acme", episode_id=e3.episode_id, config=HABITS
    )
    (fact,) = third.written
    (promoted,) = third.promoted
    assert fact.value == "CSV" and fact.memory_type == "habit"
    assert store.who_said(fact).episode_id == e3.episode_id  # the episode that tipped it
    assert sources(store, fact.fact_id) == {e1.episode_id, e2.episode_id}  # and every other one
    assert promoted.promoted_by == "recurrence" and promoted.promoted_fact_id == fact.fact_id
    assert promoted.episode_ids == [e1.episode_id, e2.episode_id, e3.episode_id]
    assert list_candidates(store, "acme") == []
    assert [c.status for c in list_candidates(store, "acme", status=None)] == ["promoted"]


def test_confidence_below_the_threshold_waits_and_the_threshold_is_configurable(
    store: SGAMStore,
) -> None:
    e1 = said(store, 1, "I think I might be moving to Porto.")
    weak = csv("moving to Porto", 1, "Porto", attribute="city", memory_type=None, confidence=0.4)
    held = consolidate(store, [weak], tenant_id="acme", episode_id=e1.episode_id)
    assert held.written == [] and held.held[0].reason == "low_confidence"

    e2 = said(store, 2, "I think I might be moving to Porto.")
    lenient = ConsolidationConfig(min_confidence=0.3)
    written = consolidate(
        store,
        [{**weak, "valid_from": "2026-06-02T09:00:00Z"}],
        tenant_id="acme",
        episode_id=e2.episode_id,
        config=lenient,
    )
    assert [f.value for f in written.written] == ["Porto"]
    assert written.promoted[0].promoted_by == "statement"  # it also settles the held one


def test_a_confirming_user_message_promotes_at_once(store: SGAMStore) -> None:
    e1 = said(store, 1, "Export the report as CSV please.")
    consolidate(
        store, [csv("as CSV please", 1)], tenant_id="acme", episode_id=e1.episode_id, config=HABITS
    )
    e2 = said(store, 2, "Yes: always CSV.", metadata={"confirmed": True})
    result = consolidate(
        store, [csv("always CSV", 2)], tenant_id="acme", episode_id=e2.episode_id, config=HABITS
    )
    (fact,) = result.written
    assert result.promoted[0].promoted_by == "confirmation"
    assert fact.source_episode_id == e2.episode_id and sources(store, fact.fact_id) == {
        e1.episode_id
    }


def test_confirm_candidate_writes_from_the_quoted_episode_valid_from_the_confirmation(
    store: SGAMStore,
) -> None:

    e1 = said(store, 1, "Export the report as CSV please.")
    held = consolidate(
        store, [csv("as CSV please", 1)], tenant_id="acme", episode_id=e1.episode_id, config=HABITS
    ).held[0]
    e2 = said(store, 2, "Yes, that's right.")
    with pytest.raises(ValueError, match="no candidate"):
        confirm_candidate(store, held.candidate_id, tenant_id="globex", episode_id=e2.episode_id)
    result = confirm_candidate(store, held.candidate_id, tenant_id="acme", episode_id=e2.episode_id)
    (fact,) = result.written
    assert fact.source_episode_id == e1.episode_id  # the words are e1's
    assert fact.valid_from.isoformat() == "2026-06-02T09:00:00+00:00"  # true from e2 on
    assert sources(store, fact.fact_id) == {e2.episode_id}
    assert result.promoted[0].promoted_by == "confirmation"
    with pytest.raises(ValueError, match="not pending"):
        confirm_candidate(store, held.candidate_id, tenant_id="acme", episode_id=e2.episode_id)


def test_pending_candidates_expire_and_recurrence_starts_over(store: SGAMStore) -> None:
    e1 = said(store, 1, "Export the report as CSV please.")
    e2 = said(store, 2, "Can I get it as csv.")
    consolidate(
        store, [csv("as CSV please", 1)], tenant_id="acme", episode_id=e1.episode_id, config=HABITS
    )
    consolidate(
        store, [csv("as csv.", 2)], tenant_id="acme", episode_id=e2.episode_id, config=HABITS
    )
    (pending,) = list_candidates(store, "acme")
    assert sweep_candidates(store, now=pending.expires_at.replace(microsecond=0).isoformat()) == 0
    assert sweep_candidates(store, tenant_id="globex", now="2099-01-01T00:00:00Z") == 0
    assert sweep_candidates(store, tenant_id="acme", now="2099-01-01T00:00:00Z") == 1
    assert list_candidates(store, "acme") == []
    assert [c.status for c in list_candidates(store, "acme", status="expired")] == ["expired"]
    e3 = said(store, 3, "CSV again, thanks")
    third = consolidate(
        store, [csv("CSV again", 3)], tenant_id="acme", episode_id=e3.episode_id, config=HABITS
    )
    assert third.written == [] and third.held[0].episode_ids == [e3.episode_id]


def test_other_tenants_evidence_never_counts(store: SGAMStore) -> None:
    for n in (1, 2):
        ep = said(store, n, "Export it as CSV.", tenant="globex")
        consolidate(
            store, [csv("as CSV", n)], tenant_id="globex", episode_id=ep.episode_id, config=HABITS
        )
    e3 = said(store, 3, "Export it as CSV.")
    result = consolidate(
        store, [csv("as CSV", 3)], tenant_id="acme", episode_id=e3.episode_id, config=HABITS
    )
    assert result.written == [] and result.held[0].episode_ids == [e3.episode_id]


def test_erasing_every_supporting_episode_erases_the_candidate(store: SGAMStore) -> None:
    e1 = said(store, 1, "Export the report as CSV please.")
    e2 = said(store, 2, "Can I get it as csv.")
    consolidate(
        store, [csv("as CSV please", 1)], tenant_id="acme", episode_id=e1.episode_id, config=HABITS
    )
    consolidate(
        store, [csv("as csv.", 2)], tenant_id="acme", episode_id=e2.episode_id, config=HABITS
    )
    store.purge_episode("acme", e1.episode_id)
    assert list_candidates(store, "acme")[0].episode_ids == [e2.episode_id]
    store.purge_episode("acme", e2.episode_id)
    assert list_candidates(store, "acme", status=None) == []


def test_invalid_weak_candidates_are_rejected_by_the_service_not_held(store: SGAMStore) -> None:
    e1 = said(store, 1, "Export the report as CSV please.")
    fabricated = csv("I always want CSV", 1)
    result = consolidate(
        store, [fabricated], tenant_id="acme", episode_id=e1.episode_id, config=HABITS
    )
    assert result.held == [] and result.rejected[0].kind == "invalid"
    assert "does not occur in the episode" in result.rejected[0].reason


def test_extraction_is_marked_in_the_same_transaction(store: SGAMStore) -> None:
    e1 = said(store, 1, "Export the report as CSV please.")
    assert not is_extracted(store, e1.episode_id)
    consolidate(store, [], tenant_id="acme", episode_id=e1.episode_id, extractor="scripted:x")
    assert is_extracted(store, e1.episode_id)


def test_similar_means_equal_after_normalizing_case_space_and_end_punctuation() -> None:
    assert similarity_key("CSV") == similarity_key("  csv. ") == similarity_key("Csv!")
    assert similarity_key({"b": "X  Y", "a": 1}) == similarity_key({"a": 1, "b": "x y"})
    assert similarity_key("CSV") != similarity_key("TSV")
    with pytest.raises(ValueError, match="recurrence"):
        ConsolidationConfig(recurrence=0)


def test_purging_a_tenant_leaves_no_candidate_or_extraction_mark(store: SGAMStore) -> None:
    e1 = said(store, 1, "Export the report as CSV please.")
    consolidate(
        store,
        [csv("as CSV please", 1)],
        tenant_id="acme",
        episode_id=e1.episode_id,
        config=HABITS,
        extractor="scripted:x",
    )
    store.purge("acme")
    for table in ("memory_candidates", "candidate_support", "episode_extractions"):
        assert scalar(store, f"SELECT COUNT(*) FROM {table}") == 0


def test_purging_a_subject_erases_its_candidates_too(store: SGAMStore) -> None:
    """A held weak signal carries the subject's value: erasing the subject erases it,
    and leaves other subjects' candidates alone."""
    e1 = said(store, 1, "Export the report as CSV please, and Leo likes PDF.")
    held = [csv("as CSV please", 1), csv("Leo likes PDF", 1, value="PDF", subject="leo")]
    consolidate(store, held, tenant_id="acme", episode_id=e1.episode_id, config=HABITS)
    assert {c.subject for c in list_candidates(store, "acme")} == {"mira", "leo"}
    report = store.purge("acme", "mira")
    assert report.deleted["memory_candidates"] == 1
    assert [c.subject for c in list_candidates(store, "acme", status=None)] == ["leo"]
    assert scalar(store, "SELECT COUNT(*) FROM candidate_support WHERE payload LIKE '%CSV%'") == 0
    assert store.purge("acme", attribute="export_format").deleted["memory_candidates"] == 1
    assert list_candidates(store, "acme", status=None) == []

"""Ids are tenant-scoped (issue 39): a fact id, a decision id or an episode id named with
another tenant is "not found", typed, on every engine; nothing is read, written or told
about the other tenant's row.

Each test is what another tenant's caller can do through the public API: name ids it
learned (or guessed) with its own tenant.
"""

from __future__ import annotations

from typing import Any

import pytest

from sgam_store import FactNotFoundError, MemoryFact, SGAMStore, Verdict

ENGINES = ("sqlite", "postgres")

VICTIM, ATTACKER = "globex", "acme"


def _fact(store: SGAMStore, tenant: str, attribute: str, value: str, at: str) -> Any:
    return store.replace_fact(
        MemoryFact(
            tenant_id=tenant,
            subject="mira",
            attribute=attribute,
            value=value,
            valid_from=at,
            source_episode_id="external:test",
        )
    )


@pytest.fixture
def decided(store: SGAMStore) -> tuple[Any, Any, Any]:
    """The victim's correction written under a new key, and its "supersedes" decision."""
    old = _fact(store, VICTIM, "deadline", "2026-07-15", "2026-06-01T00:00:00Z")
    new = _fact(store, VICTIM, "new_deadline", "2026-06-30", "2026-06-03T00:00:00Z")
    (decision,) = store.apply_supersession(
        new.fact_id,
        [Verdict(old.fact_id, "supersedes", "secret reason", evidence={"quote": "secret"})],
        decided_by="victim-review",
        tenant_id=VICTIM,
    )
    return old, new, decision


# ---------------------------------------------------------------- supersession (item 3)


def test_supersession_decisions_of_another_tenants_fact_are_not_found(
    store: SGAMStore, decided: tuple[Any, Any, Any]
) -> None:
    old, new, decision = decided
    for fact in (old.fact_id, new.fact_id, old):
        with pytest.raises(FactNotFoundError, match="no fact"):
            store.supersession_decisions(fact, tenant_id=ATTACKER)
    # The owner of the facts still sees its decision.
    assert store.supersession_decisions(old, tenant_id=VICTIM) == [decision]


def test_another_tenant_cannot_undo_a_decision(
    store: SGAMStore, decided: tuple[Any, Any, Any]
) -> None:
    old, _, decision = decided
    with pytest.raises(FactNotFoundError, match="no supersession decision"):
        store.undo_supersession(decision.decision_id, tenant_id=ATTACKER)
    # Nothing changed: the old memory stays closed and the decision stands.
    assert store.fact_at(VICTIM, "mira", "deadline") is None
    (still,) = store.supersession_decisions(old, tenant_id=VICTIM)
    assert still.undone_at is None
    restored = store.undo_supersession(decision.decision_id, tenant_id=VICTIM)
    assert restored.tenant_id == VICTIM


def test_another_tenant_cannot_record_a_decision_in_the_victims_tenant(store: SGAMStore) -> None:
    old = _fact(store, VICTIM, "deadline", "2026-07-15", "2026-06-01T00:00:00Z")
    new = _fact(store, VICTIM, "new_deadline", "2026-06-30", "2026-06-03T00:00:00Z")
    verdict = Verdict(old.fact_id, "supersedes", "attacker says so")
    with pytest.raises(FactNotFoundError):
        store.apply_supersession(new.fact_id, [verdict], decided_by="x", tenant_id=ATTACKER)
    # The attacker's own new memory cannot name the victim's old one either; the refusal
    # is "not found", the same as for an id no tenant has.
    mine = _fact(store, ATTACKER, "note", "mine", "2026-06-05T00:00:00Z")
    for old_id in (old.fact_id, 10**12):
        with pytest.raises(FactNotFoundError):
            store.apply_supersession(
                mine.fact_id, [Verdict(old_id, "supersedes", "x")], decided_by="x",
                tenant_id=ATTACKER,
            )  # fmt: skip
    assert store.fact_at(VICTIM, "mira", "deadline").value == "2026-07-15"
    assert store.supersession_decisions(old, tenant_id=VICTIM) == []


def test_a_closed_fact_of_another_tenant_is_not_found_rather_than_no_longer_current(
    store: SGAMStore, decided: tuple[Any, Any, Any]
) -> None:
    """The old memory is closed: naming it as another tenant's must not say so."""
    old, _, _ = decided
    mine = _fact(store, ATTACKER, "note", "mine", "2026-06-05T00:00:00Z")
    with pytest.raises(FactNotFoundError):
        store.apply_supersession(
            old.fact_id, [Verdict(mine.fact_id, "independent", "x")], decided_by="x",
            tenant_id=ATTACKER,
        )  # fmt: skip

"""Corrections written as new memories: what a review decision changes in the ledger.

LangMem's tools and manager record a changed fact as a new memory under a new key, so
the interval rule (one open fact per key) never sees the old value as replaced. A put of
a new key is queued for review (`queue_new_keys`, in the put's own transaction); the
memory manager (`managers/supersession.py`) asks a model about the current memories it
may restate, and records each answer here. Only a "supersedes" decision changes facts:
the old memory is closed where the new one starts (history kept) and the new one's
`supersedes_fact_id` names it, across keys. `undo` takes a decision back without
erasing anything: the old value is restored as a fact from that instant on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

from sgam_store import ledger
from sgam_store.core.errors import ConflictError, FactNotFoundError, InvalidFactError
from sgam_store.core.models import Fact, FactRow, MemoryFact, SupersessionDecision
from sgam_store.write.facts import FactWriter

DECISIONS = ("supersedes", "independent", "duplicate")
DECIDED_BY = "supersession"  # facts.decided_by on the versions a decision writes


@dataclass(frozen=True)
class Verdict:
    """One decision about (new memory, old memory), before it is recorded."""

    old_fact_id: int
    decision: str
    reason: str
    score: float | None = None
    evidence: dict[str, Any] | None = None


def queue_new_keys(tx: ledger.Tx, facts: Sequence[tuple[int, str]]) -> None:
    """Queue (fact_id, tenant_id) of memories written under keys that had no version;
    the rows are written with the transaction's index rows (`FactWriter.finish`), in one
    statement for a whole batch or group."""
    tx.review.extend(facts)


def apply(
    facts: FactWriter,
    new_fact_id: int,
    verdicts: Sequence[Verdict],
    decided_by: str,
    tenant_id: str | None = None,
) -> list[SupersessionDecision]:
    """Record each verdict on the new memory and apply the "supersedes" ones, in one
    transaction; the memory leaves the review queue. A verdict about a memory that is
    no longer current, or that does not start before the new one, is refused whole
    (ConflictError): its premise no longer holds. Every id must be a fact of `tenant_id`
    (when given) and of the new memory's tenant: another tenant's id is not found."""
    for v in verdicts:
        if v.decision not in DECISIONS:
            raise InvalidFactError(f"decision must be one of {DECISIONS}, got {v.decision!r}")

    def body(tx: ledger.Tx) -> list[int]:
        new = _open_row(tx, new_fact_id, tenant_id)
        ids = []
        for v in verdicts:
            old = _open_row(tx, v.old_fact_id, new.tenant_id)
            if old.fact_id == new.fact_id:
                raise InvalidFactError("a memory cannot supersede itself")
            if v.decision == "supersedes":
                if old.valid_from >= new.valid_from:
                    raise ConflictError(
                        f"fact {old.fact_id} starts at {old.valid_from}, not before the new "
                        f"memory ({new.valid_from}): it cannot be superseded by it"
                    )
                ledger.close_row(tx, old, new.valid_from)
                new = _open_row(tx, new_fact_id)
                ledger.append_version(
                    tx, new, supersedes_fact_id=old.fact_id, decided_by=DECIDED_BY
                )
                new = _open_row(tx, new_fact_id)
            ids.append(_record(tx, new, old.fact_id, v, decided_by))
        tx.engine.supersession.dequeue(tx.cur, [new_fact_id])
        facts.finish(tx)
        return ids

    return [decision(facts.engine, i) for i in facts.run(body)]


def dismiss(facts: FactWriter, fact_ids: Sequence[int]) -> None:
    """Take memories off the review queue with no decision (nothing resembles them, or
    they are no longer current)."""
    if fact_ids:
        facts.run(lambda tx: tx.engine.supersession.dequeue(tx.cur, list(fact_ids)))


def undo(facts: FactWriter, decision_id: int, tenant_id: str | None = None) -> Fact:
    """Take back a "supersedes" decision: the old memory's value becomes current again
    from the instant it was closed at, the new memory no longer names it, and the
    decision is marked undone. Nothing is erased; `known_at` reads still show the
    wrong belief for the time it was held. The restored fact keeps its first source
    (who said it); `decided_by` names the undone decision. Returns the restored fact.
    Another tenant's decision than `tenant_id`'s (when given) is not found."""
    found = decision(facts.engine, decision_id, tenant_id)
    if found.decision != "supersedes" or found.undone_at is not None:
        raise ConflictError(f"decision {decision_id} closed nothing, or was undone already")

    def body(tx: ledger.Tx) -> int:
        closed = tx.engine.versions.latest_of(tx.cur, found.old_fact_id)
        if closed is None or closed.known_to is not None or closed.valid_to is None:
            raise ConflictError(f"fact {found.old_fact_id} has changed since the decision")
        new = _open_row(tx, found.new_fact_id, missing_ok=True)
        if new is not None and new.supersedes_fact_id == found.old_fact_id:
            ledger.append_version(tx, new, supersedes_fact_id=None, decided_by=None)
        restored = _restoration(closed)
        vectors = facts.vectors_for(restored.value)
        row_id = facts.write(tx, restored, vectors, decided_by=f"undo:{decision_id}")
        tx.engine.supersession.mark_undone(tx.cur, decision_id, tx.now)
        facts.finish(tx)
        return row_id

    row_id = facts.run(body)
    with facts.engine.reading() as conn:
        return ledger.row_to_fact(facts.engine.versions.by_row_id(conn, row_id))


def decision(engine: Any, decision_id: int, tenant_id: str | None = None) -> SupersessionDecision:
    """The decision, which must be `tenant_id`'s when given: another tenant's decision is
    not found, exactly as one that does not exist (nothing tells the two apart)."""
    with engine.reading() as conn:
        row = engine.supersession.by_id(conn, decision_id)
    found = None if row is None else SupersessionDecision.from_row(row)
    if found is None or (tenant_id is not None and found.tenant_id != tenant_id):
        raise FactNotFoundError(f"no supersession decision {decision_id}{_of(tenant_id)}")
    return found


def decisions_touching(
    engine: Any, fact_ids: Sequence[int], tenant_id: str | None = None
) -> list[SupersessionDecision]:
    """The decisions naming these facts. With `tenant_id`, each id must be a fact of that
    tenant (another tenant's is not found, as who_said has it) and only its decisions
    come back."""
    with engine.reading() as conn:
        if tenant_id is not None:
            for fact_id in fact_ids:
                owner = engine.episodes.fact_source(conn, fact_id)
                if owner is None or owner[0] != tenant_id:
                    raise FactNotFoundError(f"no fact {fact_id}{_of(tenant_id)}")
        rows = engine.supersession.touching(conn, list(fact_ids))
    found = [SupersessionDecision.from_row(r) for r in rows]
    return [d for d in found if tenant_id is None or d.tenant_id == tenant_id]


def decisions_of_key(
    engine: Any, tenant_id: str, ns: str, attribute: str
) -> list[SupersessionDecision]:
    """The tenant's decisions naming any version of one key, oldest first, in one
    statement (a key's page shows them all; `decisions_touching` checks and reads per
    fact). Another tenant's key has none: the statement is bound to `tenant_id`."""
    with engine.reading() as conn:
        rows = engine.supersession.of_key(conn, tenant_id, ns, attribute)
    return [SupersessionDecision.from_row(r) for r in rows]


def _of(tenant_id: str | None) -> str:
    return "" if tenant_id is None else f" for tenant {tenant_id!r}"


@overload
def _open_row(tx: ledger.Tx, fact_id: int, tenant_id: str | None = None) -> FactRow: ...
@overload
def _open_row(
    tx: ledger.Tx, fact_id: int, tenant_id: str | None = None, *, missing_ok: bool
) -> FactRow | None: ...
def _open_row(
    tx: ledger.Tx, fact_id: int, tenant_id: str | None = None, *, missing_ok: bool = False
) -> FactRow | None:
    """A fact's current version, looked up (and on PostgreSQL locked) by its key; one
    that is gone or no longer current raises, or with `missing_ok` is None. A fact of
    another tenant than `tenant_id` (when given) is gone: not found, whether current
    or not, so its state is never told."""
    latest = tx.engine.versions.latest_of(tx.cur, fact_id)
    if latest is not None and tenant_id is not None and latest.tenant_id != tenant_id:
        latest = None
    row = latest and tx.versions.open_version(tx.cur, latest.namespace, latest.attribute)
    if row is not None and row.fact_id == fact_id:
        return row
    if missing_ok:
        return None
    if latest is None:
        raise FactNotFoundError(f"no fact {fact_id}{_of(tenant_id)}")
    raise ConflictError(f"fact {fact_id} is no longer current")


def _record(tx: ledger.Tx, new: FactRow, old_fact_id: int, v: Verdict, by: str) -> int:
    evidence = json.dumps(v.evidence or {}, ensure_ascii=False, default=str)
    return tx.engine.supersession.record(
        tx.cur,
        (new.tenant_id, new.fact_id, old_fact_id, v.decision, v.score, v.reason, evidence,
         by, tx.now, None),
    )  # fmt: skip


def _restoration(closed: FactRow) -> MemoryFact:
    """The closed memory's value as a new fact of its key, from where it was closed."""
    value = json.loads(closed.value)
    return MemoryFact(
        tenant_id=closed.tenant_id,
        subject=closed.subject,
        attribute=closed.attribute,
        value=value["value"] if closed.scalar else value,
        valid_from=closed.valid_to,
        source_episode_id=closed.source_episode_id,
        memory_type=closed.memory_type,
        schema_version=closed.schema_version,
        confidence=closed.confidence,
        retention_policy=closed.retention_policy,
    )

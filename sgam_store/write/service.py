"""The write service: one episode's candidates -> validated facts -> one transaction.

The design's write path, in order: validate each candidate against its episode
(pydantic, with the episode text as validation context) -> drop `no_change` -> admit it
through the memory schema (declared attribute, value type, memory type, retention,
schema_version) -> add `tenant_id` and `source_episode_id` from the request, never
from the model (a candidate that names either is rejected) -> `ledger.replace_fact`.

Partial acceptance, atomic landing: an invalid candidate is rejected and reported
with its reason, and the valid candidates of the same episode still land, together, in
one transaction. A candidate the ledger refuses (an equal `valid_from` that no policy
resolves, or that the policy resolves by keeping the stored fact) is reported the same
way, with nothing of it written. Any other error rolls the whole episode back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from sgam_store import ledger
from sgam_store.core import namespaces
from sgam_store.core.errors import (
    ConflictError,
    EpisodeNotFoundError,
    InvalidCandidateError,
    InvalidFactError,
    KeptExistingError,
    ValueTooLargeError,
    explain,
)
from sgam_store.core.models import Fact, MemoryFact
from sgam_store.ledger.episodes import Episode, get_episode
from sgam_store.ledger.policies import ConflictPolicy
from sgam_store.write.candidates import MemoryUpdate, validate_candidate
from sgam_store.write.facts import FactWriter
from sgam_store.write.schemas import MemorySchema, admit

RejectionKind = Literal["invalid", "schema", "conflict", "kept"]


@dataclass(frozen=True)
class Rejection:
    """A candidate that was not applied, and why.

    kind: "invalid" (malformed, fabricated quote, names a tenant or episode), "schema"
    (not allowed by the memory schema), "conflict" (equal valid_from left unresolved),
    "kept" (a conflict policy kept the stored fact).
    """

    candidate: Any  # as given: a MemoryUpdate or a payload dict
    reason: str
    kind: RejectionKind


@dataclass(frozen=True)
class Supersession:
    """`new` replaced `old`: closed it at new.valid_from, or (by a policy) retired it."""

    new: Fact
    old: Fact  # the old fact's latest version, as this transaction left it


@dataclass(frozen=True)
class WriteResult:
    episode: Episode
    written: list[Fact]
    superseded: list[Supersession]
    rejected: list[Rejection]
    unchanged: list[MemoryUpdate]  # no_change candidates, dropped by design


@dataclass(frozen=True)
class _Accepted:
    candidate: Any
    fact: MemoryFact
    vectors: list[tuple[str, bytes]]


def apply_updates(
    facts: FactWriter,
    updates: Iterable[MemoryUpdate | dict[str, Any]],
    *,
    tenant_id: str,
    episode_id: str,
    schema: MemorySchema | None = None,
    policy: ConflictPolicy | None = None,
    then: Callable[[ledger.Tx, list[Fact]], None] | None = None,
) -> WriteResult:
    """Validate one episode's candidates and write the accepted ones atomically.

    `then(tx, written)` runs inside the same transaction after the facts are written, so
    bookkeeping that must land with them (consolidation's candidate links) is atomic too.
    """
    namespaces.check_item_namespace((tenant_id,))
    episode = get_episode(facts.engine, episode_id, tenant_id=tenant_id)
    if episode is None:
        raise EpisodeNotFoundError(
            f"episode {episode_id!r} is not recorded for tenant {tenant_id!r}; "
            "record it with record_episode before applying its candidates"
        )
    rejected: list[Rejection] = []
    unchanged: list[MemoryUpdate] = []
    accepted: list[_Accepted] = []
    keys: set[tuple[str, str, str | None]] = set()
    for candidate in updates:
        checked = _check(candidate, episode, schema, facts.max_value_bytes)
        if isinstance(checked, Rejection):
            rejected.append(checked)
        elif isinstance(checked, MemoryUpdate):
            unchanged.append(checked)
        elif _key(checked) in keys:
            reason = "an earlier candidate of this episode has the same subject, attribute "
            rejected.append(Rejection(candidate, reason + "and valid_from", "conflict"))
        else:
            keys.add(_key(checked))
            accepted.append(_Accepted(candidate, checked, facts.vectors_for(checked.value)))

    def body(tx: ledger.Tx) -> tuple[list[Fact], list[Supersession], list[Rejection]]:
        outcome = _write(facts, tx, accepted, policy)
        if then is not None:
            then(tx, outcome[0])
        return outcome

    written, superseded, refused = facts.run(body)
    return WriteResult(episode, written, superseded, rejected + refused, unchanged)


def _check(
    candidate: Any, episode: Episode, schema: MemorySchema | None, max_value_bytes: int
) -> MemoryFact | MemoryUpdate | Rejection:
    """The fact a candidate becomes, the candidate itself if no_change, or why not."""
    try:
        update = validate_candidate(candidate, episode.content)
    except InvalidCandidateError as exc:
        return Rejection(candidate, str(exc), "invalid")
    if update.change == "no_change":
        return update
    try:
        admitted = admit(schema, update)
    except InvalidCandidateError as exc:
        return Rejection(candidate, str(exc), "schema")
    try:
        fact = MemoryFact(
            tenant_id=episode.tenant_id,
            subject=update.subject,
            attribute=update.attribute,
            value=admitted.value,
            valid_from=update.valid_from,
            source_episode_id=episode.episode_id,
            memory_type=admitted.memory_type,
            schema_version=admitted.schema_version,
            confidence=update.confidence,
            retention_policy=admitted.retention_policy,
        )
        ledger.encode_value(fact.value, max_value_bytes)
    except ValidationError as exc:
        return Rejection(candidate, explain(exc), "invalid")
    except (InvalidFactError, ValueTooLargeError) as exc:
        return Rejection(candidate, str(exc), "invalid")
    return fact


def _key(fact: MemoryFact) -> tuple[str, str, str]:
    return fact.subject, fact.attribute, fact.valid_from


def _write(
    facts: FactWriter, tx: ledger.Tx, accepted: list[_Accepted], policy: ConflictPolicy | None
) -> tuple[list[Fact], list[Supersession], list[Rejection]]:
    """The transaction body: the ledger rule per fact, then a report read in the same tx."""
    row_ids: list[int] = []
    refused: list[Rejection] = []
    for item in accepted:
        try:
            row_ids.append(facts.write(tx, item.fact, item.vectors, policy=policy))
        except KeptExistingError as exc:  # before ConflictError: it is one
            refused.append(Rejection(item.candidate, str(exc), "kept"))
        except ConflictError as exc:  # raised before the ledger wrote anything for this fact
            refused.append(Rejection(item.candidate, str(exc), "conflict"))
    facts.finish(tx)
    written = [_latest(tx, row_id) for row_id in row_ids]  # a new fact's id is its row id
    superseded = [
        Supersession(fact, _latest(tx, fact.supersedes_fact_id))
        for fact in written
        if fact.supersedes_fact_id is not None
    ]
    return written, superseded, refused


def _latest(tx: ledger.Tx, fact_id: int) -> Fact:
    """A fact's newest version in this transaction (closed copy, or the retired row)."""
    return ledger.row_to_fact(tx.versions.latest_of(tx.cur, fact_id))

"""Consolidation: weak signals wait as candidates until evidence recurs or the user confirms.

The design's last write-path rule: promote "weak, recurring signals to facts only after
repetition or confirmation". `consolidate` sits in front of the write service for one
episode's candidates and splits them:

- a *strong* candidate (confident enough, of a memory type that needs no repetition) goes
  to `apply_updates` as it is, and becomes a fact by the ledger rule;
- a *weak* one (confidence below `min_confidence`, or a memory type / attribute the
  application marks as needing repetition, such as "usually asks for CSV exports") is
  held in `memory_candidates`, with this episode in `candidate_support`.

A held candidate is promoted, through the same `apply_updates` call, when similar
evidence has come from `recurrence` distinct episodes ("similar" = same tenant, subject,
attribute and normalized value, see `similarity_key`), when the episode is a user
confirmation (a user message whose metadata has ``"confirmed": true``, the same flag the
conflict policies rank highest), when `confirm_candidate` is called, or when a strong
candidate states the same value. The promoted fact's source is the episode that tipped
it; every other supporting episode is linked in `fact_sources`, so who-said-it keeps all
of them and erasing one episode keeps the fact while another remains. Candidate
bookkeeping runs inside the write service's transaction (`apply_updates(then=...)`): a
candidate is never marked promoted without its fact, nor the other way round.

Pending candidates expire `candidate_ttl` after their last evidence (`sweep_candidates`
marks them expired; they stay listable). A later recurrence then starts a new candidate.
Weak evidence of the value that already holds is no news: it is dropped as `no_change`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from sgam_store import ledger
from sgam_store.core import clock, namespaces
from sgam_store.core.errors import EpisodeNotFoundError, FactNotFoundError, InvalidCandidateError
from sgam_store.core.models import Fact
from sgam_store.ledger.episodes import Episode
from sgam_store.ledger.policies import ConflictPolicy
from sgam_store.write import service
from sgam_store.write.candidates import MemoryUpdate, validate_candidate
from sgam_store.write.schemas import MemorySchema, admit

if TYPE_CHECKING:
    from sgam_store.store import SGAMStore

_F = TypeVar("_F", bound=Callable[..., Any])

Status = Literal["pending", "promoted", "expired"]
PromotedBy = Literal["recurrence", "confirmation", "statement"]


@dataclass(frozen=True)
class ConsolidationConfig:
    """When a candidate is weak, and what it takes to promote it."""

    min_confidence: float = 0.7  # below this a candidate is held (None counts as confident)
    recurrence: int = 3  # distinct supporting episodes that promote a held candidate
    repeat_memory_types: frozenset[str] = frozenset()  # e.g. {"habit"}: always held first
    repeat_attributes: frozenset[str] = frozenset()  # e.g. {"export_format"}
    candidate_ttl: timedelta = timedelta(days=30)  # a pending candidate expires this long
    # after its last evidence

    def __post_init__(self) -> None:
        if self.recurrence < 1:
            raise ValueError(f"recurrence must be >= 1, got {self.recurrence}")
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be in [0, 1], got {self.min_confidence}")
        object.__setattr__(self, "repeat_memory_types", frozenset(self.repeat_memory_types))
        object.__setattr__(self, "repeat_attributes", frozenset(self.repeat_attributes))

    def weakness(self, update: MemoryUpdate, memory_type: str) -> str | None:
        """Why a candidate must wait ('low_confidence', 'needs_repetition'), or None."""
        if memory_type in self.repeat_memory_types or update.attribute in self.repeat_attributes:
            return "needs_repetition"
        if update.confidence is not None and update.confidence < self.min_confidence:
            return "low_confidence"
        return None


@dataclass(frozen=True)
class Support:
    """One episode's evidence for a candidate (a confirmation has no quote of its own)."""

    episode_id: str
    evidence: str | None
    confidence: float | None
    recorded_at: datetime


@dataclass(frozen=True)
class Candidate:
    """A held memory candidate: what it says, why it waits, and which episodes support it."""

    candidate_id: int
    tenant_id: str
    subject: str
    attribute: str
    value: Any
    similarity_key: str
    memory_type: str
    reason: str  # why it was held: low_confidence | needs_repetition
    status: Status
    first_seen_at: datetime
    last_seen_at: datetime
    expires_at: datetime
    promoted_fact_id: int | None
    promoted_by: PromotedBy | None
    promoted_at: datetime | None
    support: list[Support] = field(default_factory=list)

    @property
    def episode_ids(self) -> list[str]:
        return [s.episode_id for s in self.support]


# A candidate row from the engine: `Candidate`'s fields in order, support aside.
_ROW_FIELDS = [f.name for f in fields(Candidate) if f.name != "support"]


@dataclass(frozen=True)
class ConsolidationResult:
    """What one episode did: the write service's report, plus held and promoted candidates."""

    write: service.WriteResult
    held: list[Candidate]  # weak candidates still pending after this episode
    promoted: list[Candidate]  # candidates that became facts in this transaction

    @property
    def written(self) -> list[Fact]:
        return self.write.written

    @property
    def rejected(self) -> list[service.Rejection]:
        return self.write.rejected


def similarity_key(value: Any) -> str:
    """The normalized value recurrence compares: case, whitespace and end punctuation aside.

    "CSV", " csv." and "Csv!" are one signal; object keys are sorted, so field order does
    not matter either.
    """

    def norm(v: Any) -> Any:
        if isinstance(v, str):
            return " ".join(v.casefold().split()).strip(" .,;:!?")
        if isinstance(v, dict):
            return {str(k): norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    return json.dumps(norm(value), sort_keys=True, ensure_ascii=False)


@dataclass
class _Held:
    """A weak candidate of this episode, and what the transaction must do with it."""

    payload: dict[str, Any]
    update: MemoryUpdate
    value: Any
    memory_type: str
    reason: str
    key: str
    promote: PromotedBy | None


def _in_tenant_scope(fn: _F) -> _F:
    """Run `fn` in the scope of its `tenant_id` keyword: on a row-secured PostgreSQL
    database the application role then reads and writes that tenant's candidates,
    episodes and facts (unscoped, it saw none: its own episode was "not recorded")."""

    @functools.wraps(fn)
    def scoped(store: SGAMStore, *args: Any, **kwargs: Any) -> Any:
        with store.engine.tenant_scope(kwargs["tenant_id"]):
            return fn(store, *args, **kwargs)

    return scoped  # type: ignore[return-value]


@_in_tenant_scope
def consolidate(
    store: SGAMStore,
    updates: Iterable[MemoryUpdate | dict[str, Any]],
    *,
    tenant_id: str,
    episode_id: str,
    schema: MemorySchema | None = None,
    policy: ConflictPolicy | None = None,
    config: ConsolidationConfig | None = None,
    extractor: str | None = None,
) -> ConsolidationResult:
    """Route one episode's candidates: strong ones and promotions to the write service,
    weak ones to `memory_candidates`; all of it in one transaction.

    `extractor` (e.g. the model name) marks the episode as extracted in the same
    transaction, so a background manager rerun over the conversation skips it.
    """
    cfg = config or ConsolidationConfig()
    namespaces.check_item_namespace((tenant_id,))
    episode = store.get_episode(episode_id, tenant_id=tenant_id)
    if episode is None:
        raise EpisodeNotFoundError(
            f"episode {episode_id!r} is not recorded for tenant {tenant_id!r}; "
            "record it with record_episode before consolidating its candidates"
        )
    confirmed = is_confirmation(episode)
    direct: list[Any] = []
    held: list[_Held] = []
    for candidate in updates:
        item = _weak(candidate, episode, schema, cfg)
        if item is None:
            direct.append(candidate)
            continue
        if _is_current(store, tenant_id, item):  # weak evidence of what already holds
            direct.append({**item.payload, "change": "no_change"})
            continue
        support = _support_of(store, tenant_id, item)
        if confirmed:
            item.promote = "confirmation"
        elif len(support | {episode_id}) >= cfg.recurrence:
            item.promote = "recurrence"
        if item.promote:
            direct.append(item.payload)
        held.append(item)
    touched: list[int] = []

    def then(tx: ledger.Tx, written: list[Fact]) -> None:
        by_key = {(f.subject, f.attribute, clock.fmt(f.valid_from)): f for f in written}
        for item in held:
            candidate_id = _upsert(tx, tenant_id, episode, item, cfg)
            touched.append(candidate_id)
            fact = by_key.get(item.update.key) if item.promote else None
            if fact is not None:
                _promote(tx, candidate_id, fact, item.promote)  # type: ignore[arg-type]
        for fact in written:  # a strong statement of a held value settles it
            for candidate_id in _pending_matching(tx, fact):
                _add_support(tx, candidate_id, episode, None, None)
                _promote(tx, candidate_id, fact, "confirmation" if confirmed else "statement")
                touched.append(candidate_id)
        if extractor is not None:
            mark_extracted(tx, tenant_id, episode_id, extractor)

    result = service.apply_updates(
        store.facts,
        direct,
        tenant_id=tenant_id,
        episode_id=episode_id,
        schema=schema,
        policy=policy,
        then=then,
    )
    after = {c.candidate_id: c for c in _load(store, touched)}
    seen = list(dict.fromkeys(touched))
    return ConsolidationResult(
        write=result,
        held=[after[i] for i in seen if i in after and after[i].status == "pending"],
        promoted=[after[i] for i in seen if i in after and after[i].status == "promoted"],
    )


def is_confirmation(episode: Episode) -> bool:
    """A user message flagged ``{"confirmed": true}``: the user confirms what it says."""
    return episode.source_kind == "user_message" and episode.metadata.get("confirmed") is True


def _weak(
    candidate: Any, episode: Episode, schema: MemorySchema | None, cfg: ConsolidationConfig
) -> _Held | None:
    """The held form of a weak candidate, or None: invalid, no_change and strong candidates
    go to the write service as given (it validates and reports them)."""
    try:
        update = validate_candidate(candidate, episode.content)
        if update.change == "no_change":
            return None
        admitted = admit(schema, update)
    except InvalidCandidateError:
        return None
    reason = cfg.weakness(update, admitted.memory_type)
    if reason is None:
        return None
    payload = candidate if isinstance(candidate, dict) else update.model_dump()
    return _Held(
        payload=payload,
        update=update,
        value=admitted.value,
        memory_type=admitted.memory_type,
        reason=reason,
        key=similarity_key(admitted.value),
        promote=None,
    )


def _is_current(store: SGAMStore, tenant_id: str, item: _Held) -> bool:
    current = store.fact_at(tenant_id, item.update.subject, item.update.attribute)
    return current is not None and similarity_key(current.value) == item.key


def _support_of(store: SGAMStore, tenant_id: str, item: _Held) -> set[str]:
    """Episodes already supporting the pending candidate this one matches."""
    update = item.update
    with store.engine.reading() as conn:
        return set(
            store.engine.candidates.pending_support(
                conn, tenant_id, update.subject, update.attribute, item.key
            )
        )


def _upsert(
    tx: ledger.Tx, tenant_id: str, episode: Episode, item: _Held, cfg: ConsolidationConfig
) -> int:
    """The pending candidate for this signal (created if new), with this episode's support."""
    statements, update = tx.engine.candidates, item.update
    expires = clock.shift(tx.now, cfg.candidate_ttl)
    value = json.dumps(item.value, ensure_ascii=False)
    found = statements.pending_matching(
        tx.cur, tenant_id, update.subject, update.attribute, item.key
    )
    if found:
        candidate_id = found[0]
        statements.refresh(tx.cur, candidate_id, value, tx.now, expires)
    else:
        candidate_id = statements.create(
            tx.cur,
            tenant_id,
            update.subject,
            update.attribute,
            value,
            item.key,
            item.memory_type,
            item.reason,
            tx.now,
            expires,
        )
    _add_support(tx, candidate_id, episode, item.payload, item.update.confidence)
    return candidate_id


def _add_support(
    tx: ledger.Tx,
    candidate_id: int,
    episode: Episode,
    payload: dict[str, Any] | None,
    confidence: float | None,
) -> None:
    """Link an episode; the same episode twice is one piece of evidence, not two."""
    tx.engine.candidates.add_support(
        tx.cur,
        candidate_id,
        episode.episode_id,
        json.dumps(payload if payload is not None else {}, ensure_ascii=False, default=str),
        confidence,
        tx.now,
    )


def _promote(tx: ledger.Tx, candidate_id: int, fact: Fact, by: PromotedBy) -> None:
    """Mark the candidate promoted to `fact`, and link every supporting episode as a source."""
    tx.engine.candidates.mark_promoted(tx.cur, candidate_id, fact.fact_id, by, tx.now)
    tx.engine.candidates.link_sources(tx.cur, candidate_id, fact.fact_id, fact.source_episode_id)


def _pending_matching(tx: ledger.Tx, fact: Fact) -> list[int]:
    """The pending candidates a written fact states the value of."""
    return tx.engine.candidates.pending_matching(
        tx.cur, fact.tenant_id, fact.subject, fact.attribute, similarity_key(fact.value)
    )


@_in_tenant_scope
def confirm_candidate(
    store: SGAMStore,
    candidate_id: int,
    *,
    tenant_id: str,
    episode_id: str,
    schema: MemorySchema | None = None,
    policy: ConflictPolicy | None = None,
) -> ConsolidationResult:
    """The user confirmed a pending candidate (episode `episode_id` says so): promote it.

    The fact is written through the write service from the candidate's latest supporting
    episode (whose text holds the quoted evidence), valid from the confirmation; the
    confirming episode joins the candidate's support and the fact's sources.
    """
    (candidate,) = _load(store, [candidate_id]) or [None]
    if candidate is None or candidate.tenant_id != tenant_id:
        raise FactNotFoundError(f"no candidate {candidate_id} for tenant {tenant_id!r}")
    if candidate.status != "pending":
        raise InvalidCandidateError(f"candidate {candidate_id} is {candidate.status}, not pending")
    confirmation = store.get_episode(episode_id, tenant_id=tenant_id)
    if confirmation is None:
        raise EpisodeNotFoundError(f"episode {episode_id!r} is not recorded for {tenant_id!r}")
    latest = max(
        (s for s in candidate.support if s.evidence is not None), key=lambda s: s.recorded_at
    )
    with store.engine.reading() as conn:
        payload_text = store.engine.candidates.support_payload(
            conn, candidate_id, latest.episode_id
        )
    payload = {**json.loads(payload_text), "valid_from": clock.fmt(confirmation.occurred_at)}
    key = (candidate.subject, candidate.attribute, clock.fmt(confirmation.occurred_at))

    def then(tx: ledger.Tx, written: list[Fact]) -> None:
        for fact in written:
            if (fact.subject, fact.attribute, clock.fmt(fact.valid_from)) == key:
                _add_support(tx, candidate_id, confirmation, None, None)
                _promote(tx, candidate_id, fact, "confirmation")

    result = service.apply_updates(
        store.facts,
        [payload],
        tenant_id=tenant_id,
        episode_id=latest.episode_id,
        schema=schema,
        policy=policy,
        then=then,
    )
    (after,) = _load(store, [candidate_id])
    return ConsolidationResult(
        write=result,
        held=[after] if after.status == "pending" else [],
        promoted=[after] if after.status == "promoted" else [],
    )


def list_candidates(
    store: SGAMStore,
    tenant_id: str,
    *,
    status: Status | None = "pending",
    subject: str | None = None,
    attribute: str | None = None,
) -> list[Candidate]:
    """The tenant's candidates (pending by default; `status=None` for all), with support."""
    with store.engine.tenant_scope(tenant_id):
        with store.engine.reading() as conn:
            rows = store.engine.candidates.listing(conn, tenant_id, status, subject, attribute)
        return _with_support(store, rows)


def sweep_candidates(
    store: SGAMStore, *, tenant_id: str | None = None, now: clock.Timestamp | None = None
) -> int:
    """Mark pending candidates whose `expires_at` has passed as expired; return the count."""
    at = clock.normalize(now) if now is not None else None

    def body(tx: ledger.Tx) -> int:
        return tx.engine.candidates.expire_due(tx.cur, at or tx.now, tenant_id)

    with store.engine.tenant_scope(tenant_id):  # None: every tenant's (the owner's)
        return store.facts.run(body)


def mark_extracted(tx: ledger.Tx, tenant_id: str, episode_id: str, extractor: str) -> None:
    """Mark the tenant's episode extracted by `extractor`, inside the transaction that
    applies it."""
    tx.engine.candidates.mark_extracted(tx.cur, tenant_id, episode_id, extractor, tx.now)


def is_extracted(store: SGAMStore, episode_id: str, *, tenant_id: str | None = None) -> bool:
    """True once a background manager has consolidated this episode's extraction: the
    tenant's episode of that id (episode ids are per tenant); without `tenant_id`, any
    tenant's, in the scope it was called from."""
    scope = nullcontext() if tenant_id is None else store.engine.tenant_scope(tenant_id)
    with scope, store.engine.reading() as conn:
        return store.engine.candidates.is_extracted(conn, tenant_id, episode_id)


def _load(store: SGAMStore, candidate_ids: Sequence[int]) -> list[Candidate]:
    if not candidate_ids:
        return []
    with store.engine.reading() as conn:
        rows = store.engine.candidates.by_ids(conn, list(candidate_ids))
    return _with_support(store, rows)


def _with_support(store: SGAMStore, rows: list[tuple[Any, ...]]) -> list[Candidate]:
    out = []
    for row in rows:
        r = dict(zip(_ROW_FIELDS, row, strict=True))
        with store.engine.reading() as conn:
            support = store.engine.candidates.support_of(conn, r["candidate_id"])
        out.append(
            Candidate(
                **{
                    **r,
                    "value": json.loads(r["value"]),
                    "first_seen_at": clock.parse_stored(r["first_seen_at"]),
                    "last_seen_at": clock.parse_stored(r["last_seen_at"]),
                    "expires_at": clock.parse_stored(r["expires_at"]),
                    "promoted_at": clock.parse_stored(r["promoted_at"]),
                },
                support=[
                    Support(ep, evidence, conf, clock.parse_stored(at))
                    for ep, evidence, conf, at in support
                ],
            )
        )
    return out

"""The read path: select what the model should see for this request, with citations.

Order of authority: exact structured state first (the fact valid at the instant, per
key), then keyword/vector search only as *supporting evidence*, then superseded values
labelled as history. Nothing here writes. Every line names subject.attribute = value,
the validity window and the source episode, so the model can cite and a reviewer can
trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sgam_store import ledger
from sgam_store.core import clock, namespaces
from sgam_store.core.models import Fact
from sgam_store.read.query import Scope


@dataclass(frozen=True)
class Context:
    """What `recall` selected: the prompt text and the structured records behind it."""

    text: str
    facts: list[Fact]  # authoritative: one per key, valid at `at`
    evidence: list[Fact] = field(default_factory=list)  # related facts found by search
    history: list[Fact] = field(default_factory=list)  # superseded values of `facts`' keys
    at: datetime | None = None


def cite(fact: Fact, label: str = "", times: dict[datetime, str] | None = None) -> str:
    """One context line: `subject.attribute = value (valid from → until) [source …]`.
    `times`: how the context reads each instant (`_readable`), else to the second."""
    times = times or _readable([fact])
    key = f"{fact.subject}.{fact.attribute}" if fact.subject else fact.attribute
    until = times[fact.valid_to] if fact.valid_to else "now"
    prefix = f"{label} " if label else ""
    return (
        f"- {prefix}{key} = {_shown(fact.value)} (valid {times[fact.valid_from]} → {until}) "
        f"[source: {fact.source_episode_id}; fact {fact.fact_id}]"
    )


def _readable(facts: Sequence[Fact]) -> dict[datetime, str]:
    """The facts' interval ends as a person reads them, to the second, with microseconds
    only where two ends of the context would otherwise read alike (`clock.readable`);
    the structured facts keep full precision."""
    instants = [t for f in facts for t in (f.valid_from, f.valid_to) if t is not None]
    return dict(zip(instants, clock.readable(instants), strict=True))


def _shown(value: object) -> str:
    """The value as the model reads it; one stored deeper than Python's repr can walk
    (written before `ledger.MAX_VALUE_DEPTH`) is named, so the rest of the context stands."""
    try:
        return repr(value)
    except RecursionError:
        return "<a value nested too deep to show>"


# A ranked search of facts within a scope: (scope, query, limit) -> facts, best first.
SearchFacts = Callable[[Scope, str, int], list[Fact]]


def recall(
    engine: Any,
    search_facts: SearchFacts,
    tenant_id: str,
    question: str | None = None,
    *,
    subjects: Sequence[str] | None = None,
    attributes: Sequence[str] | None = None,
    memory_types: Sequence[str] | None = None,
    at: clock.Timestamp | None = None,
    known_at: clock.Timestamp | None = None,
    k: int = 5,
    max_facts: int = 50,
) -> Context:
    """Build the smallest cited context for `question` about `tenant_id`.

    Without `at`, answers about now (the open facts); with `at`, as of that instant.
    Structured state for the named subjects/attributes comes first; `question` then
    adds up to `k` search hits as evidence (never replacing a key's exact state), and
    the superseded values of the selected keys are listed as history.
    """
    namespaces.check_item_namespace((tenant_id,))
    scope = Scope(
        at=None if at is None else clock.normalize(at),
        known_at=None if known_at is None else clock.normalize(known_at),
        tenant=tenant_id,
    )
    engine.ensure_ready()
    with engine.snapshot() as conn:  # state, evidence and history from one committed state
        facts: list[Fact] = []
        if subjects or attributes or memory_types:
            rows = engine.reads.structured_state(
                conn,
                scope.at,
                scope.known_at,
                scope.tenant,
                subjects,
                attributes,
                memory_types,
                max_facts,
            )
            facts = [ledger.row_to_fact(r) for r in rows]
        evidence = _search_evidence(
            search_facts, scope, question, k, {(f.subject, f.attribute) for f in facts}
        )
        if not (subjects or attributes or memory_types):
            # No structured selection was asked for: the best search hits are the state. With
            # one, hits never become authoritative, even when the selection matched nothing.
            facts, evidence = evidence, []
        history = _history_of(engine, facts, scope)
    return Context(
        text=_render(facts, evidence, history, scope),
        facts=facts,
        evidence=evidence,
        history=history,
        at=clock.parse_stored(scope.at),
    )


def _search_evidence(
    search_facts: SearchFacts,
    scope: Scope,
    question: str | None,
    k: int,
    seen: set[tuple[str, str]],
) -> list[Fact]:
    if not question:
        return []
    hits = search_facts(scope, question, k + len(seen))
    out = [f for f in hits if (f.subject, f.attribute) not in seen]
    return out[:k]


def _history_of(engine: Any, facts: list[Fact], scope: Scope) -> list[Fact]:
    out: list[Fact] = []
    for fact in facts:
        ns = namespaces.to_text(fact.namespace)
        for old in ledger.history(engine, ns, fact.attribute, scope.known_at):
            if old.fact_id != fact.fact_id and old.valid_from < fact.valid_from:
                out.append(old)
    return out


def _render(facts: list[Fact], evidence: list[Fact], history: list[Fact], scope: Scope) -> str:
    when = f"as of {clock.readable_one(scope.at)}" if scope.at else "current"
    times = _readable([*facts, *evidence, *history])
    lines = [f"Known facts ({when}; authoritative):"]
    lines += [cite(f, times=times) for f in facts] or ["- (none)"]
    if evidence:
        lines.append("Related facts (supporting evidence):")
        lines += [cite(f, times=times) for f in evidence]
    if history:
        lines.append("History (superseded; do not use as current):")
        lines += [cite(f, "was", times) for f in history]
    return "\n".join(lines)

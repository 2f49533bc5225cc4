"""The memory manager's supersession review: does a new memory correct an old one?

LangMem's tools and manager write a changed fact as a new memory under a new key, so the
old value stays current and search returns both (the stale answer SGAM exists to
prevent). Each put of a new key is queued (`SGAMStore(review_new_keys=True)`, the
default). This review, run off the hot path:

1. finds the queued memory's likely predecessors among the current memories of the same
   tenant and namespace (the subject) that began before it: all of them when the
   namespace holds at most SMALL_NAMESPACE memories (a user's few LangMem memories, where
   a search would only risk a miss), else the CANDIDATES closest by the store's own
   search whose calibrated score reaches MIN_SCORE;
2. shows the model the new memory, each candidate and their sources, and asks, in
   structured output, "supersedes", "independent" or "duplicate" for each;
3. records every answer with its evidence; only "supersedes" closes the old memory, at
   the new one's valid_from, and links the two (`write/supersession.py`).

Similarity only nominates: two people's passport deadlines look alike and stay two facts
unless the model says one replaces the other. A memory with no candidate leaves the
queue without a model call, and `ReviewReport.dismissals` says why (logged at INFO):
nothing is dropped silently. A wrong decision is undone with
`SGAMStore.undo_supersession`, history intact. Until the review runs, search returns both
memories, as any store would.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from pydantic import BaseModel, Field

from sgam_store import ledger
from sgam_store.core import clock, namespaces
from sgam_store.core.errors import ConfigurationError, ConflictError
from sgam_store.core.models import Fact, SupersessionDecision
from sgam_store.write.supersession import Verdict, dismiss

if TYPE_CHECKING:
    # Typing only: the model stack is imported when a review asks a model, so that
    # `import sgam_store` stays light.
    from langchain_core.language_models import BaseChatModel

    from sgam_store.store import SGAMStore

log = logging.getLogger(__name__)

SMALL_NAMESPACE = 20  # up to this many current memories, every earlier one is a candidate
CANDIDATES = 3  # likely predecessors shown to the model, in a larger namespace
MIN_SCORE = 0.3  # below this search score a memory is not nominated (larger namespaces)
BATCH = 50  # queued memories reviewed per run

# Why a queued memory left the queue without a model call (`Dismissal.reason`).
ALONE = "no other memory in its namespace"  # none current that began before it
NOT_CURRENT = "no longer current"
BELOW_CUTOFF = "nothing scored above the cut-off"
# Every candidate was restored by a person's undo after the memory was written: that
# person decided the two stand side by side, and no model reviews them again.
KEPT_BY_PERSON = "its candidates were kept by a person's undo"
# Another run (a second replica, another thread) applied its review first: this run's
# verdicts name memories that are no longer current, and the rule refuses them.
REVIEWED_ELSEWHERE = "reviewed by another run meanwhile"

INSTRUCTIONS = """\
You review a user's long-term memory. A new memory was just saved. For each existing \
memory listed, decide:
- "supersedes": the new memory states a changed value of the same fact about the same \
thing, so the existing one is no longer true (a correction or an update);
- "duplicate": the new memory says the same thing as the existing one;
- "independent": it is about something else (another person, trip, document or \
attribute), however similar the wording.
Looking alike is not enough: Mira's deadline and Ana's deadline are independent. \
Answer once per existing memory, by its number, with a short reason."""


class MemoryVerdict(BaseModel):
    """The decision about one existing memory."""

    candidate: int = Field(description="The existing memory's number, as listed.")
    decision: Literal["supersedes", "independent", "duplicate"]
    reason: str = Field(description="Why, in a sentence.")


class SupersessionVerdicts(BaseModel):
    """One verdict per existing memory listed."""

    verdicts: list[MemoryVerdict]


@dataclass(frozen=True)
class Candidate:
    """A current memory the new one may restate, and how close search found it (None:
    nominated without a search, in a small namespace)."""

    fact: Fact
    score: float | None


@dataclass(frozen=True)
class Review:
    """A queued new memory and its likely predecessors."""

    new: Fact
    candidates: list[Candidate]


@dataclass(frozen=True)
class Dismissal:
    """A queued memory that left the queue with no model call, and why: ALONE,
    NOT_CURRENT or BELOW_CUTOFF."""

    fact_id: int
    reason: str


@dataclass
class ReviewReport:
    """What a review run did: memories reviewed by the model, memories dismissed without
    one (`dismissals` says why, one per memory), and the decisions recorded."""

    reviewed: int = 0
    dismissed: int = 0  # len(dismissals)
    decisions: list[SupersessionDecision] = field(default_factory=list)
    dismissals: list[Dismissal] = field(default_factory=list)

    @property
    def superseded(self) -> list[SupersessionDecision]:
        return [d for d in self.decisions if d.decision == "supersedes"]


def memory_text(value: Any) -> str:
    """The words of a memory's value (its strings, nested), as a search query; of
    LangMem's {"kind": ..., "content": ...} shape, its content."""
    if isinstance(value, dict) and "content" in value:
        return memory_text(value["content"])
    if isinstance(value, dict):
        return " ".join(memory_text(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(memory_text(v) for v in value)
    return value if isinstance(value, str) else str(value)


def likely_predecessors(
    store: SGAMStore, new: Fact, *, limit: int = CANDIDATES, min_score: float = MIN_SCORE
) -> list[Candidate]:
    """Current memories of the new one's tenant and namespace, other keys, that began
    before it: all of them, newest first, in a namespace of at most SMALL_NAMESPACE
    memories; else up to `limit` ranked by the store's search for the new memory's text,
    each scoring at least `min_score`."""
    return _nominate(store, new, limit, min_score)[0]


def _nominate(
    store: SGAMStore, new: Fact, limit: int = CANDIDATES, min_score: float = MIN_SCORE
) -> tuple[list[Candidate], str]:
    """`likely_predecessors`, and the dismissal reason should there be none."""
    found, reason = _likely(store, new, limit, min_score)
    open_to_review = [c for c in found if not _kept_by_person(c.fact, new)]
    return open_to_review, reason if len(open_to_review) == len(found) else KEPT_BY_PERSON


def _kept_by_person(old: Fact, new: Fact) -> bool:
    """Whether a person's undo restored `old` (`decided_by` "undo:<id>") after `new` was
    written: that person saw both and decided the old one stands, so neither the review
    page nor `resolve_supersessions` offers it against `new` again. Memories written
    after the undo may still be reviewed against it."""
    return (old.decided_by or "").startswith("undo:") and old.recorded_at >= new.recorded_at


def _likely(
    store: SGAMStore, new: Fact, limit: int, min_score: float
) -> tuple[list[Candidate], str]:
    """Every memory of the new one's namespace that began before it (a small namespace),
    or the closest by search; and the dismissal reason should there be none."""
    members = _namespace_members(store, new)
    if members is not None:
        return _all_earlier(members, new), ALONE
    relative = store.layout.relative(new.namespace)
    view = store.for_tenant(new.tenant_id)
    # A review's look-up is no one reading these memories: their expiries stay.
    hits = view.search(relative, query=memory_text(new.value), limit=limit + 5, refresh_ttl=False)
    found = []
    for hit in hits:
        if tuple(hit.namespace) != relative or hit.key == new.attribute:
            continue
        if hit.score is not None and hit.score < min_score:
            continue
        old = store.fact_at(new.tenant_id, new.subject, hit.key)
        if old is not None and _precedes(old, new):
            found.append(Candidate(old, float(hit.score or 0.0)))
    return found[:limit], BELOW_CUTOFF


def _all_earlier(members: list[Fact], new: Fact) -> list[Candidate]:
    """A small namespace's candidates: every member that precedes `new`, newest first."""
    earlier = [f for f in members if _precedes(f, new)]
    earlier.sort(key=lambda f: (f.valid_from, f.fact_id), reverse=True)
    return [Candidate(f, None) for f in earlier]


def _precedes(old: Fact, new: Fact) -> bool:
    """Whether `old` is another key's memory that began before `new` (only such a memory
    can be superseded by it)."""
    return old.attribute != new.attribute and old.valid_from < new.valid_from


def _namespace_members(store: SGAMStore, new: Fact) -> list[Fact] | None:
    """The current memories of the new one's namespace (its subject), or None when there
    are more than SMALL_NAMESPACE."""
    ns = namespaces.to_text(new.namespace)
    with store.engine.reading() as conn:
        rows = store.engine.supersession.namespace_members(
            conn, new.tenant_id, ns, clock.utc_now(), SMALL_NAMESPACE + 1
        )
    if len(rows) > SMALL_NAMESPACE:
        return None
    return [ledger.row_to_fact(r) for r in rows]


def pending_reviews(
    store: SGAMStore, tenant_id: str | None = None, *, limit: int = BATCH, after: int = 0
) -> tuple[list[Review], list[Dismissal]]:
    """The queued memories (the oldest `limit` after fact `after`) with their candidates,
    and those with nothing to decide, each with the reason (no longer current, alone in
    its namespace, nothing close enough)."""
    with store.engine.tenant_scope(tenant_id):  # row security: that tenant's queue
        reviews, idle = [], []
        for fact_id, new in _queued(store, tenant_id, limit, after):
            if new is None:
                idle.append(Dismissal(fact_id, NOT_CURRENT))
                continue
            candidates, reason = _nominate(store, new)
            if candidates:
                reviews.append(Review(new, candidates))
            else:
                idle.append(Dismissal(fact_id, reason))
        return reviews, idle


def _queued(
    store: SGAMStore, tenant_id: str | None, limit: int, after: int = 0
) -> list[tuple[int, Fact | None]]:
    """The oldest `limit` queued memories after fact `after`: (fact_id, its current fact,
    or None when it is no longer current)."""
    store.engine.ensure_ready()
    with store.engine.reading() as conn:
        queued = store.engine.supersession.queued(conn, tenant_id, limit, after)
        rows = [store.engine.versions.latest_of(conn, fact_id) for fact_id, _ in queued]
    found = []
    for (fact_id, _), row in zip(queued, rows, strict=True):
        new = _current(store, row) if row is not None else None
        found.append((fact_id, new if new is not None and new.fact_id == fact_id else None))
    return found


@dataclass(frozen=True)
class Queued:
    """A memory waiting for review and, in a namespace of at most SMALL_NAMESPACE
    memories, its candidates (every earlier one); None in a larger namespace, whose
    candidates the review finds by searching for `memory_text(new.value)` there."""

    new: Fact
    candidates: list[Candidate] | None


def review_queue(
    store: SGAMStore, tenant_id: str, *, limit: int = BATCH, after: int = 0
) -> tuple[list[Queued], list[Dismissal]]:
    """`pending_reviews` without its searches: what waits, with the candidates that need
    no search. Its reads follow `limit` (index lookups per memory), never the size of a
    namespace or tenant, and `after` (the last fact id a page showed) starts the next
    page by a seek, so the inspector can page through a queue of any depth."""
    with store.engine.tenant_scope(tenant_id):
        waiting, idle = [], []
        for fact_id, new in _queued(store, tenant_id, limit, after):
            members = None if new is None else _namespace_members(store, new)
            if new is None:
                idle.append(Dismissal(fact_id, NOT_CURRENT))
            elif members is None:
                waiting.append(Queued(new, None))
            elif candidates := _all_earlier(members, new):
                waiting.append(Queued(new, candidates))
            else:
                idle.append(Dismissal(fact_id, ALONE))
        return waiting, idle


def _current(store: SGAMStore, row: Any) -> Fact | None:
    """The open fact of a stored version's key, if the version is still believed open."""
    if row.valid_to is not None or row.known_to is not None:
        return None
    tenant, subject = store.layout.split(namespaces.from_text(row.namespace))
    return store.fact_at(tenant, subject, row.attribute)


def review_messages(store: SGAMStore, review: Review) -> list[Any]:
    """The model's input: instructions, the new memory and each candidate, with sources."""
    lines = [f"New memory: {_describe(store, review.new)}", "", "Existing memories:"]
    lines += [f"{n}. {_describe(store, c.fact)}" for n, c in enumerate(review.candidates, 1)]
    return [SystemMessage(INSTRUCTIONS), HumanMessage("\n".join(lines))]


def decide(store: SGAMStore, model: BaseChatModel, review: Review) -> list[Verdict]:
    """Ask the model about each candidate; verdicts naming no listed candidate are dropped
    (a candidate left unanswered stays as it is)."""
    answer = model.with_structured_output(SupersessionVerdicts).invoke(
        review_messages(store, review)
    )
    verdicts = answer.verdicts if isinstance(answer, SupersessionVerdicts) else []
    out: dict[int, Verdict] = {}
    for v in verdicts:
        if 1 <= v.candidate <= len(review.candidates):
            c = review.candidates[v.candidate - 1]
            evidence = {"new": _evidence(store, review.new), "old": _evidence(store, c.fact)}
            out[c.fact.fact_id] = Verdict(c.fact.fact_id, v.decision, v.reason, c.score, evidence)
    return list(out.values())


def resolve_supersessions(
    store: SGAMStore,
    model: BaseChatModel | Callable[[], BaseChatModel],
    *,
    tenant_id: str | None = None,
    limit: int = BATCH,
) -> ReviewReport:
    """Review up to `limit` queued memories (of one tenant, or any): decide, record,
    apply. Idempotent: a reviewed memory leaves the queue. `model` may be a function
    that returns one, called only when some memory has candidates to decide on."""
    # One tenant's review runs in that tenant's scope, so row security (PostgreSQL) lets
    # the application role read and write its rows; None is the all-tenant scope.
    with store.engine.tenant_scope(tenant_id):
        return _resolve(store, model, tenant_id, limit)


def _resolve(
    store: SGAMStore,
    model: BaseChatModel | Callable[[], BaseChatModel],
    tenant_id: str | None,
    limit: int,
) -> ReviewReport:
    from langchain_core.language_models import BaseChatModel

    reviews, idle = pending_reviews(store, tenant_id, limit=limit)
    report = ReviewReport(reviewed=len(reviews), dismissed=len(idle), dismissals=idle)
    dismiss(store.facts, [d.fact_id for d in idle])
    if idle:
        log.info(
            "supersession review dismissed %d memories without a model call: %s",
            len(idle),
            "; ".join(f"fact {d.fact_id}: {d.reason}" for d in idle),
        )
    if not reviews:
        return report
    llm = model if isinstance(model, BaseChatModel) else model()
    by = f"model:{getattr(llm, 'model_name', None) or type(llm).__name__}"
    for review in reviews:
        verdicts = decide(store, llm, review)
        try:
            report.decisions += store.apply_supersession(
                review.new.fact_id, verdicts, decided_by=by
            )
        except ConflictError as refused:  # its transaction wrote nothing
            report.dismissed += 1
            report.dismissals.append(Dismissal(review.new.fact_id, REVIEWED_ELSEWHERE))
            log.info(
                "supersession review of fact %d left to another run: %s",
                review.new.fact_id,
                refused,
            )
    return report


def create_supersession_manager(
    model: BaseChatModel, *, store: SGAMStore | None = None, tenant_key: str = "langgraph_user_id"
) -> RunnableLambda:
    """The review as a Runnable, to run after LangMem's manager (`langmem_manager |
    create_supersession_manager(model)`) or on its own under LangMem's
    `ReflectionExecutor`. Its input is ignored; the tenant is `configurable[tenant_key]`
    (LangMem's user id, the tenant under `tenant_at=1`), else every tenant's queue.
    Without `store=` it reviews the store of the LangGraph run it is called in; called
    outside one, it raises `ConfigurationError` (there is no store to guess)."""

    def run(_: Any, config: RunnableConfig) -> ReviewReport:
        target = store if store is not None else _graph_store()
        tenant = (config.get("configurable") or {}).get(tenant_key)
        return resolve_supersessions(target, model, tenant_id=tenant)

    return RunnableLambda(run, name="supersession_review")


def _graph_store() -> SGAMStore:
    """The store of the LangGraph run this review is called in, which must be an SGAMStore."""
    from langgraph.config import get_store

    from sgam_store.store import SGAMStore

    try:
        found = get_store()
    except (KeyError, RuntimeError):  # no LangGraph run around this call: no runtime to ask
        found = None
    if found is None:
        raise ConfigurationError(
            "the supersession review found no store: outside a LangGraph graph compiled "
            "with store=, pass one: create_supersession_manager(model, store=SGAMStore(...))"
        )
    if not isinstance(found, SGAMStore):
        raise ConfigurationError(
            f"the supersession review needs an SGAMStore, got {type(found).__name__}: "
            "compile the graph with store=SGAMStore(...), or pass store= to "
            "create_supersession_manager"
        )
    return found


def _describe(store: SGAMStore, fact: Fact) -> str:
    source = _source(store, fact)
    return f"{memory_text(fact.value)!r} (since {fact.valid_from.isoformat()}; source: {source})"


def _evidence(store: SGAMStore, fact: Fact) -> dict[str, Any]:
    return {
        "fact_id": fact.fact_id,
        "key": fact.attribute,
        "value": fact.value,
        "valid_from": fact.valid_from.isoformat(),
        "source": _source(store, fact),
    }


def _source(store: SGAMStore, fact: Fact) -> str:
    """What said it: the episode's text, or the source marker (a thread, a run)."""
    said = store.who_said(fact, tenant_id=fact.tenant_id)
    content = getattr(said, "content", None)
    return f"{fact.source_episode_id}: {content!r}" if content else fact.source_episode_id


@dataclass(frozen=True)
class Decided:
    """A recorded review decision and its two memories as they stand now (their newest
    version; None when erased since)."""

    decision: SupersessionDecision
    new: Fact | None
    old: Fact | None


def recent_decisions(
    store: SGAMStore, tenant_id: str, *, limit: int = BATCH, before: int | None = None
) -> list[Decided]:
    """The tenant's review decisions older than decision `before` (None: from the
    newest), newest first, at most `limit`, each with its two memories: one read of the
    decisions and one lookup by id per memory, so the cost follows `limit`, not the
    tenant's ledger (the inspector's review page, a page at a time)."""
    with store.engine.tenant_scope(tenant_id):
        store.engine.ensure_ready()
        with store.engine.reading() as conn:
            rows = store.engine.supersession.of_tenant(conn, tenant_id, limit, before)
            decisions = [SupersessionDecision.from_row(r) for r in rows]
            ids = {i for d in decisions for i in (d.new_fact_id, d.old_fact_id)}
            latest = {i: store.engine.versions.latest_of(conn, i) for i in sorted(ids)}
    facts = {i: None if row is None else ledger.row_to_fact(row) for i, row in latest.items()}
    return [Decided(d, facts[d.new_fact_id], facts[d.old_fact_id]) for d in decisions]

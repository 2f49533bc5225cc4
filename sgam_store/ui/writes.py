"""The inspector's writes (with `allow_writes` only): each goes through the store's public
API, after checking that what the form names belongs to the page's tenant, so a confined
app cannot touch another tenant's review either."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sgam_store import Verdict
from sgam_store.managers.supersession import pending_reviews
from sgam_store.ui.pages import Inspector, NotFound, tenant_decisions
from sgam_store.ui.params import BadParameter, number, text

VERDICTS = ("independent", "supersedes", "duplicate")  # what a review may answer, as forms offer
DECIDED_BY = "sgam ui"  # decided_by of the decisions a person records in the inspector
QUEUE_LOOKUP = 200  # queued memories searched for the one a decision form names


def undo(app: Inspector, tenant: str, form: Mapping[str, str]) -> None:
    """Take back a "supersedes" decision (`undo_supersession`), history intact."""
    decision_id = number(form, "decision_id", 0, 1, 2**62)
    if decision_id not in {d["decision_id"] for d in tenant_decisions(app.store, tenant)}:
        raise NotFound(f"no decision {decision_id} for this tenant")
    app.store.undo_supersession(decision_id, tenant_id=tenant)


def decide(app: Inspector, tenant: str, form: Mapping[str, str]) -> None:
    """Record a person's review of a queued memory (`apply_supersession`): one verdict
    per candidate the review showed, `verdict_<fact id>` in the form."""
    new_fact_id = number(form, "new_fact_id", 0, 1, 2**62)
    reviews, _ = pending_reviews(app.store, tenant, limit=QUEUE_LOOKUP)
    review = next((r for r in reviews if r.new.fact_id == new_fact_id), None)
    if review is None:
        raise NotFound(f"memory {new_fact_id} is not waiting for review in this tenant")
    reason = text(form, "reason") or "decided in the inspector"
    verdicts = []
    for candidate in review.candidates:
        choice = text(form, f"verdict_{candidate.fact.fact_id}", required=True)
        if choice not in VERDICTS:
            raise BadParameter(f"a verdict is one of {', '.join(VERDICTS)}, got {choice!r}")
        verdicts.append(Verdict(candidate.fact.fact_id, choice, reason, candidate.score))
    app.store.apply_supersession(new_fact_id, verdicts, decided_by=DECIDED_BY, tenant_id=tenant)


ACTIONS: dict[str, Callable[[Inspector, str, Mapping[str, str]], None]] = {
    "undo": undo,
    "decide": decide,
}

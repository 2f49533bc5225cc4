"""Conflict policies: who wins when two facts of one key start at the same instant.

The write rule treats an equal `valid_from` as a conflict (`ConflictError`) because
picking a winner is an application decision. A policy is that decision, opt-in and
small: `decide(existing, incoming)` returns "keep" or "replace" with a reason, or None
when it cannot tell (then the conflict stands). The ledger applies the decision and
records the deciding policy's name in `decided_by`, so an audit can see why a value won.

Source rank: a claim's source is classified from its episode, then ranked:
user confirmation (a user message whose metadata has ``"confirmed": true``) > user
statement > tool result = business event > model inference (assistant message) >
external (plain puts, threads, runs, unknown ids). Both steps can be replaced.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from sgam_store.core.decision import Decision
from sgam_store.ledger.episodes import Episode

DEFAULT_RANKS: Mapping[str, int] = {
    "user_confirmation": 40,
    "user_statement": 30,
    "tool_result": 20,
    "business_event": 20,
    "model_inference": 10,
    "external": 0,
}
_CLASS_OF_KIND = {
    "user_message": "user_statement",
    "tool_result": "tool_result",
    "business_event": "business_event",
    "assistant_message": "model_inference",
}


@dataclass(frozen=True)
class Claim:
    """One side of an equal-start conflict: a value, its source, and when it was learned."""

    value: Any
    source_episode_id: str
    episode: Episode | None  # None: an external marker, or an id that is not an episode
    recorded_at: str  # stored-form instant the store learned the source (episode, else fact)


class ConflictPolicy(Protocol):
    name: str

    def decide(self, existing: Claim, incoming: Claim) -> Decision | None: ...


def source_class(claim: Claim) -> str:
    """Classify a claim's source from its episode's kind and a confirmation flag."""
    episode = claim.episode
    if episode is None:
        return "external"
    if episode.source_kind == "user_message" and episode.metadata.get("confirmed") is True:
        return "user_confirmation"
    return _CLASS_OF_KIND[episode.source_kind]


@dataclass(frozen=True)
class SourcePrecedence:
    """The better-ranked source wins; on a tie, `then` decides (or the conflict stands)."""

    ranks: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_RANKS))
    classify: Callable[[Claim], str] = source_class
    then: ConflictPolicy | None = None
    name: str = "source_precedence"

    def decide(self, existing: Claim, incoming: Claim) -> Decision | None:
        old, new = self.classify(existing), self.classify(incoming)
        if self.ranks[new] > self.ranks[old]:
            return Decision("replace", f"incoming {new} outranks stored {old}", self.name)
        if self.ranks[new] < self.ranks[old]:
            return Decision("keep", f"stored {old} outranks incoming {new}", self.name)
        return self.then.decide(existing, incoming) if self.then else None


@dataclass(frozen=True)
class LatestRecordedWins:
    """The claim whose source the store recorded last wins (ties go to the incoming one).

    "Recorded" is the episode's `recorded_at` when the source is an episode, so a late
    extraction of an older episode does not beat a newer episode's value.
    """

    name: str = "latest_recorded_wins"

    def decide(self, existing: Claim, incoming: Claim) -> Decision:
        if incoming.recorded_at >= existing.recorded_at:
            return Decision(
                "replace",
                f"incoming source recorded {incoming.recorded_at}, stored {existing.recorded_at}",
                self.name,
            )
        return Decision(
            "keep",
            f"stored source recorded {existing.recorded_at}, after incoming {incoming.recorded_at}",
            self.name,
        )

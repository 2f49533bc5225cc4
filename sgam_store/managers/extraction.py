"""Extraction: from one recorded episode to `MemoryUpdate` candidates, by structured output.

The model sees the episode and the values stored now for the subjects it involves
(named subjects, plus the tenant's current facts that a search for the episode text
finds), so it can fill `current_value` and decide `change` against real state, as
schema-guided reasoning asks. Its output is untrusted data: `extract_candidates`
returns the raw payloads for the write service, which validates and reports each one;
`extract_updates` is the typed variant that refuses the whole output if any candidate
is invalid (the usual structured-output contract: retry the model, or report).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from sgam_store.core import clock, namespaces
from sgam_store.core.errors import InvalidCandidateError
from sgam_store.core.models import Fact
from sgam_store.ledger.episodes import Episode
from sgam_store.write.candidates import (
    MemoryUpdate,
    MemoryUpdates,
    normalize_subject,
    validate_candidate,
)
from sgam_store.write.schemas import MemorySchema

if TYPE_CHECKING:  # the chat-model stack loads with the model the caller passes, not here
    from langchain_core.language_models import BaseChatModel

    from sgam_store.store import SGAMStore


@cache
def extraction_tool() -> dict[str, Any]:
    """The structured-output schema the model fills, built on first use: LangChain's tool
    converter loads its whole tools stack, which a store that never extracts should not pay."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return convert_to_openai_tool(MemoryUpdates)


INSTRUCTIONS = """\
You maintain an agent's long-term memory. Read the episode and propose memory updates \
for facts it states, confirms or changes about an entity. Fill each update's fields in \
order: quote the evidence exactly; name the subject and attribute; copy the stored value \
for that subject and attribute from 'Stored values' into current_value (null if none); \
then decide change: 'new' if nothing is stored, 'update' if the episode changes the \
stored value, 'no_change' if it only repeats it; then give the value and valid_from \
(ISO-8601 with 'Z' or an offset; the episode time if the text does not say when). \
Never set a tenant or an episode: the application adds them. Return an empty list when \
the episode holds nothing worth remembering."""


def current_facts(
    store: SGAMStore, episode: Episode, *, subjects: Sequence[str] = (), limit: int = 20
) -> list[Fact]:
    """The tenant's current facts the episode may touch: named subjects, then search hits."""
    view = store.for_tenant(episode.tenant_id)  # relative namespaces: the subject's labels
    items = []
    for subject in subjects:
        items += view.search(tuple(normalize_subject(subject).split(".")), limit=limit)
    items += view.search((), query=episode.content, limit=limit)
    facts: dict[tuple[tuple[str, ...], str], Fact] = {}
    for item in items:
        key = (item.namespace, item.key)
        subject = namespaces.to_text(item.namespace)
        if key not in facts and (fact := store.fact_at(episode.tenant_id, subject, item.key)):
            facts[key] = fact
    return list(facts.values())


def extraction_messages(
    store: SGAMStore,
    episode: Episode,
    *,
    schema: MemorySchema | None = None,
    subjects: Sequence[str] = (),
    limit: int = 20,
) -> list[BaseMessage]:
    """The model's input: instructions (+ schema), stored values, then the episode."""
    system = INSTRUCTIONS + (f"\n\n{schema.describe()}" if schema else "")
    facts = current_facts(store, episode, subjects=subjects, limit=limit)
    stored = "\n".join(_fact_line(f) for f in facts) or "(nothing stored yet)"
    header = (
        f"Episode ({episode.source_kind}, speaker {episode.speaker or 'unknown'}, "
        f"at {clock.fmt(episode.occurred_at)}):"
    )
    human = f"Stored values:\n{stored}\n\n{header}\n{episode.content}"
    return [SystemMessage(system), HumanMessage(human)]


def _fact_line(fact: Fact) -> str:
    value = json.dumps(fact.value, ensure_ascii=False)
    return (
        f"- subject {fact.subject!r}, attribute {fact.attribute!r}: current_value {value} "
        f"(since {clock.fmt(fact.valid_from)})"
    )


def extract_candidates(
    model: BaseChatModel,
    store: SGAMStore,
    episode: Episode,
    *,
    schema: MemorySchema | None = None,
    subjects: Sequence[str] = (),
) -> list[Any]:
    """The model's raw candidate payloads, for `apply_updates` to validate one by one."""
    messages = extraction_messages(store, episode, schema=schema, subjects=subjects)
    output = model.with_structured_output(extraction_tool()).invoke(messages)
    updates = (output or {}).get("updates", [])
    if not isinstance(updates, list):
        raise InvalidCandidateError(f"model output 'updates' is not a list: {updates!r}")
    return updates


def extract_updates(
    model: BaseChatModel,
    store: SGAMStore,
    episode: Episode,
    *,
    schema: MemorySchema | None = None,
    subjects: Sequence[str] = (),
) -> list[MemoryUpdate]:
    """Typed candidates, each valid against the episode; any invalid one fails the call."""
    updates, problems = [], []
    for i, payload in enumerate(
        extract_candidates(model, store, episode, schema=schema, subjects=subjects)
    ):
        try:
            updates.append(validate_candidate(payload, episode.content))
        except InvalidCandidateError as exc:
            problems.append(f"candidate {i}: {exc}")
    if problems:
        raise InvalidCandidateError("; ".join(problems))
    return updates

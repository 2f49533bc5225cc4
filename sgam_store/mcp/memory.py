"""One tenant's memory as the MCP tools see it: plain calls on the store's public API
that return JSON-ready dicts, or raise `FieldError` naming the argument at fault.

The tenant is fixed when the server starts and no call takes one: reads and deletes go
through `for_tenant` (a view that cannot name another tenant), and the SGAM calls that
take a tenant argument (`record_episode`, `apply_updates`, `fact_at`, `recall`,
`history`, `versions`, `who_said`) receive this object's, never the client's.

Every argument is checked before anything is written, so a refused call leaves the
store as it was: `remember` records its episode only once the candidate validates, and
takes the episode back (`purge_episode`) if the write rule then refuses the fact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import ValidationError

from sgam_store import (
    Change,
    Episode,
    EpisodeNotFoundError,
    Fact,
    MemoryUpdate,
    SGAMError,
    SGAMStore,
    normalize_attribute,
    normalize_subject,
)
from sgam_store.core import clock

T = TypeVar("T")
SEARCH_LIMIT = 50  # most hits a search or a change feed returns in one call
SUBJECT_LIMIT = 1000  # most subjects listed as resources


class FieldError(ValueError):
    """A tool argument the store refuses: which one, and why. Nothing was written."""

    def __init__(self, field: str, message: str, kind: str = "InvalidArgument") -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.kind = kind

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message, "type": self.kind}


def checked(field: str, parse: Callable[[Any], T], value: Any) -> T:
    """`parse(value)`, with the store's own error turned into a FieldError for `field`."""
    try:
        return parse(value)
    except (SGAMError, ValueError) as exc:
        raise FieldError(field, " ".join(str(exc).split()), type(exc).__name__) from None


def instant(field: str, value: str | None) -> str | None:
    """An ISO-8601 instant with a UTC offset, as the store reads them (naive is refused)."""
    return None if value is None else checked(field, clock.normalize, value)


class TenantMemory:
    """The operations behind the MCP tools, confined to one tenant of one store."""

    def __init__(self, store: SGAMStore, tenant: str) -> None:
        self.store = store
        self.view = store.for_tenant(tenant)  # checks the tenant label, then confines
        self.tenant = tenant

    # ------------------------------------------------------------------ writes

    def remember(
        self,
        subject: str,
        attribute: str,
        value: Any,
        evidence: str,
        *,
        valid_from: str | None = None,
        memory_type: str | None = None,
        speaker: str,
    ) -> dict[str, Any]:
        """Record the evidence as an episode and write the fact by the write rule."""
        subj = checked("subject", normalize_subject, subject)
        attr = checked("attribute", normalize_attribute, attribute)
        start = instant("valid_from", valid_from)
        if value is None or (isinstance(value, str) and not value.strip()):
            raise FieldError("value", "is empty: pass the value to remember")
        before = self.store.fact_at(self.tenant, subj, attr)
        holding = self.store.fact_at(self.tenant, subj, attr, at=start) if start else before
        said_at = clock.utc_now()  # the episode's time, and the start when none is given
        update = self._candidate(
            evidence, subj, attr, holding, value, start or said_at, memory_type
        )
        if holding is not None and holding.value == value:  # valid, and already stored
            return {
                "changed": False,
                "before": self.cited(before),
                "written": None,
                "now": self.cited(before),
            }
        if holding is not None and start == clock.normalize(holding.valid_from):
            raise FieldError(
                "valid_from",
                f"{subj}.{attr} already has a value starting at {start} "
                f"({holding.value!r}, fact {holding.fact_id}); give the correction its own "
                "start, later than that one",
                "ConflictError",
            )
        # The evidence quotes the conversation (the docstring asks for the user's words);
        # the speaker names the client that relayed it.
        episode = self.store.record_episode(
            self.tenant,
            evidence,
            source_kind="user_message",
            speaker=speaker,
            occurred_at=said_at,
            metadata={"via": "mcp"},
        )
        result = self.store.apply_updates(
            [update], tenant_id=self.tenant, episode_id=episode.episode_id
        )
        if result.rejected:
            self.store.purge_episode(self.tenant, episode.episode_id)  # nothing stays
            rejection = result.rejected[0]
            field = "valid_from" if rejection.kind in ("conflict", "kept") else "value"
            raise FieldError(field, rejection.reason, f"Rejected ({rejection.kind})")
        written = result.written[0]
        return {
            "changed": True,
            "before": self.cited(before),
            "written": self.cited(written),
            "now": self.cited(self.store.fact_at(self.tenant, subj, attr)),
        }

    def _candidate(
        self,
        evidence: str,
        subject: str,
        attribute: str,
        holding: Fact | None,
        value: Any,
        start: str,
        memory_type: str | None,
    ) -> MemoryUpdate:
        """The typed candidate, validated before anything is recorded."""
        payload = {
            "evidence": evidence,
            "subject": subject,
            "attribute": attribute,
            "current_value": None if holding is None else holding.value,
            "change": "new" if holding is None else "update",
            "value": value,
            "valid_from": start,
            "memory_type": memory_type,
            "confidence": 1.0,  # the calling model read it and chose to store it
        }
        try:
            return MemoryUpdate.model_validate(payload)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = str(error["loc"][0]) if error["loc"] else "value"
            message = error["msg"].removeprefix("Value error, ")
            raise FieldError(field, message, "InvalidCandidateError") from None

    def forget(self, subject: str, attribute: str) -> dict[str, Any]:
        """Close the key's current fact now (`delete` on the tenant view); history stays."""
        subj = checked("subject", normalize_subject, subject)
        attr = checked("attribute", normalize_attribute, attribute)
        before = self.store.fact_at(self.tenant, subj, attr)
        if before is None:
            raise FieldError("attribute", f"nothing current is stored for {subj}.{attr}")
        self.view.delete(self._relative(subj), attr)
        closed = self.store.fact_at(self.tenant, subj, attr, at=before.valid_from)
        return {"forgotten": self.cited(closed), "now": None}

    # ------------------------------------------------------------------- reads

    def recall(
        self,
        question: str | None = None,
        subject: str | None = None,
        *,
        valid_at: str | None = None,
        known_at: str | None = None,
    ) -> dict[str, Any]:
        """`SGAMStore.recall`: the key states first, search hits as evidence, history."""
        if not (question and question.strip()) and subject is None:
            raise FieldError("question", "is empty: ask a question, or name a subject")
        subjects = None if subject is None else [checked("subject", normalize_subject, subject)]
        at = instant("valid_at", valid_at)
        known = instant("known_at", known_at)
        context = self.store.recall(
            self.tenant, question or None, subjects=subjects, at=at, known_at=known
        )
        return {
            "text": context.text,
            "valid_at": at,
            "known_at": known,
            "facts": [self.cited(f) for f in context.facts],
            "evidence": [self.cited(f) for f in context.evidence],
            "history": [self.cited(f) for f in context.history],
        }

    def search(self, query: str, subject: str | None = None, limit: int = 10) -> dict[str, Any]:
        """Hybrid (or keyword) search over current facts, with the store's scores."""
        if not query.strip():
            raise FieldError("query", "is empty: say what to look for")
        _check_limit(limit)
        prefix = (
            ()
            if subject is None
            else self._relative(checked("subject", normalize_subject, subject))
        )
        items = self.view.search(prefix, query=query, limit=limit)
        hits = []
        for item in items:
            subj = ".".join(item.namespace)
            fact = self.store.fact_at(self.tenant, subj, item.key)
            hits.append({"score": item.score, **(self.cited(fact) or {})})
        return {"query": query, "results": hits}

    def history(self, subject: str, attribute: str, known_at: str | None = None) -> dict[str, Any]:
        """The key's versions in valid time as believed at `known_at` (default now), and
        every version ever written, with belief time, each with its source."""
        subj = checked("subject", normalize_subject, subject)
        attr = checked("attribute", normalize_attribute, attribute)
        known = instant("known_at", known_at)
        believed = self.store.history(self.tenant, subj, attr, known_at=known)
        written = self.store.versions(self.tenant, subj, attr)
        if not written:
            raise FieldError("attribute", f"nothing is stored for {subj}.{attr}")
        return {
            "subject": subj,
            "attribute": attr,
            "known_at": known,
            "versions": [self.cited(f) for f in believed],
            "all_versions": [self.cited(f, belief=True) for f in written],
        }

    def what_changed(self, since: str, limit: int = SEARCH_LIMIT) -> dict[str, Any]:
        """The tenant's change feed since `since` (transaction time), newest first."""
        start = instant("since", since)
        _check_limit(limit)
        found: list[Change] = self.view.changes(start, limit=limit)
        return {"since": start, "changes": [c.model_dump(mode="json") for c in found]}

    def subjects(self) -> list[str]:
        """The subjects that hold current facts (the resources a client can attach)."""
        found = self.view.list_namespaces(limit=SUBJECT_LIMIT)
        return sorted({".".join(ns) for ns in found if ns})

    def current(self, subject: str) -> str:
        """A subject's current facts, cited, as the resource `sgam://SUBJECT` shows them."""
        subj = checked("subject", normalize_subject, subject)
        context = self.store.recall(self.tenant, subjects=[subj])
        if not context.facts:
            return f"No current facts about {subj}."
        return context.text

    # ----------------------------------------------------------------- helpers

    def cited(self, fact: Fact | None, *, belief: bool = False) -> dict[str, Any] | None:
        """A fact as the tools return it: key, value, validity, and who said it."""
        if fact is None:
            return None
        out = {
            "fact_id": fact.fact_id,
            "subject": fact.subject,
            "attribute": fact.attribute,
            "value": fact.value,
            "valid_from": fact.valid_from.isoformat(),
            "valid_to": None if fact.valid_to is None else fact.valid_to.isoformat(),
            "supersedes_fact_id": fact.supersedes_fact_id,
            "recorded_at": fact.recorded_at.isoformat(),
            "source": self._source(fact),
        }
        if belief:
            out["known_from"] = fact.known_from.isoformat()
            out["known_to"] = None if fact.known_to is None else fact.known_to.isoformat()
        return out

    def _source(self, fact: Fact) -> dict[str, Any]:
        try:
            said = self.store.who_said(fact, tenant_id=self.tenant)
        except EpisodeNotFoundError:  # cites an id nobody recorded (a direct replace_fact)
            return {"episode_id": fact.source_episode_id, "kind": "unrecorded"}
        if isinstance(said, Episode):
            return {
                "episode_id": said.episode_id,
                "speaker": said.speaker,
                "said": said.content,
                "occurred_at": said.occurred_at.isoformat(),
            }
        return {"episode_id": fact.source_episode_id, "kind": said.kind}

    def _relative(self, subject: str) -> tuple[str, ...]:
        """The subject's namespace as the tenant view names it (without the tenant)."""
        layout = self.store.layout
        return layout.relative(
            checked("subject", lambda s: layout.fact_namespace(self.tenant, s), subject)
        )


def _check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= SEARCH_LIMIT:
        raise FieldError("limit", f"must be a whole number from 1 to {SEARCH_LIMIT}, got {limit!r}")

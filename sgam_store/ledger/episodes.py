"""The raw episode log: what was said or observed, before any extraction.

Episodes are the provenance end of every fact written by the write path: a fact's
`source_episode_id` names a row here, so "who said it?" is one lookup from a fact to
the message text and its speaker. Ids that start with "external:", "thread:" or
"run:" (what plain `put`s record) are explicit external markers instead, and no
recorded episode may take such an id, so the two never collide.

Episodes are immutable: recording an id twice is an error, not an update, because
facts already point at the first text. Ids are per tenant: the same id in two tenants
is two episodes, and a fact's source is looked up in the fact's own tenant only, so
provenance never points across tenants and recording an id tells nothing about what
another tenant recorded.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sgam_store.core import clock, namespaces
from sgam_store.core.errors import (
    EpisodeNotFoundError,
    FactNotFoundError,
    InvalidEpisodeError,
    explain,
)
from sgam_store.core.models import Fact

SourceKind = Literal["user_message", "assistant_message", "tool_result", "business_event"]
EXTERNAL_PREFIXES = ("external:", "thread:", "run:")


class Episode(BaseModel):
    """One recorded message, tool result or business event, as the store keeps it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    episode_id: str = Field(description="Stable id; facts point here as source_episode_id.")
    tenant_id: str = Field(description="Owner; only this tenant's facts may cite it.")
    thread_id: str | None = Field(default=None, description="Conversation it came from.")
    source_kind: SourceKind
    speaker: str | None = Field(default=None, description="Who said it, e.g. a user id.")
    content: str = Field(description="The raw text, quoted by candidates' evidence.")
    metadata: dict[str, Any] = Field(default_factory=dict)
    occurred_at: datetime = Field(description="When it happened in the world.")
    recorded_at: datetime = Field(description="When the store recorded it.")
    retention_class: str = "keep"

    @field_validator("episode_id")
    @classmethod
    def _episode_id(cls, v: str) -> str:
        check_episode_id(v)
        if is_external(v):
            raise InvalidEpisodeError(
                f"episode_id {v!r} starts with a reserved external marker {EXTERNAL_PREFIXES}"
            )
        return v

    @field_validator("tenant_id")
    @classmethod
    def _tenant(cls, v: str) -> str:
        return namespaces.check_item_namespace((v,))[0]

    @field_validator("content")
    @classmethod
    def _content(cls, v: str) -> str:
        if not v.strip():
            raise InvalidEpisodeError("episode content is empty: there is nothing to quote")
        return v

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, v: dict[str, Any]) -> dict[str, Any]:
        try:
            json.dumps(v, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidEpisodeError(f"episode metadata is not JSON-serializable: {exc}") from None
        return v

    @field_validator("retention_class")
    @classmethod
    def _retention(cls, v: str) -> str:
        if not v.strip():
            raise InvalidEpisodeError("retention_class must be a non-empty string")
        return v

    @field_validator("occurred_at", "recorded_at", mode="before")
    @classmethod
    def _timestamp(cls, v: Any) -> datetime:
        return clock.to_utc(v)


class ExternalSource(BaseModel):
    """A source that is explicitly not a recorded episode (a plain put, a thread, a run)."""

    model_config = ConfigDict(frozen=True)

    source_id: str = Field(description="The fact's source_episode_id, e.g. 'thread:t1'.")
    kind: Literal["external", "thread", "run"]
    ref: str = Field(description="The part after the marker: a thread id, run id or label.")


def check_episode_id(episode_id: object) -> str:
    """An episode id is non-empty text without NUL (which PostgreSQL cannot hold): one
    that names nothing storable is refused alike on every engine, never sent to SQL."""
    if not isinstance(episode_id, str) or not episode_id or "\x00" in episode_id:
        raise InvalidEpisodeError(
            f"episode_id must be a non-empty string without NUL, got {episode_id!r}"
        )
    return episode_id


def is_external(source_id: str) -> bool:
    return source_id.startswith(EXTERNAL_PREFIXES)


def external_source(source_id: str) -> ExternalSource:
    kind, _, ref = source_id.partition(":")
    return ExternalSource(source_id=source_id, kind=kind, ref=ref)  # type: ignore[arg-type]


# ---------------------------------------------------------------- on an open cursor
# An episode row is a tuple in `Episode`'s field order (the engine's `episodes.COLUMNS`),
# with metadata as JSON text and timestamps as stored text.


def insert(engine: Any, cur: Any, episode: Episode) -> None:
    """Insert inside a write transaction; an existing id is refused (episodes are immutable)."""
    if engine.episodes.exists(cur, episode.tenant_id, episode.episode_id):
        raise InvalidEpisodeError(
            f"episode {episode.episode_id!r} is already recorded; episodes are immutable"
        )
    engine.episodes.insert(
        cur,
        (
            episode.episode_id,
            episode.tenant_id,
            episode.thread_id,
            episode.source_kind,
            episode.speaker,
            episode.content,
            json.dumps(episode.metadata, ensure_ascii=False),
            clock.fmt(episode.occurred_at),
            clock.fmt(episode.recorded_at),
            episode.retention_class,
        ),
    )


def load(engine: Any, cur: Any, episode_id: str, tenant_id: str | None = None) -> Episode | None:
    """The episode, or None; with `tenant_id`, another tenant's episode is None too."""
    row = engine.episodes.by_id(cur, episode_id, tenant_id)
    return None if row is None else _episode(row)


def _episode(row: tuple[Any, ...]) -> Episode:
    r = dict(zip(Episode.model_fields, row, strict=True))
    return Episode.model_validate({**r, "metadata": json.loads(r["metadata"])})


# ---------------------------------------------------------------- on an engine


def record_episode(
    engine: Any,
    tenant_id: str,
    content: str,
    *,
    source_kind: SourceKind,
    speaker: str | None = None,
    thread_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    occurred_at: clock.Timestamp | None = None,
    retention_class: str = "keep",
    episode_id: str | None = None,
) -> Episode:
    """Validate and append one episode; `occurred_at` defaults to now, the id to a new uuid."""
    now = clock.CLOCK.now()
    try:
        episode = Episode(
            episode_id=episode_id if episode_id is not None else f"ep_{uuid.uuid4().hex}",
            tenant_id=tenant_id,
            thread_id=thread_id,
            source_kind=source_kind,
            speaker=speaker,
            content=content,
            metadata=metadata or {},
            occurred_at=occurred_at if occurred_at is not None else now,
            recorded_at=now,
            retention_class=retention_class,
        )
    except ValidationError as exc:
        raise InvalidEpisodeError(explain(exc)) from None
    engine.transaction(lambda cur: insert(engine, cur, episode))
    return episode


def get_episode(engine: Any, episode_id: str, *, tenant_id: str | None = None) -> Episode | None:
    check_episode_id(episode_id)
    with engine.reading() as conn:
        return load(engine, conn, episode_id, tenant_id)


def who_said(
    engine: Any, fact: Fact | int, *, tenant_id: str | None = None
) -> Episode | ExternalSource:
    """The episode behind a fact (text and speaker), or its explicit external marker.

    The fact is looked up by id (a `Fact` object is not trusted for its tenant), and the
    episode must belong to the fact's tenant. A source id that is neither a recorded
    episode nor an external marker raises `EpisodeNotFoundError`: provenance is broken.
    """
    fact_id = fact.fact_id if isinstance(fact, Fact) else fact
    with engine.reading() as conn:
        row = engine.episodes.fact_source(conn, fact_id)
        if row is None or (tenant_id is not None and row[0] != tenant_id):
            raise FactNotFoundError(f"no fact with fact_id={fact_id}" + _for(tenant_id))
        owner, source = row
        if is_external(source):
            return external_source(source)
        episode = load(engine, conn, source, owner)
    if episode is None:
        raise EpisodeNotFoundError(
            f"fact {fact_id} cites {source!r}, which is neither a recorded episode of tenant "
            f"{owner!r} nor an external marker {EXTERNAL_PREFIXES}"
        )
    return episode


def sources(
    engine: Any, tenant_id: str, source_ids: list[str]
) -> dict[str, Episode | ExternalSource]:
    """Who said each of `source_ids` (facts' sources) in `tenant_id`: the recorded
    episodes, read in one statement, and the external markers; an id naming neither
    (never recorded, erased, or another tenant's) is left out."""
    ids = list(dict.fromkeys(source_ids))
    found: dict[str, Episode | ExternalSource] = {
        s: external_source(s) for s in ids if is_external(s)
    }
    recorded = [s for s in ids if s not in found]
    if recorded:
        with engine.reading() as conn:
            rows = engine.episodes.of_ids(conn, tenant_id, recorded)
        found.update((e.episode_id, e) for e in map(_episode, rows))
    return found


def _for(tenant_id: str | None) -> str:
    return "" if tenant_id is None else f" for tenant {tenant_id!r}"

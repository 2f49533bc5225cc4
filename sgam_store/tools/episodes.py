"""A run's user messages as episodes: the provenance every memory the tools and the
manager write cites. Ids are stable, so the hot path and the background manager record
a message once and share it."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence

from langchain_core.messages import AnyMessage, BaseMessage

from sgam_store import Episode, InvalidEpisodeError, SGAMStore
from sgam_store.tools.scope import MemoryScope


def episode_id_for(message: BaseMessage, scope: MemoryScope) -> str:
    """A stable episode id for a user message, so the hot path and the manager share it."""
    if message.id:
        return f"msg:{message.id}"
    digest = hashlib.sha256(
        f"{scope.tenant_id}\x00{scope.thread_id}\x00{message.text}".encode()
    ).hexdigest()[:32]
    return f"msg:{uuid.UUID(digest)}"


def episode_for(store: SGAMStore, scope: MemoryScope, message: BaseMessage) -> Episode:
    """The message's episode: recorded now unless it already is (episodes are immutable)."""
    episode_id = episode_id_for(message, scope)
    found = store.get_episode(episode_id, tenant_id=scope.tenant_id)
    if found is not None:
        return found
    try:
        return store.record_episode(
            scope.tenant_id,
            message.text,
            source_kind="user_message",
            speaker=scope.user_id,
            thread_id=scope.thread_id,
            metadata={"message_id": message.id} if message.id else {},
            episode_id=episode_id,
        )
    except InvalidEpisodeError:  # recorded meanwhile by another run of the same thread
        found = store.get_episode(episode_id, tenant_id=scope.tenant_id)
        if found is None:
            raise
        return found


def user_messages(messages: Sequence[AnyMessage]) -> list[BaseMessage]:
    return [m for m in messages if m.type == "human" and m.text.strip()]

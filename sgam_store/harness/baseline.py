"""The seed's "description memory" baseline: raw episodes as text, top-1 by similarity.

What plain text or vector memory does, kept simple and fair so the comparison with SGAM
means something: every episode is kept as it was said; a question retrieves the most
similar episode of the same tenant (per-user isolation, as a vector memory with a user
filter does) among the episodes that had happened by the instant asked about, and the
answer is the value that episode states. Nothing records that a later episode replaced
an earlier one, so an old episode that shares more words with the question wins over
its correction: the stale answers SGAM exists to prevent.

Similarity is the cosine of all-MiniLM-L6-v2 embeddings when the `local` extra is
installed (or of any `Embeddings` given), else the cosine of the two texts' word sets.
Ties go to the newer episode, which favours the baseline.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from sgam_store.ledger.episodes import Episode
from sgam_store.read.embeddings import LocalMiniLM, local_available

Mode = Literal["auto", "vector", "keyword"]
_WORD = re.compile(r"\w+")


def words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def word_cosine(a: frozenset[str], b: frozenset[str]) -> float:
    """Cosine of two binary bag-of-words vectors: shared words / sqrt(|a| * |b|)."""
    return len(a & b) / math.sqrt(len(a) * len(b)) if a and b else 0.0


def vector_cosine(a: list[float], b: list[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


class DescriptionMemory:
    """Episodes as free text; `top` returns the one most similar to a question."""

    def __init__(self, mode: Mode = "auto", embeddings: Embeddings | None = None) -> None:
        if mode == "auto":
            mode = "vector" if embeddings is not None or local_available() else "keyword"
        if mode == "vector" and embeddings is None:
            if not local_available():
                raise ValueError(
                    "the vector baseline needs the local embedding: "
                    'pip install -e ".[local]", or choose the keyword baseline'
                )
            embeddings = LocalMiniLM()
        self.mode: Literal["vector", "keyword"] = mode
        self.embeddings = embeddings if mode == "vector" else None
        self._episodes: list[tuple[Episode, Any]] = []

    @property
    def label(self) -> str:
        """How it ranks, for reports."""
        if self.embeddings is None:
            return "top-1 episode by word overlap"
        if isinstance(self.embeddings, LocalMiniLM):
            return "top-1 episode by MiniLM similarity"
        return f"top-1 episode by {type(self.embeddings).__name__} similarity"

    def add(self, episode: Episode) -> None:
        """Keep an episode as it was said (at its turn: no extraction needed)."""
        self._episodes.append((episode, self._represent(episode.content)))

    def top(self, tenant_id: str, question: str, at: datetime | None = None) -> Episode | None:
        """The tenant's episode most similar to `question`, of those that occurred by `at`."""
        pool = [
            (episode, rep)
            for episode, rep in self._episodes
            if episode.tenant_id == tenant_id and (at is None or episode.occurred_at <= at)
        ]
        if not pool:
            return None
        query = self._represent(question, query=True)
        scored = [
            (self._similarity(query, rep), episode.occurred_at, episode) for episode, rep in pool
        ]
        return max(scored, key=lambda s: s[:2])[2]

    def _represent(self, text: str, *, query: bool = False) -> Any:
        if self.embeddings is None:
            return words(text)
        if query:
            return self.embeddings.embed_query(text)
        return self.embeddings.embed_documents([text])[0]

    def _similarity(self, a: Any, b: Any) -> float:
        return word_cosine(a, b) if self.embeddings is None else vector_cosine(a, b)

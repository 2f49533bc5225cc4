"""What gets indexed for search: the embedding config, the text of each field, and the
text of a fact's keyword row. How those rows are stored is the engine's business
(`engines/sqlite/indexing.py`)."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import Any

import sqlite_vec
from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig, ensure_embeddings, get_text_at_path, tokenize_path

from sgam_store.core.errors import DimensionMismatchError, InvalidFactError

WHOLE_VALUE = "$"


@dataclass(frozen=True)
class IndexSpec:
    """A validated `index=` config: LangGraph's IndexConfig, plus SqliteStore's `text_fields`."""

    dims: int
    embeddings: Embeddings
    fields: tuple[str, ...]
    config: dict[str, Any]

    @classmethod
    def from_config(cls, index: IndexConfig | dict[str, Any]) -> IndexSpec:
        config = dict(index)
        if "dims" not in config or "embed" not in config:
            raise InvalidFactError("index config needs 'dims' and 'embed'")
        fields = config.get("fields") or config.get("text_fields") or [WHOLE_VALUE]
        for path in fields:
            tokenize_path(path)  # raises on a malformed path, before anything is stored
        return cls(
            dims=int(config["dims"]),
            embeddings=ensure_embeddings(config["embed"]),
            fields=tuple(fields),
            config=config,
        )

    def texts(
        self, value: dict[str, Any], fields: list[str] | None = None
    ) -> list[tuple[str, str]]:
        """(field, text) pairs to embed for one value; missing fields are skipped."""
        return field_texts(value, fields or list(self.fields))

    def check(self, vector: list[float]) -> bytes:
        if len(vector) != self.dims:
            raise DimensionMismatchError(
                f"embedding has {len(vector)} dims; the index is configured for {self.dims}"
            )
        # One C-level sum instead of a Python loop: NaN or infinity anywhere makes it
        # non-finite (only a vector of values near 1e308 would be refused wrongly).
        if not math.isfinite(sum(vector)):
            raise InvalidFactError("the embedding contains NaN or infinity; nothing was stored")
        return sqlite_vec.serialize_float32(vector)


def field_texts(value: dict[str, Any], paths: list[str]) -> list[tuple[str, str]]:
    """(field, text) pairs at these paths of a value; missing fields are skipped.

    Needs no index config: a put's own `index=[...]` names fields for the keyword row
    even on a store that embeds nothing.
    """
    pairs: list[tuple[str, str]] = []
    for path in paths:
        if path == WHOLE_VALUE:
            pairs.append((path, json.dumps(value, ensure_ascii=False)))
            continue
        if _plain(path) and type(value) is dict:  # LangGraph's answer, without its walk
            text = value.get(path)
            if type(text) is str:
                pairs.append((path, text))
                continue
        for i, text in enumerate(get_text_at_path(value, _tokens(path))):
            pairs.append((f"{path}.{i}" if i else path, text))
    return pairs


@functools.lru_cache(maxsize=256)
def _parsed(path: str) -> tuple[tuple[str, ...], bool]:
    """A field path's tokens, and whether it names one key of the value itself. Every
    put extracts the same few paths: tokenizing one again each time was half of
    `get_text_at_path`'s cost."""
    tokens = tuple(tokenize_path(path))
    return tokens, tokens == (path,) and path[0] not in "[{" and path != "*"


def _tokens(path: str) -> list[str] | str:
    """What `get_text_at_path` takes for `path`: its tokens (the path itself if it has
    none, which that function reads as the whole value)."""
    tokens = _parsed(path)[0]
    return list(tokens) if tokens else path


def _plain(path: str) -> bool:
    """Whether `path` names one key: the text is then the key's string value, if it has
    one, as `get_text_at_path` would give it."""
    return _parsed(path)[1]


def keyword_text(subject: str, attribute: str, value: dict[str, Any]) -> str:
    """Text for the FTS5 row: the key's names plus every string or number in the value.

    Subject and attribute are included so "passport deadline" finds `passport_deadline`
    (unicode61 splits on '_' and '.').
    """
    parts = [subject, attribute]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                parts.append(str(key))
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)
        elif node is not None and not isinstance(node, bool):
            parts.append(str(node))

    walk(value)
    return " ".join(parts)

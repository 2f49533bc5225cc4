"""Concurrent single-text embeddings in one process, encoded together in one call.

A local model pays most of a short query's cost per call, not per text: on 2 cores
all-MiniLM-L6-v2 takes ~12-15 ms for one query and ~20 ms for four. A server searching
for many clients at once (the store runs each search in a worker thread) made one call
per request and queued behind it (issue 19). So a query waits up to `window` seconds from
the oldest waiting query, or until `max_texts` are waiting, and the caller that finds no
batch in progress encodes every waiting text in one call. Only one batch encodes at a
time: new queries gather meanwhile and go together next, which is where batches form
under load (the window matters only when the batcher was idle). A lone query is delayed
by at most `window`.

Identical texts are encoded once: within a batch, and across batches through a small LRU
of recent query vectors (a chat turn and its recall often ask the same thing). If an
encode fails, every query of that batch gets the error.

Where it stops (benchmarks/README.md, "Search load through langgraph dev"): 1.5x the
searches/s with 64 clients on 2 cores, not 3x. The store's searches run on asyncio's
default executor, 6 threads on 2 cores, so at most 6 queries wait together (3-5 was
typical); and a forward pass hands the GIL back and forth at every torch operator, so it
slows down many-fold while other Python threads run (17 ms alone, ~470 ms beside two
busy threads), which on a server they always do.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np

Encode = Callable[[list[str]], np.ndarray]  # texts -> one row per text


@dataclass(eq=False)
class _Query:
    text: str
    arrived: float  # time.monotonic()
    vector: np.ndarray | None = None
    error: BaseException | None = None
    done: bool = False


class QueryBatcher:
    """Embeds one text per call, batching calls that overlap in time (thread-safe)."""

    def __init__(
        self,
        encode: Encode,
        *,
        window: float = 0.002,
        max_texts: int = 32,
        cache_size: int = 1024,
    ) -> None:
        self._encode = encode
        self.window = window
        self.max_texts = max_texts
        self.cache_size = cache_size
        self._cond = threading.Condition()
        self._waiting: list[_Query] = []
        self._busy = False  # a caller is collecting or encoding a batch
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def embed(self, text: str) -> list[float]:
        with self._cond:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                return cached.tolist()
            query = _Query(text, time.monotonic())
            self._waiting.append(query)
            self._cond.notify_all()  # a collecting caller may now have a full batch
        while True:
            with self._cond:
                while self._busy and not query.done:
                    self._cond.wait()
                if query.done:
                    break
                self._busy = True  # this caller encodes the next batch
                batch = self._collect()
            try:
                self._run(batch)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
        if query.error is not None:
            raise query.error
        return cast(np.ndarray, query.vector).tolist()

    def _collect(self) -> list[_Query]:
        """The next batch, once the oldest query has waited `window` or it is full (under
        the lock; waiting releases it, so more queries can join)."""
        deadline = self._waiting[0].arrived + self.window
        while len(self._waiting) < self.max_texts:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._cond.wait(left)
        batch = self._waiting[: self.max_texts]
        del self._waiting[: self.max_texts]
        return batch

    def _run(self, batch: list[_Query]) -> None:
        """Encode the batch's distinct texts in one call (outside the lock), then hand
        each query its row."""
        texts = list(dict.fromkeys(q.text for q in batch))
        try:
            rows = dict(zip(texts, self._encode(texts), strict=True))
        except BaseException as error:  # every query of the batch gets it, then is done
            with self._cond:
                for q in batch:
                    q.error, q.done = error, True
            if not isinstance(error, Exception):
                raise  # KeyboardInterrupt and the like stop the caller too
            return
        with self._cond:
            for q in batch:
                q.vector, q.done = rows[q.text], True
            for text, row in rows.items():
                self._cache[text] = row
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

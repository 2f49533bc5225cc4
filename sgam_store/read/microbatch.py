"""Concurrent single-text embeddings in one process, encoded together in one call.

A local model pays most of a short query's cost per call, not per text: on 2 cores
all-MiniLM-L6-v2 takes ~12-15 ms for one query and ~20 ms for four. A server searching
for many clients at once made one call per request and queued behind it (issue 19). So
queries go to one encoding thread, which waits up to `window` seconds from the oldest
waiting query, or until `max_texts` are waiting, and encodes them in one call. Only one
batch encodes at a time: queries that arrive meanwhile gather and go together next, which
is where batches form under load (the window matters only when the thread was idle). A
lone query is delayed by at most `window`.

Two ways in, one queue: `embed` blocks its thread until its vector is ready; `aembed`
awaits it, so a coroutine waiting for the model holds no worker thread. That matters on
a server: its async searches ran in asyncio's default executor, 6 threads on 2 cores, and
every thread blocked on the model was one fewer search in flight, so batches stayed at
3-5 texts. Awaited, every concurrent search's query can join one batch.

Identical texts are encoded once: within a batch, and across batches through a small LRU
of recent query vectors (a chat turn and its recall often ask the same thing). If an
encode fails, every query of that batch gets the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

Encode = Callable[[list[str]], np.ndarray]  # texts -> one row per text
Deliver = Callable[["_Query"], None]  # called on the encoding thread once the query is done


@dataclass(eq=False)
class _Query:
    text: str
    deliver: Deliver
    arrived: float = field(default_factory=time.monotonic)
    vector: np.ndarray | None = None
    error: Exception | None = None

    def result(self) -> list[float]:
        if self.error is not None:
            raise self.error
        assert self.vector is not None
        return self.vector.tolist()


class QueryBatcher:
    """Embeds one text per call, batching calls that overlap in time (thread-safe, and
    safe to await from any event loop)."""

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
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._worker: threading.Thread | None = None
        self._worker_pid = 0

    def embed(self, text: str) -> list[float]:
        """The text's vector, blocking this thread until its batch is encoded."""
        done = threading.Event()
        query = self._submit(text, lambda _: done.set())
        if query.vector is None:
            done.wait()
        return query.result()

    async def aembed(self, text: str) -> list[float]:
        """The text's vector, awaited: no thread waits while the batch is encoded."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def deliver(_: _Query) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                loop.call_soon_threadsafe(_settle, future)

        query = self._submit(text, deliver)
        if query.vector is None:
            await future
        return query.result()

    def _submit(self, text: str, deliver: Deliver) -> _Query:
        """Queue `text` for the next batch, or answer it from the LRU at once (the
        returned query then has its vector already, and `deliver` is never called)."""
        with self._cond:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                return _Query(text, deliver, vector=cached)
            query = _Query(text, deliver)
            self._waiting.append(query)
            self._ensure_worker()
            self._cond.notify_all()
        return query

    def _ensure_worker(self) -> None:
        """Start the encoding thread on first use, and again in a forked child, which
        inherits the batcher but not its thread (under the lock)."""
        if self._worker is not None and self._worker.is_alive() and self._worker_pid == os.getpid():
            return
        self._worker_pid = os.getpid()
        self._worker = threading.Thread(target=self._work, name="sgam-query-encoder", daemon=True)
        self._worker.start()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._waiting:
                    self._cond.wait()
                batch = self._collect()
            self._run(batch)
            for query in batch:
                query.deliver(query)

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
        """Encode the batch's distinct texts in one call (outside the lock), then give
        each query its row, or the error to all of them."""
        texts = list(dict.fromkeys(q.text for q in batch))
        try:
            rows = dict(zip(texts, self._encode(texts), strict=True))
        except Exception as error:  # the encoding thread outlives a failed encode
            for q in batch:
                q.error = error
            return
        with self._cond:
            for q in batch:
                q.vector = rows[q.text]
            for text, row in rows.items():
                self._cache[text] = row
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():  # its caller may have been cancelled meanwhile
        future.set_result(None)

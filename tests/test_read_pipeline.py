"""The read path runs one way (issue 40): one search walks scope -> candidates -> scoring ->
window -> fusion -> items once. Followed call by call (`sys.setprofile`), the read modules whose
code runs during a search, the driver (`pipeline`) and what every stage shares (`query`,
`terms`) left out, are the six stages in that order, each one unbroken stretch; and the
driver enters each stage through one call. On the code before the pipeline, a search went
back and forth between `read/ranking.py` and `read/search.py` about ten times."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import sgam_store.read
from sgam_store import SGAMStore

from .conftest import HashEmbeddings

STAGES = ["scope", "candidates", "scoring", "window", "fusion", "items"]
ENTRIES = [
    ("scope", "bounds"),
    ("candidates", "gather"),
    ("scoring", "score"),
    ("window", "windowed"),
    ("fusion", "fused"),
    ("items", "built"),
]
READ = Path(sgam_store.read.__file__).parent
# The driver, the shapes, query terms and stored vectors under every stage, and what
# embeds the query before the first stage (the index spec's check, the query batcher,
# the local model).
SHARED = {"pipeline", "query", "terms", "vectors", "index", "microbatch", "embeddings",
          "coalesce"}  # fmt: skip


def walk(search: Callable[[], Any]) -> tuple[list[str], list[tuple[str, str]], Any]:
    """(read modules entered, consecutive repeats folded; stage functions the driver
    called, in order; what `search` returned)."""
    modules: list[str] = []
    entries: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        if path.parent != READ or path.stem in SHARED:
            return
        if not modules or modules[-1] != path.stem:
            modules.append(path.stem)
        caller = frame.f_back
        if caller is not None and Path(caller.f_code.co_filename).stem == "pipeline":
            entries.append((path.stem, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        found = search()
    finally:
        sys.setprofile(None)
    return modules, entries, found


@pytest.fixture
def store(target: str) -> Iterator[SGAMStore]:
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    with SGAMStore.from_conn_string(target, index=index) as s:
        s.setup()
        for user in ("u1", "u2"):
            for i in range(40):
                text = f"{user} note {i}: tea in the morning, chess on {i % 7} evenings"
                s.put(("acme", user), f"k{i}", {"text": text, "n": i % 2})
        s.put(("globex", "u1"), "k0", {"text": "tea and chess at globex"})
        yield s


CASES: dict[str, Callable[[SGAMStore], Any]] = {
    "tenant, hybrid": lambda s: s.search(("acme",), query="tea chess", limit=5),
    "user (a small scope), hybrid": lambda s: s.search(("acme", "u1"), query="tea", limit=5),
    "every tenant, filtered": lambda s: s.search((), query="chess", filter={"n": 1}, limit=3),
    "point in time": lambda s: s.as_of("2100-01-01T00:00:00Z").search(("acme",), query="tea"),
    "tenant view": lambda s: s.for_tenant("acme").search(("u2",), query="chess", offset=2),
}


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_one_search_enters_each_stage_once(store: SGAMStore, case: str, mode: str) -> None:
    store.retrieval = type(store.retrieval)(mode=mode)
    modules, entries, found = walk(lambda: CASES[case](store))
    assert found  # a real search, with hits
    assert modules == STAGES, modules
    assert entries == ENTRIES


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_a_time_in_the_query_is_one_stage_too(store: SGAMStore, mode: str) -> None:
    """With `time_window` on and a query naming a time, the window stage resolves it and
    reads the candidates' intervals in its one visit (the parser warmed up first)."""
    store.retrieval = type(store.retrieval)(mode=mode, time_window="rank")
    view = store.as_of("2100-01-01T00:00:00Z")
    view.search(("acme",), query="tea in May")
    modules, entries, found = walk(lambda: view.search(("acme",), query="chess in May 2099"))
    assert found
    assert modules == STAGES, modules
    assert entries == ENTRIES

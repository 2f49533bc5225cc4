"""What `retrieval={"time_window": "rank"}` (the default) costs a search (issue 40, lever 1).

One user's hybrid search in LangMem's layout (`tenant_at=1`, `("memories", user)`, as
`bench_langmem.py` times it), with the setting off and on, for a query naming no time and
one naming a month; then every question of `retrieval_hard.py`'s test split with the
window on less off, each parsed afresh; and a fresh interpreter's first searches.

    python benchmarks/bench_time_window.py [--users 50] [--per-user 200] [--repeat 200]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import product
from pathlib import Path
from typing import Any

from hard_memories import generate
from harness import CachedHashEmbeddings, index_config
from langgraph.store.base import PutOp

from sgam_store import SGAMStore

SETTINGS = ("rank", "off")
QUERIES = {
    "no time": "what does the user like to cook for friends",
    "a month": "what did the user cook for friends in May",
}


def interleaved_ms(calls: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median ms of each call, the calls taken in turn `repeat` times, so that a loaded
    machine's drift falls on all of them alike."""
    times: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(repeat):
        for label, call in calls.items():
            started = time.perf_counter()
            call()
            times[label].append(time.perf_counter() - started)
    return {label: statistics.median(t) * 1000 for label, t in times.items()}


def searches(users: int, per_user: int, repeat: int) -> dict[str, float]:
    """Median ms of one user's hybrid search, by (view, query, setting), the settings
    alternated call by call."""
    embed = CachedHashEmbeddings()
    start = datetime(2025, 1, 1, tzinfo=UTC)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "langmem.db")
        with SGAMStore.from_conn_string(path, index=index_config(embed), tenant_at=1) as store:
            store.setup()
            ops = [
                PutOp(("memories", f"u{u}"), f"m{n}", {"text": f"user {u} cooked dish {n}"})
                for u in range(users)
                for n in range(per_user)
            ]
            store.batch(ops)
            views = {"current": store, "as of": store.as_of(start + timedelta(days=800))}
            configs = {
                s: dataclasses.replace(store.retrieval, time_window=s) for s in ("off", "rank")
            }
            for (seen, view), (name, query) in product(views.items(), QUERIES.items()):
                embed.embed_documents([query])
                calls = {
                    f"{seen}, {name}, off": asked(store, configs["off"], view, lambda q=query: q),
                    f"{seen}, {name}, rank": asked(store, configs["rank"], view, lambda q=query: q),
                    # a query not asked before: embedded (and parsed) afresh
                    f"{seen}, {name}, off, afresh": asked(
                        store, configs["off"], view, unasked(query)
                    ),
                    f"{seen}, {name}, rank, afresh": asked(
                        store, configs["rank"], view, unasked(query)
                    ),
                }
                for call in calls.values():
                    call()  # the parser's first use and the caches, untimed
                out.update(interleaved_ms(calls, repeat))
    return out


def asked(
    store: SGAMStore, config: Any, view: Any, query: Callable[[], str]
) -> Callable[[], object]:
    """One user's search of `query()` under `config`."""

    def call() -> object:
        store.retrieval = config
        return view.search(("memories", "u7"), query=query(), limit=10)

    return call


def unasked(query: str) -> Callable[[], str]:
    """`query` with a word not asked before each call (letters only, so no date), so the
    store's cache of parsed queries never answers it."""
    words = ("".join(w) for w in itertools.product(string.ascii_lowercase, repeat=5))
    return lambda: f"{query} {next(words)}"


def parse_ms() -> dict[str, float]:
    """Each question of the test split searched with the window on, less the same search
    with it off (ms, median and worst): for a dated question, its parse and its
    candidates' intervals; for another, the gate. Each is asked as of a day not asked
    before, so the parse cache (by stretch and day) never answers it."""
    found = {}
    first = datetime(2026, 1, 20, 12, tzinfo=UTC)
    for language in ("english", "spanish"):
        questions = [q for c in generate().split("test").conversations
                     if c.language == language for q in c.questions]  # fmt: skip
        with SGAMStore.from_conn_string(":memory:", retrieval={"language": language}) as store:
            for n, q in enumerate(questions):  # something for each question to find
                store.put(("u", "turns"), f"t{n}", {"text": q.text})
            configs = {s: dataclasses.replace(store.retrieval, time_window=s) for s in SETTINGS}
            store.search(("u",), query="in May 2020")  # dateparser's import, untimed
            cost: dict[bool, list[float]] = {True: [], False: []}
            for n, q in enumerate(questions):
                view = store.as_of(first + timedelta(days=n))
                spent = {}
                for setting in SETTINGS:
                    store.retrieval = configs[setting]
                    started = time.perf_counter()
                    view.search(("u",), query=q.text, limit=10)
                    spent[setting] = time.perf_counter() - started
                cost[q.asked is not None].append((spent["rank"] - spent["off"]) * 1000)
        for dated, label in ((True, "dated"), (False, "naming no time")):
            found[f"{language}, {label}, median of {len(cost[dated])}"] = statistics.median(
                cost[dated]
            )
            found[f"{language}, {label}, worst"] = max(cost[dated])
    return found


def startup_s() -> dict[str, float]:
    """A fresh interpreter's first search naming no time (the gate reads its words) and
    then its first naming a month (dateparser imported, its language loaded)."""
    code = """
import time
from sgam_store import SGAMStore
with SGAMStore.from_conn_string(":memory:") as store:
    store.put(("u",), "k", {"text": "cooked paella in May"})
    for query in ("what did I cook", "what did I cook in May"):
        started = time.perf_counter()
        store.search(("u",), query=query)
        print(time.perf_counter() - started)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    plain, dated = map(float, out.stdout.split())
    return {"first search naming no time (ms)": plain * 1000,
            "then the first naming a month (s)": dated}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--per-user", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    print(f"one user's hybrid search, {args.users} users x {args.per_user} memories (ms):")
    for label, ms in searches(args.users, args.per_user, args.repeat).items():
        print(f"  {label}: {ms:.2f}")
    print("the window per question of the test split, on less off (ms):")
    for label, value in parse_ms().items():
        print(f"  {label}: {value:.2f}")
    print("in a fresh interpreter:")
    for label, value in startup_s().items():
        print(f"  {label}: {value:.2f}")


if __name__ == "__main__":
    main()

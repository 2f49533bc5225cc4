"""What `retrieval={"time_window": "rank"}` costs a search (issue 40, lever 1).

One user's hybrid search in LangMem's layout (`tenant_at=1`, `("memories", user)`, as
`bench_langmem.py` times it), with the setting off and on, for a query naming no time and
one naming a month; then dateparser alone on every question of `retrieval_hard.py`'s test
split (its cache cleared before each), and its import in a fresh interpreter.

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

PLAIN = "what does the user like to cook for friends"
DATED = "what did the user cook for friends in May"


def median_ms(call: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def searches(users: int, per_user: int, repeat: int) -> dict[str, float]:
    """Median ms of one user's hybrid search, by (setting, query)."""
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
            for (seen, view), setting in product(views.items(), ("off", "rank")):
                store.retrieval = dataclasses.replace(store.retrieval, time_window=setting)
                for name, query in (("no time", PLAIN), ("a month", DATED)):
                    embed.embed_documents([query])
                    ask = lambda v=view, q=query: v.search(("memories", "u7"), query=q, limit=10)  # noqa: E731
                    ask()  # the parser's first use and the caches, untimed
                    out[f"{seen}, {setting}, {name}"] = median_ms(ask, repeat)
                    if setting == "rank":  # a query not asked before: parsed afresh
                        novel = unasked(view, query)
                        out[f"{seen}, {setting}, {name}, parsed afresh"] = median_ms(novel, repeat)
    return out


def unasked(view: Any, query: str) -> Callable[[], object]:
    """The search of `query` with a word not asked before each call (letters only, so no
    date), so the store's cache of parsed queries never answers it."""
    words = ("".join(w) for w in itertools.product(string.ascii_lowercase, repeat=5))
    return lambda: view.search(("memories", "u7"), query=f"{query} {next(words)}", limit=10)


def parse_ms() -> dict[str, float]:
    """dateparser alone, as the window calls it (`read/window.py`: the same settings),
    median and worst ms per question of the test split."""
    from dateparser.search import search_dates

    asked = datetime(2026, 1, 20, 12)
    settings = {"RELATIVE_BASE": asked, "PREFER_DATES_FROM": "past", "TIMEZONE": "UTC",
                "RETURN_AS_TIMEZONE_AWARE": False}  # fmt: skip
    found = {}
    for language, code in (("english", "en"), ("spanish", "es")):
        texts = [q.text for c in generate().split("test").conversations
                 if c.language == language for q in c.questions]  # fmt: skip
        times = []
        for text in texts:
            started = time.perf_counter()
            search_dates(text, languages=[code], settings=settings)
            times.append(time.perf_counter() - started)
        found[f"{language} median"] = statistics.median(times) * 1000
        found[f"{language} max"] = max(times) * 1000
    return found


def import_s() -> float:
    code = "import time; t = time.perf_counter(); import dateparser.search; "
    code += "print(time.perf_counter() - t)"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                text=True, check=True).stdout)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--per-user", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    print(f"one user's hybrid search, {args.users} users x {args.per_user} memories (ms):")
    for label, ms in searches(args.users, args.per_user, args.repeat).items():
        print(f"  {label}: {ms:.2f}")
    print("dateparser per question, uncached (ms):")
    for label, ms in parse_ms().items():
        print(f"  {label}: {ms:.1f}")
    print(f"import dateparser.search: {import_s():.2f} s")


if __name__ == "__main__":
    main()

"""Server time of `sgam ui`'s pages on a real agent's memory (issue 38): p50 and p95 per
page at each size, for both layouts of `sgam_store.testing.realistic`.

Each (layout, size) gets a generated store (`build`, seed 0), reused from --stores when
a file of that name is there. Every page is requested in-process through Starlette's
TestClient (routing, the store's reads, template rendering; no socket), warmed once,
then --repeat times, the sizes interleaved (each round asks each page of each size in
turn), so that the load of a shared machine, which drifts over a run, weighs on every
size alike. The goal (issue 38): p95 <= 100 ms, and the largest size within 2x
of the smallest, for every page. A page that does not answer 200 is timed through its
JSON twin (the same reads, no template) and marked. The counts a person asks for
(`count=1` on the tenants and subjects pages) grow with the store up to their caps by
design; they are timed and printed apart, without a verdict.

Last, memory under concurrency: 8 threads request the review and episode pages of the
largest store, three rounds; the server's resident memory after each round must level
off, not grow with every round.

    python benchmarks/bench_ui.py                           # 1k and 100k, both layouts
    python benchmarks/bench_ui.py --sizes 1000,10000 --repeat 10 --stores /tmp/stores
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from sgam_store import SGAMStore
from sgam_store.testing.realistic import Realistic, build
from sgam_store.ui import create_app

LAYOUTS = ("sgam", "langmem")
GOAL_MS = 100.0
THREADS = 8
ROUNDS = 3


def pages(store: SGAMStore, made: Realistic) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every page, addressed to the big tenant's biggest lists and deepest key."""
    big = made.big_tenant
    tenant, subject = store.layout.split(made.deep_key[0])
    _, long_subject = store.layout.split(made.long_memory[0])
    deep = store.fact_at(tenant, subject, made.deep_key[1])
    assert deep is not None
    keys = {"tenant": big, "subject": subject}
    # Page 2 of the name lists and of a subject's keys starts after page 1's last name (a
    # keyset, as its "next" link does); five subjects a page, so that the 1k store's 15
    # have a page 2 too.
    tenant_cut = store.tenant_names(limit=2)[-1]
    subject_cut = store.subject_names(big, limit=5)[-1]
    key_cut = store.subject_facts(tenant, subject, limit=10)[-1].attribute
    return {
        "tenants": ("/tenants", {"per_page": 2}),
        "tenants p2": ("/tenants", {"per_page": 2, "after": tenant_cut, "page": 2}),
        "subjects": ("/subjects", {"tenant": big}),
        "subjects p2": (
            "/subjects",
            {"tenant": big, "per_page": 5, "after": subject_cut, "page": 2},
        ),
        "keys": ("/keys", keys),
        "keys p2": ("/keys", {**keys, "after": key_cut, "page": 2, "per_page": 10}),
        "key (deep)": ("/key", {**keys, "attribute": made.deep_key[1]}),
        # A page in the middle of its 1,000-odd versions: a page costs its own rows.
        "key (deep) p10": ("/key", {**keys, "attribute": made.deep_key[1], "page": 10}),
        "key (long)": (
            "/key",
            {"tenant": big, "subject": long_subject, "attribute": made.long_memory[1]},
        ),
        "search": ("/search", {"tenant": big, "q": "passport renew before trip"}),
        "review": ("/review", {"tenant": big}),
        "episode": ("/episode", {"tenant": big, "id": deep.source_episode_id}),
        "changes": ("/changes", {"tenant": big}),
    }


def on_request(made: Realistic) -> dict[str, tuple[str, dict[str, Any]]]:
    """The counts a person asks for (`count=1`): each grows with the store up to its cap
    (10,000 facts and episodes, 200 names), so they are timed apart from the pages."""
    return {
        "tenants count": ("/tenants", {"per_page": 2, "count": 1}),
        "subjects count": ("/subjects", {"tenant": made.big_tenant, "count": 1}),
    }


Timings = dict[int, dict[str, tuple[list[float], str]]]  # size -> page -> (ms, mark)


def target(client: TestClient, path: str, params: dict[str, Any]) -> tuple[str, str]:
    """The path to time after one warm-up request, and a mark when the HTML page failed
    and its JSON twin is timed instead."""
    first = client.get(path, params=params)
    if first.status_code == 200:
        return path, ""
    assert client.get(f"{path}.json", params=params).status_code == 200, (path, params)
    return f"{path}.json", f"html {first.status_code}: json"


def timed(
    clients: dict[int, TestClient],
    addresses: dict[int, dict[str, tuple[str, dict[str, Any]]]],
    repeat: int,
) -> Timings:
    """Milliseconds of `repeat` requests of every page at every size, interleaved (each
    round asks each page of each size once, in turn), so that a shared machine's load,
    which drifts over a run, weighs on the sizes alike and their ratio means something."""
    found: Timings = {size: {} for size in clients}
    paths = {
        (size, name): target(clients[size], path, params)
        for size, named in addresses.items()
        for name, (path, params) in named.items()
    }
    for (size, name), (_, mark) in paths.items():
        found[size][name] = ([], mark)
    for _ in range(repeat):
        for name in addresses[min(clients)]:
            for size, client in clients.items():
                path, params = paths[(size, name)][0], addresses[size][name][1]
                start = time.perf_counter()
                response = client.get(path, params=params)
                found[size][name][0].append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200, (path, params, response.status_code)
    return found


def store_for(layout: str, size: int, directory: Path) -> tuple[SGAMStore, Realistic]:
    """The generated store of `layout` and `size` (built unless --stores holds it) and
    what `build` said of it (kept beside the file as JSON)."""
    path = directory / f"{layout}-{size}.db"
    summary = path.with_suffix(".json")
    if not summary.exists():
        path.unlink(missing_ok=True)
        started = time.perf_counter()
        made = build(str(path), layout=layout, facts=size)  # type: ignore[arg-type]
        print(f"{layout} {size:>7} facts built in {time.perf_counter() - started:.0f} s")
        summary.write_text(json.dumps(dataclasses.asdict(made)))
    fields = json.loads(summary.read_text())
    for name in ("deep_key", "long_memory", "hostile_key", "long_key"):
        namespace, key = fields[name]
        fields[name] = (tuple(namespace), key)
    return SGAMStore(str(path), index=None), Realistic(**fields)


def p(runs: list[float], q: float) -> float:
    ordered = sorted(runs)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def resident_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def memory_rounds(client: TestClient, targets: list[tuple[str, dict[str, Any]]]) -> list[int]:
    """Resident memory (KB) after each round of THREADS threads requesting `targets`."""

    def worker() -> None:
        for path, params in targets * 3:
            client.get(path, params=params)

    found = []
    for _ in range(ROUNDS):
        threads = [threading.Thread(target=worker) for _ in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        found.append(resident_kb())
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000", help="comma-separated fact counts")
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument("--repeat", type=int, default=30, help="requests per page and size")
    parser.add_argument("--stores", help="directory to keep generated stores in, and reuse")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(args.stores or tmp)
        directory.mkdir(parents=True, exist_ok=True)
        for layout in args.layouts.split(","):
            report(layout, sizes, args.repeat, directory)
    return 0


def report(layout: str, sizes: list[int], repeat: int, directory: Path) -> None:
    opened = {size: store_for(layout, size, directory) for size in sizes}
    with contextlib.ExitStack() as stack:
        clients = {
            size: stack.enter_context(TestClient(create_app(store), raise_server_exceptions=False))
            for size, (store, _) in opened.items()
        }
        listed = {size: pages(store, made) for size, (store, made) in opened.items()}
        results = timed(clients, listed, repeat)
        counts = {size: on_request(made) for size, (_, made) in opened.items()}
        asked = timed(clients, counts, repeat)
        big = listed[sizes[-1]]
        rss = memory_rounds(clients[sizes[-1]], [big["review"], big["episode"]])
    for store, _ in opened.values():
        store.close()
    print(f"\n{layout}: p50 / p95 ms per page (goal: p95 <= {GOAL_MS:.0f}, "
          f"{sizes[-1]} within 2x of {sizes[0]})")  # fmt: skip
    head = "".join(f"{f'{s} facts':>20}" for s in sizes)
    print(f"{'page':<14}{head}   ratio p95")
    for name in results[sizes[0]]:
        cells = [results[s][name] for s in sizes]
        row = "".join(f"{p(r, 0.5):>9.1f} / {p(r, 0.95):>6.1f}" for r, _ in cells)
        ratio = p(cells[-1][0], 0.95) / max(p(cells[0][0], 0.95), 1e-9)
        fine = ratio <= 2 and all(p(r, 0.95) <= GOAL_MS for r, _ in cells)
        marks = " ".join(sorted({m for _, m in cells if m}))
        print(f"{name:<14}{row}{ratio:>8.2f}x {'ok' if fine else 'MISS'} {marks}")
    print("on request (count=1), p50 / p95 ms: grows with the store up to its caps")
    for name in asked[sizes[0]]:
        row = "".join(f"{p(r, 0.5):>9.1f} / {p(r, 0.95):>6.1f}" for r, _ in
                      (asked[s][name] for s in sizes))  # fmt: skip
        print(f"{name:<14}{row}")
    growth = ", ".join(f"{kb / 1024:.0f} MB" for kb in rss)
    print(f"resident memory after {ROUNDS} rounds of {THREADS} threads (review, episode): {growth}")


if __name__ == "__main__":
    raise SystemExit(main())

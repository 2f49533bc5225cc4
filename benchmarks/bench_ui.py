"""Server time of `sgam ui`'s pages at two store sizes (issue 30's speed check).

Each size gets a fresh SQLite store (keyword search, no embedding) of N current facts
spread over 10 tenants, subjects of 20 keys each, and one key with three versions.
Every page is requested in-process through Starlette's TestClient (routing, the
store's reads, template rendering; no socket), warmed once, and the median of
--repeat requests is reported in milliseconds. The key page and a subject's key list
must stay within 2x of their smallest-size figure; the tenant list and search are
reported as measured.

    python benchmarks/bench_ui.py                       # 1k and 100k facts
    python benchmarks/bench_ui.py --sizes 1000 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from langgraph.store.base import PutOp
from starlette.testclient import TestClient

from sgam_store import MemoryFact, SGAMStore
from sgam_store.ui import create_app

TENANTS = 10
KEYS_PER_SUBJECT = 20
BATCH = 1000
PAGES = {
    "tenant list": ("/tenants", {}),
    "key list": ("/keys", {"tenant": "t0", "subject": "s0"}),
    "key page": ("/key", {"tenant": "t0", "subject": "s0", "attribute": "deadline"}),
    "search": ("/search", {"tenant": "t0", "q": "passport deadline s7"}),
}
BOUNDED = ("key list", "key page")  # must stay within 2x from the smallest size up


def load(store: SGAMStore, size: int) -> None:
    """`size` current facts: tenant t{i}, subject s{j}, key a{k}; plus a 3-version key."""
    subjects = max(size // (TENANTS * KEYS_PER_SUBJECT), 1)
    ops = [
        PutOp(
            (f"t{t}", f"s{s}"),
            f"a{k}",
            {"text": f"passport deadline note {k} of s{s} in t{t}"},
        )
        for t in range(TENANTS)
        for s in range(subjects)
        for k in range(KEYS_PER_SUBJECT)
    ][:size]
    for start in range(0, len(ops), BATCH):
        store.batch(ops[start : start + BATCH])
    for value, day in (("2026-08-01", "05-30"), ("2026-07-15", "06-01"), ("2026-06-30", "06-03")):
        store.replace_fact(
            MemoryFact(
                tenant_id="t0",
                subject="s0",
                attribute="deadline",
                value=value,
                valid_from=f"2026-{day}T09:00:00Z",
                source_episode_id="external:bench",
            )
        )


def time_pages(client: TestClient, repeat: int) -> dict[str, float]:
    """Median milliseconds per page, after one warm-up request each."""
    found = {}
    for name, (path, params) in PAGES.items():
        assert client.get(path, params=params).status_code == 200, name
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            response = client.get(path, params=params)
            runs.append(time.perf_counter() - start)
            assert response.status_code == 200, name
        found[name] = statistics.median(runs) * 1000
    return found


def run(size: int, repeat: int, directory: Path) -> dict[str, float]:
    with SGAMStore.from_conn_string(str(directory / f"ui-{size}.db"), index=None) as store:
        store.setup()
        started = time.perf_counter()
        load(store, size)
        print(f"{size:>8} facts loaded in {time.perf_counter() - started:.1f} s", flush=True)
        return time_pages(TestClient(create_app(store)), repeat)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000", help="comma-separated fact counts")
    parser.add_argument("--repeat", type=int, default=20, help="requests per page and size")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        results = {size: run(size, args.repeat, Path(tmp)) for size in sizes}
    if args.json:
        print(json.dumps(results, indent=2))
    print(f"\n{'page':<12}" + "".join(f"{f'{s} facts':>14}" for s in sizes) + "   ratio")
    for name in PAGES:
        row = [results[s][name] for s in sizes]
        ratio = row[-1] / row[0]
        mark = "" if name not in BOUNDED else ("  ok (<= 2x)" if ratio <= 2 else "  OVER 2x")
        print(f"{name:<12}" + "".join(f"{ms:>11.2f} ms" for ms in row) + f"{ratio:>7.2f}x{mark}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Instructions one batched put costs on SQLite, counted by callgrind: a clock-free figure
for a loaded machine, and one that can be compared across commits.

A store of `BASE` facts in LangMem's layout (200 users, `tenant_at=1`, no vector index)
is written first; then `BATCHES` batches of 100 new keys run inside `functools.reduce`,
the one region callgrind is told to count (`--toggle-collect=functools_reduce`), so
imports, set-up and the base load stay out of the figure. The tree measured is the
`sgam_store` importable from the first argument (a checkout, or `git archive` of a commit).

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \\
        --callgrind-out-file=put.out python benchmarks/put_instructions.py .
    callgrind_annotate put.out | head -30     # the total, then where it goes
"""

from __future__ import annotations

import functools
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

BASE = 2000
BATCHES = 5
BATCH = 100
USERS = [("memories", f"user-{u}") for u in range(200)]
TOPICS = ("travel", "billing", "lunch", "hiring")


def main(tree: str) -> None:
    sys.path.insert(0, tree)
    from langgraph.store.base import PutOp

    from sgam_store import SGAMStore

    rng = random.Random(7)

    def value(i: int) -> dict[str, Any]:
        topic = rng.choice(TOPICS)
        return {"content": f"memory {i} about {topic} in {rng.randint(0, 999)}", "kind": "note"}

    with tempfile.TemporaryDirectory(prefix="put-instructions-") as tmp:
        store = SGAMStore(str(Path(tmp) / "s.db"), index=None, tenant_at=1)
        store.setup()
        base = [PutOp(USERS[i % len(USERS)], f"k{i}", value(i)) for i in range(BASE)]
        for start in range(0, BASE, BATCH):
            store.batch(base[start : start + BATCH])
        batches = [
            [
                PutOp(USERS[j % len(USERS)], f"n{b}-{j}", value(BASE + b * BATCH + j))
                for j in range(BATCH)
            ]
            for b in range(BATCHES)
        ]
        store.put(("memories", "warm"), "w", {"content": "warm", "kind": "note"})
        functools.reduce(lambda _, batch: store.batch(batch), batches, None)
        store.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")

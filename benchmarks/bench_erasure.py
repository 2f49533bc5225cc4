"""What a secure purge costs on SQLite, step by step, and what each step leaves behind.

    python benchmarks/bench_erasure.py                  # 100k facts (bench_store's workload)
    python benchmarks/bench_erasure.py --size 20000

One file is built once: bench_store's load and updates (10 tenants x size/200 subjects x
20 attributes, 384-dim hash vectors, an FTS row per fact), plus one subject, tenant00's
"mira", with 40 versions of one key and 5 of another, each carrying a word found nowhere
else, written between the workload's batches. Every variant then starts from a copy of
that file and purges "mira"; after each step it times the step and counts how many of
the erased words (and how many copies) are still in the database's files, read as
bytes. The other subjects' data is the bulk that a rewrite has to copy.

Variants:
- plain: `store.purge(...)` as without `secure_delete` (the rows go, the bytes stay);
- stepwise: the purge with `PRAGMA secure_delete` on, then an FTS5 'optimize', then
  `wal_checkpoint(TRUNCATE)`, then `VACUUM` and the checkpoint again;
- no-optimize: secure_delete, VACUUM, checkpoint, without the FTS merge;
- secure: `store.purge(..., secure_delete=True)` as shipped;
- secure-analyzed: the same on a file that ANALYZE has run on (not timed), whose
  statistics the secure purge then computes again.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness import QUICK, CachedHashEmbeddings, environment, index_config, plan

from sgam_store import MemoryFact, SGAMStore

TENANT, SUBJECT = "tenant00", "mira"
LETTERS = "bcfhjkmnpqrtvwxz"
VARIANTS = ("plain", "secure", "secure-analyzed", "stepwise", "no-optimize")


def markers(n: int) -> list[str]:
    rng = random.Random(29)
    return ["zq" + "".join(rng.choice(LETTERS) for _ in range(10)) for _ in range(n)]


def build(target: str, size: int) -> tuple[list[str], CachedHashEmbeddings]:
    """The template (a SQLite file or a PostgreSQL database): the workload, with mira's
    versions written between its batches; on SQLite checkpointed, the WAL empty."""
    workload = plan(size, QUICK, seed=1)
    embedder = CachedHashEmbeddings()
    words = markers(45)
    texts = [f"{w} note {i}" for i, w in enumerate(words)]
    embedder.warm([*workload.texts(), *texts], lists=False)
    started = time.perf_counter()
    store = SGAMStore(target, index=index_config(embedder))
    store.setup()
    try:
        batches = workload.load_batches + workload.update_batches
        # mira's versions are spread across the load, as a user's facts arrive over time:
        # they share pages with other subjects' rows, which is where bytes linger.
        after = {len(batches) * (i + 1) // (len(texts) + 1): i for i in range(len(texts))}
        for n, batch in enumerate(batches):
            store.batch(batch)
            if n not in after:
                continue
            i, text = after[n], texts[after[n]]
            attribute = "note" if i < 40 else "tone"
            fact = MemoryFact(
                tenant_id=TENANT, subject=SUBJECT, attribute=attribute, value={"text": text},
                valid_from=f"2026-01-01T00:{i:02d}:00Z", source_episode_id=f"ep{i}",
            )  # fmt: skip
            store.replace_fact(fact)
        if not target.startswith("postgres"):
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    print(f"built {size} facts + {len(texts)} versions in {time.perf_counter() - started:.1f} s")
    return words, embedder


def left(directory: Path, words: list[str]) -> tuple[int, int]:
    """(erased words still found, their copies) across every file of the directory.
    A word's last 7 letters are looked for: FTS5 stores a term after the prefix it
    shares with the previous one."""
    found = 0
    total = 0
    blobs = [p.read_bytes() for p in directory.iterdir() if p.is_file()]
    for word in words:
        n = sum(b.count(word[-7:].encode()) for b in blobs)
        found += n > 0
        total += n
    return found, total


def files_size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())


class Run:
    """One variant on a fresh copy of the template."""

    def __init__(self, template: Path, root: Path, name: str, embedder: Any) -> None:
        self.directory = root / name
        self.directory.mkdir()
        shutil.copy(template, self.directory / "m.db")
        self.store = SGAMStore(str(self.directory / "m.db"), index=index_config(embedder))
        self.store.setup()
        self.steps: list[dict[str, Any]] = []

    def step(self, name: str, action: Callable[[], object], words: list[str]) -> None:
        started = time.perf_counter()
        action()
        seconds = time.perf_counter() - started
        found, copies = left(self.directory, words)
        self.steps.append(
            {"step": name, "seconds": round(seconds, 3), "words_left": found,
             "copies_left": copies, "bytes": files_size(self.directory)}
        )  # fmt: skip

    def close(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory)


def _purge_rows(store: SGAMStore) -> None:
    """The purge's transaction alone (what `purge` runs before any secure step)."""
    erasure = store.engine.erasure
    store.facts.ledger.run(lambda tx: erasure.purge(tx.cur, TENANT, SUBJECT))


def stepwise(run: Run, words: list[str], optimize: bool) -> None:
    store = run.store
    engine, erasure = store.engine, store.engine.erasure
    with engine.lock, erasure.secure_delete(engine.conn, True):
        run.step("purge, secure_delete on", lambda: _purge_rows(store), words)
        if optimize:
            run.step("+ FTS5 optimize", lambda: erasure.optimize_fts(engine.conn), words)
            run.step("+ wal_checkpoint(TRUNCATE)", lambda: erasure.checkpoint(engine.conn), words)
        run.step("+ VACUUM", lambda: engine.conn.execute("VACUUM"), words)
        run.step("+ wal_checkpoint(TRUNCATE)", lambda: erasure.checkpoint(engine.conn), words)


def on_postgres(size: int, repeat: int) -> dict[str, Any]:
    """Plain and secure purges of mira on copies (CREATE DATABASE ... TEMPLATE) of one
    database built on the embedded server; seconds only (the bytes are the tests')."""
    import psycopg
    from bench_store import Databases

    databases = Databases(None)
    try:
        template = databases.fresh()
        _, embedder = build(template, size)
        name = urlsplit(template).path.lstrip("/")
        results: dict[str, Any] = {"size": size, "engine": "postgres"}
        for variant, secure in (("plain", False), ("secure", True)):
            times = []
            for i in range(repeat):
                with psycopg.connect(databases.pg.base_uri(), autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{name}_{variant}{i}" TEMPLATE "{name}"')
                copy = databases.pg.with_database(template, f"{name}_{variant}{i}")
                store = SGAMStore(copy, index=index_config(embedder))
                started = time.perf_counter()
                report = store.purge(TENANT, SUBJECT, secure_delete=secure)
                times.append(round(time.perf_counter() - started, 3))
                store.close()
            results[variant] = {
                "seconds": statistics.median(times), "runs": times,
                "checkpointed": report.checkpointed,
            }  # fmt: skip
        return results
    finally:
        databases.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of plain and secure")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"some of {','.join(VARIANTS)}"
    )
    parser.add_argument(
        "--engine", choices=("sqlite", "postgres"), default="sqlite",
        help="postgres: time plain and secure purges on an embedded server (no byte counts)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.engine == "postgres":
        results = on_postgres(args.size, args.repeat)
        print(json.dumps(results, indent=2))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
        return
    with tempfile.TemporaryDirectory(prefix="sgam-erasure-") as tmp:
        root = Path(tmp)
        template = root / "template.db"
        words, embedder = build(str(template), args.size)
        print(f"template file: {template.stat().st_size / 1e6:.1f} MB")
        results: dict[str, Any] = {"size": args.size, "environment": environment()}
        chosen = args.variants.split(",")
        for name, secure in (("plain", False), ("secure", True), ("secure-analyzed", True)):
            if name not in chosen:
                continue
            times, last = [], None
            for i in range(args.repeat):
                run = Run(template, root, f"{name}{i}", embedder)
                if name == "secure-analyzed":  # the file has statistics: they are redone
                    run.store.conn.execute("ANALYZE")
                run.step(
                    f"store.purge(secure_delete={secure})",
                    lambda s=run.store, x=secure: s.purge(TENANT, SUBJECT, secure_delete=x),
                    words,
                )
                times.append(run.steps[0]["seconds"])
                last = run.steps[0]
                run.close()
            results[name] = {**last, "seconds": statistics.median(times), "runs": times}
        for name, optimize in (("stepwise", True), ("no-optimize", False)):
            if name not in chosen:
                continue
            run = Run(template, root, name, embedder)
            stepwise(run, words, optimize)
            results[name] = run.steps
            run.close()
    print(json.dumps(results, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

"""One table for every cell of issue 41: operation x layout x size x engine.

SGAMStore against the store it replaces: LangGraph's SqliteStore on SQLite, and its
PostgresStore on the same PostgreSQL server (the embedded one, or `--pg-uri`'s). Both
stores get the same workload in one run, sample by sample with the first store rotating
(harness.round_robin), and each cell is SGAM's median, the peer's median, their ratio
(peer time / SGAM time: above 1, SGAM is faster) and recall@10 against an exact numpy
search.

- Text: memories people tell an agent, from the realistic-store generator's phrases
  (`sgam_store.testing.phrases`), in LangMem's layout (`("memories", user)`, `tenant_at=1`,
  about 6 memories a user) and in SGAM's own (organisations of ~2,000 memories, `(tenant,
  subject)` namespaces of 20: one per typed attribute and 8 free ones, `tenant_at=0`).
- Vectors: all-MiniLM-L6-v2 (`LocalMiniLM`), each text embedded once and kept in .npz files
  under `--cache-dir` (each named by a hash of its texts), then looked up by both stores.
- PostgreSQL: both databases are vacuumed and analyzed after the load (VACUUM (ANALYZE)),
  as autovacuum soon does to a live one.

    python benchmarks/bench_table.py --quick                     # 400 memories a cell
    python benchmarks/bench_table.py --sizes 20000 --engines sqlite,postgres
    python benchmarks/bench_table.py --sizes 20000,100000 --markdown --json table.json

bench_store.py and bench_langmem.py stay: they time what this table leaves out (single
puts, point-in-time gets, InMemoryStore, durable pragmas, 1M facts on hash vectors). This
script opens the peers through bench_langmem's openers and times through the harness.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from bench_langmem import langmem_index, open_postgres, open_sqlite
from bench_store import POSTGRES, SGAM, SGAM_VECTOR, SQLITE
from harness import (
    BATCH,
    FULL,
    TOP_K,
    CachedHashEmbeddings,
    Contender,
    Databases,
    Samples,
    Timings,
    aligned,
    environment,
    round_robin,
    summary,
)
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, Item, PutOp

from sgam_store import LOCAL_DIMS, LocalMiniLM, SGAMStore
from sgam_store.testing import phrases

MODEL = "all-MiniLM-L6-v2"
PEERS = {"sqlite": SQLITE, "postgres": POSTGRES}
ROOT_LABEL = "memories"  # LangMem's namespace root: ("memories", "{langgraph_user_id}")
PER_USER = (2, 10)  # LangMem layout: memories a user, drawn uniformly (about 6 on average)
KINDS = ("preference", "fact", "plan", "instruction")  # LangMem layout: value["kind"]
TENANT_SIZE = 2000  # SGAM layout: an organisation's memories
NOTES = 8  # SGAM layout: free memories a subject, beside one per typed attribute
SUBJECT_SIZE = len(phrases.ATTRIBUTES) + NOTES
LIST_LIMIT = 20
TIE = 1e-5  # cosine within this of the exact 10th best counts as a hit (equal texts tie)
QUICK = Samples(
    update_batches=0, single_puts=0, gets=40, searches=12, read_budget_s=0.5, min_samples=4
)
QUESTIONS = [
    "who is allergic to {allergen}?",
    "who lives in {city} now?",
    "who works at {company} as a {job}?",
    "who is travelling to {city} in {month}?",
    "when does my {document} expire?",
    "what do I like to drink in the morning?",
    "what is my budget for {thing}?",
    "which language am I learning?",
    "how should answers be written for me?",
    "who is my manager?",
    "what diet am I on?",
    "when is my {relation}'s birthday?",
    "which phone plan am I on?",
    "which time zone am I in?",
    "what do I do on weekends?",
    "how many km a week am I running?",
]

Namespace = tuple[str, ...]
Ref = tuple[Namespace, str]  # (namespace, key), as BaseStore names an item
Query = tuple[Namespace, str]  # (prefix searched, query text)
Listing = tuple[Namespace, dict[str, str] | None]  # (namespace listed, filter)


# ---------------------------------------------------------------------- workload


@dataclass(frozen=True)
class Layout:
    """How a layout names things: its tenant label, the prefix of an all-tenant search,
    and the value field a filtered listing matches."""

    name: str
    tenant_at: int
    everywhere: Namespace
    field: str
    values: tuple[str, ...]


LAYOUTS = {
    "langmem": Layout("langmem", 1, (ROOT_LABEL,), "kind", KINDS),
    "sgam": Layout("sgam", 0, (), "type", ("profile", "preference", "task_state", "note")),
}


@dataclass
class Workload:
    """Every write and read of one cell, planned up front so both stores get identical
    input. `listed`: the namespaces a listing names (a user's, or a subject's);
    `tenants`: the prefixes a tenant's search names (a user's, or an organisation's)."""

    layout: Layout
    size: int
    batches: list[list[PutOp]]
    memories: dict[Ref, dict[str, Any]]
    gets: list[Ref]
    lists: list[Listing]
    filtered: list[Listing]
    scoped: list[Query]
    everywhere: list[Query]

    def texts(self) -> list[str]:
        queries = [q for _, q in self.scoped + self.everywhere]
        return [v["content"] for v in self.memories.values()] + queries


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def langmem_memories(
    rng: random.Random, size: int
) -> tuple[dict[Ref, dict[str, Any]], list[Namespace], list[Namespace]]:
    """LangMem's memories: ("memories", user), uuid keys, {"content", "kind"} values.
    Returns the memories, the namespaces to list and the prefixes to search (both: users)."""
    memories: dict[Ref, dict[str, Any]] = {}
    users: list[Namespace] = []
    while len(memories) < size:
        users.append((ROOT_LABEL, f"user-{_uuid(rng)[:13]}"))
        for _ in range(min(rng.randint(*PER_USER), size - len(memories))):
            value = {"content": phrases.memory(rng), "kind": rng.choice(KINDS)}
            memories[(users[-1], _uuid(rng))] = value
    return memories, users, users


def sgam_memories(
    rng: random.Random, size: int
) -> tuple[dict[Ref, dict[str, Any]], list[Namespace], list[Namespace]]:
    """SGAM's layout: organisations of ~TENANT_SIZE memories, (tenant, subject) namespaces
    of SUBJECT_SIZE: one memory per typed attribute (key: the attribute) and NOTES free
    ones (uuid keys). Returns the memories, the subjects to list and the tenants to search."""
    tenants = [f"org-{t:03d}" for t in range(max(2, size // TENANT_SIZE))]
    memories: dict[Ref, dict[str, Any]] = {}
    subjects: list[Namespace] = []
    for n in range(size // SUBJECT_SIZE):
        (_, first), (_, last) = rng.choice(phrases.FIRST), rng.choice(phrases.LAST)
        subjects.append((tenants[n % len(tenants)], f"{first}_{last}_{n:05d}"))
        for attribute in phrases.ATTRIBUTES:
            sentence, value, kind = phrases.statement(rng, attribute)
            memories[(subjects[-1], attribute)] = {
                "content": sentence,
                "type": kind,
                "value": value,
            }
        for _ in range(NOTES):
            memories[(subjects[-1], _uuid(rng))] = {"content": phrases.memory(rng), "type": "note"}
    return memories, subjects, [(t,) for t in tenants]


BUILDERS = {"langmem": langmem_memories, "sgam": sgam_memories}


def question(rng: random.Random) -> str:
    return rng.choice(QUESTIONS).format(**phrases.fillers(rng))


def plan(layout: str, size: int, samples: Samples, seed: int) -> Workload:
    """`size` memories of `layout`, loaded in shuffled batches of 100 (many users' or
    subjects' traffic at once), and every read's samples."""
    plan_check(size)
    rng = random.Random(f"{layout}/{size}/{seed}")
    shape = LAYOUTS[layout]
    memories, listed, tenants = BUILDERS[layout](rng, size)
    puts = [PutOp(ns, key, value) for (ns, key), value in memories.items()]
    rng.shuffle(puts)
    n = samples.searches
    return Workload(
        layout=shape,
        size=size,
        batches=[puts[i : i + BATCH] for i in range(0, len(puts), BATCH)],
        memories=memories,
        gets=rng.sample(list(memories), min(samples.gets, len(memories))),
        lists=[(rng.choice(listed), None) for _ in range(n)],
        filtered=[(rng.choice(listed), {shape.field: rng.choice(shape.values)}) for _ in range(n)],
        scoped=[(rng.choice(tenants), question(rng)) for _ in range(n)],
        everywhere=[(shape.everywhere, question(rng)) for _ in range(n)],
    )


# ---------------------------------------------------------------------- vectors


class MiniLMVectors(CachedHashEmbeddings):
    """MiniLM's vectors, embedded once per text and kept on disk, then looked up.

    The harness's cached embedder with its matrix filled from the model instead of a
    hash: `warm` reads every .npz under `cache_dir`, embeds only the texts none holds
    (saving them in chunks, so an interrupted run keeps what it paid for), and `stage`
    serves a sample's lists before it is timed. A text the warm-up missed is an error,
    never a hashed vector.
    """

    def __init__(self, cache_dir: Path, log: Callable[[str], None] = print) -> None:
        super().__init__(LOCAL_DIMS)
        self.cache_dir = cache_dir
        self.log = log

    def warm(self, texts: Sequence[str], lists: bool = False) -> None:
        unique = list(dict.fromkeys(texts))
        known = self._cached()
        missing = [t for t in unique if t not in known]
        if missing:
            known.update(self._embed(missing))
        self.rows = {text: row for row, text in enumerate(unique)}
        self.matrix = np.stack([known[t] for t in unique]).astype(np.float32)
        self.cache = {t: self.matrix[r].tolist() for t, r in self.rows.items()} if lists else {}
        self.misses = self.unstaged = 0

    def vector(self, text: str) -> np.ndarray:
        row = self.rows.get(text)
        if row is None:
            raise KeyError(f"text not embedded before timing: {text[:60]!r}")
        return self.matrix[row]

    def _cached(self) -> dict[str, np.ndarray]:
        known: dict[str, np.ndarray] = {}
        for path in sorted(self.cache_dir.glob(f"{MODEL}-*.npz")):
            with np.load(path) as saved:
                known.update(zip(saved["texts"].tolist(), saved["vectors"], strict=True))
        return known

    def _embed(self, texts: list[str], chunk: int = 1000) -> dict[str, np.ndarray]:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        model, started, out = LocalMiniLM(), time.perf_counter(), {}
        for start in range(0, len(texts), chunk):
            part = texts[start : start + chunk]
            vectors = np.asarray(model.embed_documents(part), dtype=np.float32)
            digest = hashlib.sha256("\0".join(part).encode()).hexdigest()[:16]
            path = self.cache_dir / f"{MODEL}-{digest}.npz"
            partial = path.with_name(f".{path.name}.partial")
            with partial.open("wb") as file:
                np.savez(file, texts=np.asarray(part), vectors=vectors)
            partial.replace(path)
            out.update(zip(part, vectors, strict=True))
            self.log(
                f"  embedded {start + len(part):,} of {len(texts):,} new texts "
                f"in {time.perf_counter() - started:.0f}s"
            )
        return out


# ---------------------------------------------------------------------- ground truth


class Exact:
    """Brute-force cosine over the loaded memories, per scope: recall@10's truth."""

    def __init__(self, workload: Workload, embedder: MiniLMVectors) -> None:
        self.refs = list(workload.memories)
        self.row = {ref: i for i, ref in enumerate(self.refs)}
        texts = [v["content"] for v in workload.memories.values()]
        self.matrix = np.stack([embedder.vector(t) for t in texts])
        self.embedder = embedder
        self.scopes: dict[Namespace, np.ndarray] = {}

    def scope(self, prefix: Namespace) -> np.ndarray:
        if prefix not in self.scopes:
            n = len(prefix)
            self.scopes[prefix] = np.flatnonzero([ns[:n] == prefix for ns, _ in self.refs])
        return self.scopes[prefix]

    def recall(self, query: Query, found: list[Item]) -> float:
        """Share of the scope's exact top 10 found (of the whole scope when it holds fewer).
        Equal texts have equal vectors, so a hit is any item of the scope whose cosine
        reaches the exact 10th best: which of two equal memories ranks first is a tie."""
        prefix, text = query
        rows = self.scope(prefix)
        q = self.embedder.vector(text)
        scores = self.matrix[rows] @ q
        want = min(TOP_K, len(rows))
        tenth = -np.partition(-scores, want - 1)[want - 1]
        refs = [(tuple(item.namespace), item.key) for item in found[:TOP_K]]
        hits = sum(
            ns[: len(prefix)] == prefix
            and (ns, key) in self.row
            and float(self.matrix[self.row[(ns, key)]] @ q) >= tenth - TIE
            for ns, key in refs
        )
        return min(hits, want) / want


def bad_answers(workload: Workload, op: str, samples: Sequence[Any], outputs: list[Any]) -> int:
    """Answers that are wrong for `op`: a get's missing or other value; a listing's row
    from another namespace, with another field value, or a page of the wrong length; a
    search's row outside its scope or a short page."""
    w, bad = workload, 0
    counts = Counter(ns for ns, _ in w.memories)
    per_value = Counter((ns, v.get(w.layout.field)) for (ns, _), v in w.memories.items())
    for sample, out in zip(samples, outputs, strict=True):
        if op == "get":
            bad += out is None or out.value != w.memories[sample]
        elif op.startswith("listing"):
            ns, where = sample
            field, value = next(iter(where.items())) if where else (None, None)
            want = counts[ns] if where is None else per_value[(ns, value)]
            bad += len(out) != min(LIST_LIMIT, want) or any(
                tuple(i.namespace) != ns or (where and i.value.get(field) != value) for i in out
            )
        else:
            prefix = sample[0]
            in_scope = sum(n for ns, n in counts.items() if ns[: len(prefix)] == prefix)
            bad += len(out) != min(TOP_K, in_scope) or any(
                tuple(i.namespace[: len(prefix)]) != prefix for i in out
            )
    return bad


# ---------------------------------------------------------------------- one cell

OPS = [
    "batched put",
    "get",
    "listing",
    "listing, filtered",
    "tenant search, hybrid",
    "tenant search, vector",
    "all-tenant search, hybrid",
    "all-tenant search, vector",
]
SEARCHES = {"tenant search": "scoped", "all-tenant search": "everywhere"}


def open_sgam(target: str, embedder: Embeddings, tenant_at: int, vector: bool) -> Contender:
    """SGAMStore as shipped, or (`vector`) a second handle on the same database ranking
    by cosine alone, as the peers do."""
    extra: dict[str, Any] = {"retrieval": {"mode": "vector"}} if vector else {}
    store = SGAMStore(target, index=langmem_index(embedder), tenant_at=tenant_at, **extra)
    store.setup()
    return Contender(SGAM_VECTOR if vector else SGAM, store, store.close)


def analyze(uri: str) -> None:
    """VACUUM (ANALYZE) the database, as autovacuum does soon after a load: plans chosen
    without statistics are not what a live database runs. The vacuum too: autovacuum
    vacuums a table after 1,000 + 20% new rows, marking its pages all-visible, which is
    what lets an index-only scan skip the table (SGAM's tenant vector scan, schema v11).
    Left to autovacuum, it came some seconds into the reads, whose first samples then
    measured the state before it."""
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")


@dataclass
class Cell:
    """One layout x size x engine: per operation, each store's timing summary, recall@10
    (vector rows) and the count of wrong answers."""

    layout: str
    size: int
    engine: str
    peer: str
    ops: dict[str, dict[str, dict[str, float]]]
    recall: dict[str, dict[str, float]]
    bad: dict[str, dict[str, int]]
    load_average: tuple[float, float, float]
    wall_s: float


def run_cell(
    workload: Workload,
    embedder: MiniLMVectors,
    exact: Exact,
    engine: str,
    databases: Databases | None,
    samples: Samples,
    log: Callable[[str], None],
) -> Cell:
    """Load both stores of one cell, time every operation, score and check the answers."""
    started, peer_name = time.perf_counter(), PEERS[engine]
    with tempfile.TemporaryDirectory(prefix="sgam-table-") as tmp:
        uris: list[str] = []
        if engine == "postgres":
            if databases is None:
                raise ValueError("the postgres engine needs a server (Databases)")
            uris = [databases.fresh(), databases.fresh()]
        target = uris[0] if uris else str(Path(tmp) / "sgam.db")
        peer = open_postgres(uris[1], embedder) if uris else open_sqlite(Path(tmp), embedder)
        tenant_at = workload.layout.tenant_at
        contenders = [
            open_sgam(target, embedder, tenant_at, vector=False),
            peer,
            open_sgam(target, embedder, tenant_at, vector=True),
        ]
        cell = Cell(
            workload.layout.name, workload.size, engine, peer_name, {}, {}, {}, (0, 0, 0), 0
        )
        try:
            stores = {c.name: c.store for c in contenders}
            _load(workload, embedder, stores, cell, log)
            for uri in uris:
                analyze(uri)
            if uris:  # SGAM's own upkeep, as docs/postgres.md asks: it trains the lists
                stores[SGAM].vacuum()  # that all tenants' search reads (100k rows or more)
            _reads(workload, embedder, exact, stores, cell, samples)
        finally:
            for c in contenders:
                c.close()
    cell.load_average = os.getloadavg()
    cell.wall_s = time.perf_counter() - started
    return cell


def _record(cell: Cell, op: str, timings: Timings, pair: tuple[str, str]) -> None:
    """The op's row: SGAM's column from `pair[0]`'s samples, the peer's from `pair[1]`'s."""
    sgam, peer = pair
    cell.ops[op] = {SGAM: summary(timings.seconds[sgam]), cell.peer: summary(timings.seconds[peer])}


def _load(
    workload: Workload,
    embedder: MiniLMVectors,
    stores: dict[str, BaseStore],
    cell: Cell,
    log: Callable[[str], None],
) -> None:
    """Every batch on both stores (SGAM's vector-only handle shares SGAM's database)."""
    writers = {name: stores[name].batch for name in (SGAM, cell.peer)}

    def stage(batch: list[PutOp]) -> None:
        embedder.stage([op.value["content"] for op in batch])  # type: ignore[index]

    timings = round_robin(writers, workload.batches, prepare=stage)
    _record(cell, "batched put", timings, (SGAM, cell.peer))
    totals = ", ".join(f"{n} {sum(s):.1f}s" for n, s in timings.seconds.items())
    log(f"    loaded {len(workload.memories):,} memories: {totals}")


def _reads(
    workload: Workload,
    embedder: MiniLMVectors,
    exact: Exact,
    stores: dict[str, BaseStore],
    cell: Cell,
    samples: Samples,
) -> None:
    """Gets, listings and searches, round-robin; every answer checked, searches scored."""
    w, peer = workload, cell.peer
    budget = {"budget_s": samples.read_budget_s, "min_samples": samples.min_samples}
    pair = {name: stores[name] for name in (SGAM, peer)}

    def checked(op: str, sample_list: Sequence[Any], timings: Timings) -> None:
        cell.bad[op] = {
            name: bad_answers(w, op, sample_list[: len(out)], out)
            for name, out in timings.outputs.items()
        }

    timings = round_robin({n: _getter(s) for n, s in pair.items()}, w.gets, **budget)
    _record(cell, "get", timings, (SGAM, peer))
    checked("get", w.gets, timings)
    for op, listings in (("listing", w.lists), ("listing, filtered", w.filtered)):
        timings = round_robin({n: _lister(s) for n, s in pair.items()}, listings, **budget)
        _record(cell, op, timings, (SGAM, peer))
        checked(op, listings, timings)
    for scope, attribute in SEARCHES.items():
        queries: list[Query] = getattr(w, attribute)
        timings = round_robin(
            {n: _searcher(s) for n, s in stores.items()},
            queries,
            prepare=lambda q: embedder.stage([q[1]]),
            **budget,
        )
        _record(cell, f"{scope}, hybrid", timings, (SGAM, peer))
        _record(cell, f"{scope}, vector", timings, (SGAM_VECTOR, peer))
        checked(scope, queries, timings)
        cell.recall[f"{scope}, vector"] = {
            name: float(
                np.mean(
                    [
                        exact.recall(q, found)
                        for q, found in zip(queries[: len(out)], out, strict=True)
                    ]
                )
            )
            for name, out in timings.outputs.items()
            if name != SGAM
        }


def _getter(store: BaseStore) -> Callable[[Ref], Item | None]:
    return lambda ref: store.get(*ref)


def _lister(store: BaseStore) -> Callable[[Listing], list[Item]]:
    return lambda listing: store.search(listing[0], filter=listing[1], limit=LIST_LIMIT)


def _searcher(store: BaseStore) -> Callable[[Query], list[Item]]:
    return lambda query: store.search(query[0], query=query[1], limit=TOP_K)


# ---------------------------------------------------------------------- the run


def run(args: argparse.Namespace, samples: Samples, log: Callable[[str], None]) -> list[Cell]:
    """Every cell of sizes x layouts x engines. Each layout and size is planned and embedded
    once and served to every engine's pair of stores."""
    cells = []
    for size in args.sizes:
        for layout in args.layouts:
            workload = plan(layout, size, samples, args.seed)
            embedder = MiniLMVectors(args.cache_dir, log)
            embedder.warm(workload.texts())
            exact = Exact(workload, embedder)
            for engine in args.engines:
                log(f"  {layout} layout, {size:,} memories, {engine}")
                cell = run_cell(workload, embedder, exact, engine, args.databases, samples, log)
                log(f"    done in {cell.wall_s:.0f}s, load average {cell.load_average[0]:.1f}")
                cells.append(cell)
            if embedder.unstaged:
                raise RuntimeError(f"{embedder.unstaged} texts were embedded during timing")
    return cells


# ---------------------------------------------------------------------- report

HEADER = [
    "operation",
    "layout",
    "size",
    "engine",
    "SGAM ms",
    "peer",
    "peer ms",
    "peer/SGAM",
    "recall SGAM",
    "recall peer",
]

TEXT_COLUMNS = {"operation", "layout", "engine", "peer"}


def rows(cells: list[Cell]) -> list[list[str]]:
    """The table's lines: a header, then one row per operation of every cell. A hybrid row's
    peer recall is its vector row's: the peers rank by cosine alone."""
    lines = [HEADER]
    for cell in cells:
        for op in OPS:
            sgam, peer = cell.ops[op][SGAM]["median_s"], cell.ops[op][cell.peer]["median_s"]
            recall = cell.recall.get(op.replace("hybrid", "vector"), {})
            mine = cell.recall.get(op, {}).get(SGAM_VECTOR)
            lines.append(
                [
                    op,
                    cell.layout,
                    f"{cell.size:,}",
                    cell.engine,
                    f"{sgam * 1e3:.3f}",
                    cell.peer,
                    f"{peer * 1e3:.3f}",
                    f"{peer / sgam:.2f}x",
                    "" if mine is None else f"{mine:.3f}",
                    f"{recall[cell.peer]:.3f}" if recall else "",
                ]
            )
    return lines


def markdown(lines: list[list[str]]) -> str:
    """The same lines as a Markdown table (numbers right-aligned)."""
    head, *body = lines
    rule = ["---" if name in TEXT_COLUMNS else "---:" for name in head]
    return "\n".join("| " + " | ".join(line) + " |" for line in [head, rule, *body])


def notes(cells: list[Cell]) -> str:
    """What else a reader of the table needs: wrong answers, load, time."""
    out = []
    for cell in cells:
        bad = {f"{op}: {n} {k}": k for op, per in cell.bad.items() for n, k in per.items() if k}
        name = f"{cell.layout}/{cell.size:,}/{cell.engine}"
        out.append(
            f"{name}: wrong answers {', '.join(bad) or 'none'}; "
            f"load average after {cell.load_average[0]:.1f}; wall {cell.wall_s:.0f}s"
        )
    return "\n".join(out)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20000", help="memories a cell, comma-separated")
    parser.add_argument("--engines", default="sqlite,postgres", help="sqlite and/or postgres")
    parser.add_argument("--layouts", default="langmem,sgam", help="langmem and/or sgam")
    parser.add_argument("--quick", action="store_true", help="400 memories, a few samples")
    parser.add_argument("--pg-uri", help="an existing PostgreSQL server (default: embedded)")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "sgam-store"
        / "bench-vectors",
        help="where MiniLM's vectors are kept between runs",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the cells as JSON")
    args = parser.parse_args(argv)
    choices = {"engines": set(PEERS), "layouts": set(LAYOUTS)}
    for name, allowed in choices.items():
        picked = [part.strip() for part in getattr(args, name).split(",") if part.strip()]
        if not picked or set(picked) - allowed:
            parser.error(f"--{name} takes a comma list of {sorted(allowed)}")
        setattr(args, name, picked)
    try:
        args.sizes = [400] if args.quick else [int(n) for n in args.sizes.split(",")]
        for size in args.sizes:
            plan_check(size)
    except ValueError as error:
        parser.error(f"--sizes: {error}")
    args.databases = Databases(args.pg_uri) if "postgres" in args.engines else None
    return args


def plan_check(size: int) -> None:
    if size < 2 * SUBJECT_SIZE or size % SUBJECT_SIZE:
        raise ValueError(f"size must be a multiple of {SUBJECT_SIZE}, at least {2 * SUBJECT_SIZE}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    samples = QUICK if args.quick else FULL

    def log(line: str) -> None:
        print(line, flush=True)

    env = {**environment(), "load average at start": os.getloadavg()}
    log("environment: " + ", ".join(f"{k} {v}" for k, v in env.items()))
    log(
        f"samples: gets {samples.gets}, reads {samples.searches} of each kind, budget "
        f"{samples.read_budget_s}s a store; vectors: {MODEL}, cached in {args.cache_dir}"
    )
    if args.databases:
        log(
            "postgres: SGAMStore and PostgresStore in fresh databases on one server, "
            "both vacuumed and analyzed (VACUUM (ANALYZE)) after the load"
        )
    log("sqlite: both stores WAL + synchronous=NORMAL + mmap (sgam_store.connect)")
    try:
        cells = run(args, samples, log)
    finally:
        if args.databases:
            args.databases.close()
    lines = rows(cells)
    log("")
    log(markdown(lines) if args.markdown else aligned(lines))
    log(notes(cells))
    log(f"load average at end: {os.getloadavg()}")
    if args.json:
        report = {"environment": env, "cells": [vars(c) for c in cells]}
        args.json.write_text(json.dumps(report, indent=2, default=str))
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

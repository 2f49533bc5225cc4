"""Benchmark LangMem's namespace layout: SGAMStore(tenant_at=1) against LangGraph's SqliteStore.

With `--engine postgres`, SGAMStore runs on its PostgreSQL engine against LangGraph's
PostgresStore (default HNSW index), each in a fresh database on one server: the server at
`--pg-uri`, or else the embedded PostgreSQL bench_store starts. The peer then is
PostgresStore, and ratios are PostgresStore time / SGAM time.

LangMem keeps a user's memories under ("memories", "{langgraph_user_id}"), one new uuid
key per memory, value {"content": "<sentence>"} (langmem's create_manage_memory_tool).
SGAMStore opened with `tenant_at=1` takes the label at index 1 as the tenant, so a search
of ("memories", user) runs inside that user's keyword and vector partitions, and
("memories",) searches every user. Both stores load the same memories in the same
batches, then every read runs round-robin across the stores (bench_store's `round_robin`)
and medians are reported. Ratio = SqliteStore time / SGAM time: above 1, SGAM is faster.

    python benchmarks/bench_langmem.py --quick        # 5,000 memories, well under a minute
    python benchmarks/bench_langmem.py                # 20,000 memories
    python benchmarks/bench_langmem.py --size 100000 --json langmem.json
    python benchmarks/bench_langmem.py --quick --engine postgres

Reuses bench_store's embedder (deterministic hash vectors, cache warmed before timing),
index config, pragmas (`sgam_store.connect` for SqliteStore), timing and summary helpers.
See benchmarks/README.md, "LangMem's layout".
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from bench_store import POSTGRES, SGAM, SGAM_VECTOR, SQLITE, _cell, _ratio
from harness import (
    BATCH,
    TOP_K,
    CachedHashEmbeddings,
    Contender,
    Databases,
    Timings,
    aligned,
    environment,
    index_config,
    round_robin,
    summary,
)
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, Item, PutOp
from langgraph.store.sqlite import SqliteStore

from sgam_store import SGAMStore, connect

USERS = 200
ROOT_LABEL = "memories"  # LangMem's namespace root: ("memories", "{langgraph_user_id}")
SUBJECT = "work"  # 1 in WORK_EVERY of a user's memories go under ("memories", user, "work")
WORK_EVERY = 4
KINDS = ("preference", "fact", "event", "instruction")  # value["kind"], for the filtered list
VECTOR_ROW = ", SGAM retrieval=vector"

TOPICS = [
    "python", "golang", "typescript", "coffee", "tea", "running", "cycling", "hiking",
    "jazz", "opera", "sushi", "pasta", "chess", "gardening", "photography", "sailing",
    "budgeting", "travel", "kubernetes", "postgres", "design reviews", "standups",
    "code review", "documentation", "testing", "deadlines", "the quarterly report",
    "onboarding", "the roadmap", "vacation",
]  # fmt: skip
NAMES = ["Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jo"]
RELATIONS = ["manager", "sister", "dentist", "landlord", "mentor", "teammate", "neighbour"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

Ref = tuple[tuple[str, ...], str]  # (namespace, key)


def sentence(rng: random.Random, kind: str, n: int) -> str:
    """A memory as an LLM would phrase it for manage_memory; `n` makes every text unique."""
    topic, other = rng.sample(TOPICS, 2)
    name, relation, day = rng.choice(NAMES), rng.choice(RELATIONS), rng.choice(DAYS)
    text = {
        "preference": f"The user prefers {topic} over {other}",
        "fact": f"The user's {relation} is {name}, who is into {topic}",
        "event": f"The user has {topic} with {name} every {day}",
        "instruction": f"When the user asks about {topic}, mention {other} first",
    }[kind]
    return f"{text} (noted in conversation {n})."


# ---------------------------------------------------------------------- workload


@dataclass(frozen=True)
class Samples:
    single_puts: int
    searches: int
    read_budget_s: float
    min_samples: int


FULL = Samples(single_puts=200, searches=100, read_budget_s=20.0, min_samples=10)
QUICK = Samples(single_puts=100, searches=40, read_budget_s=3.0, min_samples=5)


@dataclass
class Workload:
    """Every write and read of the run, planned up front so both stores get identical input."""

    size: int
    load_batches: list[list[PutOp]]
    single_puts: list[PutOp]
    tenant_queries: list[tuple[str, str]]  # (user, query)
    global_queries: list[str]
    subject_queries: list[tuple[str, str]]  # (user, query) under ("memories", user, "work")
    list_filters: list[tuple[str, str]]  # (user, kind)
    get_refs: list[Ref]  # memories read back by key (BaseStore.get)
    memories: dict[Ref, dict[str, Any]]  # every memory after all writes, in write order

    def texts(self) -> list[str]:
        docs = [v["content"] for v in self.memories.values()]
        queries = [q for _, q in self.tenant_queries + self.subject_queries]
        return docs + queries + self.global_queries


def plan(size: int, samples: Samples, seed: int) -> Workload:
    """`size` memories over 200 users (size/200 each, 1 in 4 under "work"), loaded in
    batches of 100 that mix users in a shuffled order (many users' traffic arriving
    at once), then `single_puts` new memories written one put each, as the tool does."""
    if size <= 0 or size % USERS:
        raise ValueError(f"size must be a positive multiple of {USERS}")
    rng = random.Random(seed)
    users = [f"user-{u:03d}" for u in range(USERS)]
    memories: dict[Ref, dict[str, Any]] = {}
    counter = 0

    def new_memory(user: str, j: int) -> PutOp:
        nonlocal counter
        counter += 1
        ns = (ROOT_LABEL, user, SUBJECT) if j % WORK_EVERY == 0 else (ROOT_LABEL, user)
        key = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        kind = rng.choice(KINDS)
        value = {"content": sentence(rng, kind, counter), "kind": kind}
        memories[(ns, key)] = value
        return PutOp(namespace=ns, key=key, value=value)

    slots = [(user, j) for user in users for j in range(size // USERS)]
    rng.shuffle(slots)
    puts = [new_memory(user, j) for user, j in slots]
    load = [puts[i : i + BATCH] for i in range(0, size, BATCH)]
    singles = [
        new_memory(rng.choice(users), size + i + 1) for i in range(samples.single_puts)
    ]  # j past the loaded ones: 1 in 4 of these land under "work" too
    n = samples.searches
    tenant_queries = [
        (rng.choice(users), f"what does the user think about {rng.choice(TOPICS)}? ({i})")
        for i in range(n)
    ]
    global_queries = [f"which users mentioned {rng.choice(TOPICS)}? ({i})" for i in range(n)]
    subject_queries = [
        (rng.choice(users), f"what is the user doing at work with {rng.choice(TOPICS)}? ({i})")
        for i in range(n)
    ]
    filters = [(rng.choice(users), rng.choice(KINDS)) for _ in range(n)]
    gets = rng.sample(list(memories), 4 * n)
    return Workload(
        size,
        load,
        singles,
        tenant_queries,
        global_queries,
        subject_queries,
        filters,
        gets,
        memories,
    )


# ---------------------------------------------------------------------- stores


def langmem_index(embedder: Embeddings) -> dict[str, Any]:
    """bench_store's index config with LangMem's field: both stores embed "content" only
    (SqliteStore 3.1.2 reads `text_fields`, SGAMStore `fields`)."""
    return {**index_config(embedder), "fields": ["content"], "text_fields": ["content"]}


def open_sgam(
    directory: Path,
    embedder: Embeddings,
    vector_only: bool = False,
    pg: str | None = None,
    retrieval: dict[str, Any] | None = None,
) -> Contender:
    """SGAMStore with LangMem's layout, as shipped (WAL, synchronous=NORMAL, mmap), or on
    PostgreSQL when `pg` is its URI; `retrieval` (`--retrieval`) over the default
    settings. With `vector_only`, a second handle on the same database that ranks by
    cosine alone."""
    path = directory / "sgam.db"
    settings = {**(retrieval or {}), **({"mode": "vector"} if vector_only else {})}
    extra: dict[str, Any] = {"retrieval": settings} if settings else {}
    store = SGAMStore(pg or str(path), index=langmem_index(embedder), tenant_at=1, **extra)
    store.setup()
    files = [] if pg else [path]
    return Contender(SGAM_VECTOR if vector_only else SGAM, store, store.close, files)


def open_sqlite(directory: Path, embedder: Embeddings) -> Contender:
    """SqliteStore on the connection SGAMStore opens for itself (`sgam_store.connect`:
    sqlean, WAL, synchronous=NORMAL, mmap, isolation_level=None), as bench_store does."""
    path = directory / "sqlite_store.db"
    conn = connect(str(path))
    store = SqliteStore(conn, index=langmem_index(embedder))  # type: ignore[arg-type]
    store.setup()
    return Contender(SQLITE, store, conn.close, [path])


def open_postgres(uri: str, embedder: Embeddings) -> Contender:
    """LangGraph's PostgresStore on `uri` with its default vector index (HNSW), embedding
    "content" as SGAMStore does."""
    from langgraph.store.postgres import PostgresStore

    opened = PostgresStore.from_conn_string(uri, index=langmem_index(embedder))  # type: ignore[arg-type]
    store = opened.__enter__()
    store.setup()
    return Contender(POSTGRES, store, lambda: opened.__exit__(None, None, None))


# ---------------------------------------------------------------------- ground truth


class Exact:
    """Brute-force cosine top-10 over the final memories, with numpy, per scope."""

    def __init__(self, workload: Workload, embedder: CachedHashEmbeddings) -> None:
        self.refs = list(workload.memories)
        self.values = list(workload.memories.values())
        self.matrix = np.asarray(
            [embedder.cache[v["content"]] for v in self.values], dtype=np.float32
        )
        self.user = np.asarray([ns[1] for ns, _ in self.refs])
        self.work = np.asarray([len(ns) == 3 for ns, _ in self.refs])
        self.embedder = embedder

    def rows(self, user: str | None, work: bool = False) -> np.ndarray:
        mask = np.ones(len(self.refs), dtype=bool) if user is None else self.user == user
        return np.flatnonzero(mask & self.work) if work else np.flatnonzero(mask)

    def top(self, query: str, user: str | None, work: bool = False) -> set[Ref]:
        rows = self.rows(user, work)
        q = np.asarray(self.embedder.cache[query], dtype=np.float32)
        best = rows[np.argsort(-(self.matrix[rows] @ q), kind="stable")[:TOP_K]]
        return {self.refs[i] for i in best}

    def recall(
        self, queries: Sequence[tuple[str | None, str]], found: list[list[Item]], work: bool
    ) -> float:
        """Mean share of the exact top-10 found in each result list (of the whole scope
        when it holds fewer than 10: a user's "work" memories at --quick size)."""
        scores = []
        for (user, q), items in zip(queries, found, strict=False):
            truth = self.top(q, user, work)
            scores.append(len(truth & {(tuple(i.namespace), i.key) for i in items}) / len(truth))
        return float(np.mean(scores)) if scores else float("nan")

    def count(self, user: str, kind: str | None = None, work: bool = False) -> int:
        rows = self.rows(user, work)
        return len(rows) if kind is None else sum(self.values[i]["kind"] == kind for i in rows)


def bad_pages(
    outputs: list[list[Item]],
    scopes: Sequence[tuple[str, ...]],
    expected_len: Sequence[int],
    exact_ns: bool = False,
    kinds: Sequence[str] | None = None,
) -> dict[str, int]:
    """Pages with a row outside their scope (another user's memory, or not under the
    searched prefix), with a wrong kind, or shorter/longer than expected."""
    foreign = wrong_kind = wrong_len = 0
    for i, (items, scope) in enumerate(zip(outputs, scopes, strict=False)):
        n = len(scope)
        foreign += any(
            (tuple(it.namespace) != scope) if exact_ns else (tuple(it.namespace[:n]) != scope)
            for it in items
        )
        if kinds is not None:
            wrong_kind += any(it.value.get("kind") != kinds[i] for it in items)
        wrong_len += len(items) != expected_len[i]
    out = {"outside scope": foreign, "wrong length": wrong_len}
    if kinds is not None:
        out["wrong kind"] = wrong_kind
    return out


def foreign_examples(outputs: list[list[Item]], scopes: Sequence[tuple[str, ...]]) -> list[str]:
    """Up to three rows a tenant-scoped search returned from outside its scope."""
    found = []
    for items, scope in zip(outputs, scopes, strict=False):
        for it in items:
            if tuple(it.namespace[: len(scope)]) != scope:
                found.append(f"searched {scope}, got {tuple(it.namespace)} key {it.key}")
    return found[:3]


# ---------------------------------------------------------------------- the run


def run(args: argparse.Namespace, samples: Samples, log: Callable[[str], None]) -> dict[str, Any]:
    started = time.perf_counter()
    workload = plan(args.size, samples, args.seed)
    embedder = CachedHashEmbeddings()
    t0 = time.perf_counter()
    embedder.warm(workload.texts())
    log(
        f"planned {len(workload.memories):,} memories for {USERS} users, warmed "
        f"{len(embedder.cache):,} vectors in {time.perf_counter() - t0:.1f}s"
    )
    gc.collect()
    gc.freeze()
    results: dict[str, Any] = {
        "size": args.size,
        "engine": args.engine,
        "peer": args.peer,
        "ops": {},
        "checks": {},
        "recall@10": {},
    }
    with tempfile.TemporaryDirectory(prefix="sgam-langmem-", dir=args.tmpdir) as tmp:
        directory = Path(tmp)
        pg = args.databases.fresh() if args.databases else None
        peer = (
            open_postgres(args.databases.fresh(), embedder)
            if args.databases
            else open_sqlite(directory, embedder)
        )
        contenders = [open_sgam(directory, embedder, pg=pg, retrieval=args.retrieval), peer]
        variant = open_sgam(directory, embedder, True, pg, args.retrieval)
        sgam = contenders[0].store
        assert isinstance(sgam, SGAMStore)
        results["sgam tenant_at"] = sgam.tenant_at
        results["sgam retrieval config"] = repr(sgam.retrieval)
        try:
            phases(workload, samples, {c.name: c.store for c in contenders}, variant, results, log)
            score(workload, Exact(workload, embedder), results)
            results["disk_bytes"] = {c.name: c.disk_bytes() for c in contenders}
        finally:
            for c in [*contenders, variant]:
                c.close()
    gc.unfreeze()
    results["embedder_misses_during_timing"] = embedder.misses
    results["wall_s"] = time.perf_counter() - started
    return results


def phases(
    workload: Workload,
    samples: Samples,
    stores: dict[str, BaseStore],
    variant: Contender,
    results: dict[str, Any],
    log: Callable[[str], None],
) -> None:
    """Writes first (identical on both stores), then the reads."""
    ops, outputs = results["ops"], results.setdefault("_outputs", {})
    budget = {"budget_s": samples.read_budget_s, "min_samples": samples.min_samples}

    def record(name: str, timings: Timings, unit: str = "ms") -> None:
        ops[name] = {"unit": unit, **{s: summary(t) for s, t in timings.seconds.items() if t}}
        outputs[name] = timings.outputs
        log(
            f"  {name}: "
            + ", ".join(
                f"{s} {statistics.median(t) * 1e3:.3f}ms (n={len(t)})"
                for s, t in timings.seconds.items()
                if t
            )
        )

    t0 = time.perf_counter()
    record(
        "load: batched put",
        round_robin({n: s.batch for n, s in stores.items()}, workload.load_batches),
        unit="puts/s",
    )
    log(f"  load phase took {time.perf_counter() - t0:.1f}s")

    def single_put(store: BaseStore) -> Callable[[PutOp], None]:
        return lambda op: store.put(op.namespace, op.key, op.value)

    record(
        "single put, new memory",
        round_robin({n: single_put(s) for n, s in stores.items()}, workload.single_puts),
    )

    def tenant_search(store: BaseStore) -> Callable[[tuple[str, str]], list]:
        return lambda q: store.search((ROOT_LABEL, q[0]), query=q[1], limit=TOP_K)

    def global_search(store: BaseStore) -> Callable[[str], list]:
        return lambda q: store.search((ROOT_LABEL,), query=q, limit=TOP_K)

    def subject_search(store: BaseStore) -> Callable[[tuple[str, str]], list]:
        return lambda q: store.search((ROOT_LABEL, q[0], SUBJECT), query=q[1], limit=TOP_K)

    searchers = {**stores, variant.name: variant.store}
    for label, make, queries in [
        ("tenant search", tenant_search, workload.tenant_queries),
        ("all-tenant search", global_search, workload.global_queries),
        ("subject-prefix search", subject_search, workload.subject_queries),
    ]:
        record(label, round_robin({n: make(s) for n, s in searchers.items()}, queries, **budget))
        # its own row: SGAM's column holds the vector-only times, SqliteStore's repeats
        row = ops[label + VECTOR_ROW] = dict(ops[label])
        row[SGAM] = row.pop(SGAM_VECTOR)
        del ops[label][SGAM_VECTOR]

    def filtered_list(store: BaseStore) -> Callable[[tuple[str, str]], list]:
        return lambda f: store.search((ROOT_LABEL, f[0]), filter={"kind": f[1]}, limit=TOP_K)

    record(
        "filtered list",
        round_robin(
            {n: filtered_list(s) for n, s in stores.items()}, workload.list_filters, **budget
        ),
    )

    def get(store: BaseStore) -> Callable[[Ref], Item | None]:
        return lambda ref: store.get(*ref)

    record("get", round_robin({n: get(s) for n, s in stores.items()}, workload.get_refs, **budget))


def score(workload: Workload, exact: Exact, results: dict[str, Any]) -> None:
    """recall@10 against exact cosine over the same scope, and the correctness checks."""
    outputs = results.pop("_outputs")
    w = workload
    cases: list[tuple[str, list[tuple[str | None, str]], list[tuple[str, ...]], bool]] = [
        (
            "tenant search",
            list(w.tenant_queries),
            [(ROOT_LABEL, u) for u, _ in w.tenant_queries],
            False,
        ),
        (
            "all-tenant search",
            [(None, q) for q in w.global_queries],
            [(ROOT_LABEL,)] * len(w.global_queries),
            False,
        ),
        (
            "subject-prefix search",
            list(w.subject_queries),
            [(ROOT_LABEL, u, SUBJECT) for u, _ in w.subject_queries],
            True,
        ),
    ]
    for label, queries, scopes, work in cases:
        expected = [
            min(TOP_K, len(exact.rows(user, work)))
            for user, _ in queries  # all-tenant: user None, every memory
        ]
        for name, found in outputs[label].items():
            results["recall@10"].setdefault(label, {})[name] = exact.recall(queries, found, work)
            results["checks"].setdefault(label, {})[name] = bad_pages(
                found, scopes, expected, exact_ns=work
            )
            examples = foreign_examples(found, scopes)
            if examples:
                results["checks"][label][name]["examples"] = examples
    scopes = [(ROOT_LABEL, u) for u, _ in w.list_filters]
    expected = [min(TOP_K, exact.count(u, kind)) for u, kind in w.list_filters]
    kinds = [kind for _, kind in w.list_filters]
    for name, found in outputs["filtered list"].items():
        results["checks"].setdefault("filtered list", {})[name] = bad_pages(
            found, scopes, expected, kinds=kinds
        )
    for name, items in outputs["get"].items():
        wrong = sum(
            it is None or it.value != w.memories[ref]
            for ref, it in zip(w.get_refs, items, strict=False)
        )
        results["checks"].setdefault("get", {})[name] = {"missing or wrong value": wrong}


# ---------------------------------------------------------------------- report

ROWS = [
    "load: batched put",
    "single put, new memory",
    "tenant search",
    "tenant search" + VECTOR_ROW,
    "all-tenant search",
    "all-tenant search" + VECTOR_ROW,
    "subject-prefix search",
    "subject-prefix search" + VECTOR_ROW,
    "filtered list",
    "get",
]


def format_table(results: dict[str, Any]) -> str:
    peer = results["peer"]
    header = ["operation (median)", SGAM, peer, f"{peer}/SGAM"]
    lines = [header]
    for row in ROWS:
        op = results["ops"][row]
        unit = op["unit"]
        label = f"{row} ({'puts/s' if unit == 'puts/s' else 'ms'})"
        lines.append(
            [label, _cell(op.get(SGAM), unit), _cell(op.get(peer), unit), _ratio(op, peer)]
        )
    return aligned(lines)


def format_extras(results: dict[str, Any]) -> str:
    lines = [
        f"SGAMStore tenant_at: {results['sgam tenant_at']}; retrieval: "
        f"{results['sgam retrieval config']}"
    ]
    for label, per_store in results["recall@10"].items():
        cells = ", ".join(f"{s} {v:.3f}" for s, v in per_store.items())
        lines.append(f"recall@10 vs exact numpy, {label}: {cells}")
    load = results["ops"]["load: batched put"]
    cells = ", ".join(f"{s} {v['total_s']:.2f}s" for s, v in load.items() if s != "unit")
    lines.append(f"load total (sum of batch times): {cells}")
    sizes = ", ".join(f"{s} {b / 2**20:.1f} MiB" for s, b in results["disk_bytes"].items() if b)
    if sizes:
        lines.append(f"database size on disk: {sizes}")
    for check, per_store in results["checks"].items():
        cells = "; ".join(
            f"{s} " + ", ".join(f"{k} {v}" for k, v in c.items()) for s, c in per_store.items()
        )
        lines.append(f"check {check}: {cells}")
    lines.append(f"embedder cache misses during timing: {results['embedder_misses_during_timing']}")
    lines.append(f"wall time: {results['wall_s']:.1f}s")
    return "\n".join(lines)


def _settings(text: str) -> dict[str, Any]:
    """`--retrieval`'s JSON object (argparse reports the error of anything else)."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"not a JSON object: {text}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 memories, fewer samples")
    parser.add_argument(
        "--size", type=int, help=f"memories to load (a multiple of {USERS}; default 20000)"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results as JSON")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tmpdir", default=None, help="where the temporary databases go")
    parser.add_argument(
        "--engine",
        choices=["sqlite", "postgres"],
        default="sqlite",
        help="sqlite: SGAMStore against SqliteStore; postgres: SGAMStore on PostgreSQL "
        "against PostgresStore, on one server",
    )
    parser.add_argument("--pg-uri", help="an existing PostgreSQL server (default: embedded)")
    parser.add_argument(
        "--retrieval",
        type=_settings,
        default=None,
        metavar="JSON",
        help="SGAMStore's retrieval settings over its defaults, e.g. '{\"centering\": true}'",
    )
    args = parser.parse_args(argv)
    args.size = args.size or (5_000 if args.quick else 20_000)
    if args.size <= 0 or args.size % USERS:
        parser.error(f"--size must be a positive multiple of {USERS}")
    if args.pg_uri and args.engine != "postgres":
        parser.error("--pg-uri needs --engine postgres")
    args.peer = POSTGRES if args.engine == "postgres" else SQLITE
    args.databases = Databases(args.pg_uri) if args.engine == "postgres" else None
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    samples = QUICK if args.quick else FULL

    def log(line: str) -> None:
        print(line, flush=True)

    env = environment()
    log("environment: " + ", ".join(f"{k} {v}" for k, v in env.items()))
    log(f"samples: {samples}")
    if args.databases:
        log("engine: postgres; SGAMStore and PostgresStore in fresh databases on one server")
    else:
        log("pragmas: both stores WAL + synchronous=NORMAL + mmap (sgam_store.connect)")
    log(
        f"\n== {args.size:,} memories, {USERS} users, namespaces ('{ROOT_LABEL}', user) "
        f"and 1 in {WORK_EVERY} ('{ROOT_LABEL}', user, '{SUBJECT}') =="
    )
    try:
        results = run(args, samples, log)
    finally:
        if args.databases:
            args.databases.close()
    log("")
    log(format_table(results))
    log(format_extras(results))
    if args.json:
        report = {"environment": env, "quick": args.quick, "samples": repr(samples), **results}
        if not args.databases:  # the SQLite mode's JSON keeps its keys
            del report["engine"], report["peer"]
        args.json.write_text(json.dumps(report, indent=2, default=str))
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

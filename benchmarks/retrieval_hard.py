"""Recall@1/5/10, recall_all@10 and MRR per category on long dated conversations.

The conversations and questions are `hard_memories.py`'s. A dated question is searched
through `store.as_of(question.asked)`, as an agent asking on that day would.

usage:
    python benchmarks/retrieval_hard.py --split tune                 # MiniLM; 3 modes
    python benchmarks/retrieval_hard.py --split test --embedding hash
    python benchmarks/retrieval_hard.py --retrieval '{"mode": "vector"}' \\
        --retrieval '{"vector_weight": 2, "depth": 50}' --json tune.json

`--misses` adds, per run, where each evidence turn missing from its top 10 ranks on the
keyword side, the vector side and the run itself, each asked 100 deep (`misses`).

Every `--retrieval` is one run with those `RetrievalConfig` overrides (SGAMStore's
`retrieval=`); without any, the default hybrid and the vector and keyword modes run.
Tune on `--split tune` (the default), report on `--split test`. The turns are stored and
embedded once per invocation, then each run reopens the files with its config and asks
every question of the split with `search((user, "turns"), query=q, limit=10)`.

Each conversation goes to a store of its own keyword language (`retrieval={"language":
...}`), as an app sets the language its users write in; `--language simple` (or any one
language) puts them all in one store. `--store '{"spanish": {...}}'` gives one language's
store settings of its own, as its app would (each run's overrides win over them).

- recall@k: the share of a question's evidence turns among its top k, averaged over
  questions (a two-turn question with one turn found counts 0.5);
- recall_all@10: the share of questions with every evidence turn in the top 10 (a
  two-turn question with one turn found counts 0): whether a question spread over
  sessions is answered whole;
- MRR: 1 / rank of the best-ranked evidence turn in the top 10, else 0;
- overall: the mean over every question of the split, whatever its category;
- stale first: changing questions whose superseded turn ranks above the current one.

`--embedding minilm` (default) needs the `local` extra (all-MiniLM-L6-v2 from an installed
package, offline); `hash` is a deterministic bag of hashed words and character trigrams,
for speed, not for quality. `--vectors FILE` keeps every text's vector in FILE (JSON,
by embedding name) and reuses it, so tuning after a code change does not re-embed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hard_memories import CATEGORIES, SPLITS, Conversation, Dataset, Question, generate
from harness import source_hash
from langchain_core.embeddings import Embeddings

from sgam_store import LOCAL_DIMS, LocalMiniLM, SGAMStore

KS = (1, 5, 10)
WHOLE = f"recall_all@{max(KS)}"
MODES = {"hybrid": {}, "vector": {"mode": "vector"}, "keyword": {"mode": "keyword"}}
HASH_DIMS = 256
# `--misses`: each side asked this deep, and where a missing evidence turn ranks on it
MISS_DEPTH = 100
MISS_SIDES = {"keyword": {"mode": "keyword"}, "vector": {"mode": "vector"}, "run": {}}
MISS_BUCKETS = (("top 10", 10), ("11-30", 30), ("31-100", MISS_DEPTH))


class HashEmbeddings(Embeddings):
    """Bag of hashed words and character trigrams: texts sharing words or word pieces
    are similar. Deterministic and fast; a stand-in, not a model."""

    def __init__(self, dims: int = HASH_DIMS) -> None:
        self.dims = dims

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.dims
        words = re.findall(r"\w+", text.lower())
        grams = [w[i : i + 3] for w in words for i in range(max(1, len(w) - 2))]
        for token in words + grams:
            h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")
            vec[h % self.dims] += 1.0 if (h >> 32) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vec)) or 1.0
        return [x / norm for x in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


class VectorFile(Embeddings):
    """Vectors read from and added to a JSON file: embedding the ~2,850 turns of a split
    is most of a MiniLM run, and a code change does not change them."""

    def __init__(self, inner: Embeddings, path: Path, name: str) -> None:
        self.inner, self.path, self.name = inner, path, name
        stored = json.loads(path.read_text()) if path.exists() else {}
        self.known: dict[str, list[float]] = stored.get(name, {})
        self.added = False

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        todo = list(dict.fromkeys(t for t in texts if t not in self.known))
        if todo:
            self.known.update(zip(todo, self.inner.embed_documents(todo), strict=True))
            self.added = True
        return [self.known[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    def save(self) -> None:
        if self.added:
            stored = json.loads(self.path.read_text()) if self.path.exists() else {}
            stored[self.name] = self.known
            self.path.write_text(json.dumps(stored))


class QueryMemo(Embeddings):
    """Query vectors embedded up front in batches (one at a time, a busy 2-core machine
    took 0.4 s a question) and remembered, so every run embeds each question once."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.queries: dict[str, list[float]] = {}

    def warm(self, texts: list[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self.queries))
        self.queries.update(zip(todo, self.inner.embed_documents(todo), strict=True))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        if text not in self.queries:
            self.queries[text] = self.inner.embed_query(text)
        return self.queries[text]


@dataclass(frozen=True)
class Outcome:
    category: str
    recall: tuple[float, ...]  # at each of KS
    whole: bool  # every evidence turn in the top max(KS)
    rr: float
    stale_first: bool


def outcome(q: Question, keys: list[str]) -> Outcome:
    """How well the ranked `keys` (best first) answer `q`."""
    ranks = [keys.index(k) + 1 for k in q.evidence if k in keys]
    recall = tuple(sum(r <= k for r in ranks) / len(q.evidence) for k in KS)
    best = min(ranks, default=math.inf)
    stale = min((keys.index(k) + 1 for k in q.stale if k in keys), default=math.inf)
    whole = recall[-1] == 1.0
    return Outcome(q.category, recall, whole, 1 / best if ranks else 0.0, stale < best)


def summarize(outcomes: list[Outcome]) -> dict[str, dict[str, float]]:
    """Mean metrics per category present, then "overall" over every question."""
    groups = {c: [o for o in outcomes if o.category == c] for c in CATEGORIES}
    groups = {c: group for c, group in groups.items() if group}
    groups["overall"] = outcomes
    summary = {}
    for name, group in groups.items():
        row: dict[str, float] = {"n": len(group)}
        for i, k in enumerate(KS):
            row[f"recall@{k}"] = sum(o.recall[i] for o in group) / len(group)
        row[WHOLE] = sum(o.whole for o in group) / len(group)
        row["mrr"] = sum(o.rr for o in group) / len(group)
        if name == "changing":
            row["stale_first"] = sum(o.stale_first for o in group) / len(group)
        summary[name] = row
    return summary


def index_config(embeddings: Embeddings, dims: int) -> dict[str, Any]:
    return {"dims": dims, "embed": embeddings, "fields": ["text"]}


def store_path(path: str, language: str) -> str:
    """The file of `language`'s conversations: "hard.db" -> "hard.spanish.db"."""
    file = Path(path)
    return str(file.with_name(f"{file.stem}.{language}{file.suffix}"))


def by_language(dataset: Dataset, language: str | None) -> dict[str, list[Conversation]]:
    """Conversations by the keyword language of the store they go to: each its own
    (`language` None), or every one in one store of `language`."""
    groups: dict[str, list[Conversation]] = {}
    for conv in dataset.conversations:
        groups.setdefault(language or conv.language, []).append(conv)
    return groups


def load(
    path: str, dataset: Dataset, index: dict[str, Any], language: str | None = None,
    by_speaker: bool = False,
) -> None:  # fmt: skip
    """One store per keyword language, as an app configures the language its users
    write in (`retrieval={"language": ...}`); `language` puts every conversation in one.
    `by_speaker`: each turn under its speaker's subject (`Conversation.facts`)."""
    for lang, conversations in by_language(dataset, language).items():
        retrieval = {"language": lang}
        with SGAMStore.from_conn_string(
            store_path(path, lang), index=index, retrieval=retrieval
        ) as store:
            for conv in conversations:
                for fact in conv.facts(by_speaker):
                    store.replace_fact(fact)


def ranked(
    path: str, dataset: Dataset, index: dict[str, Any], retrieval: dict,
    language: str | None = None, stores: dict[str, dict] | None = None,
    by_speaker: bool = False, limit: int = max(KS),
) -> list[list[str]]:  # fmt: skip
    """Every question's ranked keys (best first, at most `limit`), searched in its
    conversation with this config, in the order of `dataset.questions`. `stores` holds
    settings of one language's store, as its app would configure it; the run's
    `retrieval` overrides them. `by_speaker`: the turns were filed by speaker, so the
    conversation is its user's whole tenant."""
    keys_by_question: dict[int, list[str]] = {}
    for lang, conversations in by_language(dataset, language).items():
        config = {**(stores or {}).get(lang, {}), **retrieval}
        with SGAMStore.from_conn_string(
            store_path(path, lang), index=index, retrieval=config
        ) as store:
            for conv in conversations:
                for q in conv.questions:
                    where = (conv.user,) if by_speaker else conv.namespace
                    # A dated question is asked on its day: through an as-of view, whose
                    # instant is the search's reference (what "last May" resolves against).
                    view = store.as_of(q.asked) if q.asked else store
                    found = view.search(where, query=q.text, limit=limit)
                    keys_by_question[id(q)] = [item.key for item in found]
    return [keys_by_question[id(q)] for q in dataset.questions]


def ask(
    path: str, dataset: Dataset, index: dict[str, Any], retrieval: dict,
    language: str | None = None, stores: dict[str, dict] | None = None,
    by_speaker: bool = False,
) -> list[Outcome]:  # fmt: skip
    """Every question of `dataset` answered with this config (`ranked`'s top 10)."""
    found = ranked(path, dataset, index, retrieval, language, stores, by_speaker)
    return [outcome(q, keys) for q, keys in zip(dataset.questions, found, strict=True)]


def misses(
    path: str, dataset: Dataset, index: dict[str, Any], retrieval: dict,
    language: str | None = None, stores: dict[str, dict] | None = None,
    by_speaker: bool = False,
) -> dict[str, dict[str, dict[str, int]]]:  # fmt: skip
    """Where the evidence turns missing from this config's top 10 rank on each side:
    {category: {side: {bucket: turns}}}, the sides the keyword and vector modes and this
    config itself, each asked for its first MISS_DEPTH. A failure analysis, so through
    the public search: the keyword mode keeps the terms hybrid search drops as common,
    and hybrid asked for 100 fuses deeper candidates than asked for 10."""
    args = (language, stores, by_speaker)
    top = ranked(path, dataset, index, retrieval, *args)
    deep = {side: ranked(path, dataset, index, {**retrieval, **mode}, *args, MISS_DEPTH)
            for side, mode in MISS_SIDES.items()}  # fmt: skip
    table: dict[str, dict[str, dict[str, int]]] = {}
    for n, q in enumerate(dataset.questions):
        for key in (k for k in q.evidence if k not in top[n]):
            row = table.setdefault(q.category, {side: {} for side in MISS_SIDES})
            for side, found in deep.items():
                place = _place(found[n], key)
                row[side][place] = row[side].get(place, 0) + 1
    return table


def _place(keys: list[str], key: str) -> str:
    """The MISS_BUCKETS bucket of `key`'s rank in `keys`, or "past 100"."""
    rank = keys.index(key) + 1 if key in keys else math.inf
    return next((name for name, deepest in MISS_BUCKETS if rank <= deepest), "past 100")


def misses_table(table: dict[str, dict[str, dict[str, int]]]) -> str:
    """`misses` as Markdown: a row per category and side."""
    buckets = [b for b, _ in MISS_BUCKETS] + ["past 100"]
    lines = [
        "| category | side | missing | " + " | ".join(buckets) + " |",
        "|---|---|---:|" + "---:|" * len(buckets),
    ]
    for category, sides in table.items():
        for side, places in sides.items():
            cells = " | ".join(str(places.get(b, 0)) for b in buckets)
            lines.append(f"| {category} | {side} | {sum(places.values())} | {cells} |")
    return "\n".join(lines)


def evaluate(
    path: str,
    dataset: Dataset,
    embeddings: Embeddings,
    dims: int,
    runs: dict[str, dict[str, Any]],
    timings: dict[str, float] | None = None,
    language: str | None = None,
    stores: dict[str, dict] | None = None,
    by_speaker: bool = False,
    missing: dict[str, Any] | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """Load `dataset` into new SGAM files beside `path` (one per keyword language, see
    `load`) and embed its questions, then summarize each run's answers; `timings`
    receives the seconds of that load and of each run, by label; `missing`, where given,
    each run's `misses`."""
    memo = QueryMemo(embeddings)
    index = index_config(memo, dims)
    timings = {} if timings is None else timings
    started = time.perf_counter()
    load(path, dataset, index, language, by_speaker)
    memo.warm([q.text for q in dataset.questions])
    timings["load"] = time.perf_counter() - started
    results = {}
    for label, retrieval in runs.items():
        started = time.perf_counter()
        answers = ask(path, dataset, index, retrieval, language, stores, by_speaker)
        results[label] = summarize(answers)
        timings[label] = time.perf_counter() - started
        if missing is not None:
            missing[label] = misses(path, dataset, index, retrieval, language, stores, by_speaker)
    return results


def table(summary: dict[str, dict[str, float]]) -> str:
    columns = [f"recall@{k}" for k in KS] + [WHOLE, "mrr"]
    lines = [
        "| category | n | " + " | ".join(columns) + " |",
        "|---|---:|" + "---:|" * len(columns),
    ]
    for name, row in summary.items():
        cells = " | ".join(f"{row[c]:.3f}" for c in columns)
        lines.append(f"| {name} | {row['n']:.0f} | {cells} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=SPLITS, default="tune")
    parser.add_argument("--embedding", choices=("minilm", "hash"), default="minilm")
    parser.add_argument(
        "--retrieval",
        action="append",
        type=json.loads,
        help="JSON of RetrievalConfig overrides, one run each (repeatable)",
    )
    parser.add_argument(
        "--language",
        help="keyword language of one store for every conversation (default: each "
        "conversation in a store of its own language)",
    )
    parser.add_argument(
        "--store",
        type=json.loads,
        default={},
        help="JSON of RetrievalConfig settings by store language, under every run's: "
        '\'{"spanish": {"keyword_floor": 0.9}}\'',
    )
    parser.add_argument(
        "--layout",
        choices=("turns", "speakers"),
        default="turns",
        help="turns: each conversation's turns under (user, 'turns'); speakers: under "
        "(user, speaker), SGAM's subject per person, searched over (user,)",
    )
    parser.add_argument("--seed", type=int, default=18, help="data set seed (keep for reports)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--vectors", type=Path, help="reuse and extend this vector file")
    parser.add_argument(
        "--misses",
        action="store_true",
        help="also print where the evidence missing from each run's top 10 ranks on the "
        "keyword side, the vector side and the run itself, asked 100 deep",
    )
    return parser.parse_args(argv)


def embedding(name: str) -> tuple[Embeddings, int]:
    return (LocalMiniLM(), LOCAL_DIMS) if name == "minilm" else (HashEmbeddings(), HASH_DIMS)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    dataset = generate(seed=args.seed).split(args.split)
    runs = {json.dumps(r, sort_keys=True): r for r in args.retrieval} if args.retrieval else MODES
    turns = sum(len(c.turns) for c in dataset.conversations)
    print(
        f"split {args.split}: {len(dataset.conversations)} conversations, {turns} turns, "
        f"{len(dataset.questions)} questions; embedding {args.embedding}; seed {args.seed}; "
        f"keywords {args.language or 'by conversation language'}; stores {args.store}; "
        f"layout {args.layout}; "
        f"sgam_store source sha256 {source_hash()}"
    )
    timings: dict[str, float] = {}
    missing: dict[str, Any] | None = {} if args.misses else None
    embeddings, dims = embedding(args.embedding)
    if args.vectors:
        embeddings = VectorFile(embeddings, args.vectors, args.embedding)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "hard.db")
        results = evaluate(
            path, dataset, embeddings, dims, runs, timings, args.language, args.store,
            args.layout == "speakers", missing,
        )  # fmt: skip
    if isinstance(embeddings, VectorFile):
        embeddings.save()
    for label, summary in results.items():
        stale = summary.get("changing", {}).get("stale_first")
        note = "" if stale is None else f", stale first {stale:.3f}"
        print(f"\n{label} ({timings[label]:.1f} s{note})\n{table(summary)}")
        if missing is not None:
            where = misses_table(missing[label])
            print(f"\nevidence missing from the top 10, where it ranks\n{where}")
    print(f"\nload, embed turns and questions: {timings['load']:.1f} s")
    if args.json:
        report = {"split": args.split, "embedding": args.embedding, "seed": args.seed,
                  "language": args.language, "stores": args.store,
                  "runs": runs, "results": results, "seconds": timings,
                  "misses": missing}  # fmt: skip
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

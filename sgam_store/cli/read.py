"""The read commands: `get`, `search`, `recall`, and the inspections `ledger`,
`history`, `timeline`; each is one read of an existing store.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import unicodedata
from dataclasses import replace
from typing import Any

from sgam_store.cli import common
from sgam_store.cli.common import (
    add_embedding_option,
    add_schema_option,
    existing_store,
    search_index,
)
from sgam_store.core.errors import EpisodeNotFoundError
from sgam_store.core.models import Fact
from sgam_store.engines import mask_uri
from sgam_store.harness import render
from sgam_store.harness.render import fact_row, facts_table
from sgam_store.ledger.episodes import Episode
from sgam_store.store import SGAMStore


def said(store: SGAMStore, fact: Fact) -> dict[str, Any]:
    """The source of a fact: the episode (speaker, text) or its external marker."""
    try:
        source = store.who_said(fact)
    except EpisodeNotFoundError:
        return {"source": fact.source_episode_id, "text": None}
    if isinstance(source, Episode):
        return {
            "source": source.episode_id,
            "kind": source.source_kind,
            "speaker": source.speaker,
            "occurred_at": source.occurred_at.isoformat(),
            "text": source.content,
        }
    return {"source": source.source_id, "kind": source.kind, "text": None}


def said_line(episode: dict[str, Any]) -> str:
    if episode["text"] is None:  # an external marker (a plain put), or an erased episode
        return "(no episode text)"
    return f"{episode['speaker']}: {episode['text']}" if episode["speaker"] else episode["text"]


def cmd_ledger(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema, read_only=True) as store:
        facts = store.ledger(args.tenant, args.subject, args.attribute, known_at=args.known_at)
    if args.json:
        print(json.dumps([fact_row(f) for f in facts], indent=2))
        return 0
    if not facts:
        raise ValueError(f"no facts in {mask_uri(args.db)} match{near_hint(store_hints(args))}")
    believed = f", as believed at {args.known_at}" if args.known_at else ""
    common.console.print(
        render.ledger_tables(facts, f"{mask_uri(args.db)}: {len(facts)} facts{believed}")
    )
    common.console.print(render.NUMBERS_NOTE, style="dim", highlight=False)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema, read_only=True) as store:
        facts = store.history(args.tenant, args.subject, args.attribute, known_at=args.known_at)
        sources = {f.fact_id: said(store, f) for f in facts}
    if not facts:
        raise ValueError(
            f"no facts for {args.tenant} · {args.subject}.{args.attribute}"
            f"{near_hint(store_hints(args))}"
        )
    if args.json:
        rows = [{**fact_row(f), "said": sources[f.fact_id]} for f in facts]
        print(json.dumps(rows, indent=2))
        return 0
    lines = {fact_id: said_line(episode) for fact_id, episode in sources.items()}
    common.console.print(render.history_view(facts, lines))
    common.console.print(render.NUMBERS_NOTE, style="dim", highlight=False)
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema, read_only=True) as store:
        facts = store.ledger(args.tenant, args.subject, args.attribute, known_at=args.known_at)
    if not facts:
        raise ValueError(f"no facts in {mask_uri(args.db)} match{near_hint(store_hints(args))}")
    if args.json:
        print(json.dumps([fact_row(f) for f in facts], indent=2))
        return 0
    common.console.print(render.timeline(facts, common.console.width))
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema, read_only=True) as store:
        fact = store.fact_at(
            args.tenant, args.subject, args.attribute, at=args.at, known_at=args.known_at
        )
        source = said(store, fact) if fact else None
    if fact is None:
        when = f" at {args.at}" if args.at else " now"
        raise ValueError(
            f"no fact for {args.tenant} · {args.subject}.{args.attribute}{when}"
            f"{near_hint(store_hints(args))}"
        )
    if args.json:
        print(json.dumps({**fact_row(fact), "said": source}, indent=2))
        return 0
    common.console.print(facts_table([fact], f"{args.tenant} · {render.key_of(fact)}"))
    return 0


def search_mode(args: argparse.Namespace) -> str:
    """What the search will do: without an embedding there is only the keyword index."""
    if args.embedding == "none":
        if args.mode in ("vector", "hybrid"):
            raise ValueError(f"--mode {args.mode} needs an embedding: add --embedding local")
        return "keyword"
    return args.mode or "hybrid"


def warn_if_no_vectors(store: SGAMStore, db: str) -> None:
    """`--embedding local` on a file written without one: its facts have no vectors, so
    the vector side finds nothing; say so, and how to give them vectors."""
    if store.stats()["rows"].get("vector_rows", 0) == 0:
        print(
            f"sgam: warning: {db} has no vectors (it was written without an embedding), so "
            "vector search finds nothing and hybrid ranks by keyword alone; to add them, "
            f"copy its items into a new file with embeddings: sgam import --from {db} "
            "--db NEW.db --embedding local (or open it from Python with index=default_index() "
            "before writing)",
            file=sys.stderr,
        )


def score_text(score: float | None) -> str:
    """The item's score as is: three decimals, or two significant digits when smaller."""
    if score is None:
        return "-"
    return f"{score:.3f}" if score == 0 or abs(score) >= 0.001 else f"{score:.2g}"


def cmd_search(args: argparse.Namespace) -> int:
    mode = search_mode(args)
    flt = json.loads(args.filter) if args.filter else None
    if flt is not None and not isinstance(flt, dict):
        raise ValueError(f"--filter takes a JSON object, got {args.filter!r}")
    subject = tuple(args.subject.split(".")) if args.subject else ()
    with existing_store(
        args.db, search_index(args.embedding), schema=args.schema, read_only=True
    ) as store:
        if args.embedding != "none":
            warn_if_no_vectors(store, mask_uri(args.db))
        store.retrieval = replace(store.retrieval, mode=mode)
        view = store.for_tenant(args.tenant)  # the subject's labels, relative to the tenant
        view = view.as_of(args.at) if args.at else view
        items = view.search(subject, query=args.query, filter=flt, limit=args.limit)
        absolute = [store.layout.absolute(args.tenant, i.namespace) for i in items]
        hint = "" if items or not args.subject else near_hint(store_hints(args))
    rows = [
        {"namespace": list(ns), "key": i.key, "value": i.value, "score": i.score}
        for ns, i in zip(absolute, items, strict=True)
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    common.console.print(
        f"{mask_uri(args.db)}: {len(rows)} results for {args.query!r} ({mode} search)",
        style="bold",
        highlight=False,
    )
    table = render.plain_table(
        None, "score", "namespace", "key", "value", whole=("score", "namespace", "key")
    )
    for row in rows:
        table.add_row(
            score_text(row["score"]),
            ".".join(row["namespace"]),
            row["key"],
            render.shown(row["value"]),
        )
    common.console.print(table)
    if hint:
        print(f"sgam: nothing under --subject {args.subject}{hint}", file=sys.stderr)
    return 0


def fold(text: str) -> str:
    """A name as compared for hints: Unicode-normalized (NFKC) and case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


def store_hints(args: argparse.Namespace) -> list[str]:
    """Subjects (and attributes) the store holds that differ from the asked ones only in
    case or Unicode normalization: `--subject Mira` when the agent stored `mira`."""
    subject, attribute = getattr(args, "subject", None), getattr(args, "attribute", None)
    if not args.tenant or (not subject and not attribute):
        return []
    with existing_store(args.db, schema=args.schema, read_only=True) as store:
        facts = store.ledger(args.tenant)
    hints = []
    if subject:
        hints += [
            f"--subject {shlex.quote(s)}"
            for s in sorted({f.subject for f in facts})
            if s != subject and fold(s) == fold(subject)
        ]
    if attribute:
        subjects = {s for s in (subject, *(h.split(" ", 1)[1] for h in hints)) if s}
        hints += [
            f"--attribute {shlex.quote(a)}"
            for a in sorted({f.attribute for f in facts if not subjects or f.subject in subjects})
            if a != attribute and fold(a) == fold(attribute)
        ]
    return hints


def near_hint(hints: list[str]) -> str:
    return f"; did you mean {' or '.join(hints)}?" if hints else ""


def cmd_recall(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema, read_only=True) as store:
        context = store.recall(
            args.tenant,
            args.question,
            subjects=args.subject or None,
            attributes=args.attribute or None,
            at=args.at,
            known_at=args.known_at,
        )
    if args.json:
        print(
            json.dumps(
                {
                    "text": context.text,
                    "facts": [fact_row(f) for f in context.facts],
                    "evidence": [fact_row(f) for f in context.evidence],
                    "history": [fact_row(f) for f in context.history],
                },
                indent=2,
            )
        )
        return 0
    print(context.text)
    return 0


def add_read_commands(sub: Any) -> None:
    """get, search, recall: the library's reads, one command each."""
    get = sub.add_parser("get", help="the fact valid at an instant (fact_at)")
    search = sub.add_parser("search", help="search current facts, or as of --at (search)")
    recall = sub.add_parser("recall", help="the cited context for a question (recall)")
    for parser in (get, search, recall):
        parser.add_argument(
            "--db", required=True, help="an existing database file, or a PostgreSQL URI"
        )
        add_schema_option(parser)
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--at", help="valid at this instant (default: now)")
        parser.add_argument("--json", action="store_true", help="machine-readable output")
    for parser in (get, recall):
        parser.add_argument("--known-at", help="as the store believed it at this instant")
    get.add_argument("--subject", required=True, help="'' = the tenant itself")
    get.add_argument("--attribute", required=True)
    get.set_defaults(func=cmd_get)
    search.add_argument("query")
    search.add_argument("--subject", help="search under this subject only")
    search.add_argument("--filter", help='JSON, e.g. \'{"value": "2026-06-30"}\'')
    search.add_argument(
        "--mode",
        choices=["hybrid", "keyword", "vector"],
        help="default: hybrid with --embedding local, else keyword (the only index there is)",
    )
    search.add_argument("--limit", type=int, default=10)
    add_embedding_option(search)
    search.set_defaults(func=cmd_search)
    recall.add_argument("question")
    recall.add_argument("--subject", action="append", help="a subject to include (repeatable)")
    recall.add_argument("--attribute", action="append", help="an attribute (repeatable)")
    recall.set_defaults(func=cmd_recall)


def add_inspection_commands(sub: Any) -> None:
    """ledger, history, timeline: read-only views of a database's facts."""
    for name, summary, func in (
        ("ledger", "every fact with validity, supersedes link and source", cmd_ledger),
        ("history", "one key's facts, what replaced what, and who said it", cmd_history),
        ("timeline", "validity intervals per key, drawn as a text timeline", cmd_timeline),
    ):
        parser = sub.add_parser(name, help=summary)
        parser.add_argument(
            "--db", required=True, help="an existing database file, or a PostgreSQL URI"
        )
        add_schema_option(parser)
        required = name == "history"
        parser.add_argument("--tenant", required=required)
        parser.add_argument("--subject", required=required, help="'' = the tenant itself")
        parser.add_argument("--attribute", required=required)
        parser.add_argument("--known-at", help="as the store believed it at this instant")
        parser.add_argument("--json", action="store_true", help="machine-readable output")
        parser.set_defaults(func=func)

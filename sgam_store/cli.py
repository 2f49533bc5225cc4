"""The `sgam` command line: each subcommand maps to one library call.

Errors print as one line on stderr with exit status 2; `--json` gives machine output.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from .errors import SGAMError
from .models import Fact, MemoryFact
from .store import SGAMStore

console = Console()

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


def fact_row(fact: Fact) -> dict[str, Any]:
    return {
        "fact_id": fact.fact_id,
        "tenant": fact.tenant_id,
        "key": f"{fact.subject}.{fact.attribute}" if fact.subject else fact.attribute,
        "value": fact.value,
        "valid_from": fact.valid_from.isoformat(),
        "valid_to": fact.valid_to.isoformat() if fact.valid_to else None,
        "supersedes": fact.supersedes_fact_id,
        "source": fact.source_episode_id,
    }


def facts_table(title: str, facts: list[Fact]) -> Table:
    table = Table(title=title)
    for column in (
        "fact_id",
        "tenant",
        "key",
        "value",
        "valid_from",
        "valid_to",
        "supersedes",
        "source",
    ):
        table.add_column(column)
    for fact in facts:
        table.add_row(*("" if v is None else str(v) for v in fact_row(fact).values()))
    return table


def fresh_database(path: str) -> None:
    """Demos start from an empty file, so running them twice gives the same output."""
    if path != ":memory:":
        for suffix in ("", "-wal", "-shm"):
            Path(path + suffix).unlink(missing_ok=True)


def cmd_demo(args: argparse.Namespace) -> int:
    """The seed's passport example through the store: writes, then current and past reads."""
    out: dict[str, Any] = {"answers": []}
    fresh_database(args.db)
    with SGAMStore.from_conn_string(args.db) as store:
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
    console.print(facts_table("acme / mira.passport_deadline history", history))
    for answer in out["answers"]:
        console.print(
            f"Mira's passport deadline {answer['question']}: "
            f"[bold green]{answer['value']}[/] (source {answer['source']})"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sgam", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the passport example on a SQLite file, offline")
    demo.add_argument("--db", default=":memory:", help="database file (default: in memory)")
    demo.add_argument("--json", action="store_true", help="machine-readable output")
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (SGAMError, ValueError, OSError) as exc:
        print(f"sgam: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

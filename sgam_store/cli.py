"""The `sgam` command line: each subcommand maps to one library call.

Errors print as one line on stderr with exit status 2; `--json` gives machine output.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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


# ---------------------------------------------------------------- lifecycle commands


@contextmanager
def existing_store(path: str) -> Iterator[SGAMStore]:
    """Lifecycle commands act on a database that exists: a typo must not create a new one."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"no database at {path}")
    with SGAMStore.from_conn_string(path) as store:
        store.setup()
        yield store


def _flatten(data: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    for key, value in data.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        elif isinstance(value, list):
            yield f"{prefix}{key}", ", ".join(map(str, value)) or "-"
        else:
            yield f"{prefix}{key}", "-" if value is None else str(value)


def emit(args: argparse.Namespace, title: str, data: dict[str, Any]) -> int:
    """`--json` prints the report as is; otherwise a two-column table of its fields."""
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    table = Table(title=title)
    table.add_column("field")
    table.add_column("value")
    for name, value in _flatten(data):
        table.add_row(name, value)
    console.print(table)
    return 0


def cmd_retention(args: argparse.Namespace) -> int:
    with existing_store(args.db) as store:
        report = store.run_retention(now=args.now)
    return emit(args, f"retention run on {args.db}", report.to_dict())


def cmd_purge(args: argparse.Namespace) -> int:
    narrowed = args.subject is not None or args.attribute is not None
    if args.episode is not None and narrowed:
        raise ValueError(
            "--episode selects by source: do not combine it with --subject/--attribute"
        )
    if args.episode is None and not narrowed and not args.whole_tenant:
        raise ValueError(f"this would erase all of tenant {args.tenant!r}: add --whole-tenant")
    with existing_store(args.db) as store:
        if args.episode is not None:
            report = store.purge_episode(args.tenant, args.episode, secure_delete=args.secure)
        else:
            report = store.purge(
                args.tenant, args.subject, args.attribute, secure_delete=args.secure
            )
    return emit(args, f"erased from {args.db}", report.to_dict())


def cmd_stats(args: argparse.Namespace) -> int:
    with existing_store(args.db) as store:
        return emit(args, f"{args.db}", store.stats())


def cmd_vacuum(args: argparse.Namespace) -> int:
    with existing_store(args.db) as store:
        store.vacuum()
        return emit(args, f"{args.db} after vacuum", store.stats()["file"])


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
    with existing_store(args.db) as store:
        report = store.backfill(batch_size=args.batch_size)
    return emit(args, f"backfill of {args.db}", report.to_dict())


def add_lifecycle_commands(sub: Any) -> None:
    """retention, purge, stats, vacuum, backfill: each is one SGAMStore method."""

    def command(name: str, summary: str, func: Any) -> argparse.ArgumentParser:
        parser = sub.add_parser(name, help=summary)
        parser.add_argument("--db", required=True, help="an existing database file")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sgam", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the passport example on a SQLite file, offline")
    demo.add_argument("--db", default=":memory:", help="database file (default: in memory)")
    demo.add_argument("--json", action="store_true", help="machine-readable output")
    demo.set_defaults(func=cmd_demo)
    add_lifecycle_commands(sub)
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

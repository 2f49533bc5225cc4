"""`sgam changes`: the change feed (`SGAMStore.changes`), newest first.

sgam changes --db memory.db --since 2026-06-01T00:00:00Z [--until ...] [--tenant T]
             [--limit N] [--json]
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from sgam_store.cli import common
from sgam_store.cli.common import add_schema_option, count, existing_store
from sgam_store.cli.read import print_json
from sgam_store.core.models import Change
from sgam_store.harness.render import listed, plain_table, readable


def add_changes_command(sub: Any) -> None:
    parser = sub.add_parser("changes", help="what the store wrote since an instant (changes)")
    parser.add_argument(
        "--db", required=True, help="an existing database file, or a PostgreSQL URI"
    )
    add_schema_option(parser)
    parser.add_argument("--since", required=True, help="transaction time, inclusive (with offset)")
    parser.add_argument("--until", help="transaction time, exclusive (default: no bound)")
    parser.add_argument("--tenant", help="one tenant's changes only (default: every tenant)")
    parser.add_argument("--limit", type=count, default=100, help="at most this many (default 100)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=cmd_changes)


def cmd_changes(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema, read_only=True) as store:
        feed = store.changes(args.since, tenant_id=args.tenant, until=args.until, limit=args.limit)
    if args.json:
        print_json([dict(c) for c in feed])  # shallow: pydantic's dump recurses into values
        return 0
    if not feed:
        print(
            f"no changes since {args.since}" + (f" for tenant {args.tenant}" if args.tenant else "")
        )
        return 0
    common.console.print(changes_table(feed))
    return 0


def changes_table(feed: list[Change]) -> Table:
    """The feed as a table, one row per change, newest first. Identities and intervals stay
    whole while the value keeps room (`render.fit_columns`); times read to the second."""
    table = plain_table(
        "changes, newest first",
        *("at", "kind", "key", "value", "valid", "fact", "source"),
        whole=("at", "kind", "key", "valid", "fact", "source"),
    )
    times = readable(t for c in feed for t in (c.at, c.valid_from, c.valid_to))
    for c in feed:
        key = f"{c.subject}.{c.attribute}" if c.subject else c.attribute
        link = f" ← #{c.supersedes_fact_id}" if c.supersedes_fact_id else ""
        link += f" → #{c.superseded_by_fact_id}" if c.superseded_by_fact_id else ""
        table.add_row(
            times[c.at],
            c.kind,
            f"{c.tenant_id}/{key}",
            listed(c.value),
            f"{times[c.valid_from]} → {times[c.valid_to]}",
            f"#{c.fact_id}{link}",
            c.source_episode_id,
        )
    return table

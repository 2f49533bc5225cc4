"""The lifecycle commands: `retention`, `purge`, `stats`, `vacuum`, `backfill`, `embed`,
`reindex`; each is one SGAMStore method on an existing store.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
from pathlib import Path
from typing import Any

from rich.progress import Progress

from sgam_store.cli import common
from sgam_store.cli.common import (
    add_schema_option,
    count,
    emit,
    existing_store,
    live,
    search_index,
)
from sgam_store.core import analysis
from sgam_store.engines import mask_uri


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
    if args.episode is None and not narrowed and not (args.whole_tenant or args.dry_run):
        raise ValueError(f"this would erase all of tenant {args.tenant!r}: add --whole-tenant")
    how = {"secure_delete": args.secure, "dry_run": args.dry_run}
    with existing_store(args.db, schema=args.schema) as store:
        if args.episode is not None:
            report = store.purge_episode(args.tenant, args.episode, **how)
        else:
            report = store.purge(args.tenant, args.subject, args.attribute, **how)
    title = "would erase from" if args.dry_run else "erased from"
    return emit(args, f"{title} {mask_uri(args.db)}", report.to_dict(), changes=True)


def cmd_stats(args: argparse.Namespace) -> int:
    with existing_store(args.db, schema=args.schema, read_only=True) as store:
        return emit(args, mask_uri(args.db), store.stats())


def cmd_migrate(args: argparse.Namespace) -> int:
    """Create or upgrade the schema (`setup()`): the one command whose purpose is to change
    it, since the read commands open a store read-only and refuse an older schema."""
    with existing_store(args.db, schema=args.schema) as store:
        version = store.stats()["schema_version"]
    return emit(args, f"{mask_uri(args.db)} is ready", {"schema_version": version})


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


def cmd_embed(args: argparse.Namespace) -> int:
    """Give the facts a file wrote without an embedding their vectors, in place
    (`SGAMStore.embed`): the file keeps its history, episodes and provenance."""
    with (
        existing_store(args.db, search_index(args.embedding), schema=args.schema) as store,
        Progress(console=common.console, transient=True, disable=not live(args)) as progress,
    ):
        task = progress.add_task("embedding", total=None)
        report = store.embed(
            batch_size=args.batch_size, progress=lambda n: progress.advance(task, n)
        )
    return emit(args, f"vectors for {mask_uri(args.db)}", report.to_dict(), changes=True)


def cmd_reindex(args: argparse.Namespace) -> int:
    """Rebuild the keyword index in another language (`SGAMStore.set_language`)."""
    with existing_store(args.db, schema=args.schema) as store:
        before = store.language
        rebuilt = store.set_language(args.language)
    report = {"language": args.language, "was": before, "keyword_rows": rebuilt}
    return emit(args, f"keyword index of {mask_uri(args.db)}", report)


def add_lifecycle_commands(sub: Any) -> None:
    """retention, purge, stats, vacuum, backfill, embed, reindex: each is one SGAMStore
    method."""

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
        "--secure",
        action="store_true",
        help="leave no byte of it in the database's files: rewrite the file (SQLite: "
        "secure_delete, FTS merge, VACUUM, WAL truncated) or its tables (PostgreSQL: "
        "VACUUM FULL); slower, see docs/lifecycle.md",
    )
    purge.add_argument(
        "--dry-run", action="store_true", help="report what would be erased, erase nothing"
    )
    command("stats", "row counts, value schema versions, free pages", cmd_stats)
    command("migrate", "upgrade an older store's schema to this version's (setup)", cmd_migrate)
    command("vacuum", "rebuild the file without free pages (after purges)", cmd_vacuum)
    backfill = command("backfill", "rewrite rows in an old value schema", cmd_backfill)
    backfill.add_argument(
        "--transforms",
        action="append",
        default=[],
        help="module or .py file that registers transforms (repeatable)",
    )
    backfill.add_argument("--batch-size", type=int, default=500)
    embed = command(
        "embed", "give the facts written without an embedding their vectors, in place", cmd_embed
    )
    embed.add_argument(
        "--embedding",
        choices=["local"],
        default="local",
        help="local: the bundled model (the local extra; default)",
    )
    embed.add_argument(
        "--batch-size", type=count, default=500, help="facts a transaction (default 500)"
    )
    reindex = command(
        "reindex", "rebuild the keyword index in another language (stemming)", cmd_reindex
    )
    reindex.add_argument("--language", required=True, choices=analysis.LANGUAGES)

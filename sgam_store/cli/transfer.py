"""The transfer commands: `copy` (a whole store, any engine to any engine) and
`import` (another BaseStore's items).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.progress import Progress

from sgam_store.cli import common
from sgam_store.cli.common import (
    add_embedding_option,
    add_schema_option,
    check_db,
    emit,
    engine_options,
    live,
    search_index,
)
from sgam_store.core.errors import ForeignDatabaseError
from sgam_store.engines import is_postgres_target, mask_uri, open_engine
from sgam_store.lifecycle import transfer
from sgam_store.store import SGAMStore


def cmd_copy(args: argparse.Namespace) -> int:
    """Copy a whole store to an empty one, on the same or another engine."""
    check_db(args.source, "--from")
    source = open_engine(
        args.source, dims=None, read_only=True, **engine_options(args.source, args.from_schema)
    )
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
    """Bring another store's items in (`SGAMStore.import_items`), with a progress bar. A
    target file this run created is removed again if the import fails, so a failed run
    leaves no empty store behind."""
    if not is_postgres_target(args.source) and not Path(args.source).is_file():
        raise FileNotFoundError(f"--from {args.source}: no store at that path")
    created = not is_postgres_target(args.db) and not Path(args.db).exists()
    try:
        with sgam_source(args.source) as origin:
            report = import_into(args, origin)
    except BaseException:
        if created:
            for suffix in ("", "-wal", "-shm"):
                Path(args.db + suffix).unlink(missing_ok=True)
        raise
    return emit(args, f"imported {mask_uri(args.source)} into {mask_uri(args.db)}", report)


@contextmanager
def sgam_source(source: str) -> Iterator[SGAMStore | None]:
    """The source opened read-only when it is an SGAM file (`sgam import` then brings in
    its current memories, as `store.search()` sees them; `sgam embed` is the way to give
    a file vectors with its history); None for any other source."""
    if is_postgres_target(source) or source.endswith(".jsonl"):
        yield None
        return
    try:
        origin = SGAMStore(source, read_only=True)
        origin.setup()
    except ForeignDatabaseError:  # LangGraph's SqliteStore, say: import_items reads it
        yield None
        return
    try:
        yield origin
    finally:
        origin.close()


def import_into(args: argparse.Namespace, origin: SGAMStore | None) -> dict[str, Any]:
    """The import itself; an SGAM source's items keep its namespace layout (`tenant_at`)."""
    tenant_at = args.tenant_at
    if origin is not None and tenant_at is None:
        tenant_at = origin.tenant_at
    with (
        SGAMStore.from_conn_string(
            args.db,
            index=search_index(args.embedding),
            tenant_at=tenant_at,
            **engine_options(args.db, args.db_schema),
        ) as store,
        Progress(console=common.console, transient=True, disable=not live(args)) as progress,
    ):
        store.setup()
        task = progress.add_task("importing", total=None)
        report = store.import_items(
            args.source if origin is None else origin,
            label=args.label or (Path(args.source).name if origin is not None else None),
            schema=args.schema,
            progress=lambda n: progress.advance(task, n),
        )
    return asdict(report)


def add_transfer_commands(sub: Any) -> None:
    """copy and import: a whole store into an empty one; another store's items into this one."""
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
        "import",
        help="bring in the items of a LangGraph SqliteStore, PostgresStore, JSONL or SGAM file",
    )
    imports.add_argument(
        "--from",
        dest="source",
        required=True,
        help="a SqliteStore file, a PostgresStore URI, a .jsonl file of Item.dict() lines, "
        "or an SGAM file (its current memories only; `sgam embed` gives a file vectors "
        "in place, with its history)",
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
    add_embedding_option(imports, "embed with the bundled model")
    imports.add_argument("--json", action="store_true", help="machine-readable output")
    imports.set_defaults(func=cmd_import)

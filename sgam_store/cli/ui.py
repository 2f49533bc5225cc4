"""`sgam ui`: serve the memory inspector (`sgam_store.ui`) on loopback.

It binds 127.0.0.1 on a free port unless told otherwise, prints the address, and opens
a browser only with `--open`. The store is opened read-only unless `--allow-writes`, so
serving it never migrates or writes the file. The app has no authentication of its own,
so another `--host` than loopback prints a warning. Starlette, Jinja2 and uvicorn come with the
`ui` extra; without them the command says how to get them.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import webbrowser
from typing import Any

from sgam_store.cli.common import (
    add_embedding_option,
    add_schema_option,
    existing_store,
    search_index,
)
from sgam_store.core.hosts import is_loopback

UI_EXTRA = ("starlette", "jinja2", "uvicorn", "markupsafe")


def add_ui_command(sub: Any) -> None:
    parser = sub.add_parser("ui", help="browse the store in a local web inspector")
    parser.add_argument("--db", required=True, help="SQLite file or PostgreSQL URI")
    add_schema_option(parser)
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--tenant", default=None, help="show only this tenant")
    parser.add_argument(
        "--allow-writes", action="store_true", help="enable recording and undoing review decisions"
    )
    parser.add_argument("--open", action="store_true", help="open the page in a browser")
    add_embedding_option(parser)
    parser.set_defaults(func=cmd_ui)


def cmd_ui(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from sgam_store.ui import create_app
    except ModuleNotFoundError as exc:
        if exc.name not in UI_EXTRA:
            raise
        print(
            f"sgam: ui needs {exc.name}, from the ui extra: pip install 'sgam-store[ui]'",
            file=sys.stderr,
        )
        return 2
    # Read-only unless writes are asked for: the file is opened read-only, so serving it
    # neither migrates an older schema (refused, naming `sgam migrate`) nor moves a TTL.
    with existing_store(
        args.db, search_index(args.embedding), schema=args.schema, read_only=not args.allow_writes
    ) as store:
        app = create_app(
            store, allow_writes=args.allow_writes, tenant=args.tenant, database=args.db
        )
        sock = bind(args.host, args.port)
        url = f"http://{display_host(args.host)}:{sock.getsockname()[1]}/"
        announce(args, url)
        if args.open:
            threading.Timer(0.5, webbrowser.open, (url,)).start()
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        server.run(sockets=[sock])
    return 0


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the server starts so the address printed is
    the one that serves (port 0: the system picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def display_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def announce(args: argparse.Namespace, url: str) -> None:
    mode = "writes enabled" if args.allow_writes else "read-only"
    scope = f", tenant {args.tenant} only" if args.tenant else ""
    print(f"sgam ui: serving {url} ({mode}{scope}); Ctrl-C stops it", flush=True)
    if not is_loopback(args.host):
        print(
            f"sgam ui: warning: listening on {args.host}, beyond this machine; the inspector "
            "has no authentication of its own, so anyone who can reach it can read the store",
            file=sys.stderr,
            flush=True,
        )

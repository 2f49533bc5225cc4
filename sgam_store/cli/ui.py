"""`sgam ui`: serve the memory inspector (`sgam_store.ui`) on loopback.

It binds 127.0.0.1 on a free port unless told otherwise, prints the address, and opens
a browser only with `--open`. The app has no authentication of its own, so another
`--host` than loopback prints a warning. Starlette, Jinja2 and uvicorn come with the
`ui` extra; without them the command says how to get them.
"""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
import threading
import webbrowser
from pathlib import Path
from typing import Any

from sgam_store.engines import is_postgres_target
from sgam_store.read.embeddings import default_index
from sgam_store.store import SGAMStore

UI_EXTRA = ("starlette", "jinja2", "uvicorn", "markupsafe")


def add_ui_command(sub: Any) -> None:
    parser = sub.add_parser("ui", help="browse the store in a local web inspector")
    parser.add_argument("--db", required=True, help="SQLite file or PostgreSQL URI")
    parser.add_argument("--schema", default=None, help="PostgreSQL schema (default: public)")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--tenant", default=None, help="show only this tenant")
    parser.add_argument(
        "--allow-writes", action="store_true", help="enable recording and undoing review decisions"
    )
    parser.add_argument("--open", action="store_true", help="open the page in a browser")
    parser.add_argument(
        "--embedding",
        choices=["none", "local"],
        default="none",
        help="none: keyword search only (default); local: the bundled model",
    )
    parser.set_defaults(func=cmd_ui)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
    if not is_postgres_target(args.db) and not Path(args.db).is_file():
        raise FileNotFoundError(f"no database at {args.db}")
    options = {"schema": args.schema} if args.schema else {}
    index = default_index() if args.embedding == "local" else None
    if args.embedding == "local" and index is None:
        raise ValueError("--embedding local needs the local extra: pip install 'sgam-store[local]'")
    with SGAMStore.from_conn_string(args.db, index=index, **options) as store:
        store.setup()
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

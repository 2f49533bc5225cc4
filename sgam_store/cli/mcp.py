"""`sgam mcp`: serve one tenant's memory to MCP clients (`sgam_store.mcp`).

stdio by default, for desktop clients that start the server themselves: stdout is then
the protocol, so this command prints nothing there. `--http` serves streamable HTTP on
loopback (a free port unless told), prints the address, and accepts only requests whose
Host names this address and whose Origin, if any, is this address's: a web page on
another origin, or a DNS name rebound to 127.0.0.1, is refused by the SDK's transport
security. The `mcp` extra brings the SDK; without it the command says how to get it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any

from sgam_store.cli.common import (
    add_embedding_option,
    add_schema_option,
    engine_options,
    existing_store,
    search_index,
)
from sgam_store.cli.ui import bind, display_host
from sgam_store.core.hosts import is_loopback
from sgam_store.engines import is_postgres_target
from sgam_store.store import SGAMStore

MCP_EXTRA = ("mcp", "uvicorn", "starlette", "pydantic_settings")


def add_mcp_command(sub: Any) -> None:
    parser = sub.add_parser("mcp", help="serve one tenant's memory to MCP clients")
    parser.add_argument("--db", required=True, help="SQLite file or PostgreSQL URI")
    add_schema_option(parser)
    parser.add_argument("--tenant", required=True, help="the tenant every tool is confined to")
    parser.add_argument(
        "--read-only", action="store_true", help="offer the read tools only (no remember, forget)"
    )
    parser.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="--http bind address (127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="--http port (default: a free one)")
    add_embedding_option(parser)
    parser.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from sgam_store.mcp import create_server
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in MCP_EXTRA:
            raise
        print(
            f"sgam: mcp needs {missing}, from the mcp extra: pip install 'sgam-store[mcp]'",
            file=sys.stderr,
        )
        return 2
    with opened(args) as store:
        if not args.http:
            with own_stdout():
                create_server(store, args.tenant, read_only=args.read_only).run("stdio")
            return 0
        sock = bind(args.host, args.port)
        address = f"{display_host(args.host)}:{sock.getsockname()[1]}"
        server = create_server(
            store, args.tenant, read_only=args.read_only, transport_security=security(address)
        )
        announce(args, f"http://{address}/mcp")
        app = server.streamable_http_app()
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0


@contextmanager
def own_stdout() -> Iterator[None]:
    """The SDK's stdio transport wraps `sys.stdout.buffer` and closes it when done; give
    it a duplicate of the descriptor, so the command's own stdout stays open to exit."""
    with open(os.dup(sys.stdout.fileno()), "w", encoding="utf-8") as out, redirect_stdout(out):
        yield


@contextmanager
def opened(args: argparse.Namespace) -> Iterator[SGAMStore]:
    """A read-only server opens an existing database only; a writing one may create it
    (a client's first `remember` then has somewhere to go)."""
    index = search_index(args.embedding)
    if args.read_only or is_postgres_target(args.db) or Path(args.db).is_file():
        with existing_store(args.db, index, schema=args.schema) as store:
            yield store
        return
    options = engine_options(args.db, args.schema)
    with SGAMStore.from_conn_string(args.db, index=index, **options) as store:
        store.setup()
        yield store


def security(address: str) -> Any:
    """Host must name the address served, and Origin, when a browser sends one, must be
    it too: DNS rebinding and cross-site pages are refused (SDK transport security)."""
    from mcp.server.transport_security import TransportSecuritySettings

    host, port = address.rsplit(":", 1)
    names = [address]
    if is_loopback(host.strip("[]")):
        names = [f"{name}:{port}" for name in ("127.0.0.1", "localhost", "[::1]")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=names,
        allowed_origins=[f"http://{name}" for name in names],
    )


def announce(args: argparse.Namespace, url: str) -> None:
    mode = "read-only" if args.read_only else "reads and writes"
    print(f"sgam mcp: serving {url} (tenant {args.tenant}, {mode}); Ctrl-C stops it", flush=True)
    if not is_loopback(args.host):
        print(
            f"sgam mcp: warning: listening on {args.host}, beyond this machine; the server has "
            "no authentication of its own, so anyone who can reach it can use this tenant's "
            "memory",
            file=sys.stderr,
            flush=True,
        )

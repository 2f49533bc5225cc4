"""`sgam ui` inside `langgraph dev`: langgraph.json's `"http": {"app": "graphs.ui:app"}`
serves the inspector under /sgam/ on the server's own port, over the very store the
graphs use (the server's store from graphs/store.py, not a second connection).

Environment:
- SGAM_UI_ALLOW_WRITES=1 enables undoing review decisions (read-only otherwise);
- SGAM_UI_TENANT=T confines the inspector to tenant T.

langgraph.json's `"enable_custom_route_auth": true` puts these routes behind the auth a
deployment configures, as the server's own are; `langgraph dev` without auth serves them to
anyone who can reach it. Whatever the server's CORS middleware adds (`*` by default), the
inspector refuses other websites and foreign Host names itself (`sgam_store.ui.guard`).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from langgraph_api.store import get_store
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import Receive, Scope, Send

from sgam_store import SGAMStore
from sgam_store.ui import create_app

PREFIX = "/sgam"


class ServerInspector:
    """The inspector, built on the first request: the server's store exists only once
    the server has started, after this module was imported."""

    def __init__(self) -> None:
        self._app: Any = None
        self._lock = asyncio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            async with self._lock:
                if self._app is None:
                    self._app = await self._build()
        await self._app(scope, receive, send)

    @staticmethod
    async def _build() -> Any:
        store = await get_store()
        if not isinstance(store, SGAMStore):
            raise TypeError(f"the server's store is a {type(store).__name__}, not an SGAMStore")
        return await asyncio.to_thread(  # templates load from disk: off the event loop
            create_app,
            store,
            allow_writes=os.environ.get("SGAM_UI_ALLOW_WRITES") == "1",
            tenant=os.environ.get("SGAM_UI_TENANT") or None,
            database="the langgraph server's store",
        )


app = Starlette(routes=[Mount(PREFIX, app=ServerInspector())])

"""`sgam ui`: a local web inspector of an SGAM store (extra `sgam-store[ui]`).

`create_app(store)` is an ASGI app (Starlette) a user can mount in their own server;
`sgam ui --db ...` serves it on loopback, and langgraph.json's `http.app` mounts it
under /sgam/ of `langgraph dev`. See docs/ui.md.
"""

from sgam_store.engines import mask_uri
from sgam_store.ui.app import create_app

__all__ = ["create_app", "mask_uri"]

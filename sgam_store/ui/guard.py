"""What stands between the inspector and other websites, before any page is rendered.

The inspector has no login: on loopback, whoever can reach the port is the person at this
machine. Two ways let another website act as that person, and the guard shuts both:

- DNS rebinding: a page on attacker.example re-points its name at 127.0.0.1 and reads
  the inspector as its own origin. Served on loopback, the inspector answers only a Host
  header naming loopback (localhost or a loopback address) and its own port.
- Cross-site requests: a page of another origin fetches a page (to read values and the
  CSRF token) or posts a form. Under `langgraph dev` the server's CORS middleware, which
  wraps every mounted app, adds `Access-Control-Allow-Origin: *`, so a response the
  inspector sends is readable by any origin. The guard therefore sends nothing worth
  reading: a request that a browser marks as coming from another site or origin
  (`Sec-Fetch-Site`, or an `Origin` header that is not the request's own host) gets a
  one-line 403, unless it is a plain top-level GET navigation (someone following a
  link), whose response the linking page cannot read.

Every response, refusals, JSON twins, static files and redirects included, carries
the security headers (CSP, nosniff, X-Frame-Options).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sgam_store.core.hosts import is_loopback

# Defence in depth behind the templates' escaping: only the app's own script and
# stylesheet run, forms post only to the app, and no page can be framed (the Undo button)
# by another site, old browsers included (X-Frame-Options).
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}
DEFAULT_PORTS = {"http": 80, "https": 443}


def host_refusal(scope: Scope, headers: Headers) -> str | None:
    """Why the Host header is refused, or None. Checked only when the connection reached a
    loopback address: beyond loopback the inspector cannot know the names it is served
    under (`sgam ui --host` warns that anyone who reaches it can read it)."""
    server = scope.get("server")
    if not server or server[1] is None or not is_loopback(str(server[0])):
        return None
    try:
        named = urlsplit("//" + headers.get("host", ""))
        name, port = named.hostname, named.port
    except ValueError:
        return "unreadable Host header"
    if name is None or not is_loopback(name):
        return "this inspector answers only to localhost and loopback addresses"
    if (port or DEFAULT_PORTS.get(scope.get("scheme", "http"))) != server[1]:
        return "this inspector answers only on its own port"
    return None


def cross_site(scope: Scope, headers: Headers) -> bool:
    """True when a browser says the request comes from another site or origin, and it is
    not a top-level GET navigation (a followed link or a typed address, whose answer the
    page that linked cannot read). A browser that predates Sec-Fetch-* still sends
    `Origin` on every cross-origin fetch and form post."""
    mode, origin = headers.get("sec-fetch-mode"), headers.get("origin")
    if (
        scope["method"] in ("GET", "HEAD")
        and headers.get("sec-fetch-dest", "document") == "document"
        and (mode == "navigate" or (mode is None and origin is None))
    ):
        return False
    if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return True
    if origin is None:
        return False  # no browser's cross-origin request (curl, a script, a test client)
    try:
        return urlsplit(origin.lower()).netloc != headers.get("host", "").lower()
    except ValueError:  # not an origin a browser sends
        return True


class Guard:
    """ASGI middleware: refuse foreign hosts and cross-site requests before routing, and
    add the security headers to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        headers = Headers(scope=scope)
        refusal = host_refusal(scope, headers)
        if refusal is not None:
            await PlainTextResponse(refusal, status_code=400)(scope, receive, secured)
        elif cross_site(scope, headers):
            refused = "refused: a request from another site (see docs/ui.md, Safety)"
            await PlainTextResponse(refused, status_code=403)(scope, receive, secured)
        else:
            await self.app(scope, receive, secured)

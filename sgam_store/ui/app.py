"""The inspector as an ASGI app: `create_app(store)` for `sgam ui`, `langgraph dev`'s
`http.app`, or any Starlette/ASGI server a user mounts it in.

Every page has a JSON twin (`/key.json?...` or `?format=json`). Read-only unless
`allow_writes`; a write is a POST carrying the app's CSRF token and goes through the
store's public API. Templates autoescape every stored value. Before any of it,
`guard.Guard` refuses other websites and foreign Host names, wherever the app is mounted.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sgam_store.core.errors import SGAMError
from sgam_store.engines import mask_uri
from sgam_store.ui import jsontext
from sgam_store.ui.guard import HEADERS, Guard
from sgam_store.ui.pages import PAGES, TEMPLATE_GLOBALS, Inspector, NotFound, Page
from sgam_store.ui.params import BadParameter, When
from sgam_store.ui.writes import ACTIONS, VERDICTS

if TYPE_CHECKING:
    from sgam_store.store import SGAMStore

STATIC = Path(__file__).parent / "static"
MAX_FORM = 16_384  # bytes of a write's form: a few short fields (parsed here, no multipart)


def create_app(
    store: SGAMStore,
    *,
    allow_writes: bool = False,
    tenant: str | None = None,
    database: str | None = None,
    root_path: str = "",
) -> Starlette:
    """The memory inspector over `store`.

    `tenant` confines every page to that tenant (through `for_tenant`); `allow_writes`
    enables undoing review decisions; `database` is the address shown in the header
    (its password masked); `root_path` is where the app is mounted (e.g. "/sgam"), for
    its links when the server does not pass it in the ASGI scope.
    """
    if tenant is not None:
        store.for_tenant(tenant)  # a bad tenant name fails here, not on the first page
    ui = Ui(Inspector(store, tenant, allow_writes), mask_uri(database or ""), root_path)
    routes = [Route("/", ui.home)]
    for name in PAGES:
        routes += [Route(f"/{name}", ui.page(name)), Route(f"/{name}.json", ui.page(name))]
    routes += [
        *(Route(f"/review/{name}", ui.post(name), methods=["POST"]) for name in ACTIONS),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard)],
        exception_handlers={404: ui.missing, 405: ui.missing, 500: crashed},
    )


class Ui:
    """Renders pages and handles the one write (undo); holds the per-app CSRF token."""

    def __init__(self, app: Inspector, database: str, root_path: str) -> None:
        self.app = app
        self.database = database
        self.root_path = root_path.rstrip("/")
        self.csrf = secrets.token_urlsafe(32)
        self.env = Environment(
            loader=PackageLoader("sgam_store.ui", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
        )
        self.env.globals.update(TEMPLATE_GLOBALS)  # times people read (pages.times)

    def base(self, request: Request) -> str:
        return request.scope.get("root_path", "").rstrip("/") or self.root_path

    def home(self, request: Request) -> Response:
        if self.app.tenant is not None:
            target = self.url(request, "subjects", tenant=self.app.tenant)
            return RedirectResponse(target, status_code=302)
        return self.page("tenants")(request)

    def page(self, name: str) -> Callable[[Request], Response]:
        """A page's endpoint. It is a plain function, so Starlette runs it in a worker
        thread: the store's reads never block the server's event loop."""

        def endpoint(request: Request) -> Response:
            query = dict(request.query_params)
            wants_json = request.url.path.endswith(".json") or query.get("format") == "json"
            try:
                view = PAGES[name](self.app, query)
                data = view.data()
            except NotFound as exc:
                return self.error(request, 404, str(exc), wants_json)
            except ValueError as exc:  # BadParameter, or the store refusing the input
                return self.error(request, 400, str(exc), wants_json)
            if wants_json:
                return json_response({"page": name, "when": vars(view.when), **data})
            return self.render(request, view, data)

        return endpoint

    def render(self, request: Request, view: Page, data: dict[str, Any]) -> Response:
        html = self.env.get_template(view.template).render(
            **data,
            title=view.title,
            when=view.when,
            ui=self.context(request, view.when),
        )
        return HTMLResponse(html)

    def context(self, request: Request, when: When) -> dict[str, Any]:
        """What the layout needs: links that keep the point in time, the CSRF token."""

        def url(page: str, **params: Any) -> str:
            return self.url(request, page, **{**when.params(), **params})

        return {
            "url": url,
            "static": f"{self.base(request)}/static",
            "database": self.database,
            "confined": self.app.tenant,
            "writes": self.app.allow_writes,
            "csrf": self.csrf,
            "verdicts": VERDICTS,
            "query": {
                k: v for k, v in request.query_params.items() if k not in When.__annotations__
            },
            "markup": Markup,
        }

    def url(self, request: Request, page: str, **params: Any) -> str:
        """A page's address under the app's mount, with its parameters encoded."""
        clean = {k: v for k, v in params.items() if v not in (None, "")}
        tail = f"?{urlencode(clean)}" if clean else ""
        return f"{self.base(request)}/{page}{tail}"

    def error(self, request: Request, status: int, message: str, wants_json: bool) -> Response:
        if wants_json:
            return json_response({"error": message, "status": status}, status)
        html = self.env.get_template("error.html").render(
            title=f"{status}",
            status=status,
            message=message,
            when=When(),
            ui=self.context(request, When()),
        )
        return HTMLResponse(html, status_code=status)

    async def missing(self, request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        wants_json = request.url.path.endswith(".json")
        return await run_in_threadpool(self.error, request, status, "no such page", wants_json)

    def post(self, action: str) -> Callable[[Request], Any]:
        """A write's endpoint: a POST with the app's CSRF token, writes enabled, the
        form's tenant allowed; then `writes.ACTIONS[action]`, and back to the review.
        A read-only app reads no body at all; a writable one reads at most MAX_FORM bytes."""

        async def endpoint(request: Request) -> Response:
            if not self.app.allow_writes:
                message = "this inspector is read-only (--allow-writes)"
                return self.error(request, 403, message, False)
            body = await read_form(request)
            if body is None:
                return self.error(request, 413, f"a form is at most {MAX_FORM} bytes", False)
            fields = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
            return await run_in_threadpool(self.write, request, action, dict(fields))

        return endpoint

    def write(self, request: Request, action: str, form: dict[str, str]) -> Response:
        token = form.get("csrf", "")
        if not hmac.compare_digest(token.encode(), self.csrf.encode()):
            return self.error(request, 403, "missing or wrong CSRF token", False)
        try:
            tenant = self.app.tenant_of(form)
            ACTIONS[action](self.app, tenant, form)
        except NotFound as exc:
            return self.error(request, 404, str(exc), False)
        except BadParameter as exc:
            return self.error(request, 400, str(exc), False)
        except SGAMError as exc:  # the premise no longer holds (already undone, not current)
            return self.error(request, 409, str(exc), False)
        return RedirectResponse(self.url(request, "review", tenant=tenant), status_code=303)


async def crashed(request: Request, exc: Exception) -> Response:
    """A failure the pages did not foresee: a plain 500 (the server's log has the
    traceback), with the security headers, which the guard inside it cannot add."""
    return PlainTextResponse("the inspector failed on this request", 500, headers=HEADERS)


async def read_form(request: Request) -> bytes | None:
    """The request's body, or None when it is larger than MAX_FORM: refused from its
    Content-Length before a byte is read, or, sent without one (chunked), as soon as
    the bytes read pass the limit, never read to the end."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_FORM:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            return None
    return bytes(body)


def json_response(data: Any, status: int = 200) -> Response:
    body = jsontext.text(data, indent=2)
    return Response(body, status_code=status, media_type="application/json")

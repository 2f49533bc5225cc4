"""`sgam ui` in a real browser: the system's Chromium (Debian's `chromium` package; .ci/run
installs it), driven by Playwright's Python package, never Playwright's own download.

On the demo's replayed store: every page opens, a click path leads from a tenant to a
key, the picture has one bar per believed version and the table matches `history`, the
"as of" control re-answers, search matches `search`, an undo restores the old value,
and hostile stored text runs nothing. Any console error or dialog fails the test. The
PNG files under docs/ that docs/ui.md shows are taken here: every run takes them, and
`SGAM_SCREENSHOTS=1` writes them into docs/ (otherwise into a temporary folder, so a test
run leaves the work tree clean).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")

from sgam_store import SGAMStore  # noqa: E402
from sgam_store.ui import create_app  # noqa: E402
from tests.ui_store import HOSTILE_TENANT, IMG, JS_URL, SCRIPT, seed  # noqa: E402

pytestmark = pytest.mark.slow
DOCS = Path(__file__).resolve().parent.parent / "docs"
SHOTS = DOCS if os.environ.get("SGAM_SCREENSHOTS") == "1" else Path(tempfile.mkdtemp())
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


class Served:
    """An app served by uvicorn on a free loopback port, in a thread of this process."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.sock.close()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SGAMStore]:
    path = str(tmp_path_factory.mktemp("browser") / "replayed.db")
    with SGAMStore.from_conn_string(path) as store:
        store.setup()
        seed(store)
        yield store


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail("no chromium: apt-get install -y chromium (.ci/run does)")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def served(seeded: SGAMStore) -> Iterator[str]:
    with Served(create_app(seeded, database="replayed.db")) as s:
        yield s.url


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page that records console errors, uncaught errors and dialogs; the test fails
    on any of them (a dialog would be an injected script running)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    trouble: list[str] = []
    tab.on("console", lambda m: trouble.append(f"console: {m.text}") if m.type == "error" else 0)
    tab.on("pageerror", lambda e: trouble.append(f"page error: {e}"))

    def dialog(d: Any) -> None:
        trouble.append(f"dialog: {d.message}")
        d.dismiss()

    tab.on("dialog", dialog)
    yield tab
    context.close()
    assert trouble == []


def test_every_page_opens(page: Any, served: str) -> None:
    paths = [
        ("/", "Tenants"),
        ("/subjects?tenant=acme", "Subjects of acme"),
        ("/keys?tenant=acme&subject=mira", "Keys of"),
        ("/key?tenant=acme&subject=mira&attribute=passport_deadline", "passport_deadline"),
        ("/search?tenant=acme&q=passport", "Search acme"),
        ("/review?tenant=acme", "Corrections under review"),
        ("/changes?tenant=acme", "What changed"),
        ("/episode?tenant=acme&id=e2", "Episode e2"),
    ]
    for path, heading in paths:
        response = page.goto(served + path)
        assert response.status == 200, path
        assert heading in page.locator("h1").inner_text(), path
    page.goto(served + "/changes?tenant=acme")
    page.screenshot(path=str(SHOTS / "ui-changes.png"), full_page=True)


def test_click_from_a_tenant_to_a_key_and_read_its_picture(
    page: Any, served: str, seeded: SGAMStore
) -> None:
    page.goto(served + "/")
    page.screenshot(path=str(SHOTS / "ui-tenants.png"))
    page.get_by_role("link", name="acme", exact=True).click()
    page.get_by_role("link", name="mira", exact=True).click()
    page.get_by_role("link", name="passport_deadline", exact=True).click()
    assert "attribute=passport_deadline" in page.url
    history = seeded.history("acme", "mira", "passport_deadline")
    bars = page.locator('svg g.version[data-believed="true"]')
    assert bars.count() == len(history)
    drawn = {bars.nth(i).get_attribute("data-fact-id") for i in range(bars.count())}
    assert drawn == {str(f.fact_id) for f in history}
    assert page.locator("svg g.version[data-open='true']").count() >= 1
    rows = page.locator("#versions tbody tr")
    assert rows.count() == len(history)
    for i, fact in enumerate(history):
        cells = rows.nth(i).locator("td")
        assert cells.nth(0).inner_text() == f"#{fact.fact_id}"
        assert cells.nth(2).inner_text() == fact.value
    assert page.locator("#value").inner_text() == "2026-06-30"
    page.screenshot(path=str(SHOTS / "ui-key.png"), full_page=True)


def test_as_of_june_2_shows_the_value_then(page: Any, served: str) -> None:
    page.goto(served + "/key?tenant=acme&subject=mira&attribute=passport_deadline")
    page.fill("#valid_at", "2026-06-02")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**valid_at=2026-06-02**")
    assert page.locator("#value").inner_text() == "2026-07-15"
    page.get_by_role("link", name="mira").first.click()  # the URL carries the instant on
    assert "valid_at=2026-06-02" in page.url
    row = page.locator("#keys tr", has_text="passport_deadline")
    assert "2026-07-15" in row.inner_text()


def test_search_hits_are_the_stores(page: Any, served: str, seeded: SGAMStore) -> None:
    page.goto(served + "/search?tenant=acme")
    page.fill("#q", "passport deadline")
    page.keyboard.press("Enter")
    page.wait_for_selector("#hits")
    expected = seeded.for_tenant("acme").search((), query="passport deadline", limit=10)
    rows = page.locator("#hits tbody tr")
    assert rows.count() == len(expected) > 0
    explained = seeded.for_tenant("acme").explain_search((), "passport deadline", limit=10)
    for i, (item, why) in enumerate(zip(expected, explained, strict=True)):
        cells = rows.nth(i).locator("td")
        assert cells.nth(5).inner_text() == item.key
        assert float(cells.nth(1).inner_text()) == pytest.approx(item.score, abs=5e-5)
        assert cells.nth(2).inner_text() == f"{why.keyword:.2f} (#{why.keyword_rank})"
    page.screenshot(path=str(SHOTS / "ui-search.png"), full_page=True)


def test_hostile_values_run_nothing(page: Any, served: str) -> None:
    """The page fixture fails on any dialog or error; here each hostile field is shown."""
    for path, params in [
        ("/subjects", {"tenant": "acme"}),
        ("/keys", {"tenant": "acme", "subject": SCRIPT}),
        ("/key", {"tenant": "acme", "subject": SCRIPT, "attribute": IMG}),
        ("/episode", {"tenant": "acme", "id": "x-4"}),
        ("/search", {"tenant": "acme", "q": "alert"}),
        ("/changes", {"tenant": "acme"}),
        ("/", {}),
        ("/keys", {"tenant": HOSTILE_TENANT, "subject": IMG}),
    ]:
        assert page.goto(f"{served}{path}?{urlencode(params)}").status == 200
        assert page.locator("script").count() == 1  # the app's own ui.js only
        assert page.locator("img").count() == 0
    page.goto(f"{served}/keys?{urlencode({'tenant': 'acme', 'subject': SCRIPT})}")
    assert JS_URL in page.locator("#keys").inner_text()
    hrefs = page.eval_on_selector_all("a", "links => links.map(a => a.getAttribute('href'))")
    assert not [h for h in hrefs if h.lower().startswith("javascript:")]
    for link in page.locator("#keys a").all():  # clicking what a value became is harmless
        link.click()
        page.go_back()


def test_with_writes_an_undo_restores_the_old_value_and_a_review_is_recorded(
    browser: Any, tmp_path: Path
) -> None:
    with SGAMStore.from_conn_string(str(tmp_path / "undo.db")) as store:
        store.setup()
        seed(store)
        assert store.fact_at("acme", "mira", "answer_style") is None  # superseded
        with Served(create_app(store, allow_writes=True)) as served:
            context = browser.new_context()
            tab = context.new_page()
            errors: list[str] = []
            tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else 0)
            tab.on("dialog", lambda d: (errors.append(d.message), d.dismiss()))
            tab.goto(served.url + "/review?tenant=acme")
            tab.screenshot(path=str(SHOTS / "ui-review.png"), full_page=True)
            tab.get_by_role("button", name="Undo").click()
            tab.wait_for_url("**/review?tenant=acme")
            assert "undone" in tab.locator("#decisions").inner_text()
            tab.goto(served.url + "/key?tenant=acme&subject=mira&attribute=answer_style")
            assert tab.locator("#value").inner_text() == "detailed"
            # a person reviews the queued note: it supersedes the passport deadline
            tab.goto(served.url + "/review?tenant=acme")
            deadline = store.fact_at("acme", "mira", "passport_deadline")
            row = tab.locator(f'tr[data-candidate="{deadline.fact_id}"]')
            row.get_by_label("supersedes").check()
            tab.fill("input[name=reason]", "the note restates the deadline")
            tab.get_by_role("button", name="Record decision").click()
            tab.wait_for_url("**/review?tenant=acme")
            assert "the note restates the deadline" in tab.locator("#decisions").inner_text()
            assert store.fact_at("acme", "mira", "passport_deadline") is None
            context.close()
            assert errors == []
        assert store.fact_at("acme", "mira", "answer_style").value == "detailed"

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
from sgam_store.testing.realistic import build  # noqa: E402
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


def test_the_demo_changes_walk_to_their_end_and_its_review_is_one_page(
    page: Any, served: str, seeded: SGAMStore
) -> None:
    """On the demo file: the change feed, five a page, walked to its last page, every
    change shown once; its one queued memory and one decision make one page each."""
    whole = seeded.changes("2000-01-01T00:00:00Z", tenant_id="acme", limit=200)
    pages = -(-len(whole) // 5)
    assert walk(page, f"{served}/changes?tenant=acme&limit=5", most=50, **CHANGES) == pages > 1
    assert page.locator("#changes tbody tr").count() == len(whole) - 5 * (pages - 1)
    for which in (QUEUE, DECISIONS):
        assert walk(page, f"{served}/review?tenant=acme&limit=1&per_page=1", 5, **which) == 1


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
    versions = seeded.versions("acme", "mira", "passport_deadline")  # retired ones too
    rows = page.locator("#versions tbody tr")
    assert rows.count() == len(versions) == page.locator("svg g.version").count()
    for i, fact in enumerate(versions):
        cells = rows.nth(i).locator("td")
        assert cells.nth(0).inner_text() == f"#{fact.fact_id}"
        assert cells.nth(1).inner_text() == fact.value
    assert page.locator("#value").inner_text() == "2026-06-30"
    page.screenshot(path=str(SHOTS / "ui-key.png"), full_page=True)


def test_as_of_june_2_shows_the_value_then(page: Any, served: str) -> None:
    page.goto(served + "/key?tenant=acme&subject=mira&attribute=passport_deadline")
    page.fill("#valid_at", "2026-06-02")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**valid_at=2026-06-02**")
    assert page.locator("#value").inner_text() == "2026-07-15"
    assert page.input_value("#valid_at") == "2026-06-02T00:00:00Z"  # not ...00.000000Z
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
        score = cells.nth(1).inner_text().split()[0]  # then "set by #n", if another set it
        assert float(score) == pytest.approx(item.score, abs=5e-5)
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


# ---------------------------------------------------------------- on a real agent's memory
#
# The generated store (sgam_store.testing.realistic) in both layouts, 10k facts each:
# uuid keys, {"content": ...} values of several KB, msg:<uuid> sources, a key rewritten
# 525 times, hundreds of subjects and tenants, a review queue hundreds deep, hostile
# names. Built once per session; every window is 1400 px wide.

REALISTIC_FACTS = 10_000
WIDE = {"width": 1400, "height": 900}


@pytest.fixture(scope="session", params=["sgam", "langmem"])
def real(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """(what the generator made, its store, the served app's address) per layout."""
    path = str(tmp_path_factory.mktemp(f"real-{request.param}") / "memory.db")
    made = build(path, layout=request.param, facts=REALISTIC_FACTS)
    with SGAMStore.from_conn_string(path) as store, Served(create_app(store)) as served:
        yield made, store, served.url


@pytest.fixture
def wide(browser: Any) -> Iterator[Any]:
    """A 1400 px window that fails the test on any console error or dialog."""
    context = browser.new_context(viewport=WIDE)
    tab = context.new_page()
    trouble: list[str] = []
    tab.on("console", lambda m: trouble.append(f"console: {m.text}") if m.type == "error" else 0)
    tab.on("pageerror", lambda e: trouble.append(f"page error: {e}"))
    tab.on("dialog", lambda d: (trouble.append(f"dialog: {d.message}"), d.dismiss()))
    yield tab
    context.close()
    assert trouble == []


def fits(tab: Any) -> None:
    """Nothing on the page is wider than the window: no horizontal scrolling."""
    width = tab.evaluate("document.documentElement.scrollWidth")
    assert width <= WIDE["width"], f"{tab.url} is {width} px wide"


def walk(
    tab: Any, url: str, most: int, rows: str = "main table tbody tr", pager: str = ".pager"
) -> int:
    """Open a list and follow its "next" links (those of its `pager`, where a page has
    several lists), at most `most` pages: each answers 200, fits the window, says its
    number and shows `rows` no earlier page showed. Returns how many pages it saw."""
    response, pages, seen = tab.goto(url), 1, set()
    while True:
        assert response.status == 200, tab.url
        fits(tab)
        assert tab.locator(f"{pager} span").inner_text() == f"page {pages}"
        shown = set(tab.locator(rows).all_inner_texts())
        assert shown and not shown & seen, tab.url
        seen |= shown
        following = tab.locator(f'{pager} a[rel="next"]')
        if not following.count() or pages == most:
            return pages
        with tab.expect_navigation() as navigation:
            following.click()
        response, pages = navigation.value, pages + 1


def address(made: Any, store: SGAMStore, key: tuple[tuple[str, ...], str]) -> dict[str, str]:
    """A generated key's page parameters (the layout says which label is the tenant)."""
    tenant, subject = store.layout.split(key[0])
    return {"tenant": tenant, "subject": subject, "attribute": key[1]}


def test_every_list_walks_past_its_first_page(wide: Any, real: tuple) -> None:
    """Tenants, a big tenant's subjects, its keys and one subject's keys: each list of
    more than one page is walked past page 1 (issue 38: the pager was a 500 on the first
    page); the name lists and a subject's keys page by keyset, the tenant's keys by offset."""
    made, store, url = real
    big = urlencode({"tenant": made.big_tenant})
    tenant, subject = store.layout.split(made.long_memory[0])
    one = urlencode({"tenant": tenant, "subject": subject})
    walked = {
        "tenants": walk(wide, f"{url}/tenants", most=6),
        "subjects": walk(wide, f"{url}/subjects?{big}", most=3),
        "keys": walk(wide, f"{url}/keys?{big}", most=3),
        "a subject's keys": walk(wide, f"{url}/keys?{one}&per_page=5", most=3),
    }
    longer = {
        "sgam": ("subjects", "keys", "a subject's keys"),
        "langmem": ("tenants", "keys", "a subject's keys"),
    }[made.layout]
    assert all(walked[name] > 1 for name in longer), walked


QUEUE = {"rows": "#queue section.review", "pager": "#queue-pager"}
DECISIONS = {"rows": "#decisions tbody tr", "pager": "#decisions-pager"}
CHANGES = {"rows": "#changes tbody tr", "pager": "#changes-pager"}


def test_the_review_and_the_changes_walk_past_their_first_page(wide: Any, real: tuple) -> None:
    """The review's queue (hundreds deep) and its decisions, and the change feed: each
    pages by keyset, and each is walked past page 1 (issue 38: they had no next link)."""
    made, _, url = real
    big = urlencode({"tenant": made.big_tenant})
    walked = {
        "queue": walk(wide, f"{url}/review?{big}", most=3, **QUEUE),
        "decisions": walk(wide, f"{url}/review?{big}&per_page=5", most=3, **DECISIONS),
        "changes": walk(wide, f"{url}/changes?{big}", most=3, **CHANGES),
    }
    assert walked == {"queue": 3, "decisions": 2 if made.layout == "langmem" else 3, "changes": 3}
    # Each list's link keeps the other where it was: the decisions' page 2 of the queue's 2.
    wide.goto(f"{url}/review?{big}&per_page=5")
    wide.locator('#queue-pager a[rel="next"]').click()
    wide.locator('#decisions-pager a[rel="next"]').click()
    assert wide.locator("#queue-pager span").inner_text() == "page 2"
    assert wide.locator("#decisions-pager span").inner_text() == "page 2"


# How many line boxes each element's text takes.
ONE_LINE = """els => els.map(e => {
    const r = document.createRange(); r.selectNodeContents(e); return r.getClientRects().length;
})"""


def test_a_key_rewritten_525_times_draws_every_version(wide: Any, real: tuple) -> None:
    """A page of versions at a time (the picture and the table the same ones, in write
    order), walked to the end: every version the store wrote shows once."""
    made, store, url = real
    params = address(made, store, made.deep_key)
    versions = store.versions(*params.values())
    assert len({v.fact_id for v in versions}) >= 500
    response, seen = wide.goto(f"{url}/key?{urlencode(params)}"), []
    while True:
        assert response.status == 200, wide.url
        fits(wide)
        rows = wide.locator("#versions tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.factId)"
        )
        bars = wide.locator("svg g.version").evaluate_all("gs => gs.map(g => g.dataset.factId)")
        assert rows == bars and rows
        lines = wide.locator("#versions td.id").evaluate_all(ONE_LINE)
        assert set(lines) == {1}, lines  # "#101" never breaks into "#10" and "1"
        seen += rows
        following = wide.locator('a[rel="next"]')
        if not following.count():
            break
        with wide.expect_navigation() as navigation:
            following.click()
        response = navigation.value
    assert seen == [str(v.fact_id) for v in versions]


def test_a_langmem_memory_of_several_kb_reads_as_its_content(wide: Any, real: tuple) -> None:
    """Shown as its text, not as {"content": ...}; cut once, the rest one click away."""
    made, store, url = real
    params = address(made, store, made.long_memory)
    assert wide.goto(f"{url}/key?{urlencode(params)}").status == 200
    fits(wide)
    value = store.fact_at(*params.values()).value
    text = value["content"] if isinstance(value, dict) else value
    assert len(text) >= 3000
    shown = wide.locator("#value")
    assert not shown.inner_text().startswith("{") and len(shown.inner_text()) < 400
    shown.locator("summary").click()
    assert " ".join(shown.inner_text().split()) == " ".join(text.split())


def test_every_page_fits_a_1400px_window(wide: Any, real: tuple) -> None:
    """uuid keys, msg:<uuid> sources, KB-long memories, the change feed, an episode and
    the review queue: no page scrolls sideways, and no review evidence is raw JSON."""
    made, store, url = real
    big = {"tenant": made.big_tenant}
    memory = address(made, store, made.long_memory)
    said = store.versions(*memory.values())[0].source_episode_id
    paths = [
        ("/keys", {**big, "subject": memory["subject"]}),
        ("/search", {**big, "q": "prefer"}),
        ("/changes", big),
        ("/episode", {**big, "id": said}),
        ("/review", big),
    ]
    for path, params in paths:
        response = wide.goto(f"{url}{path}?{urlencode(params)}")
        assert response.status == 200, (path, params)
        fits(wide)
    queued = wide.locator("section.review")  # each with its candidates, or their search
    shown = wide.locator("section.review table.candidates, section.review .search-instead")
    assert queued.count() == shown.count() > 0
    evidence = wide.locator("#decisions td.evidence").all_inner_texts()
    assert evidence and not [e for e in evidence if "\\u0027" in e or e.lstrip().startswith("{")]


def test_keys_named_with_spaces_and_html_fit_a_1400px_window(wide: Any, real: tuple) -> None:
    """Until parameters are taken exactly as given (issue 39, finding 9, another
    branch), these keys' pages are 404s: the test then says so instead of failing."""
    made, store, url = real
    for key in (made.hostile_key, made.long_key):
        params = address(made, store, key)
        assert store.fact_at(*params.values()) is not None
        page_url = f"{url}/key?{urlencode(params)}"
        if wide.request.get(page_url).status == 404:  # asked aside: no console error
            pytest.xfail("the UI strips the names' spaces (issue 39, finding 9)")
        assert wide.goto(page_url).status == 200
        fits(wide)

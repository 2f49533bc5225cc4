"""The inspector attacked as issue 39 attacked it: a real `sgam ui` (uvicorn on loopback)
and a real `langgraph dev`, driven over a socket with the headers a hostile page makes a
browser send (Origin, Sec-Fetch-*, a rebound Host), a Chromium page of another origin,
and the bytes of the database file for "read-only changes nothing"."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from sgam_store import SGAMStore
from sgam_store.ui import create_app, jsontext
from tests.fixtures.make_fixture import FIXTURE
from tests.ui_store import seed

ENGINES = ("sqlite", "postgres")  # the `store` fixture's tests run on both engines
EVIL = "http://evil.example"
TOKEN = re.compile(rb'name="csrf" value="([^"]+)"')


@dataclass
class Answer:
    """An HTTP response as read off the socket."""

    status: int
    headers: dict[str, str]
    body: bytes


def request(
    port: int,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    *,
    host: str | None = None,
    timeout: float = 10,
) -> Answer:
    """One request over a fresh connection, headers exactly as given (no client library
    adds or normalizes any), read until the server closes."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host or f'127.0.0.1:{port}'}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if body and "Content-Length" not in (headers or {}):
        lines.append(f"Content-Length: {len(body)}")
    lines += ["Connection: close", "", ""]
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall("\r\n".join(lines).encode("latin-1") + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *fields = head.decode("latin-1").split("\r\n")
    parsed = dict(f.split(": ", 1) for f in fields)
    return Answer(int(status_line.split()[1]), {k.lower(): v for k, v in parsed.items()}, rest)


@contextmanager
def sgam_ui(db: str, *flags: str) -> Iterator[int]:
    """The real `sgam ui` command on loopback; yields its port, always stops it."""
    command = [sys.executable, "-m", "sgam_store.cli", "ui", "--db", db, *flags]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if found is None:
            proc.kill()
            pytest.fail(f"sgam ui did not start: {line}{proc.stderr.read()}")
        yield int(found.group(1))
    finally:
        proc.terminate()
        proc.communicate(timeout=15)


@dataclass
class Served:
    """A real `sgam ui` over a seeded SQLite file, for a whole module of requests."""

    port: int
    path: str
    decision_id: int  # a 'supersedes' review decision of acme's
    before: tuple[str, int]  # the file as it was before the server started (files_of)


@contextmanager
def serving(folder: Path, *flags: str) -> Iterator[Served]:
    path = str(folder / "inspected.db")
    with SGAMStore.from_conn_string(path) as store:
        store.setup()
        decision_id = seed(store)
    before = files_of(path)
    with sgam_ui(path, *flags) as port:
        yield Served(port, path, decision_id, before)


@pytest.fixture(scope="module")
def writable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("writable"), "--allow-writes") as served:
        yield served


@pytest.fixture(scope="module")
def read_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("read_only")) as served:
        yield served


def undone(path: str) -> bool:
    """Whether the seeded 'supersedes' decision was undone: its undo brings the
    superseded answer_style back."""
    with SGAMStore.from_conn_string(path) as store:
        return store.fact_at("acme", "mira", "answer_style") is not None


def digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def files_of(db: str) -> tuple[str, int]:
    """The database file's digest, and the bytes of its write-ahead log (a reader in WAL
    mode may leave an empty one and its index behind, never a logged change)."""
    wal = Path(db + "-wal")
    return digest(db), wal.stat().st_size if wal.exists() else 0


# ---------------------------------------------------------------- Host (DNS rebinding)


def test_sgam_ui_on_loopback_answers_only_loopback_host_names(writable: Served) -> None:
    """A rebinding page's requests carry its own name as Host: refused before any page."""
    port = writable.port
    for host in ("attacker.example", f"attacker.example:{port}", f"127.0.0.1:{port + 1}"):
        refused = request(port, "GET", "/review?tenant=acme", host=host)
        assert refused.status == 400, host
        assert b"csrf" not in refused.body and b"answer_style" not in refused.body
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
        assert request(port, "GET", "/review?tenant=acme", host=host).status == 200, host


# ---------------------------------------------------------------- cross-site requests

CROSS_SITE_READS = {
    "a fetch from another site": {
        "Origin": EVIL,
        "Sec-Fetch-Site": "cross-site",
        "Sec-Fetch-Mode": "cors",
        "Sec-Fetch-Dest": "empty",
    },
    "a fetch from another port of this machine": {
        "Origin": "http://127.0.0.1:1",
        "Sec-Fetch-Site": "same-site",
        "Sec-Fetch-Mode": "cors",
        "Sec-Fetch-Dest": "empty",
    },
    "a browser without Sec-Fetch-*": {"Origin": EVIL},
    "a sandboxed page": {"Origin": "null", "Sec-Fetch-Mode": "cors"},
    "a frame": {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate",
                "Sec-Fetch-Dest": "iframe"},
    "a script tag": {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors",
                     "Sec-Fetch-Dest": "script"},
}  # fmt: skip


def test_sgam_ui_sends_nothing_to_a_cross_site_read(writable: Served) -> None:
    port = writable.port
    for why, headers in CROSS_SITE_READS.items():
        for path in ("/review?tenant=acme", "/keys.json?tenant=acme&subject=mira"):
            refused = request(port, "GET", path, headers)
            assert refused.status == 403, (why, path)
            assert b"csrf" not in refused.body and b"2026-" not in refused.body, why
    link = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate",
            "Sec-Fetch-Dest": "document"}  # fmt: skip
    followed = request(port, "GET", "/review?tenant=acme", link)
    assert followed.status == 200  # a link from elsewhere opens; the linker reads nothing
    same = {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin",
            "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}  # fmt: skip
    assert request(port, "GET", "/keys.json?tenant=acme&subject=mira", same).status == 200


def test_sgam_ui_refuses_a_cross_site_write_even_with_the_token(writable: Served) -> None:
    port = writable.port
    page = request(port, "GET", "/review?tenant=acme").body
    token = TOKEN.search(page).group(1).decode()
    form = f"csrf={token}&tenant=acme&decision_id={writable.decision_id}".encode()
    posted = {"Content-Type": "application/x-www-form-urlencoded"}
    for headers in (
        {"Origin": EVIL},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},
        {"Origin": f"http://localhost:{port + 1}", "Sec-Fetch-Site": "same-site"},
    ):
        refused = request(port, "POST", "/review/undo", {**posted, **headers}, form)
        assert refused.status == 403, headers
    assert not undone(writable.path)
    own = {**posted, "Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"}
    assert request(port, "POST", "/review/undo", own, form).status == 303
    assert undone(writable.path)


# ---------------------------------------------------------------- a write's body


def status_before_the_body(port: int, head: list[str], sent: bytes) -> int:
    """Send a POST's head and the first `sent` bytes of its body, then wait (5 s at most)
    for the status line: a server that reads the whole declared body never answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        lines = ["POST /review/undo HTTP/1.1", f"Host: 127.0.0.1:{port}", *head, "", ""]
        sock.sendall("\r\n".join(lines).encode() + sent)
        try:
            answer = sock.recv(64)
        except TimeoutError:
            pytest.fail("no answer while the body was still coming: the server kept reading")
    return int(answer.split()[1])


def test_a_large_post_is_refused_before_it_is_read(read_only: Served, writable: Served) -> None:
    form = "Content-Type: application/x-www-form-urlencoded"
    chunk = b"1000\r\n" + b"a" * 4096 + b"\r\n"
    for served, refused in ((read_only, 403), (writable, 413)):
        huge = [form, "Content-Length: 600000000"]
        assert status_before_the_body(served.port, huge, b"csrf=" + b"a" * 1000) == refused
        chunked = [form, "Transfer-Encoding: chunked"]  # no length: stops past the limit
        assert status_before_the_body(served.port, chunked, chunk * 8) == refused


# ---------------------------------------------------------------- headers, the header line


def test_every_response_carries_the_security_headers(store: SGAMStore) -> None:
    """JSON twins, static files, redirects, errors and refusals, not only HTML pages."""
    decision_id = seed(store)
    confined = TestClient(create_app(store, tenant="acme"), follow_redirects=False)
    writable = TestClient(create_app(store, allow_writes=True), follow_redirects=False)
    token = TOKEN.search(writable.get("/review", params={"tenant": "acme"}).content).group(1)
    form = {"csrf": token.decode(), "tenant": "acme", "decision_id": str(decision_id)}
    answers = {
        "json twin": confined.get("/keys.json", params={"tenant": "acme", "subject": "mira"}),
        "stylesheet": confined.get("/static/ui.css"),
        "script": confined.get("/static/ui.js"),
        "redirect": confined.get("/"),
        "not found": confined.get("/nowhere"),
        "refusal": confined.post("/review/undo", data=form),
        "cross-site": confined.get("/tenants", headers={"Origin": EVIL}),
        "write": writable.post("/review/undo", data=form),
    }
    assert answers["redirect"].status_code == 302 and answers["write"].status_code == 303
    for what, answer in answers.items():
        headers = answer.headers
        assert "frame-ancestors 'none'" in headers["content-security-policy"], what
        assert headers["x-content-type-options"] == "nosniff", what
        assert headers["x-frame-options"] == "DENY", what


@pytest.mark.sqlite_only  # a failure's answer is the app's, whatever the engine
def test_an_unforeseen_failure_is_a_500_with_the_headers(db_path: str) -> None:
    """The database closed under a running inspector: no page can read it."""
    with SGAMStore.from_conn_string(db_path) as store:
        store.setup()
        seed(store)
        client = TestClient(create_app(store), raise_server_exceptions=False)
    failed = client.get("/keys.json", params={"tenant": "acme", "subject": "mira"})
    assert failed.status_code == 500 and "Traceback" not in failed.text
    assert failed.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in failed.headers["content-security-policy"]


@pytest.mark.sqlite_only  # the header line is the app's, whatever the engine
@pytest.mark.parametrize(
    "database",
    [
        "host=db.example port=5432 user=app password=s3cret dbname=memory",
        "host=db.example user=app password='s3 cret' dbname=memory",
        "postgresql://db.example/memory?user=app&password=s3cret",
        "postgresql://app:s3cret@db.example/memory",
    ],
)
def test_the_header_never_shows_a_password(store: SGAMStore, database: str) -> None:
    page = TestClient(create_app(store, database=database)).get("/").text
    assert "s3cret" not in page and "s3 cret" not in page
    assert "***" in page and "db.example" in page


# ---------------------------------------------------------------- parameters


def test_names_are_taken_exactly_as_given(store: SGAMStore) -> None:
    """A link to key "passport " must show that key, never "passport"'s value."""
    store.put(("acme", "mira"), "passport", {"value": "the real one"})
    store.put(("acme", "mira"), "passport ", {"value": "the spaced one"})
    store.put(("acme", "mira"), " hidden", {"value": "leading space"})
    store.record_episode("acme", "said with a space", source_kind="user_message", episode_id="e1 ")
    client = TestClient(create_app(store))
    key = {"tenant": "acme", "subject": "mira"}
    spaced = client.get("/key.json", params={**key, "attribute": "passport "}).json()
    assert (spaced["attribute"], spaced["value"]) == ("passport ", "the spaced one")
    plain = client.get("/key.json", params={**key, "attribute": "passport"}).json()
    assert plain["value"] == "the real one"
    hidden = client.get("/key.json", params={**key, "attribute": " hidden"})
    assert hidden.status_code == 200 and hidden.json()["value"] == "leading space"
    episode = client.get("/episode.json", params={"tenant": "acme", "id": "e1 "})
    assert episode.status_code == 200 and episode.json()["episode"]["episode_id"] == "e1 "
    listed = client.get("/keys.json", params=key).json()["rows"]
    assert {"passport", "passport ", " hidden"} <= {r["key"] for r in listed}
    links = client.get("/keys", params=key).text  # each row links to its own key
    assert 'attribute=passport+"' in links and 'attribute=+hidden"' in links


@pytest.mark.sqlite_only  # a parameter's check, before the store is asked
@pytest.mark.parametrize("when", ["0001-01-01", "9999-12-31", "0001-01-01T00:30:00+01:00"])
@pytest.mark.parametrize("name", ["valid_at", "known_at"])
def test_instants_at_the_calendars_ends_get_a_400(store: SGAMStore, name: str, when: str) -> None:
    seed(store)
    client = TestClient(create_app(store))
    key = {"tenant": "acme", "subject": "mira", "attribute": "passport_deadline"}
    for page in ("key", "keys", "changes"):
        answer = client.get(f"/{page}.json", params={**key, name: when})
        assert answer.status_code == 400, (page, answer.text)
        assert name in answer.json()["error"]


# ---------------------------------------------------------------- confinement


def test_a_confined_inspector_shows_only_its_tenants_totals(store: SGAMStore) -> None:
    seed(store)
    everyone = store.stats()["rows"]
    acme_now = len(store.for_tenant("acme").search((), limit=10_000))
    assert everyone["current_facts"] > acme_now
    client = TestClient(create_app(store, tenant="acme"))
    assert client.get("/tenants.json").json()["totals"] is None  # counted on request
    totals = client.get("/tenants.json", params={"count": "1"}).json()["totals"]
    acme_episodes = store.capped_totals(tenant_id="acme")["episodes"]
    assert 0 < acme_episodes < everyone["episodes"]
    assert totals == {"tenants": 1, "current_facts": acme_now, "episodes": acme_episodes}
    page = client.get("/tenants", params={"count": "1"}).text
    assert f"{everyone['current_facts']} current facts" not in page
    assert f"{everyone['tenants']} tenants" not in page and f"{acme_now} current facts" in page
    whole = TestClient(create_app(store)).get("/tenants.json?count=1").json()["totals"]
    assert whole["current_facts"] == everyone["current_facts"]


# ---------------------------------------------------------------- read-only means unchanged

TTL = {"default_ttl": 60.0, "refresh_on_read": True}  # minutes; reads push expiry on
PAGE_VIEWS = [
    ("/tenants", {}),
    ("/subjects", {"tenant": "acme"}),
    ("/keys", {"tenant": "acme", "subject": "mira"}),
    ("/keys.json", {"tenant": "acme", "subject": "mira", "filter": "e"}),
    ("/key", {"tenant": "acme", "subject": "mira", "attribute": "tone"}),
    ("/search", {"tenant": "acme", "q": "tone formal"}),
    ("/review", {"tenant": "acme"}),
    ("/changes", {"tenant": "acme"}),
    ("/episode", {"tenant": "acme", "id": "e1"}),
]


def expiries(target: str) -> list[tuple]:
    """Every version's expiry, read behind the store's back."""
    statement = "SELECT row_id, expires_at FROM {}facts ORDER BY row_id"
    if target.startswith("postgresql://"):
        import psycopg

        from sgam_store.engines.postgres.connection import DEFAULT_SCHEMA

        with psycopg.connect(target) as conn:
            return conn.execute(statement.format(f"{DEFAULT_SCHEMA}.")).fetchall()
    with closing(sqlite3.connect(target)) as conn:
        return conn.execute(statement.format("")).fetchall()


def test_page_views_never_refresh_a_ttl(target: str) -> None:
    """Over a store opened with refresh_on_read, as langgraph dev's or a user's may be:
    every page viewed twice, and every expiry (on SQLite, every byte) is as it was."""
    with SGAMStore.from_conn_string(target, ttl=TTL) as store:
        store.setup()
        seed(store)
        for n in range(25):  # a namespace the review searches (past SMALL_NAMESPACE)
            store.put(("acme", "mira"), f"note_{n}", {"text": f"passport deadline note {n}"})
        store.put(("acme", "mira"), "tone", {"value": "formal"})
    sqlite = not target.startswith("postgresql://")
    before = (digest(target) if sqlite else None, expiries(target))
    assert any(expiry for _, expiry in before[1])
    with SGAMStore.from_conn_string(target, ttl=TTL) as store:
        client = TestClient(create_app(store))
        for path, params in PAGE_VIEWS:
            assert client.get(path, params=params).status_code == 200, path
        time.sleep(0.01)  # a refresh would now write a later expiry
        for path, params in PAGE_VIEWS:
            client.get(path, params=params)
    assert (digest(target) if sqlite else None, expiries(target)) == before


def test_sgam_ui_leaves_the_file_as_it_was(read_only: Served) -> None:
    """Every page read through the real command; then the file's bytes are compared."""
    for page, params in PAGE_VIEWS:
        query = "&".join(f"{k}={v.replace(' ', '+')}" for k, v in params.items())
        assert request(read_only.port, "GET", f"{page}?{query}").status in (200, 404), page
    assert files_of(read_only.path) == read_only.before


def test_sgam_ui_refuses_an_older_schema_untouched(tmp_path: Path) -> None:
    """A schema-v1 file: refused at start with the command that upgrades it, not migrated."""
    path = tmp_path / "schema_v1.db"
    shutil.copy(FIXTURE, path)
    before = files_of(str(path))
    command = [sys.executable, "-m", "sgam_store.cli", "ui", "--db", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert "sgam migrate --db" in done.stderr and done.stderr.count("\n") == 1
    assert files_of(str(path)) == before


# ---------------------------------------------------------------- a deeply nested value

DEPTH = 400  # past pydantic's 255 and json's stack; the store caps what it accepts now


@pytest.mark.sqlite_only  # written behind the store's back, as a file from before the cap
def test_a_deeply_nested_value_breaks_no_page(db_path: str) -> None:
    """Every page listing it, HTML and JSON twin, answers 200 with the value whole."""
    deep = '{"v": ' + "[" * DEPTH + "]" * DEPTH + "}"
    with SGAMStore.from_conn_string(db_path) as store:
        store.setup()
        seed(store)
        store.put(("acme", "mira"), "deep", {"value": "shallow for now"})
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE facts SET value = ? WHERE attribute = 'deep'", (deep,))
    with SGAMStore.from_conn_string(db_path) as store:
        client = TestClient(create_app(store))
        key = {"tenant": "acme", "subject": "mira", "attribute": "deep"}
        pages = [
            ("keys", {"tenant": "acme", "subject": "mira"}),
            ("key", key),
            ("search", {"tenant": "acme", "q": "deep"}),
            ("changes", {"tenant": "acme"}),
        ]
        for page, params in pages:
            for path in (f"/{page}", f"/{page}.json"):
                answer = client.get(path, params=params)
                assert answer.status_code == 200, (path, answer.text[:300])
                assert "[[[[" in answer.text, path
        twin = client.get("/key.json", params=key).json()
        value = twin["versions"][-1]["value"]["v"]
        for _ in range(DEPTH - 1):
            [value] = value
        assert value == []


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
        max_leaves=40,
    )
)
def test_the_stackless_writer_writes_what_json_writes(value: object) -> None:
    assert jsontext.dumps(value) == json.dumps(value, ensure_ascii=False)


# ---------------------------------------------------------------- inside langgraph dev


@pytest.fixture(scope="module")
def langgraph_inspector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    """A real `langgraph dev` with the inspector mounted under /sgam/, writes enabled,
    over a seeded SQLite file: (its port, a 'supersedes' decision id)."""
    pytest.importorskip("langgraph_api")
    from tests.test_langgraph_server import langgraph_server

    tmp = tmp_path_factory.mktemp("langgraph")
    path = str(tmp / "served.db")
    with SGAMStore.from_conn_string(path) as store:
        store.setup()
        decision_id = seed(store)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SGAM_EMBEDDING", "none")
        env.setenv("SGAM_UI_ALLOW_WRITES", "1")
        with langgraph_server(tmp, path, {}) as (url, _):
            yield int(url.rsplit(":", 1)[1]), decision_id


@pytest.mark.slow
def test_langgraph_dev_sends_another_site_nothing_of_the_inspector(langgraph_inspector) -> None:
    """The server's CORS middleware answers `*` to any origin; the inspector under it
    still refuses: no page, no token, no write, whatever the headers a page can make."""
    port, decision_id = langgraph_inspector
    own = request(port, "GET", "/sgam/review?tenant=acme")
    assert own.status == 200 and b"answer_style" in own.body
    token = TOKEN.search(own.body).group(1).decode()
    for why, headers in CROSS_SITE_READS.items():
        refused = request(port, "GET", "/sgam/review?tenant=acme", headers)
        assert refused.status == 403, why
        assert b"csrf" not in refused.body and b"answer_style" not in refused.body, why
    rebound = request(port, "GET", "/sgam/review?tenant=acme", host=f"attacker.example:{port}")
    assert rebound.status == 400 and b"csrf" not in rebound.body
    form = f"csrf={token}&tenant=acme&decision_id={decision_id}".encode()
    posted = {"Content-Type": "application/x-www-form-urlencoded", "Origin": EVIL,
              "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}  # fmt: skip
    assert request(port, "POST", "/sgam/review/undo", posted, form).status == 403
    assert current_style(port) is None  # the decision stands: answer_style superseded


def current_style(port: int) -> str | None:
    """answer_style's current value, read by the inspector's own JSON twin."""
    key = "/sgam/key.json?tenant=acme&subject=mira&attribute=answer_style"
    return json.loads(request(port, "GET", key).body)["value"]


ATTACK = """async ([target, decision]) => {
  const page = await fetch(target + "/sgam/review?tenant=acme");
  const token = (await page.text()).match(/name="csrf" value="([^"]+)"/);
  const form = new URLSearchParams({tenant: "acme", decision_id: String(decision),
                                    csrf: token ? token[1] : ""});
  const undo = await fetch(target + "/sgam/review/undo", {method: "POST", body: form,
                                                          mode: "no-cors"});
  return {read: page.status, token: token !== null};
}"""


@pytest.mark.slow
def test_a_page_of_another_site_in_chromium_cannot_undo_a_decision(
    langgraph_inspector, tmp_path: Path
) -> None:
    """The issue's attack, in a real browser: a page on http://localhost:P (another site
    than 127.0.0.1) fetches the review page for its token and posts the undo."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from tests.test_ui_browser import CHROMIUM, FLAGS

    port, decision_id = langgraph_inspector
    (tmp_path / "index.html").write_text("<!doctype html><title>a page elsewhere</title>")
    handler = partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as evil:
        threading.Thread(target=evil.serve_forever, daemon=True).start()
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            tab = browser.new_page()
            tab.goto(f"http://localhost:{evil.server_address[1]}/")
            outcome = tab.evaluate(ATTACK, [f"http://127.0.0.1:{port}", decision_id])
            browser.close()
        evil.shutdown()
    assert current_style(port) is None  # not undone
    assert outcome == {"read": 403, "token": False}


@pytest.mark.slow
def test_a_deployments_auth_guards_the_inspector(tmp_path: Path) -> None:
    """With an auth handler in langgraph.json, /sgam/ asks for it as the server's own
    routes do (langgraph.json's enable_custom_route_auth; without it, /sgam/ answered)."""
    pytest.importorskip("langgraph_api")
    from tests.langgraph_auth import KEY
    from tests.test_langgraph_server import langgraph_server

    handler = {"auth": {"path": f"{Path(__file__).parent / 'langgraph_auth.py'}:auth"}}
    path = str(tmp_path / "guarded.db")
    with SGAMStore.from_conn_string(path) as store:
        store.setup()
        seed(store)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SGAM_EMBEDDING", "none")
        with langgraph_server(tmp_path, path, {}, handler) as (url, _):
            port = int(url.rsplit(":", 1)[1])
            refused = request(port, "GET", "/sgam/keys.json?tenant=acme&subject=mira")
            assert refused.status == 401 and b"2026-" not in refused.body
            key = {"x-api-key": KEY}
            assert (
                request(port, "GET", "/sgam/keys.json?tenant=acme&subject=mira", key).status == 200
            )


def test_sgam_ui_creates_no_postgresql_schema(pg_server: str) -> None:
    """A mistyped --schema is refused in one line, and no empty schema is left behind."""
    import psycopg

    from tests import pg

    uri = pg.fresh_database()
    command = [sys.executable, "-m", "sgam_store.cli", "ui", "--db", uri, "--schema", "nope"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("sgam ui served a schema that was not there")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "nope" in done.stderr
    with psycopg.connect(uri) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'nope'").fetchall()
    assert found == []

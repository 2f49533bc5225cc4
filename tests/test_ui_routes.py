"""`sgam ui`'s pages through Starlette's TestClient, on both engines: status codes, the
JSON twins, the point-in-time parameters, tenant confinement, CSRF refusals, paging
bounds, and bad parameters (a 400 page, never a 500). The browser tests cover clicks."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from html import unescape as html_unescape
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

pytest.importorskip("starlette")
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from sgam_store import MemoryFact, SGAMStore, Verdict
from sgam_store.core import clock
from sgam_store.managers.supersession import pending_reviews
from sgam_store.ui import create_app, mask_uri, pages
from tests.conftest import told
from tests.ui_store import HOSTILE_TENANT, IMG, SCRIPT, seed

ENGINES = ("sqlite", "postgres")  # `target` (the write test) on both engines, as `seeded`
KEY = {"tenant": "acme", "subject": "mira", "attribute": "passport_deadline"}
PAGES = {
    "tenants": {},
    "subjects": {"tenant": "acme"},
    "keys": {"tenant": "acme", "subject": "mira"},
    "key": KEY,
    "search": {"tenant": "acme", "q": "passport deadline"},
    "review": {"tenant": "acme"},
    "changes": {"tenant": "acme", "since": "2000-01-01"},
    "episode": {"tenant": "acme", "id": "e1"},
}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def seeded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """(store, review decision id), seeded once per engine for the read-only tests."""
    if request.param == "sqlite":
        target = str(tmp_path_factory.mktemp("ui") / "ui.db")
    else:
        request.getfixturevalue("pg_server")
        from tests import pg

        target = pg.fresh_database()
    with SGAMStore.from_conn_string(target) as store:
        store.setup()
        yield store, seed(store)


@pytest.fixture
def client(seeded) -> TestClient:
    return TestClient(create_app(seeded[0]))


def test_every_page_renders_as_html_and_as_json(client: TestClient) -> None:
    for page, params in PAGES.items():
        html = client.get(f"/{page}", params=params)
        assert html.status_code == 200, (page, html.text)
        assert html.headers["content-type"].startswith("text/html")
        data = client.get(f"/{page}.json", params=params)
        assert data.status_code == 200 and data.json()["page"] == page
        assert client.get(f"/{page}", params={**params, "format": "json"}).json() == data.json()
    assert client.get("/").status_code == 200


def test_the_key_page_lists_the_keys_history_with_provenance(seeded, client) -> None:
    store, _ = seeded
    data = client.get("/key.json", params=KEY).json()
    history = store.history("acme", "mira", "passport_deadline")
    believed = [v for v in data["versions"] if v["believed"]]
    assert sorted(v["fact_id"] for v in believed) == sorted(f.fact_id for f in history)
    assert [v["value"] for v in believed] == ["2026-07-15", "2026-06-30", "2026-08-01"]
    e2 = next(v for v in believed if v["source_episode_id"] == "e2")
    assert e2["replaced"]["fact_id"] == history[1].fact_id
    assert e2["replaced"]["attribute"] == "passport_deadline"
    assert e2["source"]["episode_id"] == "e2" and e2["source"]["speaker"] == "mira"
    assert "June 30" in e2["source"]["text"] or "2026-06-30" in e2["source"]["text"]


BAR = re.compile(r'<g class="version (\w+)" data-fact-id="(\d+)"')
ROW = re.compile(r'<tr data-fact-id="(\d+)" class="(\w+)')


def test_the_key_table_lists_exactly_the_versions_its_picture_draws(seeded, client) -> None:
    """Issue 38: the retired version the picture hatches is in the table too, each row
    says when its fact was first believed (not when this row began), no writer column
    stays empty, and a memory superseded under another key links to its replacement
    and does not claim to supersede itself."""
    store, _ = seeded
    for attribute in ("passport_deadline", "answer_style", "reply_format"):
        params = {**KEY, "attribute": attribute}
        html = client.get("/key", params=params).text
        versions = store.versions("acme", "mira", attribute)
        bars = [(int(i), state) for state, i in BAR.findall(html)]
        rows = [(int(i), "current" if c == "believed" else c) for i, c in ROW.findall(html)]
        assert (
            bars == rows == [(v.fact_id, "retired" if v.known_to else "current") for v in versions]
        )
        assert "<th>writer</th>" not in html
        data = client.get("/key.json", params=params).json()["versions"]
        assert [v["recorded_at"] for v in data] == [
            f.recorded_at.isoformat().replace("+00:00", "Z") for f in versions
        ]
    e1 = store.versions("acme", "mira", "passport_deadline")[1]  # believed since 06-03
    assert e1.known_from > e1.recorded_at
    row = client.get("/key", params=KEY).text.split(f'<tr data-fact-id="{e1.fact_id}" ')[2]
    cells = [
        re.sub(r"<[^>]+>", "", cell)
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.split("</tr>")[0], re.S)
    ]
    assert cells[5] == clock.readable_one(e1.recorded_at) == "2026-06-01T09:00:00Z"
    assert cells[4].startswith(clock.readable_one(e1.known_from)[:16])  # 06-03, this row's
    old = client.get("/key", params={**KEY, "attribute": "answer_style"}).text
    [replaced_by] = re.findall(r'data-side="old">([^<]*)<a href="([^"]+)">', old)
    assert replaced_by[0].startswith("superseded by #") and "reply_format" in replaced_by[1]
    style = store.versions("acme", "mira", "answer_style")[-1]
    assert f"supersedes #{style.fact_id}" not in old
    new = client.get("/key", params={**KEY, "attribute": "reply_format"}).text
    assert f'data-side="new">supersedes #{style.fact_id}' in new


def test_point_in_time_parameters_reanswer_every_page(client: TestClient) -> None:
    june2 = {"valid_at": "2026-06-02"}
    assert client.get("/key.json", params={**KEY, **june2}).json()["value"] == "2026-07-15"
    assert client.get("/key.json", params=KEY).json()["value"] == "2026-06-30"
    keys = client.get("/keys.json", params={**PAGES["keys"], **june2}).json()["rows"]
    assert {r["key"]: r["value"] for r in keys}["passport_deadline"] == "2026-07-15"
    # before anything was recorded, nothing was believed: the key is not there
    early = {**KEY, "known_at": "2001-01-01T00:00:00Z"}
    assert client.get("/key.json", params=early).status_code == 404
    # links keep the point in time, to the second where that is exact
    html = client.get("/keys", params={**PAGES["keys"], **june2}).text
    assert "valid_at=2026-06-02T00%3A00%3A00Z" in html and ".000000Z" not in html
    exact = {**PAGES["keys"], "valid_at": "2026-06-02T00:00:00.000250Z"}
    assert "valid_at=2026-06-02T00%3A00%3A00.000250Z" in client.get("/keys", params=exact).text


def test_subjects_show_how_many_keys_each_holds_now(seeded, client) -> None:
    store, _ = seeded
    data = client.get("/subjects.json", params={"tenant": "acme"}).json()
    listed = {
        s: len(store.for_tenant("acme").search(tuple(s.split(".")), limit=1000))
        for s in data["rows"]
    }
    assert data["keys"] == listed and sum(listed.values()) > 0
    html = client.get("/subjects", params={"tenant": "acme"}).text
    assert "<th>current keys</th>" in html and f"<td>{listed['mira']}</td>" in html
    keys = client.get("/keys.json", params=PAGES["keys"]).json()
    assert keys["total"] == listed["mira"] >= len(keys["rows"])
    assert f"of {listed['mira']} current" in client.get("/keys", params=PAGES["keys"]).text
    # at another instant a current total would not match the listing: none is shown
    then = {"tenant": "acme", "valid_at": "2026-06-02"}
    assert client.get("/subjects.json", params=then).json()["keys"] == {}
    assert client.get("/keys.json", params={**PAGES["keys"], **then}).json()["total"] is None


def test_search_ranks_as_the_store_does(seeded, client) -> None:
    store, _ = seeded
    data = client.get("/search.json", params={**PAGES["search"], "limit": 5}).json()
    hits = store.for_tenant("acme").search((), query="passport deadline", limit=5)
    assert [(h["key"], h["score"]) for h in data["hits"]] == [(h.key, h.score) for h in hits]
    assert data["hits"] and all(h["current"] for h in data["hits"])
    explained = store.for_tenant("acme").explain_search((), "passport deadline", limit=5)
    sides = [(h["keyword"], h["keyword_rank"], h["cosine"], h["vector_rank"]) for h in data["hits"]]
    assert sides == [(e.keyword, e.keyword_rank, e.cosine, e.vector_rank) for e in explained]
    # No embeddings: keywords alone rank, and every hit holds a term of the query.
    assert all(0 < k <= 1 and c is None for k, _, c, _ in sides)
    assert [r for _, r, _, _ in sides] == list(range(1, len(sides) + 1))
    html = client.get("/search", params=PAGES["search"]).text
    assert f"{sides[0][0]:.2f} (#1)" in html


def test_review_page_shows_the_queue_and_the_decisions(seeded, client) -> None:
    store, decision_id = seeded
    [decision] = [
        d for d in client.get("/review.json", params={"tenant": "acme"}).json()["decisions"]
    ]
    assert decision["decision_id"] == decision_id and decision["decision"] == "supersedes"
    assert decision["reason"] == "restates the answer style" and decision["undone_at"] is None
    assert decision["old"] == {"subject": "mira", "attribute": "answer_style"}
    assert decision["evidence"]["new"] == "bullet points, detailed"
    queue = client.get("/review.json", params={"tenant": "acme"}).json()["queue"]
    reviews, _ = pending_reviews(store, "acme")
    assert [(q["new"]["fact_id"], [c["fact_id"] for c in q["candidates"]]) for q in queue] == [
        (r.new.fact_id, [c.fact.fact_id for c in r.candidates]) for r in reviews
    ]
    if store.engine.__class__.__module__.startswith("sgam_store.engines.sqlite"):
        [queued] = queue  # the put of deadline_note, with the deadline as a candidate
        assert queued["new"]["attribute"] == "deadline_note"
        assert "passport_deadline" in [c["attribute"] for c in queued["candidates"]]
    assert "Undo" not in client.get("/review", params={"tenant": "acme"}).text  # read-only


def test_episode_page_lists_the_facts_it_sourced(client: TestClient) -> None:
    data = client.get("/episode.json", params={"tenant": "acme", "id": "e1"}).json()
    assert {f["attribute"] for f in data["facts"]} == {"answer_style", "passport_deadline"}
    assert data["erasure_preview"] is None  # read-only: no preview (it takes the write lock)
    assert client.get("/episode", params={"tenant": "acme", "id": "g1"}).status_code == 404


def test_changes_page_renders_the_feed_newest_first(seeded, client) -> None:
    store, _ = seeded
    rows = client.get("/changes.json", params={"tenant": "acme", "limit": 200}).json()["rows"]
    feed = store.changes("1970-01-01T00:00:00Z", tenant_id="acme", limit=200)
    assert [(r["kind"], r["fact_id"]) for r in rows] == [(c.kind, c.fact_id) for c in feed]
    assert {r["kind"] for r in rows} >= {"new", "superseded"}
    middle = feed[len(feed) // 2].at
    then = client.get("/changes.json", params={"tenant": "acme", "known_at": middle}).json()
    assert [r["fact_id"] for r in then["rows"]] == [c.fact_id for c in feed if c.at < middle]


def test_a_confined_app_shows_no_other_tenant(seeded) -> None:
    store, _ = seeded
    client = TestClient(create_app(store, tenant="acme"), follow_redirects=False)
    assert client.get("/").headers["location"] == "/subjects?tenant=acme"
    assert [r["tenant"] for r in client.get("/tenants.json").json()["rows"]] == ["acme"]
    for page, params in PAGES.items():
        if "tenant" in params:
            assert client.get(f"/{page}", params=params).status_code == 200
            other = client.get(f"/{page}", params={**params, "tenant": "globex"})
            assert other.status_code == 404, page
            assert "2026-09-10" not in other.text
    ghost = {"tenant": "globex", "subject": "mira", "attribute": "passport_deadline"}
    assert client.get("/key.json", params=ghost).status_code == 404
    assert client.get("/episode", params={"tenant": "globex", "id": "g1"}).status_code == 404
    search = client.get("/search.json", params={"tenant": "acme", "q": "2026-09-10 globex"})
    assert all(h["value"] != "2026-09-10" for h in search.json()["hits"])


def csrf_token(client: TestClient, tenant: str) -> str:
    """The token a writable app puts in its pages (and in their forms)."""
    page = client.get("/subjects", params={"tenant": tenant}).text
    return re.search(r'<meta name="csrf-token" content="([^"]+)">', page).group(1)


def test_writes_need_the_flag_a_post_and_the_csrf_token(target: str) -> None:
    with SGAMStore.from_conn_string(target) as store:
        store.setup()
        decision_id = seed(store)
        form = {"tenant": "acme", "decision_id": str(decision_id)}
        read_only = TestClient(create_app(store))
        assert read_only.post("/review/undo", data=form).status_code == 403
        assert "csrf" not in read_only.get("/review", params={"tenant": "acme"}).text
        client = TestClient(create_app(store, allow_writes=True), follow_redirects=False)
        token = csrf_token(client, "acme")
        assert client.get("/review/undo", params={**form, "csrf": token}).status_code == 405
        assert client.post("/review/undo", data=form).status_code == 403
        assert client.post("/review/undo", data={**form, "csrf": "x" + token}).status_code == 403
        other = TestClient(create_app(store, allow_writes=True, tenant="globex"))
        assert other.post("/review/undo", data={**form, "csrf": token}).status_code == 403
        theirs = {**form, "csrf": csrf_token(other, "globex")}
        assert other.post("/review/undo", data=theirs).status_code == 404  # not its tenant
        assert store.fact_at("acme", "mira", "answer_style") is None  # nothing undone yet
        preview = client.get("/episode", params={"tenant": "acme", "id": "e1"}).text
        assert 'id="erasure-preview"' in preview and "dry run" in preview
        done = client.post("/review/undo", data={**form, "csrf": token})
        assert done.status_code == 303
        assert store.fact_at("acme", "mira", "answer_style").value == "detailed"
        again = client.post("/review/undo", data={**form, "csrf": token})
        assert again.status_code == 409  # already undone: a clear refusal, not a 500


def test_paging_bounds(client: TestClient) -> None:
    first = client.get("/tenants.json", params={"per_page": 1}).json()
    assert len(first["rows"]) == 1 and first["has_next"] and first["total"] is None
    counted = client.get("/tenants.json", params={"per_page": 1, "count": "1"}).json()
    assert counted["total"] == 3 and counted["rows"] == first["rows"]
    after, walked = None, []
    for _ in range(3):
        cut = {} if after is None else {"after": after}
        page = client.get("/tenants.json", params={"per_page": 1, **cut}).json()
        walked += [r["tenant"] for r in page["rows"]]
        after = (page["next"] or {}).get("after")
    assert sorted(walked) == sorted(["acme", "globex", HOSTILE_TENANT]) and after is None
    beyond = client.get("/tenants.json", params={"per_page": 1, "after": walked[-1]}).json()
    assert beyond["rows"] == [] and not beyond["has_next"]
    keys = [
        client.get("/keys.json", params={"tenant": "acme", "per_page": 1, "page": n}).json()
        for n in range(1, 8)
    ]
    listed = [k["rows"][0]["key"] for k in keys if k["rows"]]
    assert len(listed) == len(set(listed)) >= 4
    assert [k["has_next"] for k in keys][: len(listed)] == [True] * (len(listed) - 1) + [False]
    filtered = client.get("/keys.json", params={"tenant": "acme", "filter": "PASSPORT"}).json()
    assert [r["key"] for r in filtered["rows"]] == ["passport_deadline"]


NEXT = re.compile(r'<a rel="next" href="([^"]+)"')


@pytest.mark.parametrize(
    ("page", "params"),
    [
        ("tenants", {}),
        ("subjects", {"tenant": "acme"}),
        ("keys", {"tenant": "acme"}),
        ("keys", {"tenant": "acme", "subject": "mira"}),
    ],
)
def test_every_html_list_walks_to_its_last_page(client, page: str, params: dict) -> None:
    """Each list, one row a page, followed by its "next" links: every page answers 200
    and the rows read are exactly the JSON twin's whole list, in order."""
    whole = client.get(f"/{page}.json", params={**params, "per_page": 200}).json()["rows"]
    url, pages, rows = f"/{page}?{urlencode({**params, 'per_page': 1})}", 0, []
    while url:
        html = client.get(html_unescape(url))
        assert html.status_code == 200, (url, html.text[-400:])
        pages += 1
        found = NEXT.search(html.text)
        url = found.group(1) if found else ""
        by_offset = page == "keys" and "subject" not in params  # the rest page by keyset
        back = 'rel="prev"' if by_offset else 'rel="first"'
        assert (back in html.text) == (pages > 1)
        rows += client.get(html.url.path + ".json", params=html.url.params).json()["rows"]
    assert pages == len(whole) > 1 and rows == whole


@pytest.mark.parametrize(
    ("page", "params"),
    [
        ("tenants", {"page": "0"}),
        ("tenants", {"page": "-1"}),
        ("tenants", {"per_page": "0"}),
        ("tenants", {"per_page": "201"}),
        ("tenants", {"page": "abc"}),
        ("tenants", {"page": "1" * 40}),
        ("tenants", {"valid_at": "yesterday"}),
        ("tenants", {"valid_at": "2026-06-02T00:00:00"}),  # naive: refused, not guessed
        ("keys", {"tenant": "acme", "known_at": "2026-13-40"}),
        ("subjects", {}),
        ("subjects", {"tenant": ""}),
        ("subjects", {"tenant": "a.b"}),
        ("subjects", {"tenant": "x\x00"}),
        ("key", {"tenant": "acme", "subject": "mira"}),
        ("key", {**KEY, "attribute": "a" * 600}),
        ("search", {"tenant": "acme", "q": "x", "limit": "0"}),
        ("changes", {"tenant": "acme", "since": "nope"}),
        ("changes", {"tenant": "acme", "limit": "9999"}),
        ("episode", {"tenant": "acme"}),
    ],
)
def test_bad_parameters_get_a_400_page(client: TestClient, page: str, params: dict) -> None:
    html = client.get(f"/{page}", params=params)
    assert html.status_code == 400, html.text
    assert 'id="error"' in html.text
    assert client.get(f"/{page}.json", params=params).json()["status"] == 400


def test_odd_parameters_never_cause_a_500(client: TestClient) -> None:
    odd = ["", " ", "%", "../..", "a" * 499, "\u202e", "'", '"', "<", "1e9", "-0", "mira/x"]
    for page, base in PAGES.items():
        for name in ("tenant", "subject", "attribute", "q", "prefix", "id", "filter", "since"):
            for value in odd:
                status = client.get(f"/{page}", params={**base, name: value}).status_code
                assert status in (200, 400, 404), (page, name, value, status)


def test_stored_values_are_escaped_everywhere(client: TestClient) -> None:
    pages = [
        ("/subjects", {"tenant": "acme"}),
        ("/keys", {"tenant": "acme", "subject": SCRIPT}),
        ("/key", {"tenant": "acme", "subject": SCRIPT, "attribute": IMG}),
        ("/episode", {"tenant": "acme", "id": "x-4"}),
        ("/search", {"tenant": "acme", "q": "alert"}),
        ("/changes", {"tenant": "acme"}),
        ("/tenants", {}),
        ("/subjects", {"tenant": HOSTILE_TENANT}),
    ]
    for path, params in pages:
        html = client.get(path, params=params)
        assert html.status_code == 200, (path, html.text)
        assert "<script>alert" not in html.text and "<img src=x" not in html.text
        assert 'href="javascript:' not in html.text and '"><img' not in html.text
    episode = client.get(pages[3][0], params=pages[3][1]).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in episode
    policy = client.get("/tenants").headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy


def test_a_database_uri_is_shown_with_its_password_masked(seeded) -> None:
    uri = "postgresql://sgam:s3cret@db.example:5432/memory?sslmode=require"
    assert mask_uri(uri) == "postgresql://sgam:***@db.example:5432/memory?sslmode=require"
    assert mask_uri("memory.db") == "memory.db"
    page = TestClient(create_app(seeded[0], database=uri)).get("/").text
    assert "s3cret" not in page and "sgam:***@db.example" in page


def test_mounted_under_a_path_its_links_stay_under_it(seeded) -> None:
    outer = Starlette(routes=[Mount("/sgam", create_app(seeded[0]))])
    client = TestClient(outer)
    html = client.get("/sgam/tenants").text
    assert 'href="/sgam/subjects?tenant=acme"' in html
    assert 'href="/sgam/static/ui.css"' in html
    assert client.get("/sgam/static/ui.css").status_code == 200
    assert client.get("/sgam/static/ui.js").status_code == 200


def test_sgam_ui_serves_on_loopback_and_warns_off_it(tmp_path: Path) -> None:
    db = str(tmp_path / "cmd.db")
    with SGAMStore.from_conn_string(db) as store:
        store.setup()
        seed(store)
    for host, warned in (("127.0.0.1", False), ("0.0.0.0", True)):
        command = [sys.executable, "-m", "sgam_store.cli", "ui", "--db", db, "--host", host]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = proc.stdout.readline()
            url = re.search(r"http://[^ ]+/", line).group(0)
            assert url.startswith(f"http://{host}:") and not url.endswith(":0/")
            probe = url.replace("0.0.0.0", "127.0.0.1")
            assert httpx.get(probe + "tenants.json", timeout=10).json()["total"] == 3
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=15)
        assert ("no authentication" in err) is warned
    missing = subprocess.run(
        [sys.executable, "-m", "sgam_store.cli", "ui", "--db", str(tmp_path / "none.db")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "no database at" in missing.stderr


@pytest.mark.slow
def test_langgraph_dev_serves_the_inspector_under_sgam(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """langgraph.json's http.app: the same pages on the server's port, over the store the
    graphs and the Store API use (a PUT through the server shows up in the inspector)."""
    from tests.test_langgraph_server import langgraph_server

    monkeypatch.setenv("SGAM_EMBEDDING", "none")
    with (
        langgraph_server(tmp_path, target, {}) as (url, _),
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        item = {"namespace": ["acme", "mira"], "key": "passport_deadline"}
        assert http.put("/store/items", json={**item, "value": {"value": "2026-06-30"}}).is_success
        keys = http.get("/sgam/keys.json", params={"tenant": "acme", "subject": "mira"}).json()
        assert [(r["key"], r["value"]) for r in keys["rows"]] == [
            ("passport_deadline", "2026-06-30")
        ]
        key = {"tenant": "acme", "subject": "mira", "attribute": "passport_deadline"}
        page = http.get("/sgam/key", params=key)
        assert page.status_code == 200 and 'class="sgam-timeline"' in page.text
        assert 'href="/sgam/static/ui.css"' in page.text
        assert http.get("/sgam/static/ui.css").status_code == 200
        assert http.get("/sgam/").status_code == 200
        assert http.get("/sgam/keys", params={"tenant": "acme", "page": "0"}).status_code == 400
        assert http.post("/sgam/review/undo", data={"tenant": "acme"}).status_code == 403
        assert http.get("/ok").status_code == 200


def test_a_version_citing_no_recorded_episode_still_shows(store: SGAMStore) -> None:
    """A fact may cite an id no episode was recorded under (or one since erased)."""
    store.replace_fact(
        MemoryFact(
            tenant_id="acme",
            subject="mira",
            attribute="visa",
            value="granted",
            valid_from="2026-06-01T00:00:00Z",
            source_episode_id="never-recorded",
        )
    )
    client = TestClient(create_app(store))
    params = {"tenant": "acme", "subject": "mira", "attribute": "visa"}
    [version] = client.get("/key.json", params=params).json()["versions"]
    assert version["source"]["kind"] == "missing"
    assert "(no recorded episode)" in client.get("/key", params=params).text


@pytest.mark.sqlite_only
def test_with_writes_a_person_records_a_review_decision(store: SGAMStore) -> None:
    """The queued deadline_note, with passport_deadline among its candidates (SQLite's
    keyword scores nominate it; the form and its checks are the same on any engine)."""
    seed(store)
    [review], _ = pending_reviews(store, "acme")
    new_id = review.new.fact_id
    old_ids = [c.fact.fact_id for c in review.candidates]
    deadline = store.fact_at("acme", "mira", "passport_deadline").fact_id
    assert deadline in old_ids
    client = TestClient(create_app(store, allow_writes=True), follow_redirects=False)
    form = {"tenant": "acme", "new_fact_id": str(new_id), "csrf": csrf_token(client, "acme")}
    verdicts = {f"verdict_{i}": "supersedes" if i == deadline else "independent" for i in old_ids}
    assert client.post("/review/decide", data={**form, "csrf": ""}).status_code == 403
    assert TestClient(create_app(store)).post("/review/decide", data=form).status_code == 403
    assert client.post("/review/decide", data=form).status_code == 400  # no verdicts
    maybe = {**form, **verdicts, f"verdict_{deadline}": "maybe"}
    assert client.post("/review/decide", data=maybe).status_code == 400
    elsewhere = TestClient(create_app(store, allow_writes=True, tenant="globex"))
    theirs = {**form, **verdicts, "csrf": csrf_token(elsewhere, "globex")}
    assert elsewhere.post("/review/decide", data=theirs).status_code == 404  # not its tenant
    assert client.post("/review/decide", data={**form, "new_fact_id": "1"}).status_code == 404
    assert store.fact_at("acme", "mira", "passport_deadline").fact_id == deadline  # untouched
    reason = {"reason": "the note restates the deadline"}
    done = client.post("/review/decide", data={**form, **verdicts, **reason})
    assert done.status_code == 303
    assert store.fact_at("acme", "mira", "passport_deadline") is None  # superseded
    decisions = client.get("/review.json", params={"tenant": "acme"}).json()
    assert decisions["queue"] == []
    recorded = [d for d in decisions["decisions"] if d["new_fact_id"] == new_id]
    assert {d["old_fact_id"]: d["decision"] for d in recorded} == {
        i: verdicts[f"verdict_{i}"] for i in old_ids
    }
    assert {(d["decided_by"], d["reason"]) for d in recorded} == {
        ("sgam ui", "the note restates the deadline")
    }


def test_episode_erasure_preview_is_the_purge_dry_run(target: str) -> None:
    with SGAMStore.from_conn_string(target) as store:
        store.setup()
        seed(store)
        client = TestClient(create_app(store, allow_writes=True))
        params = {"tenant": "acme", "id": "e1"}
        data = client.get("/episode.json", params=params).json()
        preview = data["erasure_preview"]
        assert preview["episode_ids"] == ["e1"] and preview["fact_ids"]
        assert {f["fact_id"] for f in data["facts"] if f["erased"]} <= set(preview["fact_ids"])
        html = client.get("/episode", params=params).text
        assert f"#{preview['fact_ids'][0]}" in html and "would remove" in html
        assert client.get("/episode.json", params=params).json()["erasure_preview"] == preview
        assert store.get_episode("e1", tenant_id="acme") is not None  # nothing erased
        assert store.purge_episode("acme", "e1").to_dict() == preview
        assert client.get("/episode", params=params).status_code == 404


def test_search_says_which_hit_set_a_flattened_score(store: SGAMStore, target: str) -> None:
    """Issue 38: "city 7" ranks first for "preference number 7" (BM25: the other two
    words are in half the tenant's memories) and every hit below scores its share,
    1/3, the exact match included. The ranking and scores stay the store's; the page
    says that the exact match's score was set by hit #1, and why."""
    for n in range(1, 40):
        store.put(("acme", f"u{n}"), "preference", {"text": f"preference number {n}"})
        store.put(("acme", f"u{n}"), "city", {"text": f"city {n}"})
    client = TestClient(create_app(store))
    params = {"tenant": "acme", "q": "preference number 7"}
    hits = client.get("/search.json", params=params).json()["hits"]
    found = store.for_tenant("acme").search((), query="preference number 7", limit=10)
    assert [(h["key"], h["score"]) for h in hits] == [(i.key, i.score) for i in found]
    for hit in hits:  # a score is the hit's own share, or names the hit whose it is
        setter = hits[hit["score_from"] - 1] if hit["score_from"] else hit
        assert setter["keyword"] == pytest.approx(hit["score"], abs=5e-5)
    html = client.get("/search", params=params).text
    assert "lowest</em> share of the query" in html
    assert html.count('set-by">set by #') == sum(h["score_from"] is not None for h in hits)
    if not target.startswith("postgres"):  # FTS5's BM25 ranks "city 7" first
        exact = next(h for h in hits if h["value"] == '{"text": "preference number 7"}')
        assert exact["keyword"] == 1.0 > exact["score"] and exact["score_from"] == 1
        assert html.count('set-by">set by #1<') == len(hits) - 1


def test_real_values_read_as_text_and_times_to_the_second(store: SGAMStore) -> None:
    """Issue 38: a LangMem memory shows its content, a long one cut once (the rest in
    <details>, so the text is on the page once); review evidence reads as fields, not
    JSON with \\u0027 escapes; times read to the second in HTML and keep their
    microseconds in JSON; an "as of" comes back readable, not as ...00.000000Z."""
    long = "I'd rather take the train. " * 200
    store.put(("acme", "mira"), "note", {"content": long})
    store.put(("acme", "mira"), "short", {"content": "Mira's tea: green"})
    new = store.put(("acme", "mira"), "fix", {"content": "Mira's tea is now black"})
    old = store.fact_at("acme", "mira", "short")
    assert new is None and old is not None
    fix = store.fact_at("acme", "mira", "fix")
    evidence = {"new": {"content": "Mira's tea is now black"}, "old": "Mira's tea: green"}
    verdict = Verdict(old.fact_id, "supersedes", "it's a correction", 0.9, evidence)
    store.apply_supersession(fix.fact_id, [verdict], decided_by="person", tenant_id="acme")
    client = TestClient(create_app(store))
    keys = client.get("/keys", params={"tenant": "acme", "subject": "mira"}).text
    assert "Mira&#39;s tea is now black" in keys and "{&#34;content" not in keys
    assert keys.count("train.") == 200  # the whole text, once: cut at a space, not twice
    assert '<details class="long">' in keys
    review = client.get("/review", params={"tenant": "acme"}).text
    assert "\\u0027" not in review and "<dt>new</dt><dd>Mira&#39;s tea is now black</dd>" in review
    key = {"tenant": "acme", "subject": "mira", "attribute": "fix"}
    page = client.get("/key", params={**key, "valid_at": "2030-01-01"}).text
    assert 'value="2030-01-01T00:00:00Z"' in page  # the "as of" input, readable
    assert ".000000Z" not in re.sub(r"<[^>]+>", "", page)  # (the SVG's data keep precision)
    assert re.search(r"\d{2}:\d{2}:\d{2}\.\d{6}", client.get("/key.json", params=key).text)


def _walk_names(client: TestClient, url: str) -> tuple[list[str], list[str]]:
    """Follow a name list's "next" links from `url`: (each page's JSON rows, flattened;
    each page's count line)."""
    rows, counts = [], []
    while url:
        html = client.get(html_unescape(url))
        assert html.status_code == 200, (url, html.text[-400:])
        counts.append(re.search(r'<p class="counts">(.*?)</p>', html.text, re.S).group(1))
        data = client.get(html.url.path + ".json", params=html.url.params).json()
        rows += [r["tenant"] if isinstance(r, dict) else r for r in data["rows"]]
        found = NEXT.search(html.text)
        url = found.group(1) if found else ""
    return rows, counts


def test_name_lists_page_by_keyset_and_count_on_request(
    store: SGAMStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tenants and subjects: each page starts after the last name shown (the tenant's
    own namespace, the subject "", included), a filter scans on from there, and how many
    there are is said when the page holds them all, or counted when asked (`count=1`)."""
    subjects = ["", "ann", "bob", "bobby", "cy"]
    for subject in subjects:
        store.put(("acme", *subject.split(".")) if subject else ("acme",), "k", {"v": 1})
    store.put(("globex", "x"), "k", {"v": 1})
    client = TestClient(create_app(store))
    rows, counts = _walk_names(client, "/subjects?tenant=acme&per_page=1")
    assert rows == subjects  # "" first, and the page after it goes on with "ann"
    assert counts[0].startswith("1 subject on this page, more follow")
    assert counts[-1].startswith("1 subject on this page ·")  # the last: nothing follows
    rows, _ = _walk_names(client, "/subjects?tenant=acme&per_page=1&filter=BO")
    assert rows == ["bob", "bobby"]
    with monkeypatch.context() as scan:  # a filter reads two names, then the next page goes on
        scan.setattr(pages, "SCAN_PAGES", 1)
        scan.setattr(pages, "MAX_PER_PAGE", 2)
        rows, counts = _walk_names(client, "/subjects?tenant=acme&per_page=1&filter=y")
    assert rows == ["bobby", "cy"]
    assert counts[0].startswith("0 subjects matching on this page, more follow")
    whole = client.get("/subjects.json", params={"tenant": "acme"}).json()
    assert whole["total"] == 5 and not whole["counted"]  # one page holds them all
    assert "count them" not in client.get("/subjects", params={"tenant": "acme"}).text
    assert "count tenants, facts and episodes" in client.get("/tenants").text  # the totals
    asked = client.get("/subjects", params={"tenant": "acme", "per_page": 2, "count": 1})
    assert '<p class="counts">5 subjects</p>' in asked.text
    assert client.get("/subjects.json?tenant=acme&per_page=2&count=1&filter=b").json()["total"] == 2
    page2 = client.get("/subjects.json", params={"tenant": "acme", "per_page": 2, "after": "ann"})
    assert page2.json()["rows"] == ["bob", "bobby"] and page2.json()["next"] == {"after": "bobby"}
    tenants = client.get("/tenants", params={"per_page": 1})
    assert "1 tenant on this page, more follow" in tenants.text
    assert "current facts" not in tenants.text  # the totals too are counted on request
    counted = client.get("/tenants.json", params={"per_page": 1, "count": 1}).json()
    assert counted["totals"] == {"tenants": 2, "current_facts": 6, "episodes": 0}
    assert _walk_names(client, "/tenants?per_page=1")[0] == ["acme", "globex"]
    bad = client.get("/subjects.json", params={"tenant": "acme", "after": "x\x00"})
    assert bad.status_code == 400 and "after" in bad.json()["error"]


def test_search_marks_the_window_of_the_time_asked(store: SGAMStore) -> None:
    """A query naming a month, asked at a point in time: the page marks the memories
    of that month as explain_search does; a query naming none marks nothing."""
    turns = [("r0", "Rosa: the bakery closed", "2025-01-10"),
             ("r1", "Rosa: we live in a tiny flat in Denver", "2025-02-10"),
             ("r2", "Rosa: first week in Seville, the flat is bigger", "2025-04-10")]  # fmt: skip
    told(store, "acme", turns, subject="rosa")
    client = TestClient(create_app(store))
    asked = {"tenant": "acme", "valid_at": "2025-08-01", "q": "Where was Rosa's flat in February?"}
    hits = client.get("/search.json", params=asked).json()["hits"]
    view = store.for_tenant("acme").as_of("2025-08-01T00:00:00Z")
    explained = view.explain_search((), asked["q"], limit=10)
    assert [(h["key"], h["in_window"]) for h in hits] == [
        (e.item.key, e.in_window) for e in explained
    ]
    assert [h["key"] for h in hits if h["in_window"]] == ["r1"]
    html = client.get("/search", params=asked).text
    assert html.count('window">in the window<') == 1 and "names a time or an event" in html
    plain = {**asked, "q": "Where is Rosa's flat?"}
    assert all(
        h["in_window"] is None for h in client.get("/search.json", params=plain).json()["hits"]
    )
    assert "names a time or an event" not in client.get("/search", params=plain).text

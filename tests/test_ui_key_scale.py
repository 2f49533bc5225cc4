"""The key page of a key rewritten many times (issue 38): one page of its versions, read
in as many statements whatever the key's length (before: two per version for its review
decisions, two per message it cites), and its pages together show every version once,
picture and table alike."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sgam_store import ExternalSource, MemoryFact, SGAMStore, Verdict, connect
from sgam_store.ui import create_app
from sgam_store.ui.pages import stamp

ENGINES = ("sqlite", "postgres")  # the tests taking `store` run on both
START = datetime(2026, 1, 1, 9, tzinfo=UTC)
KEY = {"tenant": "acme", "subject": "mira", "attribute": "daily_steps"}


def _rewritten(path: Path, times: int) -> None:
    """A key written `times` times, a day apart, each said in its own message."""
    with SGAMStore.from_conn_string(str(path), index=None) as store:
        store.setup()
        for day in range(times):
            said = f"I walked {1000 + day} steps"
            store.record_episode("acme", said, source_kind="user_message", episode_id=f"e{day}")
            store.replace_fact(
                MemoryFact(
                    tenant_id="acme",
                    subject="mira",
                    attribute="daily_steps",
                    value=str(1000 + day),
                    valid_from=START + timedelta(days=day),
                    source_episode_id=f"e{day}",
                )
            )


@pytest.fixture
def statements(tmp_path: Path) -> Iterator[Callable[..., int]]:
    """`statements(times, **params)`: the SQL statements the key page's JSON twin ran,
    on a store whose key was written `times` times, through one traced connection."""
    opened = []

    def run(times: int, **params: str) -> int:
        path = tmp_path / f"{times}.db"
        if not path.exists():
            _rewritten(path, times)
        conn = connect(str(path))
        store = SGAMStore(conn, index=None)
        opened.append(store)
        client = TestClient(create_app(store))
        assert client.get("/key.json", params={**KEY, **params}).status_code == 200  # warm
        ran: list[str] = []
        conn.set_trace_callback(ran.append)
        assert client.get("/key.json", params={**KEY, **params}).status_code == 200
        conn.set_trace_callback(None)
        return len(ran)

    yield run
    for store in opened:
        store.close()


def test_the_key_page_runs_as_many_statements_for_3_versions_as_for_24(
    statements: Callable[..., int],
) -> None:
    """3 and 24 writes (5 and 47 rows: one page each): no statement per version."""
    assert statements(24) == statements(3)


def test_a_long_keys_pages_run_as_many_statements_as_a_short_key(
    statements: Callable[..., int],
) -> None:
    """200 writes (399 rows): its first page, and a page in the middle, cost what a key
    of 3 writes costs: the page's rows are read, not the key."""
    short = statements(3)
    assert statements(200) == short
    assert statements(200, page="4") == short


def _bars_and_rows(html: str) -> tuple[list[str], list[str]]:
    bars = re.findall(r'<g class="version [a-z]+" data-fact-id="(\d+)"', html)
    rows = re.findall(r'<tr data-fact-id="(\d+)"', html)
    return bars, rows


def test_the_pages_of_a_long_key_show_every_version_once(tmp_path: Path) -> None:
    """Walked page by page, a key written 60 times (119 rows) shows each version once,
    in write order; each page draws exactly the rows its table lists, and the last page
    has no next link. A page past the end is a 404."""
    path = tmp_path / "long.db"
    _rewritten(path, 60)
    with SGAMStore.from_conn_string(str(path), index=None) as store:
        versions = store.versions("acme", "mira", "daily_steps")
        client = TestClient(create_app(store))
        seen: list[tuple[int, str]] = []
        for page in (1, 2, 3):
            params = {**KEY, "page": str(page)}
            data = client.get("/key.json", params=params).json()
            html = client.get("/key", params=params).text
            bars, rows = _bars_and_rows(html)
            ids = [str(v["fact_id"]) for v in data["versions"]]
            assert bars == rows == ids
            assert data["has_next"] == (page < 3) == ('rel="next"' in html)
            seen += [(v["fact_id"], v["known_from"]) for v in data["versions"]]
        assert seen == [(v.fact_id, stamp(v.known_from)) for v in versions]
        assert client.get("/key.json", params={**KEY, "page": "4"}).status_code == 404
        assert "versions 51 to 100" in client.get("/key", params={**KEY, "page": "2"}).text
        # As believed before its first write the key did not exist, whichever page is asked.
        before = {**KEY, "page": "2", "known_at": "2000-01-01"}
        assert client.get("/key.json", params=before).status_code == 404
        believed = client.get("/key.json", params={**before, "known_at": "2999-01-01"})
        assert believed.status_code == 200


def test_a_short_key_has_no_pager(tmp_path: Path) -> None:
    path = tmp_path / "short.db"
    _rewritten(path, 3)
    with SGAMStore.from_conn_string(str(path), index=None) as store:
        html = TestClient(create_app(store)).get("/key", params=KEY).text
        assert 'class="pager"' not in html and "versions 1 to" not in html


def test_a_keys_decisions_in_one_read(store: SGAMStore) -> None:
    """`key_decisions`: what `supersession_decisions` tells of each version of the key,
    for the whole key at once; another tenant's key of the same name has none."""
    for tenant in ("acme", "globex"):
        for day, key in enumerate(("old_a", "old_b", "new_a"), 1):
            store.replace_fact(
                MemoryFact(
                    tenant_id=tenant,
                    subject="mira",
                    attribute=key,
                    value=key,
                    valid_from=START + timedelta(days=day),
                    source_episode_id="external:test",
                )
            )
    new, old_a, old_b = (store.fact_at("acme", "mira", k) for k in ("new_a", "old_a", "old_b"))
    assert new is not None and old_a is not None and old_b is not None
    verdicts = [
        Verdict(old_a.fact_id, "supersedes", "restates it", 0.9),
        Verdict(old_b.fact_id, "independent", "another matter", 0.2),
    ]
    made = store.apply_supersession(new.fact_id, verdicts, decided_by="t", tenant_id="acme")
    assert [d.decision_id for d in store.key_decisions("acme", "mira", "new_a")] == [
        d.decision_id for d in made
    ]
    for key, decision in (("old_a", made[0]), ("old_b", made[1])):
        by_fact = {
            d.decision_id
            for v in store.versions("acme", "mira", key)
            for d in store.supersession_decisions(v, tenant_id="acme")
        }
        assert by_fact == {decision.decision_id}
        assert store.key_decisions("acme", "mira", key) == [decision]
    assert store.key_decisions("globex", "mira", "new_a") == []
    assert store.key_decisions("acme", "mira", "nothing") == []


def test_a_page_of_versions_refuses_bad_bounds(store: SGAMStore) -> None:
    """The store refuses a limit below 1 or a negative offset; the page a page 0."""
    store.put(("acme", "mira"), "daily_steps", {"value": "1000"})
    with pytest.raises(ValueError, match="limit"):
        store.versions("acme", "mira", "daily_steps", limit=0)
    with pytest.raises(ValueError, match="offset"):
        store.versions("acme", "mira", "daily_steps", limit=1, offset=-1)
    assert len(store.versions("acme", "mira", "daily_steps", limit=1, offset=0)) == 1
    refused = TestClient(create_app(store)).get("/key.json", params={**KEY, "page": "0"})
    assert refused.status_code == 400 and "page" in refused.json()["error"]


def test_who_said_a_page_of_facts_in_one_read(store: SGAMStore) -> None:
    """`sources`: each recorded episode of the tenant and each external marker, as
    `who_said` tells them; an id never recorded, or recorded by another tenant, is left
    out (the page shows it as missing). One string is refused, not read letter by letter."""
    store.record_episode("acme", "I moved", source_kind="user_message", episode_id="e1")
    store.record_episode("globex", "Not yours", source_kind="user_message", episode_id="g1")
    fact = store.replace_fact(
        MemoryFact(
            tenant_id="acme",
            subject="mira",
            attribute="city",
            value="Porto",
            valid_from=START,
            source_episode_id="e1",
        )
    )
    found = store.sources("acme", ["e1", "external:crm", "g1", "nobody", "e1"])
    assert set(found) == {"e1", "external:crm"}
    assert found["e1"] == store.who_said(fact, tenant_id="acme")
    marker = found["external:crm"]
    assert isinstance(marker, ExternalSource) and (marker.kind, marker.ref) == ("external", "crm")
    assert store.sources("acme", []) == {}
    with pytest.raises(ValueError, match="list"):
        store.sources("acme", "e1")

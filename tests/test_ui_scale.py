"""The inspector on large stores (issue 38): the paged library reads its pages use, on
both engines, and one request reading a bounded amount whatever the store's size
(counted in SQLite virtual-machine steps, not time)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langgraph.store.base import PutOp
from starlette.testclient import TestClient

from sgam_store import MemoryFact, SGAMStore, Verdict, connect
from sgam_store.core.errors import InvalidQueryError
from sgam_store.managers.supersession import (
    SMALL_NAMESPACE,
    pending_reviews,
    recent_decisions,
    review_queue,
)
from sgam_store.testing.realistic import Realistic, build
from sgam_store.ui import create_app

ENGINES = ("sqlite", "postgres")


def _fact(
    tenant: str, subject: str, attribute: str, value: str, day: int, source: str
) -> MemoryFact:
    return MemoryFact(
        tenant_id=tenant,
        subject=subject,
        attribute=attribute,
        value=value,
        valid_from=f"2026-06-{day:02d}T09:00:00Z",
        source_episode_id=source,
    )


def test_facts_citing_an_episode(store: SGAMStore) -> None:
    store.record_episode("acme", "I moved to Lisbon", source_kind="user_message", episode_id="e1")
    store.record_episode("acme", "Actually Porto", source_kind="user_message", episode_id="e2")
    store.replace_fact(_fact("acme", "mira", "city", "Lisbon", 1, "e1"))
    store.replace_fact(_fact("acme", "mira", "plan", "move", 1, "e1"))
    store.replace_fact(_fact("acme", "ana", "city", "Lisbon", 1, "e1"))
    store.replace_fact(_fact("globex", "mira", "city", "Lisbon", 1, "e1"))  # another e1
    before = max(f.recorded_at for f in store.ledger("acme"))
    store.replace_fact(_fact("acme", "mira", "city", "Porto", 3, "e2"))  # closes e1's city

    cited = store.facts_citing("e1", tenant_id="acme")
    assert [(f.subject, f.attribute, f.valid_to is None) for f in cited] == [
        ("ana", "city", True),
        ("mira", "city", False),  # closed by e2, still believed: it was true then
        ("mira", "plan", True),
    ]
    assert [f.tenant_id for f in store.facts_citing("e1", tenant_id="globex")] == ["globex"]
    assert len(store.facts_citing("e1", tenant_id="acme", limit=2)) == 2
    then = store.facts_citing("e1", tenant_id="acme", known_at=before)
    assert [f.valid_to for f in then] == [None, None, None]  # before e2 closed it
    assert store.facts_citing("e2", tenant_id="globex") == []
    with pytest.raises(ValueError, match="limit"):
        store.facts_citing("e1", tenant_id="acme", limit=0)


def _decide(store: SGAMStore, tenant: str, new_key: str, old_key: str, kind: str) -> int:
    old = store.fact_at(tenant, "mira", old_key)
    new = store.fact_at(tenant, "mira", new_key)
    assert old is not None and new is not None
    verdict = Verdict(old.fact_id, kind, "restates it", 0.9, {"new": 1})
    [made] = store.apply_supersession(new.fact_id, [verdict], decided_by="t", tenant_id=tenant)
    return made.decision_id


def test_recent_decisions_newest_first_with_their_memories(store: SGAMStore) -> None:
    for tenant in ("acme", "globex"):
        for day, key in enumerate(("old_a", "old_b", "new_a", "new_b"), 1):
            store.replace_fact(_fact(tenant, "mira", key, key, day, "external:test"))
    first = _decide(store, "acme", "new_a", "old_a", "supersedes")
    _decide(store, "globex", "new_a", "old_a", "independent")
    second = _decide(store, "acme", "new_b", "old_b", "duplicate")

    found = recent_decisions(store, "acme", limit=10)
    assert [d.decision.decision_id for d in found] == [second, first]
    assert [(d.new.attribute, d.old.attribute) for d in found] == [
        ("new_b", "old_b"),
        ("new_a", "old_a"),
    ]
    assert found[1].old.valid_to is not None  # superseded: its newest version is closed
    assert [d.decision.decision_id for d in recent_decisions(store, "acme", limit=1)] == [second]
    assert recent_decisions(store, "nobody") == []


def test_the_queue_without_searches(store: SGAMStore) -> None:
    small = ("acme", "mira")
    store.review_new_keys = False
    store.batch([PutOp(small, f"k{n}", {"content": f"note {n}"}) for n in range(3)])
    big = ("acme", "ana")
    store.batch([PutOp(big, f"k{n}", {"content": f"note {n}"}) for n in range(SMALL_NAMESPACE)])
    store.review_new_keys = True
    store.put(small, "fresh", {"content": "note fresh"})
    store.put(big, "fresh", {"content": "note fresh"})
    store.put(("acme", "zoe"), "alone", {"content": "nothing else here"})

    waiting, idle = review_queue(store, "acme")
    assert [(q.new.subject, q.candidates is None) for q in waiting] == [
        ("mira", False),
        ("ana", True),  # more than SMALL_NAMESPACE: the review would search
    ]
    assert [c.fact.attribute for c in waiting[0].candidates or []] == ["k2", "k1", "k0"]
    assert [d.reason for d in idle] == ["no other memory in its namespace"]
    reviews, _ = pending_reviews(store, "acme")
    assert reviews[0].candidates == waiting[0].candidates  # the same, without a search


def test_the_queue_and_the_decisions_page_by_keyset(store: SGAMStore) -> None:
    """A page of the queue starts after the last fact id the page before read, a page of
    the decisions below the last decision id: walked a row at a time, each list comes
    back whole, in order, once."""
    store.review_new_keys = True
    for n in range(5):  # each new key of a small namespace waits, with the ones before
        store.put(("acme", "mira"), f"k{n}", {"content": f"note {n}"})
    store.put(("globex", "mira"), "other", {"content": "another tenant's"})
    whole, _ = review_queue(store, "acme", limit=100)
    walked, after = [], 0
    while True:
        waiting, idle = review_queue(store, "acme", limit=1, after=after)
        read = [q.new.fact_id for q in waiting] + [d.fact_id for d in idle]
        if not read:
            break
        walked, after = walked + waiting, max(read)
    assert [q.new.fact_id for q in walked] == [q.new.fact_id for q in whole]
    assert len(whole) == 4  # k0 is alone: nothing before it to supersede
    reviews, _ = pending_reviews(store, "acme", limit=2, after=whole[1].new.fact_id)
    assert [r.new.fact_id for r in reviews] == [q.new.fact_id for q in whole[2:4]]

    for new, old in (("k1", "k0"), ("k2", "k0"), ("k3", "k1"), ("k4", "k2")):
        _decide(store, "acme", new, old, "independent")
    decided = [d.decision.decision_id for d in recent_decisions(store, "acme", limit=100)]
    pages, before = [], None
    while found := recent_decisions(store, "acme", limit=3, before=before):
        pages.append([d.decision.decision_id for d in found])
        before = pages[-1][-1]
    assert [i for page in pages for i in page] == decided and len(pages) == 2
    assert recent_decisions(store, "globex", before=decided[0]) == []


def test_the_change_feed_pages_by_keyset_through_ties(store: SGAMStore) -> None:
    """A correction writes several changes at one instant (the old version withdrawn,
    its closed copy, the new fact): a page may end among them, and the next, from
    (until=last.at, before_row_id=last.row_id), goes on with the rest of that instant."""
    for day in (1, 3, 5):
        store.replace_fact(_fact("acme", "mira", "city", f"city {day}", day, "external:t"))
    store.put(("acme", "ana"), "k", {"v": 1})
    store.delete(("acme", "ana"), "k")
    view = store.for_tenant("acme")
    whole = view.changes("2000-01-01T00:00:00Z", limit=100)
    assert len({c.at for c in whole}) < len(whole)  # some entries share their instant
    walked = view.changes("2000-01-01T00:00:00Z", limit=1)
    while more := view.changes(
        "2000-01-01T00:00:00Z", until=walked[-1].at, before_row_id=walked[-1].row_id, limit=1
    ):
        walked += more
    assert [(c.at, c.row_id, c.kind) for c in walked] == [(c.at, c.row_id, c.kind) for c in whole]
    last = whole[-1]  # the oldest: nothing after it, even at its own instant
    assert store.changes(last.at, until=last.at, before_row_id=last.row_id) == []
    with pytest.raises(InvalidQueryError, match="until"):
        store.changes("2000-01-01T00:00:00Z", before_row_id=5)
    with pytest.raises(InvalidQueryError, match="positive"):
        store.changes("2000-01-01T00:00:00Z", until=last.at, before_row_id=0)


def test_names_at_a_past_instant(store: SGAMStore) -> None:
    """Tenants and subjects with a fact visible at (valid time, belief time), paged by
    name as now: exactly what an `as_of` view lists then."""
    for tenant, subject, day in (("a", "x", 1), ("a", "y", 5), ("b", "z", 5), ("c", "w", 1)):
        store.replace_fact(_fact(tenant, subject, "k", "v", day, "external:t"))
    store.delete(("c", "w"), "k")  # closed now; it held in June
    june2, june9 = "2026-06-02T00:00:00Z", "2026-06-09T00:00:00Z"
    assert store.tenant_names() == ["a", "b"]
    assert store.tenant_names(at=june2) == ["a", "c"]
    assert store.tenant_names(at=june9) == ["a", "b", "c"]
    assert store.tenant_names(at=june2, after="a", limit=1) == ["c"]
    assert store.subject_names("a", at=june2) == ["x"]
    assert store.subject_names("a", at=june9) == ["x", "y"]
    assert store.subject_names("a", at=june9, after="x") == ["y"]
    before = "2000-01-01T00:00:00Z"  # believed then: nothing yet
    assert store.tenant_names(at=june9, known_at=before) == []
    assert store.subject_names("a", known_at=before) == []
    listed = store.as_of(june2).list_namespaces(max_depth=2)
    assert sorted({ns[0] for ns in listed}) == store.tenant_names(at=june2)


@pytest.mark.parametrize(
    ("page", "params", "named"),
    [
        ("review", {"queue_after": "-1"}, "queue_after"),
        ("review", {"decisions_before": "x"}, "decisions_before"),
        ("review", {"per_page": "0"}, "per_page"),
        ("changes", {"before_at": "nope", "before_row": "3"}, "before_at"),
        ("changes", {"before_at": "2026-06-02T00:00:00", "before_row": "3"}, "before_at"),
        ("changes", {"before_at": "2026-06-02", "before_row": "-3"}, "before_row"),
    ],
)
def test_a_bad_cursor_is_a_400_naming_it(
    store: SGAMStore, page: str, params: dict, named: str
) -> None:
    store.put(("acme", "mira"), "k", {"v": 1})
    client = TestClient(create_app(store))
    answer = client.get(f"/{page}.json", params={"tenant": "acme", **params})
    assert answer.status_code == 400 and named in answer.json()["error"]


def test_capped_key_counts(store: SGAMStore) -> None:
    """Each subject's count stops at cap + 1: a bounded read however many keys it holds."""
    store.batch([PutOp(("a", "big"), f"k{n}", {"v": n}) for n in range(5)])
    store.put(("a", "small"), "k", {"v": 1})
    found = store.count_keys("a", ["big", "small", "none"], cap=3)
    assert found == {"big": 4, "small": 1, "none": 0}
    assert store.count_keys("a", ["big"]) == {"big": 5}
    with pytest.raises(ValueError, match="limit"):
        store.count_keys("a", ["big"], cap=0)


def test_capped_totals_of_one_tenant(store: SGAMStore) -> None:
    store.batch([PutOp(("a", f"s{n}"), "k", {"v": n}) for n in range(4)])
    store.put(("b", "s"), "k", {"v": 1})
    store.record_episode("a", "hello", source_kind="user_message", episode_id="e1")
    assert store.capped_totals(tenant_id="a") == {"facts": 4, "episodes": 1}
    assert store.capped_totals(2, tenant_id="a") == {"facts": 3, "episodes": 1}
    assert store.capped_totals(tenant_id="b") == {"facts": 1, "episodes": 0}


# ------------------------------------------------------------------ one request, bounded


SMALL, LARGE = 1000, 5000
EPOCH = "1970-01-01T00:00:00Z"
PAST = "2026-03-01T00:00:00Z"  # valid time halfway through the generated histories
BELIEVED = "2100-01-01T00:00:00Z"  # belief time after every write: the past-instant path


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Realistic]:
    """The SGAM layout at two sizes: the big tenant grows five-fold between them."""
    where = tmp_path_factory.mktemp("scale")
    return {n: build(str(where / f"{n}.db"), layout="sgam", facts=n) for n in (SMALL, LARGE)}


class Steps:
    """Virtual-machine steps SQLite ran on one connection: the work its statements did,
    rows read included, whatever the machine's speed."""

    EVERY = 100

    def __init__(self, conn: Any) -> None:
        self.count = 0
        conn.set_progress_handler(self._tick, self.EVERY)

    def _tick(self) -> int:
        self.count += self.EVERY
        return 0


@pytest.fixture
def inspect(stores: dict[int, Realistic]) -> Iterator[Callable[..., int]]:
    """`inspect(size, path, params)`: the steps one request took on that store, through
    one connection (no reader pool) that the counter watches."""
    opened = []

    def run(size: int, path: str, params: dict[str, str]) -> int:
        conn = connect(stores[size].path)
        store = SGAMStore(conn, index=None)
        opened.append(store)
        client = TestClient(create_app(store), raise_server_exceptions=False)
        client.get(f"{path}.json", params=params)  # warm: schema checks, caches
        steps = Steps(conn)
        assert client.get(f"{path}.json", params=params).status_code == 200
        return steps.count

    yield run
    for store in opened:
        store.close()


def _pages(made: Realistic, store_path: str) -> dict[str, tuple[str, dict[str, str]]]:
    with SGAMStore.from_conn_string(store_path, index=None) as store:
        tenant, subject = store.layout.split(made.deep_key[0])
        deep = store.fact_at(tenant, subject, made.deep_key[1])
        assert deep is not None
        big = made.big_tenant
        decided = recent_decisions(store, big, limit=10)[-1].decision
        waiting, idle = review_queue(store, big, limit=10)
        queued = max([q.new.fact_id for q in waiting] + [d.fact_id for d in idle])
        changed = store.changes(EPOCH, tenant_id=big, limit=100)[-1]
        # Page 2 of a list of names starts after page 1's last name, as its link does.
        cut = store.subject_names(big, limit=10)[-1]
        cut_past = store.subject_names(big, limit=5, at=PAST)[-1]
        tenant_cut = store.tenant_names(limit=1)[-1]
    past = {"valid_at": PAST}
    return {
        "tenants": ("/tenants", {}),
        "tenants p2": ("/tenants", {"per_page": "1", "after": tenant_cut, "page": "2"}),
        "tenants (past)": ("/tenants", past),
        "subjects": ("/subjects", {"tenant": big}),
        "subjects p2": (
            "/subjects",
            {"tenant": big, "page": "2", "per_page": "10", "after": cut},
        ),
        "subjects (past)": ("/subjects", {"tenant": big, **past}),
        "subjects p2 (past)": (
            "/subjects",
            {"tenant": big, "page": "2", "per_page": "5", "after": cut_past, **past},
        ),
        "subjects (believed)": ("/subjects", {"tenant": big, "known_at": BELIEVED}),
        "keys": ("/keys", {"tenant": big, "subject": subject}),
        "review": ("/review", {"tenant": big}),
        "review p2": (
            "/review",
            {
                "tenant": big,
                "queue_after": str(queued),
                "decisions_before": str(decided.decision_id),
            },
        ),
        "episode": ("/episode", {"tenant": big, "id": deep.source_episode_id}),
        "changes": ("/changes", {"tenant": big}),
        "changes p2": (
            "/changes",
            {"tenant": big, "before_at": changed.at, "before_row": str(changed.row_id)},
        ),
    }


@pytest.mark.parametrize(
    "page",
    [
        "tenants",
        "tenants p2",
        "tenants (past)",
        "subjects",
        "subjects p2",
        "subjects (past)",
        "subjects p2 (past)",
        "subjects (believed)",
        "keys",
        "review",
        "review p2",
        "episode",
        "changes",
        "changes p2",
    ],
)
def test_one_request_reads_a_bounded_amount(
    page: str,
    stores: dict[int, Realistic],
    inspect: Callable[..., int],
) -> None:
    """Five times the facts, about five times the big tenant, at most 1.5 times the work:
    a page reads its rows and index lookups, not the tenant (SQLite: counts its steps),
    with the caps as they ship. A list's length and the store's totals, which grow with
    the store up to their caps (200 names, 10,000 facts), are counted on request only
    (before: the tenants page counted every current fact up to 10,000 on each request,
    and a subjects page sought 201 names to say "200+")."""
    work = {}
    for size, made in stores.items():
        path, params = _pages(made, made.path)[page]
        work[size] = inspect(size, path, params)
    assert work[LARGE] <= 1.5 * work[SMALL] + 5_000, work


def test_the_generated_stores_differ_five_fold(stores: dict[int, Realistic]) -> None:
    assert stores[LARGE].facts >= 4.5 * stores[SMALL].facts


def test_names_by_index_seeks(store: SGAMStore) -> None:
    """Tenants and a tenant's subjects holding a current fact, in order, paged by name."""
    store.batch(
        [
            PutOp(ns, "k", {"text": "x"})
            for ns in (("b", "x"), ("a", "y", "z"), ("a", "y"), ("a",), ("c", "gone"))
        ]
    )
    store.delete(("c", "gone"), "k")  # closed: no longer current
    assert store.tenant_names() == ["a", "b"]
    assert store.tenant_names(after="a") == ["b"]
    assert store.tenant_names(limit=1) == ["a"]
    assert store.subject_names("a") == ["", "y", "y.z"]  # "": the tenant's own namespace
    assert store.subject_names("a", after="") == ["y", "y.z"]
    assert store.subject_names("a", after="y", limit=1) == ["y.z"]
    assert store.subject_names("c") == []
    assert store.capped_totals(cap=2) == {"facts": 3, "episodes": 0}  # 4 current: more than 2
    assert store.capped_totals() == {"facts": 4, "episodes": 0}
    with pytest.raises(ValueError, match="limit"):
        store.tenant_names(limit=0)


def test_a_subjects_facts_by_key(store: SGAMStore) -> None:
    """One namespace's current facts, a page at a time, in key order; not those below."""
    store.batch([PutOp(("a", "s"), key, {"text": key}) for key in ("c", "a", "b", "gone")])
    store.batch([PutOp(("a", "s", "deeper"), "z", {"text": "z"}), PutOp(("b", "s"), "x", {})])
    store.delete(("a", "s"), "gone")
    page = store.subject_facts("a", "s", limit=2)
    assert [(f.attribute, f.value) for f in page] == [("a", {"text": "a"}), ("b", {"text": "b"})]
    assert [f.attribute for f in store.subject_facts("a", "s", limit=2, offset=2)] == ["c"]
    assert [f.attribute for f in store.subject_facts("a", "s", after="a")] == ["b", "c"]
    assert [f.attribute for f in store.subject_facts("a", "s", limit=1, after="b")] == ["c"]
    assert store.subject_facts("a", "s", after="c") == []
    with pytest.raises(ValueError, match="after"):
        store.subject_facts("a", "s", after="")
    assert [f.attribute for f in store.subject_facts("a", "s.deeper")] == ["z"]
    with pytest.raises(ValueError, match="offset"):
        store.subject_facts("a", "s", offset=-1)


def test_a_deep_page_of_a_subjects_keys_costs_what_page_two_does(tmp_path) -> None:
    """A subject's keys page by keyset (`after`, the last key shown): page 40 of 2,000
    keys is a seek, as page 2 is, where an offset read the 1,950 keys it skipped."""
    path = str(tmp_path / "keys.db")
    with SGAMStore.from_conn_string(path, index=None) as store:
        store.setup()
        store.batch([PutOp(("a", "user"), f"k{n:05d}", {"v": n}) for n in range(2_000)])
    conn = connect(path)
    store = SGAMStore(conn, index=None)
    client = TestClient(create_app(store))
    work = {}
    for page, after in ((2, "k00049"), (40, "k01949")):
        params = {"tenant": "a", "subject": "user", "after": after, "page": str(page)}
        client.get("/keys.json", params=params)  # warm
        steps = Steps(conn)
        rows = client.get("/keys.json", params=params).json()["rows"]
        work[page] = steps.count
        assert rows[0]["key"] == f"k{int(after[1:]) + 1:05d}" and len(rows) == 50
    store.close()
    assert work[40] <= 1.2 * work[2] + 1_000, work

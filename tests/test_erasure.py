"""Erasure: purge removes every version, vector, keyword row and episode text; no API sees it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from sgam_store import InvalidFactError, InvalidNamespaceError, MemoryFact, SGAMStore
from sgam_store.cli import main
from sgam_store.engines.sqlite.indexing import FACT_MASK

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine

TOKEN = "zanzibarquux"  # only in the data that gets purged
PASSPORT = [  # (episode, value, valid_from): the seed's order, delayed e0 last
    ("e1", "2026-07-15", "2026-06-01T09:00:00Z"),
    ("e2", "2026-06-30", "2026-06-03T10:00:00Z"),
    ("e0", "2026-08-01", "2026-05-30T08:00:00Z"),
]
VALID_AT = ["2026-05-31T00:00:00Z", "2026-06-02T00:00:00Z", "2026-06-04T00:00:00Z"]


@dataclass
class Seeded:
    """Ids and instants of acme/mira's data, captured before a purge."""

    fact_ids: set[int] = field(default_factory=set)
    row_ids: set[int] = field(default_factory=set)
    vec_rowids: set[int] = field(default_factory=set)
    known_at: list[datetime] = field(default_factory=list)
    episodes: tuple[str, ...] = ("e0", "e1", "e2")
    attributes: tuple[str, ...] = ("passport_deadline", "tone")


def mira_fact(episode: str, value: str, valid_from: str, tenant: str = "acme") -> MemoryFact:
    return MemoryFact(
        tenant_id=tenant,
        subject="mira",
        attribute="passport_deadline",
        value={"text": f"{TOKEN} deadline {value}" if tenant == "acme" else value},
        valid_from=valid_from,
        source_episode_id=episode,
    )


def seed(store: SGAMStore) -> Seeded:
    """acme/mira (to purge) with history, vectors and episodes; acme/bob and globex stay."""
    seeded = Seeded()
    for episode, value, valid_from in PASSPORT:
        store.record_episode(
            "acme", f"Mira ({TOKEN}): deadline {value}", source_kind="user_message",
            episode_id=episode, thread_id="t1",
        )  # fmt: skip
        written = store.replace_fact(mira_fact(episode, value, valid_from))
        seeded.known_at.append(written.recorded_at)
    store.put(("acme", "mira"), "tone", {"text": f"{TOKEN} prefers short answers"})
    store.put(("acme", "bob"), "tone", {"text": "bob prefers long answers"})
    store.record_episode("globex", "globex note", source_kind="user_message", episode_id="g1")
    store.replace_fact(mira_fact("g1", "2026-09-10", "2026-06-02T12:00:00Z", tenant="globex"))
    rows = store.conn.execute(
        "SELECT row_id, fact_id FROM facts WHERE tenant_id = 'acme' AND subject = 'mira'"
    ).fetchall()
    seeded.row_ids = {r[0] for r in rows}
    seeded.fact_ids = {r[1] for r in rows}
    seeded.vec_rowids = {
        r[0]
        for r in store.conn.execute(
            "SELECT vec_rowid FROM vector_rows WHERE fact_id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(seeded.fact_ids)),),
        )
    }
    return seeded


def in_list(ids: set) -> tuple[str, str]:
    return "(SELECT value FROM json_each(?))", json.dumps(sorted(ids))


def raw_counts(store: SGAMStore, s: Seeded) -> dict[str, int]:
    """Rows of the seeded data left in each raw table."""
    q, facts = in_list(s.fact_ids)
    _, rows = in_list(s.row_ids)
    _, vecs = in_list(s.vec_rowids)
    _, eps = in_list(set(s.episodes))
    one = lambda sql, *p: store.conn.execute(sql, p).fetchone()[0]  # noqa: E731
    return {
        "facts": one(
            f"SELECT COUNT(*) FROM facts WHERE fact_id IN {q} OR row_id IN {q}", facts, rows
        ),
        "vector_rows": one(f"SELECT COUNT(*) FROM vector_rows WHERE fact_id IN {q}", facts),
        "vector_rowids": one(f"SELECT COUNT(*) FROM vector_rows WHERE vec_rowid IN {q}", vecs),
        "fact_fts": one(f"SELECT COUNT(*) FROM fact_fts WHERE rowid & {FACT_MASK} IN {q}", facts),
        "fts_token": one("SELECT COUNT(*) FROM fact_fts WHERE fact_fts MATCH ?", TOKEN),
        "episodes": one(f"SELECT COUNT(*) FROM episodes WHERE episode_id IN {q}", eps),
        "episode_text": one("SELECT COUNT(*) FROM episodes WHERE content LIKE ?", f"%{TOKEN}%"),
    }


def mira_items(results: list) -> list:
    return [
        it for it in results if tuple(it.namespace)[-1:] == ("mira",) and TOKEN in str(it.value)
    ]


def visible_anywhere(store: SGAMStore, s: Seeded) -> list[str]:
    """Every read API that could show acme/mira's data; returns which ones still do."""
    seen: list[str] = []
    ns = ("acme", "mira")
    checks: dict[str, object] = {
        "get": [store.get(ns, a) for a in s.attributes],
        "search query": mira_items(store.search(("acme",), query=f"{TOKEN} deadline")),
        "search query, no prefix": mira_items(store.search((), query=TOKEN)),
        "search listing": store.search(ns),
        "list_namespaces": [n for n in store.list_namespaces(prefix=("acme",)) if n == ns],
        "tenant view get": [store.for_tenant("acme").get(("mira",), a) for a in s.attributes],
        "tenant view search": mira_items(store.for_tenant("acme").search((), query=TOKEN)),
        "episodes": [store.get_episode(e, tenant_id="acme") for e in s.episodes],
    }
    for known in [None, *s.known_at]:
        checks[f"history@{known}"] = [store.history("acme", "mira", a, known) for a in s.attributes]
        for at in VALID_AT:
            view = store.as_of(at, known_at=known)
            checks[f"fact_at@{at},{known}"] = [
                store.fact_at("acme", "mira", a, at=at, known_at=known) for a in s.attributes
            ]
            checks[f"as_of get@{at},{known}"] = [view.get(ns, a) for a in s.attributes]
            checks[f"as_of search@{at},{known}"] = mira_items(view.search(("acme",), query=TOKEN))
            checks[f"as_of listing@{at},{known}"] = view.search(ns)
            checks[f"as_of namespaces@{at},{known}"] = [
                n for n in view.list_namespaces(prefix=("acme",)) if n == ns
            ]
    for name, result in checks.items():
        if any(x not in (None, []) for x in result):  # type: ignore[attr-defined]
            seen.append(name)
    return seen


def others_intact(store: SGAMStore) -> None:
    assert store.get(("acme", "bob"), "tone").value == {"text": "bob prefers long answers"}
    assert store.fact_at("globex", "mira", "passport_deadline").value == {"text": "2026-09-10"}
    assert store.get_episode("g1", tenant_id="globex") is not None
    assert store.search(("acme", "bob"), query="long answers")[0].key == "tone"


@pytest.mark.sqlite_only  # reads SQLite's own tables or file
def test_purge_subject_then_its_episodes_leaves_nothing_readable(vstore: SGAMStore) -> None:
    s = seed(vstore)
    assert len(visible_anywhere(vstore, s)) > 20  # the checks can see the data
    assert all(raw_counts(vstore, s).values())

    report = vstore.purge("acme", "mira")
    assert set(report.fact_ids) == s.fact_ids
    assert report.deleted["facts"] == len(s.row_ids)
    assert report.deleted["vector_rows"] == len(s.vec_rowids)
    assert "fact_vectors" not in report.deleted  # vectors live in vector_rows alone
    assert report.deleted["fact_fts"] == len(s.fact_ids)
    assert report.deleted["episodes"] == 0  # a subject purge keeps episodes, and names them
    assert report.source_episode_ids == ["e0", "e1", "e2", "external:store.put"]
    for episode in s.episodes:  # not "external:store.put": bob's plain put shares it
        again = vstore.purge_episode("acme", episode)
        assert again.fact_ids == [] and again.episode_ids == [episode]
    assert visible_anywhere(vstore, s) == []
    assert raw_counts(vstore, s) == dict.fromkeys(raw_counts(vstore, s), 0)
    others_intact(vstore)


@pytest.mark.sqlite_only  # reads SQLite's own tables or file
def test_purge_tenant_removes_everything_of_it(vstore: SGAMStore) -> None:
    s = seed(vstore)
    vstore.end_session("acme", "t1")
    report = vstore.purge("acme")
    assert report.deleted["episodes"] == 3 and report.deleted["ended_sessions"] == 1
    assert visible_anywhere(vstore, s) == []
    assert raw_counts(vstore, s) == dict.fromkeys(raw_counts(vstore, s), 0)
    assert vstore.conn.execute(
        "SELECT COUNT(*) FROM facts WHERE tenant_id = 'acme'"
    ).fetchone() == (0,)
    assert vstore.list_namespaces(prefix=("acme",)) == []
    assert vstore.purge("acme").deleted == dict.fromkeys(report.deleted, 0)  # idempotent
    assert vstore.fact_at("globex", "mira", "passport_deadline") is not None
    # The tenant id itself is gone (its keyword slot); writing to it again starts afresh.
    assert report.deleted["tenants"] == 1
    tenants = {r[0] for r in vstore.conn.execute("SELECT tenant_id FROM tenants")}
    assert "acme" not in tenants and "globex" in tenants
    vstore.put(("acme", "mira"), "tone", {"text": "prefers kiwifruit"})
    keyword = SGAMStore(vstore.conn, retrieval={"mode": "keyword"})
    assert [i.key for i in keyword.search(("acme",), query="kiwifruit")] == ["tone"]
    assert keyword.search(("globex",), query="kiwifruit") == []


@pytest.mark.sqlite_only  # reads SQLite's own tables or file
def test_purge_episode_keeps_facts_that_have_another_source(store: SGAMStore) -> None:
    for episode in ("e1", "e2"):
        store.record_episode(
            "acme", f"said {episode}", source_kind="user_message", episode_id=episode
        )
    only_e1 = store.replace_fact(mira_fact("e1", "a", "2026-06-01T00:00:00Z"))
    both = store.replace_fact(
        MemoryFact(tenant_id="acme", subject="mira", attribute="city", value="Lima",
                   valid_from="2026-06-01T00:00:00Z", source_episode_id="e1")
    )  # fmt: skip
    store.conn.execute("INSERT INTO fact_sources VALUES (?, 'e2', 'acme')", (both.fact_id,))
    only_e2 = store.replace_fact(
        MemoryFact(tenant_id="acme", subject="mira", attribute="pet", value="cat",
                   valid_from="2026-06-01T00:00:00Z", source_episode_id="e2")
    )  # fmt: skip

    report = store.purge_episode("acme", "e1")
    assert report.fact_ids == [only_e1.fact_id]
    assert report.resourced_fact_ids == [both.fact_id]
    assert report.episode_ids == ["e1"]
    assert store.fact_at("acme", "mira", "passport_deadline") is None
    assert store.fact_at("acme", "mira", "city").source_episode_id == "e2"
    assert store.fact_at("acme", "mira", "pet").fact_id == only_e2.fact_id
    assert store.conn.execute("SELECT * FROM fact_sources").fetchall() == [
        (both.fact_id, "e2", "acme")
    ]

    assert store.purge_episode("acme", "e2").fact_ids == sorted([both.fact_id, only_e2.fact_id])
    assert store.conn.execute("SELECT COUNT(*) FROM fact_sources").fetchone() == (0,)


def test_erasing_the_middle_of_a_history_leaves_a_gap(store: SGAMStore) -> None:
    facts = {ep: store.replace_fact(mira_fact(ep, v, vf)) for ep, v, vf in PASSPORT}
    assert facts["e2"].supersedes_fact_id == facts["e1"].fact_id
    report = store.purge_episode("acme", "e1")
    assert report.cleared_supersedes == 1
    history = store.history("acme", "mira", "passport_deadline")
    assert [f.source_episode_id for f in history] == ["e0", "e2"]
    assert history[0].valid_to == facts["e1"].valid_from  # not reopened over e1's span
    assert history[1].supersedes_fact_id is None
    assert store.fact_at("acme", "mira", "passport_deadline", at="2026-06-02T00:00:00Z") is None


def test_purge_stays_in_its_tenant(store: SGAMStore) -> None:
    store.record_episode("acme", "acme e1", source_kind="user_message", episode_id="e1")
    mine = store.replace_fact(mira_fact("e1", "x", "2026-06-01T00:00:00Z"))
    store.replace_fact(mira_fact("thread:t1", "y", "2026-06-01T00:00:00Z", tenant="globex"))
    report = store.purge_episode("globex", "e1")
    assert report.fact_ids == [] and report.episode_ids == []
    assert store.fact_at("acme", "mira", "passport_deadline").fact_id == mine.fact_id
    assert store.purge_episode("acme", "thread:t1").fact_ids == []
    assert store.fact_at("globex", "mira", "passport_deadline") is not None


@pytest.mark.sqlite_only  # reads SQLite's own tables or file
def test_secure_purge_leaves_no_bytes_on_disk(vstore: SGAMStore, db_path: str) -> None:
    seed(vstore)
    assert int(vstore.conn.execute("PRAGMA secure_delete").fetchone()[0]) == 0
    report = vstore.purge("acme", secure_delete=True)
    assert report.checkpointed is True
    assert int(vstore.conn.execute("PRAGMA secure_delete").fetchone()[0]) == 0  # restored
    on_disk = b"".join(
        p.read_bytes() for p in (Path(db_path), Path(db_path + "-wal")) if p.exists()
    )
    assert TOKEN.encode() not in on_disk
    assert b"globex note" in on_disk  # the scan does read the data that stays


@pytest.mark.sqlite_only  # reads SQLite's own tables or file
def test_vacuum_gives_back_free_pages(store: SGAMStore) -> None:
    for i in range(60):
        store.put(("acme", "mira"), f"note{i}", {"text": f"{TOKEN} {i} " + "x" * 3000})
    store.purge("acme", "mira")
    before = store.stats()["file"]
    assert before["freelist_count"] > 0
    store.vacuum()
    after = store.stats()["file"]
    assert after["freelist_count"] == 0 and after["page_count"] < before["page_count"]


def test_purge_validates_selectors(store: SGAMStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.purge("a.b")
    with pytest.raises(InvalidFactError):
        store.purge("acme", "mira", "")
    with pytest.raises(InvalidNamespaceError):
        store.purge("acme", "mira..x")


@pytest.mark.sqlite_only  # reads SQLite's own tables or file
def test_cli_purge_and_stats(
    vstore: SGAMStore, db_path: str, capsys: pytest.CaptureFixture
) -> None:

    s = seed(vstore)
    assert main(["purge", "--db", db_path, "--tenant", "acme"]) == 2
    assert "--whole-tenant" in capsys.readouterr().err
    assert (
        main(["purge", "--db", db_path, "--tenant", "acme", "--episode", "e1", "--subject", "mira"])
        == 2
    )
    assert capsys.readouterr().err.count("\n") == 1

    assert main(["purge", "--db", db_path, "--tenant", "acme", "--subject", "mira", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["fact_ids"]) == s.fact_ids and out["deleted"]["facts"] == len(s.row_ids)
    assert main(["purge", "--db", db_path, "--tenant", "acme", "--episode", "e1", "--secure"]) == 0
    assert "episodes" in capsys.readouterr().out  # the human table

    assert main(["stats", "--db", db_path, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["rows"]["episodes"] == 3  # e0, e2 and globex's g1
    assert stats["rows"]["tenants"] == 2
    assert main(["vacuum", "--db", db_path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["freelist_count"] == 0

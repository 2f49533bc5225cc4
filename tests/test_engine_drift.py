"""The portable statements give the same rows on both engines.

One small store is built twice through the public API, on SQLite and on PostgreSQL, and
each statement of `engines/common/` is then run through each engine's statement sets on
the same arguments. Instants differ between the two builds (each wrote at its own now),
so they compare as a marker; everything else, ids and order included, must be equal. A
statement edited in one engine alone fails here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest

from sgam_store import SGAMStore
from sgam_store.core.models import FactRow, MemoryFact
from sgam_store.engines import common
from tests import pg

# The tables both engines have (each has its own keyword and vector tables).
SHARED_TABLES = {
    "facts",
    "fact_sources",
    "backfill_log",
    "episodes",
    "ended_sessions",
    "memory_candidates",
    "supersession_queue",
    "supersession_decisions",
}
INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
FAR = "9999-12-31T00:00:00.000000Z"
EPOCH = "0001-01-01T00:00:00.000000Z"
PAST = "2025-01-01T00:00:00.000000Z"  # after mira's city began, before the puts


def _fill(store: SGAMStore) -> None:
    """The same history on each engine: puts, a correction, a delete, two tenants, episodes,
    an ended thread, candidates with support."""
    for tenant in ("acme", "zeta"):
        for i in range(4):
            store.put((tenant, "prefs"), f"k{i}", {"text": f"likes {i}", "n": i})
        store.put((tenant, "prefs"), "k1", {"text": "likes one, corrected"})
        store.delete((tenant, "prefs"), "k2")
        episode = store.record_episode(
            tenant,
            f"{tenant} said hello",
            source_kind="user_message",
            thread_id="t1",
            retention_class="short",
            episode_id=f"{tenant}-e1",
        )
        store.replace_fact(
            MemoryFact(
                tenant_id=tenant,
                subject="mira",
                attribute="city",
                value="Lyon",
                valid_from="2024-01-01T00:00:00Z",
                source_episode_id=episode.episode_id,
                retention_policy="session",
            )
        )
    for episode_id in ("B-ep", "a-ep"):  # byte-wise, "B" sorts before "a"
        store.record_episode("acme", episode_id, source_kind="tool_result", episode_id=episode_id)
    store.end_session("acme", "t1")
    engine = store.engine

    def writes(cur: Any) -> None:
        """Every portable write statement, run alike on both; the cases read their rows."""
        c, day = engine.candidates, "2024-01-02T00:00:00.000000Z"
        ids = [
            c.create(
                cur,
                "acme",
                "mira",
                "pet",
                f'"cat{n}"',
                key,
                "semantic",
                "low_confidence",
                "2024-01-01T00:00:00.000000Z",
                expiry,
            )
            for n, (key, expiry) in enumerate((("a", FAR), ("b", FAR), ("c", day)))
        ]
        for episode in ("acme-e1", "B-ep", "a-ep"):
            for cid in ids[:2]:
                c.add_support(cur, cid, episode, '{"evidence": "' + episode + '"}', 0.5, day)
        c.refresh(cur, ids[0], '"cat, again"', day, FAR)
        fact = engine.erasure.facts_of(cur, "acme", "mira", "city")[0]
        c.mark_promoted(cur, ids[1], fact, "recurrence", day)
        c.link_sources(cur, ids[1], fact, "acme-e1")
        c.expire_due(cur, "2025-01-01T00:00:00.000000Z", "acme")
        c.mark_extracted(cur, "acme", "acme-e1", "test", day)
        others = engine.erasure.facts_of(cur, "acme", "prefs")
        for old in others[:2]:
            engine.supersession.record(
                cur,
                ("acme", fact, old, "supersedes", 0.9, "moved", '{"why": 1}', "test", day, None),
            )
        engine.supersession.mark_undone(cur, 1, day)
        engine.supersession.dequeue(cur, others[:3])
        engine.versions.set_expiry(cur, engine.versions.latest_of(cur, others[0]).row_id, FAR)
        engine.backfill.log_rewrite(cur, fact, 1, 2, 1, 2, '["t"]', day)
        engine.versions.move_created(cur, "acme.prefs", "k3", "2000-01-01T00:00:00.000000Z")

    with engine.tenant_scope("acme"):
        engine.transaction(writes)


def _stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, SGAMStore]]:
    pg.base_uri()
    targets = {
        "sqlite": str(tmp_path_factory.mktemp("drift") / "memory.db"),
        "postgres": pg.fresh_database(),
    }
    with ExitStack() as stack:
        opened = {n: stack.enter_context(SGAMStore.from_conn_string(t)) for n, t in targets.items()}
        for store in opened.values():
            store.setup()
            _fill(store)
        yield opened


stores = pytest.fixture(scope="module")(_stores)


class Nth(int):
    """An argument naming the store's n-th row id (ids differ between the engines)."""


def _arg(value: Any, ids: list[int]) -> Any:
    """An argument as this store names it (Nth: its n-th row id)."""
    if isinstance(value, list):
        return [_arg(v, ids) for v in value]
    return ids[value] if isinstance(value, Nth) else value


def normal(value: Any, ids: dict[int, int]) -> Any:
    """Rows as plain data: lists for rows, 0/1 for truth, a marker for instants, and fact
    ids as their rank among the store's row ids (PostgreSQL draws ids in blocks)."""
    if isinstance(value, FactRow):
        value = value._replace(
            row_id=ids[value.row_id],
            fact_id=ids[value.fact_id],
            supersedes_fact_id=ids.get(value.supersedes_fact_id),
        )
    if isinstance(value, tuple) and len(value) > 3 and isinstance(value[0], FactRow):  # a change
        value = (*value[:3], ids.get(value[3]), *value[4:])
    if isinstance(value, dict):  # keyed by (namespace, key)
        return {k: normal(v, ids) for k, v in value.items()}
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and INSTANT.match(value):
        return "<instant>"
    if isinstance(value, list | tuple):
        return [normal(v, ids) for v in value]
    return value


# (statement set, function, arguments after the connection[, how]): how is "set" for a
# statement whose order is unspecified, "ids" for a list of fact ids, "keyed" for rows that
# start with one, "decision(s)" for decision rows (fact ids in 2 and 3), "candidates" for
# candidate rows (a fact id in 12), "batches" for an export, "none" for a case that rightly
# finds nothing, "where" for a scope (no connection: the rows its SQL admits), "scoped"
# for a statement run in a scope (built from the first argument's at, known_at, tenant),
# "values" for rows keyed by row id.
CASES: list[tuple[Any, ...]] = [
    ("candidates", "pending_matching", ("acme", "mira", "pet", "a")),
    ("candidates", "pending_support", ("acme", "mira", "pet", "a"), "set"),
    ("candidates", "by_ids", ([3, 2, 1, 99],), "candidates"),
    ("candidates", "listing", ("acme", "pending", None, None)),
    ("candidates", "listing", ("acme", "expired", None, None)),
    ("candidates", "listing", ("acme", "promoted", "mira", None), "candidates"),
    ("candidates", "listing", ("acme", None, "mira", "pet"), "candidates"),
    ("candidates", "support_of", (1,)),
    ("candidates", "support_payload", (2, "B-ep")),
    ("candidates", "is_extracted", ("acme", "acme-e1")),
    ("candidates", "is_extracted", (None, "zeta-e1"), "none"),
    ("retention", "fact_policies", ()),
    ("retention", "episode_classes", ()),
    ("retention", "episodes_due", ("short", FAR)),
    ("retention", "ended_session_facts", ("session",), "ids"),
    ("retention", "ended_session_facts", ("session", "acme", "t1"), "ids"),
    ("retention", "ended_session_facts", ("session", "zeta", "t1"), "none"),
    ("retention", "ended_session_episodes", ("short",)),
    ("retention", "ended_session_episodes", ("short", "acme", "t1")),
    ("changes", "feed", ("acme", EPOCH, FAR, 100)),
    ("changes", "feed", (None, EPOCH, FAR, 5)),
    ("changes", "key_versions", ("acme.prefs", "k1")),
    # A page of the feed ends at a keyset (until, before_row): the entries at `until`
    # with a smaller row id come next (every put of _fill is a later instant: at FAR, all).
    ("changes", "feed", ("acme", EPOCH, FAR, 3, Nth(9))),
    ("changes", "feed", ("acme", EPOCH, EPOCH, 3, Nth(9)), "none"),
    ("changes", "key_versions", ("acme.prefs", "k1", 2, 1)),  # a page of them
    ("changes", "key_versions", ("acme.prefs", "k1", 2, 9), "none"),  # past the end
    ("counts", "current_keys", ("acme", ["acme.prefs", "acme.mira", "acme.nobody"], EPOCH)),
    ("counts", "current_keys", ("zeta", ["acme.prefs"], EPOCH), "none"),
    ("counts", "current_keys", ("acme", ["acme.prefs", "acme.mira", "acme.x"], EPOCH, 1)),
    ("versions", "visible_at", ("acme.prefs", "k1", None, None)),
    ("versions", "visible_at", ("zeta.prefs", "k2", None, None), "none"),
    ("versions", "visible_at", ("zeta.mira", "city", "2025-01-01T00:00:00.000000Z", FAR)),
    ("versions", "history", ("acme.prefs", "k1", None)),
    ("versions", "history", ("acme.prefs", "k2", EPOCH), "none"),
    ("versions", "believed", ({"tenant_id": "acme", "subject": None, "attribute": None}, None)),
    ("versions", "believed", ({"tenant_id": None, "subject": "mira", "attribute": "city"}, FAR)),
    ("versions", "by_row_id", (Nth(0),)),
    ("versions", "containing", ("zeta.mira", "city", "2025-01-01T00:00:00.000000Z")),
    ("versions", "containing", ("zeta.mira", "city", "2023-01-01T00:00:00.000000Z"), "none"),
    ("versions", "next_start", ("acme.mira", "city", "2023-01-01T00:00:00.000000Z")),
    ("versions", "next_start", ("acme.mira", "city", FAR), "none"),
    ("versions", "latest_start", ("acme.prefs", "k1")),
    ("versions", "first_created", ("acme.prefs", "k3")),
    ("versions", "open_version", ("acme.prefs", "k1")),
    ("versions", "open_version", ("acme.prefs", "k2"), "none"),
    ("versions", "key_tails", ([("acme.prefs", "k1"), ("zeta.prefs", "k0"), ("x", "y")],), "set"),
    ("versions", "open_ttl", ("acme.prefs", "k1"), "none"),
    ("versions", "expired", (FAR,)),
    ("versions", "expired", (EPOCH,), "none"),
    ("versions", "latest_of", (Nth(1),)),
    ("episodes", "exists", ("acme", "acme-e1")),
    ("episodes", "exists", ("acme", "nobody"), "none"),
    ("episodes", "by_id", ("acme-e1",)),
    ("episodes", "by_id", ("acme-e1", "zeta"), "none"),
    ("episodes", "fact_source", (Nth(7),)),
    ("episodes", "of_ids", ("acme", ["acme-e1", "B-ep", "zeta-e1", "nobody"]), "set"),
    ("episodes", "of_ids", ("zeta", ["acme-e1", "B-ep"]), "none"),
    ("supersession", "queued", (None, 100), "keyed"),
    ("supersession", "queued", ("zeta", 2), "keyed"),
    ("supersession", "queued", (None, 100, Nth(8)), "keyed"),
    ("supersession", "queued", ("acme", 100, 2**40), "none"),
    ("erasure", "facts_of", ("acme",), "ids"),
    ("erasure", "episodes_of", ("acme",), "set"),
    ("erasure", "other_sources", ("acme", Nth(7), "acme-e1")),
    ("erasure", "linked", ("acme", "acme-e1"), "ids"),
    ("erasure", "linked", ("zeta", "acme-e1"), "none"),
    ("supersession", "by_id", (1,), "decision"),
    ("supersession", "touching", ([Nth(7)],), "decisions"),
    ("transfer", "export_rows", ("backfill_log",), "batches"),
    ("reads", "key_version", ((None, None, "acme"), "acme.prefs", "k1"), "scoped"),
    ("reads", "state", ((None, None, "acme"), ["mira"], None, None, 100), "scoped"),
    # Each engine's own read statements, which must agree all the same.
    ("reads", "get", (None, None, "acme", "acme.prefs", "k1")),
    ("reads", "get", (None, None, "zeta", "acme.prefs", "k1"), "none"),
    ("reads", "get", ("2025-01-01T00:00:00.000000Z", FAR, None, "zeta.mira", "city")),
    ("reads", "get", (None, EPOCH, None, "acme.prefs", "k0"), "none"),
    ("reads", "get_many", (None, None, "acme", [("acme.prefs", "k0"), ("acme.prefs", "k1")])),
    ("reads", "get_many", (None, None, None, [("zeta.prefs", "k2"), ("x", "y")]), "none"),
    ("reads", "namespaces_under", (None, None, None, ()), "set"),
    ("reads", "namespaces_under", (None, None, "acme", ("acme", "prefs")), "set"),
    ("reads", "rows_by_id", ([Nth(0), Nth(3)],), "values"),
    ("reads", "sources_by_id", ([Nth(0), Nth(3), Nth(7)],), "values"),
    ("reads", "intervals_by_id", ([Nth(0), Nth(3), Nth(7)],), "values"),
    ("reads", "structured_state", (None, None, None, None, None, None, 100)),
    ("reads", "structured_state", (None, None, "acme", ["mira", "prefs"], ["k1", "city"], None, 5)),
    ("reads", "structured_state", (FAR, FAR, None, None, None, ["semantic", "episodic"], 100)),
    ("reads", "structured_state", (None, None, "zeta", ["nobody"], None, None, 100), "none"),
    ("reads", "scope", (None, None, "acme"), "where"),
    ("reads", "scope", (None, None, None), "where"),
    ("reads", "scope", ("2025-01-01T00:00:00.000000Z", None, "zeta"), "where"),
    ("reads", "scope", (None, FAR, None), "where"),
    ("reads", "scope", ("2024-06-01T00:00:00.000000Z", FAR, None), "where"),
    ("migrations", "meta", ("tenant_at",)),
    ("migrations", "meta", ("vector_dims",), "none"),
    ("stats", "collected", (("episodes", "fact_sources", "memory_candidates"), 1, {})),
    ("erasure", "facts_of", ("zeta", "prefs", "k1"), "ids"),
    ("erasure", "facts_of", ("zeta", "nobody"), "none"),
    ("transfer", "is_empty", (), "none"),  # False: the store holds facts
    ("transfer", "vector_dims", (), "none"),  # no index configured
    ("backfill", "transformable_batch", ([("attribute", "k1", 1), ("memory_type", "x", 1)], 0, 9)),
    ("backfill", "transformable_batch", ([("attribute", "k3", 1)], 0, 1)),
    ("backfill", "transformable_count", ([("attribute", "k0", 1), ("attribute", "city", 1)],)),
    # The inspector's paged reads (one page of rows, index lookups).
    ("counts", "capped", ("facts", 100)),
    ("counts", "capped", ("episodes", 2)),
    ("counts", "namespace_page", ("acme.prefs", EPOCH, 10, 0)),
    ("counts", "namespace_page", ("acme.prefs", EPOCH, 1, 1)),
    ("counts", "namespace_page", ("acme.prefs", EPOCH, 10, 0, "k1")),  # after a key
    ("counts", "namespace_page", ("acme.prefs", EPOCH, 10, 0, "k9"), "none"),
    ("counts", "namespace_page", ("acme.nobody", EPOCH, 10, 0), "none"),
    ("counts", "next_namespace", ("acme", "", EPOCH)),
    ("counts", "next_namespace", ("acme", "acme.prefs", EPOCH), "none"),
    ("counts", "next_tenant", ("", EPOCH)),
    ("counts", "next_tenant", ("zeta", EPOCH), "none"),
    ("counts", "next_tenant_at", ("", FAR, None)),
    ("counts", "next_tenant_at", ("acme", PAST, FAR)),
    ("counts", "next_tenant_at", ("", FAR, EPOCH), "none"),  # believed at EPOCH: nothing
    ("counts", "next_namespace_at", ("acme", "", FAR, None, None)),
    ("counts", "next_namespace_at", ("acme", "", FAR, None, ("acme", "acme/"))),
    ("counts", "next_namespace_at", ("zeta", "zeta.mira", FAR, FAR, ("zeta", "zeta/"))),
    ("counts", "next_namespace_at", ("acme", "", PAST, None, None)),
    ("counts", "next_namespace_at", ("acme", "", "2023-01-01T00:00:00Z", None, None), "none"),
    ("counts", "next_namespace_at", ("acme", "acme.prefs", FAR, None, None), "none"),
    ("counts", "capped", ("facts", 100, "acme")),
    ("counts", "capped", ("episodes", 100, "zeta")),
    ("counts", "capped", ("episodes", 100, "nobody"), "none"),
    ("episodes", "citing", ("acme", "acme-e1", None, 10)),
    ("episodes", "citing", ("zeta", "acme-e1", None, 10), "none"),
    ("supersession", "namespace_members", ("acme", "acme.prefs", EPOCH, 10)),
    ("supersession", "namespace_members", ("zeta", "acme.prefs", EPOCH, 10), "none"),
    ("supersession", "of_tenant", ("acme", 10), "decisions"),
    ("supersession", "of_tenant", ("zeta", 10), "none"),
    ("supersession", "of_tenant", ("acme", 10, 2), "decisions"),
    ("supersession", "of_tenant", ("acme", 10, 1), "none"),
    ("supersession", "of_key", ("acme", "acme.mira", "city"), "decisions"),  # the new side
    ("supersession", "of_key", ("acme", "acme.prefs", "k1"), "decisions"),  # an old side
    ("supersession", "of_key", ("zeta", "acme.mira", "city"), "none"),  # another tenant's
    ("supersession", "of_key", ("acme", "acme.prefs", "k3"), "none"),
]


# The write rule's lookups: PostgreSQL locks their keys first, inside a write transaction.
LOCKING = {
    ("versions", name)
    for name in (
        "containing",
        "next_start",
        "latest_start",
        "first_created",
        "open_version",
        "key_tails",
        "open_ttl",
        "expired",
    )
}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}.{c[1]}{c[2]}"[:60])
def test_statement_agrees_on_both_engines(
    stores: dict[str, SGAMStore], case: tuple[Any, ...]
) -> None:
    group, name, args, how = (*case, "ordered")[:4]
    rows = {}
    for engine, store in stores.items():
        module = importlib.import_module(f"sgam_store.engines.{engine}.{group}")
        statement = getattr(module, name)
        with store.engine.reading() as conn:
            ids = [r[0] for r in conn.execute("SELECT row_id FROM facts ORDER BY row_id")]
            rank = {i: n for n, i in enumerate(ids)}
        arguments = [_arg(a, ids) for a in args]
        if how.startswith("scoped"):  # a scope as the engine builds it, then the rest
            arguments[0] = store.engine.reads.scope(*arguments[0])
        if how == "where":
            found = statement(*arguments)
        elif (group, name) in LOCKING:
            found = store.engine.transaction(lambda cur, f=statement, a=arguments: f(cur, *a))
        else:
            with store.engine.reading() as conn:
                found = statement(conn, *arguments)
        if how == "where":
            with store.engine.reading() as conn:
                sql = f"SELECT f.row_id FROM facts f WHERE {found[0]} ORDER BY f.row_id"
                found = [rank[r[0]] for r in conn.execute(sql, found[1])]
        found = [found[k] for k in sorted(found)] if how == "values" else found
        found = [rank[i] for i in found] if how == "ids" else found
        found = [(rank[r[0]], *r[1:]) for r in found] if how == "keyed" else found
        if how == "batches":  # an export of backfill_log, whose rows start with a fact id
            found = [(rank[r[0]], *r[1:]) for batch in found for r in batch]
        if how == "candidates":  # promoted_fact_id
            found = [(*r[:12], rank.get(r[12]), *r[13:]) for r in found]
        if how.startswith("decision"):
            found = [
                (*r[:2], rank[r[2]], rank[r[3]], *r[4:]) for r in ([found], found)[how[-1] == "s"]
            ]
        rows[engine] = normal(sorted(found) if how == "set" else found, rank)
    assert rows["sqlite"] == rows["postgres"]
    assert (rows["sqlite"] in ([], {}, None, 0)) == how.endswith("none"), (
        "a case that finds nothing"
    )


# Write statements: `_fill` runs each on both engines, and the cases above read their rows.
WRITTEN = {
    ("candidates", name)
    for name in ("create", "refresh", "mark_promoted", "expire_due", "add_support")
} | {
    ("candidates", "link_sources"),
    ("candidates", "mark_extracted"),
    ("episodes", "insert"),
    ("retention", "record_session_end"),
    ("supersession", "enqueue"),
    ("supersession", "dequeue"),
    ("supersession", "record"),
    ("supersession", "mark_undone"),
    ("versions", "set_expiry"),
    ("versions", "move_created"),  # first_created reads what it moved
    ("backfill", "log_rewrite"),
    ("transfer", "insert_plain"),  # sgam copy's round trips (tests/test_copy.py)
    ("transfer", "load"),  # likewise
    # Set-up's bookkeeping, run on both engines by tests/test_tenant_at.py and
    # tests/test_schema_migration.py; `meta` reads what they record.
    ("migrations", "record_tenant_at"),
    ("migrations", "read_tenant_at"),  # and read-only opens: tests/test_cli_read_only.py
    ("migrations", "recorded_dims"),
    ("migrations", "record_dims"),
    # test_erasure_agrees_on_both_engines
    ("erasure", "erase_rows"),
    ("erasure", "erase_selected"),
    ("erasure", "erase_episode"),
}


def test_erasure_agrees_on_both_engines(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The same purges on both engines report the same rows of the tables both have, and
    leave the same rows behind: an episode whose fact another source keeps, one subject,
    then a whole tenant."""
    found: dict[str, list[Any]] = {}
    with contextmanager(_stores)(tmp_path_factory) as pair:
        for engine, store in pair.items():
            found[engine] = _purged(store)
    assert found["sqlite"] == found["postgres"]
    assert found["sqlite"][0]["resourced_fact_ids"]  # the kept fact was found at all
    assert found["sqlite"][2]["deleted"]["episodes"] > 0


def _purged(store: SGAMStore) -> list[Any]:
    """The reports of the purges, then the rows they left, as plain data."""
    with store.engine.reading() as conn:
        ids = conn.execute("SELECT row_id FROM facts ORDER BY row_id")
        rank = {r[0]: n for n, r in enumerate(ids)}
    reports = [
        store.purge_episode("acme", "acme-e1"),
        store.purge("acme", "prefs"),
        store.purge("zeta"),
    ]
    with store.engine.reading() as conn:
        left = store.engine.versions.believed(conn, dict.fromkeys(("tenant_id",)), None)
        sources = conn.execute(
            "SELECT fact_id, episode_id FROM fact_sources ORDER BY 1, 2"
        ).fetchall()
    return [
        *(
            {
                **r.to_dict(),
                "deleted": {t: n for t, n in r.deleted.items() if t in SHARED_TABLES},
                "fact_ids": [rank[i] for i in r.fact_ids],
                "resourced_fact_ids": [rank[i] for i in r.resourced_fact_ids],
            }
            for r in reports
        ),
        normal(left, rank),
        [(rank[f], e) for f, e in sources],
    ]


def test_every_portable_statement_is_compared() -> None:
    """A statement added to engines/common/ without a case here fails."""
    portable = set()
    for info in pkgutil.iter_modules(common.__path__):
        module = importlib.import_module(f"{common.__name__}.{info.name}")
        for name, value in vars(module).items():
            own = inspect.isfunction(value) and value.__module__ == module.__name__
            if own and not name.startswith("_") and "d" in inspect.signature(value).parameters:
                portable.add((info.name, name))
    compared = {(group, name) for group, name, *_ in CASES} | WRITTEN
    assert portable - compared == set()
    assert len(portable) >= 49  # the scan finds them at all

"""The upgrade to per-tenant episode ids (issue 39: SQLite schema v11, PostgreSQL v9): a
database written by the version before keeps every row, each link row gains its tenant,
rows naming nothing go, and the same episode id can then be recorded by a second tenant.

The old database is made by today's migrations stopped at the version before (the
migrations are append-only lists), its link rows written in their old shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sgam_store import MemoryFact, SGAMStore
from sgam_store.engines.postgres import migrations as pg_migrations
from sgam_store.engines.sqlite import migrations as sqlite_migrations
from tests.db import rows

ENGINES = ("sqlite", "postgres")
BEFORE = {"sqlite": 10, "postgres": 8}
AT = "2026-06-01T00:00:00.000000Z"


def write(store: SGAMStore, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Run one statement in a write transaction of the store's own database."""
    if type(store.engine).__name__ == "PostgresEngine":
        sql = sql.replace("?", "%s")
    store.engine.transaction(lambda cur: cur.execute(sql, params))


@pytest.fixture
def old(engine: str, target: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A database at the version before, holding two tenants' episodes, a promoted fact
    with a second source, a held candidate with its support, an extraction mark, a
    backfill audit row, and link rows whose fact is gone; its target."""
    module = sqlite_migrations if engine == "sqlite" else pg_migrations
    monkeypatch.setattr(module, "LATEST", BEFORE[engine])
    with SGAMStore.from_conn_string(target) as store:
        store.setup()
        for tenant in ("acme", "globex"):
            store.record_episode(
                tenant, f"{tenant} said", source_kind="user_message", episode_id=f"{tenant}-e1"
            )
        store.record_episode("acme", "acme again", source_kind="user_message", episode_id="e2")
        fact = store.replace_fact(
            MemoryFact(tenant_id="acme", subject="mira", attribute="city", value="Lima",
                       valid_from=AT, source_episode_id="acme-e1")
        )  # fmt: skip
        write(store, "INSERT INTO fact_sources VALUES (?, 'e2')", (fact.fact_id,))
        write(store, "INSERT INTO fact_sources VALUES (999999, 'e2')")  # its fact is gone
        write(
            store,
            "INSERT INTO memory_candidates (tenant_id, subject, attribute, value, "
            "similarity_key, memory_type, reason, first_seen_at, last_seen_at, expires_at) "
            "VALUES ('globex', 'leo', 'format', '\"CSV\"', 'csv', 'habit', "
            "'needs_repetition', ?, ?, ?)",
            (AT, AT, "2100-01-01T00:00:00.000000Z"),
        )
        write(
            store,
            "INSERT INTO candidate_support (candidate_id, episode_id, payload, recorded_at) "
            "SELECT candidate_id, 'globex-e1', '{}', ? FROM memory_candidates",
            (AT,),
        )
        write(store, "INSERT INTO episode_extractions VALUES ('globex-e1', ?, 'model')", (AT,))
        for fact_id in (fact.fact_id, 999999):
            write(
                store,
                "INSERT INTO backfill_log (fact_id, old_row_id, new_row_id, from_version, "
                "to_version, transforms, backfilled_at) VALUES (?, 1, 2, 1, 2, 't', ?)",
                (fact_id, AT),
            )
        if engine == "postgres":  # its owner had turned row security on, as v8 did it
            for table in (*pg_migrations.TENANT_TABLES, "candidate_support"):
                write(store, pg_migrations._enable_sql(table))
    monkeypatch.undo()
    yield target


def test_an_old_database_upgrades_with_every_link_in_its_tenant(old: str, engine: str) -> None:
    with SGAMStore.from_conn_string(old) as store:
        store.setup()
        version = store.stats()["schema_version"]
        assert version == (sqlite_migrations if engine == "sqlite" else pg_migrations).LATEST
        fact = store.fact_at("acme", "mira", "city")
        assert sorted(rows(store, "SELECT fact_id, episode_id, tenant_id FROM fact_sources")) == [
            (fact.fact_id, "e2", "acme")
        ]
        assert rows(store, "SELECT fact_id, tenant_id FROM backfill_log") == [
            (fact.fact_id, "acme")
        ]
        assert rows(store, "SELECT episode_id, tenant_id FROM candidate_support") == [
            ("globex-e1", "globex")
        ]
        assert rows(store, "SELECT episode_id, tenant_id FROM episode_extractions") == [
            ("globex-e1", "globex")
        ]
        # Ids are per tenant now: globex records acme's id, and each reads its own.
        store.record_episode("globex", "globex too", source_kind="user_message", episode_id="e2")
        assert store.get_episode("e2", tenant_id="acme").content == "acme again"
        assert store.get_episode("e2", tenant_id="globex").content == "globex too"
        # acme's purge of e2 keeps its fact (it has another source) and globex's e2.
        report = store.purge_episode("acme", "e2")
        assert report.resourced_fact_ids == [fact.fact_id] and report.fact_ids == []
        assert report.deleted["fact_sources"] == 1 and report.deleted["episodes"] == 1
        assert store.get_episode("e2", tenant_id="globex").content == "globex too"
        # globex's erasure takes its candidate, support and mark, counted.
        erased = store.purge("globex")
        assert erased.deleted["candidate_support"] == 1
        assert erased.deleted["memory_candidates"] == 1
        assert erased.deleted["episode_extractions"] == 1
        if engine == "postgres":  # a row-secured database secures its link tables too
            secured = rows(
                store,
                "SELECT relname FROM pg_class WHERE relrowsecurity AND relforcerowsecurity "
                "AND relname = ANY(?)",
                (list(pg_migrations.TENANT_LINKS),),
            )
            assert sorted(r[0] for r in secured) == sorted(pg_migrations.TENANT_LINKS)

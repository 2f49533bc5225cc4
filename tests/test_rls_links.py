"""Row security on the tables that link a tenant's facts and episodes (issue 39, items
12-14), attacked as the application role: another tenant's caller, with raw SQL where
the issue's reviewer used it.

- fact_sources, backfill_log, candidate_support and episode_extractions carry a tenant
  and a policy: the attacker reads none of the victim's rows, and cannot write a row of
  its own naming the victim's fact (the issue's attack: an extra source on an acme fact,
  which made acme's `purge_episode` keep the fact and rewrite its source);
- episode ids are per tenant: the attacker records an id the victim holds, at once,
  without "already recorded" or a StoreBusyError after eight retries;
- `sgam copy` as the application role raises TenantScopeError, not "copied 0 rows".
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from sgam_store import MemoryFact, SGAMStore, TenantScopeError
from sgam_store.cli import main
from sgam_store.engines.postgres import roles
from tests.test_rls import as_role

VICTIM, ATTACKER = "acme", "umbrella"
LINKS = ("fact_sources", "backfill_log", "candidate_support", "episode_extractions")


@pytest.fixture
def secured(pg_server: str) -> Iterator[tuple[str, str, int]]:
    """(owner URI, application role URI, the victim's fact id) of a row-secured database
    where the victim's fact cites episode ep-a and has a second source ep-b, and the
    attacker recorded ep-u."""
    from tests import pg

    uri = pg.fresh_database()
    with SGAMStore.from_conn_string(uri, row_security=True) as owner:
        owner.setup()
        for tenant, episode in ((VICTIM, "ep-a"), (VICTIM, "ep-b"), (ATTACKER, "ep-u")):
            owner.record_episode(tenant, f"{tenant} said", source_kind="user_message",
                                 episode_id=episode)  # fmt: skip
        fact = owner.replace_fact(
            MemoryFact(tenant_id=VICTIM, subject="mira", attribute="city", value="Lima",
                       valid_from="2026-06-01T00:00:00Z", source_episode_id="ep-a")
        )  # fmt: skip
        owner.engine.transaction(lambda cur: _second_source(cur, fact.fact_id))
    role = "app_" + uuid.uuid4().hex[:12]
    roles.create_app_role(uri, role)
    yield uri, as_role(uri, role), fact.fact_id


def _second_source(cur: Any, fact_id: int) -> None:
    """The victim's fact gains source ep-b (as a promotion links it), in the table's shape:
    before the fix it had no tenant column."""
    columns = {
        r[0]
        for r in cur.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'sgam' AND table_name = 'fact_sources'"
        )
    }
    if "tenant_id" in columns:
        cur.execute("INSERT INTO fact_sources VALUES (%s, 'ep-b', %s)", (fact_id, VICTIM))
    else:
        cur.execute("INSERT INTO fact_sources VALUES (%s, 'ep-b')", (fact_id,))


def _as_tenant(uri: str, tenant: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(uri, options="-c search_path=sgam", autocommit=True)
    conn.execute("SELECT set_config('sgam.tenant', %s, false)", (tenant,))
    return conn


def test_the_attacker_reads_no_link_row_of_the_victim(secured: tuple[str, str, int]) -> None:
    _, app, _ = secured
    with _as_tenant(app, ATTACKER) as conn:
        for table in LINKS:
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
    with _as_tenant(app, VICTIM) as conn:
        assert conn.execute("SELECT count(*) FROM fact_sources").fetchone()[0] == 1


@pytest.mark.parametrize("claimed", [ATTACKER, VICTIM])
def test_the_attacker_cannot_add_a_source_to_the_victims_fact(
    secured: tuple[str, str, int], claimed: str
) -> None:
    """The issue's attack, as the attacker's session: a source link on the victim's fact,
    under its own tenant or claiming the victim's. Then the victim's purge of its
    episode erases the fact whose only sources were its own."""
    _, app, fact_id = secured
    with _as_tenant(app, ATTACKER) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(
            "INSERT INTO fact_sources (fact_id, episode_id, tenant_id) VALUES (%s, 'ep-u', %s)",
            (fact_id, claimed),
        )
    with SGAMStore.from_conn_string(app) as store:
        store.setup()
        first = store.purge_episode(VICTIM, "ep-a")
        assert first.resourced_fact_ids == [fact_id]  # ep-b, the victim's own, remains
        assert store.fact_at(VICTIM, "mira", "city").source_episode_id == "ep-b"
        second = store.purge_episode(VICTIM, "ep-b")
        assert second.fact_ids == [fact_id] and store.fact_at(VICTIM, "mira", "city") is None


def test_the_attacker_records_an_id_the_victim_holds_at_once(
    secured: tuple[str, str, int],
) -> None:
    _, app, _ = secured
    with SGAMStore.from_conn_string(app) as store:
        store.setup()
        started = time.perf_counter()
        mine = store.record_episode(ATTACKER, "mine", source_kind="user_message", episode_id="ep-a")
        assert time.perf_counter() - started < 0.5  # no retries on a hidden conflict
        assert mine.tenant_id == ATTACKER
        assert store.get_episode("ep-a", tenant_id=ATTACKER).content == "mine"
        assert store.get_episode("ep-a", tenant_id=VICTIM).content == f"{VICTIM} said"


def test_copy_as_the_application_role_is_refused(
    secured: tuple[str, str, int], tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    owner, app, _ = secured
    target = str(tmp_path / "copy.db")
    assert main(["copy", "--from", app, "--to", target]) == 2
    err = capsys.readouterr().err
    assert "all-tenant scope" in err and err.count("\n") == 1
    from sgam_store.engines import open_engine
    from sgam_store.lifecycle import transfer

    source, into = open_engine(app, dims=None), open_engine(str(tmp_path / "b.db"), dims=None)
    try:
        with pytest.raises(TenantScopeError):
            transfer.copy_store(source, into)
    finally:
        source.close()
        into.close()
    # The owner copies every tenant's rows, links included.
    assert main(["copy", "--from", owner, "--to", str(tmp_path / "c.db")]) == 0
    with SGAMStore.from_conn_string(str(tmp_path / "c.db")) as copied:
        assert copied.get_episode("ep-u", tenant_id=ATTACKER).content == f"{ATTACKER} said"
        assert copied.fact_at(VICTIM, "mira", "city").value == "Lima"


def test_the_application_role_consolidates_its_tenants_signals(
    secured: tuple[str, str, int],
) -> None:
    """Consolidation (weak signals held as candidates, then confirmed) runs in the named
    tenant's scope: unscoped, the role saw not even its own episode."""
    from sgam_store.managers.consolidation import (
        ConsolidationConfig,
        confirm_candidate,
        consolidate,
        list_candidates,
    )

    _, app, _ = secured
    habits = ConsolidationConfig(recurrence=3, repeat_memory_types=frozenset({"habit"}))
    held = {
        "evidence": "as CSV please",
        "subject": "mira",
        "attribute": "format",
        "current_value": None,
        "change": "new",
        "value": "CSV",
        "valid_from": "2026-06-01T09:00:00Z",
        "memory_type": "habit",
        "confidence": 0.9,
    }
    with SGAMStore.from_conn_string(app) as store:
        store.setup()
        for episode in ("c1", "c2"):
            text = "Export as CSV please" if episode == "c1" else "yes, CSV it is"
            store.record_episode(VICTIM, text, source_kind="user_message", episode_id=episode)
        result = consolidate(store, [held], tenant_id=VICTIM, episode_id="c1", config=habits)
        (candidate,) = result.held
        assert [c.candidate_id for c in list_candidates(store, VICTIM)] == [candidate.candidate_id]
        assert list_candidates(store, ATTACKER) == []
        confirm_candidate(store, candidate.candidate_id, tenant_id=VICTIM, episode_id="c2")
        assert store.fact_at(VICTIM, "mira", "format").value == "CSV"

"""benchmarks/bench_langmem.py runs on both engines and its checks would catch a wrong page.

A small run (400 memories, a few samples) through the real stores: SGAMStore(tenant_at=1)
against SqliteStore, and on the embedded PostgreSQL server against PostgresStore. The
numbers are not asserted (a loaded CI box makes them noise); what is asserted is that
every row of the table is measured against the right peer, SGAM's answers stay in scope
and exact, and the table names the peer the run compared with.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from bench_langmem import ROWS, Samples, format_extras, format_table, parse_args, run
from bench_store import POSTGRES, SGAM, SQLITE

ENGINES = ("sqlite", "postgres")
PEERS = {"sqlite": SQLITE, "postgres": POSTGRES}
TINY = Samples(single_puts=4, searches=4, read_budget_s=0.05, min_samples=2)
SCOPED = ("tenant search", "subject-prefix search")


def small_run(engine: str, tmp_path: Path) -> dict:
    args = parse_args(["--size", "400", "--engine", engine, "--tmpdir", str(tmp_path)])
    return run(args, TINY, log=lambda line: None)


def test_a_small_run_measures_every_row_against_its_peer(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    peer = PEERS[engine]
    if engine == "postgres":
        request.getfixturevalue("pg_server")  # started, and stopped by the session
    results = small_run(engine, tmp_path)
    assert results["peer"] == peer
    for row in ROWS:
        assert set(results["ops"][row]) == {"unit", SGAM, peer}, row
    for label in SCOPED:
        assert results["recall@10"][label][SGAM] > 0
        assert results["checks"][label][SGAM] == {"outside scope": 0, "wrong length": 0}
    vector = results["recall@10"]["tenant search"]["SGAMStore retrieval=vector"]
    assert vector >= 0.99  # SGAM's vector ranking is exact on every engine
    assert results["checks"]["get"][SGAM] == {"missing or wrong value": 0}
    assert results["checks"]["filtered list"][SGAM]["wrong kind"] == 0
    table = format_table(results)
    assert f"{peer}/SGAM" in table.splitlines()[0]
    assert "recall@10 vs exact numpy, tenant search" in format_extras(results)


def test_pg_uri_needs_the_postgres_engine() -> None:
    with pytest.raises(SystemExit):
        parse_args(["--pg-uri", "postgresql://nowhere/db"])

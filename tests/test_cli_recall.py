"""`sgam recall` reads its times as the rest of the CLI does (issue 38, item 5): UTC to the
second with a Z, microseconds only where two instants of the context would read alike;
--json keeps the store's full precision."""

from __future__ import annotations

import json
import re

import pytest

from sgam_store import MemoryFact, SGAMStore
from tests.test_cli_real import sgam

RECALL = ["recall", "--tenant", "acme", "When is the deadline?", "--subject", "mira"]


def fact(value: str, valid_from: str) -> MemoryFact:
    return MemoryFact(tenant_id="acme", subject="mira", attribute="deadline", value=value,
                      valid_from=valid_from, source_episode_id="external:test")  # fmt: skip


@pytest.fixture
def db(tmp_path) -> str:
    """mira.deadline: 07-15 from June 1 09:00, 06-30 from June 3 10:00, and a correction
    one microsecond after that (the two versions differ only in their microseconds)."""
    path = str(tmp_path / "recall.db")
    with SGAMStore.from_conn_string(path) as store:
        store.replace_fact(fact("2026-07-15", "2026-06-01T09:00:00Z"))
        store.replace_fact(fact("2026-06-30", "2026-06-03T10:00:00Z"))
        store.replace_fact(fact("2026-06-29", "2026-06-03T10:00:00.000001Z"))
    return path


def test_recall_reads_to_the_second(db, monkeypatch, capsys) -> None:
    status, out, err = sgam(monkeypatch, capsys, RECALL[0], "--db", db, *RECALL[1:])
    assert status == 0, err
    assert "+00:00" not in out
    # June 3 10:00 and a microsecond later keep their microseconds, June 1 09:00 does not
    assert "(valid 2026-06-01T09:00:00Z → 2026-06-03T10:00:00.000000Z)" in out
    assert "(valid 2026-06-03T10:00:00.000001Z → now)" in out
    assert "(valid 2026-06-03T10:00:00.000000Z → 2026-06-03T10:00:00.000001Z)" in out


def test_recall_as_of_an_instant_names_it_to_the_second(db, monkeypatch, capsys) -> None:
    argv = [RECALL[0], "--db", db, *RECALL[1:], "--at", "2026-06-02T00:00:00+00:00"]
    status, out, err = sgam(monkeypatch, capsys, *argv)
    assert status == 0, err
    assert out.startswith("Known facts (as of 2026-06-02T00:00:00Z; authoritative):")
    assert "(valid 2026-06-01T09:00:00Z → 2026-06-03T10:00:00Z)" in out


def test_recall_json_keeps_full_precision(db, monkeypatch, capsys) -> None:
    status, out, err = sgam(monkeypatch, capsys, RECALL[0], "--db", db, *RECALL[1:], "--json")
    assert status == 0, err
    context = json.loads(out)
    assert [f["valid_from"] for f in context["facts"]] == ["2026-06-03T10:00:00.000001Z"]
    stored = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
    assert all(stored.match(f["valid_from"]) for f in context["history"])

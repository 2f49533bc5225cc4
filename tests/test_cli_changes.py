"""`sgam changes`: the change feed from the command line, the same as `store.changes`."""

from __future__ import annotations

import json
import re

import pytest

from sgam_store import MemoryFact, SGAMStore
from sgam_store.cli import main
from sgam_store.core import clock


@pytest.fixture
def written(db_path: str) -> str:
    """A correction in acme and a fact in globex; returns the instant before them."""
    since = clock.utc_now()
    with SGAMStore.from_conn_string(db_path) as store:
        store.setup()
        for tenant, value, start, source in (
            ("acme", "2026-07-15", "2026-06-01T09:00:00Z", "e1"),
            ("acme", "2026-06-30", "2026-06-03T10:00:00Z", "e2"),
            ("globex", "<b>bold</b>", "2026-06-02T12:00:00Z", "g1"),
        ):
            store.replace_fact(
                MemoryFact(
                    tenant_id=tenant,
                    subject="mira",
                    attribute="passport_deadline",
                    value=value,
                    valid_from=start,
                    source_episode_id=source,
                )
            )
    return since


def test_json_is_the_library_feed(db_path: str, written: str, capsys) -> None:
    assert main(["changes", "--db", db_path, "--since", written, "--tenant", "acme", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    with SGAMStore.from_conn_string(db_path) as store:
        expected = [c.model_dump(mode="json") for c in store.changes(written, tenant_id="acme")]
    assert printed == expected
    assert [c["kind"] for c in printed] == ["new", "superseded", "new"]
    assert {c["tenant_id"] for c in printed} == {"acme"}


def test_limit_and_every_tenant(db_path: str, written: str, capsys) -> None:
    assert main(["changes", "--db", db_path, "--since", written, "--limit", "1", "--json"]) == 0
    assert [c["tenant_id"] for c in json.loads(capsys.readouterr().out)] == ["globex"]


def test_the_table_names_each_change(db_path: str, written: str, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # rich's width: no value folded over two lines
    assert main(["changes", "--db", db_path, "--since", written]) == 0
    out = capsys.readouterr().out
    kinds = [line.split()[1] for line in out.splitlines() if re.match(r"\d{4}-\d\d-\d\dT", line)]
    assert kinds.count("superseded") == 1 and kinds.count("new") == 3
    assert re.search(r"globex/mira\.passport_deadline +<b>bold</b>", out)
    assert main(["changes", "--db", db_path, "--since", clock.utc_now()]) == 0
    assert "no changes since" in capsys.readouterr().out


def test_bad_input_is_one_line_and_status_2(db_path: str, written: str, capsys) -> None:
    assert main(["changes", "--db", db_path, "--since", "2026-06-01T00:00:00"]) == 2
    assert "naive" in capsys.readouterr().err
    assert main(["changes", "--db", db_path, "--since", written, "--limit", "0"]) == 2
    assert "limit" in capsys.readouterr().err
    assert main(["changes", "--db", db_path + ".typo", "--since", written]) == 2
    assert "no database" in capsys.readouterr().err

"""A batch's keyword rows go to FTS5 in rowid order. Rowids are numbered tenant first,
so a batch mixing tenants arrives out of order; FTS5 writes its pending terms out as a
new segment whenever a rowid is not above the last, so unsorted it left one segment per
descent (more to write now and to merge later)."""

from __future__ import annotations

from pathlib import Path

from langgraph.store.base import PutOp

from sgam_store import SGAMStore
from sgam_store.engines.sqlite import connection

USERS = [7, 3, 9, 1, 8, 2, 6, 0, 5, 4]  # arrival order: neither tenant nor slot order


def puts(key: str) -> list[PutOp]:
    return [
        PutOp(("memories", f"user-{u}"), f"{key}{u}", {"content": f"user {u} likes oolong"})
        for u in USERS
    ]


def test_a_batch_mixing_tenants_writes_one_keyword_segment(tmp_path: Path) -> None:
    path = str(tmp_path / "memory.db")
    with SGAMStore.from_conn_string(path, tenant_at=1) as store:
        store.setup()
        store.batch(puts("first"))  # numbers the tenants' slots
        conn = connection.connect(path)
        try:
            before = conn.execute("SELECT count(*) FROM fact_fts_data").fetchone()[0]
            store.batch(puts("second"))
            after = conn.execute("SELECT count(*) FROM fact_fts_data").fetchone()[0]
        finally:
            conn.close()
        assert after - before == 1  # one leaf of one new segment (unsorted: 6)
        for u in USERS:
            found = store.search(("memories", f"user-{u}"), query="oolong")
            assert sorted(item.key for item in found) == [f"first{u}", f"second{u}"]

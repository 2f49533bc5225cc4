"""A reader connection remembers current scopes and listings (`engines/sqlite/reads.py`,
`_remembered`), and reads a key it does not remember without asking the file's version
first, keeping the answer under the version its memory had. That version may be stale;
then no later check matches it, so nothing remembered under it is used again. Checked
against the rule itself (a store that remembers nothing) through interleaved commits of
another connection, on a reader of the pool as a store reads."""

from __future__ import annotations

import random
from pathlib import Path

from sgam_store import SGAMStore
from sgam_store.engines.sqlite import reads

USERS = ["u0", "u1", "u2"]
KINDS = ["fact", "event"]


def _listing(store: SGAMStore, user: str, kind: str) -> list[str]:
    items = store.search(("memories", user), filter={"kind": kind}, limit=5)
    return [i.key for i in items]


def _scope(store: SGAMStore, user: str) -> list[int]:
    with store.engine.reading() as conn:
        found = reads.in_scope(conn, None, None, user, ("memories", user), None, 100)
    return sorted(found)


def _unremembered(store: SGAMStore, user: str) -> list[int]:
    with store.engine.reading() as conn:
        conn.__dict__.pop("_sgam_memory", None)
        return _scope(store, user)


def test_reads_between_other_connections_commits_match_the_rule(tmp_path: Path) -> None:
    path = str(tmp_path / "memory.db")
    rng = random.Random(17)
    with (
        SGAMStore.from_conn_string(path, tenant_at=1) as store,
        SGAMStore.from_conn_string(path, tenant_at=1) as writer,
        SGAMStore.from_conn_string(path, tenant_at=1) as truth,
    ):
        store.setup()
        written = 0
        for step in range(200):
            if rng.random() < 0.3:  # another connection commits
                user, kind = rng.choice(USERS), rng.choice(KINDS)
                if written and rng.random() < 0.3:
                    writer.delete(("memories", user), f"k{rng.randrange(written)}")
                else:
                    writer.put(("memories", user), f"k{written}", {"kind": kind, "n": step})
                    written += 1
            user, kind = rng.choice(USERS), rng.choice(KINDS)
            assert _listing(store, user, kind) == _listing(truth, user, kind), step
            assert _scope(store, user) == _unremembered(truth, user), step


def test_a_key_read_under_a_stale_version_is_never_served_stale(tmp_path: Path) -> None:
    """u0 remembered at version V; another connection commits to u0 and u1; u1, not
    remembered, is read fresh under V; then u0 must be read again (V no longer holds),
    and so must u1 after one more commit."""
    path = str(tmp_path / "memory.db")
    with (
        SGAMStore.from_conn_string(path, tenant_at=1) as store,
        SGAMStore.from_conn_string(path, tenant_at=1) as other,
    ):
        store.setup()
        other.put(("memories", "u0"), "a", {"kind": "fact"})
        assert _listing(store, "u0", "fact") == ["a"]
        other.put(("memories", "u0"), "b", {"kind": "fact"})
        other.put(("memories", "u1"), "c", {"kind": "fact"})
        assert _listing(store, "u1", "fact") == ["c"]  # not remembered: read fresh
        assert _listing(store, "u0", "fact") == ["b", "a"]  # remembered under a stale version
        other.put(("memories", "u1"), "d", {"kind": "fact"})
        assert _listing(store, "u1", "fact") == ["d", "c"]
        assert _listing(store, "u1", "fact") == ["d", "c"]  # now from memory

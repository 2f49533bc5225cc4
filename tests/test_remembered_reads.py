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


def test_a_scope_cut_by_its_limit_is_read_again_and_a_whole_one_is_kept(
    tmp_path: Path,
) -> None:
    """`in_scope` reads a scope as one row (its ids as JSON arrays, the first expiry and
    the count): a scope cut by the limit is never remembered (a fact past the cut could
    expire first), a whole one is, until its first fact expires."""
    with SGAMStore.from_conn_string(str(tmp_path / "memory.db"), tenant_at=1) as store:
        store.setup()
        for i in range(5):
            store.put(("memories", "u0"), f"k{i}", {"kind": "fact"}, ttl=None if i else 60.0)
        statements: list[str] = []
        store.conn.set_trace_callback(statements.append)
        with store.engine.reading() as conn:
            conn.__dict__.pop("_sgam_memory", None)
            for limit, size, reads_twice in ((3, 3, True), (10, 5, False)):
                runs = []
                for _ in range(2):
                    before = len(statements)
                    found = reads.in_scope(conn, None, None, "u0", ("memories", "u0"), None, limit)
                    assert len(found) == size and all(isinstance(r, int) for r in found.values())
                    runs.append(any("json_group_array" in s for s in statements[before:]))
                assert runs == [True, reads_twice], limit
        store.conn.set_trace_callback(None)
        assert _scope(store, "u0") == sorted(found)

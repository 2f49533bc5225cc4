"""The write rule's batched read of many keys' state (`versions.key_tails`, which
`ledger.prefetch` takes for a batch or a group of puts): each key's latest believed
version and its earliest believed `created_at`, as the key's history says, whatever that
history holds: updates, a delayed fact that becomes the key's first, a close, a
correction that replaced a version. On both engines."""

from __future__ import annotations

from typing import Any

import pytest

from sgam_store import MemoryFact, SGAMStore
from sgam_store.core import clock, namespaces
from sgam_store.ledger.policies import LatestRecordedWins

ENGINES = ("sqlite", "postgres")


def fact(attribute: str, value: Any, start: str, source: str = "ext:a") -> MemoryFact:
    return MemoryFact(
        tenant_id="acme",
        subject="mira",
        attribute=attribute,
        value=value,
        valid_from=start,
        source_episode_id=source,
    )


def expected(store: SGAMStore, attribute: str) -> tuple[int, Any, Any] | None:
    """(latest believed version's fact_id and start, earliest believed created_at), from
    every version of the key."""
    believed = [f for f in store.versions("acme", "mira", attribute) if f.known_to is None]
    if not believed:
        return None
    latest = max(believed, key=lambda f: f.valid_from)
    return latest.fact_id, latest.valid_from, min(f.created_at for f in believed)


def tails(store: SGAMStore, attributes: list[str]) -> dict[str, tuple[int, Any, Any]]:
    """What one `key_tails` statement says of these keys, in a write transaction."""
    ns = namespaces.to_text(store.layout.fact_namespace("acme", "mira"))
    keys = [(ns, a) for a in attributes]
    found = store.facts.run(lambda tx: tx.versions.key_tails(tx.cur, keys))
    return {
        row.attribute: (row.fact_id, clock.parse_stored(row.valid_from), clock.parse_stored(first))
        for row, first in found
    }


def test_key_tails_are_what_each_keys_history_says(store: SGAMStore) -> None:
    for n, day in enumerate(["05", "09", "14", "20"]):  # a long history, in order
        store.replace_fact(fact("city", f"c{n}", f"2026-06-{day}T00:00:00Z"))
    store.replace_fact(fact("city", "early", "2026-05-01T00:00:00Z"))  # now the key's first
    store.replace_fact(fact("tone", "short", "2026-06-01T00:00:00Z"))
    store.replace_fact(fact("tone", "long", "2026-06-03T00:00:00Z"))
    store.replace_fact(  # a correction with an equal start replaces the stored version
        fact("tone", "terse", "2026-06-03T00:00:00Z", source="ext:b"), policy=LatestRecordedWins()
    )
    store.replace_fact(fact("gone", "x", "2026-06-01T00:00:00Z"))
    store.delete(("acme", "mira"), "gone")
    found = tails(store, ["city", "tone", "gone", "never"])
    want = {a: expected(store, a) for a in ("city", "tone", "gone", "never")}
    assert found == {a: w for a, w in want.items() if w is not None}
    assert found["city"][2] == clock.parse_stored("2026-05-01T00:00:00.000000Z")
    assert set(found) == {"city", "tone", "gone"}  # a closed key still has a believed tail


@pytest.mark.sqlite_only
def test_a_long_history_costs_the_batched_read_no_more(store: SGAMStore) -> None:
    """The read descends each key's versions index to its latest version: a key with
    200 versions costs it what a key with 2 does (counted in SQLite VM steps), where an
    aggregate over believed versions read all 200."""
    for n in range(200):
        store.put(("acme", "mira"), "busy", {"n": n})
    for n in range(2):
        store.put(("acme", "mira"), "quiet", {"n": n})
    ns = namespaces.to_text(("acme", "mira"))

    def steps(attribute: str) -> int:
        counted = [0]

        def count() -> int:
            counted[0] += 1
            return 0

        def read(tx: Any) -> None:
            cur = tx.cur
            store.conn.set_progress_handler(count, 10)
            try:
                tx.versions.key_tails(cur, [(ns, attribute)])
            finally:
                store.conn.set_progress_handler(None, 0)

        store.facts.run(read)
        return counted[0]

    assert steps("busy") <= steps("quiet") + 2


def test_the_single_key_read_agrees_with_the_batched_one(store: SGAMStore) -> None:
    """`first_created`, what the rule reads for a key whose tail it does not hold (a key
    written earlier in the same batch), gives the batched read's created_at."""
    store.replace_fact(fact("city", "a", "2026-06-05T00:00:00Z"))
    store.replace_fact(fact("city", "b", "2026-06-09T00:00:00Z"))
    store.replace_fact(fact("city", "early", "2026-05-01T00:00:00Z"))
    ns = namespaces.to_text(store.layout.fact_namespace("acme", "mira"))

    def read(tx: Any) -> tuple[Any, Any]:
        return (
            tx.versions.first_created(tx.cur, ns, "city"),
            tx.versions.first_created(tx.cur, ns, "never"),
        )

    first, none = store.facts.run(read)
    assert clock.parse_stored(first) == tails(store, ["city"])["city"][2]
    assert clock.parse_stored(first) == clock.parse_stored("2026-05-01T00:00:00.000000Z")
    assert none is None

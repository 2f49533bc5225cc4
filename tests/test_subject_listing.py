"""A subject's listing (issue 41): a prefix below its tenant seeks its own namespace's
rows; a tenant-wide listing keeps its walk newest first. Every shape is checked against a
reference model of the rule (current, `as_of` valid time, `known_at` belief time, tenant
views) in both layouts on both engines; on SQLite the work of one subject's page is
counted in virtual-machine steps, which must not grow with its tenant."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest
from langgraph.store.base import PutOp

from sgam_store import SGAMStore
from sgam_store.core import clock

ENGINES = ("sqlite", "postgres")

Row = tuple[tuple[str, ...], str, int]  # (namespace, key, value's v)


def _history(tenant_at: int) -> list[tuple[tuple[str, ...], str, int | None]]:
    """Seeded puts and deletes over two tenants, their subjects and a deeper namespace."""
    root = ("mem",) * tenant_at
    spaces = [
        (*root, tenant, *path)
        for tenant in ("acme", "globex")
        for path in (("mira",), ("mira", "trips"), ("otto",), ())
    ]
    rnd = random.Random(41)
    ops: list[tuple[tuple[str, ...], str, int | None]] = []
    live: set[tuple[tuple[str, ...], str]] = set()
    for step in range(60):
        ns, key = rnd.choice(spaces), f"k{rnd.randrange(4)}"
        deleting = (ns, key) in live and rnd.random() < 0.25
        ops.append((ns, key, None if deleting else step))
        (live.discard if deleting else live.add)((ns, key))
    return ops


def _under(prefix: tuple[str, ...], rows: list[Row]) -> list[Row]:
    return [r for r in rows if r[0][: len(prefix)] == prefix]


def _rows(items: list) -> list[Row]:
    return [(tuple(i.namespace), i.key, i.value["v"]) for i in items]


@pytest.mark.parametrize("tenant_at", [0, 1])
def test_every_listing_shape_follows_the_rule(target: str, tenant_at: int) -> None:
    root = ("mem",) * tenant_at
    subjects = [
        (*root, "acme", "mira"),
        (*root, "acme", "mira", "trips"),
        (*root, "acme", "otto"),
        (*root, "acme", "nobody"),
        (*root, "acme"),
    ]
    states: list[tuple[str, list[Row]]] = []
    live: dict[tuple[tuple[str, ...], str], int] = {}
    with SGAMStore.from_conn_string(target, tenant_at=tenant_at) as store:
        store.setup()
        for ns, key, v in _history(tenant_at):
            if v is None:
                store.delete(ns, key)
                live.pop((ns, key))
            else:
                store.put(ns, key, {"kind": "odd" if v % 2 else "even", "v": v})
                live.pop((ns, key), None)
                live[(ns, key)] = v
            time.sleep(0.001)
            states.append((clock.utc_now(), [(*k, v) for k, v in reversed(live.items())]))
            time.sleep(0.001)
        now = states[-1][1]
        view = store.for_tenant("acme")
        for prefix in subjects:
            expected = _under(prefix, now)
            assert _rows(store.search(prefix, limit=100)) == expected, prefix
            odd = [r for r in expected if r[2] % 2]
            assert _rows(store.search(prefix, filter={"kind": "odd"}, limit=100)) == odd
            pages = [_rows(store.search(prefix, limit=3, offset=o)) for o in range(0, 30, 3)]
            assert [r for page in pages for r in page] == expected, prefix
            inside = prefix[tenant_at + 1 :]
            relative = [(ns[tenant_at + 1 :], k, v) for ns, k, v in expected]
            if tenant_at == 0:  # a view's namespaces are relative to its tenant
                assert _rows(view.search(inside, limit=100)) == relative, prefix
            for at, state in states[::7]:
                past = store.as_of(at).search(prefix, limit=100)
                # A version closed later was copied when it closed: a past listing orders
                # it by that belief time, so its members are compared.
                assert sorted(_rows(past)) == sorted(_under(prefix, state)), (prefix, at)
                believed = store.as_of(states[-1][0], known_at=at).search(prefix, limit=100)
                assert _rows(believed) == _under(prefix, state), (prefix, at)


def _steps(store: SGAMStore, reader: Any, prefix: tuple[str, ...]) -> tuple[int, int]:
    """(SQLite virtual-machine steps, rows) of one listing, the first of its kind on this
    store (a repeated page is remembered): a count, not a time, the same on any machine,
    taken through the progress handler of the connection the read is lent."""
    counted = [0]

    def tick() -> int:
        counted[0] += 1
        return 0

    with store.engine.reading() as conn:
        conn.set_progress_handler(tick, 1)
        try:
            page = reader.search(prefix, filter={"kind": "odd"}, limit=20)
        finally:
            conn.set_progress_handler(None, 1)
    return counted[0], len(page)


@pytest.mark.sqlite_only
@pytest.mark.parametrize("tenant_at", [0, 1])
@pytest.mark.parametrize("scope", ["current", "as_of", "known_at"])
def test_a_subjects_page_costs_the_same_in_a_small_and_a_large_tenant(
    tmp_path, tenant_at: int, scope: str
) -> None:
    """One subject holds 20 facts of a tenant of 400, then of 8,000: its listing's work
    stays flat, now and as of an instant (walking the tenant newest first, it grew with
    the tenant: 6-10 ms at 20k, 32 ms as of an instant)."""
    root = ("mem",) * tenant_at
    steps = []
    for others in (19, 399):
        with SGAMStore.from_conn_string(str(tmp_path / f"{others}.db"), tenant_at=tenant_at) as s:
            s.setup()
            mira = (*root, "acme", "mira")
            s.batch([PutOp(mira, f"k{j}", {"kind": "odd", "v": j}) for j in range(20)])
            for chunk in range(others):
                s.batch(
                    [
                        PutOp((*root, "acme", f"user{chunk}"), f"k{j}", {"kind": "odd", "v": j})
                        for j in range(20)
                    ]
                )
            now = clock.utc_now()
            reader = {"current": s, "as_of": s.as_of(now), "known_at": s.as_of(now, known_at=now)}
            counted, rows = _steps(s, reader[scope], mira)
            assert rows == 20
            steps.append(counted)
    small, large = steps
    assert large < 1.5 * small, (
        steps
    )  # before (at 2ad806d): current [3937, 72337], as_of [5707, 104507]

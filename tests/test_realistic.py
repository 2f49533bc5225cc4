"""The realistic store (sgam_store.testing.realistic): the same seed makes the same
store, every shape issue 38 asks for is there where `Realistic` says, and the file passes
the ledger's own invariant checks (tests/reliability.py)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sgam_store import ConfigurationError, SGAMStore
from sgam_store.managers.supersession import pending_reviews
from sgam_store.testing.realistic import MIN_FACTS, SPAN, START, Realistic, build

from .reliability import check_file

FACTS = 2000


@pytest.fixture(scope="module", params=["sgam", "langmem"])
def made(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Realistic:
    path = tmp_path_factory.mktemp(request.param) / "real.db"
    return build(str(path), layout=request.param, facts=FACTS)


@pytest.fixture
def store(made: Realistic) -> Iterator[SGAMStore]:
    with SGAMStore.from_conn_string(made.path, index=None) as opened:
        yield opened


def _key(store: SGAMStore, key: tuple[tuple[str, ...], str]) -> tuple[str, str, str]:
    tenant, subject = store.layout.split(key[0])
    return tenant, subject, key[1]


def _content(store: SGAMStore) -> list[tuple[Any, ...]]:
    """What a seed decides: every believed fact but the times the store stamps."""
    return [
        (f.namespace, f.attribute, f.value, f.source_episode_id, f.valid_to is None)
        for f in store.ledger()
    ]


def _episode_times(store: SGAMStore) -> list[datetime]:
    return [f.valid_from for f in store.ledger() if f.valid_from < START + SPAN + timedelta(days=1)]


def test_the_same_seed_makes_the_same_store(tmp_path: Path) -> None:
    first = build(str(tmp_path / "a.db"), layout="sgam", facts=MIN_FACTS, seed=7)
    again = build(str(tmp_path / "b.db"), layout="sgam", facts=MIN_FACTS, seed=7)
    other = build(str(tmp_path / "c.db"), layout="sgam", facts=MIN_FACTS, seed=8)
    assert {**vars(first), "path": ""} == {**vars(again), "path": ""}
    with (
        SGAMStore.from_conn_string(first.path) as a,
        SGAMStore.from_conn_string(again.path) as b,
        SGAMStore.from_conn_string(other.path) as c,
    ):
        assert _content(a) == _content(b)
        # Valid times from episodes repeat; a put's is the moment of the put.
        assert _episode_times(a) == _episode_times(b) != []
        assert _content(a) != _content(c)


def test_the_same_seed_makes_the_same_langmem_store_at_the_smallest_size(tmp_path: Path) -> None:
    first = build(str(tmp_path / "a.db"), layout="langmem", facts=MIN_FACTS, seed=7)
    again = build(str(tmp_path / "b.db"), layout="langmem", facts=MIN_FACTS, seed=7)
    assert {**vars(first), "path": ""} == {**vars(again), "path": ""}
    with SGAMStore.from_conn_string(first.path) as a, SGAMStore.from_conn_string(again.path) as b:
        assert _content(a) == _content(b)


def test_the_store_passes_its_own_checks(made: Realistic) -> None:
    stats = check_file(made.path, index=False)
    assert stats.facts <= made.rows and made.facts >= FACTS * 0.95


def test_a_key_has_hundreds_of_versions(made: Realistic, store: SGAMStore) -> None:
    history = store.history(*_key(store, made.deep_key))
    assert made.deep_versions >= 500
    assert len(history) == made.deep_versions


def test_a_long_memory_of_several_kb(made: Realistic, store: SGAMStore) -> None:
    item = store.get(*made.long_memory)
    assert item is not None and set(item.value) == {"content"}
    assert len(item.value["content"].encode()) == made.long_memory_bytes >= 3000


def test_hostile_names_and_values(made: Realistic, store: SGAMStore) -> None:
    namespace, key = made.hostile_key
    assert key != key.strip() and "<b>" in key and not key.isascii()
    assert any("<img" in label and label != label.strip() for label in namespace)
    item = store.get(namespace, key)
    assert item is not None and "<script>" in item.value["content"]
    assert len(store.history(*_key(store, made.hostile_key))) == 2
    assert len(made.long_key[1]) >= 200 and store.get(*made.long_key) is not None
    assert made.hostile_tenant in made.tenants and "<script>" in made.hostile_tenant
    assert store.for_tenant(made.hostile_tenant).search((), limit=1)


def test_every_source_is_a_recorded_message(made: Realistic, store: SGAMStore) -> None:
    facts = store.ledger()
    sources = {(f.tenant_id, f.source_episode_id) for f in facts}
    assert all(source.startswith("msg:") for _, source in sources)
    uuid.UUID(next(iter(sources))[1].removeprefix("msg:"))
    episodes = [store.get_episode(s, tenant_id=t) for t, s in sorted(sources)]
    assert None not in episodes
    lengths = sorted(len(e.content) for e in episodes if e is not None)
    assert lengths[len(lengths) // 2] >= 80  # real messages, not ids
    sampled = [
        any(store.get_episode(e, tenant_id=t) for t in made.tenants) for e in made.episode_ids
    ]
    assert len(sampled) == 20 and all(sampled)


def test_a_review_queue_hundreds_deep_beside_decided_and_undone(
    made: Realistic, store: SGAMStore
) -> None:
    reviews, idle = pending_reviews(store, None, limit=10_000)
    assert len(reviews) + len(idle) == made.review_queue >= 100
    decisions = {}
    for fact in store.ledger():
        decisions.update((d.decision_id, d) for d in store.supersession_decisions(fact))
    assert sorted(decisions) == sorted(made.decision_ids) and made.decided >= 30
    undone = [d for d in decisions.values() if d.undone_at is not None]
    assert len(undone) == made.undone > 0
    assert {d.decision for d in decisions.values()} >= {"supersedes", "independent"}


def test_ttls_pending_and_passed(made: Realistic, store: SGAMStore) -> None:
    now = datetime.now(UTC)
    facts = store.ledger()
    passed = [f for f in facts if f.expires_at is not None and f.expires_at < now]
    pending = [f for f in facts if f.expires_at is not None and f.expires_at > now]
    assert len(passed) == made.expired and all(
        store.get(f.namespace, f.attribute) is None for f in passed
    )
    if made.layout == "langmem":
        assert pending  # memories put with a TTL


def test_langmem_layout(made: Realistic, store: SGAMStore) -> None:
    if made.layout != "langmem":
        pytest.skip("LangMem's layout only")
    assert made.tenant_at == store.tenant_at == 1
    assert made.subjects == len(made.tenants) >= 30  # 2,800 at 100k facts
    plain = [f for f in store.ledger() if f.namespace == ("memories", f.tenant_id)]
    assert all(uuid.UUID(f.attribute) for f in plain if not f.attribute.startswith("door_code"))
    assert all("content" in f.value for f in plain)
    shapes = {type(f.value["content"]).__name__ for f in plain}
    assert shapes == {"str", "dict"}  # the tools' shape and the manager's
    big = store.ledger(made.big_tenant)
    assert len(big) > 0.2 * made.facts


def test_sgam_layout(made: Realistic, store: SGAMStore) -> None:
    if made.layout != "sgam":
        pytest.skip("SGAM's layout only")
    assert made.tenant_at == 0 and made.subjects >= 40  # 4,400 at 100k facts
    values = [f.value for f in store.ledger(made.big_tenant)]
    types = {type(v).__name__ for v in values}
    assert types >= {"str", "int", "float", "bool", "list", "dict"}
    assert made.delayed > 0 and made.corrections > 0


def test_bad_requests_are_typed_errors(tmp_path: Path, made: Realistic) -> None:
    with pytest.raises(ConfigurationError, match="layout"):
        build(str(tmp_path / "x.db"), layout="mem0", facts=1000)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="facts"):
        build(str(tmp_path / "x.db"), layout="sgam", facts=10)
    with pytest.raises(ConfigurationError, match="already holds facts"):
        build(made.path, layout=made.layout, facts=1000)


@pytest.mark.parametrize("layout", ["sgam", "langmem"])
def test_builds_on_postgresql(layout: str, pg_server: str) -> None:
    from tests import pg

    target = pg.fresh_database()
    made = build(target, layout=layout, facts=MIN_FACTS)  # type: ignore[arg-type]
    assert check_file(target, index=False).facts > 0.9 * made.facts
    with SGAMStore.from_conn_string(target) as store:
        reviews, idle = pending_reviews(store, None, limit=10_000)
        assert len(reviews) + len(idle) == made.review_queue
        assert len(store.history(*_key(store, made.deep_key))) == made.deep_versions


def test_builds_inside_a_running_event_loop(tmp_path: Path) -> None:
    """A notebook cell or a Playwright test calls `build` while its event loop runs; the
    LangMem layout's concurrent puts must not need a loop of the caller's thread."""

    async def inside() -> Realistic:
        return build(str(tmp_path / "inside.db"), layout="langmem", facts=MIN_FACTS)

    made = asyncio.run(inside())
    assert made.facts >= MIN_FACTS * 0.95 and made.rows > made.facts

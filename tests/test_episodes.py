"""The raw episode log, and "who said it?" from a fact to its episode or external marker."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.base import BaseStore

from sgam_store import (
    EpisodeNotFoundError,
    ExternalSource,
    FactNotFoundError,
    InvalidEpisodeError,
    MemoryFact,
    SGAMError,
    SGAMStore,
)
from tests.db import rows, scalar

from .seed import E1_AT, E1_CANDIDATES, E1_TEXT, fresh_store, record_seed

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine


def test_record_and_get_round_trip_across_reopen(db_path: str) -> None:
    with SGAMStore.from_conn_string(db_path) as store:
        recorded = store.record_episode(
            "acme",
            E1_TEXT,
            source_kind="user_message",
            speaker="mira",
            thread_id="t1",
            metadata={"channel": "chat", "confirmed": True},
            occurred_at="2026-06-01T11:00:00+02:00",
            retention_class="session_only",
            episode_id="e1",
        )
    with SGAMStore.from_conn_string(db_path) as store:
        loaded = store.get_episode("e1")
    assert loaded == recorded
    assert loaded.occurred_at == datetime(2026, 6, 1, 9, tzinfo=UTC)
    assert loaded.metadata == {"channel": "chat", "confirmed": True}


def test_defaults_are_a_fresh_id_and_now(store: SGAMStore) -> None:
    before = datetime.now(UTC)
    a = store.record_episode("acme", "hello", source_kind="tool_result")
    b = store.record_episode("acme", "hello", source_kind="tool_result")
    assert a.episode_id != b.episode_id and a.episode_id.startswith("ep_")
    assert before <= a.occurred_at <= a.recorded_at <= b.recorded_at
    assert (a.speaker, a.thread_id, a.retention_class) == (None, None, "keep")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"source_kind": "rumour"}, "source_kind"),
        ({"content": "  \n"}, "nothing to quote"),
        ({"occurred_at": "2026-06-01T09:00:00"}, "naive"),
        ({"episode_id": "thread:t1"}, "reserved external marker"),
        ({"episode_id": "external:crm"}, "reserved external marker"),
        ({"tenant_id": "ac.me"}, "contains '.'"),
        ({"metadata": {"at": datetime(2026, 1, 1)}}, "not JSON-serializable"),
        ({"retention_class": ""}, "retention_class"),
    ],
)
def test_malformed_episodes_are_rejected(store: SGAMStore, fields: dict, message: str) -> None:
    args = {"tenant_id": "acme", "content": E1_TEXT, "source_kind": "user_message", **fields}
    with pytest.raises(InvalidEpisodeError, match=message) as info:
        store.record_episode(args.pop("tenant_id"), args.pop("content"), **args)
    assert isinstance(info.value, SGAMError) and isinstance(info.value, ValueError)
    assert scalar(store, "SELECT COUNT(*) FROM episodes") == 0


def test_episodes_are_immutable(store: SGAMStore) -> None:
    store.record_episode("acme", "first", source_kind="user_message", episode_id="e1")
    with pytest.raises(InvalidEpisodeError, match="already recorded"):
        store.record_episode("acme", "second", source_kind="user_message", episode_id="e1")
    assert store.get_episode("e1").content == "first"


def test_get_episode_is_tenant_scoped(store: SGAMStore) -> None:
    store.record_episode("acme", "secret", source_kind="user_message", episode_id="e1")
    assert store.get_episode("e1", tenant_id="acme").content == "secret"
    assert store.get_episode("e1", tenant_id="globex") is None
    assert store.get_episode("nope") is None


def test_who_said_goes_from_a_fact_to_the_episode_text_and_speaker(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    result = store.apply_updates(E1_CANDIDATES, tenant_id="acme", episode_id=e1.episode_id)
    for fact in result.written:
        said = store.who_said(fact)
        assert said == e1 and (said.content, said.speaker) == (E1_TEXT, "mira")
        assert store.who_said(fact.fact_id, tenant_id="acme") == e1


def test_who_said_marks_external_sources(store: SGAMStore) -> None:
    store.put(("acme", "mira"), "tone", {"style": "short"})

    def remember(state: MessagesState, *, store: BaseStore) -> dict:
        store.put(("acme", "leo"), "tone", {"style": "formal"})
        return {}

    graph = StateGraph(MessagesState).add_node(remember).add_edge(START, "remember")
    graph.compile(store=store).invoke({"messages": []}, {"configurable": {"thread_id": "t9"}})
    plain = store.who_said(store.fact_at("acme", "mira", "tone"))
    threaded = store.who_said(store.fact_at("acme", "leo", "tone"))
    assert plain == ExternalSource(source_id="external:store.put", kind="external", ref="store.put")
    assert threaded == ExternalSource(source_id="thread:t9", kind="thread", ref="t9")


def test_who_said_refuses_broken_provenance(store: SGAMStore) -> None:
    store.record_episode("globex", "not yours", source_kind="user_message", episode_id="g1")
    dangling = store.replace_fact(_fact("e404"))
    with pytest.raises(EpisodeNotFoundError, match="neither a recorded episode"):
        store.who_said(dangling)
    cross = store.replace_fact(_fact("g1", attribute="city"))
    with pytest.raises(EpisodeNotFoundError, match="tenant 'acme'"):
        store.who_said(cross)  # an episode of another tenant does not vouch for acme's fact
    with pytest.raises(FactNotFoundError):
        store.who_said(9999)
    with pytest.raises(FactNotFoundError, match="globex"):
        store.who_said(dangling.fact_id, tenant_id="globex")


def test_every_fact_of_the_write_path_resolves(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    store.apply_updates(E1_CANDIDATES, tenant_id="acme", episode_id=e1.episode_id)
    store.put(("acme", "mira"), "tone", {"style": "short"})
    fact_ids = [r[0] for r in rows(store, "SELECT DISTINCT fact_id FROM facts")]
    assert len(fact_ids) == 3
    kinds = {type(store.who_said(fact_id)).__name__ for fact_id in fact_ids}
    assert kinds == {"Episode", "ExternalSource"}


def _fact(source: str, attribute: str = "passport_deadline") -> MemoryFact:
    return MemoryFact(
        tenant_id="acme",
        subject="mira",
        attribute=attribute,
        value="x",
        valid_from=E1_AT,
        source_episode_id=source,
    )


@settings(max_examples=25, deadline=None)
@given(
    content=st.text(min_size=1).filter(str.strip),
    speaker=st.none() | st.text(max_size=20),
    metadata=st.dictionaries(
        st.text(max_size=10), st.none() | st.booleans() | st.integers() | st.text(), max_size=4
    ),
)
def test_any_episode_round_trips(content: str, speaker: str | None, metadata: dict) -> None:
    with fresh_store() as store:
        recorded = store.record_episode(
            "acme", content, source_kind="business_event", speaker=speaker, metadata=metadata
        )
        assert store.get_episode(recorded.episode_id, tenant_id="acme") == recorded

"""`tenant_at`: where a namespace names its tenant, e.g. 1 for LangMem's
("memories", "{langgraph_user_id}"). With it every user is a tenant: views, searches,
listings and erasure partition by the label at that index, on every engine.

The decisions these tests hold (docs/namespaces.md):
- labels before the tenant are a shared scope: part of the subject, never a tenant;
- the subject is every label but the tenant's, in order ("memories", or "memories.work");
- a tenant view's namespaces are the store's without the tenant label;
- a namespace shorter than tenant_at + 1 holds no item (typed error) and, as a search
  prefix, names no tenant: it searches all of them.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import InvalidNamespaceError
from langmem import create_manage_memory_tool, create_search_memory_tool

from graphs.scripted import ScriptedChatModel, call_tool, say
from sgam_store import ConfigurationError, MemoryFact, SGAMStore, fact_namespace
from sgam_store.core.clock import utc_now

from .conftest import HashEmbeddings
from .test_isolation import HOSTILE_TENANTS

with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.x; still shipped
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import create_react_agent

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine

DIMS = 32
LANGMEM_NS = ("memories", "{langgraph_user_id}")
# Users named like the shared scope label, and GLOB/LIKE metacharacters.
USERS = ["alice", "bob", "memories", "a*", "a?e", "[ab]", "%", "_", "alice2", "ali"]


def langmem_store(target: str, **kwargs: Any) -> SGAMStore:
    index = {"dims": DIMS, "embed": HashEmbeddings(DIMS), "fields": ["content"]}
    store = SGAMStore(target, index=index, tenant_at=1, **kwargs)
    store.setup()
    return store


@pytest.fixture
def mem(target: str) -> Any:
    store = langmem_store(target)
    yield store
    store.close()


def fill(store: SGAMStore, users: list[str]) -> dict[str, set[str]]:
    """Each user's memories under ("memories", user) and one under ("memories", user,
    "work"); the content names the owner, so a leak shows in the value."""
    keys: dict[str, set[str]] = defaultdict(set)
    for n, user in enumerate(users):
        for i in range(3):
            key = f"m{n}-{i}"
            store.put(("memories", user), key, {"content": f"passport deadline {user}", "o": user})
            keys[user].add(key)
        store.put(("memories", user, "work"), f"w{n}", {"content": f"standup {user}", "o": user})
        keys[user].add(f"w{n}")
    return keys


def owners(items: list) -> set[str]:
    return {item.value["o"] for item in items}


# ---------------------------------------------------------------- layout decisions


def test_each_user_is_a_tenant(mem: SGAMStore) -> None:
    keys = fill(mem, USERS)
    for user in USERS:
        view = mem.for_tenant(user)
        hits = view.search((), query="passport deadline", limit=100)
        assert owners(hits) == {user}, user
        assert {h.key for h in view.search((), limit=100)} == keys[user]
        assert owners(mem.search(("memories", user), query="deadline", limit=100)) == {user}
        assert owners(mem.search(("memories", user), limit=100)) == {user}
        fact = mem.fact_at(user, "memories", f"m{USERS.index(user)}-0")
        assert fact is not None and fact.tenant_id == user
        assert fact.subject == "memories" and fact.namespace == ("memories", user)


def test_a_prefix_shorter_than_the_tenant_searches_every_tenant(mem: SGAMStore) -> None:
    fill(mem, USERS)
    assert owners(mem.search(("memories",), query="passport", limit=1000)) == set(USERS)
    assert owners(mem.search((), limit=1000)) == set(USERS)
    # "alice" is a tenant, not a root label: no namespace starts with it.
    assert mem.search(("alice",), limit=1000) == []


def test_subject_is_every_label_but_the_tenant(mem: SGAMStore) -> None:
    mem.put(("memories", "alice", "work"), "k", {"content": "standup"})
    fact = mem.fact_at("alice", "memories.work", "k")
    assert fact is not None and fact.subject == "memories.work"
    assert fact.namespace == ("memories", "alice", "work")
    assert fact_namespace("alice", "memories.work", tenant_at=1) == ("memories", "alice", "work")
    assert mem.history("alice", "memories.work", "k")[0].value == {"content": "standup"}


def test_a_view_shows_namespaces_without_the_tenant_label(mem: SGAMStore) -> None:
    fill(mem, ["alice", "memories"])
    view = mem.for_tenant("memories")  # the user named like the scope label
    assert sorted(view.list_namespaces()) == [("memories",), ("memories", "work")]
    assert {tuple(h.namespace) for h in view.search((), limit=100)} == {
        ("memories",),
        ("memories", "work"),
    }
    assert view.get(("memories",), "m1-0").value["o"] == "memories"
    assert view.get(("memories",), "m0-0") is None  # alice's key, in alice's namespace
    view.put(("notes",), "k", {"content": "a note", "o": "memories"})
    assert mem.get(("notes", "memories"), "k").value["content"] == "a note"
    assert [tuple(h.namespace) for h in view.search(("notes",))] == [("notes",)]
    assert view.list_namespaces(prefix=("memories", "*")) == [("memories", "work")]
    assert view.list_namespaces(suffix=("work",)) == [("memories", "work")]
    assert view.list_namespaces(max_depth=1) == [("memories",), ("notes",)]


def test_the_store_lists_absolute_namespaces(mem: SGAMStore) -> None:
    fill(mem, ["alice", "bob"])
    assert mem.list_namespaces(prefix=("memories",), max_depth=2) == [
        ("memories", "alice"),
        ("memories", "bob"),
    ]
    assert mem.list_namespaces(prefix=("memories", "bob")) == [
        ("memories", "bob"),
        ("memories", "bob", "work"),
    ]


def test_a_namespace_shorter_than_the_tenant_holds_no_item(mem: SGAMStore) -> None:
    with pytest.raises(InvalidNamespaceError):  # LangGraph's own check: empty
        mem.put((), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError, match="tenant_at=1"):
        mem.put(("alice",), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError, match="tenant_at=1"):
        mem.get(("alice",), "k")
    with pytest.raises(InvalidNamespaceError, match="tenant_at=1"):
        mem.for_tenant("alice").put((), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError, match="tenant_at=1"):
        mem.replace_fact(
            MemoryFact(tenant_id="alice", subject="", attribute="k", value=1,
                       valid_from=utc_now(), source_episode_id="e1")
        )  # fmt: skip
    with pytest.raises(InvalidNamespaceError, match="reserved"):
        mem.put(("memories", "langgraph"), "k", {"content": "x"})
    assert mem.search((), limit=10) == []  # nothing was written


def test_purge_of_a_user_erases_only_that_user(mem: SGAMStore) -> None:
    fill(mem, USERS)
    report = mem.purge("a*")
    assert len(report.fact_ids) == 4
    assert mem.for_tenant("a*").search((), limit=100) == []
    assert owners(mem.search(("memories",), limit=1000)) == set(USERS) - {"a*"}


def test_sgam_facts_place_their_subject_around_the_tenant(mem: SGAMStore) -> None:
    """SGAM's own typed facts: the subject's first label goes before the tenant."""
    mem.replace_fact(
        MemoryFact(tenant_id="alice", subject="mira.trip", attribute="deadline",
                   value="2026-07-01", valid_from=utc_now(), source_episode_id="e1")
    )  # fmt: skip
    assert mem.get(("mira", "alice", "trip"), "deadline").value == {"value": "2026-07-01"}
    assert [f.subject for f in mem.ledger("alice")] == ["mira.trip"]


# ---------------------------------------------------------------- the stored setting


def test_the_setting_is_stored_and_a_mismatch_raises(target: str) -> None:
    langmem_store(target).close()
    with SGAMStore.from_conn_string(target) as store:  # no setting: the database's
        assert store.tenant_at == 1
    with SGAMStore.from_conn_string(target, tenant_at=1) as store:
        assert store.tenant_at == 1
    with (
        pytest.raises(ConfigurationError, match="tenant_at=1"),
        SGAMStore.from_conn_string(target, tenant_at=0) as store,
    ):
        store.put(("memories", "alice"), "k", {"content": "x"})


def test_a_database_from_before_the_setting_is_tenant_first(target: str) -> None:
    with SGAMStore.from_conn_string(target) as store:
        store.put(("acme", "mira"), "k", {"content": "x"})
        with store.engine.reading() as conn:  # as a database written before tenant_at
            conn.execute("DELETE FROM sgam_meta WHERE key = 'tenant_at'")
    with (
        SGAMStore.from_conn_string(target, tenant_at=1) as store,
        pytest.raises(ConfigurationError, match="tenant_at=0"),
    ):
        store.setup()
    with SGAMStore.from_conn_string(target) as store:
        assert store.tenant_at == 0
        assert store.for_tenant("acme").get(("mira",), "k") is not None


@pytest.mark.parametrize("bad", [-1, True, "1"])
def test_a_bad_setting_is_a_typed_error(target: str, bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="tenant_at"):
        SGAMStore(target, tenant_at=bad)


def test_copy_keeps_the_setting(tmp_path: Path, target: str, mem: SGAMStore) -> None:
    from sgam_store.cli import main

    fill(mem, ["alice", "bob"])
    copy = str(tmp_path / "copy.db")
    assert main(["copy", "--from", target, "--to", copy]) == 0
    with SGAMStore.from_conn_string(copy) as store:
        assert store.tenant_at == 1
        assert owners(store.for_tenant("bob").search((), limit=10)) == {"bob"}


def test_the_server_store_reads_sgam_tenant_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphs import store as server_store

    monkeypatch.setenv("SGAM_DB_PATH", str(tmp_path / "server.db"))
    monkeypatch.setenv("SGAM_EMBEDDING", "none")
    monkeypatch.setenv("SGAM_TENANT_AT", "1")
    store = server_store.open_store()
    try:
        assert store.tenant_at == 1
    finally:
        store.close()
    monkeypatch.setenv("SGAM_TENANT_AT", "one")
    with pytest.raises(ValueError, match="SGAM_TENANT_AT"):
        server_store.open_store()


# ---------------------------------------------------------------- LangMem's own tools


def langmem_agent(model: ScriptedChatModel, store: SGAMStore) -> Any:
    tools = [create_manage_memory_tool(LANGMEM_NS), create_search_memory_tool(LANGMEM_NS)]
    return create_react_agent(model, tools, store=store)


def run_as(agent: Any, user: str, text: str) -> list:
    config = {"configurable": {"thread_id": f"t-{user}", "langgraph_user_id": user}}
    return agent.invoke({"messages": [("user", text)]}, config)["messages"]


def test_langmem_tools_never_read_another_users_memory(mem: SGAMStore) -> None:
    """LangMem's manage and search tools in a ReAct agent, with hostile user names:
    each user's search tool returns only that user's memories."""
    script = []
    for user in USERS:
        script += [
            call_tool("manage_memory", action="create", content=f"passport deadline of {user}"),
            say("Saved."),
        ]
    for _ in USERS:
        script += [call_tool("search_memory", query="passport deadline"), say("Found.")]
    model = ScriptedChatModel(replies=script)
    agent = langmem_agent(model, mem)
    for user in USERS:
        run_as(agent, user, "remember my passport deadline")
    for user in USERS:
        messages = run_as(agent, user, "what is my passport deadline?")
        found = [m for m in messages if getattr(m, "name", None) == "search_memory"][-1]
        assert f'"passport deadline of {user}"' in found.content, (user, found.content)
        for other in set(USERS) - {user}:
            assert f'deadline of {other}"' not in found.content, (user, other)
        assert len(mem.for_tenant(user).search((), limit=100)) == 1


# ---------------------------------------------------------------- isolation, as a property

SCOPES = ("memories", "notes", "other")  # "other": another tenant's name as the scope label


@settings(
    max_examples=15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    users=st.lists(st.sampled_from(HOSTILE_TENANTS + USERS), min_size=2, max_size=4, unique=True),
    writes=st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from(SCOPES), st.booleans(), st.booleans()),
        min_size=1,
        max_size=12,
    ),
)
def test_views_and_searches_see_exactly_their_tenant(
    tmp_path_factory: pytest.TempPathFactory, users: list[str], writes: list
) -> None:
    """Writes under (scope, user[, "deep"]) where the scope label may be another user's
    name; each user's view, and the store's search with that user at index 1, return
    exactly the user's current memories, against a dict model."""
    path = str(tmp_path_factory.mktemp("iso") / "k1.db")
    store = langmem_store(path)
    try:
        model: dict[str, dict[tuple[tuple[str, ...], str], dict]] = defaultdict(dict)
        for n, (ui, scope_choice, deep, delete) in enumerate(writes):
            user, other = users[ui % len(users)], users[(ui + 1) % len(users)]
            scope = other if scope_choice == "other" else scope_choice
            relative = (scope, "deep") if deep else (scope,)
            key = f"k{n % 3}"
            if delete:
                store.for_tenant(user).delete(relative, key)
                model[user].pop((relative, key), None)
            else:
                value = {"content": f"passport {other}", "o": user, "n": n}
                store.put((scope, user, *relative[1:]), key, value)
                model[user][(relative, key)] = value
        for user in users:
            want = model[user]
            view = store.for_tenant(user)
            for query in (None, "passport", other_name(users, user)):
                got = {(tuple(i.namespace), i.key): i.value for i in
                       view.search((), query=query, limit=1000)}  # fmt: skip
                if query is None or query == "passport":
                    assert got == want, (user, query)
                else:
                    assert all(want.get(k) == v for k, v in got.items()), (user, query)
            for scope in {r[0] for r, _ in want} | set(SCOPES[:2]):
                sub = {k: v for k, v in want.items() if k[0][0] == scope}
                got = {((scope, *i.namespace[2:]), i.key): i.value for i in
                       store.search((scope, user), query="passport", limit=1000)}  # fmt: skip
                assert got == sub, (user, scope)
            assert {(r, k) for r, k in want} == {
                (tuple(ns), k)
                for ns in view.list_namespaces(limit=1000)
                for k in [i.key for i in view.search(ns, limit=1000) if tuple(i.namespace) == ns]
            }
    finally:
        store.close()


def other_name(users: list[str], user: str) -> str:
    return next(u for u in users if u != user)

"""Configuration of the graphs: models by name, the server's store factory, langgraph.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from graphs import scripted
from graphs.models import ModelNotConfiguredError, chat_model, load_chat_model
from graphs.store import generate_store
from sgam_store import SGAMStore
from sgam_store.read.embeddings import LOCAL_DIMS, local_available

ROOT = Path(__file__).resolve().parent.parent


def test_scripted_names_resolve_to_one_model_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = scripted.register("config-test", [scripted.say("one"), scripted.say("two")])
    assert load_chat_model("scripted:config-test") is model
    assert model.invoke([HumanMessage("hi")]).content == "one"
    assert load_chat_model("scripted:config-test").invoke("again").content == "two"
    with pytest.raises(scripted.ScriptExhaustedError, match="has 2 replies"):
        model.invoke("three")

    path = tmp_path / "scripts.json"
    path.write_text(json.dumps({"from-file": [{"tool_calls": [{"name": "t", "args": {"a": 1}}]}]}))
    monkeypatch.setenv("SGAM_SCRIPTS", str(path))
    reply = load_chat_model("scripted:from-file").invoke("hi")
    assert reply.tool_calls[0]["name"] == "t" and reply.tool_calls[0]["args"] == {"a": 1}
    with pytest.raises(KeyError, match="no script named 'missing'"):
        load_chat_model("scripted:missing")


def test_provider_names_go_through_init_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")  # constructing a client calls nobody
    model = load_chat_model("openai:gpt-4.1-mini")
    assert type(model).__name__ == "ChatOpenAI" and model.model_name == "gpt-4.1-mini"


def test_the_model_comes_from_context_then_configurable_then_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = scripted.register("config-a", [])
    b = scripted.register("config-b", [])
    monkeypatch.delenv("SGAM_MODEL", raising=False)
    monkeypatch.delenv("SGAM_MEMORY_MODEL", raising=False)
    with pytest.raises(ModelNotConfiguredError, match="SGAM_MODEL"):
        chat_model({"configurable": {}})
    monkeypatch.setenv("SGAM_MODEL", "scripted:config-a")
    assert chat_model(None) is a and chat_model(None, memory=True) is a
    assert chat_model({"configurable": {"model": "scripted:config-b"}}) is b
    assert chat_model(None, {"memory_model": "scripted:config-b"}, memory=True) is b


async def test_generate_store_opens_sgam_db_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "server.db"
    monkeypatch.setenv("SGAM_DB_PATH", str(path))
    monkeypatch.setenv("SGAM_EMBEDDING", "none")
    async with generate_store() as store:
        assert isinstance(store, SGAMStore) and store.index_config is None
        await store.aput(("acme", "mira"), "tone", {"text": "short"})
    assert path.exists()
    with SGAMStore.from_conn_string(str(path)) as again:
        assert again.get(("acme", "mira"), "tone").value == {"text": "short"}


@pytest.mark.skipif(not local_available(), reason="the local embedding extra is not installed")
async def test_generate_store_uses_the_local_embedding_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGAM_DB_PATH", str(tmp_path / "server.db"))
    monkeypatch.delenv("SGAM_EMBEDDING", raising=False)
    async with generate_store() as store:
        assert store.index_config["dims"] == LOCAL_DIMS


def test_langgraph_json_declares_the_graphs_and_the_store() -> None:
    from langgraph_cli.config import validate_config_file

    config = validate_config_file(ROOT / "langgraph.json")
    assert config["dependencies"] == ["."]
    assert config["graphs"] == {
        "agent": "./graphs/agent.py:agent",
        "memory_manager": "./graphs/manager.py:memory_manager",
    }
    assert config["store"] == {"path": "./graphs/store.py:generate_store"}

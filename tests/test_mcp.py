"""`sgam mcp`: the real server as a subprocess, over stdio and streamable HTTP, driven by
the `mcp` SDK's own client. The passport scenario, corrections and point-in-time reads,
refused arguments (each naming its field, nothing written), tenant confinement,
read-only mode, and the HTTP transport's Host and Origin checks."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Implementation

from sgam_store import MemoryFact, SGAMStore

ROOT = Path(__file__).resolve().parent.parent
CLIENT = Implementation(name="test-client", version="1.0")
KEY = ("mira", "passport_deadline")
KEY_ARGS = {"subject": "mira", "attribute": "passport_deadline"}
E1 = {
    "subject": "Mira",
    "attribute": "passport deadline",
    "value": "2026-07-15",
    "evidence": "My passport renewal deadline is 2026-07-15.",
    "valid_from": "2026-06-01T09:00:00Z",
}
E2 = {
    "subject": "mira",
    "attribute": "passport_deadline",
    "value": "2026-06-30",
    "evidence": "Sorry, the consulate moved it: the deadline is 2026-06-30.",
    "valid_from": "2026-06-03T10:00:00Z",
}
READ_TOOLS = {"recall", "search", "history", "what_changed"}
WRITE_TOOLS = {"remember", "forget"}

Connect = Callable[..., AbstractAsyncContextManager[ClientSession]]


def server_env() -> dict[str, str]:
    """The test's environment, with this checkout first on the server's import path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def sgam_mcp(db: Path, *extra: str, tenant: str = "acme") -> list[str]:
    """`sgam mcp ...` as arguments to this interpreter (the entry point's module)."""
    return ["-m", "sgam_store.cli", "mcp", "--db", str(db), "--tenant", tenant, *extra]


@asynccontextmanager
async def stdio_session(
    db: Path, *extra: str, tenant: str = "acme"
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=sgam_mcp(db, *extra, tenant=tenant), env=server_env()
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=CLIENT) as session,
    ):
        await session.initialize()
        yield session


@contextmanager
def http_server(db: Path, *extra: str, tenant: str = "acme") -> Iterator[str]:
    """`sgam mcp --http` on a free loopback port; yields the URL it announces."""
    with tempfile.TemporaryFile("w+") as errors:  # a file, not a pipe nobody drains
        yield from _serve(db, errors, *extra, tenant=tenant)


def _serve(db: Path, errors: Any, *extra: str, tenant: str) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, *sgam_mcp(db, "--http", *extra, tenant=tenant)],
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
        env=server_env(),
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        found = re.search(r"http://\S+/mcp", line)
        if not found:
            proc.wait(timeout=20)
            errors.seek(0)
            pytest.fail(f"sgam mcp --http announced no address: {line!r}; {errors.read()}")
        yield found.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@asynccontextmanager
async def http_session(db: Path, *extra: str, tenant: str = "acme") -> AsyncIterator[ClientSession]:
    with http_server(db, *extra, tenant=tenant) as url:
        async with (
            streamable_http_client(url) as (read, write, _),
            ClientSession(read, write, client_info=CLIENT) as session,
        ):
            await session.initialize()
            yield session


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest) -> Connect:
    return stdio_session if request.param == "stdio" else http_session


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store file with another tenant's Mira in it."""
    path = tmp_path / "memory.db"
    with SGAMStore.from_conn_string(str(path)) as store:
        store.setup()
        episode = store.record_episode(
            "globex", "Mira (globex) leaves on 2027-01-01", source_kind="user_message"
        )
        for subject, attribute in [KEY, ("secret_project", "codename")]:
            store.replace_fact(
                MemoryFact(tenant_id="globex", subject=subject, attribute=attribute,
                           value="2027-01-01", valid_from="2026-05-01T00:00:00Z",
                           source_episode_id=episode.episode_id)
            )  # fmt: skip
    return path


def data(result: CallToolResult) -> dict[str, Any]:
    assert not result.isError, result.content
    assert result.structuredContent is not None
    return result.structuredContent


def refusal(result: CallToolResult) -> dict[str, Any]:
    assert result.isError, result.structuredContent
    assert result.structuredContent is not None, result.content
    assert result.structuredContent["written"] is False
    return result.structuredContent["error"]


def snapshot(db: Path) -> dict[str, Any]:
    """Every row count of the store, read through the library."""
    with SGAMStore.from_conn_string(str(db)) as store:
        store.setup()
        return store.stats()


def digest(db: Path) -> str:
    return hashlib.sha256(db.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- scenario


async def test_passport_correction_and_point_in_time(connect: Connect, db: Path) -> None:
    async with connect(db) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == READ_TOOLS | WRITE_TOOLS
        for tool in tools.values():
            assert "Call it" in (tool.description or ""), tool.name  # when a model calls it
            assert "tenant" not in str(tool.inputSchema).lower(), tool.name

        first = data(await session.call_tool("remember", E1))
        assert first["changed"] and first["before"] is None
        assert (first["written"]["subject"], first["written"]["attribute"]) == KEY
        assert first["now"]["value"] == "2026-07-15"

        second = data(await session.call_tool("remember", E2))
        assert second["before"]["value"] == "2026-07-15"
        assert second["now"]["value"] == "2026-06-30"
        assert second["written"]["supersedes_fact_id"] == first["written"]["fact_id"]
        assert second["now"]["source"]["said"] == E2["evidence"]
        assert second["now"]["source"]["speaker"] == "test-client"

        now = data(await session.call_tool("recall", {"question": "Mira passport deadline?"}))
        assert [f["value"] for f in now["facts"]] == ["2026-06-30"]
        assert now["facts"][0]["source"]["said"] == E2["evidence"]
        assert [f["value"] for f in now["history"]] == ["2026-07-15"]
        assert "2026-06-30" in now["text"]

        june2 = data(
            await session.call_tool(
                "recall", {"subject": "mira", "valid_at": "2026-06-02T00:00:00Z"}
            )
        )
        assert [f["value"] for f in june2["facts"]] == ["2026-07-15"]
        assert june2["facts"][0]["source"]["said"] == E1["evidence"]

        # what the memory believed between the two calls, before the correction was recorded
        recorded = [datetime.fromisoformat(x["written"]["recorded_at"]) for x in (first, second)]
        between = (recorded[0] + (recorded[1] - recorded[0]) / 2).isoformat()
        then = data(await session.call_tool("recall", {"subject": "mira", "known_at": between}))
        assert [(f["value"], f["valid_to"]) for f in then["facts"]] == [("2026-07-15", None)]
        believed = data(await session.call_tool("history", {**KEY_ARGS, "known_at": between}))
        assert [v["value"] for v in believed["versions"]] == ["2026-07-15"]

        history = data(
            await session.call_tool(
                "history", {"subject": "mira", "attribute": "passport_deadline"}
            )
        )
        versions = history["versions"]
        assert [v["value"] for v in versions] == ["2026-07-15", "2026-06-30"]
        assert [v["source"]["said"] for v in versions] == [E1["evidence"], E2["evidence"]]
        assert versions[0]["valid_to"] == versions[1]["valid_from"]
        retired = [v for v in history["all_versions"] if v["known_to"] is not None]
        assert [(v["value"], v["valid_to"]) for v in retired] == [("2026-07-15", None)]

        changes = data(await session.call_tool("what_changed", {"since": "2026-01-01T00:00:00Z"}))
        kinds = sorted((c["kind"], c["value"]) for c in changes["changes"])
        assert kinds == [("new", "2026-06-30"), ("new", "2026-07-15"),
                         ("superseded", "2026-07-15")]  # fmt: skip
        assert all(c["tenant_id"] == "acme" for c in changes["changes"])

        found = data(await session.call_tool("search", {"query": "passport deadline"}))
        assert [(r["value"], r["score"] > 0) for r in found["results"]] == [("2026-06-30", True)]

    with SGAMStore.from_conn_string(str(db)) as store:  # the same memory, from Python
        store.setup()
        fact = store.fact_at("acme", *KEY)
        assert fact is not None and fact.value == "2026-06-30"
        said = store.who_said(fact, tenant_id="acme")
        assert (said.content, said.speaker) == (E2["evidence"], "test-client")
        assert store.fact_at("globex", *KEY).value == "2027-01-01"  # type: ignore[union-attr]


async def test_forget_closes_now_and_keeps_history(db: Path) -> None:
    async with stdio_session(db) as session:
        data(await session.call_tool("remember", E1))
        gone = data(
            await session.call_tool("forget", {"subject": "mira", "attribute": "passport_deadline"})
        )
        assert gone["forgotten"]["value"] == "2026-07-15"
        assert gone["forgotten"]["valid_to"] is not None
        assert data(await session.call_tool("recall", {"subject": "mira"}))["facts"] == []
        june2 = await session.call_tool(
            "recall", {"subject": "mira", "valid_at": "2026-06-02T00:00:00Z"}
        )
        assert [f["value"] for f in data(june2)["facts"]] == ["2026-07-15"]


async def test_resources_and_the_correction_prompt(db: Path) -> None:
    async with stdio_session(db) as session:
        data(await session.call_tool("remember", E1))
        data(await session.call_tool("remember", E2))
        templates = (await session.list_resource_templates()).resourceTemplates
        assert [t.uriTemplate for t in templates] == ["sgam://{subject}"]
        listed = (await session.list_resources()).resources
        assert [str(r.uri) for r in listed] == ["sgam://mira"]  # not globex's subjects
        text = (await session.read_resource("sgam://mira")).contents[0].text  # type: ignore[union-attr]
        assert "mira.passport_deadline = '2026-06-30'" in text and "[source: " in text
        assert "2027-01-01" not in text
        prompts = {p.name for p in (await session.list_prompts()).prompts}
        assert prompts == {"correct_a_fact"}
        prompt = await session.get_prompt("correct_a_fact", {"situation": "Mira moved it."})
        body = prompt.messages[0].content.text  # type: ignore[union-attr]
        assert 'remember(subject="mira", attribute="passport_deadline"' in body
        assert "2026-06-30" in body and "Mira moved it." in body


# ---------------------------------------------------------------------------- refusals

BAD_CALLS = [
    ("remember", {**E1, "subject": "Mira!"}, "subject"),
    ("remember", {**E1, "attribute": "passport/deadline"}, "attribute"),
    ("remember", {**E1, "valid_from": "2026-06-03"}, "valid_from"),  # naive
    ("remember", {**E1, "valid_from": "June 3rd"}, "valid_from"),
    ("remember", {**E1, "evidence": "   "}, "evidence"),
    ("remember", {**E1, "value": " "}, "value"),
    ("remember", {**E1, "memory_type": "a type!"}, "memory_type"),
    ("remember", {**E1, "value": "2026-08-01"}, "valid_from"),  # same start, other value
    ("forget", {"subject": "mira", "attribute": "shoe_size"}, "attribute"),
    ("recall", {"subject": "mira", "valid_at": "2026-06-02"}, "valid_at"),
    ("recall", {"subject": "mira", "known_at": "yesterday"}, "known_at"),
    ("recall", {"question": "  "}, "question"),
    ("search", {"query": ""}, "query"),
    ("search", {"query": "passport", "limit": 0}, "limit"),
    ("search", {"query": "passport", "subject": "a/b"}, "subject"),
    ("history", {"subject": "mira", "attribute": "shoe_size"}, "attribute"),
    ("history", {**KEY_ARGS, "known_at": "2026"}, "known_at"),
    ("what_changed", {"since": "last week"}, "since"),
    ("what_changed", {"since": "2026-01-01T00:00:00Z", "limit": 10_000}, "limit"),
]


async def test_bad_inputs_name_their_field_and_write_nothing(connect: Connect, db: Path) -> None:
    async with connect(db) as session:
        data(await session.call_tool("remember", E1))
        before = snapshot(db)
        for tool, args, field in BAD_CALLS:
            error = refusal(await session.call_tool(tool, args))
            assert error["field"] == field, (tool, args, error)
            assert error["message"] and error["type"], error
        # a missing argument is refused by the SDK's schema check, naming it too
        missing = await session.call_tool(
            "remember", {k: v for k, v in E1.items() if k != "evidence"}
        )
        assert missing.isError and "evidence" in missing.content[0].text  # type: ignore[union-attr]
        assert snapshot(db) == before


# ------------------------------------------------------------------ tenants, read-only


async def test_another_tenant_is_unreachable(connect: Connect, db: Path) -> None:
    async with connect(db) as session:
        recalled = data(await session.call_tool("recall", {"subject": "mira"}))
        assert recalled["facts"] == [] and recalled["history"] == []
        assert data(await session.call_tool("search", {"query": "2027"}))["results"] == []
        error = refusal(
            await session.call_tool(
                "history", {"subject": "secret_project", "attribute": "codename"}
            )
        )
        assert error["field"] == "attribute"
        feed = data(await session.call_tool("what_changed", {"since": "2000-01-01T00:00:00Z"}))
        assert feed["changes"] == []
        assert (await session.list_resources()).resources == []
        text = (await session.read_resource("sgam://secret_project")).contents[0].text  # type: ignore[union-attr]
        assert "2027" not in text
        # a tenant argument is not a parameter: the server's tenant is the only one
        data(await session.call_tool("remember", {**E1, "tenant_id": "globex"}))
    with SGAMStore.from_conn_string(str(db)) as store:
        store.setup()
        assert store.fact_at("globex", *KEY).value == "2027-01-01"  # type: ignore[union-attr]
        assert store.fact_at("acme", *KEY).value == "2026-07-15"  # type: ignore[union-attr]


async def test_read_only_offers_reads_and_refuses_writes(connect: Connect, db: Path) -> None:
    async with stdio_session(db) as session:
        data(await session.call_tool("remember", E1))
    before = digest(db)
    async with connect(db, "--read-only") as session:
        assert {t.name for t in (await session.list_tools()).tools} == READ_TOOLS
        for tool, args in [("remember", E2), ("forget", KEY_ARGS)]:
            result = await session.call_tool(tool, args)
            assert result.isError and "Unknown tool" in result.content[0].text  # type: ignore[union-attr]
        now = data(await session.call_tool("recall", {"subject": "mira"}))
        assert [f["value"] for f in now["facts"]] == ["2026-07-15"]
    assert digest(db) == before  # read-only: the file's bytes are unchanged


def test_read_only_needs_an_existing_database(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, *sgam_mcp(tmp_path / "none.db", "--read-only")],
        capture_output=True, text=True, env=server_env(), timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 2 and "no database at" in run.stderr
    assert not (tmp_path / "none.db").exists()


def test_a_bad_tenant_fails_before_serving(db: Path) -> None:
    run = subprocess.run(
        [sys.executable, *sgam_mcp(db, tenant="langgraph")],
        capture_output=True, text=True, env=server_env(), timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 2 and "reserved" in run.stderr and "Traceback" not in run.stderr


# ------------------------------------------------------------------------ HTTP checks

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}


def test_http_refuses_a_foreign_host_or_origin(db: Path) -> None:
    with http_server(db) as url:
        port = url.split(":")[2].split("/")[0]
        accept = {"Accept": "application/json, text/event-stream"}

        def post(**headers: str) -> int:
            return httpx.post(url, json=INITIALIZE, headers={**accept, **headers}).status_code

        assert post(Host=f"evil.example:{port}") == 421  # a DNS name rebound to loopback
        assert post(Host=f"127.0.0.1:{int(port) + 1}") == 421
        assert post(Origin="http://evil.example") == 403  # a page on another site
        assert post(Origin=f"http://localhost:{int(port) + 1}") == 403
        assert post() == 200
        assert post(Origin=f"http://127.0.0.1:{port}") == 200
        assert post(Host=f"localhost:{port}", Origin=f"http://localhost:{port}") == 200


# --------------------------------------------------------------- engines, the extra


def test_the_server_on_postgresql(pg_server: str) -> None:
    """The same server on a PostgreSQL URI: the correction and June 2, one tenant only."""
    from tests import pg

    uri = pg.fresh_database()
    with SGAMStore.from_conn_string(uri) as store:
        store.setup()
        store.replace_fact(
            MemoryFact(tenant_id="globex", subject="mira", attribute="passport_deadline",
                       value="2027-01-01", valid_from="2026-05-01T00:00:00Z",
                       source_episode_id="external:seed")
        )  # fmt: skip

    async def scenario() -> None:
        async with stdio_session(uri) as session:  # type: ignore[arg-type]
            data(await session.call_tool("remember", E1))
            data(await session.call_tool("remember", E2))
            june2 = {"subject": "mira", "valid_at": "2026-06-02T00:00:00Z"}
            facts = data(await session.call_tool("recall", june2))["facts"]
            assert [(f["value"], f["source"]["said"]) for f in facts] == [
                ("2026-07-15", E1["evidence"])
            ]
            history = data(await session.call_tool("history", KEY_ARGS))["versions"]
            assert [v["value"] for v in history] == ["2026-07-15", "2026-06-30"]

    anyio.run(scenario)
    with SGAMStore.from_conn_string(uri) as store:
        assert store.fact_at("globex", *KEY).value == "2027-01-01"  # type: ignore[union-attr]


def test_without_the_mcp_extra_the_command_says_how_to_get_it(db: Path) -> None:
    program = (
        "import sys; sys.modules['mcp'] = None\n"
        "from sgam_store.cli import main\n"
        f"sys.exit(main(['mcp', '--db', {str(db)!r}, '--tenant', 'acme']))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=server_env(),
        timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert "sgam: mcp needs mcp, from the mcp extra: pip install 'sgam-store[mcp]'" in run.stderr
    assert "Traceback" not in run.stderr

"""A client we did not write: the MCP project's inspector (npm
`@modelcontextprotocol/inspector`) in its CLI mode, against the real `sgam mcp` over stdio
and over streamable HTTP. `make test` installs it under the venv (`make inspector`); it
runs offline once installed, each call a second or two."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_mcp import E1, E2, ROOT, http_server, server_env, sgam_mcp

INSPECTOR = Path(sys.prefix) / "mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector"

pytestmark = pytest.mark.skipif(
    not INSPECTOR.exists(), reason=f"no MCP inspector at {INSPECTOR}: run `make inspector`"
)


def inspect(target: list[str], method: str, *args: str, home: Path) -> tuple[int, Any]:
    """One inspector CLI call; its exit status and the first JSON document it prints."""
    env = {**server_env(), "HOME": str(home)}  # it keeps nothing, but never in a real home
    run = subprocess.run(
        [str(INSPECTOR), "--cli", *target, "--method", method, *args],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip
    document, _ = json.JSONDecoder().raw_decode(run.stdout.lstrip())
    return run.returncode, document


def tool_args(args: dict[str, str]) -> list[str]:
    return ["--tool-arg", *(f"{k}={v}" for k, v in args.items())]


def test_the_inspector_remembers_corrects_and_reads_over_stdio(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    stdio = ["-e", f"PYTHONPATH={server_env()['PYTHONPATH']}", sys.executable, *sgam_mcp(db)]

    def call(tool: str, args: dict[str, str]) -> tuple[int, Any]:
        return inspect(stdio, "tools/call", "--tool-name", tool, *tool_args(args), home=tmp_path)

    status, listed = inspect(stdio, "tools/list", home=tmp_path)
    assert status == 0
    assert {t["name"] for t in listed["tools"]} == {
        "remember", "recall", "search", "history", "what_changed", "forget"
    }  # fmt: skip

    for fact in (E1, E2):
        status, saved = call("remember", fact)
        assert status == 0 and saved["structuredContent"]["now"]["value"] == fact["value"]
        assert saved["structuredContent"]["now"]["source"]["speaker"] == "inspector-cli"

    status, june2 = call("recall", {"subject": "mira", "valid_at": "2026-06-02T00:00:00Z"})
    assert [f["value"] for f in june2["structuredContent"]["facts"]] == ["2026-07-15"]

    status, refused = call("recall", {"subject": "mira", "valid_at": "2026-06-02"})
    assert status != 0 and refused["isError"] is True
    assert refused["structuredContent"]["error"]["field"] == "valid_at"

    status, resource = inspect(stdio, "resources/read", "--uri", "sgam://mira", home=tmp_path)
    assert (
        status == 0 and "mira.passport_deadline = '2026-06-30'" in resource["contents"][0]["text"]
    )


def test_the_inspector_over_http(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with http_server(db) as url:
        status, saved = inspect(
            [url], "tools/call", "--tool-name", "remember", *tool_args(E1), home=tmp_path
        )
        assert status == 0 and saved["structuredContent"]["changed"] is True
        status, found = inspect(
            [url], "tools/call", "--tool-name", "search", *tool_args({"query": "passport"}),
            home=tmp_path,
        )  # fmt: skip
        assert [r["value"] for r in found["structuredContent"]["results"]] == ["2026-07-15"]

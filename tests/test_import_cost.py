"""`import sgam_store` and the CLI's read commands stay light.

LangChain's chat-model stack (`langchain_core.language_models.base`/`chat_models`, half a
second) and torch (seconds) load only for what needs a model: extraction, the supersession
review, `--embedding local`, replay's MiniLM baseline. Each check runs in a fresh
interpreter, since this test process has long since imported everything.

`langchain_core.language_models` the package is imported by `langgraph.store.base` itself
(through `langchain_core.messages`); it is a lazy package of a few hundred microseconds,
so the checks name the modules that cost: its chat-model submodules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sgam_store.cli import main

ROOT = Path(__file__).resolve().parent.parent
HEAVY = (
    "langchain_core.language_models.base",
    "langchain_core.language_models.chat_models",
    "langchain_core.tools.base",
    "torch",
    "transformers",
    "sentence_transformers",
)
REPORT = f"""
import json, sys
heavy = {HEAVY!r}
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def loaded_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter holds after running `code`."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        [sys.executable, "-c", code + REPORT],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_sgam_store_loads_no_model_stack() -> None:
    assert loaded_after("import sgam_store") == []


def test_lazy_public_names_still_load_on_use() -> None:
    import sgam_store

    assert sgam_store.ReviewReport.__name__ == "ReviewReport"
    assert sgam_store.extract_candidates.__module__ == "sgam_store.managers.extraction"
    assert {"resolve_supersessions", "extract_updates"} <= set(dir(sgam_store))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = sgam_store.nothing_here


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("cost") / "demo.db")
    assert main(["demo", "--db", path, "--json"]) == 0
    return path


READS = {
    "help": ["--help"],
    "get": ["get", "--tenant", "acme", "--subject", "mira", "--attribute", "passport_deadline"],
    "search": ["search", "--tenant", "acme", "deadline"],
    "history": [
        "history", "--tenant", "acme", "--subject", "mira", "--attribute", "passport_deadline"
    ],
    "ledger": ["ledger"],
    "stats": ["stats"],
}  # fmt: skip


@pytest.mark.parametrize("command", sorted(READS))
def test_cli_read_commands_load_no_model_stack(command: str, db: str) -> None:
    argv = READS[command] + ([] if command == "help" else ["--db", db])
    code = (
        "import contextlib, io\n"
        "from sgam_store.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        assert main({argv!r}) == 0\n"
        "    except SystemExit as exc:\n"  # --help exits through argparse
        "        assert exc.code == 0\n"
    )
    assert loaded_after(code) == []

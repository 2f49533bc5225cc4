"""Scripted chat models by name, for the graphs: ``scripted:<name>``. The only fake.

The model itself is `sgam_store.testing.ScriptedChatModel` (re-exported here with its
reply helpers); this module adds the names. Select one where a model name is accepted:
``scripted:<name>`` (see `graphs.models.load_chat_model`). Names resolve to a
process-wide instance, so a conversation continues the script across calls and runs.
Scripts come from `register` (in-process tests) or from the JSON file named by env
``SGAM_SCRIPTS`` (a server process):

    {"extract": [{"tool_calls": [{"name": "MemoryUpdates", "args": {"updates": [...]}}]}],
     "agent": [{"content": "Noted.", "seconds": 2}]}

`seconds` makes that reply take so long, as a slow provider would: a test can then act
while a run is inside a model call.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from sgam_store.testing import (
    ScriptedChatModel,
    ScriptExhaustedError,
    call_tool,
    extract,
    say,
    to_message,
    verdicts,
)

__all__ = [
    "SCRIPTS_ENV",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "call_tool",
    "extract",
    "get",
    "register",
    "say",
    "to_message",
    "verdicts",
]

SCRIPTS_ENV = "SGAM_SCRIPTS"


_REGISTRY: dict[str, ScriptedChatModel] = {}
_REGISTRY_LOCK = threading.Lock()


def register(name: str, replies: list[AIMessage | str | dict[str, Any]]) -> ScriptedChatModel:
    """Make `scripted:<name>` resolve to a new model replaying `replies` (replacing any)."""
    model = ScriptedChatModel(replies=replies, name=name)
    with _REGISTRY_LOCK:
        _REGISTRY[name] = model
    return model


def get(name: str) -> ScriptedChatModel:
    """The process-wide scripted model `name`: registered, or loaded from $SGAM_SCRIPTS."""
    with _REGISTRY_LOCK:
        if name in _REGISTRY:
            return _REGISTRY[name]
    path = os.environ.get(SCRIPTS_ENV)
    scripts = json.loads(Path(path).read_text()) if path else {}
    if name not in scripts:
        known = sorted({*_REGISTRY, *scripts})
        raise KeyError(
            f"no script named {name!r} (known: {known}); register it with "
            f"graphs.scripted.register or list it in the JSON file named by ${SCRIPTS_ENV}"
        )
    with _REGISTRY_LOCK:  # two threads may load it at once: the first one wins
        if name not in _REGISTRY:
            _REGISTRY[name] = ScriptedChatModel(
                replies=[to_message(s) for s in scripts[name]],
                seconds=[float(s.get("seconds", 0)) for s in scripts[name]],
                name=name,
            )
        return _REGISTRY[name]

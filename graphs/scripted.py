"""A scripted chat model: replays tool calls and replies in order. The only fake.

It is a real `BaseChatModel`, so the real code paths run around it: `bind_tools` returns
`self.bind(tools=...)` (a RunnableBinding, as trustcall and LangGraph's ToolNode expect),
and `with_structured_output` parses its tool calls like any provider's.

Select it by name where a model name is accepted: ``scripted:<name>`` (see
`graphs.models.load_chat_model`). Names resolve to a process-wide instance, so a
conversation continues the script across calls and runs. Scripts come from `register`
(in-process tests) or from the JSON file named by env ``SGAM_SCRIPTS`` (a server process):

    {"extract": [{"tool_calls": [{"name": "MemoryUpdates", "args": {"updates": [...]}}]}],
     "agent": [{"content": "Noted.", "seconds": 2}]}

`seconds` makes that reply take so long, as a slow provider would: a test can then act
while a run is inside a model call.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field, PrivateAttr

SCRIPTS_ENV = "SGAM_SCRIPTS"


class ScriptExhaustedError(RuntimeError):
    """The scripted model was called more times than it has replies."""


class ScriptedChatModel(BaseChatModel):
    """Replays one scripted reply per call and keeps what it was sent."""

    replies: list[AIMessage]
    seconds: list[float] = Field(default_factory=list)  # per reply: how long it takes
    name: str | None = "scripted"
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    tool_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def model_name(self) -> str:
        return f"scripted:{self.name}"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)  # a RunnableBinding, as trustcall expects

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
        with self._lock:
            self.prompts.append(list(messages))
            self.tool_kwargs.append({k: v for k, v in kwargs.items() if k != "run_manager"})
            call = len(self.prompts)
        if call > len(self.replies):
            raise ScriptExhaustedError(
                f"scripted model {self.name!r} has {len(self.replies)} replies; call {call} "
                "asked for one more"
            )
        if call <= len(self.seconds):
            time.sleep(self.seconds[call - 1])
        reply = self.replies[call - 1].model_copy()
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def system_prompts(self) -> list[str]:
        """The system message text of every call so far ('' when a call had none)."""
        return [
            next((str(m.content) for m in prompt if m.type == "system"), "")
            for prompt in self.prompts
        ]


def say(text: str) -> AIMessage:
    """A plain reply."""
    return AIMessage(content=text)


def call_tool(name: str, call_id: str | None = None, **args: Any) -> AIMessage:
    """A reply that calls one tool."""
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": call_id or f"call_{name}"}]
    )


def extract(*updates: dict[str, Any]) -> AIMessage:
    """An extraction reply: the MemoryUpdates tool call with these candidate payloads."""
    return call_tool("MemoryUpdates", updates=list(updates))


def to_message(spec: dict[str, Any]) -> AIMessage:
    """A reply from its JSON form: {"content": ..., "tool_calls": [{"name", "args", "id"?}]}."""
    calls = [
        {"name": c["name"], "args": c.get("args", {}), "id": c.get("id") or f"call_{i}"}
        for i, c in enumerate(spec.get("tool_calls", []))
    ]
    return AIMessage(content=spec.get("content", ""), tool_calls=calls)


_REGISTRY: dict[str, ScriptedChatModel] = {}
_REGISTRY_LOCK = threading.Lock()


def register(name: str, replies: list[AIMessage | dict[str, Any]]) -> ScriptedChatModel:
    """Make `scripted:<name>` resolve to a new model replaying `replies` (replacing any)."""
    messages = [r if isinstance(r, AIMessage) else to_message(r) for r in replies]
    model = ScriptedChatModel(replies=messages, name=name)
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

"""A scripted chat model, to try and test memory flows offline: no provider, no network.

`ScriptedChatModel` is a real `BaseChatModel` that replays one scripted reply per call
and keeps what it was sent, so the code around it runs as it would with a provider:
`bind_tools` returns `self.bind(tools=...)` (a RunnableBinding, as trustcall and
LangGraph's ToolNode expect) and `with_structured_output` parses its tool calls. It
serves the three places SGAM asks a model:

- the supersession review (`resolve_supersessions`): reply `verdicts("supersedes")`;
  the review lists the candidates numbered from 1 and asks for the structured output
  `SupersessionVerdicts` (REVIEW_TOOL), one verdict per candidate number;
- extraction (`extract_candidates`, the memory-manager graph): reply
  `extract({...MemoryUpdate fields...})`, the `MemoryUpdates` tool call (EXTRACT_TOOL);
- an agent (LangGraph's `create_react_agent`, LangMem's tools): reply
  `call_tool("manage_memory", action="create", content=...)`, then `say("Saved.")`.

A reply may also be a plain string (a text reply) or a dict in JSON form, `{"content":
..., "tool_calls": [{"name": ..., "args": {...}}]}`. A call past the last reply raises
ScriptExhaustedError, so a test notices a model asked more often than it expected.

This module imports LangChain's model stack, which `import sgam_store` does not: import
it where you use it, `from sgam_store.testing import ScriptedChatModel, verdicts`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field, PrivateAttr, field_validator

from sgam_store.core.errors import SGAMError
from sgam_store.managers.supersession import SupersessionVerdicts
from sgam_store.write.candidates import MemoryUpdates

__all__ = [
    "EXTRACT_TOOL",
    "REVIEW_TOOL",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "call_tool",
    "extract",
    "say",
    "to_message",
    "verdicts",
]

REVIEW_TOOL = SupersessionVerdicts.__name__  # the review's structured output
EXTRACT_TOOL = MemoryUpdates.__name__  # extraction's structured output
DECISIONS = ("supersedes", "independent", "duplicate")

Reply = AIMessage | str | dict[str, Any]


class ScriptExhaustedError(SGAMError, RuntimeError):
    """The scripted model was called more times than it has replies."""


class ScriptedChatModel(BaseChatModel):
    """Replays one scripted reply per call and keeps what it was sent (`prompts`)."""

    replies: list[AIMessage]
    seconds: list[float] = Field(default_factory=list)  # per reply: how long it takes
    name: str | None = "scripted"
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    tool_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @field_validator("replies", mode="before")
    @classmethod
    def _as_messages(cls, replies: list[Reply]) -> list[AIMessage]:
        return [to_message(r) for r in replies]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def model_name(self) -> str:
        return f"scripted:{self.name}"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)  # a RunnableBinding, as trustcall expects

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: Any = None,
        run_manager: Any = None,  # positional in BaseChatModel._agenerate's call (async runs)
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:
            self.prompts.append(list(messages))
            self.tool_kwargs.append(dict(kwargs))
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
    """An extraction reply: the MemoryUpdates call with these candidate payloads."""
    return call_tool(EXTRACT_TOOL, updates=list(updates))


def verdicts(*decisions: str | tuple[int, str], reason: str = "scripted") -> AIMessage:
    """A supersession-review reply. A decision alone answers the candidate at its
    position (the first about candidate 1); `(number, decision)` names the candidate.
    An unknown decision raises ValueError here, not in the review."""
    answer = []
    for position, item in enumerate(decisions, 1):
        number, decision = item if isinstance(item, tuple) else (position, item)
        if decision not in DECISIONS:
            raise ValueError(f"decision must be one of {DECISIONS}, got {decision!r}")
        answer.append({"candidate": number, "decision": decision, "reason": reason})
    return call_tool(REVIEW_TOOL, verdicts=answer)


def to_message(reply: Reply) -> AIMessage:
    """A reply as a message: a message as it is, a string as text, or a dict in JSON
    form {"content": ..., "tool_calls": [{"name", "args", "id"?}]}."""
    if isinstance(reply, AIMessage):
        return reply
    if isinstance(reply, str):
        return say(reply)
    calls = [
        {"name": c["name"], "args": c.get("args", {}), "id": c.get("id") or f"call_{i}"}
        for i, c in enumerate(reply.get("tool_calls", []))
    ]
    return AIMessage(content=reply.get("content", ""), tool_calls=calls)

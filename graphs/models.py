"""Chat models by name: any `init_chat_model` name, or ``scripted:<name>`` for tests.

The agent's model comes from the run's `model` setting (context, `configurable`, or env
SGAM_MODEL), e.g. "openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5", "ollama:llama3.1".
The background manager's extraction model comes from `memory_model` (env
SGAM_MEMORY_MODEL), and falls back to the agent's model.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig

from graphs import scripted
from sgam_store.tools import setting

SCRIPTED = "scripted:"


class ModelNotConfiguredError(ValueError):
    """No chat model was named for this run."""


def load_chat_model(name: str) -> BaseChatModel:
    """`scripted:<name>` -> the scripted model; anything else -> `init_chat_model(name)`."""
    if name.startswith(SCRIPTED):
        return scripted.get(name.removeprefix(SCRIPTED))
    return _init(name)


@lru_cache(maxsize=16)
def _init(name: str) -> BaseChatModel:
    from langchain.chat_models import init_chat_model

    return init_chat_model(name)


def chat_model(
    config: RunnableConfig | None,
    context: Any = None,
    *,
    memory: bool = False,
) -> BaseChatModel:
    """The run's chat model; with `memory=True`, the background manager's extraction model."""
    name = None
    if memory:
        name = setting("memory_model", config, context, env="SGAM_MEMORY_MODEL")
    name = name or setting("model", config, context, env="SGAM_MODEL")
    if not name:
        key = "memory_model (or model)" if memory else "model"
        env = "SGAM_MEMORY_MODEL or SGAM_MODEL" if memory else "SGAM_MODEL"
        raise ModelNotConfiguredError(
            f"no chat model configured: set {key} in the run's context or configurable, or "
            f"env {env} (e.g. 'openai:gpt-4.1-mini', 'ollama:llama3.1', 'scripted:<name>')"
        )
    return load_chat_model(str(name))


def model_label(model: Any) -> str:
    """A short name for audit columns (episode_extractions.extractor)."""
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__

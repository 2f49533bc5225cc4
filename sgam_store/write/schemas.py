"""Memory schemas: what an application lets its agent remember.

A `MemorySchema` declares memory types (each with a retention policy), attributes
(each with a value type and a memory type) and a version. The write service asks it to
`admit` every candidate: an undeclared attribute is rejected unless the schema allows
free attributes, a value is validated (and turned into JSON) by a pydantic
`TypeAdapter` of the declared type, and the row records the schema's version, so a
later reader knows which rules a stored value passed.

Retention policies are recorded on each row, not enforced here: "keep",
"session_only", or "expire_after:<ISO-8601 duration>" (e.g. "expire_after:P30D").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import TypeAdapter, ValidationError

from sgam_store.core.errors import InvalidCandidateError, InvalidSchemaError, explain
from sgam_store.core.models import DEFAULT_MEMORY_TYPE, SCHEMA_VERSION
from sgam_store.write.candidates import MemoryUpdate, normalize_attribute

_EXPIRE_AFTER = "expire_after:"
_DURATION = TypeAdapter(timedelta)


def check_retention(policy: str) -> str:
    """Accept "keep", "session_only" or "expire_after:<positive ISO-8601 duration>"."""
    if policy in ("keep", "session_only"):
        return policy
    duration = policy.removeprefix(_EXPIRE_AFTER)
    if duration != policy and duration.startswith("P"):
        try:
            if _DURATION.validate_python(duration) > timedelta(0):
                return policy
        except ValidationError:
            pass
    raise InvalidSchemaError(
        f"retention policy {policy!r} is not 'keep', 'session_only' or "
        "'expire_after:<ISO-8601 duration>' such as 'expire_after:P30D'"
    )


@dataclass(frozen=True)
class AttributeSpec:
    """One attribute the agent may remember: its memory type and the type of its value."""

    memory_type: str
    value_type: Any = Any
    description: str = ""


@dataclass(frozen=True)
class Admitted:
    """What the schema makes of an accepted candidate: the row's typed fields."""

    value: Any
    memory_type: str
    retention_policy: str | None
    schema_version: int


class MemorySchema:
    """A versioned registry of memory types and attributes (see the module docstring)."""

    def __init__(
        self,
        *,
        version: int,
        memory_types: Mapping[str, str],
        attributes: Mapping[str, AttributeSpec],
        allow_free_attributes: bool = False,
        default_memory_type: str | None = None,
    ) -> None:
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise InvalidSchemaError(f"schema version must be a positive int, got {version!r}")
        self.version = version
        self.memory_types = {
            _declared_name(name): check_retention(p) for name, p in memory_types.items()
        }
        self.attributes = {_declared_name(n): spec for n, spec in attributes.items()}
        self.allow_free_attributes = allow_free_attributes
        self.default_memory_type = default_memory_type
        for name, spec in self.attributes.items():
            self._check_type(spec.memory_type, f"attribute {name!r}")
        if default_memory_type is not None:
            self._check_type(default_memory_type, "default_memory_type")
        self._adapters = {n: _adapter(n, s.value_type) for n, s in self.attributes.items()}

    def _check_type(self, memory_type: str, where: str) -> None:
        if memory_type not in self.memory_types:
            raise InvalidSchemaError(
                f"{where} uses memory type {memory_type!r}, which is not declared "
                f"(declared: {sorted(self.memory_types)})"
            )

    def admit(self, update: MemoryUpdate) -> Admitted:
        """The typed row fields for a candidate, or InvalidCandidateError saying why not."""
        spec = self.attributes.get(update.attribute)
        if spec is None:
            return self._admit_free(update)
        if update.memory_type not in (None, spec.memory_type):
            raise InvalidCandidateError(
                f"attribute {update.attribute!r} is declared as memory type "
                f"{spec.memory_type!r}; the candidate says {update.memory_type!r}"
            )
        adapter = self._adapters[update.attribute]
        try:
            value = adapter.dump_python(adapter.validate_python(update.value), mode="json")
        except ValidationError as exc:
            raise InvalidCandidateError(
                f"value {update.value!r} for {update.attribute!r} does not match its declared "
                f"type {_type_text(adapter)}: {explain(exc)}"
            ) from None
        return Admitted(value, spec.memory_type, self.memory_types[spec.memory_type], self.version)

    def _admit_free(self, update: MemoryUpdate) -> Admitted:
        if not self.allow_free_attributes:
            raise InvalidCandidateError(
                f"attribute {update.attribute!r} is not declared in memory schema "
                f"v{self.version} (declared: {sorted(self.attributes)})"
            )
        memory_type = update.memory_type or self.default_memory_type
        if memory_type not in self.memory_types:
            raise InvalidCandidateError(
                f"free attribute {update.attribute!r} needs a declared memory type "
                f"({sorted(self.memory_types)}); got {memory_type!r}"
            )
        return Admitted(update.value, memory_type, self.memory_types[memory_type], self.version)

    def describe(self) -> str:
        """The schema as the extraction prompt shows it to the model."""
        lines = [f"Memory schema v{self.version}. Attributes you may remember:"]
        for name, spec in self.attributes.items():
            note = f": {spec.description}" if spec.description else ""
            value_type = _type_text(self._adapters[name])
            lines.append(f"- {name} (memory_type {spec.memory_type}, value {value_type}){note}")
        if self.allow_free_attributes:
            lines.append(
                "Other attributes are allowed with a memory_type from: "
                + ", ".join(sorted(self.memory_types))
            )
        else:
            lines.append("Do not propose any other attribute.")
        return "\n".join(lines)


def admit(schema: MemorySchema | None, update: MemoryUpdate) -> Admitted:
    """Without a schema every attribute is free, typed 'semantic' unless the candidate says."""
    if schema is not None:
        return schema.admit(update)
    return Admitted(update.value, update.memory_type or DEFAULT_MEMORY_TYPE, None, SCHEMA_VERSION)


def _declared_name(name: str) -> str:
    try:
        normalized = normalize_attribute(name)
    except InvalidCandidateError as exc:
        raise InvalidSchemaError(str(exc)) from None
    if normalized != name:
        raise InvalidSchemaError(f"declare {name!r} in normalized form: {normalized!r}")
    return name


def _adapter(name: str, value_type: Any) -> TypeAdapter[Any]:
    try:
        return TypeAdapter(value_type)
    except Exception as exc:  # pydantic raises several types for an unusable type
        raise InvalidSchemaError(f"attribute {name!r}: unusable value type: {exc}") from None


def _type_text(adapter: TypeAdapter[Any]) -> str:
    schema = adapter.json_schema()
    return json.dumps(schema, sort_keys=True) if schema else "any JSON"

"""Schema migration as a product change: registered value transforms between versions.

Every fact row records the `schema_version` of its value's shape. When an application
changes a shape (renames a field, splits a value), it registers a transform
`from_version -> to_version` for an attribute or for a whole memory type. Two things
use the registry:

- the dual-read window: rows the store currently believes (`known_to IS NULL`) are read
  through the transforms, so code written for the new shape reads rows nobody has
  migrated yet; `Fact.schema_version` then says which shape the value has;
- the backfill (`sgam_store.lifecycle.backfill`), which rewrites those rows for good as new
  ledger versions.

Retired versions are the record of what the store held and are read as stored: after
a backfill, a `known_at` read from before it shows the old form.

Transforms take and return the item-form dict (a scalar fact is `{"value": x}`). For
the same from_version an attribute's transform wins over its memory type's. Writers
stamp the version of the shape they write: `put` stamps `latest_version` of its key,
`MemoryFact.schema_version` says it for `replace_fact`. The registry is process-wide,
like a codec registry: register at import time of the module that defines the shape.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sgam_store.core.errors import SchemaTransformError

Transform = Callable[[dict[str, Any]], dict[str, Any]]
Key = tuple[str, str, int]  # ("attribute" | "memory_type", name, from_version)


@dataclass(frozen=True)
class Step:
    """One registered transform: the shape it reads, the shape it returns, and its name."""

    from_version: int
    to_version: int
    fn: Transform
    name: str


class TransformRegistry:
    """Transforms by (attribute or memory type, from_version); chains follow to_version."""

    def __init__(self) -> None:
        self._steps: dict[Key, Step] = {}

    def register(
        self,
        from_version: int,
        to_version: int,
        fn: Transform,
        *,
        memory_type: str | None = None,
        attribute: str | None = None,
        name: str | None = None,
    ) -> Step:
        """Register `fn` for exactly one of `memory_type` / `attribute`; versions must rise."""
        if (memory_type is None) == (attribute is None):
            raise SchemaTransformError("register a transform for one memory_type or attribute")
        if not _is_version(from_version) or not _is_version(to_version):
            raise SchemaTransformError(
                f"versions must be positive ints, got {from_version!r} -> {to_version!r}"
            )
        if to_version <= from_version:
            raise SchemaTransformError(
                f"a transform must raise the version: v{from_version} -> v{to_version}"
            )
        kind, target = (
            ("memory_type", memory_type) if attribute is None else ("attribute", attribute)
        )
        key: Key = (kind, str(target), from_version)
        if key in self._steps:
            raise SchemaTransformError(
                f"{key[0]} {key[1]!r} already has a transform from v{from_version}"
            )
        step = Step(from_version, to_version, fn, name or getattr(fn, "__name__", repr(fn)))
        self._steps[key] = step
        return step

    def clear(self) -> None:
        self._steps.clear()

    def __len__(self) -> int:
        return len(self._steps)

    def registered_keys(self) -> list[Key]:
        return list(self._steps)

    def chain(self, memory_type: str, attribute: str, version: int) -> list[Step]:
        """The steps that take a `version` value of this key to its newest shape."""
        steps: list[Step] = []
        while step := (
            self._steps.get(("attribute", attribute, version))
            or self._steps.get(("memory_type", memory_type, version))
        ):
            steps.append(step)
            version = step.to_version
        return steps

    def latest_version(self, memory_type: str, attribute: str, version: int) -> int:
        """The version a value written at `version` ends at: what writers should stamp."""
        steps = self.chain(memory_type, attribute, version)
        return steps[-1].to_version if steps else version

    def upgrade(
        self, memory_type: str, attribute: str, version: int, value: dict[str, Any]
    ) -> tuple[dict[str, Any], int]:
        """Run the chain on an item-form value; a failing or non-dict transform is an error."""
        for step in self.chain(memory_type, attribute, version):
            try:
                value = step.fn(value)
            except Exception as exc:
                raise SchemaTransformError(
                    f"transform {step.name} (v{step.from_version} -> v{step.to_version}) "
                    f"failed on {attribute!r}: {exc}"
                ) from exc
            if not isinstance(value, dict):
                raise SchemaTransformError(
                    f"transform {step.name} returned {type(value).__name__}; it must return "
                    "the item-form dict"
                )
            version = step.to_version
        return value, version


def _is_version(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


REGISTRY = TransformRegistry()
register_transform = REGISTRY.register
latest_version = REGISTRY.latest_version


def is_scalar(was_scalar: bool, value: dict[str, Any]) -> bool:
    """A scalar fact stays scalar only while its item form is still exactly {"value": x}."""
    return was_scalar and set(value) == {"value"}


_DEEPER = threading.Lock()
# SQLite's json_valid refuses JSON nested past 2,000 levels (1,000 from SQLite 3.45 on),
# so no stored value is deeper.
_STORED_DEPTH = 2000


def loads_deep(text: str) -> Any:
    """A stored value's JSON, however deep it was written before writes were capped
    (`ledger.MAX_VALUE_DEPTH`): json's decoder counts its levels against Python's
    recursion limit, so one value near it failed every read of its tenant that came
    from deep in a call. Such a value is decoded again with room for its levels."""
    try:
        return json.loads(text)
    except RecursionError:
        with _DEEPER:
            limit = sys.getrecursionlimit()
            sys.setrecursionlimit(limit + _STORED_DEPTH)
            try:
                return json.loads(text)
            finally:
                sys.setrecursionlimit(limit)


def present(row: Mapping[str, Any]) -> tuple[dict[str, Any], int, bool]:
    """(item-form value, schema_version, scalar) of a stored row as readers see it.

    The dual-read hook of `ledger.row_to_fact` and `read.items.to_item`: believed rows in
    the newest registered shape, retired rows exactly as stored.
    """
    value = loads_deep(row["value"])
    version, scalar = row["schema_version"], bool(row["scalar"])
    if row["known_to"] is not None or not REGISTRY:
        return value, version, scalar
    upgraded, new_version = REGISTRY.upgrade(row["memory_type"], row["attribute"], version, value)
    return upgraded, new_version, is_scalar(scalar, upgraded)

"""JSON text of any stored value, however deeply nested: the pages' JSON twins write
through `core.jsontext`, which the CLI shares (one writer that walks a value with a stack
of its own, since json's and pydantic's recurse past the interpreter's limit)."""

from sgam_store.core.jsontext import dumps, text

__all__ = ["dumps", "text"]

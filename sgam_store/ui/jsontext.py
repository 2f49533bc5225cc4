"""JSON text of any stored value, however deeply nested.

The json module and pydantic both recurse, one level of the value per level of the
stack: a list nested a few hundred deep (which the store accepted before it capped
nesting) makes `json.dumps` raise RecursionError and pydantic's dump "Maximum
serialization depth exceeded", and one such value took down every page that listed it.
`dumps` walks the value with a stack of its own, so its depth is bounded by memory only.
"""

from __future__ import annotations

import json
from typing import Any


class _Encoded(str):
    """A piece of output already encoded (punctuation, a key), never a value to encode."""


def _key(key: Any) -> str:
    """An object key as JSON writes it: text, with a scalar key turned into its text."""
    return json.dumps(key if isinstance(key, str) else json.dumps(key), ensure_ascii=False)


def dumps(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, default=str)`, without recursion."""
    out: list[str] = []
    todo: list[Any] = [value]
    while todo:
        item = todo.pop()
        if type(item) is _Encoded:
            out.append(item)
        elif isinstance(item, dict):
            parts: list[Any] = [_Encoded("{")]
            for n, (key, member) in enumerate(item.items()):
                parts += [_Encoded((", " if n else "") + _key(key) + ": "), member]
            todo += reversed([*parts, _Encoded("}")])
        elif isinstance(item, list | tuple):
            parts = [_Encoded("[")]
            for n, member in enumerate(item):
                parts += [_Encoded(", "), member] if n else [member]
            todo += reversed([*parts, _Encoded("]")])
        else:
            out.append(json.dumps(item, ensure_ascii=False, default=str))
    return "".join(out)


def text(value: Any, *, indent: int | None = None) -> str:
    """The json module's text when it can write it (faster, and indented if asked);
    `dumps` for a value nested deeper than the interpreter's stack allows."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str, indent=indent)
    except RecursionError:
        return dumps(value)

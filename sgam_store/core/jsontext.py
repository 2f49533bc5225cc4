"""JSON text of any stored value, however deeply nested.

The json module (and pydantic) recurse one stack frame per level of a value, and stop at
the interpreter's recursion limit (1,000): a list nested that deep, which SQLite's JSON
accepted before the store capped nesting (`ledger.MAX_VALUE_DEPTH`), made `json.dumps`
raise RecursionError, and one such value took down every listing that showed it. `dumps`
walks the value with a stack of its own, so its depth is bounded by memory only; `text`
uses the json module where it can, for speed. Values come from JSON, so none is circular.
"""

from __future__ import annotations

import json
from typing import Any


class _Encoded(str):
    """A piece of output already encoded (punctuation, a key), never a value to encode."""


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _key(key: Any) -> str:
    """An object key as JSON writes it: text, a scalar key turned into its JSON text."""
    return _scalar(key if isinstance(key, str) else _scalar(key))


def dumps(value: Any, *, indent: int | None = None) -> str:
    """`json.dumps(value, ensure_ascii=False, default=str, indent=indent)`, character for
    character, without recursion."""
    out: list[str] = []
    todo: list[Any] = [(value, 0)]
    while todo:
        item = todo.pop()
        if type(item) is _Encoded:
            out.append(item)
            continue
        member, level = item
        if isinstance(member, dict) and member:
            pairs = [(_key(k) + ": ", v) for k, v in member.items()]
            todo += reversed(_container("{", "}", pairs, level, indent))
        elif isinstance(member, list | tuple) and member:
            todo += reversed(_container("[", "]", [("", v) for v in member], level, indent))
        else:
            out.append(_scalar([] if isinstance(member, tuple) else member))
    return "".join(out)


def _container(
    opening: str, closing: str, members: list[tuple[str, Any]], level: int, indent: int | None
) -> list[Any]:
    """A non-empty object or array as pieces in order: encoded punctuation and keys, and
    (member, level) pairs still to write. Separators are json's: ', ' on one line, or
    ',' and a newline indented one step deeper per level."""
    inner = "" if indent is None else "\n" + " " * (indent * (level + 1))
    between = ", " if indent is None else "," + inner
    pieces: list[Any] = [_Encoded(opening + inner)]
    for n, (prefix, member) in enumerate(members):
        pieces += [_Encoded((between if n else "") + prefix), (member, level + 1)]
    outer = "" if indent is None else "\n" + " " * (indent * level)
    return [*pieces, _Encoded(outer + closing)]


def text(value: Any, *, indent: int | None = None) -> str:
    """The json module's text when it can write it (faster); `dumps`, the same text, for a
    value nested deeper than the interpreter's stack allows."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str, indent=indent)
    except RecursionError:
        return dumps(value, indent=indent)

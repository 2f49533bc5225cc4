"""Moving in from other stores (`sgam import`): the sources that are not a database
file or server, read as batches of `ForeignItem`s. The store writes them
(`SGAMStore.import_items`); LangGraph's SqliteStore and PostgresStore are read by the
engines (`engines.langgraph_items`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore, Item

from sgam_store.core import clock
from sgam_store.core.errors import InvalidFactError
from sgam_store.core.models import ForeignItem

# Items per namespace read at once from a live BaseStore; a namespace with more is read
# page by page, in the store's own order.
PAGE = 10_000


def from_basestore(store: BaseStore, batch: int) -> Iterator[list[ForeignItem]]:
    """Every item of any BaseStore (an InMemoryStore, say), namespace by namespace: a
    search under a namespace also returns deeper ones, so only its own items are kept."""
    out: list[ForeignItem] = []
    for namespace in _all_namespaces(store):
        offset = 0
        while page := store.search(namespace, limit=PAGE, offset=offset):
            out += [_from_item(i) for i in page if tuple(i.namespace) == namespace]
            offset += len(page)
            while len(out) >= batch:
                yield out[:batch]
                out = out[batch:]
    if out:
        yield out


def _all_namespaces(store: BaseStore) -> Iterator[tuple[str, ...]]:
    offset = 0
    while found := store.list_namespaces(limit=PAGE, offset=offset):
        yield from (tuple(ns) for ns in found)
        offset += len(found)


def _from_item(item: Item) -> ForeignItem:
    return ForeignItem(
        tuple(item.namespace),
        item.key,
        item.value,
        clock.normalize(item.created_at),
        clock.normalize(item.updated_at),
    )


def from_jsonl(path: str | Path, batch: int) -> Iterator[list[ForeignItem]]:
    """Items from a JSON-lines file, one `Item.dict()` per line: namespace (a list), key,
    value (an object), and optionally created_at, updated_at and expires_at (ISO-8601
    with an offset). Blank lines and lines starting with '#' are skipped."""
    out: list[ForeignItem] = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip() and not line.startswith("#"):
                out.append(_from_json(line, f"{path}:{number}"))
            if len(out) >= batch:
                yield out
                out = []
    if out:
        yield out


def _from_json(line: str, where: str) -> ForeignItem:
    try:
        data: Any = json.loads(line)
        namespace, key, value = data["namespace"], data["key"], data["value"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidFactError(f"{where}: not an item line ({exc})") from None
    if not isinstance(namespace, list) or not isinstance(key, str) or not isinstance(value, dict):
        raise InvalidFactError(f"{where}: namespace must be a list, key a string, value an object")
    stamps = (data.get(k) for k in ("created_at", "updated_at", "expires_at"))
    return ForeignItem(tuple(namespace), key, value, *(s and clock.normalize(s) for s in stamps))

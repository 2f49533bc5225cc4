"""A value nested as deep as SQLite's JSON takes (written before the store capped nesting)
reads in every command, as text and as --json, at the interpreter's default recursion
limit: the CLI writes JSON with a stack of its own (`core.jsontext`), never by raising
the limit for the whole process."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgam_store import SGAMStore
from sgam_store.core import jsontext
from sgam_store.engines.sqlite.connection import driver
from tests.test_cli_real import sgam

DEFAULT_LIMIT = 1_000  # CPython's


def sqlite_depth(module: ModuleType) -> int:
    """The deepest JSON the SQLite of driver `module` accepts: 2,000 levels before 3.45,
    1,000 after."""
    conn = module.connect(":memory:")
    try:
        valid = conn.execute("SELECT json_valid(?)", ("[" * 2000 + "]" * 2000,)).fetchone()[0]
    finally:
        conn.close()
    return 2000 if valid else 1000


# The store's SQLite and the standard library's, which writes the rows here: a file written
# by an older SQLite (2,000 levels) may be read by a newer one (1,000), and vice versa.
DEPTHS = sorted({sqlite_depth(driver()), sqlite_depth(sqlite3)})


@pytest.fixture
def default_limit() -> Iterator[None]:
    """The process's default recursion limit while the commands run (a test checks that no
    command changed it)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(DEFAULT_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


@pytest.fixture(params=DEPTHS)
def depth(request) -> int:
    return request.param


@pytest.fixture
def deep_db(tmp_path, depth) -> str:
    """Both versions of acme/mira.deep hold `{"v": [[[...]]]}`, `depth` levels in all."""
    db = str(tmp_path / "deep.db")
    with SGAMStore.from_conn_string(db) as store:
        store.put(("acme", "mira"), "deep", {"v": 1})
        store.put(("acme", "mira"), "deep", {"v": 2})
    deep = '{"v": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE facts SET value = ? WHERE attribute = 'deep'", (deep,))
    conn.close()
    return db


COMMANDS = {
    "ledger": ["ledger"],
    "get": ["get", "--tenant", "acme", "--subject", "mira", "--attribute", "deep"],
    "changes": ["changes", "--since", "2000-01-01T00:00:00Z"],
    "search": ["search", "--tenant", "acme", "deep"],
}


def nesting(record: dict, depth: int) -> Any:
    """What lies `depth` levels down a record's value `{"v": [[...]]}` (it should be [])."""
    value = record["value"]["v"]
    for _ in range(depth - 2):
        [value] = value
    return value


@pytest.mark.parametrize("command", COMMANDS)
def test_the_deepest_value_sqlite_takes_reads_in_text(
    command, deep_db, default_limit, monkeypatch, capsys
) -> None:
    argv = COMMANDS[command]
    status, out, err = sgam(monkeypatch, capsys, argv[0], "--db", deep_db, *argv[1:])
    assert sys.getrecursionlimit() == DEFAULT_LIMIT
    assert status == 0 and err == "", err
    assert '"v"' in out and "[[[[" in out


@pytest.mark.parametrize("command", COMMANDS)
def test_the_deepest_value_sqlite_takes_reads_as_json(
    command, depth, deep_db, default_limit, monkeypatch, capsys
) -> None:
    argv = COMMANDS[command]
    status, out, err = sgam(monkeypatch, capsys, argv[0], "--db", deep_db, *argv[1:], "--json")
    assert sys.getrecursionlimit() == DEFAULT_LIMIT
    assert status == 0 and err == "", err
    sys.setrecursionlimit(3 * DEFAULT_LIMIT + depth)  # the test's own decoder needs room
    records = json.loads(out)
    for record in [records] if command == "get" else records:
        assert nesting(record, depth) == []


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
        ),
        max_leaves=20,
    ),
    st.sampled_from([None, 0, 2]),
)
def test_the_stack_writer_writes_what_json_writes(value, indent) -> None:
    expected = json.dumps(value, ensure_ascii=False, default=str, indent=indent)
    assert jsontext.dumps(value, indent=indent) == expected

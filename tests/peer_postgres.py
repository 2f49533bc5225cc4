"""A stand-in for LangGraph's SqliteStore in its own test suite (`make peer-pg`): each
`from_conn_string` opens SGAMStore on a fresh PostgreSQL database of the embedded server.

Imported by the peer suite from outside this package (its own `tests` package shadows
ours), so it imports `pg` as a top-level module.
"""

from __future__ import annotations

import atexit
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pg

from sgam_store import SGAMStore

atexit.register(pg.stop)


class PostgresSGAMStore(SGAMStore):
    """SGAMStore whose `from_conn_string` ignores the SQLite target and opens PostgreSQL."""

    __slots__ = ()

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, **kwargs: Any) -> Iterator[SGAMStore]:
        with SGAMStore.from_conn_string(pg.fresh_database(), **kwargs) as store:
            yield store

"""Moving a whole store between engines (`sgam copy`): every version with both clocks,
episodes, provenance, decisions, candidates and index rows, so that every `as_of` and
`known_at` answer is the same afterwards.

Engine-neutral: each engine exports and imports the same neutral tables
(`engine.transfer`); the copy reads the source in one snapshot and writes the target in
one transaction, so a failed copy leaves the target as empty as it was.
"""

from __future__ import annotations

from typing import Any

from sgam_store.core.engine import TRANSFER_TABLES
from sgam_store.core.errors import ConfigurationError


def vector_dims(engine: Any) -> int | None:
    """The source's vector dimensions: the target must be opened with the same."""
    with engine.reading() as conn:
        return engine.transfer.vector_dims(conn)


def copy_store(source: Any, target: Any) -> dict[str, int]:
    """Copy everything from `source` into the empty `target`; rows copied per table.

    A copy reads and writes every tenant's rows: it runs in the all-tenant scope on both
    sides, which an application role under row security may not take (TenantScopeError),
    rather than copy the nothing such a role sees and call it done."""
    source.ensure_ready()
    target.ensure_ready()
    with source.tenant_scope(None), target.tenant_scope(None):
        return _copy(source, target)


def _copy(source: Any, target: Any) -> dict[str, int]:
    if target.layout != source.layout:
        raise ConfigurationError(
            f"the source places the tenant at namespace label {source.layout.tenant_at}, the "
            f"target at {target.layout.tenant_at}: open the target with the source's tenant_at"
        )
    with target.reading() as conn:
        if not target.transfer.is_empty(conn):
            raise ConfigurationError("the target store is not empty; copy into a new one")
    with source.reading() as conn:
        language = source.indexing.stored_language(conn)
    counts = dict.fromkeys(TRANSFER_TABLES, 0)

    def body(cur: Any) -> None:
        # The copy keeps the source's keyword language; the target is empty, so taking
        # it rebuilds nothing, and the keyword rows arrive as text, analyzed on load.
        target.indexing.set_language(cur, language)
        with source.snapshot() as conn:
            for table in TRANSFER_TABLES:
                for rows in source.transfer.export_rows(conn, table):
                    target.transfer.load_rows(cur, table, rows)
                    counts[table] += len(rows)
        target.transfer.finish(cur)

    target.transaction(body)
    return counts

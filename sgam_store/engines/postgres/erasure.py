"""Erasure on PostgreSQL: remove facts and episodes for good, through
`engines/common/erasure.py`. `engines/sqlite/erasure.py`'s docstring gives the selectors
and the rules (every version, vectors, keyword row, source links, backfill audit rows,
the episode text; gaps stay gaps; `supersedes_fact_id` links to erased facts are cleared).

What differs from SQLite:
- Writers run in parallel, so an erasure first makes sure that no writer of what it
  erases is running or can start: a writer that read a version before the erasure would
  otherwise append a copy of it (or a fact superseding it) after the DELETE, erased data
  back. `purge` holds its tenant's advisory lock exclusively (`versions.own_tenant`),
  which every writer holds shared: one lock-table entry however many keys, where a lock
  per key overflowed `max_locks_per_transaction` for a large tenant. `purge_episode`
  locks the few keys it erases (`versions.lock_keys`), re-reading its selection until
  it names no unlocked key.
- `PurgeReport.deleted` names this engine's tables: `fact_vectors` for SQLite's
  `vector_rows`, `fact_keywords` for SQLite's `fact_fts`, and no `tenants` (there are
  no keyword slots).
- What PostgreSQL keeps after a DELETE: the rows stay in their pages as dead versions
  until VACUUM removes them, and even then their bytes stay in the page's free space
  (VACUUM frees, it does not zero); likewise the versions every earlier UPDATE left.
  Beyond the tables: the WAL until its segments are recycled, and WAL archives,
  replicas and backups; and in `pg_statistic`, where ANALYZE samples column values.
  There is no `secure_delete`: `secure=True` runs VACUUM (FULL, ANALYZE) on every table
  of ours once the erasure has committed, then VACUUM FULL on `pg_statistic`
  (`rewrite`): each table, its TOAST table and its indexes are written anew from their
  live rows, and the old files are deleted. That holds an ACCESS EXCLUSIVE lock on each
  table in turn (reads and writes of the store wait; on `pg_statistic`, the planning of
  any query of the database), and cannot drop a row version that a snapshot older than
  the erasure may still see (a long transaction, a replication slot's catalog xmin):
  such a version is copied into the new file. `checkpointed` is False when a table was
  not rewritten (the connection lost, a table the store's role does not own, or
  `pg_statistic` without a superuser or `pg_maintain`).
  `vacuum()` is VACUUM (ANALYZE) of every table of ours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from psycopg import OperationalError, sql

from sgam_store.core import namespaces
from sgam_store.core.models import PurgeReport
from sgam_store.engines.common import erasure as portable
from sgam_store.engines.common.dialect import POSTGRES, export
from sgam_store.engines.postgres.indexing import has_vectors, train_lists
from sgam_store.engines.postgres.versions import lock_keys, own_tenant

if TYPE_CHECKING:
    from sgam_store.ledger import Writer

TABLES = (*portable.ERASED_TABLES, "fact_vectors", "fact_keywords")
_OURS = (*TABLES, "sgam_meta")

_F = "fact_id = ANY(%s::bigint[])"
_STATISTICS = "pg_catalog.pg_statistic"  # where ANALYZE keeps sampled column values


export(globals(), portable, POSTGRES)  # the selections and shared deletions, bound to POSTGRES

# ---------------------------------------------------------------- locks


def _lock_all(cur: Any, keys_of: Callable[[], list[tuple[str, str]]]) -> None:
    """Lock the keys a selection names, re-reading it until it names no unlocked key
    (a writer may have started a new key of the selection meanwhile)."""
    while todo := [k for k in keys_of() if k not in cur.locked]:
        lock_keys(cur, todo)


def _keys(cur: Any, fact_ids: list[int]) -> list[tuple[str, str]]:
    rows = cur.execute(f"SELECT DISTINCT namespace, attribute FROM facts WHERE {_F}", (fact_ids,))
    return [(r[0], r[1]) for r in rows]


# ---------------------------------------------------------------- deletion


def delete_vectors(cur: Any, fact_ids: list[int]) -> int:
    """Delete the facts' vectors; return the rows removed."""
    if not has_vectors(cur):
        return 0
    return cur.execute(f"DELETE FROM fact_vectors WHERE {_F}", (list(fact_ids),)).rowcount


def erase(cur: Any, fact_ids: Iterable[int], episodes: Iterable[portable.Episode]) -> PurgeReport:
    """Delete every trace of these facts (all versions) and episodes ((tenant_id,
    episode_id) each), inside a transaction."""
    episodes = list(episodes)
    report = portable.report(TABLES, fact_ids, episodes)
    facts = report.fact_ids
    lock_keys(cur, _keys(cur, facts))
    report.deleted["fact_vectors"] = delete_vectors(cur, facts)
    report.deleted["fact_keywords"] = cur.execute(
        f"DELETE FROM fact_keywords WHERE {_F}", (facts,)
    ).rowcount
    return portable.erase_rows(POSTGRES, cur, report, episodes)


def purge(
    cur: Any, tenant_id: str, subject: str | None = None, attribute: str | None = None
) -> PurgeReport:
    """Erase a tenant, or the facts of one subject and/or attribute within it."""
    portable.checked(tenant_id, subject, attribute)
    own_tenant(cur, tenant_id)
    return portable.erase_selected(POSTGRES, cur, erase, tenant_id, subject, attribute)


def purge_episode(cur: Any, tenant_id: str, episode_id: str) -> PurgeReport:
    """Erase an episode and the tenant's facts whose only source it was (see module doc)."""
    namespaces.check_item_namespace((tenant_id,))
    _lock_all(cur, lambda: _keys(cur, portable.linked(POSTGRES, cur, tenant_id, episode_id)))
    return portable.erase_episode(POSTGRES, cur, erase, tenant_id, episode_id)


# ---------------------------------------------------------------- running, and the disk


def _vacuum(conn: Any, tables: Iterable[str], options: str = "") -> None:
    """VACUUM these tables of ours (outside any transaction: VACUUM refuses one)."""
    names = sql.SQL(", ").join(sql.Identifier(t) for t in tables)
    conn.execute(sql.SQL("VACUUM {}{}").format(sql.SQL(options), names), prepare=False)


def _tables(conn: Any) -> list[str]:
    return [t for t in _OURS if t != "fact_vectors" or has_vectors(conn)]


def _files(conn: Any, tables: list[str]) -> dict[str, int]:
    """Each table's file (relfilenode): a rewrite gives it a new one."""
    return {
        t: conn.execute("SELECT pg_relation_filenode(%s::regclass)", (t,)).fetchone()[0]
        for t in tables
    }


def rewrite(engine: Any) -> bool:
    """VACUUM FULL every table of ours, ANALYZE them, then VACUUM FULL the statistics
    catalog, on a pooled autocommit connection; whether every one got a new file.

    Every table, not only those this erasure deleted from: earlier updates and deletes
    of the same data (a fact closed by its successor, a candidate promoted) left row
    versions whose space plain VACUUM frees but never overwrites. The statistics too:
    ANALYZE copies sampled values (most common ones, histogram bounds) into
    `pg_statistic`, whose old rows stay in its pages when new statistics replace them.
    VACUUM skips a table the role may not maintain with a warning only (`pg_statistic`
    needs a superuser or, from PostgreSQL 17, the `pg_maintain` role): the unchanged
    file shows it.
    """
    try:
        with engine.pool.connection() as conn:
            tables = _tables(conn)
            before = _files(conn, [*tables, _STATISTICS])
            _vacuum(conn, tables, "(FULL, ANALYZE) ")
            conn.execute(f"VACUUM FULL {_STATISTICS}", prepare=False)
            after = _files(conn, [*tables, _STATISTICS])
    except OperationalError:  # e.g. cancelled, or the connection lost: the erasure holds
        return False
    return all(before[t] != after[t] for t in before)


def execute(
    writer: Writer, select: Callable[[Any], PurgeReport], *, secure: bool = False
) -> PurgeReport:
    """Run one erasure in one write transaction; `secure` then rewrites our tables once
    it has committed (`rewrite`), and `checkpointed` says whether that completed."""
    report = writer.run(lambda tx: select(tx.cur))
    if secure:
        report.checkpointed = rewrite(writer.engine)
    return report


def vacuum(conn: Any) -> None:
    """VACUUM (ANALYZE) every table of ours: dead rows and index entries go, plans refresh;
    then all tenants' vector lists are trained anew on the current vectors
    (`indexing.train_lists`)."""
    _vacuum(conn, _tables(conn), "(ANALYZE) ")
    train_lists(conn)

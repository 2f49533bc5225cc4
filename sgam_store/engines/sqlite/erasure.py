"""Erasure: remove facts and episodes for good, for retention rules and erasure requests.

Erasure is not expiry. Expiry (`delete`, TTL, `expire_after`) closes a fact's validity
and keeps its history; erasure deletes every version of the fact, its vectors
(`vector_rows`), its keyword row (`fact_fts`), its source links and
backfill audit rows, and the episode text (a whole-tenant purge also drops the tenant's
keyword slot in `tenants`). Afterwards no read (`get`, `search`,
`history`, `fact_at`, `as_of`, `known_at`) can return it. It is the one operation that
rewrites the past, so it is explicit and reports exactly what it removed.

Selectors (always within one tenant):
- `purge(tenant)` - every fact and episode of the tenant, and its ended sessions;
- `purge(tenant, subject)` / `purge(tenant, subject, attribute)` / `purge(tenant,
  attribute=...)` - the facts of exactly that subject and/or attribute (sub-subjects
  such as "mira.pets" are other subjects), and the memory candidates (weak signals)
  about them; episodes stay, and the report lists the purged facts'
  `source_episode_ids` so a caller can purge those too;
- `purge_episode(tenant, episode_id)` - the episode, and every fact whose only source
  it was. A fact with another source (its `source_episode_id`, or a `fact_sources`
  link for facts promoted from several episodes) is kept and cites a remaining one.

Gaps: erasing a fact in the middle of a key's history leaves a gap (its predecessor
stays closed; nothing older silently becomes current again), and `supersedes_fact_id`
links to it are cleared.

What SQLite keeps on disk after a DELETE: the deleted rows' bytes stay in the file's
free pages and in unused space of live pages until reused; so do the older images of
rows that an UPDATE rewrote long before (a fact closed by its successor, an FTS5 segment
merged): `secure_delete` zeroes only what is freed while it is on. In WAL mode the WAL
holds older page images until a checkpoint resets it; FTS5 keeps deleted tokens in old
index segments until they merge, and VACUUM copies segments as they are.

So `secure_delete=True` deletes with `PRAGMA secure_delete` on, merges the FTS index
('optimize'), refreshes the statistics if ANALYZE ever ran, rebuilds the file from its
live rows (VACUUM: every page written anew) and truncates the WAL
(`wal_checkpoint(TRUNCATE)`); the vector mirror overwrites its dead rows
(`VectorCache.apply`). Measured at 100k facts in benchmarks/README.md
("Secure erasure"): without the rebuild, erased words stayed in the file. `checkpointed`
is False when another connection kept the rebuild or the truncation from completing;
`vacuum()` completes it. Neither reaches below SQLite: the temporary file VACUUM builds
in, filesystem journals, SSD remapping and backups keep their own copies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sgam_store.core import namespaces
from sgam_store.core.errors import StoreBusyError
from sgam_store.core.models import PurgeReport
from sgam_store.engines.common import erasure as portable
from sgam_store.engines.common.dialect import SQLITE, export
from sgam_store.engines.sqlite.connection import is_busy
from sgam_store.engines.sqlite.indexing import KEYWORD_ROWIDS
from sgam_store.engines.sqlite.vector_cache import VectorDelta

if TYPE_CHECKING:
    from sgam_store.ledger import Writer

TABLES = (*portable.ERASED_TABLES, "vector_rows", "fact_fts", "tenants")


export(globals(), portable, SQLITE)  # the selections and shared deletions, bound to SQLITE

# ---------------------------------------------------------------- deletion


def delete_vectors(cur: Any, fact_ids: list[int]) -> int:
    """Delete the facts' vectors; return the rows removed."""
    return cur.execute(
        f"DELETE FROM vector_rows WHERE {SQLITE.in_list('fact_id')}", (SQLITE.as_list(fact_ids),)
    ).rowcount


def erase(cur: Any, fact_ids: Iterable[int], episodes: Iterable[portable.Episode]) -> PurgeReport:
    """Delete every trace of these facts (all versions) and episodes ((tenant_id,
    episode_id) each), inside a transaction."""
    episodes = list(episodes)
    report = portable.report(TABLES, fact_ids, episodes)
    report.deleted["vector_rows"] = delete_vectors(cur, report.fact_ids)
    report.deleted["fact_fts"] = cur.execute(
        f"DELETE FROM fact_fts WHERE rowid IN ({KEYWORD_ROWIDS})",
        (SQLITE.as_list(report.fact_ids),),
    ).rowcount
    return portable.erase_rows(SQLITE, cur, report, episodes)


def purge(
    cur: Any, tenant_id: str, subject: str | None = None, attribute: str | None = None
) -> PurgeReport:
    """Erase a tenant, or the facts of one subject and/or attribute within it."""
    whole = portable.checked(tenant_id, subject, attribute)
    report = portable.erase_selected(SQLITE, cur, erase, tenant_id, subject, attribute)
    if whole:  # the tenant id itself may be personal data; its keyword slot goes with it
        report.deleted["tenants"] = cur.execute(
            "DELETE FROM tenants WHERE tenant_id = ?", (tenant_id,)
        ).rowcount
    return report


def purge_episode(cur: Any, tenant_id: str, episode_id: str) -> PurgeReport:
    """Erase an episode and the tenant's facts whose only source it was (see module doc)."""
    namespaces.check_item_namespace((tenant_id,))
    return portable.erase_episode(SQLITE, cur, erase, tenant_id, episode_id)


# ---------------------------------------------------------------- running, and the disk


@contextmanager
def secure_delete(conn: Any, on: bool) -> Iterator[None]:
    """PRAGMA secure_delete for the duration of one erasure, then back as it was."""
    if not on:
        yield
        return
    previous = int(conn.execute("PRAGMA secure_delete").fetchone()[0])
    conn.execute("PRAGMA secure_delete = 1")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {previous}")


def optimize_fts(cur: Any) -> None:
    """Merge FTS5 segments into one: deleted tokens leave the index, not just get masked."""
    cur.execute("INSERT INTO fact_fts (fact_fts) VALUES ('optimize')")


def checkpoint(conn: Any) -> bool:
    """Copy the WAL into the file and truncate it; False when a reader kept it busy."""
    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    return busy == 0


def rewrite(conn: Any) -> bool:
    """Merge the FTS index, rebuild the file from its live rows and truncate the WAL;
    False when a reader kept the WAL from being truncated.

    The rebuild is what removes erased bytes: secure_delete zeroes only what is freed
    while it is on, and every UPDATE or DELETE before the erasure left copies in the
    unused space of live pages (a fact closed by its successor keeps its old record
    image there). The merge comes first because VACUUM copies FTS5 segments as they are.
    """
    optimize_fts(conn)
    _refresh_statistics(conn)
    conn.execute("VACUUM")
    return checkpoint(conn)


def _refresh_statistics(conn: Any) -> None:
    """ANALYZE again if it ever ran: `sqlite_stat4` keeps sampled index keys (namespace
    text, tenant ids), and VACUUM copies it as it is. The store never runs ANALYZE
    itself, so a file without `sqlite_stat1` has nothing to refresh."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone():
        conn.execute("ANALYZE")


def execute(
    writer: Writer, select: Callable[[Any], PurgeReport], *, secure: bool = False
) -> PurgeReport:
    """Run one erasure in one write transaction; `secure` then rewrites the file so no
    byte of it is left (see `rewrite`). `checkpointed` is False when another process
    kept the rewrite or the WAL's truncation from completing: `vacuum()` finishes it."""

    def body(tx: Any) -> PurgeReport:
        report = select(tx.cur)
        # The vector mirror drops (and under `secure` overwrites) what was erased.
        tx.delta = VectorDelta(retired=report.fact_ids, scrub=secure)
        return report

    engine = writer.engine
    with engine.lock, secure_delete(engine.conn, secure):
        report = writer.run(body)
        if secure:
            report.checkpointed = _rewrite_unless_busy(engine.conn)
    return report


def _rewrite_unless_busy(conn: Any) -> bool:
    """`rewrite`, or False when another connection's lock stopped it."""
    try:
        return rewrite(conn)
    except Exception as exc:
        if is_busy(exc):
            return False
        raise


def vacuum(conn: Any) -> None:
    """Rebuild the file without free pages or stale FTS segments, then truncate the WAL."""
    try:
        rewrite(conn)
    except Exception as exc:
        if is_busy(exc):
            raise StoreBusyError(f"vacuum needs the database to itself: {exc}") from None
        raise

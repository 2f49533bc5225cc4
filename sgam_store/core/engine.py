"""The engine interface: what the ledger, the read and write sides, the lifecycle jobs and
the memory manager may ask of a database.

An engine is an object with the methods of `Engine` and, as attributes, statement sets:
modules of plain functions whose first argument is a connection or a transaction's
cursor. `STATEMENTS` names the functions engine-neutral code calls; every engine
(`engines/sqlite`, `engines/postgres`) defines each of them with the same parameters, and
`tests/test_engine_seam.py` holds both to that. Everything outside `sgam_store.engines`
is written once against this.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from sgam_store.core.models import FactRow

T = TypeVar("T")

STATEMENTS: dict[str, frozenset[str]] = {
    # The ledger's rule: a key's tail, retire and append, TTL, and bitemporal reads.
    "versions": frozenset(
        {
            "clock",
            "row_ids",
            "containing",
            "next_start",
            "latest_start",
            "first_created",
            "open_version",
            "key_tails",
            "insert_many",
            "end_beliefs",
            "move_created",
            "open_ttl",
            "set_expiry",
            "expired",
            "visible_at",
            "history",
            "believed",
            "by_row_id",
            "latest_of",
        }
    ),
    # BaseStore reads and search: scope checks, listing, keyword and vector rankings.
    "reads": frozenset(
        {
            "get",
            "get_many",
            "in_scope",
            "keyword_scores",
            "listing",
            "admitted",
            "rows_by_id",
            "sources_by_id",
            "intervals_by_id",
            "namespaces_under",
            "structured_state",
            "nearest",
            "nearest_exact",
            "similarities",
            "vectors",
            "highest_row_id",
            "keyword_frequency",
            "keyword_terms",
            "keyword_query",
            "keyword_hits",
            "keyword_recent",
            "keyword_coverage",
        }
    ),
    # Keyword and vector rows; the keyword language the rows are analyzed in.
    "indexing": frozenset(
        {
            "flush_keywords",
            "write_vectors",
            "flush_vectors",
            "stored_language",
            "has_keywords",
            "set_language",
            "indexed_as",
        }
    ),
    "filters": frozenset({"check_filter"}),
    "episodes": frozenset({"exists", "insert", "by_id", "of_ids", "fact_source", "citing"}),
    "candidates": frozenset(
        {
            "pending_matching",
            "pending_support",
            "create",
            "refresh",
            "mark_promoted",
            "expire_due",
            "by_ids",
            "listing",
            "add_support",
            "support_of",
            "support_payload",
            "link_sources",
            "mark_extracted",
            "is_extracted",
        }
    ),
    "retention": frozenset(
        {
            "fact_policies",
            "episode_classes",
            "open_facts_due",
            "episodes_due",
            "record_session_end",
            "ended_session_facts",
            "ended_session_episodes",
        }
    ),
    "backfill": frozenset(
        {
            "transformable_batch",
            "transformable_count",
            "with_vectors",
            "unembedded_batch",
            "still_believed",
            "delete_keyword_row",
            "log_rewrite",
        }
    ),
    "erasure": frozenset(
        {"erase", "purge", "purge_episode", "delete_vectors", "execute", "vacuum"}
    ),
    "stats": frozenset({"collect_stats"}),
    # Corrections written as new keys: the review queue and its decisions.
    "supersession": frozenset(
        {
            "enqueue",
            "queued",
            "dequeue",
            "record",
            "by_id",
            "touching",
            "of_key",
            "mark_undone",
            "namespace_members",
            "of_tenant",
        }
    ),
    "transfer": frozenset({"is_empty", "vector_dims", "export_rows", "load_rows", "finish"}),
    # The change feed, and every version of a key (believed or retired) for its picture.
    "changes": frozenset({"feed", "key_versions"}),
    # The inspector's totals and pages: current keys per namespace, from an index alone;
    # tenants and namespaces one index seek each (now, or at a past instant); capped
    # counts, of the store or a tenant; a namespace's page by key.
    "counts": frozenset(
        {
            "current_keys",
            "capped",
            "next_tenant",
            "next_namespace",
            "next_tenant_at",
            "next_namespace_at",
            "namespace_page",
        }
    ),
}

# Features a statement set may lack: neutral code asks for them with getattr and takes
# the interface's statements where one is missing. SQLite's in-process keyword scorer of
# small scopes; PostgreSQL's statements that fold several of the interface's into one
# round trip (on SQLite statements are no round trips, and vectors come from the
# in-process mirror).
OPTIONAL: dict[str, frozenset[str]] = {
    "reads": frozenset({"keyword_mirror", "hybrid_first", "keyword_terms_sized", "scope_scored"})
}

# The neutral tables `engine.transfer` exports and imports (`sgam copy`), in an order
# that satisfies the foreign keys, with their columns; every engine stores them under
# these names. Index rows travel as "keywords" (fact_id, tenant_id, body) and "vectors"
# (fact_id, field, tenant_id, is_current, float32 bytes), which each engine keeps its way.
TRANSFER_COLUMNS: dict[str, str] = {
    "facts": ", ".join(FactRow._fields),
    "episodes": "episode_id, tenant_id, thread_id, source_kind, speaker, content, metadata, "
    "occurred_at, recorded_at, retention_class",
    "fact_sources": "fact_id, episode_id, tenant_id",
    "ended_sessions": "tenant_id, thread_id, ended_at",
    "backfill_log": "fact_id, old_row_id, new_row_id, from_version, to_version, transforms, "
    "backfilled_at, tenant_id",
    "memory_candidates": "candidate_id, tenant_id, subject, attribute, value, similarity_key, "
    "memory_type, reason, status, first_seen_at, last_seen_at, expires_at, promoted_fact_id, "
    "promoted_by, promoted_at",
    "candidate_support": "candidate_id, episode_id, payload, confidence, recorded_at, tenant_id",
    "episode_extractions": "episode_id, extracted_at, extractor, tenant_id",
    "supersession_queue": "fact_id, tenant_id, queued_at",
    "supersession_decisions": "decision_id, tenant_id, new_fact_id, old_fact_id, decision, "
    "score, reason, evidence, decided_by, decided_at, undone_at",
}
# How each table is read out, so a copy is written in its original order.
TRANSFER_ORDER = {
    "facts": "row_id",
    "memory_candidates": "candidate_id",
    "backfill_log": "log_id",
    "supersession_queue": "fact_id",
    "supersession_decisions": "decision_id",
}
TRANSFER_TABLES = (*TRANSFER_COLUMNS, "keywords", "vectors")


class Engine(Protocol):
    """A database ready for SGAM: set-up, write transactions, reads, and statement sets."""

    versions: Any
    reads: Any
    indexing: Any
    filters: Any
    episodes: Any
    candidates: Any
    retention: Any
    backfill: Any
    erasure: Any
    stats: Any
    supersession: Any
    transfer: Any
    changes: Any
    counts: Any

    def setup(self) -> None:
        """Create or upgrade the schema: idempotent, safe from several processes."""

    def ensure_ready(self) -> None:
        """`setup()` once, on first use."""

    def transaction(
        self, body: Callable[[Any], T], *, committed: Callable[[T], None] | None = None
    ) -> T:
        """Run `body(cursor)` in one write transaction in which the rule's decisions hold
        (no other writer changes a key between its read and its write), retried whole on
        the engine's transient conflicts; `committed(result)` runs after COMMIT."""

    def reading(self) -> AbstractContextManager[Any]:
        """A connection for read statements (the open transaction's, inside one)."""

    def snapshot(self) -> AbstractContextManager[Any]:
        """A connection on which every statement sees one committed state."""

    def maintenance(self) -> AbstractContextManager[Any]:
        """A connection for VACUUM: outside any transaction and any tenant scope."""

    def tenant_scope(self, tenant: str | None) -> AbstractContextManager[None]:
        """Confine this context's operations to `tenant` (None: every tenant) where the
        database enforces it (PostgreSQL's row security); an engine without may ignore it."""

    def vector_mirror(self, dims: int) -> Any:
        """An in-process copy of current vectors that stays exact, or None."""

    def close(self) -> None:
        """Release connections the engine opened."""

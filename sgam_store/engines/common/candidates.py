"""The memory manager's candidate tables, on either engine: memory_candidates,
candidate_support and episode_extractions, and the fact_sources links a promotion adds.

The decisions (what is weak, when recurrence promotes) are
`sgam_store.managers.consolidation`'s; these only read and record rows. Candidate rows
travel as tuples in `COLUMNS` order, which is `Candidate`'s field order (support aside):
`value` as JSON text, timestamps as the stored fixed-width UTC text.
"""

from __future__ import annotations

from typing import Any

from sgam_store.engines.common.dialect import Dialect

COLUMNS = (
    "candidate_id, tenant_id, subject, attribute, value, similarity_key, memory_type, reason, "
    "status, first_seen_at, last_seen_at, expires_at, promoted_fact_id, promoted_by, promoted_at"
)
_SIGNAL = "c.tenant_id = ? AND c.subject = ? AND c.attribute = ? AND c.similarity_key = ?"


# ---------------------------------------------------------------- candidates


def pending_matching(
    d: Dialect, cur: Any, tenant_id: str, subject: str, attribute: str, similarity_key: str
) -> list[int]:
    """Ids of the pending candidates of this signal (at most one: memory_candidates_one_pending)."""
    rows = cur.execute(
        d.sql(
            f"SELECT candidate_id FROM memory_candidates c WHERE {_SIGNAL} AND status = 'pending'"
        ),
        (tenant_id, subject, attribute, similarity_key),
    ).fetchall()
    return [r[0] for r in rows]


def pending_support(
    d: Dialect, cur: Any, tenant_id: str, subject: str, attribute: str, similarity_key: str
) -> list[str]:
    """Episode ids supporting the pending candidate of this signal."""
    rows = cur.execute(
        d.sql(
            "SELECT s.episode_id FROM memory_candidates c "
            "JOIN candidate_support s ON s.candidate_id = c.candidate_id "
            f"WHERE {_SIGNAL} AND c.status = 'pending'"
        ),
        (tenant_id, subject, attribute, similarity_key),
    ).fetchall()
    return [r[0] for r in rows]


def create(
    d: Dialect,
    cur: Any,
    tenant_id: str,
    subject: str,
    attribute: str,
    value: str,
    similarity_key: str,
    memory_type: str,
    reason: str,
    now: str,
    expires_at: str,
) -> int:
    """The id of a new pending candidate first and last seen at `now`."""
    return cur.execute(
        d.sql(
            "INSERT INTO memory_candidates (tenant_id, subject, attribute, value, "
            "similarity_key, memory_type, reason, first_seen_at, last_seen_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING candidate_id"
        ),
        (
            tenant_id,
            subject,
            attribute,
            value,
            similarity_key,
            memory_type,
            reason,
            now,
            now,
            expires_at,
        ),
    ).fetchone()[0]


def refresh(d: Dialect, cur: Any, candidate_id: int, value: str, now: str, expires_at: str) -> None:
    """New evidence: the latest value, last seen at `now`, and a later expiry."""
    cur.execute(
        d.sql(
            "UPDATE memory_candidates SET value = ?, last_seen_at = ?, expires_at = ? "
            "WHERE candidate_id = ?"
        ),
        (value, now, expires_at, candidate_id),
    )


def mark_promoted(d: Dialect, cur: Any, candidate_id: int, fact_id: int, by: str, now: str) -> None:
    """The candidate became fact `fact_id` at `now`, promoted `by` recurrence, confirmation
    or statement."""
    cur.execute(
        d.sql(
            "UPDATE memory_candidates SET status = 'promoted', promoted_fact_id = ?, "
            "promoted_by = ?, promoted_at = ? WHERE candidate_id = ?"
        ),
        (fact_id, by, now, candidate_id),
    )


def expire_due(d: Dialect, cur: Any, now: str, tenant_id: str | None = None) -> int:
    """Mark pending candidates whose expiry is at or before `now` expired; the count."""
    sql = "UPDATE memory_candidates SET status = 'expired' WHERE status = 'pending' "
    sql += "AND expires_at <= ?"
    params: list[Any] = [now]
    if tenant_id is not None:
        sql, params = sql + " AND tenant_id = ?", [*params, tenant_id]
    return cur.execute(d.sql(sql), params).rowcount


def by_ids(d: Dialect, cur: Any, candidate_ids: list[int]) -> list[tuple[Any, ...]]:
    """Rows (in `COLUMNS` order) of the candidates with these ids, by id."""
    return cur.execute(
        d.sql(
            f"SELECT {COLUMNS} FROM memory_candidates WHERE {d.in_list('candidate_id')} "
            "ORDER BY candidate_id"
        ),
        (d.as_list(candidate_ids),),
    ).fetchall()


def listing(
    d: Dialect,
    cur: Any,
    tenant_id: str,
    status: str | None,
    subject: str | None,
    attribute: str | None,
) -> list[tuple[Any, ...]]:
    """Rows (in `COLUMNS` order) of the tenant's candidates, each filter when not None, by id."""
    sql, params = f"SELECT {COLUMNS} FROM memory_candidates WHERE tenant_id = ?", [tenant_id]
    for column, value in (("status", status), ("subject", subject), ("attribute", attribute)):
        if value is not None:
            sql, params = f"{sql} AND {column} = ?", [*params, value]
    return cur.execute(d.sql(f"{sql} ORDER BY candidate_id"), params).fetchall()


# ---------------------------------------------------------------- support and sources


def add_support(
    d: Dialect,
    cur: Any,
    candidate_id: int,
    episode_id: str,
    payload: str,
    confidence: float | None,
    now: str,
) -> None:
    """Link an episode of the candidate's tenant (its candidate as JSON text); the same
    episode twice is one piece of evidence, not two."""
    cur.execute(
        d.sql(
            "INSERT INTO candidate_support (candidate_id, episode_id, payload, confidence, "
            f"recorded_at, tenant_id) SELECT {d.typed('bigint')}, ?, ?, "
            f"{d.typed('double precision')}, {d.typed('timestamptz')}, tenant_id "
            "FROM memory_candidates WHERE candidate_id = ? ON CONFLICT DO NOTHING"
        ),
        (candidate_id, episode_id, payload, confidence, now, candidate_id),
    )


def support_of(
    d: Dialect, cur: Any, candidate_id: int
) -> list[tuple[str, str | None, float | None, str]]:
    """(episode_id, evidence, confidence, recorded_at) of each supporting episode, oldest
    first (episode ids byte-wise on both engines)."""
    return cur.execute(
        d.sql(
            f"SELECT episode_id, {d.json_text('payload', 'evidence')}, confidence, recorded_at "
            "FROM candidate_support WHERE candidate_id = ? "
            f"ORDER BY recorded_at, episode_id{d.collate_c}"
        ),
        (candidate_id,),
    ).fetchall()


def support_payload(d: Dialect, cur: Any, candidate_id: int, episode_id: str) -> str:
    """The candidate (JSON text) that episode `episode_id` gave in support."""
    return cur.execute(
        d.sql("SELECT payload FROM candidate_support WHERE candidate_id = ? AND episode_id = ?"),
        (candidate_id, episode_id),
    ).fetchone()[0]


def link_sources(
    d: Dialect, cur: Any, candidate_id: int, fact_id: int, source_episode_id: str
) -> None:
    """Every supporting episode but the fact's own source becomes a source of `fact_id`."""
    cur.execute(
        d.sql(
            "INSERT INTO fact_sources (fact_id, episode_id, tenant_id) "
            f"SELECT {d.typed('bigint')}, episode_id, tenant_id "
            "FROM candidate_support WHERE candidate_id = ? AND episode_id != ? "
            "ON CONFLICT DO NOTHING"
        ),
        (fact_id, candidate_id, source_episode_id),
    )


# ---------------------------------------------------------------- extraction marks


def mark_extracted(
    d: Dialect, cur: Any, tenant_id: str, episode_id: str, extractor: str, now: str
) -> None:
    """Record that `extractor` extracted the tenant's episode at `now` (a rerun moves the
    mark)."""
    cur.execute(
        d.sql(
            "INSERT INTO episode_extractions (tenant_id, episode_id, extracted_at, extractor) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (tenant_id, episode_id) DO UPDATE SET "
            "extracted_at = excluded.extracted_at, extractor = excluded.extractor"
        ),
        (tenant_id, episode_id, now, extractor),
    )


def is_extracted(d: Dialect, cur: Any, tenant_id: str | None, episode_id: str) -> bool:
    """True once the tenant's episode (None: any tenant's of that id) has an extraction
    mark."""
    sql, params = "SELECT 1 FROM episode_extractions WHERE episode_id = ?", [episode_id]
    if tenant_id is not None:
        sql, params = sql + " AND tenant_id = ?", [*params, tenant_id]
    return cur.execute(d.sql(sql), params).fetchone() is not None

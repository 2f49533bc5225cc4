"""The memory manager's candidate tables on PostgreSQL: memory_candidates,
candidate_support and episode_extractions, and the fact_sources links a promotion adds.
The twin of `engines/sqlite/candidates.py`.

What differs from SQLite: id lists are arrays (`= ANY`), a support's evidence is read
with `payload::jsonb ->> 'evidence'` (text for a JSON string, as `json_extract` gives),
and episode ids sort byte-wise (`COLLATE "C"`) as SQLite's text does. Candidate rows
travel as tuples in `COLUMNS` order (`Candidate`'s field order, support aside): `value`
as JSON text, timestamps as the stored text.
"""

from __future__ import annotations

from typing import Any

COLUMNS = (
    "candidate_id, tenant_id, subject, attribute, value, similarity_key, memory_type, reason, "
    "status, first_seen_at, last_seen_at, expires_at, promoted_fact_id, promoted_by, promoted_at"
)
_SIGNAL = "tenant_id = %s AND subject = %s AND attribute = %s AND similarity_key = %s"


# ---------------------------------------------------------------- candidates


def pending_matching(
    cur: Any, tenant_id: str, subject: str, attribute: str, similarity_key: str
) -> list[int]:
    """Ids of the pending candidates of this signal (at most one: memory_candidates_one_pending)."""
    rows = cur.execute(
        f"SELECT candidate_id FROM memory_candidates WHERE {_SIGNAL} AND status = 'pending'",
        (tenant_id, subject, attribute, similarity_key),
    ).fetchall()
    return [r[0] for r in rows]


def pending_support(
    cur: Any, tenant_id: str, subject: str, attribute: str, similarity_key: str
) -> list[str]:
    """Episode ids supporting the pending candidate of this signal."""
    rows = cur.execute(
        "SELECT s.episode_id FROM memory_candidates c "
        "JOIN candidate_support s ON s.candidate_id = c.candidate_id "
        "WHERE c.tenant_id = %s AND c.subject = %s AND c.attribute = %s "
        "AND c.similarity_key = %s AND c.status = 'pending'",
        (tenant_id, subject, attribute, similarity_key),
    ).fetchall()
    return [r[0] for r in rows]


def create(
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
        "INSERT INTO memory_candidates (tenant_id, subject, attribute, value, "
        "similarity_key, memory_type, reason, first_seen_at, last_seen_at, expires_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING candidate_id",
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


def refresh(cur: Any, candidate_id: int, value: str, now: str, expires_at: str) -> None:
    """New evidence: the latest value, last seen at `now`, and a later expiry."""
    cur.execute(
        "UPDATE memory_candidates SET value = %s, last_seen_at = %s, expires_at = %s "
        "WHERE candidate_id = %s",
        (value, now, expires_at, candidate_id),
    )


def mark_promoted(cur: Any, candidate_id: int, fact_id: int, by: str, now: str) -> None:
    """The candidate became fact `fact_id` at `now`, promoted `by` recurrence, confirmation
    or statement."""
    cur.execute(
        "UPDATE memory_candidates SET status = 'promoted', promoted_fact_id = %s, "
        "promoted_by = %s, promoted_at = %s WHERE candidate_id = %s",
        (fact_id, by, now, candidate_id),
    )


def expire_due(cur: Any, now: str, tenant_id: str | None = None) -> int:
    """Mark pending candidates whose expiry is at or before `now` expired; the count."""
    sql = "UPDATE memory_candidates SET status = 'expired' WHERE status = 'pending' "
    sql += "AND expires_at <= %s"
    params: list[Any] = [now]
    if tenant_id is not None:
        sql, params = sql + " AND tenant_id = %s", [*params, tenant_id]
    return cur.execute(sql, params).rowcount


def by_ids(cur: Any, candidate_ids: list[int]) -> list[tuple[Any, ...]]:
    """Rows (in `COLUMNS` order) of the candidates with these ids."""
    return cur.execute(
        f"SELECT {COLUMNS} FROM memory_candidates WHERE candidate_id = ANY(%s::bigint[]) "
        "ORDER BY candidate_id",
        (list(candidate_ids),),
    ).fetchall()


def listing(
    cur: Any,
    tenant_id: str,
    status: str | None,
    subject: str | None,
    attribute: str | None,
) -> list[tuple[Any, ...]]:
    """Rows (in `COLUMNS` order) of the tenant's candidates, each filter when not None, by id."""
    sql, params = f"SELECT {COLUMNS} FROM memory_candidates WHERE tenant_id = %s", [tenant_id]
    for column, value in (("status", status), ("subject", subject), ("attribute", attribute)):
        if value is not None:
            sql, params = f"{sql} AND {column} = %s", [*params, value]
    return cur.execute(f"{sql} ORDER BY candidate_id", params).fetchall()


# ---------------------------------------------------------------- support and sources


def add_support(
    cur: Any,
    candidate_id: int,
    episode_id: str,
    payload: str,
    confidence: float | None,
    now: str,
) -> None:
    """Link an episode (its candidate as JSON text); the same episode twice is one piece of
    evidence, not two."""
    cur.execute(
        "INSERT INTO candidate_support (candidate_id, episode_id, payload, confidence, "
        "recorded_at) VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (candidate_id, episode_id, payload, confidence, now),
    )


def support_of(cur: Any, candidate_id: int) -> list[tuple[str, str | None, float | None, str]]:
    """(episode_id, evidence, confidence, recorded_at) of each supporting episode, oldest
    first."""
    return cur.execute(
        "SELECT episode_id, payload::jsonb ->> 'evidence', confidence, recorded_at "
        "FROM candidate_support WHERE candidate_id = %s "
        'ORDER BY recorded_at, episode_id COLLATE "C"',
        (candidate_id,),
    ).fetchall()


def support_payload(cur: Any, candidate_id: int, episode_id: str) -> str:
    """The candidate (JSON text) that episode `episode_id` gave in support."""
    return cur.execute(
        "SELECT payload FROM candidate_support WHERE candidate_id = %s AND episode_id = %s",
        (candidate_id, episode_id),
    ).fetchone()[0]


def link_sources(cur: Any, candidate_id: int, fact_id: int, source_episode_id: str) -> None:
    """Every supporting episode but the fact's own source becomes a source of `fact_id`."""
    cur.execute(
        "INSERT INTO fact_sources (fact_id, episode_id) "
        "SELECT %s::bigint, episode_id FROM candidate_support WHERE candidate_id = %s "
        "AND episode_id != %s ON CONFLICT DO NOTHING",
        (fact_id, candidate_id, source_episode_id),
    )


# ---------------------------------------------------------------- extraction marks


def mark_extracted(cur: Any, episode_id: str, extractor: str, now: str) -> None:
    """Record that `extractor` extracted the episode at `now` (a rerun moves the mark)."""
    cur.execute(
        "INSERT INTO episode_extractions (episode_id, extracted_at, extractor) "
        "VALUES (%s, %s, %s) ON CONFLICT (episode_id) DO UPDATE SET "
        "extracted_at = excluded.extracted_at, extractor = excluded.extractor",
        (episode_id, now, extractor),
    )


def is_extracted(cur: Any, episode_id: str) -> bool:
    """True once the episode has an extraction mark."""
    row = cur.execute(
        "SELECT 1 FROM episode_extractions WHERE episode_id = %s", (episode_id,)
    ).fetchone()
    return row is not None

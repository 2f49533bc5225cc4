"""Erasure on either engine: which facts and episodes a purge selector names, the other
sources that keep a fact alive when one episode goes, and the deletions from the tables
both engines have. The keyword and vector rows, the locks and the secure rewrite are each
engine's (`engines/sqlite/erasure.py` gives the selectors and the rules).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sgam_store.core import namespaces
from sgam_store.core.errors import InvalidFactError
from sgam_store.core.models import PurgeReport
from sgam_store.engines.common.dialect import Dialect


def _where(tenant_id: str, subject: str | None, attribute: str | None) -> tuple[str, list[str]]:
    where, params = "tenant_id = ?", [tenant_id]
    if subject is not None:
        where, params = where + " AND subject = ?", [*params, subject]
    if attribute is not None:
        where, params = where + " AND attribute = ?", [*params, attribute]
    return where, params


def checked(tenant_id: str, subject: str | None, attribute: str | None) -> bool:
    """Refuse a malformed purge selector; whether it names the whole tenant."""
    namespaces.check_item_namespace((tenant_id,))
    if subject is not None:
        namespaces.check_subject(subject)
    if attribute is not None and not attribute:
        raise InvalidFactError("attribute must be a non-empty string (or None for all)")
    return subject is None and attribute is None


Episode = tuple[str, str]  # (tenant_id, episode_id): episode ids are per tenant
# Every table an erasure deletes from on both engines, beside the engine's own.
ERASED_TABLES = (
    "facts",
    "fact_sources",
    "backfill_log",
    "episodes",
    "candidate_support",
    "episode_extractions",
    "ended_sessions",
    "memory_candidates",
    "supersession_queue",
    "supersession_decisions",
)


def report(
    tables: Iterable[str], fact_ids: Iterable[int], episodes: Iterable[Episode]
) -> PurgeReport:
    """An empty report of an erasure of these facts and episodes from the engine's tables."""
    return PurgeReport(
        dict.fromkeys(tables, 0),
        fact_ids=sorted(set(fact_ids)),
        episode_ids=sorted({episode_id for _, episode_id in episodes}),
    )


def erase_rows(
    d: Dialect, cur: Any, report: PurgeReport, episodes: Iterable[Episode]
) -> PurgeReport:
    """Delete the report's facts (all versions) and these episodes from the tables both
    engines have, inside the erasure's transaction, once the engine has deleted its
    keyword and vector rows; count everything that went, what a cascade or a trigger
    would have removed included (it is deleted here first, and counted)."""
    facts = d.as_list(report.fact_ids)
    fact_in = d.in_list("fact_id")
    sources = f"SELECT DISTINCT source_episode_id{d.collate_c} FROM facts WHERE {fact_in}"
    rows = cur.execute(d.sql(sources + " ORDER BY 1"), (facts,))
    report.source_episode_ids = [r[0] for r in rows]

    def delete(table: str, where: str, *params: Any) -> int:
        return cur.execute(d.sql(f"DELETE FROM {table} WHERE {where}"), params).rowcount

    deleted = report.deleted
    deleted["facts"] = delete("facts", fact_in, facts)
    links = d.in_list("supersedes_fact_id")
    report.cleared_supersedes = cur.execute(
        d.sql(f"UPDATE facts SET supersedes_fact_id = NULL WHERE {links}"), (facts,)
    ).rowcount
    deleted["fact_sources"] = delete("fact_sources", fact_in, facts)
    deleted["backfill_log"] = delete("backfill_log", fact_in, facts)
    for tenant_id, ids in _by_tenant(episodes).items():
        _erase_episodes(d, cur, deleted, tenant_id, d.as_list(ids))
    # A review decision quotes both memories' values: it goes with either of them.
    deleted["supersession_queue"] = delete("supersession_queue", fact_in, facts)
    deleted["supersession_decisions"] = delete(
        "supersession_decisions",
        f"{d.in_list('new_fact_id')} OR {d.in_list('old_fact_id')}",
        facts,
        facts,
    )
    return report


def _by_tenant(episodes: Iterable[Episode]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for tenant_id, episode_id in episodes:
        found.setdefault(tenant_id, []).append(episode_id)
    return found


def _erase_episodes(
    d: Dialect, cur: Any, deleted: dict[str, int], tenant_id: str, ids: Any
) -> None:
    """Delete one tenant's episodes and every row naming them: source links, extraction
    marks, candidate support, and the candidates left with no support (the trigger's)."""
    mine = f"tenant_id = ? AND {d.in_list('episode_id', 'text')}"
    supported = cur.execute(
        d.sql(f"SELECT DISTINCT candidate_id FROM candidate_support WHERE {mine}"),
        (tenant_id, ids),
    ).fetchall()
    for table in ("fact_sources", "candidate_support", "episode_extractions", "episodes"):
        sql = d.sql(f"DELETE FROM {table} WHERE {mine}")
        deleted[table] += cur.execute(sql, (tenant_id, ids)).rowcount
    candidates = d.as_list(r[0] for r in supported)
    left = cur.execute(
        d.sql(f"SELECT COUNT(*) FROM memory_candidates WHERE {d.in_list('candidate_id')}"),
        (candidates,),
    ).fetchone()[0]
    deleted["memory_candidates"] += len(supported) - left


def erase_selected(
    d: Dialect,
    cur: Any,
    erase: Callable[[Any, list[int], list[Episode]], PurgeReport],
    tenant_id: str,
    subject: str | None,
    attribute: str | None,
) -> PurgeReport:
    """`erase` what a checked purge selector names: its facts, the memory candidates about
    them, and for a whole tenant its episodes and ended sessions."""
    whole = subject is None and attribute is None
    episodes = [(tenant_id, e) for e in episodes_of(d, cur, tenant_id)] if whole else []
    report = erase(cur, facts_of(d, cur, tenant_id, subject, attribute), episodes)
    # Weak signals about the same subject/attribute hold its values too, with their
    # support rows. A whole-tenant purge reaches them through its episodes.
    where, params = _where(tenant_id, subject, attribute)
    report.deleted["candidate_support"] += cur.execute(  # they go by cascade: counted first
        d.sql(
            "SELECT COUNT(*) FROM candidate_support WHERE candidate_id IN "
            f"(SELECT candidate_id FROM memory_candidates WHERE {where})"
        ),
        params,
    ).fetchone()[0]
    report.deleted["memory_candidates"] += cur.execute(
        d.sql(f"DELETE FROM memory_candidates WHERE {where}"), params
    ).rowcount
    if whole:
        report.deleted["ended_sessions"] = cur.execute(
            d.sql("DELETE FROM ended_sessions WHERE tenant_id = ?"), (tenant_id,)
        ).rowcount
    return report


def facts_of(
    d: Dialect, cur: Any, tenant_id: str, subject: str | None = None, attribute: str | None = None
) -> list[int]:
    """fact_ids of a tenant, narrowed to exactly one subject and/or attribute, by id."""
    where, params = _where(tenant_id, subject, attribute)
    rows = cur.execute(d.sql(f"SELECT DISTINCT fact_id FROM facts WHERE {where}"), params)
    return sorted(r[0] for r in rows)


def episodes_of(d: Dialect, cur: Any, tenant_id: str) -> list[str]:
    """Ids of the tenant's episodes."""
    rows = cur.execute(d.sql("SELECT episode_id FROM episodes WHERE tenant_id = ?"), (tenant_id,))
    return [r[0] for r in rows]


def other_sources(d: Dialect, cur: Any, tenant_id: str, fact_id: int, episode_id: str) -> list[str]:
    """The tenant's fact's sources but `episode_id`, byte-wise (a source link is the
    fact's tenant's only: no other tenant's row can keep the fact alive)."""
    rows = cur.execute(
        d.sql(
            "SELECT e FROM (SELECT source_episode_id AS e FROM facts "
            "WHERE fact_id = ? AND tenant_id = ? AND source_episode_id != ? "
            "UNION SELECT episode_id FROM fact_sources "
            "WHERE fact_id = ? AND tenant_id = ? AND episode_id != ?) s "
            f"ORDER BY e{d.collate_c}"
        ),
        (fact_id, tenant_id, episode_id, fact_id, tenant_id, episode_id),
    ).fetchall()
    return [r[0] for r in rows]


def linked(d: Dialect, cur: Any, tenant_id: str, episode_id: str) -> list[int]:
    """The tenant's facts that cite the episode, as their source or through fact_sources."""
    rows = cur.execute(
        d.sql(
            "SELECT fact_id FROM facts WHERE tenant_id = ? AND source_episode_id = ? "
            "UNION SELECT s.fact_id FROM fact_sources s JOIN facts f "
            "ON f.fact_id = s.fact_id AND f.tenant_id = s.tenant_id "
            "WHERE s.episode_id = ? AND s.tenant_id = ? ORDER BY 1"
        ),
        (tenant_id, episode_id, episode_id, tenant_id),
    )
    return [r[0] for r in rows]


def erase_episode(
    d: Dialect,
    cur: Any,
    erase: Callable[[Any, list[int], list[Episode]], PurgeReport],
    tenant_id: str,
    episode_id: str,
) -> PurgeReport:
    """`erase` the tenant's episode and the facts whose only source it was; a fact with
    another source is kept and cites a remaining one (byte-wise the first)."""
    doomed, kept = [], []
    for fact_id in linked(d, cur, tenant_id, episode_id):
        others = other_sources(d, cur, tenant_id, fact_id, episode_id)
        if not others:
            doomed.append(fact_id)
            continue
        kept.append(fact_id)
        cur.execute(
            d.sql(
                "UPDATE facts SET source_episode_id = ? WHERE fact_id = ? AND source_episode_id = ?"
            ),
            (others[0], fact_id, episode_id),
        )
    unlinked = cur.execute(
        d.sql(
            "DELETE FROM fact_sources WHERE tenant_id = ? AND episode_id = ? "
            f"AND {d.in_list('fact_id')}"
        ),
        (tenant_id, episode_id, d.as_list(kept)),
    ).rowcount
    episodes = cur.execute(
        d.sql("SELECT episode_id FROM episodes WHERE episode_id = ? AND tenant_id = ?"),
        (episode_id, tenant_id),
    ).fetchall()
    report = erase(cur, doomed, [(tenant_id, r[0]) for r in episodes])
    report.resourced_fact_ids = kept
    report.deleted["fact_sources"] += unlinked
    return report

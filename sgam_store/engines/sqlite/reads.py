"""The read side's statements on SQLite: get, listing, candidate checks, the keyword
(FTS5) and vector rankings, namespaces, and recall's state selection.

A read's scope arrives as plain pieces, first after the connection: `at` and `known_at`
(None: now) and `tenant` (None: any tenant); a search adds its namespace `prefix` and
`filter`. The read layer (`sgam_store.read`) decides what to ask; nothing here writes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from sgam_store.core import analysis, namespaces
from sgam_store.core.models import FactRow, StoredKey, latest_per_key
from sgam_store.engines.common import reads as portable
from sgam_store.engines.common.dialect import SQLITE, export
from sgam_store.engines.sqlite.filters import filter_sql
from sgam_store.engines.sqlite.indexing import (
    FACT_MASK,
    KEYWORD_ROWIDS,
    slot_range,
    stored_language,
    tenant_slot,
)
from sgam_store.engines.sqlite.predicates import as_list, current_sql, in_list
from sgam_store.engines.sqlite.versions import F_COLUMNS

Hits = list[tuple[int, float]]  # (fact_id, score), best first


# The scope every read starts from (the one place its tenant predicate enters), and the
# portable statements get and recall's selection run in it.
export(globals(), portable, SQLITE)
_scope = partial(portable.scope, SQLITE)


def _search_scope(
    at: str | None,
    known_at: str | None,
    tenant: str | None,
    prefix: Sequence[str],
    filter: dict[str, Any] | None,
) -> tuple[str, list[Any]]:
    """`_scope`, narrowed to the namespaces under `prefix` and to the values `filter` takes."""
    # A current scope of a tenant alone arrives with no prefix (`search.narrow`): one
    # range of facts_current_ns, not an OR of two index searches (a filtered listing at
    # 20k: 2.18 -> 1.75 ms).
    cond, params = _scope(at, known_at, tenant)
    ns_sql, ns_params = namespaces.prefix_sql("f.namespace", prefix)
    flt_sql, flt_params = filter_sql(filter)
    return f"{cond} AND {ns_sql} AND {flt_sql}", [*params, *ns_params, *flt_params]


# ---------------------------------------------------------------- items and listings


def get(
    conn: Any, at: str | None, known_at: str | None, tenant: str | None, namespace: str, key: str
) -> FactRow | None:
    """The key's version visible in the scope (the latest start, should several be)."""
    return portable.key_version(SQLITE, conn, _scope(at, known_at, tenant), namespace, key)


def get_many(
    conn: Any, at: str | None, known_at: str | None, tenant: str | None, keys: list[StoredKey]
) -> dict[StoredKey, FactRow]:
    """`get` for many (namespace, key) pairs in one statement: absent keys are missing."""
    cond, params = _scope(at, known_at, tenant)
    pairs = json.dumps([list(k) for k in dict.fromkeys(keys)])
    rows = conn.execute(_get_many_sql(cond), (pairs, *params))
    return latest_per_key(FactRow._make(r) for r in rows)


@functools.cache
def _get_many_sql(cond: str) -> str:
    # The pairs drive the join (CROSS JOIN keeps them outer): one index seek per key.
    return (
        f"SELECT {F_COLUMNS} FROM json_each(?) AS k CROSS JOIN facts f "
        f"WHERE f.namespace = k.value ->> 0 AND f.attribute = k.value ->> 1 AND {cond}"
    )


def listing(
    conn: Any,
    at: str | None,
    known_at: str | None,
    tenant: str | None,
    prefix: Sequence[str],
    filter: dict[str, Any] | None,
    limit: int,
    offset: int,
) -> list[FactRow]:
    """A page of the versions visible in the search scope, newest belief first."""
    where, params = _search_scope(at, known_at, tenant, prefix, filter)
    # A tenant's current listing walks facts_current_recent and stops at its page. Named,
    # because the change feed's facts_changes (tenant_id, known_from) looks as good to a
    # planner without statistics, and it walks every version, retired ones included.
    hint = " INDEXED BY facts_current_recent" if tenant and at is None and known_at is None else ""
    rows = conn.execute(
        f"SELECT {F_COLUMNS} FROM facts f{hint} WHERE {where} "
        "ORDER BY f.known_from DESC, f.row_id DESC LIMIT ? OFFSET ?",
        (*params, limit, offset),
    ).fetchall()
    return [FactRow._make(row) for row in rows]


def admitted(
    conn: Any,
    at: str | None,
    known_at: str | None,
    tenant: str | None,
    prefix: Sequence[str],
    filter: dict[str, Any] | None,
    fact_ids: list[int],
) -> dict[int, int]:
    """{fact_id: row_id of its visible version} for those of `fact_ids` in the search scope."""
    where, params = _search_scope(at, known_at, tenant, prefix, filter)
    # INDEXED BY: in a tenant view the planner would otherwise walk the tenant's
    # current facts (facts_current_ns) instead of seeking each candidate.
    return dict(
        conn.execute(
            "SELECT f.fact_id, f.row_id FROM facts f INDEXED BY facts_fact_id "
            f"WHERE {in_list('f.fact_id')} AND {where}",
            (as_list(fact_ids), *params),
        ).fetchall()
    )


def in_scope(
    conn: Any,
    at: str | None,
    known_at: str | None,
    tenant: str | None,
    prefix: Sequence[str],
    filter: dict[str, Any] | None,
    limit: int,
) -> dict[int, int]:
    """{fact_id: row_id} of up to `limit` facts visible in the search scope: a small
    scope, ranked whole instead of through the tenant's rankings."""
    where, params = _search_scope(at, known_at, tenant, prefix, filter)
    rows = conn.execute(
        f"SELECT f.fact_id, f.row_id FROM facts f WHERE {where} LIMIT ?", (*params, limit)
    ).fetchall()
    return dict(rows)


def rows_by_id(conn: Any, row_ids: list[int]) -> dict[int, FactRow]:
    """Full rows of the given versions, by row_id (a ranked page's, read last)."""
    if not row_ids:
        return {}
    rows = conn.execute(
        f"SELECT {F_COLUMNS} FROM facts f WHERE {in_list('f.row_id')}",
        (as_list(row_ids),),
    ).fetchall()
    return {row[0]: FactRow._make(row) for row in rows}


def namespaces_under(
    conn: Any, at: str | None, known_at: str | None, tenant: str | None, prefix: Sequence[str]
) -> list[str]:
    """The distinct namespaces (as stored text) of visible facts under `prefix`."""
    cond, params = _scope(at, known_at, tenant)
    ns_sql, ns_params = namespaces.prefix_sql("f.namespace", prefix)
    rows = conn.execute(
        f"SELECT DISTINCT f.namespace FROM facts f WHERE {cond} AND {ns_sql}",
        (*params, *ns_params),
    ).fetchall()
    return [text for (text,) in rows]


def structured_state(
    conn: Any,
    at: str | None,
    known_at: str | None,
    tenant: str | None,
    subjects: Sequence[str] | None,
    attributes: Sequence[str] | None,
    memory_types: Sequence[str] | None,
    limit: int,
) -> list[FactRow]:
    """Recall's selection: see `engines/common/reads.state`."""
    scope = _scope(at, known_at, tenant)
    return portable.state(SQLITE, conn, scope, subjects, attributes, memory_types, limit)


# ---------------------------------------------------------------- vectors (a plain table)


def nearest(
    conn: Any, query_vec: bytes, n: int, tenant: str | None, current: bool
) -> tuple[Hits, bool, bool]:
    """(fact_id, similarity) of the `n` nearest vectors, best first, by an exact scan of
    the tenant's vectors (`current`: current facts' only); whether the ranking has no
    more; and False, for no k ceiling (so no `nearest_exact` fallback is needed).

    Serves what the in-process mirror does not: point-in-time searches and
    `vector_cache=False`."""
    owners, params = "", []
    if tenant is not None or current:
        cond = current_sql() if current else "1"
        if tenant is not None:
            cond, params = f"{cond} AND tenant_id = ?", [tenant]
        owners = f"WHERE fact_id IN (SELECT fact_id FROM facts WHERE {cond}) "
    rows = conn.execute(
        "SELECT fact_id, MIN(vec_distance_cosine(embedding, ?)) AS d FROM vector_rows "
        f"{owners}GROUP BY fact_id ORDER BY d, fact_id LIMIT ?",
        (query_vec, *params, n),
    ).fetchall()
    return [(fid, 1.0 - d) for fid, d in rows], len(rows) < n, False


def nearest_exact(
    conn: Any,
    at: str | None,
    known_at: str | None,
    tenant: str | None,
    prefix: Sequence[str],
    filter: dict[str, Any] | None,
    query_vec: bytes,
) -> list[tuple[int, float, int]]:
    """(fact_id, best-field similarity, row_id) of every version in the search scope that
    has vectors, best first: an exact scan, with no k ceiling."""
    where, params = _search_scope(at, known_at, tenant, prefix, filter)
    rows = conn.execute(
        "SELECT f.fact_id, f.row_id, MIN(vec_distance_cosine(v.embedding, ?)) AS d "
        f"FROM facts f JOIN vector_rows v ON v.fact_id = f.fact_id WHERE {where} "
        "GROUP BY f.row_id ORDER BY d",
        (query_vec, *params),
    ).fetchall()
    return [(fid, 1.0 - d, row_id) for fid, row_id, d in rows]


def similarities(conn: Any, fact_ids: list[int], query_vec: bytes) -> dict[int, float]:
    """{fact_id: exact best-field cosine similarity} of those of `fact_ids` with vectors."""
    rows = conn.execute(
        "SELECT fact_id, MIN(vec_distance_cosine(embedding, ?)) FROM vector_rows "
        f"WHERE {in_list('fact_id')} GROUP BY fact_id",
        (query_vec, as_list(fact_ids)),
    ).fetchall()
    return {fid: 1.0 - d for fid, d in rows}


# ---------------------------------------------------------------- keywords (FTS5)


def keyword_scores(conn: Any, query: KeywordQuery, fact_ids: list[int]) -> Hits:
    """(fact_id, score) of those of `fact_ids` that match `query`, scored as
    `keyword_hits` scores them (BM25 over the whole index), best first.

    The facts' rowids are bounded by a range, not listed: FTS5 takes a rowid range into
    its scan, so BM25 is computed only inside it, while with `rowid IN (...)` it scored
    every match of the index first (0.45 against 3.7 ms for a subject's 20 facts at 20k).
    """
    if query.rowids is None or not fact_ids:
        return []
    first, wanted = query.rowids[0], set(fact_ids)
    found = conn.execute(
        "SELECT rowid, bm25(fact_fts) AS b FROM fact_fts WHERE fact_fts MATCH ? "
        "AND rowid BETWEEN ? AND ? ORDER BY b, rowid",
        (query.match, first | min(fact_ids), first | max(fact_ids)),
    ).fetchall()
    hits = [(rowid & FACT_MASK, -b / (1.0 - b)) for rowid, b in found]
    return [(fid, score) for fid, score in hits if fid in wanted]


def keyword_coverage(conn: Any, terms: list[str], fact_ids: list[int]) -> dict[int, float]:
    """{fact_id: share of `terms` its keyword row holds} for those of `fact_ids` with one:
    the calibrated keyword score (`read.search.calibrated`), which depends on the query
    and the row alone, never on how many rows the index holds.

    Read from the rows' text, not by a MATCH per term: FTS5 seeks each rowid of each
    term's posting list (3 ms for 5 terms x 20 facts at 200k rows, measured), where the
    rows themselves cost 0.04 ms. The text is split as the tokenizer splits it
    (`unicode61 remove_diacritics 2`: letters and digits, lowercased, accents folded),
    and a term of several tokens (a "simple" query word with '_') must appear as a
    phrase, as its MATCH would require.
    """
    phrases = {p for p in map(_tokens, terms) if p}
    if not phrases or not fact_ids:
        return {}
    rows = conn.execute(
        f"SELECT k.rowid, k.body FROM fact_fts k WHERE k.rowid IN ({KEYWORD_ROWIDS})",
        (json.dumps(list(fact_ids)),),
    ).fetchall()
    return {
        rowid & FACT_MASK: sum(_holds(_tokens(body), p) for p in phrases) / len(phrases)
        for rowid, body in rows
    }


def _tokens(text: str) -> tuple[str, ...]:
    """`text` as the keyword tokenizer splits and folds it."""
    return tuple(analysis.fold(w) for w in analysis.words(text))


def _holds(tokens: tuple[str, ...], phrase: tuple[str, ...]) -> bool:
    """Whether `phrase` occurs in `tokens`, its tokens adjacent and in order."""
    if len(phrase) == 1:
        return phrase[0] in tokens
    n = len(phrase)
    return any(tokens[i : i + n] == phrase for i in range(len(tokens) - n + 1))


@dataclass(frozen=True)
class KeywordQuery:
    """An FTS5 MATCH and the rowid range of the tenant it is confined to (if any)."""

    match: str
    rowids: tuple[int, int] | None = None


def highest_row_id(conn: Any) -> int:
    """The highest row id so far (0 for none): one index seek."""
    return conn.execute("SELECT max(row_id) FROM facts").fetchone()[0] or 0


def keyword_frequency(conn: Any, term: str) -> int:
    """How many keyword rows hold `term` (0 if none).

    fts5vocab counts them by walking the term's whole posting list: milliseconds for a
    common term, so the read layer remembers the counts.
    """
    row = conn.execute("SELECT doc FROM fact_fts_vocab WHERE term = ?", (term,)).fetchone()
    return row[0] if row else 0


def keyword_terms(conn: Any, text: str) -> list[str]:
    """A query's terms, analyzed in the language the keyword rows were (read per query,
    as `indexing.flush_keywords` reads it per write, so a rebuild by another process
    never leaves this store's queries spelled for the old index)."""
    return analysis.analyzer(stored_language(conn)).query_terms(text)


def _fts_match(terms: list[str]) -> str:
    """A safe FTS5 MATCH string: terms quoted and OR-ed."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def keyword_query(conn: Any, terms: list[str], tenant: str | None) -> KeywordQuery | None:
    """The keyword query matching any of `terms`, confined to `tenant` when given (its
    rowid range); None when nothing can match."""
    if not terms:
        return None
    match = _fts_match(terms)
    if tenant is None:
        return KeywordQuery(match)
    slot = tenant_slot(conn, tenant)
    return KeywordQuery(match, slot_range(slot)) if slot is not None else None


def keyword_hits(conn: Any, query: KeywordQuery, n: int) -> Hits:
    """The `n` best (fact_id, score) of `query` by BM25, FTS5 ranking alone; score =
    -bm25 / (1 - bm25) in [0, 1), higher is better."""
    sql = "SELECT rowid, bm25(fact_fts) AS b FROM fact_fts WHERE fact_fts MATCH ?"
    if query.rowids is not None:
        sql += " AND rowid BETWEEN ? AND ?"
    sql += " ORDER BY b LIMIT ?"
    found = conn.execute(sql, (query.match, *(query.rowids or ()), n)).fetchall()
    return [(rowid & FACT_MASK, -b / (1.0 - b)) for rowid, b in found]

"""The read side's statements on PostgreSQL: the twin of `engines/sqlite/reads.py` (get,
listing, candidate checks, the keyword and vector rankings, namespaces, recall's state
selection), with the same arguments and results.

What differs from SQLite, and why:
- Namespace prefixes are a byte-wise range (`~>=~`, `~<~`: no pattern characters to
  escape, unlike GLOB or LIKE), bound as parameters, so even a prepared statement's
  generic plan reads them through the current-facts index (`starts_with` with a
  parameter could not, and each search was planned anew, 0.4 ms); the tenant a prefix
  names arrives as `tenant` (that index leads with it).
- Keywords: `fact_keywords.tsv` with the store's text-search configuration (read from
  `sgam_meta` once per query, by `keyword_terms`); a query is parsed by that configuration
  into lexemes, matched as they are: the keyword statements take the tsquery as a
  constant, so no filter re-parses it row by row (under row security, it would). The GIN
  index is keyed by tenant first (schema v7), so a tenant's query reads its matches
  only. Ranked by `ts_rank_cd` mapped to r / (1 + r) in [0, 1). That is cover density,
  not BM25: the order within a query differs from SQLite's. The score a search reports
  is `keyword_coverage`, as on SQLite. `keyword_frequency` counts through the GIN index,
  exactly or up to the cap the common-term cut needs.
- Vectors: pgvector. A current scope of up to `exact_max` vectors (a tenant's 20,000, all
  tenants' 5,000) is scanned exactly; a larger one (approximate: recall@10 0.98 on MiniLM
  vectors of realistic text) walks the HNSW index (current vectors only) with iterative scans, so a
  tenant filter does not starve the page, and is scanned exactly should the walk stop
  short. Point-in-time searches scan exactly. There is no k ceiling: `capped` is always False.
- Text orderings use `COLLATE "C"`, SQLite's BINARY order, whatever the database's.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from typing import Any

from psycopg.pq import TransactionStatus

from sgam_store.core import analysis, namespaces
from sgam_store.core.models import FactRow, ItemRow, ScopeSignals, StoredKey, latest_per_key
from sgam_store.engines.common import reads as portable
from sgam_store.engines.common.dialect import POSTGRES, export
from sgam_store.engines.postgres import connection
from sgam_store.engines.postgres.filters import filter_sql
from sgam_store.engines.postgres.versions import F_COLUMNS

# ef_search of a walk: 4 candidates a wanted hit, at least 100. On MiniLM vectors of
# realistic memory text (benchmarks/pg_walk_recall.py, 13,609 memories of 540 users) a walk
# over all of them found 0.93-0.95 of the exact top 10 at pgvector's default 40, 0.98 at
# 100 (two runs).
EF_SEARCH_MIN = 100
EF_SEARCH_MAX = 1000  # pgvector's ceiling for hnsw.ef_search
# A tenant's scope with at most this many current vectors is scanned exactly (recall 1.0),
# and cheaper than a filtered walk. Measured on this machine with 384-d vectors (k = 64): a
# tenant's 2,000 in 2.1 ms, where the iterative HNSW walk over 20,000 filtered to that
# tenant took 15 ms; on MiniLM vectors of realistic text a user of 3,446 memories took
# 2.7-3.1 ms exactly, 3.2-7.1 ms by the filtered walk (benchmarks/pg_walk_recall.py).
EXACT_SCAN_MAX = 20_000
# All tenants' scope is walked past this many current vectors: approximate, within issue
# 41's rule (recall@10 >= 0.95 against exact on real embeddings). MiniLM vectors of
# realistic LangMem text, 13,609 memories (benchmarks/pg_walk_recall.py, a loaded 2-core
# machine, two runs): exact 26-37 ms, the unfiltered walk 3.7-4.0 ms at recall 0.98.
# Random vectors, which have no neighbourhoods, are no measure of this (recall 0.53-0.70
# there, whoever walks).
ALL_TENANTS_EXACT_MAX = 5_000


def exact_max(tenant: str | None) -> int:
    """The most current vectors a scope is scanned exactly with: a tenant's, or all's."""
    return EXACT_SCAN_MAX if tenant is not None else ALL_TENANTS_EXACT_MAX


# The store's text-search configuration, its keyword language (`indexing.set_language`
# changes both the column and this row in one transaction); an InitPlan evaluated once per
# statement, so the GIN index still applies.
_CONFIG = "(SELECT value FROM sgam_meta WHERE key = 'text_search_config')::regconfig"

Hits = list[tuple[int, float]]  # (fact_id, score), best first


# The scope every read starts from (the one place its tenant predicate enters), and the
# portable statements get and recall's selection run in it.
export(globals(), portable, POSTGRES)
_scope = partial(portable.scope, POSTGRES)


def _prefix_sql(prefix: Sequence[str]) -> tuple[str, list[Any]]:
    """Namespaces under `prefix` at label boundaries ('foo' never matches 'foobar'). The
    tenant a prefix names arrives as `tenant` (`read.scope.narrow`), for the indexes."""
    if not prefix:
        return "TRUE", []
    text = namespaces.to_text(prefix)
    below = text + namespaces.SEP  # the namespaces under it: from here, byte-wise ...
    above = text + chr(ord(namespaces.SEP) + 1)  # ... to before here
    sql = "(f.namespace = %s OR (f.namespace ~>=~ %s AND f.namespace ~<~ %s))"
    return sql, [text, below, above]


def _search_scope(
    at: str | None,
    known_at: str | None,
    tenant: str | None,
    prefix: Sequence[str],
    filter: dict[str, Any] | None,
) -> tuple[str, list[Any]]:
    """`_scope`, narrowed to the namespaces under `prefix` and to the values `filter` takes."""
    cond, params = _scope(at, known_at, tenant)
    ns_sql, ns_params = _prefix_sql(prefix)
    current = at is None and known_at is None
    flt_sql, flt_params = filter_sql(filter, tenant if current else None)
    return f"{cond} AND {ns_sql} AND {flt_sql}", [*params, *ns_params, *flt_params]


# ---------------------------------------------------------------- items and listings


def get(
    conn: Any, at: str | None, known_at: str | None, tenant: str | None, namespace: str, key: str
) -> ItemRow | None:
    """The key's version visible in the scope (the latest start, should several be)."""
    return portable.key_version(POSTGRES, conn, _scope(at, known_at, tenant), namespace, key)


def get_many(
    conn: Any, at: str | None, known_at: str | None, tenant: str | None, keys: list[StoredKey]
) -> dict[StoredKey, FactRow]:
    """`get` for many (namespace, key) pairs in one statement: absent keys are missing."""
    cond, params = _scope(at, known_at, tenant)
    distinct = list(dict.fromkeys(keys))
    rows = conn.execute(
        f"SELECT {F_COLUMNS} FROM unnest(%s::text[], %s::text[]) AS k(ns, attr) "
        f"JOIN facts f ON f.namespace = k.ns AND f.attribute = k.attr WHERE {cond}",
        ([ns for ns, _ in distinct], [a for _, a in distinct], *params),
    ).fetchall()
    return latest_per_key(FactRow._make(r) for r in rows)


def listing(
    conn: Any,
    at: str | None,
    known_at: str | None,
    tenant: str | None,
    prefix: Sequence[str],
    filter: dict[str, Any] | None,
    limit: int,
    offset: int,
    *,
    below_tenant: bool,
) -> list[ItemRow]:
    """A page of the versions visible in the search scope, newest belief first (the
    columns an item is built from, as on SQLite). `below_tenant` names no index here:
    PostgreSQL's planner picks between the tenant's walk and the namespace's seek from
    its statistics."""
    where, params = _search_scope(at, known_at, tenant, prefix, filter)
    rows = conn.execute(
        f"SELECT {portable.I_COLUMNS} FROM facts f WHERE {where} "
        "ORDER BY f.known_from DESC, f.row_id DESC LIMIT %s OFFSET %s",
        (*params, limit, offset),
    ).fetchall()
    return [ItemRow._make(row) for row in rows]


def _by_fact_id(ids: str, where: str) -> str:
    """(fact_id, row_id) of the facts in `ids` (an array expression) that pass `where`.
    The candidates are read by fact_id behind a fence (OFFSET 0), `where` applied to those
    rows only: given the tenant's predicate beside them, a planner with no statistics
    (right after a bulk load, before autovacuum analyzes) read the whole tenant by its
    index instead and filtered 2,000 rows for 180 (2.5 against 0.45 ms at 20k facts)."""
    return (
        f"SELECT f.fact_id, f.row_id FROM (SELECT * FROM facts WHERE fact_id = ANY({ids}) "
        f"OFFSET 0) AS f WHERE {where}"
    )


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
    return dict(
        conn.execute(
            _by_fact_id("%s", where),
            (list(fact_ids), *params),
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
        f"SELECT f.fact_id, f.row_id FROM facts f WHERE {where} LIMIT %s", (*params, limit)
    ).fetchall()
    return dict(rows)


def namespaces_under(
    conn: Any, at: str | None, known_at: str | None, tenant: str | None, prefix: Sequence[str]
) -> list[str]:
    """The distinct namespaces (as stored text) of visible facts under `prefix`."""
    return portable.distinct_namespaces(conn, _scope(at, known_at, tenant), _prefix_sql(prefix))


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
    return portable.state(POSTGRES, conn, scope, subjects, attributes, memory_types, limit)


# ---------------------------------------------------------------- vectors (pgvector)


def _vector(query_vec: bytes) -> connection.BinaryVector:
    """float32 bytes -> pgvector's binary form, sent as is (`connection.BinaryVector`):
    1 us, where printing the 384 floats as text took 0.2 ms, and the server parsed them."""
    return connection.BinaryVector.of(query_vec)


def nearest(
    conn: Any, query_vec: bytes, n: int, tenant: str | None, current: bool
) -> tuple[Hits, bool, bool]:
    """(fact_id, similarity) of the `n` nearest vectors, best first; whether the ranking
    has no more; and False (no k ceiling, so never capped). `current`: only current
    facts' vectors: exactly for a scope of up to `exact_max`, else through the HNSW
    index; otherwise (point-in-time searches) an exact scan."""
    vec = _vector(query_vec)
    found = _current(conn, vec, n, tenant) if current else _scan(conn, vec, n, tenant)
    hits = sorted(((fid, 1.0 - d) for fid, d in found), key=lambda h: (-h[1], h[0]))
    return hits, len(found) < n, False


# Whether a scope is small, remembered for SMALL_TTL_S per server and tenant. A scope not
# seen lately is scanned exactly, at most `exact_max` + 1 of its vectors, with its
# size counted in the same statement: one round trip, where a count first cost one more
# for every search of a tenant not seen in 10 s (many tenants, each seldom searched). A stale
# answer costs time, never results: the walk falls back to the exact scan when it comes
# back short.
SMALL_TTL_S = 10.0
_small_seen: dict[tuple[Any, ...], tuple[float, bool]] = {}


def _current(conn: Any, vec: bytes, n: int, tenant: str | None) -> list[tuple[int, float]]:
    """The `n` nearest current vectors of the scope: an exact scan of a small one, else
    the HNSW walk (an exact scan should the walk come back short)."""
    # libpq's own fields: `conn.info.dsn` parses the whole connection string (0.4 ms).
    pg = conn.pgconn
    key = (pg.host, pg.port, pg.db, tenant)
    seen = _small_seen.get(key)
    if seen is None or time.monotonic() - seen[0] >= SMALL_TTL_S:
        found, small = _sized_scan(conn, vec, n, tenant)
        _small_seen[key] = (time.monotonic(), small)
        if small:
            return found
    elif seen[1]:
        return _current_scan(conn, vec, n, tenant)
    found = _walk(conn, vec, n, tenant)
    if len(found) < n:
        # The walk stops after hnsw.max_scan_tuples, possibly before the scope's
        # vectors run out: an exact scan answers instead.
        found = _current_scan(conn, vec, n, tenant)
    return found


def _sized_scan(
    conn: Any, vec: bytes, n: int, tenant: str | None
) -> tuple[list[tuple[int, float]], bool]:
    """(`_current_scan`'s answer, True) for a scope of at most `exact_max` current
    vectors; ([], False) for a larger one, after scanning no more than that. The size is
    an InitPlan (a bounded count, once per statement); a window count over the scan
    cost more (1.6 against 0.9 ms for 2,000 vectors)."""
    where = "is_current" + (" AND tenant_id = %s" if tenant is not None else "")
    scoped = [tenant] if tenant is not None else []
    rows = conn.execute(
        f"SELECT fact_id, d, (SELECT count(*) FROM (SELECT 1 FROM fact_vectors WHERE {where} "
        "LIMIT %s) AS c) AS size FROM (SELECT fact_id, embedding <=> %s::vector AS d "
        f"FROM fact_vectors WHERE {where} LIMIT %s) AS scope ORDER BY d LIMIT %s",
        (*scoped, exact_max(tenant) + 1, vec, *scoped, exact_max(tenant) + 1, n),
    ).fetchall()
    if rows and rows[0][2] > exact_max(tenant):
        return [], False
    return [(fid, d) for fid, d, _ in rows], True


def _walk(conn: Any, vec: bytes, n: int, tenant: str | None) -> list[tuple[int, float]]:
    """Current vectors by the HNSW index, iterative so rows filtered out are replaced;
    relaxed order can return hits slightly out of order (the caller re-sorts)."""
    sql = "SELECT fact_id, embedding <=> %s::vector AS d FROM fact_vectors WHERE is_current"
    params: list[Any] = [vec]
    if tenant is not None:
        sql, params = sql + " AND tenant_id = %s", [*params, tenant]
    ef = min(EF_SEARCH_MAX, max(EF_SEARCH_MIN, 4 * n))
    # The settings are the transaction's: a search's own (`engine.snapshot`) holds them
    # already; a savepoint inside it would cost two more round trips.
    inside = conn.info.transaction_status == TransactionStatus.INTRANS
    with nullcontext() if inside else conn.transaction():
        conn.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.ef_search', %s, true)",
            (str(ef),),
        )
        return conn.execute(f"{sql} ORDER BY d LIMIT %s", (*params, n)).fetchall()


def _scan(conn: Any, vec: bytes, n: int, tenant: str | None) -> list[tuple[int, float]]:
    """Every vector (current or not), exactly: without `is_current` the partial HNSW index
    does not apply."""
    sql = "SELECT fact_id, embedding <=> %s::vector AS d FROM fact_vectors"
    params: list[Any] = [vec]
    if tenant is not None:
        sql, params = sql + " WHERE tenant_id = %s", [*params, tenant]
    return conn.execute(f"{sql} ORDER BY d LIMIT %s", (*params, n)).fetchall()


def _current_scan(conn: Any, vec: bytes, n: int, tenant: str | None) -> list[tuple[int, float]]:
    """The scope's current vectors, exactly. The sort is over a subquery's output, which
    keeps the planner from ordering by the HNSW index (the walk a small scope avoids)."""
    sql = "SELECT fact_id, embedding <=> %s::vector AS d FROM fact_vectors WHERE is_current"
    params: list[Any] = [vec]
    if tenant is not None:
        sql, params = sql + " AND tenant_id = %s", [*params, tenant]
    return conn.execute(
        f"SELECT fact_id, d FROM ({sql} OFFSET 0) AS scope ORDER BY d LIMIT %s", (*params, n)
    ).fetchall()


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
    has vectors, best first: an exact scan."""
    where, params = _search_scope(at, known_at, tenant, prefix, filter)
    rows = conn.execute(
        "SELECT f.fact_id, f.row_id, MIN(v.embedding <=> %s::vector) AS d "
        f"FROM facts f JOIN fact_vectors v ON v.fact_id = f.fact_id WHERE {where} "
        "GROUP BY f.row_id, f.fact_id ORDER BY d, f.row_id",
        (_vector(query_vec), *params),
    ).fetchall()
    return [(fid, 1.0 - d, row_id) for fid, row_id, d in rows]


def similarities(conn: Any, fact_ids: list[int], query_vec: bytes) -> dict[int, float]:
    """{fact_id: exact best-field cosine similarity} of those of `fact_ids` with vectors."""
    rows = conn.execute(
        "SELECT fact_id, MIN(embedding <=> %s::vector) FROM fact_vectors "
        "WHERE fact_id = ANY(%s) GROUP BY fact_id",
        (_vector(query_vec), list(fact_ids)),
    ).fetchall()
    return {fid: 1.0 - d for fid, d in rows}


# ---------------------------------------------------------------- keywords (tsvector)


@dataclass(frozen=True)
class KeywordQuery:
    """A tsquery text (quoted lexemes, OR-ed) and the tenant it is confined to (if any)."""

    tsquery: str
    tenant: str | None = None


def highest_row_id(conn: Any) -> int:
    """The highest row id so far (0 for none): one index seek."""
    return conn.execute("SELECT COALESCE(MAX(row_id), 0) FROM facts").fetchone()[0]


def _quoted(term: str) -> str:
    """One tsquery operand: the lexeme quoted, so no character in it is an operator."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def keyword_frequency(conn: Any, term: str, cap: int | None = None) -> int:
    """How many keyword rows hold `term` (0 if none), through the GIN index; the read
    layer remembers the counts. With `cap`, exact up to `cap` and `cap + 1` above it: the
    count stops there, where a common term's full count walked its whole posting list
    (1-2 ms at 20k rows) only to learn it was above the cut's ceiling."""
    if cap is None:
        return conn.execute(
            "SELECT count(*) FROM fact_keywords WHERE tsv @@ %s::tsquery", (_quoted(term),)
        ).fetchone()[0]
    return conn.execute(
        "SELECT count(*) FROM (SELECT FROM fact_keywords WHERE tsv @@ %s::tsquery LIMIT %s) m",
        (_quoted(term), max(cap, 0) + 1),
    ).fetchone()[0]


def keyword_terms(conn: Any, text: str) -> list[str]:
    """A query's terms: its lexemes, parsed, stemmed and stripped of stop words by the
    text-search configuration exactly as `to_tsvector` did the rows. Word by word
    (`to_tsquery` per word) the parser saw "2026-06-30" as "2026", "06", "30" where a row
    holds "2026", "-06", "-30", so a memory did not match its own text. As on SQLite
    under "simple", SIMPLE_STOPWORDS are dropped unless nothing else is left. The text is
    NFC-composed first: the parser reads a decomposed "é" as part of no word it stems."""
    return _terms(conn.execute(_TERMS, (unicodedata.normalize("NFC", text),)).fetchone()[0])


_TERMS = f"SELECT tsvector_to_array(to_tsvector({_CONFIG}, %s))"


def _terms(lexemes: list[str]) -> list[str]:
    return [t for t in lexemes if t not in analysis.SIMPLE_STOPWORDS] or lexemes


def keyword_terms_sized(conn: Any, text: str) -> tuple[list[str], int]:
    """(`keyword_terms`, `highest_row_id`) in one statement: hybrid search's term
    statistics need both before its keyword query (one round trip fewer). An optional
    feature of the statement set (`core.engine.OPTIONAL`)."""
    lexemes, rows = conn.execute(
        f"{_TERMS}, (SELECT COALESCE(MAX(row_id), 0) FROM facts)",
        (unicodedata.normalize("NFC", text),),
    ).fetchone()
    return _terms(lexemes), rows


def keyword_query(conn: Any, terms: list[str], tenant: str | None) -> KeywordQuery | None:
    """The keyword query matching any of `terms` (lexemes, taken as they are), confined to
    `tenant` when given; None when nothing can match."""
    if not terms:
        return None
    return KeywordQuery(" | ".join(map(_quoted, terms)), tenant)


def keyword_coverage(conn: Any, terms: list[str], fact_ids: list[int]) -> dict[int, float]:
    """{fact_id: share of `terms` its keyword row holds} for those of `fact_ids` with one:
    the calibrated keyword score (`read.scoring.calibrated`), defined as on SQLite: it
    depends on the query and the row alone, never on how many rows there are."""
    wanted = list(dict.fromkeys(terms))
    if not wanted or not fact_ids:
        return {}
    rows = conn.execute(
        "SELECT k.fact_id, (SELECT count(*) FROM unnest(%s::text[]) AS q(lexeme) "
        "WHERE q.lexeme = ANY(tsvector_to_array(k.tsv))) FROM fact_keywords k "
        "WHERE k.fact_id = ANY(%s)",
        (wanted, list(fact_ids)),
    ).fetchall()
    return {fid: held / len(wanted) for fid, held in rows}


def keyword_scores(conn: Any, query: KeywordQuery, fact_ids: list[int]) -> Hits:
    """(fact_id, score) of those of `fact_ids` that match `query`, scored as
    `keyword_hits` scores them, best first."""
    if not fact_ids:
        return []
    found = conn.execute(
        "SELECT k.fact_id, ts_rank_cd(k.tsv, %s::tsquery) AS r FROM fact_keywords k "
        "WHERE k.fact_id = ANY(%s) AND k.tsv @@ %s::tsquery ORDER BY r DESC, k.fact_id",
        (query.tsquery, list(fact_ids), query.tsquery),
    ).fetchall()
    return _bounded(found)


def _bounded(found: Iterable[tuple[int, float]]) -> Hits:
    """ts_rank_cd's r, unbounded, as a score in [0, 1): r / (1 + r), the order kept."""
    return [(fid, r / (1.0 + r)) for fid, r in found]


def _best_first(rows: Iterable[tuple[Any, ...]]) -> Hits:
    """A union's keyword rows (part, fact_id, r, ...) in `keyword_scores`' order, scored
    (a union promises no order)."""
    return _bounded(sorted(((row[1], row[2]) for row in rows), key=lambda h: (-h[1], h[0])))


def keyword_hits(conn: Any, query: KeywordQuery, n: int) -> Hits:
    """The `n` best (fact_id, score) of `query` by ts_rank_cd, keyword ranking alone;
    score = r / (1 + r) in [0, 1), higher is better. The tsquery is an expression of the
    WHERE clause, not a joined function: joined, the planner filtered a sequential scan
    instead of reading the GIN index (3.4 ms against 0.3 ms for a tenant, measured)."""
    sql = "SELECT k.fact_id, ts_rank_cd(k.tsv, %s::tsquery) AS r FROM fact_keywords k "
    sql += "WHERE k.tsv @@ %s::tsquery"
    params: list[Any] = [query.tsquery, query.tsquery]
    if query.tenant is not None:
        sql, params = sql + " AND k.tenant_id = %s", [*params, query.tenant]
    found = conn.execute(f"{sql} ORDER BY r DESC, k.fact_id LIMIT %s", (*params, n)).fetchall()
    return _bounded(found)


# ---------------------------------------------------------------- hybrid search's first step


@dataclass(frozen=True)
class HybridFirst:
    """Hybrid search's first step, as the separate statements would answer it: the
    keyword and vector rankings' first batches (`keyword_hits`, `nearest`: hits, whether
    the ranking has no more), `admitted` of both batches' facts, and `similarities` of
    the keyword batch's facts."""

    keyword: tuple[Hits, bool]
    vector: tuple[Hits, bool]
    admitted: dict[int, int]
    cosines: dict[int, float]


def _vector_source(tenant: str | None, current: bool, sized: bool) -> tuple[str, str]:
    """(the first-batch vector subquery, a row with the scope's size) as `nearest` would
    scan: the exact scan of current vectors (`_current_scan`; with `_sized_scan`'s bounded
    count when the scope's size is not known), or every vector of a point-in-time search
    (`_scan`)."""
    where = ("is_current" if current else "TRUE") + (
        " AND tenant_id = %s" if tenant is not None else ""
    )
    scan = f"SELECT fact_id, embedding <=> (SELECT v FROM q) AS d FROM fact_vectors WHERE {where}"
    size = ""
    if sized:
        scan += " LIMIT %s"
        size = " UNION ALL SELECT 4, NULL, NULL, NULL, count(*) FROM "
        size += f"(SELECT 1 FROM fact_vectors WHERE {where} LIMIT %s) AS c"
    elif current:
        scan += " OFFSET 0"  # keeps the planner off the HNSW index (see _current_scan)
    return f"SELECT fact_id, d FROM ({scan}) AS s ORDER BY d LIMIT %s", size


def hybrid_first(
    conn: Any,
    at: str | None,
    known_at: str | None,
    tenant: str | None,
    prefix: Sequence[str],
    filter: dict[str, Any] | None,
    query: KeywordQuery | None,
    query_vec: bytes,
    keyword_n: int,
    vector_n: int,
) -> HybridFirst | None:
    """Hybrid search's first step in one statement (one round trip for four): see
    `HybridFirst`. None where `nearest` would walk the HNSW index (a current scope
    larger than `exact_max`): the caller takes the separate statements then.

    An optional feature of the statement set (`core.engine.OPTIONAL`): SQLite's vector
    ranking reads the in-process mirror, and its statements are not round trips."""
    current = at is None and known_at is None
    key = (conn.pgconn.host, conn.pgconn.port, conn.pgconn.db, tenant)
    seen = _small_seen.get(key) if current else None
    fresh = seen is not None and time.monotonic() - seen[0] < SMALL_TTL_S
    if fresh and not seen[1]:  # type: ignore[index]
        return None
    sized = current and not fresh
    vec = _vector(query_vec)
    scoped = [tenant] if tenant is not None else []
    source, size = _vector_source(tenant, current, sized)
    vec_params = [*scoped, *([exact_max(tenant) + 1] if sized else []), vector_n]
    size_params = [*scoped, exact_max(tenant) + 1] if sized else []
    kw_sql, kw_params = "SELECT NULL::bigint AS fact_id, NULL::float8 AS r WHERE FALSE", []
    if query is not None:
        kw_sql = "SELECT k.fact_id, ts_rank_cd(k.tsv, %s::tsquery) AS r FROM fact_keywords k "
        confined = query.tenant is not None
        kw_sql += "WHERE k.tsv @@ %s::tsquery" + (" AND k.tenant_id = %s" if confined else "")
        kw_sql += " ORDER BY r DESC, k.fact_id LIMIT %s"
        kw_params = [query.tsquery, query.tsquery, *([query.tenant] if confined else [])]
        kw_params.append(keyword_n)
    where, where_params = _search_scope(at, known_at, tenant, prefix, filter)
    candidates = "ARRAY(SELECT fact_id FROM kw UNION SELECT fact_id FROM vec)"
    rows = conn.execute(
        # The query vector is sent and parsed once (q), for the scan and the cosines.
        f"WITH q AS (SELECT %s::vector AS v), kw AS MATERIALIZED ({kw_sql}), "
        f"vec AS MATERIALIZED ({source}), "
        # The candidates as an array (an InitPlan), as `admitted` and `similarities` take
        # theirs: the planner reads them by fact_id, never joins the scope to them.
        f"ok AS ({_by_fact_id(candidates, where)}), "
        "cos AS (SELECT fact_id, MIN(embedding <=> (SELECT v FROM q)) AS d FROM fact_vectors "
        "WHERE fact_id = ANY(ARRAY(SELECT fact_id FROM kw)) GROUP BY fact_id) "
        # ts_rank_cd's real stays a column of its own: read as float8 it would score
        # 0.30000001 where keyword_hits reads 0.3.
        "SELECT 0, fact_id, r, NULL::float8, NULL::bigint FROM kw "
        "UNION ALL SELECT 1, fact_id, NULL, d, NULL FROM vec "
        "UNION ALL SELECT 2, fact_id, NULL, NULL, row_id FROM ok "
        f"UNION ALL SELECT 3, fact_id, NULL, d, NULL FROM cos{size}",
        (vec, *kw_params, *vec_params, *where_params, *size_params),
    ).fetchall()
    return _hybrid_answer(rows, key, sized, keyword_n, vector_n)


def _hybrid_answer(
    rows: list[tuple[Any, ...]], key: tuple[Any, ...], sized: bool, keyword_n: int, vector_n: int
) -> HybridFirst | None:
    """`hybrid_first`'s rows (kind, fact_id, rank, distance, row_id; kind 4: the scope's
    size in row_id) in its answer."""
    parts: dict[int, list[tuple[Any, ...]]] = {0: [], 1: [], 2: [], 3: [], 4: []}
    for row in rows:
        parts[row[0]].append(row)
    if sized:
        small = parts[4][0][4] <= exact_max(key[3])  # key: (host, port, db, tenant)
        _small_seen[key] = (time.monotonic(), small)
        if not small:
            return None
    # Each part in the order its own statement gives (a union promises none).
    keyword = _best_first(parts[0])
    found = parts[1]
    vector = sorted(((fid, 1.0 - d) for _, fid, _, d, _ in found), key=lambda h: (-h[1], h[0]))
    return HybridFirst(
        keyword=(keyword, len(keyword) < keyword_n),
        vector=(vector, len(found) < vector_n),
        admitted={fid: row_id for _, fid, _, _, row_id in parts[2]},
        cosines={fid: 1.0 - d for _, fid, _, d, _ in parts[3]},
    )


# ---------------------------------------------------------------- a small scope in one statement


def scope_scored(
    conn: Any,
    at: str | None,
    known_at: str | None,
    tenant: str | None,
    prefix: Sequence[str],
    filter: dict[str, Any] | None,
    limit: int,
    query: KeywordQuery | None,
    query_vec: bytes,
) -> ScopeSignals | None:
    """A search scope of up to `limit` facts scored in one statement (one round trip for
    three): see `ScopeSignals`. None when the scope holds more than `limit` facts (the
    signals are then not computed): the caller ranks it tenant-wide.

    An optional feature of the statement set (`core.engine.OPTIONAL`): one user's search
    in LangMem's layout is a small scope, and its statements were round trips each."""
    where, params = _search_scope(at, known_at, tenant, prefix, filter)
    members = "ARRAY(SELECT fact_id FROM ok)"
    small = f"(SELECT count(*) FROM ok) <= {int(limit)}"
    kw_sql, kw_params = "SELECT NULL::bigint AS fact_id, NULL::real AS r WHERE FALSE", []
    if query is not None:
        kw_sql = "SELECT k.fact_id, ts_rank_cd(k.tsv, %s::tsquery) AS r FROM fact_keywords k "
        kw_sql += f"WHERE {small} AND k.fact_id = ANY({members}) AND k.tsv @@ %s::tsquery"
        kw_params = [query.tsquery, query.tsquery]
    rows = conn.execute(
        f"WITH ok AS MATERIALIZED (SELECT f.fact_id, f.row_id FROM facts f WHERE {where} "
        f"LIMIT %s), kw AS ({kw_sql}), "
        "cos AS (SELECT fact_id, MIN(embedding <=> %s::vector) AS d FROM fact_vectors "
        f"WHERE {small} AND fact_id = ANY({members}) GROUP BY fact_id) "
        # ts_rank_cd's real stays a column of its own (see hybrid_first).
        "SELECT 0, fact_id, NULL::real, NULL::float8, row_id FROM ok "
        "UNION ALL SELECT 1, fact_id, r, NULL, NULL FROM kw "
        "UNION ALL SELECT 2, fact_id, NULL, d, NULL FROM cos",
        (*params, limit + 1, *kw_params, _vector(query_vec)),
    ).fetchall()
    parts: dict[int, list[tuple[Any, ...]]] = {0: [], 1: [], 2: []}
    for row in rows:
        parts[row[0]].append(row)
    if len(parts[0]) > limit:
        return None
    return ScopeSignals(
        members={fid: row_id for _, fid, _, _, row_id in parts[0]},
        keyword=_best_first(parts[1]),
        cosines={fid: 1.0 - d for _, fid, _, d, _ in parts[2]},
    )

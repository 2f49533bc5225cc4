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
- Vectors: pgvector. Exact (recall 1.0) in a tenant's scope (its current vectors through
  their tenant index) and at a point in time (every version). All tenants' current
  vectors are read through IVFFlat's lists where `vacuum()` trained them (a table of
  100,000 current vectors or more): approximate, at the probes where bench_table's
  realistic text kept issue 41's rule (`_listed_sql`). No HNSW walk: on text whose
  sentences repeat it missed the rule, over every row and over distinct vectors alike.
  There is no k ceiling: `capped` is always False.
- Text orderings use `COLLATE "C"`, SQLite's BINARY order, whatever the database's.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy
from psycopg.pq import TransactionStatus

from sgam_store.core import analysis, namespaces
from sgam_store.core.models import FactRow, ItemRow, ScopeSignals, StoredKey, latest_per_key
from sgam_store.engines.common import reads as portable
from sgam_store.engines.common.dialect import POSTGRES, export
from sgam_store.engines.postgres import connection
from sgam_store.engines.postgres.filters import filter_sql
from sgam_store.engines.postgres.versions import F_COLUMNS

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


# All tenants' current vectors are read through IVFFlat's lists (approximate) where
# `indexing.train_lists` built them (a table of at least LISTS_MIN_ROWS current vectors,
# at `vacuum()`); every other scope, and a store without them, is scanned exactly. The
# probes: a tenth of the lists, at least 10. At 100,000 memories (100 lists, probes 10)
# bench_table's all-tenant questions found the exact top 10 in full through the store in
# both layouts; at probes 5, 0.988 in LangMem's, one question none of it
# (benchmarks/pg_walk_recall.py --store). A larger table keeps that tenth.
PROBES_MIN = 10
PROBES_SHARE = 10  # probes = lists / PROBES_SHARE
LISTED_MAX = 1000  # a deeper batch than this scans exactly


def nearest(
    conn: Any, query_vec: bytes, n: int, tenant: str | None, current: bool
) -> tuple[Hits, bool, bool]:
    """(fact_id, similarity) of the `n` nearest vectors, best first; whether the ranking
    has no more; and False (no k ceiling, so never capped). All tenants' current vectors
    through the lists where they are trained (`_listed_sql`); otherwise an exact scan, of
    the scope's current vectors (`current`) or of every version's (point in time)."""
    vec = _vector(query_vec)
    if _listed(conn, n, tenant, current):
        found = conn.execute(_listed_sql("%s::vector"), [vec, n, n, vec, n, n])
    else:
        found = conn.execute(_nearest_sql(tenant, current), _nearest_params(query_vec, n, tenant))
    hits = sorted(((fid, 1.0 - d) for fid, d in found), key=lambda h: (-h[1], h[0]))
    return hits, len(hits) < n, False


def _listed(conn: Any, n: int, tenant: str | None, current: bool) -> bool:
    """Whether this batch reads the lists: all tenants' current vectors, lists trained,
    `n` within LISTED_MAX. Where it does, the same round trip sets the transaction's
    probes, and turns sequential scans off for it (a search's own, `engine.snapshot`):
    the planner's cost model may otherwise scan exactly."""
    if tenant is not None or not current or n > LISTED_MAX:
        return False
    inside = conn.info.transaction_status == TransactionStatus.INTRANS
    with nullcontext() if inside else conn.transaction():
        return bool(conn.execute(_LISTED, (PROBES_MIN, PROBES_SHARE)).fetchone()[2])


# The lists' count (NULL: no lists), the transaction's probes and scan settings from it.
_LISTED = (
    "SELECT set_config('ivfflat.probes', greatest(%s, l / %s)::text, true), "
    "set_config('enable_seqscan', CASE WHEN l IS NULL THEN current_setting('enable_seqscan') "
    "ELSE 'off' END, true), l IS NOT NULL FROM (SELECT (SELECT o.option_value::int "
    "FROM pg_class c, pg_options_to_table(c.reloptions) o "
    "WHERE c.oid = to_regclass('fact_vectors_lists') AND o.option_name = 'lists') AS l) AS i"
)


def _listed_sql(query: str) -> str:
    """The `n` nearest current vectors of all tenants through IVFFlat's lists (the probed
    nearest lists' rows, ranked exactly), or the exact scan (a one-time filter) should
    those hold fewer than `n`. Parameters: `query`'s, n, n, then the exact scan's.

    Lists, not an HNSW graph: memory text repeats, and a group of equal or nearly equal
    vectors (hundreds of "My partner's birthday is on <date> ...") is a sink in a graph
    (pgvector#837), where a walk over all tenants found 0.57-0.92 of the exact top 10 at
    100,000 memories, and 0.84-0.91 with each vector once (commit bb23f09, reverted). A
    question's near-copies fall in the same few lists, which a probe reads whole."""
    near = f"SELECT fact_id, embedding <=> {query} AS d FROM fact_vectors WHERE is_current "
    near += "ORDER BY d LIMIT %s"
    return (
        f"WITH near AS MATERIALIZED ({near}) "
        "SELECT fact_id, d FROM near WHERE (SELECT count(*) FROM near) >= %s "
        f"UNION ALL SELECT * FROM ({_nearest_sql(None, True, query)}) AS scan "
        "WHERE (SELECT count(*) FROM near) < %s"
    )


def _nearest_sql(tenant: str | None, current: bool, query: str = "%s::vector") -> str:
    """The exact scan of the scope's vectors: the tenant's (through `fact_vectors_tenant`
    when current) or every tenant's. Sorted over a fenced subquery (OFFSET 0), which no
    index can order: IVFFlat's lists (partial on current rows) would otherwise serve a
    tenant's current scan too, approximately."""
    where = " AND ".join(
        (["is_current"] if current else []) + (["tenant_id = %s"] if tenant is not None else [])
    )
    where = f" WHERE {where}" if where else ""
    scan = f"SELECT fact_id, embedding <=> {query} AS d FROM fact_vectors{where} OFFSET 0"
    return f"SELECT fact_id, d FROM ({scan}) AS s ORDER BY d LIMIT %s"


def _nearest_params(query_vec: bytes, n: int, tenant: str | None) -> list[Any]:
    """`_nearest_sql`'s parameters, in its placeholders' order."""
    return [_vector(query_vec), *([tenant] if tenant is not None else []), n]


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


def vectors(conn: Any, fact_ids: list[int]) -> list[tuple[int, bytes]]:
    """(fact_id, float32 bytes) of every stored field vector of `fact_ids` (see SQLite's);
    pgvector's text form, parsed here, as `transfer.export_rows` reads it."""
    rows = conn.execute(
        "SELECT fact_id, embedding::text FROM fact_vectors WHERE fact_id = ANY(%s)",
        (list(fact_ids),),
    ).fetchall()
    return [(fid, numpy.array(text.strip("[]").split(","), numpy.float32).tobytes())
            for fid, text in rows]  # fmt: skip


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


def keyword_recent(conn: Any, terms: list[str], tenant: str, n: int) -> tuple[list[int], bool]:
    """The fact ids of the `n` newest keyword rows of `tenant` holding each of `terms`
    (highest fact id first, every term's together, each id once), and whether that is
    every row of the tenant holding any of them (no term held by more than `n`): SQLite's
    `keyword_recent`, a tenant's keyword rows ordered by fact id as its rowids are. A
    statement a term, each its tsquery as a constant (see `keyword_hits`)."""
    found: dict[int, None] = {}
    complete = True
    for term in terms:
        rows = conn.execute(
            "SELECT k.fact_id FROM fact_keywords k WHERE k.tsv @@ %s::tsquery "
            "AND k.tenant_id = %s ORDER BY k.fact_id DESC LIMIT %s",
            (_quoted(term), tenant, n + 1),
        ).fetchall()
        complete = complete and len(rows) <= n
        found.update(dict.fromkeys(fid for (fid,) in rows[:n]))
    return list(found), complete


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
) -> HybridFirst:
    """Hybrid search's first step in one statement (one round trip for four): see
    `HybridFirst`. The vector batch is `nearest`'s.

    An optional feature of the statement set (`core.engine.OPTIONAL`): SQLite's vector
    ranking reads the in-process mirror, and its statements are not round trips."""
    current = at is None and known_at is None
    if _listed(conn, vector_n, tenant, current):
        source = _listed_sql("(SELECT v FROM q)")
        vec_params = [vector_n] * 4
    else:
        source = _nearest_sql(tenant, current, "(SELECT v FROM q)")
        vec_params = [*([tenant] if tenant is not None else []), vector_n]
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
        "UNION ALL SELECT 3, fact_id, NULL, d, NULL FROM cos",
        (_vector(query_vec), *kw_params, *vec_params, *where_params),
    ).fetchall()
    return _hybrid_answer(rows, keyword_n, vector_n)


def _hybrid_answer(rows: list[tuple[Any, ...]], keyword_n: int, vector_n: int) -> HybridFirst:
    """`hybrid_first`'s rows (kind, fact_id, rank, distance, row_id) in its answer."""
    parts: dict[int, list[tuple[Any, ...]]] = {0: [], 1: [], 2: [], 3: []}
    for row in rows:
        parts[row[0]].append(row)
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

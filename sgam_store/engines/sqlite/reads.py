"""The read side's statements on SQLite: get, listing, candidate checks, the keyword
(FTS5) and vector rankings, namespaces, and recall's state selection.

A read's scope arrives as plain pieces, first after the connection: `at` and `known_at`
(None: now) and `tenant` (None: any tenant); a search adds its namespace `prefix` and
`filter`. The read layer (`sgam_store.read`) decides what to ask; nothing here writes.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import math
import operator
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson

from sgam_store.core import analysis, namespaces, schema_migration
from sgam_store.core.models import FactRow, ItemRow, PageRow, StoredKey, latest_per_key
from sgam_store.engines.common import reads as portable
from sgam_store.engines.common.dialect import SQLITE, export
from sgam_store.engines.common.predicates import aliased_columns
from sgam_store.engines.sqlite.connection import driver
from sgam_store.engines.sqlite.filters import filter_sql
from sgam_store.engines.sqlite.indexing import (
    FACT_BITS,
    FACT_MASK,
    KEYWORD_ROWIDS,
    slot_range,
    stored_language,
    tenant_slot,
)
from sgam_store.engines.sqlite.migrations import KEYWORDS_DDL
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
    # A current scope of a tenant alone arrives with no prefix (`read.scope.narrow`): one
    # range of facts_current_count, not an OR of two index searches (a filtered listing at
    # 20k: 2.18 -> 1.75 ms).
    cond, params = _scope(at, known_at, tenant)
    ns_sql, ns_params = namespaces.prefix_sql("f.namespace", prefix)
    flt_sql, flt_params = filter_sql(filter)
    return _conjunction(cond, ns_sql, flt_sql), [*params, *ns_params, *flt_params]


@functools.lru_cache(maxsize=256)
def _conjunction(*conditions: str) -> str:
    """The conditions joined by AND, one string object per combination: a statement
    built on it is the same object call after call, whose hash Python keeps for the
    connection's statement cache and `_remembered` (a ~600-character text hashed anew
    on every listing otherwise)."""
    return " AND ".join(conditions)


def limit_sql(n: int) -> str:
    """`LIMIT n`, the number written into the statement, never bound: SQLite 3.50 (the
    packaged one) plans with a bound LIMIT's value, so binding one marks the statement
    expired and every run compiles it again (sqlite3Reprepare: 16% of the instructions of
    one user's hybrid search at 20k; a small scope's statement 105 -> 24 us). A store
    uses a few limits, each one statement in the connection's cache. `operator.index`
    lets integers alone into the text (a float limit is a TypeError, as a search's
    slice of its ranking raises)."""
    return f"LIMIT {operator.index(n)}"


# ---------------------------------------------------------------- items and listings


def get(
    conn: Any, at: str | None, known_at: str | None, tenant: str | None, namespace: str, key: str
) -> ItemRow | None:
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
    *,
    below_tenant: bool,
) -> list[ItemRow] | list[PageRow]:
    """A page of the versions visible in the search scope, newest belief first, as
    items are built from them. `below_tenant`: the prefix names a subject (or deeper)
    inside its tenant, not the tenant itself.

    A tenant's current first page is remembered by the connection while nothing changed
    and none of its rows expired (`_remembered`)."""
    where, params = _search_scope(at, known_at, tenant, prefix, filter)
    current = tenant is not None and at is None and known_at is None
    shape = _row_shape()
    hint = _listing_index(current, below_tenant)
    sql = _listing_sql(where, hint, shape, operator.index(limit))  # a float never hits the cache

    def read() -> tuple[list[ItemRow] | list[PageRow], str | None]:
        rows = list(map(shape._make, conn.execute(sql, (*params, offset))))
        return rows, _first_expiry(rows)

    if not current or offset:  # rows before an offset could expire unseen
        return read()[0]
    key = (sql, *params[1:])  # params[0]: now, checked apart; the limit is in `sql`
    return _remembered(conn, key, read, params[0])


def _row_shape() -> type[ItemRow] | type[PageRow]:
    """What items need of a row: its 6 columns, or all 10 once a value transform is
    registered."""
    return ItemRow if schema_migration.REGISTRY else PageRow


def _listing_index(current: bool, below_tenant: bool) -> str:
    """The index a listing reads, named where a planner without statistics (or with them:
    SQLite keeps none per namespace) walks the tenant's rows in the page's order instead.

    A subject's (or deeper) seeks its namespace range and sorts those rows: current ones
    in facts_current_count (tenant, namespace, ...), past scopes' versions in
    facts_versions (namespace, attribute, valid_from). Walking the tenant newest first
    until a page of the subject's turned up read all 20,000 of a tenant's facts for a
    subject holding 20 (issue 41: 6-10 ms against SqliteStore's 0.1 ms; as of an instant,
    32 ms). A tenant's current listing walks facts_current_recent (tenant, known_from,
    row_id) and stops at its page: named, because the change feed's facts_changes looks as
    good without statistics, and it walks every version, retired ones included. A
    tenant's past listing walks facts_changes, the planner's own choice."""
    if below_tenant:
        return " INDEXED BY facts_current_count" if current else " INDEXED BY facts_versions"
    return " INDEXED BY facts_current_recent" if current else ""


@functools.lru_cache(maxsize=256)
def _listing_sql(where: str, hint: str, shape: type[ItemRow] | type[PageRow], limit: int) -> str:
    return (
        f"SELECT {aliased_columns(shape)} FROM facts f{hint} WHERE {where} "
        f"ORDER BY f.known_from DESC, f.row_id DESC {limit_sql(limit)} OFFSET ?"
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
    # INDEXED BY: in a tenant view the planner would otherwise walk the tenant's
    # current facts (facts_current_count) instead of seeking each candidate.
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
    scope, ranked whole instead of through the tenant's rankings. A current scope is
    remembered by the connection while nothing changed and none of its facts expired
    (`_remembered`)."""
    where, params = _search_scope(at, known_at, tenant, prefix, filter)

    def read() -> tuple[dict[int, int], str | None]:
        # One row of two JSON arrays, not a row a fact: a user's 100 facts at 20k cost
        # 105 -> 83 us (SQLite builds a Python tuple a row); 25 at 5k the same.
        sql = _in_scope_sql(where, limit)
        fact_ids, row_ids, first, count = conn.execute(sql, params).fetchone()
        # A scope cut by the LIMIT is not kept: a fact past it could expire first.
        until = params[0] if count >= limit else first
        return dict(zip(orjson.loads(fact_ids), orjson.loads(row_ids), strict=True)), until

    if at is not None or known_at is not None:
        return read()[0]
    key = ("scope", where, *params[1:], limit)  # params[0]: now, checked apart
    return _remembered(conn, key, read, params[0])


@functools.lru_cache(maxsize=256)
def _in_scope_sql(where: str, limit: int) -> str:
    return (
        "SELECT json_group_array(fact_id), json_group_array(row_id), min(expires_at), "
        "count(*) FROM (SELECT f.fact_id, f.row_id, f.expires_at FROM facts f "
        f"WHERE {where} {limit_sql(limit)})"
    )


def _first_expiry(rows: list[ItemRow] | list[PageRow]) -> str | None:
    """The earliest expiry instant of these rows (None: none expires)."""
    expiries = [r.expires_at for r in rows if r.expires_at is not None]
    return min(expiries) if expiries else None


# Reads a connection remembers (`_remembered`) before it starts over.
REMEMBERED = 256


class _Memory:
    """Current reads a connection made, valid while its `data_version` (commits by other
    connections) and `total_changes` (its own writes, committed or not) stay."""

    __slots__ = ("reads", "version")

    def __init__(self, version: tuple[int, int]) -> None:
        self.version = version
        self.reads: dict[tuple[Any, ...], tuple[Any, str | None]] = {}


def _remembered(
    conn: Any, key: tuple[Any, ...], read: Callable[[], tuple[Any, str | None]], now: str
) -> Any:
    """The answer of `read()` for a current read, as the connection last got it for `key`
    when nothing was written since and `now` is before the expiry `read` gave with it
    (the first of its rows to expire: until then no row leaves it, and none enters, an
    expired row staying expired); else read now, and remembered.

    Only what a state of the file and the clock decide is kept, so the answer is the
    one the statement would give. A connection of a class without attributes (a
    caller's) keeps nothing.

    A key not remembered is read without asking the version first (a statement, 4 us of
    a 100 us listing): it is kept under the version the memory already has. Versions
    only grow, so if that one is stale, no later check matches it again and the memory
    starts over before anything in it is used."""
    state = getattr(conn, "__dict__", None)
    if state is None:
        return read()[0]
    memory = state.get("_sgam_memory")
    try:
        entry = memory.reads.get(key) if memory is not None else None
    except TypeError:  # a filter value that cannot be hashed
        return read()[0]
    if entry is None:
        if memory is None or len(memory.reads) >= REMEMBERED:
            memory = state["_sgam_memory"] = _Memory(_version(conn))
        entry = memory.reads[key] = read()
        return entry[0]
    version = _version(conn)
    if memory.version != version:
        memory = state["_sgam_memory"] = _Memory(version)
        entry = memory.reads[key] = read()
    elif entry[1] is not None and entry[1] <= now:
        entry = memory.reads[key] = read()
    return entry[0]


def _version(conn: Any) -> tuple[int, int]:
    """What changes whenever what a connection reads may have: `data_version` (another
    connection committed) and `total_changes` (its own writes, committed or not)."""
    return conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes


def namespaces_under(
    conn: Any, at: str | None, known_at: str | None, tenant: str | None, prefix: Sequence[str]
) -> list[str]:
    """The distinct namespaces (as stored text) of visible facts under `prefix`."""
    return portable.distinct_namespaces(
        conn, _scope(at, known_at, tenant), namespaces.prefix_sql("f.namespace", prefix)
    )


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
        f"{owners}GROUP BY fact_id ORDER BY d, fact_id {limit_sql(n)}",
        (query_vec, *params),
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


def vectors(conn: Any, fact_ids: list[int]) -> list[tuple[int, bytes]]:
    """(fact_id, float32 bytes) of every stored field vector of `fact_ids`: the vectors a
    centered search takes its scope's mean from (`read.scoring.centered`)."""
    return conn.execute(
        f"SELECT fact_id, embedding FROM vector_rows WHERE {in_list('fact_id')}",
        (as_list(fact_ids),),
    ).fetchall()


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
    the calibrated keyword score (`read.scoring.calibrated`), which depends on the query
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


def keyword_frequency(conn: Any, term: str, cap: int | None = None) -> int:
    """How many keyword rows hold `term` (0 if none).

    fts5vocab counts them by walking the term's whole posting list: milliseconds for a
    common term, so the read layer remembers the counts. Always exact, `cap` or not (the
    seam's bound, which PostgreSQL stops at): BM25 here weighs a term by the same count.
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
    sql = _keyword_hits_sql(query.rowids is not None, n)
    found = conn.execute(sql, (query.match, *(query.rowids or ()))).fetchall()
    return [(rowid & FACT_MASK, -b / (1.0 - b)) for rowid, b in found]


@functools.lru_cache(maxsize=64)
def _keyword_hits_sql(confined: bool, n: int) -> str:
    within = " AND rowid BETWEEN ? AND ?" if confined else ""
    return (
        "SELECT rowid, bm25(fact_fts) AS b FROM fact_fts WHERE fact_fts MATCH ?"
        f"{within} ORDER BY b {limit_sql(n)}"
    )


def keyword_recent(conn: Any, terms: list[str], tenant: str, n: int) -> tuple[list[int], bool]:
    """The fact ids of the `n` newest keyword rows of `tenant` holding each of `terms`
    (highest fact id first, every term's together, each id once), and whether that is
    every row of the tenant holding any of them (no term held by more than `n`).

    A large scope's keyword step ranks these (`read.candidates`): FTS5 walks a term's
    postings in rowid order without scoring them (BM25 reads each matching row's size:
    ~8,200 rows of "passport" at 100k, 7.6-14.8 ms), so this reads `n` rows a term
    whatever the tenant's size. FTS5 still steps over the postings of the tenants
    numbered after this one to reach its newest, as any ranking confined to a tenant
    steps over those outside it (no row read: 0.05 ms a term for LangMem's last user at
    100k, 0.43 ms for its first)."""
    slot = tenant_slot(conn, tenant)
    if slot is None:
        return [], True
    low, high = slot_range(slot)
    sql = f"{_RECENT} {limit_sql(n + 1)}"
    found: dict[int, None] = {}
    complete = True
    for term in terms:
        rows = conn.execute(sql, (_fts_match([term]), low, high)).fetchall()
        complete = complete and len(rows) <= n
        found.update(dict.fromkeys(rowid & FACT_MASK for (rowid,) in rows[:n]))
    return list(found), complete


_RECENT = (
    "SELECT rowid FROM fact_fts WHERE fact_fts MATCH ? AND rowid BETWEEN ? AND ? "
    "ORDER BY rowid DESC"
)


# ------------------------------------------------ keywords of a small scope, in process

# FTS5's bm25() constants (fts5_aux.c); `scope_keywords` scores as it does.
BM25_K1 = 1.2
BM25_B = 0.75
_ASCII_TOKEN = re.compile(r"[a-z0-9]+")
# Keyword rows up to which the mirror holds every row's tokens (about 330 bytes a row);
# a larger index is scored by FTS5 alone.
KEYWORD_MIRROR_ROWS = 200_000

# The keyword index's state in one statement: FTS5's averages record (rows and tokens
# in all) and its structure record, which every write to the index replaces (a new
# segment, a new write counter); the language the rows are analyzed in; the tenant's slot;
# and `highest_row_id`, which the common-term cut asks next (one statement, not two).
_KEYWORD_STATE = (
    "SELECT (SELECT block FROM fact_fts_data WHERE id = 1), "
    "(SELECT block FROM fact_fts_data WHERE id = 10), "
    "(SELECT value FROM sgam_meta WHERE key = 'language'), "
    "(SELECT slot FROM tenants WHERE tenant_id = ?), "
    "(SELECT max(row_id) FROM facts)"
)

# A keyword row as the mirror holds it: its text as stored, its tokens as FTS5's
# unicode61 splits it (" tok  tok  tok ": each between single spaces, two between
# neighbours, so that counting " tok " counts every occurrence; no token holds a space
# or a newline), and how many tokens it has.
_Row = tuple[str, str, int]


def _mirror_row(body: str, tokens: list[str]) -> _Row:
    return body, " " + "  ".join(tokens) + " ", len(tokens)


def _mirror_rows(bodies: list[tuple[int, str]]) -> dict[int, _Row]:
    """{rowid: row as the mirror holds it} of these (rowid, body): ASCII text split as
    unicode61 splits it (letters and digits, lowercased), any other by FTS5 itself
    (`_fts5_tokens`), all of them in one pass."""
    rows, other = {}, []
    for rowid, body in bodies:
        if body.isascii():
            rows[rowid] = _mirror_row(body, _ASCII_TOKEN.findall(body.lower()))
        else:
            other.append((rowid, body))
    tokens = _fts5_tokens([body for _, body in other]) if other else []
    for (rowid, body), split in zip(other, tokens, strict=True):
        rows[rowid] = _mirror_row(body, split)
    return rows


def _fts5_tokens(texts: list[str]) -> list[list[str]]:
    """The tokens FTS5 makes of each text, in order, from a private in-memory index with
    the keyword table's tokenizer (its `fts5vocab` instances). Text other than ASCII is
    unicode61's tables to split, fold and strip of diacritics ('ö' becomes 'o', 'ø' and
    'ł' stay letters), so FTS5 says; a scope holding such a row was scored by FTS5's
    bm25() instead, which walks every user's postings of each term (3.3 ms a search at
    20k, for the 7% of one user's searches with a 'Søren' or a 'Łukasz' among its rows)."""
    conn = driver().connect(":memory:")
    try:
        conn.execute(KEYWORDS_DDL)
        conn.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(fact_fts, 'instance')")
        conn.executemany("INSERT INTO fact_fts (rowid, body) VALUES (?, ?)", enumerate(texts))
        found: list[list[str]] = [[] for _ in texts]
        for doc, term in conn.execute("SELECT doc, term FROM tokens ORDER BY doc, offset"):
            found[doc].append(term)
        return found
    finally:
        conn.close()


class KeywordMirror:
    """Every keyword row's tokens, in process, so a small scope (one user's memories) is
    scored without FTS5: its posting lists are global, and a MATCH confined to one
    user's rowids still walks every user's postings of its terms, to count the rows
    holding each (bm25's document frequency).

    Read whole at the first search, in that state of the index (`_KeywordState`: any
    write to the index replaces its structure record); in a later state a scope's rows
    are read again once, their tokens reused where the text is unchanged, so nothing
    outlives the rows it was computed from. Document frequencies are counted once per
    state. A search holds the state it began with: another thread moving the mirror on
    changes nothing it reads, and the mirror changes under its lock only.
    """

    __slots__ = ("known", "lock", "state")

    def __init__(self) -> None:
        self.state = _KeywordState(None)
        self.known: dict[int, _Row] | None = None  # rowid -> row as last read, any state
        self.lock = threading.Lock()

    def scope(
        self, conn: Any, tenant: str, fact_ids: list[int], keep: bool = True
    ) -> tuple[ScopeKeywords | None, int]:
        """`scope_keywords` of this mirror, and `highest_row_id` read with its state: what
        the read layer calls (an optional engine feature, as the vector mirror is; an
        engine without one is asked by statements). `keep=False`: a set of facts met
        once (a large scope's keyword candidates), scored without being kept."""
        return scope_keywords_sized(conn, self, tenant, fact_ids, keep)


class _KeywordState:
    """The mirror for one state of the keyword index (`key`)."""

    __slots__ = ("average_length", "frequency", "key", "read", "scopes", "total_rows", "whole")

    def __init__(self, key: tuple[Any, ...] | None) -> None:
        self.key = key
        self.frequency: dict[str, int] = {}  # token -> keyword rows holding it
        self.whole = False  # every row was read in this state
        self.read: set[int] = set()  # else: the rowids read in this state
        self.scopes: dict[tuple[int, ...], ScopeKeywords] = {}  # by the scope's fact ids
        self.total_rows, self.average_length = 0, 0.0
        if key is not None:
            self.total_rows, *columns = _varints(key[0])
            self.average_length = sum(columns) / max(self.total_rows, 1)


def keyword_mirror() -> KeywordMirror:
    """A new, empty `KeywordMirror` (a ranker keeps one)."""
    return KeywordMirror()


class ScopeKeywords:
    """A small scope's keyword rows in one state of the index, scored as FTS5's bm25()
    scores them (`keyword_scores`): the same hits, scores and order. Kept by the state,
    so a scope searched again costs its statistics statement alone."""

    __slots__ = ("fact_ids", "joined", "lengths", "postings", "starts", "state", "texts")

    def __init__(self, state: _KeywordState, rows: list[tuple[int, str, int]]) -> None:
        self.state = state
        self.fact_ids = [fid for fid, _, _ in rows]
        self.texts = [text for _, text, _ in rows]
        self.lengths = [length for _, _, length in rows]
        self.postings: dict[str, list[int]] = {}  # token -> positions of rows holding it
        # Every row's tokens in one string, rows apart by a newline (never in a token or
        # between two), and where each row starts: a token is looked for once in the
        # scope, not once a row.
        self.joined = "\n".join(self.texts)
        self.starts = list(itertools.accumulate((len(t) + 1 for t in self.texts[:-1]), initial=0))

    def terms(self, text: str) -> list[str]:
        """`keyword_terms` of a query, in the language the state read with the index."""
        language = self.state.key[2] if self.state.key else None
        return analysis.analyzer(language or analysis.LEGACY_LANGUAGE).query_terms(text)

    @staticmethod
    def tokens(terms: list[str]) -> list[str] | None:
        """The index token of each term; None when a term is not one ASCII token (a
        phrase, or text whose folding only FTS5 can vouch for): ask FTS5 then."""
        found = [_ASCII_TOKEN.findall(t.lower()) if t.isascii() else [] for t in terms]
        return None if any(len(f) != 1 for f in found) else [f[0] for f in found]

    def _holding(self, token: str) -> list[int]:
        """Positions of the rows holding `token`, in order: a search of the joined rows
        from each match's next row on (a user's 25 rows at 5k: 25 substring tests a token
        before; an absent token, most of a query's, is one search)."""
        found = self.postings.get(token)
        if found is None:
            found = self.postings[token] = []
            spaced, joined, starts = f" {token} ", self.joined, self.starts
            at = joined.find(spaced)
            while at >= 0:
                row = bisect.bisect_right(starts, at) - 1
                found.append(row)
                if row + 1 == len(starts):
                    break
                at = joined.find(spaced, starts[row + 1])
        return found

    def holds(self, token: str) -> bool:
        """Whether any of the scope's rows holds `token`: one search of the joined rows,
        where its rows' positions (`_holding`) take a search per row holding it (a term
        in all of a user's 100 rows at 20k, which the common-term cut then drops)."""
        found = self.postings.get(token)
        return bool(found) if found is not None else f" {token} " in self.joined

    def holding(self, token: str) -> int:
        """How many of the scope's rows hold `token` (the scope's common-term cut)."""
        return len(self._holding(token))

    def frequency(self, conn: Any, token: str) -> int:
        """How many keyword rows of the whole index hold `token` (`keyword_frequency`),
        counted once per state."""
        counted = self.state.frequency
        if token not in counted:
            counted[token] = keyword_frequency(conn, token)
        return counted[token]

    def scores(self, conn: Any, tokens: list[str]) -> Hits:
        """(fact_id, score) of the scope's rows holding any of `tokens`, best first, as
        `keyword_scores` gives them for the same terms: fts5_aux.c's bm25, operation
        for operation, so the doubles are equal too. `conn` counts the rows holding a
        token the state has not counted yet.

        A token is counted in the rows holding it only: elsewhere its term is 0.0, and
        adding 0.0 leaves a double as it was, so each row's sum, taken in the tokens'
        order, is bm25's (a large scope's ~700 candidates of long rows: 2,960 -> 1,560
        substring counts a search)."""
        holding = [self._holding(token) for token in tokens]
        if not any(holding):
            return []
        n, avgdl = self.state.total_rows, self.state.average_length
        k1, b = BM25_K1, BM25_B
        texts, lengths = self.texts, self.lengths
        scores: dict[int, float] = {}
        for token, rows in zip(tokens, holding, strict=True):
            hits = self.frequency(conn, token)
            value = math.log((n - hits + 0.5) / (hits + 0.5))
            weight = value if value > 0.0 else 1e-6
            pattern = f" {token} "
            for i in rows:
                freq = float(texts[i].count(pattern))
                term = weight * (
                    (freq * (k1 + 1.0)) / (freq + k1 * (1 - b + b * lengths[i] / avgdl))
                )
                scores[i] = scores.get(i, 0.0) + term
        found = [(-1.0 * score, self.fact_ids[i]) for i, score in scores.items()]
        found.sort()
        return [(fact_id, -bm / (1.0 - bm)) for bm, fact_id in found]


class CandidateKeywords(ScopeKeywords):
    """A large scope's keyword candidates (`keep=False`), scored once: a token is looked
    for row by row, where a kept scope joins its rows first so that a token is looked for
    once in all of them (for a set scored once, the join cost more than it saved: ~700
    long LangMem rows, bm25 of 4 terms 4.1 -> 3.2 ms of CPU)."""

    __slots__ = ()

    def __init__(self, state: _KeywordState, rows: list[tuple[int, str, int]]) -> None:
        self.state = state
        self.fact_ids = [fid for fid, _, _ in rows]
        self.texts = [text for _, text, _ in rows]
        self.lengths = [length for _, _, length in rows]
        self.postings = {}
        self.joined, self.starts = "", []

    def _holding(self, token: str) -> list[int]:
        found = self.postings.get(token)
        if found is None:
            spaced = f" {token} "
            found = [i for i, text in enumerate(self.texts) if spaced in text]
            self.postings[token] = found
        return found

    def holds(self, token: str) -> bool:
        return bool(self._holding(token))


# Scopes a state of the keyword mirror keeps (`ScopeKeywords`) before it starts over.
KEYWORD_SCOPES = 1024


def scope_keywords(
    conn: Any, mirror: KeywordMirror, tenant: str, fact_ids: list[int]
) -> ScopeKeywords | None:
    """The keyword rows of `fact_ids` (all in `tenant`) for scoring in process; None when
    FTS5 must score them: an index larger than the mirror holds, or no keyword row in the
    tenant yet."""
    return scope_keywords_sized(conn, mirror, tenant, fact_ids)[0]


def scope_keywords_sized(
    conn: Any, mirror: KeywordMirror, tenant: str, fact_ids: list[int], keep: bool = True
) -> tuple[ScopeKeywords | None, int]:
    """`scope_keywords`, and `highest_row_id` from the same statement."""
    *key, slot, highest = conn.execute(_KEYWORD_STATE, (tenant,)).fetchone()
    return _scope_keywords(conn, mirror, fact_ids, tuple(key), slot, keep), highest or 0


def _scope_keywords(
    conn: Any,
    mirror: KeywordMirror,
    fact_ids: list[int],
    key: tuple[Any, ...],
    slot: int | None,
    keep: bool = True,
) -> ScopeKeywords | None:
    """`scope_keywords` in the index's state `key` (averages, structure, language).
    Without `keep`, the facts' rows are scored and not kept by the state (a large
    scope's keyword candidates, met once); past KEYWORD_MIRROR_ROWS they are read for
    this call alone, a bounded set, where a kept scope is left to FTS5."""
    if slot is None or key[0] is None:
        return None
    with mirror.lock:
        state = mirror.state
        if state.key != key:
            state = mirror.state = _KeywordState(key)
        base = slot << FACT_BITS
        if state.total_rows > KEYWORD_MIRROR_ROWS:
            mirror.known = None
            return None if keep else CandidateKeywords(state, _rows_of(conn, base, fact_ids))
        if not keep:
            return CandidateKeywords(state, _scope_rows(conn, mirror, state, base, fact_ids))
        scope = tuple(fact_ids)
        found = state.scopes.get(scope)
        if found is None:
            rows = _scope_rows(conn, mirror, state, base, fact_ids)
            if len(state.scopes) >= KEYWORD_SCOPES:
                state.scopes.clear()
            found = state.scopes[scope] = ScopeKeywords(state, rows)
        return found


def _rows_of(conn: Any, base: int, fact_ids: list[int]) -> list[tuple[int, str, int]]:
    """(fact_id, tokens, length) of these facts' keyword rows, read now (no mirror)."""
    known: dict[int, _Row] = {}
    _reread(conn, known, [base | fid for fid in fact_ids])
    return [(fid, row[1], row[2]) for fid in fact_ids if (row := known.get(base | fid))]


def _scope_rows(
    conn: Any, mirror: KeywordMirror, state: _KeywordState, base: int, fact_ids: list[int]
) -> list[tuple[int, str, int]]:
    """(fact_id, tokens, length) of the scope's keyword rows in `state`: the whole index
    read at the first search, a scope's rows after a write."""
    known = mirror.known
    if known is None or len(known) > 2 * KEYWORD_MIRROR_ROWS:
        rows = conn.execute("SELECT rowid, body FROM fact_fts").fetchall()
        known = mirror.known = _mirror_rows(rows)
        state.whole = True
    rowids = [base | fid for fid in fact_ids]
    if not state.whole:
        unread = [rowid for rowid in rowids if rowid not in state.read]
        if unread:
            _reread(conn, known, unread)
            state.read.update(unread)
    out = []
    for fid, rowid in zip(fact_ids, rowids, strict=True):
        if rowid not in known:
            continue  # no keyword row
        row = known[rowid]
        out.append((fid, row[1], row[2]))
    return out


def _reread(conn: Any, known: dict[int, _Row], rowids: list[int]) -> None:
    """Read these keyword rows again, keeping the tokens of a row whose text is unchanged."""
    read = dict(
        conn.execute(
            "SELECT rowid, body FROM fact_fts WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps(rowids),),
        ).fetchall()
    )
    changed = []
    for rowid in rowids:
        body = read.get(rowid)
        if body is None:
            known.pop(rowid, None)
        elif (row := known.get(rowid)) is None or row[0] != body:
            changed.append((rowid, body))
    known.update(_mirror_rows(changed))


def _varints(blob: bytes) -> list[int]:
    """The SQLite varints (big-endian, 7 bits a byte, the 9th byte whole) of an FTS5
    record."""
    values, i = [], 0
    while i < len(blob):
        value = 0
        for n in range(9):
            byte = blob[i]
            i += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return values

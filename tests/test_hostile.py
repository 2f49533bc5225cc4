"""Hostile input: every bad input gets a clear, typed error and writes nothing.

Each case runs against a seeded vector store (`max_value_bytes=1024`) and checks, around
the call: the `facts`, keyword, vector-row and episode row counts, every current item
and the schema are unchanged; the call raised; the error is of the documented type
(`sgam_store.core.errors`, or the builtin it derives from) and has a message.

Covered: naive, garbage and out-of-range timestamps; invalid namespace labels (store,
views, facts); unserializable, non-finite, too deep, too large and non-dict values;
wrong vector dimensions and non-finite vectors; unknown filter operators and value
types; SQL injection in filter keys (refused), filter values, namespaces, keys and
search queries (inert: they match only what literally equals them); writes through
read-only views; bad TTLs; and batches where one bad op must keep the good ones out.

Eighteen of these cases raised an untyped error or were accepted when this module was
written; they were fixed in the same issue and are ordinary cases now.

Not covered here: model-produced candidates that claim another tenant or episode
(`apply_updates`, the write path of another issue).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import GetOp, PutOp, SearchOp

from sgam_store import (
    DimensionMismatchError,
    InvalidFactError,
    InvalidFilterError,
    InvalidNamespaceError,
    InvalidTimestampError,
    MemoryFact,
    ReadOnlyViewError,
    SGAMError,
    SGAMStore,
    TenantScopeError,
    ValueTooLargeError,
)
from tests.db import rows, scalar

from .conftest import HashEmbeddings

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine

MAX_BYTES = 1024
DIMS = 64
PAST = "2026-06-01T09:00:00Z"


@dataclass
class Hostile:
    store: SGAMStore
    path: str

    def other(self, **kwargs: Any) -> SGAMStore:
        """Another store on the same file (e.g. with a wrong index config)."""
        return SGAMStore(self.path, **kwargs)


def fact(**overrides: Any) -> MemoryFact:
    fields = dict(tenant_id="acme", subject="mira", attribute="deadline", value="2026-07-15",
                  valid_from=PAST, source_episode_id="external:test")  # fmt: skip
    return MemoryFact(**{**fields, **overrides})


@pytest.fixture
def hostile(target: str) -> Any:
    index = {"dims": DIMS, "embed": HashEmbeddings(DIMS), "fields": ["text"]}
    with SGAMStore.from_conn_string(target, index=index, max_value_bytes=MAX_BYTES) as s:
        s.setup()
        s.replace_fact(fact())
        s.put(("acme", "mira"), "note", {"text": "passport deadline June 30", "n": 1})
        s.put(("acme2", "mira"), "note", {"text": "acme2 secret", "n": 2})
        yield Hostile(s, target)


def state(store: SGAMStore) -> tuple:
    """Everything a write could change, read through a fresh statement each time."""
    postgres = type(store.engine).__name__ == "PostgresEngine"
    tables = ("fact_keywords", "fact_vectors") if postgres else ("fact_fts", "vector_rows")
    counts = tuple(
        scalar(store, f"SELECT count(*) FROM {table}") for table in ("facts", *tables, "episodes")
    )
    current = sorted(
        rows(
            store,
            "SELECT namespace, attribute, value, valid_from, valid_to FROM facts "
            "WHERE known_to IS NULL",
        )
    )
    catalog = "pg_class" if postgres else "sqlite_master"
    schema = scalar(store, f"SELECT count(*) FROM {catalog}")
    return counts, current, schema


# ------------------------------------------------------------------ the cases


class Deep:
    """Nested lists deeper than any JSON encoder or SQLite's JSON parser accepts."""

    @staticmethod
    def value(depth: int = 5000) -> dict:
        node: list = []
        for _ in range(depth):
            node = [node]
        return {"x": node}


def circular() -> dict:
    d: dict = {}
    d["self"] = d
    return d


@dataclass(frozen=True)
class Case:
    id: str
    call: Callable[[Hostile], Any]
    raises: type[BaseException] | tuple[type[BaseException], ...]


def put(value: Any, ns: tuple = ("acme", "mira"), key: str = "k", **kw: Any) -> Callable:
    return lambda h: h.store.put(ns, key, value, **kw)


def as_of(*args: Any) -> Callable:
    return lambda h: h.store.as_of(*args)


NAIVE = "2026-06-01T09:00:00"
BAD_TIMESTAMPS = [NAIVE, datetime(2026, 6, 1, 9), "garbage", "", " ", None, 1234, 1.5,
                  b"2026-06-01T09:00:00Z", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
                  "2026-06-01T25:00:00Z", "2026-06-01", "yesterday", "2026-06-01T09:00:00+25:00",
                  "2026-06-01T09:00:00 UTC"]  # fmt: skip
TIMESTAMP_CASES = [
    *(Case(f"as_of({t!r})", as_of(t), InvalidTimestampError) for t in BAD_TIMESTAMPS),
    Case("as_of(known_at=naive)", as_of(PAST, NAIVE), InvalidTimestampError),
    Case("fact_at(at=naive)", lambda h: h.store.fact_at("acme", "mira", "deadline", at=NAIVE),
         InvalidTimestampError),
    Case("fact_at(known_at=garbage)",
         lambda h: h.store.fact_at("acme", "mira", "deadline", known_at="garbage"),
         InvalidTimestampError),
    Case("history(known_at=naive)",
         lambda h: h.store.history("acme", "mira", "deadline", known_at=NAIVE),
         InvalidTimestampError),
    Case("view.as_of(naive)", lambda h: h.store.for_tenant("acme").as_of(NAIVE),
         InvalidTimestampError),
    # MemoryFact raises its own validators' typed errors, not pydantic's wrapper.
    Case("MemoryFact(valid_from=naive)", lambda h: h.store.replace_fact(fact(valid_from=NAIVE)),
         InvalidTimestampError),
    Case("MemoryFact(valid_from=garbage)",
         lambda h: h.store.replace_fact(fact(valid_from="soon")), InvalidTimestampError),
    Case("MemoryFact(expires_at=naive)",
         lambda h: h.store.replace_fact(fact(expires_at=NAIVE)), InvalidTimestampError),
    # Aware, parseable, but UTC falls outside datetime's range.
    Case("as_of(9999-12-31T23:00-05:00)", as_of("9999-12-31T23:00:00-05:00"),
         InvalidTimestampError),
    Case("as_of(0001-01-01T00:00+05:00)", as_of("0001-01-01T00:00:00+05:00"),
         InvalidTimestampError),
    Case("fact_at(at=9999-12-31T23:00-05:00)",
         lambda h: h.store.fact_at("acme", "mira", "deadline", at="9999-12-31T23:00:00-05:00"),
         InvalidTimestampError),
    Case("MemoryFact(valid_from=9999-12-31T23:59-01:00)",
         lambda h: h.store.replace_fact(fact(valid_from="9999-12-31T23:59:00-01:00")),
         InvalidTimestampError),
]  # fmt: skip

BAD_ITEM_NAMESPACES = [("a.b",), ("",), (), ("langgraph",), ("acme", "*"), (1,),
                       ("acme", None), ("a\x00",), ("acme", "x.y"), ("acme", "")]  # fmt: skip
NAMESPACE_CASES = [
    *(Case(f"put{ns!r}", put({"a": 1}, ns), InvalidNamespaceError) for ns in BAD_ITEM_NAMESPACES),
    *(Case(f"batch put{ns!r}", lambda h, ns=ns: h.store.batch([PutOp(ns, "k", {"a": 1})]),
           InvalidNamespaceError) for ns in BAD_ITEM_NAMESPACES),
    Case("get('a.b',)", lambda h: h.store.get(("a.b",), "k"), InvalidNamespaceError),
    Case("get('acme','*')", lambda h: h.store.get(("acme", "*"), "k"), InvalidNamespaceError),
    Case("delete('a.b',)", lambda h: h.store.delete(("a.b",), "k"), InvalidNamespaceError),
    Case("search('a.b',)", lambda h: h.store.search(("a.b",)), InvalidNamespaceError),
    Case("search('acme','')", lambda h: h.store.search(("acme", "")), InvalidNamespaceError),
    Case("list_namespaces(prefix=('a.b',))",
         lambda h: h.store.list_namespaces(prefix=("a.b",)), InvalidNamespaceError),
    Case("list_namespaces(suffix=('',))",
         lambda h: h.store.list_namespaces(suffix=("",)), InvalidNamespaceError),
    Case("for_tenant('a.b')", lambda h: h.store.for_tenant("a.b"), InvalidNamespaceError),
    Case("for_tenant('')", lambda h: h.store.for_tenant(""), InvalidNamespaceError),
    Case("for_tenant('langgraph')", lambda h: h.store.for_tenant("langgraph"),
         InvalidNamespaceError),
    Case("for_tenant(5)", lambda h: h.store.for_tenant(5), InvalidNamespaceError),
    Case("view.put(('x.y',))", lambda h: h.store.for_tenant("acme").put(("x.y",), "k", {"a": 1}),
         InvalidNamespaceError),
    Case("view.put(('acme2.mira',))",
         lambda h: h.store.for_tenant("acme").put(("acme2.mira",), "note", {"a": 1}),
         InvalidNamespaceError),
    Case("view('*').put", lambda h: h.store.for_tenant("*").put(("x",), "k", {"a": 1}),
         InvalidNamespaceError),
    Case("view.get(('',))", lambda h: h.store.for_tenant("acme").get(("",), "k"),
         InvalidNamespaceError),
    Case("view.for_tenant(other)", lambda h: h.store.for_tenant("acme").for_tenant("acme2"),
         TenantScopeError),
    Case("MemoryFact(tenant_id='a.b')", lambda h: h.store.replace_fact(fact(tenant_id="a.b")),
         ValueError),
    Case("MemoryFact(tenant_id='')", lambda h: h.store.replace_fact(fact(tenant_id="")),
         ValueError),
    Case("MemoryFact(subject='x..y')", lambda h: h.store.replace_fact(fact(subject="x..y")),
         ValueError),
    Case("MemoryFact(attribute='')", lambda h: h.store.replace_fact(fact(attribute="")),
         ValueError),
    Case("MemoryFact(source_episode_id='')",
         lambda h: h.store.replace_fact(fact(source_episode_id="")), ValueError),
    Case("fact_at('a.b', ...)", lambda h: h.store.fact_at("a.b", "mira", "deadline"),
         InvalidNamespaceError),
    Case("history('acme', 'x..y', ...)", lambda h: h.store.history("acme", "x..y", "deadline"),
         InvalidNamespaceError),
    # A lone surrogate cannot be stored as UTF-8 text.
    Case("put(('\\ud800',))", put({"a": 1}, ("\ud800",)), InvalidNamespaceError),
    Case("put(('acme', '\\ud800'))", put({"a": 1}, ("acme", "\ud800")), InvalidNamespaceError),
]  # fmt: skip

VALUE_CASES = [
    Case("set value", put({"x": {1, 2}}), InvalidFactError),
    Case("bytes value", put({"x": b"raw"}), InvalidFactError),
    Case("object value", put({"x": object()}), InvalidFactError),
    Case("circular value", lambda h: h.store.put(("acme", "mira"), "k", circular()),
         InvalidFactError),
    Case("NaN value", put({"x": math.nan}), InvalidFactError),
    Case("infinite value", put({"x": -math.inf}), InvalidFactError),
    Case("tuple key", put({(1, 2): "x"}), InvalidFactError),
    Case("replace_fact(set)", lambda h: h.store.replace_fact(fact(value={1})), InvalidFactError),
    Case("too large put", put({"text": "x" * 2000}), ValueTooLargeError),
    Case("too large multibyte put", put({"text": "é" * 600}), ValueTooLargeError),
    Case("too large replace_fact", lambda h: h.store.replace_fact(fact(value="y" * 5000)),
         ValueTooLargeError),
    Case("too large view put",
         lambda h: h.store.for_tenant("acme").put(("mira",), "k", {"text": "z" * 4000}),
         ValueTooLargeError),
    Case("deeply nested value", lambda h: h.store.put(("acme", "mira"), "k", Deep.value()),
         InvalidFactError),
    Case("lone surrogate in value", put({"text": "\ud800"}), InvalidFactError),
    Case("lone surrogate in key", put({"a": 1}, key="k\udc00"), InvalidFactError),
    Case("lone surrogate in get key", lambda h: h.store.get(("acme", "mira"), "\ud800"),
         InvalidFactError),
    Case("lone surrogate in attribute",
         lambda h: h.store.replace_fact(fact(attribute="dead\ud800line")), InvalidFactError),
    Case("lone surrogate in source episode",
         lambda h: h.store.replace_fact(fact(source_episode_id="e\ud800")), InvalidFactError),
    # BaseStore values are dicts; a scalar put would read back as {"value": ...}.
    *(Case(f"non-dict put {v!r}", put(v), InvalidFactError)
      for v in ("text", 5, [1, 2], True)),
    Case("ttl=NaN", put({"a": 1}, ttl=math.nan), SGAMError),
    Case("ttl=inf", put({"a": 1}, ttl=math.inf), SGAMError),
    Case("ttl='10'", put({"a": 1}, ttl="10"), SGAMError),
    Case("ttl=-5", put({"a": 1}, ttl=-5), SGAMError),
    Case("ttl=0", put({"a": 1}, ttl=0), SGAMError),
]  # fmt: skip


class WrongDims(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[0.5] * (DIMS // 2) for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [0.5] * (DIMS // 2)


class NaNs(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[math.nan] * DIMS for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [math.nan] * DIMS


def with_embedder(embed: Embeddings, action: Callable[[SGAMStore], Any]) -> Callable:
    def call(h: Hostile) -> Any:
        s = h.other(index={"dims": DIMS, "embed": embed, "fields": ["text"]})
        try:
            return action(s)
        finally:
            s.close()

    return call


def reopen_with_dims(h: Hostile, dims: int) -> None:
    s = h.other(index={"dims": dims, "embed": HashEmbeddings(dims)})
    try:
        s.setup()
    finally:
        s.close()


VECTOR_CASES = [
    Case("put, embedder of wrong dims",
         with_embedder(WrongDims(), lambda s: s.put(("acme", "mira"), "k", {"text": "t"})),
         DimensionMismatchError),
    Case("replace_fact, embedder of wrong dims",
         with_embedder(WrongDims(), lambda s: s.replace_fact(
             fact(value={"text": "t"}, valid_from="2026-06-01T09:00:01Z"))),
         DimensionMismatchError),
    Case("search, embedder of wrong dims",
         with_embedder(WrongDims(), lambda s: s.search(("acme",), query="passport")),
         DimensionMismatchError),
    Case("reopen with other dims", lambda h: reopen_with_dims(h, 32), DimensionMismatchError),
    Case("put, embedder returning NaN",
         with_embedder(NaNs(), lambda s: s.put(("acme", "mira"), "k", {"text": "t"})),
         InvalidFactError),
]  # fmt: skip

UNKNOWN_OPERATORS = ["$regex", "$in", "$nin", "$exists", "$or", "$like", "$glob", "$", "$EQ",
                     "$eq ", "$match"]  # fmt: skip
FILTER_CASES = [
    *(Case(f"filter operator {op}",
           lambda h, op=op: h.store.search(("acme",), filter={"n": {op: 1}}), InvalidFilterError)
      for op in UNKNOWN_OPERATORS),
    *(Case(f"filter value {type(v).__name__}",
           lambda h, v=v: h.store.search(("acme",), filter={"n": v}), InvalidFilterError)
      for v in ({1, 2}, object(), b"1", 1j)),
    Case("$gt on a bool", lambda h: h.store.search(("acme",), filter={"n": {"$gt": True}}),
         InvalidFilterError),
    Case("$lt on a list", lambda h: h.store.search(("acme",), filter={"n": {"$lt": [1]}}),
         InvalidFilterError),
    Case("bad filter in a tenant view",
         lambda h: h.store.for_tenant("acme").search((), filter={"n": {"$where": "1"}}),
         InvalidFilterError),
    Case("bad filter with a query",
         lambda h: h.store.search(("acme",), query="passport", filter={"n": {"$in": [1]}}),
         InvalidFilterError),
    Case("non-string filter key", lambda h: h.store.search(("acme",), filter={1: 1}),
         InvalidFilterError),
]  # fmt: skip

SQL_KEYS = ["n') OR 1=1 --", "n'; DROP TABLE facts; --", 'n" OR "1"="1', "n)", "$.n",
            "n[0]", "n; DELETE FROM facts", "n\x00", "", ".", "n..m", "n.", "json_extract(value)",
            "n' UNION SELECT * FROM facts --", "n/*", "n%", "n*"]  # fmt: skip
INJECTION_KEY_CASES = [
    Case(
        f"filter key {k!r}",
        lambda h, k=k: h.store.search(("acme",), filter={k: 1}),
        InvalidFilterError,
    )
    for k in SQL_KEYS
]


def ro_cases() -> list[Case]:
    past = "2026-06-02T00:00:00Z"
    value = {"text": "via a read-only view"}
    return [
        Case("as_of.put", lambda h: h.store.as_of(past).put(("acme", "mira"), "k", value),
             ReadOnlyViewError),
        Case("as_of.delete", lambda h: h.store.as_of(past).delete(("acme", "mira"), "note"),
             ReadOnlyViewError),
        Case("as_of.batch(get, put)",
             lambda h: h.store.as_of(past).batch([GetOp(("acme", "mira"), "note"),
                                                  PutOp(("acme", "mira"), "k", value)]),
             ReadOnlyViewError),
        Case("as_of(known_at).put",
             lambda h: h.store.as_of(past, past).put(("acme", "mira"), "k", value),
             ReadOnlyViewError),
        Case("as_of.for_tenant.put",
             lambda h: h.store.as_of(past).for_tenant("acme").put(("mira",), "k", value),
             ReadOnlyViewError),
        Case("for_tenant.as_of.put",
             lambda h: h.store.for_tenant("acme").as_of(past).put(("mira",), "k", value),
             ReadOnlyViewError),
        Case("for_tenant.as_of.delete",
             lambda h: h.store.for_tenant("acme").as_of(past).delete(("mira",), "note"),
             ReadOnlyViewError),
        Case("as_of.abatch(put)",
             lambda h: __import__("asyncio").run(
                 h.store.as_of(past).abatch([PutOp(("acme", "mira"), "k", value)])),
             ReadOnlyViewError),
    ]  # fmt: skip


GOOD = PutOp(("acme", "mira"), "good", {"text": "should not land"})
BATCH_CASES = [
    Case("batch [good, bad namespace]",
         lambda h: h.store.batch([GOOD, PutOp(("a.b",), "k", {"a": 1})]), InvalidNamespaceError),
    Case("batch [good, too large]",
         lambda h: h.store.batch([GOOD, PutOp(("acme", "x"), "k", {"t": "x" * 3000})]),
         ValueTooLargeError),
    Case("batch [good, unserializable]",
         lambda h: h.store.batch([GOOD, PutOp(("acme", "x"), "k", {"t": {1}})]),
         InvalidFactError),
    Case("batch [good, bad filter search]",
         lambda h: h.store.batch([GOOD, SearchOp(("acme",), filter={"n": {"$in": [1]}})]),
         InvalidFilterError),
    Case("batch [good, read-only-view put]",
         lambda h: h.store.as_of(PAST).batch([GOOD]), ReadOnlyViewError),
    Case("tenant view batch [good, bad namespace]",
         lambda h: h.store.for_tenant("acme").batch(
             [PutOp(("mira",), "good", {"a": 1}), PutOp(("x.y",), "k", {"a": 1})]),
         InvalidNamespaceError),
    Case("batch [good, ttl=NaN]",
         lambda h: h.store.batch([GOOD, PutOp(("acme", "x"), "k", {"a": 1}, ttl=math.nan)]),
         SGAMError),
]  # fmt: skip

CASES = [*TIMESTAMP_CASES, *NAMESPACE_CASES, *VALUE_CASES, *VECTOR_CASES, *FILTER_CASES,
         *INJECTION_KEY_CASES, *ro_cases(), *BATCH_CASES]  # fmt: skip


def run(h: Hostile, case: Case) -> BaseException | None:
    """Call the case; assert it changed nothing; return what it raised."""
    before = state(h.store)
    try:
        case.call(h)
    except Exception as exc:
        raised: BaseException | None = exc
    else:
        raised = None
    assert state(h.store) == before, f"{case.id}: a rejected input changed the store"
    return raised


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_is_refused_with_a_typed_error_and_writes_nothing(
    hostile: Hostile, case: Case
) -> None:
    raised = run(hostile, case)
    assert raised is not None, f"{case.id} was accepted"
    assert isinstance(raised, case.raises), f"{case.id}: {type(raised).__name__}: {raised}"
    assert str(raised).strip(), f"{case.id}: {type(raised).__name__} without a message"
    # the store still works afterwards
    assert hostile.store.get(("acme", "mira"), "note").value["n"] == 1


# ------------------------------------------------------------------ injection is inert

SQL_VALUES = ["' OR '1'='1", "'; DROP TABLE facts; --", '" OR ""="', "1 OR 1=1",
              "x') OR ('1'='1", "%", "_", "*", "[a-z]*", "\\", "NULL", "true", "1",
              "json('{}')", "' UNION SELECT value FROM facts --"]  # fmt: skip


def test_sql_in_filter_values_matches_only_itself(hostile: Hostile) -> None:
    store = hostile.store
    before = state(store)
    for payload in SQL_VALUES:
        for flt in ({"text": payload}, {"text": {"$eq": payload}}, {"n": payload},
                    {"text": {"$gte": payload, "$lte": payload}}):  # fmt: skip
            assert store.search(("acme",), filter=flt) == [], (payload, flt)
            assert store.for_tenant("acme2").search((), filter=flt) == []
    assert state(store) == before
    # Stored as a value, each payload is found by exactly that value and nothing else.
    for i, payload in enumerate(SQL_VALUES):
        store.put(("inj", "x"), f"k{i}", {"text": payload})
    for i, payload in enumerate(SQL_VALUES):
        hits = store.search(("inj",), filter={"text": payload}, limit=100)
        assert [(h.key, h.value["text"]) for h in hits] == [(f"k{i}", payload)], payload
    assert len(store.search(("inj",), limit=100)) == len(SQL_VALUES)


def test_sql_in_namespaces_and_keys_is_stored_literally(hostile: Hostile) -> None:
    store = hostile.store
    labels = [p for p in SQL_VALUES if "." not in p and p != "*"] + ["acme%", "acme_", "acm?"]
    for i, label in enumerate(labels):
        store.put((label, label), label, {"text": f"payload {i}", "i": i})
    for i, label in enumerate(labels):
        assert store.get((label, label), label).value["i"] == i
        hits = store.search((label,), limit=100)
        assert [(tuple(h.namespace), h.key) for h in hits] == [((label, label), label)], label
        assert store.list_namespaces(prefix=(label,)) == [(label, label)]
        view = store.for_tenant(label)
        assert [h.value["i"] for h in view.search((), limit=100)] == [i]
        assert [h.value["i"] for h in view.search((), query="payload", limit=100)] == [i]
        assert view.list_namespaces() == [(label,)]
    # The seeded tenants are untouched and the tables are all still there.
    assert store.get(("acme", "mira"), "note").value["n"] == 1
    assert len(store.search(("acme",), limit=100)) == 2
    assert store.fact_at("acme", "mira", "deadline").value == "2026-07-15"
    for table in ("facts", "episodes"):  # a label run as SQL could have dropped them
        assert scalar(store, f"SELECT count(*) FROM {table}") == len(
            rows(store, f"SELECT 1 FROM {table}")
        )


FTS_QUERIES = ['" OR * NEAR(', 'passport" OR "x', "*", "%", "AND", "NOT passport", "passport)",
               "fact_fts MATCH '*'", "'; DROP TABLE fact_fts; --", "^passport", "pass*",
               "{text}: passport", "NEAR(passport deadline, 0)", "a" * 5000]  # fmt: skip


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "vector"])
def test_search_queries_are_never_parsed_as_syntax(hostile: Hostile, mode: str) -> None:
    """FTS5 query syntax and SQL in `query=` are plain words; results stay in scope."""
    store = hostile.other(
        index={"dims": DIMS, "embed": HashEmbeddings(DIMS), "fields": ["text"]},
        retrieval={"mode": mode},
    )
    try:
        before = state(hostile.store)
        for q in FTS_QUERIES:
            hits = store.search(("acme",), query=q, limit=50)
            assert all(h.namespace[0] == "acme" for h in hits), q
            assert all(h.value.get("n") != 2 for h in hits), f"acme2's data for {q!r}"
            view_hits = store.for_tenant("acme2").search((), query=q, limit=50)
            assert all(h.value["n"] == 2 for h in view_hits), q
        assert state(hostile.store) == before
    finally:
        store.close()


def test_a_query_that_embeds_to_the_zero_vector_does_not_crash(hostile: Hostile) -> None:
    """HashEmbeddings of '%' is the zero vector: sqlite-vec's cosine distance is NULL."""
    hits = hostile.store.search(("acme",), query="%")
    assert all(h.namespace[0] == "acme" for h in hits)


def test_value_size_limit_is_exact_in_bytes(db_path: str) -> None:
    """max_value_bytes counts UTF-8 bytes of the stored JSON: at the limit it fits."""
    with SGAMStore.from_conn_string(db_path, max_value_bytes=MAX_BYTES) as store:
        store.setup()
        overhead = len(json.dumps({"t": ""}).encode())
        store.put(("acme", "x"), "fits", {"t": "x" * (MAX_BYTES - overhead)})
        with pytest.raises(ValueTooLargeError):
            store.put(("acme", "x"), "over", {"t": "x" * (MAX_BYTES - overhead + 1)})
        two_byte = (MAX_BYTES - overhead) // 2
        store.put(("acme", "x"), "fits2", {"t": "é" * two_byte})
        with pytest.raises(ValueTooLargeError):
            store.put(("acme", "x"), "over2", {"t": "é" * (two_byte + 1)})
        assert store.get(("acme", "x"), "over") is None
        assert store.get(("acme", "x"), "over2") is None
        assert len(store.search(("acme",))) == 2


def test_bad_input_count() -> None:
    """How many distinct bad inputs this module tries (reported in the issue's note)."""
    total = len(CASES) + len(SQL_VALUES) * 5 + len(FTS_QUERIES) * 3 + 2
    print(f"\n[hostile] {total} bad inputs tried")
    assert len(CASES) > 100

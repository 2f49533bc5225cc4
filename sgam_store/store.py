"""SGAMStore: the LangGraph `BaseStore` adapter over the ledger.

Write flow (only it changes state): validate every op -> embed outside the lock ->
one engine write transaction, shared with other callers' puts that arrive meanwhile
(write/group.py): the ledger's rule per fact -> keyword and vector rows -> commit.
Read flow: a `query.Scope` -> the engine's read statements.
Views (`as_of`, `for_tenant`) are the same flows with another Scope.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from sgam_store import ledger
from sgam_store.core import clock, namespaces, schema_migration
from sgam_store.core.errors import (
    InvalidEpisodeError,
    InvalidFactError,
    InvalidQueryError,
    InvalidTimestampError,
    ReadOnlyViewError,
)
from sgam_store.core.models import (
    DEFAULT_MEMORY_TYPE,
    SCHEMA_VERSION,
    Change,
    Fact,
    FactDraft,
    ForeignItem,
    ImportReport,
    MemoryFact,
    PurgeReport,
)
from sgam_store.engines import langgraph_items, mask_uri, open_engine
from sgam_store.ledger import changes, episodes, names
from sgam_store.lifecycle import importing, keywords, retention
from sgam_store.lifecycle.backfill import BackfillReport, EmbedReport, run_backfill, run_embedding
from sgam_store.lifecycle.retention import RetentionReport
from sgam_store.read import explain, search
from sgam_store.read.coalesce import GetCoalescer, only_gets
from sgam_store.read.index import IndexSpec
from sgam_store.read.pipeline import Ranker
from sgam_store.read.query import RetrievalConfig, Scope
from sgam_store.views import View
from sgam_store.write import service, supersession
from sgam_store.write.facts import FactWriter
from sgam_store.write.group import AsyncGather, GroupCommit

if TYPE_CHECKING:
    from sgam_store.core.models import SupersessionDecision
    from sgam_store.ledger.policies import ConflictPolicy
    from sgam_store.write.candidates import MemoryUpdate
    from sgam_store.write.schemas import MemorySchema

DEFAULT_SOURCE = "external:store.put"
CURRENT = Scope()


class _RolledBack(Exception):
    """Carries a dry-run erasure's report out of the transaction it rolls back."""

    def __init__(self, report: PurgeReport) -> None:
        super().__init__("dry run")
        self.report = report


_Text = tuple[int, str, str]  # a text to embed: (its put's position, field, text)


@dataclass
class _PreparedPut:
    """A validated put: encoded value (None = delete), keyword text, vectors and TTL.

    Computed once, before the write lock: the transaction only runs SQL.
    """

    op: PutOp
    encoded: tuple[str, int] | None
    keyword: str | None
    vectors: list[tuple[str, bytes]]
    ttl: float | None
    source: str  # provenance, taken in the caller's context (its LangGraph run)
    ns: str  # the namespace as stored, and its (tenant, subject): split once per put
    tenant: str
    subject: str


def provenance(default: str = DEFAULT_SOURCE) -> str:
    """Source id for a plain put: from the running LangGraph config when there is one.

    `configurable.episode_id` wins, then `thread:<thread_id>`, then `run:<run_id>`;
    outside a run, `default` (marked "external:" so it is never mistaken for an episode).
    """
    try:
        from langgraph.config import get_config

        config = get_config()
    except (RuntimeError, ImportError):
        return default
    configurable = config.get("configurable") or {}
    if configurable.get("episode_id"):
        return str(configurable["episode_id"])
    if configurable.get("thread_id"):
        return f"thread:{configurable['thread_id']}"
    if config.get("run_id"):
        return f"run:{config['run_id']}"
    return default


class SGAMStore(BaseStore):
    """A LangGraph store whose items are facts with validity intervals and provenance."""

    supports_ttl = True
    __slots__ = (
        "_cache",
        "_language",
        "_puts",
        "_ranker",
        "_reads",
        "_spec",
        "_target",
        "_writes",
        "default_source",
        "embeddings",
        "engine",
        "facts",
        "index_config",
        "retrieval",
        "review_new_keys",
        "ttl_config",
    )

    def __init__(
        self,
        conn: Any,
        *,
        index: IndexConfig | dict[str, Any] | None = None,
        ttl: TTLConfig | None = None,
        max_value_bytes: int = ledger.DEFAULT_MAX_VALUE_BYTES,
        default_source: str = DEFAULT_SOURCE,
        retrieval: RetrievalConfig | dict[str, Any] | None = None,
        vector_cache: bool = True,
        tenant_at: int | None = None,
        review_new_keys: bool = True,
        read_only: bool = False,
        **engine_options: Any,
    ) -> None:
        """`conn`: a SQLite path, ':memory:', an open sqlite3 connection, or a PostgreSQL
        connection string (`engine_options` then: schema, pool_size, prepare_threshold,
        connect_timeout, an unreachable server then raising StoreUnavailableError at once;
        row_security: the tenant policies, see docs/postgres.md).
        `vector_cache=False` searches the engine's vector index
        instead of an in-process mirror of the current vectors (SQLite only; it costs
        4 bytes x dims per fact, 1 with `retrieval={"vector_mirror": "int8"}`).
        `tenant_at`: which namespace label names the tenant, e.g. 1 for LangMem's
        ("memories", user_id); recorded at `setup()`, and None takes
        the database's (0 for a new one). Another than the recorded one raises
        ConfigurationError. `review_new_keys`: a put of a new key queues it for the
        memory manager's supersession review (a correction written as a new memory,
        LangMem's way; see `managers.supersession`). `read_only`: open an existing
        store to read it: nothing is created, migrated or written (an older schema
        raises SchemaVersionError naming the command that upgrades it, a missing or empty
        database StoreUnavailableError), writes raise ReadOnlyViewError, and reads leave
        TTLs as they are."""
        self._spec = IndexSpec.from_config(index) if index else None
        dims = self._spec.dims if self._spec else None
        self.retrieval = (  # checked before a connection opens
            retrieval if isinstance(retrieval, RetrievalConfig) else RetrievalConfig.of(retrieval)
        )
        self.engine = open_engine(
            conn, dims=dims, tenant_at=tenant_at, read_only=read_only, **engine_options
        )
        self._target = mask_uri(conn) if isinstance(conn, str) else f"<{type(conn).__name__}>"
        self.index_config = self._spec.config if self._spec else None
        self.embeddings = self._spec.embeddings if self._spec else None
        self.ttl_config = ttl
        self.default_source = default_source
        self.review_new_keys = review_new_keys
        self._cache = self.engine.vector_mirror(self._spec.dims) if dims and vector_cache else None
        if self._cache is not None:
            self._cache.encoding = self.retrieval.vector_mirror
        self._ranker = Ranker(self.engine, self._spec, self._cache)
        self.facts = FactWriter(
            self.engine, self._spec, max_value_bytes=max_value_bytes, cache=self._cache
        )
        self._reads = GetCoalescer(self.execute)
        self._writes: GroupCommit[list[_PreparedPut]] = GroupCommit(
            self.facts, self._apply_all, size=len
        )
        self._puts: AsyncGather[tuple[list[Op], str]] = AsyncGather(self._put_together)
        self._language: str | None = None  # the keyword language, settled by setup()

    def __repr__(self) -> str:
        """The target as it may be shown: a connection string's password masked."""
        schema = getattr(self.engine, "schema", None)  # PostgreSQL's
        return f"{type(self).__name__}({self._target!r}" + (
            f", schema={schema!r})" if schema else ")"
        )

    @property
    def conn(self) -> Any:
        """The SQLite engine's connection, for inspection (PostgreSQL pools connections)."""
        return self.engine.conn

    @property
    def read_only(self) -> bool:
        """Whether the store was opened `read_only=True` (its writes raise ReadOnlyViewError)."""
        return bool(self.engine.read_only)

    @property
    def layout(self) -> namespaces.Layout:
        """Where this store's namespaces name their tenant (settled at `setup()`)."""
        self._ensure_ready()
        return self.engine.layout

    @property
    def tenant_at(self) -> int:
        """The index of the namespace label that names the tenant."""
        return self.layout.tenant_at

    @property
    def max_value_bytes(self) -> int:
        """The largest value, in bytes of its JSON, a write accepts (the fact writer's)."""
        return self.facts.max_value_bytes

    @max_value_bytes.setter
    def max_value_bytes(self, limit: int) -> None:
        self.facts.max_value_bytes = limit

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        index: IndexConfig | dict[str, Any] | None = None,
        ttl: TTLConfig | None = None,
        **kwargs: Any,
    ) -> Iterator[SGAMStore]:
        """Open a database (a SQLite file, ':memory:', or a PostgreSQL URI), yield a store,
        close it afterwards."""
        store = cls(conn_string, index=index, ttl=ttl, **kwargs)
        try:
            yield store
        finally:
            store.close()

    def close(self) -> None:
        self._ranker.close()
        self.engine.close()

    def setup(self) -> None:
        """Create or upgrade the schema (idempotent; safe across processes), and settle
        the keyword language (`retrieval={"language": ...}`, see `lifecycle.keywords`)."""
        self.engine.setup()
        self._language = keywords.settle(self.engine, self.retrieval.language)

    def _ensure_ready(self) -> None:
        if self._language is None:
            self.setup()

    @property
    def language(self) -> str:
        """The language the keyword index is analyzed in, as the database records it."""
        self._ensure_ready()
        assert self._language is not None
        return self._language

    def set_language(self, language: str) -> int:
        """Rebuild the keyword index in `language` (one transaction; facts and history
        untouched) and record it; returns the keyword rows rebuilt. Other stores open on
        the database write and query in the new language from their next statement."""
        self._ensure_ready()
        rebuilt = keywords.set_language(self.engine, language)
        self._language = language
        # Term frequencies were counted in the old analysis: a new ranker counts afresh.
        self._ranker.close()
        self._ranker = Ranker(self.engine, self._spec, self._cache)
        return rebuilt

    # ------------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self.execute(list(ops), CURRENT)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self.aexecute(list(ops), CURRENT)

    async def aexecute(
        self, ops: list[Op], scope: Scope, *, read_only: bool = False
    ) -> list[Result]:
        """`execute` in a worker thread, so the engine never blocks the event loop; reads
        arriving together share one hop and one statement (read/coalesce.py). Search
        queries are embedded first, awaited, so a search waiting for the model holds no
        worker thread (a server's default executor has a few: read/microbatch.py)."""
        if only_gets(ops):
            return await self._reads.submit(ops, scope)
        if scope is CURRENT and _only_puts(ops) and not self.engine.read_only:  # write/group.py
            return await self._puts.submit((ops, provenance(self.default_source)))
        queries = await self._aembed_queries(ops)
        return await asyncio.to_thread(
            self.execute, ops, scope, read_only=read_only, queries=queries
        )

    async def _aembed_queries(self, ops: Sequence[Op]) -> dict[int, bytes] | None:
        """What `Ranker.embed_queries` gives, through the embedder's `aembed_query`
        (LangChain's default runs `embed_query` in a thread; the local model awaits its
        batch); None when no search has a query to embed."""
        wanted = {i: op.query for i, op in enumerate(ops) if isinstance(op, SearchOp) and op.query}
        if self._spec is None or not wanted:
            return None
        embed = self._spec.embeddings.aembed_query
        vectors = dict(zip(wanted, await asyncio.gather(*map(embed, wanted.values())), strict=True))
        # A zero vector has no direction: such a query is answered by keywords alone.
        return {i: self._spec.check(v) for i, v in vectors.items() if any(v)}

    def execute(
        self,
        ops: Sequence[Op],
        scope: Scope,
        *,
        read_only: bool = False,
        queries: dict[int, bytes] | None = None,
    ) -> list[Result]:
        """Validate all ops, then run reads (seeing the state before this batch's writes)
        and then every write in one transaction. Views call this with their scope;
        `queries` are the searches' vectors when the caller embedded them already."""
        self._ensure_ready()
        with self.engine.tenant_scope(_tenant_of(self.engine.layout, scope, ops)):
            return self._execute(ops, scope, read_only=read_only, queries=queries)

    def _execute(
        self,
        ops: Sequence[Op],
        scope: Scope,
        *,
        read_only: bool,
        queries: dict[int, bytes] | None,
    ) -> list[Result]:
        engine = self.engine
        for op in ops:
            _validate(op, engine.filters, engine.layout)
        if len(ops) == 1 and not self.ttl_config:
            # The hottest calls (BaseStore.get, a filtered list): one statement, nothing
            # to embed, prepare or refresh (a listing's store layers 12 -> 3 us at 5k).
            op = ops[0]
            if op.__class__ is GetOp:
                with engine.reading() as conn:
                    return [search.get(engine, conn, scope, op.namespace, op.key)]
            if op.__class__ is SearchOp:
                return [self._search_alone(op, scope, queries)]
        if (read_only or engine.read_only) and any(isinstance(op, PutOp) for op in ops):
            raise ReadOnlyViewError(
                "this store was opened read_only=True; open it without read_only to write"
                if engine.read_only
                else "this view is read-only (as_of); write to the store itself"
            )
        reads = [i for i, op in enumerate(ops) if not isinstance(op, PutOp)]
        writes = len(reads) < len(ops)
        puts = self._prepare_puts(ops, provenance(self.default_source)) if writes else []
        results: list[Result] = [None] * len(ops)
        if reads:
            self._run_reads(ops, reads, results, scope, queries)
        if puts:
            self._commit_puts([(self._group_key(scope, ops), puts)])
        return results

    def _search_alone(
        self, op: SearchOp, scope: Scope, queries: dict[int, bytes] | None
    ) -> list[SearchItem]:
        """A batch's one search: `_run_reads`' answer without its bookkeeping. A listing
        is one statement; a query's statements share one snapshot, as there."""
        if not op.query:
            return self._ranker.search(scope, op, None, self.retrieval)
        vectors = self._ranker.embed_queries((op,)) if queries is None else queries
        with self.engine.snapshot():
            return self._ranker.search(scope, op, vectors.get(0), self.retrieval)

    def _run_reads(
        self,
        ops: Sequence[Op],
        reads: list[int],
        results: list[Result],
        scope: Scope,
        queries: dict[int, bytes] | None,
    ) -> None:
        """Answer the batch's reads into `results`, before any of its writes."""
        if queries is None:
            queries = self._ranker.embed_queries(ops)
        many = len(reads) > 1 or any(isinstance(ops[i], SearchOp) and ops[i].query for i in reads)
        with self.engine.snapshot() if many else self.engine.reading() as conn:
            gets = [i for i in reads if isinstance(ops[i], GetOp)]
            if len(gets) > 1:  # one statement for them all
                found = search.get_many(self.engine, conn, scope, [ops[i] for i in gets])
                results_of = dict(zip(gets, found, strict=True))
            else:
                results_of = {}
            for i in reads:
                if i in results_of:
                    results[i] = results_of[i]
                else:
                    results[i] = self._read(conn, scope, ops[i], queries.get(i))
        self._refresh_ttl(ops, results, scope)

    def explain_search(
        self,
        namespace_prefix: tuple[str, ...],
        query: str | None,
        *,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[explain.Explanation]:
        """`search`'s hits, in its order, each with its keyword and vector contributions
        (`read.explain.Explanation`): why a memory ranked where it did."""
        op = SearchOp(tuple(namespace_prefix), filter, limit, offset, query)
        return self.explain(op, CURRENT)

    def explain(self, op: SearchOp, scope: Scope) -> list[explain.Explanation]:
        """`explain_search` of an absolute search op within `scope` (views call this)."""
        self._ensure_ready()
        _validate(op, self.engine.filters, self.engine.layout)
        query_vec = self._ranker.embed_queries([op]).get(0)
        with self.engine.tenant_scope(_tenant_of(self.engine.layout, scope, [op])):
            return explain.explain(self._ranker, self.engine, scope, op, query_vec, self.retrieval)

    def _read(self, conn: Any, scope: Scope, op: Op, query_vec: bytes | None) -> Result:
        if isinstance(op, GetOp):
            return search.get(self.engine, conn, scope, op.namespace, op.key)
        if isinstance(op, SearchOp):
            return self._ranker.search(scope, op, query_vec, self.retrieval)
        assert isinstance(op, ListNamespacesOp)
        return search.list_namespaces(self.engine, conn, scope, op)

    # ------------------------------------------------------------------ write flow

    def _commit_puts(self, works: list[tuple[Hashable, list[_PreparedPut]]]) -> None:
        """Write each caller's prepared puts with whatever other callers are writing
        (write/group.py); raises this caller's own error, if any."""
        for error in self._writes.submit(works):
            if error is not None:
                raise error

    def _put_together(self, calls: list[tuple[list[Op], str]]) -> list[Any]:
        """Concurrent `abatch`es of puts, each with its provenance, gathered from one
        event loop: each is validated and prepared on its own, their texts embedded in
        one call, then all are committed together. Returns each call's results, or the
        error it raises."""
        self._ensure_ready()
        outcomes: list[Any] = [None] * len(calls)
        encoded: list[tuple[int, list[_PreparedPut], list[_Text]]] = []
        for n, (ops, source) in enumerate(calls):
            try:
                for op in ops:
                    _validate(op, self.engine.filters, self.engine.layout)
                encoded.append((n, *self._encode_puts(ops, source)))
            except Exception as error:
                outcomes[n] = error
        vectors = self._embed_together([texts for _, _, texts in encoded])
        queued: list[tuple[int, Hashable, list[_PreparedPut]]] = []
        for (n, puts, texts), mine in zip(encoded, vectors, strict=True):
            try:
                found = mine if mine is not None else self._embed_texts(texts)
                self._attach_vectors(puts, texts, found)
            except Exception as error:  # a vector the index refuses fails its own call
                outcomes[n] = error
                continue
            queued.append((n, self._group_key(CURRENT, calls[n][0]), puts))
        errors = self._writes.submit([(key, puts) for _, key, puts in queued])
        for (n, _, _), error in zip(queued, errors, strict=True):
            outcomes[n] = error if error is not None else [None] * len(calls[n][0])
        return outcomes

    def _group_key(self, scope: Scope, ops: Sequence[Op]) -> Hashable:
        """Which writes may share a transaction: all of them, unless the database
        confines rows to a tenant (PostgreSQL's row security); then one tenant's."""
        if getattr(self.engine, "confined", False):
            return _tenant_of(self.engine.layout, scope, ops)
        return None

    def _apply_all(self, tx: ledger.Tx, works: list[list[_PreparedPut]]) -> None:
        """Callers' puts in one transaction, caller after caller in arrival order, each
        as if it committed alone: a key an earlier caller wrote is looked up again, so an
        identical re-put restates (no version) and another value versions. The index
        rows are written once, when the group's transaction ends (write/group.py)."""
        ledger.settle(tx)  # keys earlier callers wrote (an absorbed work's) need no read
        keys = [_key(put) for puts in works for put in puts]
        ledger.prefetch(tx, [key for key in keys if key not in tx.tails])  # one statement
        for puts in works:
            ledger.settle(tx)
            self._write_puts(tx, puts, earlier=len(tx.opened))

    def _prepare_puts(self, ops: Sequence[Op], source: str) -> list[_PreparedPut]:
        """Encode values, build keyword text and embed, once and before the write lock."""
        prepared, texts = self._encode_puts(ops, source)
        self._attach_vectors(prepared, texts, self._embed_texts(texts))
        return prepared

    def _encode_puts(
        self, ops: Sequence[Op], source: str
    ) -> tuple[list[_PreparedPut], list[_Text]]:
        """The puts of `ops` with their values encoded and keyword text built, and the
        (put's position, field, text) of each text to embed for them."""
        prepared: list[_PreparedPut] = []
        to_embed: list[_Text] = []
        layout = self.engine.layout
        for op in ops:
            if not isinstance(op, PutOp):
                continue
            encoded = keyword = None
            tenant, subject = layout.split(op.namespace)
            if op.value is not None:
                encoded = ledger.encode_value(op.value, self.max_value_bytes)
                if op.index is not False:
                    fields = list(op.index) if isinstance(op.index, list) else None
                    pairs = self._spec.texts(op.value, fields) if self._spec else None
                    keyword = self.facts.keyword_text(subject, op.key, op.value, fields, pairs)
                    to_embed += [(len(prepared), field, chunk) for field, chunk in pairs or ()]
            ttl = op.ttl if op.ttl is not NOT_PROVIDED else None
            if ttl is None and op.ttl is NOT_PROVIDED and self.ttl_config:
                ttl = self.ttl_config.get("default_ttl")
            ns = namespaces.to_text(op.namespace)
            prepared.append(
                _PreparedPut(op, encoded, keyword, [], ttl, source, ns, tenant, subject)
            )
        return prepared, to_embed

    def _embed_together(self, calls: list[list[_Text]]) -> list[list[list[float]] | None]:
        """Each call's vectors, from one embedding call for all their texts (a model call
        is per batch, not per text). If that call fails, None for each: every call then
        embeds its own texts, so a text the model refuses fails only its call."""
        try:
            flat = self._embed_texts([text for texts in calls for text in texts])
        except Exception:
            return [None] * len(calls)
        out: list[list[list[float]] | None] = []
        at = 0
        for texts in calls:
            out.append(flat[at : at + len(texts)])
            at += len(texts)
        return out

    def _embed_texts(self, texts: list[_Text]) -> list[list[float]]:
        if not texts or self._spec is None:
            return []
        return self._spec.embeddings.embed_documents([text for _, _, text in texts])

    def _attach_vectors(
        self, prepared: list[_PreparedPut], texts: list[_Text], vectors: list[list[float]]
    ) -> None:
        """Each text's vector, checked against the index, onto its put."""
        if self._spec is None:
            return
        for (pos, field, _), vector in zip(texts, vectors, strict=True):
            prepared[pos].vectors.append((field, self._spec.check(vector)))

    def _apply_puts(
        self, tx: ledger.Tx, puts: list[_PreparedPut], starts: Sequence[str] | None = None
    ) -> None:
        """`_write_puts`, then the transaction's index rows."""
        self._write_puts(tx, puts, starts)
        self.facts.finish(tx)

    def _write_puts(
        self,
        tx: ledger.Tx,
        puts: list[_PreparedPut],
        starts: Sequence[str] | None = None,
        earlier: int = 0,
    ) -> None:
        """Write prepared puts, each with its own provenance; `starts` (valid_from per
        put) override "now" (an import's item times). Either way each put becomes its
        key's current version, except a put that restates the current version
        (`_restates`), which only renews its TTL. Searchable puts of new keys are queued
        for review, except an import's (a copy of another store's settled state).
        `earlier`: how many of `tx.opened` earlier callers of a group opened (`_delete`).
        """
        review = self.review_new_keys and starts is None
        # Keys without a tail: not read yet, or written earlier in this transaction.
        ledger.prefetch(tx, [key for key in map(_key, puts) if key not in tx.tails])
        new_keys: list[tuple[int, str]] = []
        for n, put in enumerate(puts):
            ns_text = put.ns
            if put.op.value is None:
                _delete(tx, ns_text, put.op.key, tx.opened[:earlier])
                continue
            version = schema_migration.latest_version(
                DEFAULT_MEMORY_TYPE, put.op.key, SCHEMA_VERSION
            )
            if not starts and self._restates(tx, put, ns_text, version):
                continue
            tail = tx.tails.get((ns_text, put.op.key))
            new_key = tail is not None and tail.latest is None
            queue = review and new_key and put.op.index is not False
            fact = FactDraft(
                tenant_id=put.tenant,
                subject=put.subject,
                attribute=put.op.key,
                value=put.op.value,
                valid_from=(
                    ledger.start_after_latest(tx, ns_text, put.op.key, starts[n])
                    if starts
                    else ledger.put_start(tx, ns_text, put.op.key)
                ),
                source_episode_id=put.source,
                memory_type=DEFAULT_MEMORY_TYPE,
                schema_version=version,
                confidence=None,
                retention_policy=None,
                expires_at=None,
            )
            row_id = self.facts.write(
                tx,
                fact,
                put.vectors,
                ttl=put.ttl,
                index=put.op.index,
                encoded=put.encoded,
                keyword=put.keyword,
                ns=ns_text,
            )
            if queue:
                new_keys.append((row_id, put.tenant))  # a new fact's id is its first row id
        supersession.queue_new_keys(tx, new_keys)

    def _restates(self, tx: ledger.Tx, put: _PreparedPut, ns: str, version: int) -> bool:
        """True when `put` says again what the key's current version says (value, TTL,
        kind, and the same keyword text and vector fields): that version then stays as
        it is, its TTL renewed, so re-saving an unchanged memory adds no history.
        Decided inside the write transaction, on rows its key locks hold still."""
        assert put.encoded is not None
        row = ledger.unchanged_version(
            tx, ns, put.op.key, put.encoded, ttl=put.ttl, kind=(DEFAULT_MEMORY_TYPE, version)
        )
        if row is None:
            return False
        keyword, fields = _indexed_as(tx, row)
        if keyword != put.keyword or sorted(fields) != sorted(f for f, _ in put.vectors):
            return False
        ledger.renew(tx, row)
        return True

    # ------------------------------------------------------------------ moving in

    def import_items(
        self,
        source: Any,
        *,
        label: str | None = None,
        batch_size: int = 500,
        schema: str = "public",
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Bring every item of another store in, each as a fact valid from its
        `updated_at`, with provenance `import:<label>` and vectors from this store's index.

        `source`: a LangGraph SqliteStore file or PostgresStore URI (its `schema`), a
        `.jsonl` file of `Item.dict()` lines, or a BaseStore object (an InMemoryStore).
        Idempotent: an item whose value is already current is not written again, so a
        second run adds nothing. One transaction per batch; `progress(n)` after each.
        """
        self._ensure_ready()
        if isinstance(source, BaseStore):
            batches = importing.from_basestore(source, batch_size)
            label = label or type(source).__name__
        elif str(source).endswith(".jsonl"):
            batches = importing.from_jsonl(source, batch_size)
        else:
            batches = langgraph_items(str(source), batch=batch_size, schema=schema)
        origin = f"import:{label or _source_label(source)}"
        report = ImportReport()
        for items in batches:
            self._import_batch(items, origin, report)
            if progress is not None:
                progress(len(items))
        return report

    def _import_batch(self, items: list[ForeignItem], origin: str, report: ImportReport) -> None:
        ops = [PutOp(i.namespace, i.key, i.value) for i in items]
        for op in ops:
            # A bad item: a typed error, its batch unwritten.
            _validate(op, self.engine.filters, self.engine.layout)
        now = clock.utc_now()
        live = [n for n, i in enumerate(items) if not (i.expires_at and i.expires_at <= now)]
        with self.engine.reading() as conn:
            found = search.get_many(self.engine, conn, CURRENT, [GetOp(*ops[n][:2]) for n in live])
        todo = [
            n for n, item in zip(live, found, strict=True) if not item or item.value != ops[n].value
        ]
        puts = self._prepare_puts([ops[n] for n in todo], origin)
        starts = [items[n].updated_at or items[n].created_at or now for n in todo]
        if puts:
            self.facts.run(lambda tx: self._apply_puts(tx, puts, starts))
        report.read += len(items)
        report.expired += len(items) - len(live)
        report.unchanged += len(live) - len(todo)
        report.written += len(todo)

    # ------------------------------------------------------------------ read flow

    def _search_facts(self, scope: Scope, query: str, limit: int) -> list[Fact]:
        """Ranked facts for `query` within `scope` (the read path's search step)."""
        return self._ranker.facts(scope, query, limit, self.retrieval)

    def recall(self, tenant_id: str, question: str | None = None, **kwargs: Any) -> Any:
        """The read path: cited context for the model (see `sgam_store.read.recall.recall`)."""
        from sgam_store.read.recall import recall

        _check_query(question)
        with self.engine.tenant_scope(tenant_id):
            return recall(self.engine, self._search_facts, tenant_id, question, **kwargs)

    def _refresh_ttl(self, ops: Sequence[Op], results: list[Result], scope: Scope) -> None:
        """Push expiry forward for items read with refresh_ttl (TTLConfig semantics)."""
        if not scope.current or not self.ttl_config or self.engine.read_only:
            return  # a read-only store leaves expiries as they are
        default = self.ttl_config.get("refresh_on_read", True)
        keys: list[tuple[str, str]] = []
        for op, result in zip(ops, results, strict=True):
            if isinstance(op, GetOp | SearchOp) and result:
                refresh = op.refresh_ttl if op.refresh_ttl is not None else default
                items = result if isinstance(result, list) else [result]
                if refresh:
                    keys += [(namespaces.to_text(it.namespace), it.key) for it in items]
        if keys:
            self.facts.run(lambda tx: ledger.refresh_expiry(tx, keys))

    # ------------------------------------------------------------------ SGAM API

    def replace_fact(self, fact: MemoryFact, policy: ConflictPolicy | None = None) -> Fact:
        """Record `fact` by the write rule (see `ledger.replace_fact`); return it as stored.

        On an equal valid_from, `policy` decides; if it keeps the stored fact this raises
        `KeptExistingError` (a ConflictError: nothing written).
        """
        self._ensure_ready()
        vectors = self.facts.vectors_for(fact.value)

        def body(tx: ledger.Tx) -> int:
            row_id = self.facts.write(tx, fact, vectors, policy=policy)
            self.facts.finish(tx)
            return row_id

        with self.engine.tenant_scope(fact.tenant_id):
            row_id = self.facts.run(body)
            return self._fact_by_row(row_id)

    # write path: episodes and candidates (logic in episodes.py and service.py)

    def record_episode(
        self,
        tenant_id: str,
        content: str,
        *,
        source_kind: episodes.SourceKind,
        speaker: str | None = None,
        thread_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        occurred_at: clock.Timestamp | None = None,
        retention_class: str = "keep",
        episode_id: str | None = None,
    ) -> episodes.Episode:
        """Append a raw episode (message, tool result, event) that facts can cite."""
        with self.engine.tenant_scope(tenant_id):
            return episodes.record_episode(
                self.engine,
                tenant_id,
                content,
                source_kind=source_kind,
                speaker=speaker,
                thread_id=thread_id,
                metadata=metadata,
                occurred_at=occurred_at,
                retention_class=retention_class,
                episode_id=episode_id,
            )

    def get_episode(
        self, episode_id: str, *, tenant_id: str | None = None
    ) -> episodes.Episode | None:
        """The recorded episode, or None (also when it belongs to another `tenant_id`)."""
        with self.engine.tenant_scope(tenant_id):
            return episodes.get_episode(self.engine, episode_id, tenant_id=tenant_id)

    def who_said(
        self, fact: Fact | int, *, tenant_id: str | None = None
    ) -> episodes.Episode | episodes.ExternalSource:
        """The episode (text, speaker) behind a fact, or its explicit external marker."""
        with self.engine.tenant_scope(tenant_id):
            return episodes.who_said(self.engine, fact, tenant_id=tenant_id)

    def sources(
        self, tenant_id: str, source_ids: Sequence[str]
    ) -> dict[str, episodes.Episode | episodes.ExternalSource]:
        """Who said each of these sources (facts' `source_episode_id`) in `tenant_id`:
        its recorded episode (all read in one statement) or its external marker; an id
        naming neither (never recorded, or erased) is left out. What `who_said` tells of
        one fact, for a page of facts."""
        if isinstance(source_ids, str):
            raise InvalidEpisodeError("source_ids must be a list of source ids, not one string")
        tenant = self.layout.check_tenant(tenant_id)
        self._ensure_ready()
        with self.engine.tenant_scope(tenant):
            return episodes.sources(self.engine, tenant, list(source_ids))

    def apply_updates(
        self,
        updates: Iterable[MemoryUpdate | dict[str, Any]],
        *,
        tenant_id: str,
        episode_id: str,
        schema: MemorySchema | None = None,
        policy: ConflictPolicy | None = None,
    ) -> service.WriteResult:
        """Validate one episode's candidates; write the accepted ones in one transaction."""
        with self.engine.tenant_scope(tenant_id):
            return service.apply_updates(
                self.facts,
                updates,
                tenant_id=tenant_id,
                episode_id=episode_id,
                schema=schema,
                policy=policy,
            )

    def _fact_by_row(self, row_id: int) -> Fact:
        with self.engine.reading() as conn:
            row = self.engine.versions.by_row_id(conn, row_id)
        return ledger.row_to_fact(row)

    def fact_at(
        self,
        tenant_id: str,
        subject: str,
        attribute: str,
        at: clock.Timestamp | None = None,
        known_at: clock.Timestamp | None = None,
    ) -> Fact | None:
        """The fact valid at `at` (default: the current, open fact) as believed at `known_at`."""
        ns = namespaces.to_text(self.layout.fact_namespace(tenant_id, subject))
        namespaces.check_key(attribute, "attribute")
        with self.engine.tenant_scope(tenant_id):
            return ledger.fact_at(self.engine, ns, attribute, _ts(at), _ts(known_at))

    def history(
        self, tenant_id: str, subject: str, attribute: str, known_at: clock.Timestamp | None = None
    ) -> list[Fact]:
        """Every fact of the key, ordered by valid_from, as believed now or at `known_at`;
        then the memories of other keys it superseded (a correction written as a new
        memory, see `apply_supersession`), each chain link before the fact it links to."""
        ns = namespaces.to_text(self.layout.fact_namespace(tenant_id, subject))
        namespaces.check_key(attribute, "attribute")
        with self.engine.tenant_scope(tenant_id):
            facts = ledger.history(self.engine, ns, attribute, _ts(known_at))
            return ledger.predecessors(self.engine, facts, _ts(known_at)) + facts

    # corrections written as new memories (logic in write/supersession.py)

    def apply_supersession(
        self,
        new_fact_id: int,
        verdicts: Sequence[supersession.Verdict],
        *,
        decided_by: str,
        tenant_id: str | None = None,
    ) -> list[SupersessionDecision]:
        """Record the review of a new memory: each verdict about a current memory it may
        restate. A "supersedes" one closes that memory where the new one starts and
        links the two (`supersedes_fact_id`); the others change no fact. `tenant_id`:
        the facts' tenant, which row security (PostgreSQL) needs to let the
        application role see them; every id must be that tenant's (another tenant's id
        is not found)."""
        self._ensure_ready()
        with self._tenant_of_ids(tenant_id):
            return supersession.apply(self.facts, new_fact_id, verdicts, decided_by, tenant_id)

    def undo_supersession(self, decision_id: int, *, tenant_id: str | None = None) -> Fact:
        """Take back a "supersedes" decision with history intact; return the restored fact.
        A decision of another tenant than `tenant_id` is not found."""
        self._ensure_ready()
        with self._tenant_of_ids(tenant_id):
            return supersession.undo(self.facts, decision_id, tenant_id)

    def supersession_decisions(
        self, fact: Fact | int, *, tenant_id: str | None = None
    ) -> list[SupersessionDecision]:
        """The review decisions that name this fact, as the new memory or the old one. A
        fact of another tenant than `tenant_id` (or the `Fact`'s own) is not found."""
        self._ensure_ready()
        fact_id = fact.fact_id if isinstance(fact, Fact) else fact
        tenant = fact.tenant_id if isinstance(fact, Fact) and tenant_id is None else tenant_id
        with self._tenant_of_ids(tenant):
            return supersession.decisions_touching(self.engine, [fact_id], tenant)

    def key_decisions(
        self, tenant_id: str, subject: str, attribute: str
    ) -> list[SupersessionDecision]:
        """The review decisions naming any version of the key, as the new memory or the
        old one, oldest first: what `supersession_decisions` tells of each fact, for the
        whole key in one read."""
        tenant = self.layout.check_tenant(tenant_id)
        ns = namespaces.to_text(self.layout.fact_namespace(tenant, subject))
        namespaces.check_key(attribute, "attribute")
        self._ensure_ready()
        with self.engine.tenant_scope(tenant):
            return supersession.decisions_of_key(self.engine, tenant, ns, attribute)

    def _tenant_of_ids(self, tenant_id: str | None) -> Any:
        """A call that names facts by id runs in `tenant_id`'s scope when given, else in
        the scope it was called from (a review run's tenant, or none)."""
        return nullcontext() if tenant_id is None else self.engine.tenant_scope(tenant_id)

    def ledger(
        self,
        tenant_id: str | None = None,
        subject: str | None = None,
        attribute: str | None = None,
        known_at: clock.Timestamp | None = None,
    ) -> list[Fact]:
        """Every believed fact, open and closed, by tenant, subject, attribute, valid_from
        (what `sgam ledger` prints); narrowed to a tenant, subject or attribute if given."""
        if tenant_id is not None:
            self.layout.check_tenant(tenant_id)
        if subject is not None:
            namespaces.check_subject(subject)
        if attribute is not None:
            namespaces.check_key(attribute, "attribute")
        with self.engine.tenant_scope(tenant_id):  # None: every tenant's (the owner's)
            return ledger.believed(self.engine, tenant_id, subject, attribute, _ts(known_at))

    def facts_citing(
        self,
        episode_id: str,
        *,
        tenant_id: str,
        known_at: clock.Timestamp | None = None,
        limit: int = 200,
    ) -> list[Fact]:
        """The believed facts of `tenant_id` whose source is `episode_id` (as believed at
        `known_at`), by key and valid_from, at most `limit`: the episode's own facts,
        found by their source, whatever the tenant's size."""
        _check_limit(limit)
        tenant = self.layout.check_tenant(tenant_id)
        self._ensure_ready()
        with self.engine.tenant_scope(tenant):
            return ledger.citing(self.engine, tenant, episode_id, _ts(known_at), limit)

    def tenant_names(
        self,
        *,
        after: str = "",
        limit: int = 50,
        at: clock.Timestamp | None = None,
        known_at: clock.Timestamp | None = None,
    ) -> list[str]:
        """Tenants holding a current fact (with `at` or `known_at`: a fact visible at
        valid time `at`, default now, as believed at `known_at`), in order, after `after`,
        at most `limit`: one index seek per name, never a read of the facts (a paged
        tenant list)."""
        _check_limit(limit)
        when = _instant(at, known_at)
        self._ensure_ready()
        with self.engine.tenant_scope(None):  # every tenant's names (the owner's)
            return names.tenants(self.engine, after, limit, *when)

    def subject_names(
        self,
        tenant_id: str,
        *,
        after: str | None = None,
        limit: int = 50,
        at: clock.Timestamp | None = None,
        known_at: clock.Timestamp | None = None,
    ) -> list[str]:
        """The subjects of `tenant_id` holding a current fact (with `at` or `known_at`: a
        fact visible then, as `tenant_names`), in namespace order, after subject `after`
        (None: from the first), at most `limit`: one index seek each."""
        _check_limit(limit)
        when = _instant(at, known_at)
        tenant = self.layout.check_tenant(tenant_id)
        start = "" if after is None else self.layout.fact_namespace(tenant, after)
        # With the tenant as the first label, its namespaces are one range of text ('.'
        # sorts just before '/'), which a past instant's seeks walk in namespace order.
        within = (tenant, tenant + "/") if self.tenant_at == 0 else None
        self._ensure_ready()
        with self.engine.tenant_scope(tenant):
            found = names.namespaces(
                self.engine, tenant, namespaces.to_text(start), limit, *when, within
            )
        return [self.layout.split(namespaces.from_text(ns))[1] for ns in found]

    def subject_facts(
        self,
        tenant_id: str,
        subject: str,
        *,
        limit: int = 50,
        offset: int = 0,
        after: str | None = None,
    ) -> list[Fact]:
        """One page of the subject's current facts (its own namespace, not those below),
        by key: read in key order from an index, so a page costs its rows whatever the
        tenant's size (a tenant view's listing goes newest first through the tenant).
        `after` starts the page after that key, a seek (the next page of a 19,000-key
        user costs what the first does); `offset` reads the keys it skips."""
        _check_limit(limit)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
        start = "" if after is None else namespaces.check_key(after, "after")
        ns = namespaces.to_text(self.layout.fact_namespace(tenant_id, subject))
        self._ensure_ready()
        with self.engine.tenant_scope(tenant_id):
            return names.namespace_page(self.engine, ns, limit, offset, start)

    def capped_totals(self, cap: int = 10_000, *, tenant_id: str | None = None) -> dict[str, int]:
        """Current facts and episodes of the whole store (or of `tenant_id`), each counted
        up to `cap` (cap + 1 means more): a bounded read where `stats()` counts every row."""
        _check_limit(cap)
        tenant = None if tenant_id is None else self.layout.check_tenant(tenant_id)
        self._ensure_ready()
        with self.engine.tenant_scope(tenant):
            return names.capped_totals(self.engine, cap, tenant)

    def changes(
        self,
        since: clock.Timestamp,
        *,
        tenant_id: str | None = None,
        until: clock.Timestamp | None = None,
        limit: int = 100,
        before_row_id: int | None = None,
    ) -> list[Change]:
        """What the store wrote since `since` (transaction time, inclusive) and before
        `until` (exclusive; default: no bound), newest first, at most `limit` entries: new
        facts, superseded, closed, expired and revised versions (`Change.kind`), of one
        tenant or of all. To poll, pass the newest `at` seen plus a microsecond. To page
        back, pass the last entry's `at` as `until` and its `row_id` as `before_row_id`
        (the entries at `until` written before it come next): a keyset, read by index."""
        start, end = clock.normalize(since), changes.UNBOUNDED if until is None else _ts(until)
        if end < start or (end == start and before_row_id is None):
            raise InvalidTimestampError(f"until ({end}) must be after since ({start})")
        _check_limit(limit)
        if before_row_id is not None:
            _check_cursor(before_row_id, until)
        tenant = None if tenant_id is None else self.layout.check_tenant(tenant_id)
        self._ensure_ready()
        with self.engine.tenant_scope(tenant):
            return changes.feed(self.engine, tenant, start, end, limit, before_row_id or 0)

    def count_keys(
        self, tenant_id: str, subjects: Sequence[str], *, cap: int | None = None
    ) -> dict[str, int]:
        """How many keys each subject of `tenant_id` holds now: exactly the current items
        a listing would show (TTL expiry included), counted from an index, never from
        the values. Every subject asked for is in the answer, 0 when it has none. With
        `cap`, each count stops at `cap` + 1 (meaning more), a bounded read per subject."""
        if cap is not None:
            _check_limit(cap)
        if isinstance(subjects, str):
            raise InvalidFactError("subjects must be a list of subjects, not one string")
        by_ns = {
            namespaces.to_text(self.layout.fact_namespace(tenant_id, subject)): subject
            for subject in subjects
        }
        self._ensure_ready()
        with self.engine.tenant_scope(tenant_id), self.engine.reading() as conn:
            found = self.engine.counts.current_keys(
                conn, tenant_id, list(by_ns), clock.utc_now(), cap
            )
        counts = dict.fromkeys(by_ns.values(), 0)
        counts.update((by_ns[ns], n) for ns, n in found)
        return counts

    def versions(
        self,
        tenant_id: str,
        subject: str,
        attribute: str,
        *,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Fact]:
        """Every version of the key ever written, in write order: the believed ones
        (`known_to` None) and the retired ones a correction or a close replaced, which
        `history` (one instant's belief) leaves out. What the bitemporal picture draws.
        `limit` and `offset` read one page of them (a key rewritten hundreds of times)."""
        ns = namespaces.to_text(self.layout.fact_namespace(tenant_id, subject))
        namespaces.check_key(attribute, "attribute")
        if limit is not None:
            _check_limit(limit)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
        self._ensure_ready()
        with self.engine.tenant_scope(tenant_id):
            return changes.key_versions(self.engine, ns, attribute, limit, offset)

    def as_of(self, valid_at: clock.Timestamp, known_at: clock.Timestamp | None = None) -> View:
        """A read-only BaseStore answering as of `valid_at` (believed at `known_at`)."""
        return View(self, Scope(at=clock.normalize(valid_at), known_at=_ts(known_at)))

    def for_tenant(self, tenant_id: str) -> View:
        """A BaseStore whose namespaces are relative to `tenant_id` and cannot leave it."""
        return View(self, Scope(tenant=self.layout.check_tenant(tenant_id)))

    def sweep_ttl(self) -> int:
        """Close every open fact whose expiry has passed, at its expiry; return the count."""
        self._ensure_ready()

        def body(tx: ledger.Tx) -> int:
            closed = ledger.close_expired(tx)
            self.facts.finish(tx)
            return closed

        with self.engine.tenant_scope(None):  # every tenant's facts
            return self.facts.run(body)

    # ------------------------------------------------------------------ lifecycle
    # Expiry closes validity and keeps history; erasure removes. Logic lives in
    # retention.py, erasure.py and backfill.py; these are their store-level entry points.

    def run_retention(self, now: clock.Timestamp | None = None) -> RetentionReport:
        """Apply TTL and every retention policy once (idempotent); see `retention`."""
        self._ensure_ready()
        at = _ts(now)

        def body(tx: ledger.Tx) -> RetentionReport:
            report = retention.run_retention(tx, at or tx.now)
            self.facts.finish(tx)
            return report

        with self.engine.tenant_scope(None):  # every tenant's facts and episodes
            return self.facts.run(body)

    def end_session(self, tenant_id: str, thread_id: str) -> RetentionReport:
        """Mark a thread's session ended and erase its session_only facts and episodes."""
        self._ensure_ready()
        with self.engine.tenant_scope(tenant_id):  # row security: the tenant's rows
            return self.facts.run(lambda tx: retention.end_session(tx, tenant_id, thread_id))

    def purge(
        self,
        tenant_id: str,
        subject: str | None = None,
        attribute: str | None = None,
        *,
        secure_delete: bool = False,
        dry_run: bool = False,
    ) -> PurgeReport:
        """Erase a tenant, or its facts of one subject and/or attribute; see `erasure`.
        `dry_run` reports what would be erased and erases nothing."""
        erasure = self.engine.erasure
        return self._erase(
            tenant_id,
            lambda cur: erasure.purge(cur, tenant_id, subject, attribute),
            secure=secure_delete,
            dry_run=dry_run,
        )

    def purge_episode(
        self,
        tenant_id: str,
        episode_id: str,
        *,
        secure_delete: bool = False,
        dry_run: bool = False,
    ) -> PurgeReport:
        """Erase an episode and the facts whose only source it was; see `erasure`.
        `dry_run` reports what would be erased and erases nothing."""
        episodes.check_episode_id(episode_id)
        erasure = self.engine.erasure
        return self._erase(
            tenant_id,
            lambda cur: erasure.purge_episode(cur, tenant_id, episode_id),
            secure=secure_delete,
            dry_run=dry_run,
        )

    def _erase(
        self, tenant_id: str, select: Callable[[Any], PurgeReport], *, secure: bool, dry_run: bool
    ) -> PurgeReport:
        """Run an erasure in the tenant's scope (row security: the tenant's rows). A dry
        run is the same erasure in the same write transaction, rolled back: its report
        counts exactly what the real one would, while the vector mirror hears of nothing
        (no commit, so no commit hook) and no secure rewrite runs."""
        self._ensure_ready()
        with self.engine.tenant_scope(tenant_id):
            if not dry_run:
                return self.engine.erasure.execute(self.facts.ledger, select, secure=secure)

            def rehearse(tx: ledger.Tx) -> NoReturn:
                raise _RolledBack(select(tx.cur))

            try:
                return self.facts.ledger.run(rehearse)
            except _RolledBack as rehearsal:
                return rehearsal.report

    def vacuum(self) -> None:
        """Rebuild the file so erased rows leave no free pages, FTS segments or WAL frames."""
        self._ensure_ready()
        with self.engine.maintenance() as conn:
            self.engine.erasure.vacuum(conn)

    def backfill(self, *, batch_size: int = 500) -> BackfillReport:
        """Rewrite rows in an old value schema as new versions; see `backfill`."""
        self._ensure_ready()
        return run_backfill(self.facts, batch_size=batch_size)

    def embed(
        self, *, batch_size: int = 500, progress: Callable[[int], None] | None = None
    ) -> EmbedReport:
        """Give vectors, in place, to the facts written without an embedding (a store
        opened with index=None, now opened with an index config); see `run_embedding`."""
        self._ensure_ready()
        return run_embedding(self.facts, batch_size=batch_size, progress=progress)

    def stats(self) -> dict[str, Any]:
        """Row counts, believed rows per value schema_version, the file's free pages, and
        (with a vector mirror) what the mirror holds in this process."""
        self._ensure_ready()
        with self.engine.reading() as conn:
            stats = self.engine.stats.collect_stats(conn)
        if self._cache is not None:
            stats["vector_mirror"] = self._cache.footprint()
        return stats


def _check_limit(limit: object) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")


def _instant(
    at: clock.Timestamp | None, known_at: clock.Timestamp | None
) -> tuple[str | None, str | None]:
    """(valid time, belief time) of a names listing: (None, None) for now, else the
    instants normalized, valid time defaulting to now (as `as_of` takes it)."""
    if at is None and known_at is None:
        return None, None
    return _ts(at) or clock.utc_now(), _ts(known_at)


def _check_cursor(before_row_id: object, until: object) -> None:
    """A change feed's page cursor: a row id, meaningful only beside the `until` it ends."""
    if isinstance(before_row_id, bool) or not isinstance(before_row_id, int) or before_row_id < 1:
        raise InvalidQueryError(f"before_row_id must be a positive integer, got {before_row_id!r}")
    if until is None:
        raise InvalidQueryError("before_row_id pages back from an `until`: pass both")


def _tenant_of(layout: namespaces.Layout, scope: Scope, ops: Sequence[Op]) -> str | None:
    """The one tenant a batch's operations belong to, for the engine's row security: the
    view's, or the tenant every op's namespace names; None (the all-tenant scope) when
    an op names none (a search of every tenant, a listing) or the ops name several."""
    if scope.tenant is not None:
        return scope.tenant
    named: set[str | None] = set()
    for op in ops:
        if isinstance(op, ListNamespacesOp):
            return None
        prefix = op.namespace_prefix if isinstance(op, SearchOp) else op.namespace
        named.add(layout.tenant_of(prefix))
    return named.pop() if len(named) == 1 else None


def _key(put: _PreparedPut) -> tuple[str, str]:
    return put.ns, put.op.key


def _indexed_as(tx: ledger.Tx, row: Any) -> tuple[str | None, list[str]]:
    """A fact's keyword text and vector fields: from the rows this transaction queued
    for it if it wrote it (an earlier put of the batch or group: they are written at its
    end), else as the engine holds them."""
    if row.fact_id not in tx.opened:
        return tx.engine.indexing.indexed_as(tx.cur, row.fact_id, row.tenant_id)
    keyword = next((text for fid, _, text in tx.keyword_rows if fid == row.fact_id), None)
    fields = [f for fid, _, vectors in tx.vector_rows if fid == row.fact_id for f, _ in vectors]
    return keyword, fields


def _delete(tx: ledger.Tx, ns: str, key: str, earlier: list[int]) -> None:
    """Close the key's open version now. One that an earlier caller of the group opened
    (`earlier`: write/group.py) closes just after its start instead, so it stays in
    history, as it would had the two calls committed apart. Within one batch, a put then
    a delete of a key leave nothing, as before: the put never held."""
    row = tx.versions.open_version(tx.cur, ns, key)
    if row is None:
        return
    apart = row.fact_id in earlier
    ledger.close_row(tx, row, ledger.put_start(tx, ns, key) if apart else tx.now)


def _only_puts(ops: Sequence[Op]) -> bool:
    return bool(ops) and all(isinstance(op, PutOp) for op in ops)


def _source_label(source: Any) -> str:
    """An import's source as provenance: a file's name, or a URI without its password."""
    text = str(source)
    if "://" in text:
        scheme, rest = text.split("://", 1)
        return f"{scheme}://{rest.rsplit('@', 1)[-1]}"
    return Path(text).name


def _validate(op: Op, filters: Any, layout: namespaces.Layout) -> None:
    """Reject a bad op before any SQL runs, so one bad op writes nothing of its batch;
    `filters` is the engine's filter compiler, which checks a filter whole."""
    if isinstance(op, GetOp | PutOp):
        layout.check_item(op.namespace)
        namespaces.check_key(op.key)
        if isinstance(op, PutOp):
            _check_put(op)
    elif isinstance(op, SearchOp):
        namespaces.check_labels(op.namespace_prefix)
        filters.check_filter(op.filter)
        _check_query(op.query)
        _check_page(op.limit, op.offset)
    elif isinstance(op, ListNamespacesOp):
        _check_page(op.limit, op.offset)
        for condition in op.match_conditions or ():
            namespaces.check_labels(condition.path, allow_wildcard=True)
    else:
        raise TypeError(f"unknown op {type(op).__name__}")


def _check_query(query: str | None) -> None:
    """A query with NUL is refused on every engine alike: PostgreSQL's text cannot hold
    it (a raw driver error there), so SQLite must not answer it either."""
    if query is not None and "\x00" in query:
        raise InvalidQueryError(f"a search query must not contain NUL, got {query!r}")


def _check_page(limit: int, offset: int) -> None:
    """Whole, non-negative numbers: limits are written into SQLite's statements."""
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (limit, offset)):
        raise InvalidQueryError(f"limit and offset must be integers (got {limit!r}, {offset!r})")
    if limit < 0 or offset < 0:
        raise ValueError(f"limit and offset must not be negative (got {limit}, {offset})")


def _check_put(op: PutOp) -> None:
    """BaseStore values are dicts (scalar facts go through replace_fact); TTLs are minutes."""
    if op.value is not None and not isinstance(op.value, dict):
        raise InvalidFactError(
            f"put takes a dict value, got {type(op.value).__name__}; "
            "use replace_fact(MemoryFact(...)) for a scalar fact"
        )
    ttl = op.ttl
    if ttl is NOT_PROVIDED or ttl is None:
        return
    if (
        isinstance(ttl, bool)
        or not isinstance(ttl, int | float)
        or not math.isfinite(ttl)
        or ttl <= 0
    ):
        raise InvalidFactError(f"ttl must be a positive, finite number of minutes, got {ttl!r}")


def _ts(value: clock.Timestamp | None) -> str | None:
    return None if value is None else clock.normalize(value)

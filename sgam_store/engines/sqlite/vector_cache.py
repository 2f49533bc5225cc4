"""An in-process mirror of the current vectors, searched exactly with numpy.

Why: the database's own vector search over every tenant costs tens of milliseconds at
100k vectors, while one matrix-vector product over the same rows in memory costs a few. The
database stays the durable store and still serves point-in-time (`as_of`) searches; this
mirror holds only the vectors of current facts, one block per tenant so a tenant-scoped
search reads that tenant's rows alone.

Encodings (`retrieval={"vector_mirror": ...}`), per vector of d dims:
- "float32" (default): 4d bytes; every score exact.
- "float16": 2d bytes; scores within float16's rounding of the exact ones, no re-rank.
  numpy has no fast float16 kernel: rows are widened to float32 a slice at a time, which
  costs more than reading float32 (benchmarks/README.md, "Vector mirror encodings").
- "int8": d bytes plus a float32 scale per vector (its largest component maps to 127, so
  a row is coded on its own and a new vector never re-codes the others). The best
  candidates by the int8 scores (twice as many as asked, at least 32 more) are re-ranked
  with their exact float32 rows, so results and scores are those of float32 whenever
  the exact top-k is among them. Those rows are not kept in memory (that is the cost
  being cut) nor read from the database: the scan may run in the ranker's worker thread,
  which has no connection. They sit in an unlinked file next to the database
  (`_ExactRows`), read with `pread`: page cache that the kernel can reclaim.

Coherence, cheapest signal first:
- this connection's own write transactions hand their changes to `apply` after COMMIT
  (vectors written, facts retired), so the mirror never rebuilds for its own writes;
- `PRAGMA data_version` changes when *another connection* committed: rebuild;
- `MAX(vec_rowid)` beyond what the mirror has seen means vectors were added by a path
  that did not report them (another store sharing this connection, a backfill): rebuild.
A row the mirror still holds after its fact stopped being current is harmless: every
search joins its candidates with `facts` under the read rule, which drops it.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from sgam_store.core.errors import ConfigurationError

_GROWTH = 1.5  # spare capacity per block, so appends rarely copy the matrix
_COMPACT_SHARE = 0.25  # compact a block once this share of its rows is dead
_DTYPES = {"float32": np.float32, "float16": np.float16, "int8": np.int8}
_WIDEN_ROWS = 1024  # float16/int8 rows widened to float32 at a time (1.5 MB at 384 dims)
_RERANK_EXTRA = 32  # int8: re-rank max(2k, k + this) candidates exactly
_BUILD_ROWS = 8192  # rows fetched per step of a build (12 MB at 384 dims): a bounded peak
_REBUILD_DEAD = 4096  # int8: rebuild once the exact file's dead rows pass this and its live
# A scan of this many vectors or more is split across the cores, in slices of _SPLIT_ROWS:
# at 1M vectors one core needs ~80 ms, and a hand-off to a worker ~0.1 ms. Only where
# np.vecdot exists (numpy 2): it releases the GIL, einsum does not.
_PARALLEL_MIN = 262_144
_SPLIT_ROWS = 65_536
_CORES = os.cpu_count() or 1
_VECDOT = getattr(np, "vecdot", None)
# Rows of the scopes whose derived values (`VectorCache.derived`) are kept, least recently
# used dropped first. A centered search's keeps ~32 bytes a row (its key and three
# float64 columns) and its hubs ~16 more (a second entry, its rows counted again):
# 262,144 rows are ~8 MB, every user of the 100k LangMem benchmark, centre and hubs.
_DERIVED_ROWS = 262_144
# `_prime` skips tenants of more rows: a search centers a scope of at most
# read.scope.SMALL_SCOPE_MAX (2,000) facts.
_PRIME_ROWS = 2000

T = TypeVar("T")


@dataclass
class VectorDelta:
    """What one committed transaction changed: vectors written current, facts retired
    (or erased); `scrub`: a secure erasure, after which no dead row may keep its bytes."""

    added: list[tuple[int, int, str, bytes]] = field(default_factory=list)  # rowid, fact, tenant
    retired: list[int] = field(default_factory=list)
    scrub: bool = False


@dataclass
class _Rows:
    """Vectors as a block holds them: encoded rows; for int8, their scales and the slots
    of their exact copies."""

    matrix: np.ndarray
    scale: np.ndarray | None = None
    slots: np.ndarray | None = None


class _ExactRows:
    """The float32 rows behind an int8 mirror, for the exact re-rank of its candidates.

    Append-only: a live slot is never rewritten, so a forked child that inherited the
    file reads what its own blocks point to while the parent goes on appending (a child
    that writes rebuilds with a file of its own, see `VectorCache.apply`). Dead rows stay
    until the mirror rebuilds, or until a secure erasure overwrites them with zeros
    (`zero_dropped`): a child still holding one of those reads a zero vector, scoring 0.
    """

    def __init__(self, dims: int, directory: str | None) -> None:
        self.dims = dims
        self.file = _unlinked_file(directory)
        self.pid = os.getpid()
        self.rows = 0  # slots written
        self.dead = 0  # slots whose vector left the mirror
        self.dropped: list[np.ndarray] = []  # dead slots no block names any more (compacted)

    def put(self, matrix: np.ndarray) -> np.ndarray:
        """Append float32 rows; their slots."""
        data = memoryview(np.ascontiguousarray(matrix, dtype=np.float32)).cast("B")
        offset = self.rows * 4 * self.dims
        while data:  # pwrite may write less than asked (about 2 GB at most per call)
            written = os.pwrite(self.file.fileno(), data, offset)
            data, offset = data[written:], offset + written
        slots = np.arange(self.rows, self.rows + len(matrix), dtype=np.int64)
        self.rows += len(matrix)
        return slots

    def zero_dropped(self) -> None:
        """Overwrite the slots in `dropped` with zeros (one pwrite per run of consecutive
        slots), and forget them."""
        ordered = np.unique(np.concatenate([np.zeros(0, dtype=np.int64), *self.dropped]))
        self.dropped = []
        if not len(ordered):
            return
        row_bytes = 4 * self.dims
        starts = np.flatnonzero(np.diff(ordered, prepend=-2) != 1).tolist()
        for lo, hi in zip(starts, [*starts[1:], len(ordered)], strict=True):
            data = bytes((hi - lo) * row_bytes)
            offset = int(ordered[lo]) * row_bytes
            while data:
                written = os.pwrite(self.file.fileno(), data, offset)
                data, offset = data[written:], offset + written

    def read(self, slots: np.ndarray) -> np.ndarray:
        """Rows by slot, in the order given: one pread per run of consecutive slots."""
        out = np.empty((len(slots), self.dims), dtype=np.float32)
        if not len(slots):  # every candidate dead (a purged tenant's block, say)
            return out
        order = np.argsort(slots, kind="stable")
        ordered = slots[order]
        starts = np.flatnonzero(np.diff(ordered, prepend=-2) != 1).tolist()
        row_bytes = 4 * self.dims
        for lo, hi in zip(starts, [*starts[1:], len(ordered)], strict=True):
            data = os.pread(self.file.fileno(), (hi - lo) * row_bytes, int(ordered[lo]) * row_bytes)
            out[order[lo:hi]] = np.frombuffer(data, dtype=np.float32).reshape(hi - lo, self.dims)
        return out


def data_version(conn: Any) -> int:
    """`PRAGMA data_version` of `conn`: it changes when another connection committed."""
    return conn.execute("PRAGMA data_version").fetchone()[0]


def top_rowid(conn: Any) -> int:
    """The highest vector rowid written (0 with none): a commit this process did not report
    shows as a rowid above the mirror's `max_rowid`."""
    return conn.execute("SELECT COALESCE(MAX(vec_rowid), 0) FROM vector_rows").fetchone()[0]


def _unlinked_file(directory: str | None) -> Any:
    """A file without a name, gone when closed: in the database's directory (the disk its
    owner chose for data; the temp directory may be RAM-backed tmpfs), else the temp dir."""
    try:
        return tempfile.TemporaryFile(prefix="sgam-mirror-", dir=directory)
    except OSError:
        return tempfile.TemporaryFile(prefix="sgam-mirror-")


def _database_directory(conn: Any) -> str | None:
    """The directory of the main database file; None for an in-memory database."""
    for _, name, path in conn.execute("PRAGMA database_list").fetchall():
        if name == "main" and path:
            return os.path.dirname(path)
    return None


class _Where:
    """Where the mirror holds each fact's rows: its block's number, its first row, how
    many rows, in arrays indexed by fact id.

    Fact ids are row ids of `facts`, so dense: ~10 bytes per id up to the highest one
    held, where dicts of Python ints took ~285 bytes per fact (as much as the int8 rows).
    A fact's rows are appended together (the build reads them in `vec_rowid` order and
    never splits a fact between batches), so they are one run of rows in one block.
    """

    def __init__(self) -> None:
        self.block = np.full(0, -1, dtype=np.int32)  # -1: not held
        self.first = np.zeros(0, dtype=np.int32)
        self.count = np.zeros(0, dtype=np.int16)

    def find(self, fact_ids: list[int]) -> list[tuple[int, int, int, int]]:
        """(fact id, block number, first row, row count) of each fact held."""
        return list(zip(*(column.tolist() for column in self.located(fact_ids)), strict=True))

    def located(self, fact_ids: list[int]) -> tuple[np.ndarray, ...]:
        """`find` as four arrays: fact ids, block numbers, first rows, row counts."""
        ids = np.asarray(fact_ids, dtype=np.int64)
        ids = ids[(ids >= 0) & (ids < len(self.block))]
        held = ids[self.block[ids] >= 0]
        return held, self.block[held], self.first[held], self.count[held]

    def place(self, number: int, fact_ids: np.ndarray, start: int) -> None:
        """Record `fact_ids`, rows `start`, `start + 1`, ... of block `number`."""
        if not len(fact_ids):
            return
        heads = np.flatnonzero(np.r_[True, fact_ids[1:] != fact_ids[:-1]])
        ids = fact_ids[heads]
        top = int(ids.max())
        if top >= len(self.block):
            size = max(int((top + 1) * _GROWTH), 1024)
            grown = np.full(size - len(self.block), -1, dtype=np.int32)
            self.block = np.concatenate([self.block, grown])
            self.first, self.count = _grow(self.first, size), _grow(self.count, size)
        self.block[ids] = number
        self.first[ids] = start + heads
        self.count[ids] = np.diff(np.r_[heads, len(fact_ids)])

    def forget(self, fact_id: int) -> None:
        self.block[fact_id] = -1

    @property
    def nbytes(self) -> int:
        return self.block.nbytes + self.first.nbytes + self.count.nbytes


class _Block:
    """One tenant's current vectors: encoded unit rows, their fact ids, a live mask; for
    int8 also each row's scale and the slot of its exact copy. `number` names it in
    `_Where`."""

    def __init__(self, dims: int, encoding: str, tenant: str, number: int) -> None:
        self.tenant = tenant
        self.number = number
        quantized = encoding == "int8"
        self.matrix = np.zeros((0, dims), dtype=_DTYPES[encoding])
        self.scale = np.zeros(0, dtype=np.float32) if quantized else None
        self.slots = np.zeros(0, dtype=np.int64) if quantized else None
        self.fact_ids = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=bool)
        self.size = 0
        self.dead = 0
        self.version = 0  # moves on every change of the rows: what was derived from them ages
        self._facts = (-1, 0)  # (version, live facts) as `facts` last counted them

    def append(self, fact_ids: np.ndarray, rows: _Rows) -> int:
        """Add rows at the end; the position of the first."""
        self.version += 1
        need = self.size + len(fact_ids)
        if need > len(self.fact_ids):
            capacity = max(need, int(need * _GROWTH), 64)
            self.matrix = _grow(self.matrix, capacity)
            self.fact_ids = _grow(self.fact_ids, capacity)
            self.alive = _grow(self.alive, capacity)
            if self.scale is not None and self.slots is not None:
                self.scale = _grow(self.scale, capacity)
                self.slots = _grow(self.slots, capacity)
        end = self.size + len(fact_ids)
        self.matrix[self.size : end] = rows.matrix
        self.fact_ids[self.size : end] = fact_ids
        self.alive[self.size : end] = True
        if self.scale is not None and self.slots is not None:
            self.scale[self.size : end] = rows.scale
            self.slots[self.size : end] = rows.slots
        start, self.size = self.size, end
        return start

    def kill(self, first: int, count: int) -> None:
        """Mark rows dead: they score -inf until `compact` removes them."""
        self.version += 1
        self.alive[first : first + count] = False
        self.dead += count

    def dead_slots(self) -> np.ndarray:
        """int8: the exact-file slots of the dead rows (none for other encodings)."""
        if self.slots is None:
            return np.zeros(0, dtype=np.int64)
        return self.slots[: self.size][~self.alive[: self.size]]

    def scrub(self) -> None:
        """Overwrite the dead rows with zeros: their vectors leave memory now, not when
        the block next compacts (and the rows they came from were erased)."""
        self.version += 1
        dead = np.flatnonzero(~self.alive[: self.size])
        self.matrix[dead] = 0
        if self.scale is not None:
            self.scale[dead] = 0

    def facts(self) -> int:
        """Live facts held (a fact's rows are one run), counted once a version."""
        if self._facts[0] != self.version:
            ids = self.fact_ids[: self.size][self.alive[: self.size]]
            heads = int(np.count_nonzero(ids[1:] != ids[:-1])) + bool(len(ids))
            self._facts = (self.version, heads)
        return self._facts[1]

    @property
    def sparse(self) -> bool:
        return self.dead > _COMPACT_SHARE * max(self.size, 1)

    def compact(self) -> None:
        """Keep only live rows (their positions change: the caller places them again)."""
        self.version += 1
        keep = np.flatnonzero(self.alive[: self.size])
        fact_ids = self.fact_ids[keep]
        rows = _Rows(
            self.matrix[keep],
            None if self.scale is None else self.scale[keep],
            None if self.slots is None else self.slots[keep],
        )
        self.matrix, self.fact_ids, self.alive = self.matrix[:0], fact_ids[:0], self.alive[:0]
        if self.scale is not None and self.slots is not None:
            self.scale, self.slots = self.scale[:0], self.slots[:0]
        self.size = self.dead = 0
        self.append(fact_ids, rows)

    def scores(self, query: np.ndarray, sims: np.ndarray | None = None) -> np.ndarray:
        """Similarity of every row by position (int8: approximate); dead rows get -inf
        so they never rank. `sims`: the rows' dot products, when already computed."""
        if sims is None:
            sims = _dot(self.matrix[: self.size], query)
        if self.scale is not None:
            sims *= self.scale[: self.size]
        if self.dead:
            sims[~self.alive[: self.size]] = -np.inf
        return sims

    @property
    def nbytes(self) -> int:
        """Bytes of the rows in use, every column counted (spare capacity is not: its
        pages are never touched, so the kernel never backs them)."""
        columns = [self.matrix, self.fact_ids, self.alive, self.scale, self.slots]
        return sum(c[: self.size].nbytes for c in columns if c is not None)


def _dot(matrix: np.ndarray, query: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Each row's dot product with the float32 query, in float32.

    Not `@`: BLAS gemv hands rows to a thread pool that, on a busy machine, costs more
    than it saves (measured 2k rows: 8 ms vs 0.1 ms). np.vecdot (numpy 2) and einsum are
    one loop in this thread; vecdot releases the GIL, so readers in other threads scan
    at the same time. float16 and int8 rows are widened a slice at a time into a small
    buffer: numpy has no kernel for either, and widening a whole block would allocate
    the float32 matrix the encoding saves.
    """
    out = np.empty(len(matrix), dtype=np.float32) if out is None else out
    if matrix.dtype == np.float32:
        return _rows_dot(matrix, query, out)
    buffer = np.empty((min(_WIDEN_ROWS, len(matrix)), matrix.shape[1]), dtype=np.float32)
    for start in range(0, len(matrix), _WIDEN_ROWS):
        part = matrix[start : start + _WIDEN_ROWS]
        wide = buffer[: len(part)]
        np.copyto(wide, part)
        _rows_dot(wide, query, out[start : start + len(part)])
    return out


def _rows_dot(matrix: np.ndarray, query: np.ndarray, out: np.ndarray) -> np.ndarray:
    if _VECDOT is not None:
        return _VECDOT(matrix, query, out=out)
    return np.einsum("ij,j->i", matrix, query, out=out)


class _Workers:
    """The threads a large scan is split across, one per core, started on first use
    (again in a forked child, which inherits the executor but not its threads)."""

    def __init__(self) -> None:
        self.pool: ThreadPoolExecutor | None = None
        self.pid = 0

    def scores(self, blocks: dict[str, _Block], query: np.ndarray) -> dict[str, np.ndarray]:
        """Every block's `scores`, its rows' dot products computed in slices, in parallel."""
        if self.pool is None or self.pid != os.getpid():
            self.pool = ThreadPoolExecutor(_CORES, thread_name_prefix="sgam-mirror-scan")
            self.pid = os.getpid()
        sims = {tenant: np.empty(block.size, dtype=np.float32) for tenant, block in blocks.items()}
        slices = [
            self.pool.submit(_dot, block.matrix[lo:hi], query, sims[tenant][lo:hi])
            for tenant, block in blocks.items()
            for lo in range(0, block.size, _SPLIT_ROWS)
            for hi in [min(lo + _SPLIT_ROWS, block.size)]
        ]
        for done in slices:
            done.result()
        return {tenant: block.scores(query, sims[tenant]) for tenant, block in blocks.items()}


_WORKERS = _Workers()


def _best(sims: np.ndarray, n: int) -> slice | np.ndarray:
    """Positions of the n highest values (all of them when there are no more), unordered.
    Partitioned at len - n rather than on `-sims`, which would copy the scores first."""
    cut = len(sims) - n
    return slice(None) if cut <= 0 else np.argpartition(sims, cut)[cut:]


class Scan:
    """One query's similarity to every live vector in scope, computed once.

    A search that must look deeper (filters dropped candidates) or needs the cosine of
    a keyword-only hit reads these arrays instead of multiplying the matrix again.
    """

    def __init__(self, cache: VectorCache, query: np.ndarray, blocks: dict[str, _Block]) -> None:
        self.cache = cache
        self.exact = cache.exact  # this scan's, even if the mirror rebuilds meanwhile
        self.query = query
        self.count = _live(blocks)
        if self.count >= _PARALLEL_MIN and _CORES > 1 and _VECDOT is not None:
            self.sims = _WORKERS.scores(blocks, query)
        else:
            self.sims = {tenant: block.scores(query) for tenant, block in blocks.items()}
        self.blocks = blocks
        self._tops: dict[int, list[tuple[int, float]]] = {}

    def top(self, k: int) -> list[tuple[int, float]]:
        """(fact_id, cosine similarity) of the k most similar vectors, best first.

        A fact with several embedded fields may appear once per field, as in the table.
        """
        if k not in self._tops:
            self._tops[k] = self._top(k)
        return self._tops[k]

    def _top(self, k: int) -> list[tuple[int, float]]:
        depth = k if self.exact is None else max(2 * k, k + _RERANK_EXTRA)
        sims_parts, ids_parts, slot_parts = [], [], []
        for tenant, sims in self.sims.items():
            block = self.blocks[tenant]
            best = _best(sims, depth)  # each block's best before merging: bounded memory
            sims_parts.append(sims[best])
            ids_parts.append(block.fact_ids[: len(sims)][best])
            if block.slots is not None:
                slot_parts.append(block.slots[: len(sims)][best])
        if not sims_parts:
            return []
        sims, ids = np.concatenate(sims_parts), np.concatenate(ids_parts)
        slots = np.concatenate(slot_parts) if self.exact is not None else None
        best = _best(sims, depth)
        live = sims[best] > -np.inf
        sims, ids = sims[best][live], ids[best][live]
        if self.exact is not None and slots is not None:
            sims = _dot(self.exact.read(slots[best][live]), self.query)  # the exact re-rank
        # Ties break on fact id, so pages of one query never overlap or skip a row.
        order = np.lexsort((ids, -sims))[:k]
        return list(zip(ids[order].tolist(), sims[order].tolist(), strict=True))

    def similarity(self, fact_ids: list[int]) -> dict[int, float]:
        """Best-field cosine similarity for the given facts (those the cache holds)."""
        if self.exact is not None:
            return self.cache.cosines(self.query, fact_ids, self.exact)
        held, numbers, firsts, counts = self.cache.where.located(fact_ids)
        best = np.full(len(held), np.nan)  # in `fact_ids`' order, as the caller's hits
        for number in np.unique(numbers).tolist():
            sims = self.sims.get(self.cache.numbered[number].tenant)
            if sims is None:  # keyword hits come from the scanned scope: never
                continue
            mine = numbers == number
            positions, starts = _runs(firsts[mine], counts[mine])
            best[mine] = _best_rows(sims[positions], starts)
        found = ~np.isnan(best)
        return dict(zip(held[found].tolist(), best[found].tolist(), strict=True))


def _runs(firsts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(every row of these facts' runs, where each fact's rows begin among them): a fact's
    rows are `counts` rows from `firsts` in its block."""
    first, count = firsts.astype(np.int64), counts.astype(np.int64)
    starts = np.cumsum(count) - count
    return np.repeat(first - starts, count) + np.arange(int(count.sum())), starts


def _best_rows(sims: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each fact's best row of `sims` (its rows begin at `starts`): a fact's score is its
    best field's."""
    return sims if len(sims) == len(starts) else np.maximum.reduceat(sims, starts)


def _live(blocks: dict[str, _Block]) -> int:
    return sum(b.size - b.dead for b in blocks.values())


def _grow(array: np.ndarray, capacity: int) -> np.ndarray:
    out = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


def _unit(blobs: Iterable[bytes], dims: int) -> np.ndarray:
    """float32 rows from stored blobs, scaled to unit length (a zero vector stays zero)."""
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, dims).copy()
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


class VectorCache:
    """Exact cosine KNN over the current vectors of one database, in this process."""

    def __init__(self, dims: int, encoding: str = "float32") -> None:
        self.dims = dims
        self.blocks: dict[str, _Block] | None = None  # by tenant; None: not built
        self.numbered: list[_Block] = []  # by number
        self.where = _Where()
        self.data_version = -1
        self.max_rowid = 0
        self.exact: _ExactRows | None = None  # int8's float32 rows, once built
        # (derive, fact ids' bytes) -> (block, its version then, rows, value): `derived`
        self.kept: OrderedDict[tuple[Any, bytes], tuple[_Block, int, int, Any]] = OrderedDict()
        self.kept_rows = 0
        self.primed: set[Any] = set()  # the `derive`s `_prime` ran for since the build
        self.kept_lock = threading.Lock()  # readers of a pool share it
        self.encoding = encoding

    @property
    def encoding(self) -> str:
        """How the rows are held: "float32", "float16" or "int8" (see the module doc).
        Set it before searching (the store does, from `retrieval.vector_mirror`): a new
        encoding drops the mirror, and the next search builds it again."""
        return self._encoding

    @encoding.setter
    def encoding(self, encoding: str) -> None:
        if encoding not in _DTYPES:
            raise ConfigurationError(
                f"vector_mirror must be one of {', '.join(_DTYPES)}: {encoding!r}"
            )
        self._encoding = encoding
        self.invalidate()

    @property
    def nbytes(self) -> int:
        """Bytes of the mirror's arrays in use (0 until built); int8's exact rows are in
        their file, not here."""
        if self.blocks is None:
            return 0
        return self.where.nbytes + sum(block.nbytes for block in self.blocks.values())

    def footprint(self) -> dict[str, Any]:
        """What the mirror holds in this process, for `SGAMStore.stats()`: its encoding,
        live vectors, array bytes, and int8's exact rows file (in the page cache)."""
        exact = 0 if self.exact is None else os.fstat(self.exact.file.fileno()).st_size
        live = 0 if self.blocks is None else self.count(None)
        return {
            "encoding": self.encoding,
            "vectors": live,
            "bytes": self.nbytes,
            "exact_bytes": exact,
        }

    # ------------------------------------------------------------ coherence

    def ensure(self, conn: Any) -> None:
        """Build on first use; rebuild when a write this process did not report happened."""
        probe, top = data_version(conn), top_rowid(conn)
        if self.blocks is None or probe != self.data_version or top > self.max_rowid:
            self._build(conn)

    def _build(self, conn: Any) -> None:
        # One read transaction: the version, the rowid high-water mark and the rows are
        # one snapshot, so a commit landing mid-build is caught by the next `ensure`.
        own_tx = not conn.in_transaction
        if own_tx:
            conn.execute("BEGIN")
        try:
            self.data_version = data_version(conn)
            self.max_rowid = top_rowid(conn)
            self.blocks, self.numbered, self.where = {}, [], _Where()
            self._forget_derived()
            quantized = self._encoding == "int8"
            self.exact = _ExactRows(self.dims, _database_directory(conn)) if quantized else None
            # The vectors of current facts (one open row per fact at most), a fact's rows
            # together (written together, so adjacent in vec_rowid order).
            rows = conn.execute(
                "SELECT v.vec_rowid, v.fact_id, f.tenant_id, v.embedding FROM vector_rows v "
                "JOIN facts f ON f.fact_id = v.fact_id "
                "WHERE f.valid_to IS NULL AND f.known_to IS NULL ORDER BY v.vec_rowid"
            )
            pending: list[tuple[int, int, str, bytes]] = []
            while batch := rows.fetchmany(_BUILD_ROWS):
                pending += batch
                cut = len(pending)  # the last fact's rows wait: its next row may follow
                while cut and pending[cut - 1][1] == pending[-1][1]:
                    cut -= 1
                self._add(pending[:cut])
                pending = pending[cut:]
            self._add(pending)
        except BaseException:
            self.invalidate()  # never a half-built mirror
            raise
        finally:
            if own_tx:
                conn.execute("COMMIT")

    def apply(self, delta: VectorDelta) -> None:
        """Mirror a committed transaction of this connection (no-op until built)."""
        if self.blocks is None:
            return
        if self.exact is not None and self.exact.pid != os.getpid():
            self.invalidate()  # a forked child: never append to the parent's file
            return
        # A fact id added again (reused after erasure, say): its old rows are stale.
        self._drop([*delta.retired, *(fact_id for _, fact_id, _, _ in delta.added)], delta.scrub)
        self._add(delta.added)
        exact = self.exact
        if exact is not None and exact.dead > max(_REBUILD_DEAD, exact.rows - exact.dead):
            self.invalidate()  # the file is mostly dead rows: the next search rebuilds

    def invalidate(self) -> None:
        self.blocks = None
        self.exact = None
        self.numbered, self.where = [], _Where()
        self._forget_derived()

    def _forget_derived(self) -> None:
        with self.kept_lock:
            self.kept.clear()
            self.kept_rows = 0
            self.primed.clear()

    def _add(self, rows: list[tuple[int, int, str, bytes]]) -> None:
        assert self.blocks is not None
        by_tenant: dict[str, list[tuple[int, bytes]]] = {}
        for rowid, fact_id, tenant, blob in rows:
            by_tenant.setdefault(tenant, []).append((fact_id, blob))
            self.max_rowid = max(self.max_rowid, rowid)
        for tenant, pairs in by_tenant.items():
            block = self.blocks.get(tenant)
            if block is None:
                block = _Block(self.dims, self._encoding, tenant, len(self.numbered))
                self.blocks[tenant] = block
                self.numbered.append(block)
            ids = np.fromiter((f for f, _ in pairs), dtype=np.int64, count=len(pairs))
            start = block.append(ids, self._encode(_unit((b for _, b in pairs), self.dims)))
            self.where.place(block.number, ids, start)

    def _encode(self, unit: np.ndarray) -> _Rows:
        if self.exact is None:
            return _Rows(unit.astype(_DTYPES[self._encoding], copy=False))
        peak = np.abs(unit).max(axis=1)
        scale = np.where(peak > 0, peak / 127, 1).astype(np.float32)  # a zero row: codes 0
        codes = np.rint(unit / scale[:, None]).astype(np.int8)
        return _Rows(codes, scale, self.exact.put(unit))

    def _drop(self, fact_ids: list[int], scrub: bool = False) -> None:
        """Take these facts' rows out of the ranking; compact the blocks left sparse.
        `scrub` (a secure erasure): first overwrite every dead row with zeros (`_scrub`),
        so that compaction frees no array that still holds one."""
        touched = {}
        for fact_id, number, first, count in self.where.find(list(dict.fromkeys(fact_ids))):
            block = touched[number] = self.numbered[number]
            block.kill(first, count)
            self.where.forget(fact_id)
            if self.exact is not None:
                self.exact.dead += count
        if scrub:
            self._scrub()
        for block in touched.values():
            if block.sparse:
                if self.exact is not None:
                    self.exact.dropped.append(block.dead_slots())
                block.compact()
                self.where.place(block.number, block.fact_ids[: block.size], 0)

    def _scrub(self) -> None:
        """Every dead row, in memory and in the exact rows' file, overwritten with zeros.
        Dead rows are the erased facts' and those of versions retired earlier (an
        erasure takes a key's whole history, older versions included), so all of them go."""
        assert self.blocks is not None
        for block in self.blocks.values():
            if self.exact is not None:
                self.exact.dropped.append(block.dead_slots())
            block.scrub()
        if self.exact is not None:
            self.exact.zero_dropped()

    # ------------------------------------------------------------ search

    def usable(self, blob: bytes) -> bool:
        """Built, and the query has a direction: a zero query has no cosine, so what it
        means is left to the database (today: NULL distances; see test_hostile's xfail).
        The floats are read in place and the first nonzero one answers (NaN counts, -0.0
        does not, as with np.any): two numpy calls were 6 us of a small scope's search
        in a tight loop, more where their code is cold, against 1 us."""
        return self.blocks is not None and any(memoryview(blob).cast("f"))

    def _query(self, blob: bytes) -> np.ndarray:
        """The query as a unit row: `_unit`'s arithmetic on one vector, so the same bits
        (pairwise float32 sum of squares, its root, a division), without the batch's
        join, reshape and `linalg.norm` checks: 6.4 -> 3.3 us, once per search."""
        query = np.frombuffer(blob, dtype=np.float32).copy()
        norm = np.sqrt(np.add.reduce(query * query))
        if norm > 0:
            query /= norm
        return query

    def _scope(self, tenant: str | None) -> dict[str, _Block]:
        assert self.blocks is not None
        if tenant is None:
            return dict(self.blocks)
        block = self.blocks.get(tenant)
        return {tenant: block} if block is not None else {}

    def count(self, tenant: str | None) -> int:
        """Live vectors in scope: when k reaches it, a top-k is every candidate."""
        return _live(self._scope(tenant))

    def facts(self, tenant: str) -> int:
        """Current facts of `tenant` with a vector held: at least as many as a search of
        the whole tenant sees (an expired fact it still holds counts too)."""
        return sum(block.facts() for block in self._scope(tenant).values())

    def similarities(self, blob: bytes, fact_ids: list[int]) -> dict[int, float]:
        """Best-field cosine similarity of the query with just these facts (those the
        mirror holds): a small scope's vectors, without scanning its tenant."""
        return self.cosines(self._query(blob), fact_ids, self.exact)

    def cosines(
        self, query: np.ndarray, fact_ids: list[int], exact: _ExactRows | None
    ) -> dict[int, float]:
        """`similarities` for a unit query, from `exact`'s rows when given (int8).

        In arrays, not per fact: a small scope's hundred facts cost 0.1 ms as a Python
        loop, most of a per-user search's cosines."""
        held, numbers, firsts, counts = self.where.located(fact_ids)
        if len(held) and numbers.min() == numbers.max() and counts.max() == 1:
            # One tenant's facts, one field each (LangMem's "content"): no grouping
            sims = self._block_dots(self.numbered[int(numbers[0])], firsts, query, exact)
            return dict(zip(held.tolist(), sims.tolist(), strict=True))
        out: dict[int, float] = {}
        for number in np.unique(numbers).tolist():  # one block a tenant: usually one
            mine = numbers == number
            positions, starts = _runs(firsts[mine], counts[mine])
            sims = self._block_dots(self.numbered[number], positions, query, exact)
            out.update(zip(held[mine].tolist(), _best_rows(sims, starts).tolist(), strict=True))
        return out

    def units(self, fact_ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """(fact id of each row, its unit float32 row) of the facts the mirror holds, a
        row per field: a centered search's scope vectors (`read.scoring.centered`)
        without reading them from the database (100 facts: ~1 ms under load)."""
        held, numbers, firsts, counts = self.where.located(fact_ids)
        ids, rows = [], []
        for number in np.unique(numbers).tolist():
            mine = numbers == number
            positions, _ = _runs(firsts[mine], counts[mine])
            block = self.numbered[number]
            if self.exact is not None and block.slots is not None:
                rows.append(self.exact.read(block.slots[positions]))
            else:
                rows.append(block.matrix[positions].astype(np.float32))
            ids.append(np.repeat(held[mine], counts[mine]))
        if not rows:
            return np.zeros(0, np.int64), np.zeros((0, self.dims), np.float32)
        return np.concatenate(ids), np.concatenate(rows)

    def derived(
        self, fact_ids: np.ndarray, derive: Callable[[np.ndarray], T], prime: int = _DERIVED_ROWS
    ) -> T | None:
        """`derive` of these facts' unit float32 rows (in `fact_ids`' order), computed once
        and kept until a write changes the rows of their tenant (its block's `version`),
        the mirror rebuilds, or more recently used scopes push it out (`_DERIVED_ROWS`).

        What a centered search needs of its scope (`read.scoring.Centre`) depends on every
        row of it, and costs more to derive than the search costs without it; a scope's
        rows change only when its tenant is written. The first call of a `derive` since
        the mirror was built derives it for every tenant's whole scope too (`_prime`),
        up to `prime` rows in all (fewer for a value that costs more a row:
        `read.scoring.scope_hubs`, a product of each scope with itself).
        None (nothing kept) where a fact is not held, has several rows (a field each) or
        the facts are in several tenants: the caller then reads `units`.
        """
        key = (derive, fact_ids.tobytes())
        value = self._kept(key)
        if value is not None:
            return value
        if self._first(derive):
            self._prime(derive, prime)
            if (value := self._kept(key)) is not None:
                return value
        held, numbers, firsts, counts = self.where.located(fact_ids)
        if not len(held) or len(held) < len(fact_ids) or counts.max() > 1:
            return None
        if numbers.min() != numbers.max():
            return None
        block = self.numbered[int(numbers[0])]
        version = block.version  # before the rows are read: a later change ages the value
        value = derive(self._rows(block, firsts))
        self._keep(key, (block, version, len(firsts), value))
        return value

    def _kept(self, key: tuple[Any, bytes]) -> Any | None:
        """The value kept under `key`, if its rows have not changed since."""
        with self.kept_lock:
            kept = self.kept.get(key)
            if kept is None:
                return None
            block, version, _, value = kept
            if block.version != version or not self._current(block):
                return None
            self.kept.move_to_end(key)
            return value

    def _first(self, derive: Callable[[np.ndarray], Any]) -> bool:
        """Whether this is the first call of `derive` since the mirror was built (one
        thread is told so)."""
        with self.kept_lock:
            first = derive not in self.primed
            self.primed.add(derive)
            return first

    def _prime(self, derive: Callable[[np.ndarray], Any], budget: int) -> None:
        """`derive` for each tenant's current facts, by fact id, as a search of the whole
        tenant (or of a LangMem user, `tenant_at=1`) asks for them, while they fit in
        what is kept: such a search of a tenant not searched since it was written then
        finds its value. One pass at the first centered search after a build (200
        tenants of 100 facts: ~20 ms), instead of one a tenant at its first search; a
        tenant written later derives it again at its next search. Tenants of more than
        _PRIME_ROWS facts are not searched centered, nor those with a fact of several
        fields (the caller reads their rows). At most `budget` rows are derived."""
        for block in list(self.numbered):
            if self.kept_rows >= _DERIVED_ROWS or budget <= 0:
                break  # full: a store of a million small tenants stops here, not at the last
            live = np.flatnonzero(block.alive[: block.size])
            if not 0 < len(live) <= min(_PRIME_ROWS, budget):
                continue
            if self.kept_rows + len(live) > _DERIVED_ROWS:
                continue
            budget -= len(live)
            ids = block.fact_ids[live]
            order = np.argsort(ids)
            ids, live = ids[order], live[order]
            if (ids[1:] == ids[:-1]).any():
                continue
            version = block.version
            value = derive(self._rows(block, live))
            self._keep((derive, ids.tobytes()), (block, version, len(live), value))

    def _rows(self, block: _Block, positions: np.ndarray) -> np.ndarray:
        """The block's rows at `positions` as unit float32 rows (int8: its exact rows)."""
        if self.exact is not None and block.slots is not None:
            return self.exact.read(block.slots[positions])
        return block.matrix[positions].astype(np.float32, copy=False)

    def _current(self, block: _Block) -> bool:
        """`block` is the mirror's own (not one of a mirror since rebuilt)."""
        return block.number < len(self.numbered) and self.numbered[block.number] is block

    def _keep(self, key: tuple[Any, bytes], kept: tuple[_Block, int, int, Any]) -> None:
        with self.kept_lock:
            old = self.kept.pop(key, None)
            self.kept_rows += kept[2] - (0 if old is None else old[2])
            self.kept[key] = kept
            while self.kept_rows > _DERIVED_ROWS and len(self.kept) > 1:
                self.kept_rows -= self.kept.popitem(last=False)[1][2]

    @staticmethod
    def _block_dots(
        block: _Block, positions: np.ndarray, query: np.ndarray, exact: _ExactRows | None
    ) -> np.ndarray:
        """The query's dot with the block's rows at `positions` (from `exact`, int8).
        When they are most of the block (a user's whole scope), the block's rows are
        multiplied in place and picked after: no copy of the rows."""
        if exact is not None and block.slots is not None:
            return _dot(exact.read(block.slots[positions]), query)
        if 2 * len(positions) >= block.size and block.matrix.dtype == np.float32:
            return _dot(block.matrix[: block.size], query)[positions]
        return _dot(block.matrix[positions], query)

    def scan(self, blob: bytes, tenant: str | None) -> Scan:
        """Score the query against every live vector of `tenant` (or of all tenants)."""
        return Scan(self, self._query(blob), self._scope(tenant))

"""The PostgreSQL engine: a connection pool, write transactions with per-key advisory
locks and a bounded retry, schema set-up, and read snapshots.

Same methods as `SQLiteEngine`, so the ledger, the write services and the read side run
unchanged. Where SQLite serialises every writer with `BEGIN IMMEDIATE`, PostgreSQL runs
READ COMMITTED and each transaction locks the keys it decides on
(`versions.lock_keys`), so writers of different keys proceed in parallel and writers of
one key take turns. Measured in the prototype behind the issue: 8 threads x 40 writes on
one key, 0 errors; `SELECT ... FOR UPDATE` cannot lock a row that does not exist yet, and
SERIALIZABLE retried hundreds of times.
"""

from __future__ import annotations

import contextvars
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from psycopg import errors

from sgam_store.core import namespaces
from sgam_store.core.errors import ConfigurationError, StoreBusyError, TenantScopeError
from sgam_store.engines.common.engine import MAX_ATTEMPTS, StatementSets, refuse_writes
from sgam_store.engines.postgres import connection, migrations, versions

T = TypeVar("T")
# Deadlock, serialization failure, and the two constraint races a concurrent first write
# of a key can lose (the exclusion constraint and the one-open-fact index): the whole
# transaction is retried, as SQLite retries on busy.
RETRIED = (
    versions.StaleInstant,
    errors.DeadlockDetected,
    errors.SerializationFailure,
    errors.ExclusionViolation,
    errors.UniqueViolation,
)

# The connection of the transaction or snapshot open in this context: a read issued
# inside one (the ledger reads through `reading()` too) must see its writes.
_open: contextvars.ContextVar[Any] = contextvars.ContextVar("sgam_pg_open", default=None)
# The tenant of the operation running in this context (None: the all-tenant scope), which
# a row-secured database's transactions are confined to (see `PostgresEngine.confine`).
# Unscoped work (opening the store, settling its language) sees no tenant's rows unless
# the role may take the all-tenant scope.
UNSCOPED = object()
_tenant: contextvars.ContextVar[object] = contextvars.ContextVar("sgam_pg_tenant", default=UNSCOPED)


class TxCursor:
    """A cursor for one write transaction, remembering which keys it has locked."""

    def __init__(self, conn: Any, layout: namespaces.Layout) -> None:
        self.conn = conn
        self.layout = layout  # which namespace label names a key's tenant
        self.cursor = conn.cursor()
        self.locked: set[tuple[str, str]] = set()
        self.tenants: set[str] = set()  # tenants held shared (any write) or exclusively
        self.owned: set[str] = set()  # tenants held exclusively (an erasure): no key locks
        self.row_ids: list[int] = []  # the unused rest of this transaction's block
        self.now: str | None = None  # the transaction's instant, once taken
        self.floor: str | None = None  # the newest known_from among the locked keys

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = None) -> Any:
        return self.cursor.execute(query, params, prepare=prepare)

    def executemany(self, query: Any, params: Any) -> None:
        self.cursor.executemany(query, params)


class PostgresEngine(StatementSets, package=__package__):
    """A PostgreSQL database (one schema in it) ready for SGAM."""

    # pgvector ranks in the server: centering would bring a scope's vectors across the
    # wire each search (a user's search at 20k: 3.6 -> 33 ms), so it is off unless asked.
    centers_by_default = False

    def __init__(
        self,
        conninfo: str,
        *,
        dims: int | None = None,
        schema: str = connection.DEFAULT_SCHEMA,
        pool_size: int = 8,
        prepare_threshold: int | None = 5,
        tenant_at: int | None = None,
        connect_timeout: float | None = None,
        row_security: bool = False,
        read_only: bool = False,
    ) -> None:
        self.requested_tenant_at = tenant_at
        self.read_only = read_only  # check the schema at setup(), create and write nothing
        self.row_security = row_security  # turn the policies on at setup() (the owner)
        self.confined = False  # whether the database enforces them: settled by setup()
        self.all_tenants = True  # whether this role may take the all-tenant scope
        self.layout = namespaces.Layout(tenant_at or 0)  # settled by setup()
        self.schema = connection.check_schema_name(schema)
        self.pool = connection.open_pool(
            conninfo,
            schema=self.schema,
            max_size=pool_size,
            prepare_threshold=prepare_threshold,
            timeout=connect_timeout,
            read_only=read_only,
        )
        self.dims = dims
        self.ready = False

    def setup(self) -> None:
        """Create or upgrade the schema (idempotent; safe across processes). Read-only:
        check it instead (it must exist, at the latest version), recording nothing."""
        if self.read_only:
            with self.pool.connection() as conn:
                self.layout = namespaces.Layout(
                    migrations.read_settings(conn, self.schema, self.requested_tenant_at, self.dims)
                )
                self._settle_row_security(conn)
            self.ready = True
            return
        with self.pool.connection() as conn:
            migrations.migrate(conn, self.schema)
            tenant_at = migrations.settle_tenant_at(conn, self.requested_tenant_at)
            self.layout = namespaces.Layout(tenant_at)
            if self.dims is not None:
                migrations.ensure_vector_table(conn, self.dims)
            self._settle_row_security(conn)
        self.ready = True

    def _settle_row_security(self, conn: Any) -> None:
        """Turn row security on if asked (it stays on), and learn whether this database
        enforces it and whether this role may take the all-tenant scope. A store opened
        without `row_security=True` on a database that has it is confined all the same:
        the database decides, not the option."""
        on = migrations.row_security_on(conn.cursor())
        if self.row_security and not on and not self.read_only:
            try:
                migrations.enable_row_security(conn)
            except errors.InsufficientPrivilege as exc:
                raise ConfigurationError(
                    "row security is not on in this database yet, and this role may not "
                    "turn it on: run setup() once with row_security=True as the tables' "
                    f"owner ({exc})"
                ) from exc
            on = True
        self.confined = on
        self.all_tenants = migrations.may_take_all_tenants(conn)

    @contextmanager
    def tenant_scope(self, tenant: str | None) -> Iterator[None]:
        """Run this context's operations as `tenant`'s (None: the all-tenant scope). Once
        inside a tenant's scope, no call may widen it or name another tenant, so a
        `for_tenant` view can never reach the all-tenant scope."""
        held = _tenant.get()
        if isinstance(held, str) and tenant != held:
            wanted = "the all-tenant scope" if tenant is None else f"tenant {tenant!r}"
            raise TenantScopeError(f"an operation of tenant {held!r} cannot take {wanted}")
        token = _tenant.set(tenant)
        try:
            yield
        finally:
            _tenant.reset(token)

    def confine(self, conn: Any) -> None:
        """Set the operation's scope for the transaction open on `conn` (transaction-local:
        nothing stays on the connection, so it is safe behind a transaction pooler).
        `sgam.all_tenants` is set off for a tenant, overriding anything a session set.
        Unscoped work takes the all-tenant scope where the role may, else sees no
        tenant's rows ('' names no tenant: labels are never empty)."""
        if not self.confined:
            return
        tenant = _tenant.get()
        if tenant is None and not self.all_tenants:
            raise TenantScopeError(
                "this role may not take the all-tenant scope (row security): read and "
                "write through store.for_tenant(tenant), or connect as the tables' owner"
            )
        if tenant is UNSCOPED:
            tenant = None if self.all_tenants else ""
        conn.execute(
            "SELECT set_config('sgam.tenant', %s, true), set_config('sgam.all_tenants', %s, true)",
            (tenant or "", "on" if tenant is None else "off"),
        )

    def transaction(
        self,
        body: Callable[[Any], T],
        *,
        committed: Callable[[T], None] | None = None,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> T:
        """Run `body(cursor)` in one READ COMMITTED transaction, retried whole on the
        races in RETRIED; `committed(result)` runs after COMMIT."""
        self.ensure_ready()
        refuse_writes(self)
        prelock: set[tuple[str, str]] = set()
        for attempt in range(max_attempts):
            try:
                result = self._once(body, prelock)
            except errors.OutOfMemory as exc:  # the lock table: a key lock each, see lock_keys
                raise StoreBusyError(
                    f"this write needs more locks than the server's lock table holds ({exc}); "
                    "split the batch, or raise max_locks_per_transaction. Nothing was written."
                ) from exc
            except RETRIED:
                if attempt + 1 < max_attempts:
                    time.sleep(min(0.5, 0.005 * 2**attempt) * random.uniform(0.5, 1.5))
                continue
            if committed is not None:
                committed(result)
            return result
        raise StoreBusyError(f"write did not commit after {max_attempts} attempts (contention)")

    def _once(self, body: Callable[[Any], T], prelock: set[tuple[str, str]]) -> T:
        """One attempt. `prelock` collects the keys every attempt locked: the next attempt
        locks them all first, before its instant is taken (see `versions.StaleInstant`)."""
        outer = _open.get()
        if outer is not None:  # nested in an open transaction: part of it
            return body(TxCursor(outer, self.layout))
        with self.pool.connection() as conn, conn.transaction():
            token = _open.set(conn)
            cur = TxCursor(conn, self.layout)
            try:
                self.confine(conn)
                versions.lock_keys(cur, sorted(prelock))
                return body(cur)
            finally:
                prelock.update(cur.locked)
                _open.reset(token)

    @contextmanager
    def reading(self) -> Iterator[Any]:
        """A connection for read statements: the open transaction's, else a pooled one."""
        self.ensure_ready()
        outer = _open.get()
        if outer is not None:
            yield outer
            return
        with self.pool.connection() as conn:
            if not self.confined:
                yield conn
                return
            with conn.transaction():  # the scope's setting needs a transaction to live in
                self.confine(conn)
                yield conn

    @contextmanager
    def maintenance(self) -> Iterator[Any]:
        """A pooled autocommit connection outside any scope, for VACUUM, which refuses a
        transaction block and which row security does not bind."""
        self.ensure_ready()
        refuse_writes(self)
        with self.pool.connection() as conn:
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[Any]:
        """One REPEATABLE READ transaction: every statement inside sees one state."""
        self.ensure_ready()
        outer = _open.get()
        if outer is not None:
            yield outer
            return
        with self.pool.connection() as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            token = _open.set(conn)
            try:
                self.confine(conn)
                yield conn
            finally:
                _open.reset(token)
                conn.execute("COMMIT")

    def vector_mirror(self, dims: int) -> None:
        """None: other processes and replicas write this database, so an in-process copy
        of the vectors would go stale; searches use pgvector's index instead."""
        return None

    def close(self) -> None:
        self.pool.close()

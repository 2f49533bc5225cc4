"""Views: the store seen at another instant (`as_of`) or from inside one tenant.

A view is the store's own read/write flow run with another `Scope`; nothing about
the interval rule is repeated here. A tenant view's namespaces are the store's without
the tenant label: it inserts its tenant at the layout's `tenant_at` (labels cannot
contain '.', so no relative namespace can name another tenant), and its Scope adds
`tenant_id = ?` to every query as a second wall. With `tenant_at=1` (LangMem's
("memories", user)), the view of "alice" shows ("memories", "alice") as ("memories",).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchOp,
)

from sgam_store.core import clock, namespaces
from sgam_store.core.errors import TenantScopeError
from sgam_store.read.query import Scope

if TYPE_CHECKING:
    from sgam_store.core.models import Change, Fact
    from sgam_store.read.explain import Explanation


class ViewedStore(Protocol):
    """What a view calls on the store it looks through. Typed here, structurally, so the
    store imports views (it builds them) and views import nothing of the store."""

    layout: namespaces.Layout

    def execute(self, ops: list[Op], scope: Scope, *, read_only: bool = False) -> list[Result]: ...

    async def aexecute(
        self, ops: list[Op], scope: Scope, *, read_only: bool = False
    ) -> list[Result]: ...

    def changes(
        self,
        since: clock.Timestamp,
        *,
        tenant_id: str | None = None,
        until: clock.Timestamp | None = None,
        limit: int = 100,
        before_row_id: int | None = None,
    ) -> list[Change]: ...

    def versions(
        self,
        tenant_id: str,
        subject: str,
        attribute: str,
        *,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Fact]: ...

    def count_keys(
        self, tenant_id: str, subjects: Sequence[str], *, cap: int | None = None
    ) -> dict[str, int]: ...

    def explain(self, op: SearchOp, scope: Scope) -> list[Explanation]: ...


class View(BaseStore):
    """A BaseStore over an SGAMStore with a fixed Scope; read-only when it has an instant."""

    __slots__ = ("scope", "store")

    def __init__(self, store: ViewedStore, scope: Scope) -> None:
        self.store = store
        self.scope = scope

    @property
    def read_only(self) -> bool:
        return not self.scope.current

    @property
    def tenant_id(self) -> str | None:
        return self.scope.tenant

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        absolute = [self._to_store(op) for op in ops]
        results = self.store.execute(absolute, self.scope, read_only=self.read_only)
        return [self._from_store(op, r) for op, r in zip(ops, results, strict=True)]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        absolute = [self._to_store(op) for op in ops]
        results = await self.store.aexecute(absolute, self.scope, read_only=self.read_only)
        return [self._from_store(op, r) for op, r in zip(ops, results, strict=True)]

    def as_of(self, valid_at: clock.Timestamp, known_at: clock.Timestamp | None = None) -> View:
        at = clock.normalize(valid_at)
        known = None if known_at is None else clock.normalize(known_at)
        return View(self.store, replace(self.scope, at=at, known_at=known))

    def for_tenant(self, tenant_id: str) -> View:
        self.store.layout.check_tenant(tenant_id)
        if self.scope.tenant is not None and self.scope.tenant != tenant_id:
            raise TenantScopeError(f"this view is scoped to tenant {self.scope.tenant!r}")
        return View(self.store, replace(self.scope, tenant=tenant_id))

    def changes(
        self,
        since: clock.Timestamp,
        *,
        until: clock.Timestamp | None = None,
        limit: int = 100,
        before_row_id: int | None = None,
    ) -> list[Change]:
        """`SGAMStore.changes` of this view's tenant only (of every tenant for a view with
        none): a tenant view takes no tenant argument, so it cannot ask for another's."""
        return self.store.changes(
            since,
            tenant_id=self.scope.tenant,
            until=until,
            limit=limit,
            before_row_id=before_row_id,
        )

    def versions(
        self,
        tenant_id: str,
        subject: str,
        attribute: str,
        *,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Fact]:
        """`SGAMStore.versions` (every version, or a page of them, whatever the view's
        instant), refused for a tenant other than a tenant view's own, so `viz` can draw
        from a view."""
        if self.scope.tenant is not None and tenant_id != self.scope.tenant:
            raise TenantScopeError(f"this view is scoped to tenant {self.scope.tenant!r}")
        return self.store.versions(tenant_id, subject, attribute, limit=limit, offset=offset)

    def count_keys(
        self, tenant_id: str, subjects: Sequence[str], *, cap: int | None = None
    ) -> dict[str, int]:
        """`SGAMStore.count_keys` (current keys, whatever the view's instant), refused for
        a tenant other than a tenant view's own."""
        if self.scope.tenant is not None and tenant_id != self.scope.tenant:
            raise TenantScopeError(f"this view is scoped to tenant {self.scope.tenant!r}")
        return self.store.count_keys(tenant_id, subjects, cap=cap)

    def explain_search(
        self,
        namespace_prefix: tuple[str, ...],
        query: str | None,
        *,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[Explanation]:
        """`SGAMStore.explain_search` within this view: its instant, its tenant only,
        namespaces relative to the tenant as `search` returns them."""
        op = self._to_store(SearchOp(tuple(namespace_prefix), filter, limit, offset, query))
        found = self.store.explain(op, self.scope)  # type: ignore[arg-type]
        if self.scope.tenant is not None:
            for e in found:
                self._relative(e.item)
        return found

    # -------------------------------------------------------------- tenant translation

    def _abs(self, namespace: tuple[str, ...]) -> tuple[str, ...]:
        namespaces.check_labels(namespace, allow_wildcard=True)
        if self.scope.tenant is None:
            return namespace
        return self.store.layout.absolute(self.scope.tenant, namespace)

    def _to_store(self, op: Op) -> Op:
        if self.scope.tenant is None:
            return op
        if isinstance(op, GetOp | PutOp):
            namespace = self._abs(op.namespace)
            if len(namespace) == len(op.namespace):  # too short to place the tenant label
                k = self.store.layout.tenant_at
                raise InvalidNamespaceError(
                    f"{op.namespace!r} cannot hold an item: with tenant_at={k}, a tenant "
                    f"view's namespace starts with the {k} labels before the tenant"
                )
            return op._replace(namespace=namespace)
        if isinstance(op, SearchOp):
            return op._replace(namespace_prefix=self._abs(op.namespace_prefix))
        if isinstance(op, ListNamespacesOp):
            # Only prefixes go to the store, to narrow; every condition, depth and paging
            # apply to the relative namespaces in _from_store, or the tenant label could
            # satisfy them.
            prefixes = [
                MatchCondition("prefix", self._abs(c.path))
                for c in op.match_conditions or ()
                if c.match_type == "prefix"
            ]
            for c in op.match_conditions or ():
                namespaces.check_labels(c.path, allow_wildcard=True)
            conditions = tuple(prefixes) or (MatchCondition("prefix", ()),)
            return ListNamespacesOp(conditions, max_depth=None, limit=_ALL, offset=0)
        return op

    def _from_store(self, op: Op, result: Any) -> Any:
        if self.scope.tenant is None or result is None:
            return result
        if isinstance(op, ListNamespacesOp):
            return _page(op, [self.store.layout.relative(ns) for ns in result])
        if isinstance(result, list):
            return [self._relative(item) for item in result]
        return self._relative(result) if isinstance(result, Item) else result

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Any = None,
        *,
        ttl: Any = NOT_PROVIDED,
    ) -> None:
        """BaseStore.put, except that a tenant view's `()` names its tenant-level facts."""
        self.batch([PutOp(tuple(namespace), key, value, index=index, ttl=ttl)])

    def _relative(self, item: Item) -> Item:
        item.namespace = self.store.layout.relative(tuple(item.namespace))
        return item


_ALL = 2**62  # "no limit" for the store-side listing a tenant view pages itself


def _page(op: ListNamespacesOp, relative: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Match conditions, max_depth and paging, applied to relative namespaces (the store
    matched the prefixes on its own namespaces only to narrow the listing)."""
    found = {
        ns[: op.max_depth] if op.max_depth is not None else ns
        for ns in relative
        if all(namespaces.matches(ns, c) for c in op.match_conditions or ())
    }
    return sorted(found)[op.offset : op.offset + op.limit]

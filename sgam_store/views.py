"""Views: the store seen at another instant (`as_of`) or from inside one tenant.

A view is the store's own read/write flow run with another `Scope`; nothing about
the interval rule is repeated here. A tenant view prefixes every namespace with its
tenant (labels cannot contain '.', so no relative namespace can name another
tenant) and its Scope adds `tenant_id = ?` to every query as a second wall.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchOp,
)

from . import clock, namespaces
from .search import Scope

if TYPE_CHECKING:
    from .store import SGAMStore


class View(BaseStore):
    """A BaseStore over an SGAMStore with a fixed Scope; read-only when it has an instant."""

    __slots__ = ("scope", "store")

    def __init__(self, store: SGAMStore, scope: Scope) -> None:
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
        import asyncio

        return await asyncio.to_thread(self.batch, list(ops))

    def as_of(self, valid_at: clock.Timestamp, known_at: clock.Timestamp | None = None) -> View:
        at = clock.normalize(valid_at)
        known = None if known_at is None else clock.normalize(known_at)
        return View(self.store, replace(self.scope, at=at, known_at=known))

    def for_tenant(self, tenant_id: str) -> View:
        namespaces.check_item_namespace((tenant_id,))
        if self.scope.tenant is not None and self.scope.tenant != tenant_id:
            from .errors import TenantScopeError

            raise TenantScopeError(f"this view is scoped to tenant {self.scope.tenant!r}")
        return View(self.store, replace(self.scope, tenant=tenant_id))

    # -------------------------------------------------------------- tenant translation

    def _abs(self, namespace: tuple[str, ...]) -> tuple[str, ...]:
        namespaces.check_labels(namespace, allow_wildcard=True)
        return namespace if self.scope.tenant is None else (self.scope.tenant, *namespace)

    def _to_store(self, op: Op) -> Op:
        if self.scope.tenant is None:
            return op
        if isinstance(op, GetOp | PutOp):
            return op._replace(namespace=self._abs(op.namespace))
        if isinstance(op, SearchOp):
            return op._replace(namespace_prefix=self._abs(op.namespace_prefix))
        if isinstance(op, ListNamespacesOp):
            conditions = [
                MatchCondition("prefix", self._abs(c.path)) if c.match_type == "prefix" else c
                for c in op.match_conditions or ()
            ]
            if not any(c.match_type == "prefix" for c in conditions):
                conditions.append(MatchCondition("prefix", (self.scope.tenant,)))
            depth = None if op.max_depth is None else op.max_depth + 1
            return op._replace(match_conditions=tuple(conditions), max_depth=depth)
        return op

    def _from_store(self, op: Op, result: Any) -> Any:
        if self.scope.tenant is None or result is None:
            return result
        if isinstance(op, ListNamespacesOp):
            return [ns[1:] for ns in result]
        if isinstance(result, list):
            return [self._relative(item) for item in result]
        return self._relative(result) if isinstance(result, Item) else result

    @staticmethod
    def _relative(item: Item) -> Item:
        item.namespace = item.namespace[1:]
        return item

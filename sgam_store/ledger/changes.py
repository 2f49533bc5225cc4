"""The change feed: which versions the store wrote or withdrew in a span of transaction
time, each named by what it did to its fact (`Change.kind`), and a key's every version.

The ledger only appends versions and ends beliefs, so a change is read off the rows the
engine returns (`engine.changes.feed`); the kind follows from how the rule writes:

- a fact's first version (`row_id == fact_id`) is "new";
- a version closed or withdrawn in the same transaction that wrote a fact naming it in
  `supersedes_fact_id` was "superseded" (the write rule, a policy, a review's decision);
- any other version that ended the fact's interval was "expired" when it ended at its
  TTL's `expires_at`, else "closed" (a delete, a retention rule);
- a later version with the interval unchanged is "revised" (a backfill's rewrite, an
  undone review unlinking the new memory).
"""

from __future__ import annotations

from typing import Any

from sgam_store.core import namespaces
from sgam_store.core.models import Change, ChangeKind, Fact, FactRow
from sgam_store.ledger import row_to_fact

# The upper bound of a feed with no `until`: after every stored instant.
UNBOUNDED = "9999-12-31T23:59:59.999999Z"


def _kind(
    row: FactRow, at: str, ended: bool, superseded_by: int | None, same_end: bool
) -> ChangeKind:
    if ended:  # withdrawn with no successor version
        if superseded_by is not None:
            return "superseded"
        return "expired" if row.expires_at is not None and row.expires_at <= at else "closed"
    if row.row_id == row.fact_id:  # even if closed in the same transaction (a later row)
        return "new"
    if superseded_by is not None:
        return "superseded"
    if row.valid_to is None or same_end:
        return "revised"
    return "expired" if row.valid_to == row.expires_at else "closed"


def feed(
    engine: Any, tenant: str | None, since: str, until: str, limit: int, before_row: int = 0
) -> list[Change]:
    """Up to `limit` changes with `since <= at < until` (and those at `until` whose
    row_id is below `before_row`), newest first, of one tenant or (None) of every tenant."""
    with engine.reading() as conn:
        rows = engine.changes.feed(conn, tenant, since, until, limit, before_row)
    return [_change(*row) for row in rows]


def _change(
    row: FactRow, at: str, ended: bool, superseded_by: int | None, same_end: bool
) -> Change:
    fact = row_to_fact(row)  # the value as its newest schema presents it
    kind = _kind(row, at, ended, superseded_by, same_end)
    return Change(
        kind=kind,
        at=at,
        tenant_id=row.tenant_id,
        subject=row.subject,
        attribute=row.attribute,
        namespace=namespaces.from_text(row.namespace),
        fact_id=row.fact_id,
        row_id=row.row_id,
        value=fact.value,
        valid_from=row.valid_from,
        valid_to=row.valid_to,
        supersedes_fact_id=row.supersedes_fact_id,
        superseded_by_fact_id=superseded_by if kind == "superseded" else None,
        source_episode_id=row.source_episode_id,
        decided_by=row.decided_by,
    )


def key_versions(
    engine: Any, ns: str, attribute: str, limit: int | None = None, offset: int = 0
) -> list[Fact]:
    """Every version of a key ever written, believed (`known_to` None) and retired, in
    the order they were written (or `limit` of them after the first `offset`)."""
    with engine.reading() as conn:
        rows = engine.changes.key_versions(conn, ns, attribute, limit, offset)
    return [row_to_fact(r) for r in rows]

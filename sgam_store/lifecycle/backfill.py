"""Backfill: rewrite rows still in an old schema as new ledger versions, with an audit trail.

The dual-read window (`schema_migration.present`) lets new code read old rows; the
backfill closes it. Every believed row whose (attribute or memory type, schema_version)
has a registered transform is retired (`known_to` = now) and a transformed copy is
appended with the new `schema_version` and the same validity, so `known_at` reads from
before the backfill still show the old form. Each rewrite is logged in `backfill_log`
(fact, old and new row, versions, transform names; never values).

It works in batches of `batch_size` rows, one transaction each, so other writers
interleave; transforms and embeddings run outside the write lock, and a row another
writer retired meanwhile is skipped (the next run sees its successor). The keyword row
is rebuilt from the new value, and vectors are re-embedded when the store has an index
config (a fact indexed without vectors stays so). Idempotent: once done, a second run
finds nothing and `remaining` is 0.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from sgam_store import ledger
from sgam_store.core.errors import ConfigurationError
from sgam_store.core.models import FactRow
from sgam_store.core.schema_migration import (
    REGISTRY,
    Key,
    TransformRegistry,
    is_scalar,
    loads_deep,
)
from sgam_store.write.facts import FactWriter


@dataclass
class BackfillReport:
    """Rows rewritten (per version step), rows skipped, and rows still in an old schema."""

    migrated: int = 0
    by_step: dict[str, int] = field(default_factory=dict)  # "v1->v2": rows
    fact_ids: list[int] = field(default_factory=list)
    skipped: int = 0  # retired by another writer between read and write
    reindexed: int = 0  # facts whose keyword row or vectors were rebuilt
    remaining: int = 0  # believed rows still in a version that has a transform

    def add(self, other: BackfillReport) -> None:
        self.migrated += other.migrated
        for step, n in other.by_step.items():
            self.by_step[step] = self.by_step.get(step, 0) + n
        self.fact_ids += other.fact_ids
        self.skipped += other.skipped
        self.reindexed += other.reindexed

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Plan:
    """One believed version and its transformed columns, computed outside the write lock."""

    row: FactRow
    changes: dict[str, Any]  # value, scalar, schema_version of the new version
    value: dict[str, Any]
    transforms: str


def _plan(row: FactRow, registry: TransformRegistry, max_bytes: int) -> _Plan:
    steps = registry.chain(row.memory_type, row.attribute, row.schema_version)
    value, version = registry.upgrade(
        row.memory_type, row.attribute, row.schema_version, json.loads(row.value)
    )
    changes = {
        "value": ledger.encode_value(value, max_bytes)[0],
        "scalar": int(is_scalar(bool(row.scalar), value)),
        "schema_version": version,
    }
    return _Plan(row, changes, value, ",".join(s.name for s in steps))


def _embed(facts: FactWriter, plans: list[_Plan]) -> dict[int, list[tuple[str, bytes]]]:
    """New vectors for facts that had vectors (a fact has one believed version at a time)."""
    if not facts.spec:
        return {}
    values = {p.row.fact_id: p.value for p in plans}
    engine = facts.engine
    with engine.reading() as conn:
        had = engine.backfill.with_vectors(conn, list(values))
    return dict(zip(had, facts.vectors_of([values[fid] for fid in had]), strict=True))


def _reindex(
    tx: ledger.Tx, facts: FactWriter, plan: _Plan, vectors: list[tuple[str, bytes]] | None
) -> bool:
    """Rebuild the fact's keyword row (if it had one) and vectors (if re-embedded)."""
    fact_id, row, engine = plan.row.fact_id, plan.row, tx.engine
    had_keyword = engine.backfill.delete_keyword_row(tx.cur, fact_id)
    if had_keyword:
        body = facts.keyword_text(row.subject, row.attribute, plan.value, None)
        engine.indexing.flush_keywords(tx.cur, [(fact_id, row.tenant_id, body)])
    if vectors is not None:
        engine.erasure.delete_vectors(tx.cur, [fact_id])
        is_open = row.valid_to is None
        engine.indexing.write_vectors(tx.cur, fact_id, row.tenant_id, vectors, current=is_open)
    return had_keyword or vectors is not None


def _apply(
    tx: ledger.Tx, *, facts: FactWriter, plans: list[_Plan], vectors: dict[int, Any]
) -> BackfillReport:
    done, statements = BackfillReport(), tx.engine.backfill
    for plan in plans:
        old_row_id, fact_id = plan.row.row_id, plan.row.fact_id
        if not statements.still_believed(tx.cur, old_row_id):  # retired or erased since read
            done.skipped += 1
            continue
        # validity unchanged: the transformed value is a new version of the same interval
        new_row_id = ledger.append_version(tx, plan.row, **plan.changes)
        versions = plan.row.schema_version, plan.changes["schema_version"]
        statements.log_rewrite(
            tx.cur, fact_id, old_row_id, new_row_id, *versions, plan.transforms, tx.now
        )
        step = f"v{versions[0]}->v{versions[1]}"
        done.by_step[step] = done.by_step.get(step, 0) + 1
        done.migrated += 1
        done.fact_ids.append(fact_id)
        done.reindexed += _reindex(tx, facts, plan, vectors.get(fact_id))
    return done


def _select(facts: FactWriter, keys: list[Key], after: int, limit: int) -> list[FactRow]:
    """The next batch of believed rows after `after` that a registered transform applies to."""
    engine = facts.engine
    with engine.reading() as conn:
        return engine.backfill.transformable_batch(conn, keys, after, limit)


def run_backfill(
    facts: FactWriter, *, batch_size: int = 500, registry: TransformRegistry = REGISTRY
) -> BackfillReport:
    """Rewrite every believed row that has a registered transform (see the module doc)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    report = BackfillReport()
    if not registry:
        return report
    keys, engine = registry.registered_keys(), facts.engine
    after = 0
    while rows := _select(facts, keys, after, batch_size):
        after = rows[-1].row_id
        plans = [_plan(row, registry, facts.max_value_bytes) for row in rows]
        vectors = _embed(facts, plans)
        report.add(facts.run(partial(_apply, facts=facts, plans=plans, vectors=vectors)))
    with engine.reading() as conn:
        report.remaining = engine.backfill.transformable_count(conn, keys)
    return report


@dataclass
class EmbedReport:
    """Facts given vectors, and facts left for a later run (a writer changed them meanwhile)."""

    embedded: int = 0
    skipped: int = 0

    def add(self, other: EmbedReport) -> None:
        self.embedded += other.embedded
        self.skipped += other.skipped

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_embedding(
    facts: FactWriter, *, batch_size: int = 500, progress: Callable[[int], None] | None = None
) -> EmbedReport:
    """Give vectors to the facts written without an embedding, in place: each indexed fact
    (it has a keyword row) with no vectors gets its believed value's, from the store's index
    config, the way the backfill re-embeds. History, episodes and provenance are the file's
    own and stay as they are. Batches as the backfill's; idempotent."""
    if not facts.spec:
        raise ConfigurationError("embedding needs an index config: open the store with index=")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    report, engine, after = EmbedReport(), facts.engine, 0
    while True:
        with engine.reading() as conn:
            rows = engine.backfill.unembedded_batch(conn, after, batch_size)
        if not rows:
            return report
        after = rows[-1].fact_id
        embedded = facts.vectors_of([loads_deep(r.value) for r in rows])
        vectors = {r.fact_id: v for r, v in zip(rows, embedded, strict=True)}
        report.add(facts.run(partial(_attach, rows=rows, vectors=vectors)))
        if progress is not None:
            progress(len(rows))


def _attach(tx: ledger.Tx, *, rows: list[FactRow], vectors: dict[int, Any]) -> EmbedReport:
    """Write the batch's vectors, but for a row another writer retired since it was read
    (the next run embeds its successor)."""
    done, engine = EmbedReport(), tx.engine
    for row in rows:
        if not engine.backfill.still_believed(tx.cur, row.row_id):
            done.skipped += 1
        elif vectors[row.fact_id]:
            current = row.valid_to is None
            engine.indexing.write_vectors(
                tx.cur, row.fact_id, row.tenant_id, vectors[row.fact_id], current=current
            )
            done.embedded += 1
    return done

"""The typed records of the ledger: `MemoryFact` goes in, `Fact` comes out.

Each `Fact` field answers one of the design's questions (what, when true, when known,
who said it, which tenant, what it replaced, how long to keep).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sgam_store.core import clock, namespaces
from sgam_store.core.errors import InvalidFactError, SGAMError

DEFAULT_MEMORY_TYPE = "semantic"
SCHEMA_VERSION = 1


class FactDraft(NamedTuple):
    """A `MemoryFact`'s fields, unvalidated: what the store builds for a BaseStore put,
    whose op it has already validated. Building the pydantic model cost 19 us a put,
    this 2 us. The write rule reads either."""

    tenant_id: str
    subject: str
    attribute: str
    value: Any
    valid_from: str
    source_episode_id: str
    memory_type: str = DEFAULT_MEMORY_TYPE
    schema_version: int = SCHEMA_VERSION
    confidence: float | None = None
    retention_policy: str | None = None
    expires_at: str | None = None


class MemoryFact(BaseModel):
    """A fact to record: identity, value, when it starts being true, and its source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str = Field(description="Owner of the fact; every read and write is scoped by it.")
    subject: str = Field(description="Entity the fact is about, e.g. 'mira' ('' for the tenant).")
    attribute: str = Field(description="What about the subject, e.g. 'passport_deadline'.")
    value: Any = Field(description="JSON value: a scalar or an object.")
    valid_from: str = Field(description="When it became true in the world (aware timestamp).")
    source_episode_id: str = Field(description="Episode (or external source) that said it.")
    memory_type: str = DEFAULT_MEMORY_TYPE
    schema_version: int = SCHEMA_VERSION
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    retention_policy: str | None = None
    expires_at: str | None = None

    def __init__(self, **data: Any) -> None:
        """When one of this model's own checks is the only problem, its typed error (e.g.
        InvalidTimestampError for a naive time) is raised as itself, not wrapped in
        pydantic's ValidationError, so callers catch the same error the store raises."""
        try:
            super().__init__(**data)
        except ValidationError as exc:
            errors = exc.errors()
            own = errors[0].get("ctx", {}).get("error") if len(errors) == 1 else None
            if isinstance(own, SGAMError):
                raise own from exc
            raise

    @field_validator("tenant_id")
    @classmethod
    def _tenant(cls, v: str) -> str:
        return namespaces.check_item_namespace((v,))[0]

    @field_validator("subject")
    @classmethod
    def _subject(cls, v: str) -> str:
        return namespaces.check_subject(v)

    @field_validator("attribute")
    @classmethod
    def _attribute(cls, v: str) -> str:
        return namespaces.check_key(v, "attribute")

    @field_validator("valid_from", "expires_at", mode="before")
    @classmethod
    def _timestamp(cls, v: Any) -> Any:
        return None if v is None else clock.normalize(v)

    @field_validator("source_episode_id")
    @classmethod
    def _source(cls, v: str) -> str:
        if not v:
            raise InvalidFactError("source_episode_id is required (provenance is not optional)")
        return namespaces.check_key(v, "source_episode_id")

    @property
    def namespace(self) -> tuple[str, ...]:
        """The item namespace with the tenant first (`tenant_at=0`); a store with another
        layout places it by its own (`namespaces.Layout.join`)."""
        return namespaces.join(self.tenant_id, self.subject)


class FactRow(NamedTuple):
    """One stored version of a fact: the `facts` table's columns, in order, read by name.

    Timestamps are the stored fixed-width UTC text; `value` is the JSON text.
    """

    row_id: int
    fact_id: int
    tenant_id: str
    namespace: str
    subject: str
    attribute: str
    value: str
    scalar: int
    memory_type: str
    schema_version: int
    valid_from: str
    valid_to: str | None
    recorded_at: str
    known_from: str
    known_to: str | None
    created_at: str
    supersedes_fact_id: int | None
    source_episode_id: str
    confidence: float | None
    retention_policy: str | None
    expires_at: str | None
    ttl_minutes: float | None
    decided_by: str | None


class ItemRow(NamedTuple):
    """The columns of a version an item is built from (`read.items.to_item`), by the
    names `FactRow` gives them: what the schema registry's dual read looks at
    (`schema_migration.present`), and the expiry a remembered listing is valid until.

    A get, a listing or a search's page (`rows_by_id`) reads these 10 of the table's 23
    columns: building a row of 23 from SQLite costs 14 of a filtered listing's 51 us
    (10 rows, measured at 5k)."""

    namespace: str
    attribute: str
    value: str
    scalar: int
    memory_type: str
    schema_version: int
    valid_from: str
    known_to: str | None
    created_at: str
    expires_at: str | None


class PageRow(NamedTuple):
    """A listing's row while no value transform is registered: the 6 of `ItemRow`'s
    columns its item is built from and its page is remembered by (the expiry). The
    other four serve the registry's dual read alone, and every column read costs ~0.1 us
    a row (one user's filtered listing at 5k, the statement 45.2 -> 42.3 us)."""

    namespace: str
    attribute: str
    value: str
    valid_from: str
    created_at: str
    expires_at: str | None


@dataclass(frozen=True)
class ScopeSignals:
    """A small search scope's {fact_id: row_id} (`in_scope`) and, where one statement
    read them too (PostgreSQL's `scope_scored`), its two signals: `keyword_scores` of its
    facts, best first, and their cosines (`similarities`). None: not read yet."""

    members: dict[int, int]
    keyword: list[tuple[int, float]] | None = None
    cosines: dict[int, float] | None = None


@dataclass(frozen=True)
class ForeignItem:
    """An item of another store, on its way in (`SGAMStore.import_items`): its namespace,
    key and value, and its timestamps as the ledger's UTC text (None where unknown)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: str | None = None
    updated_at: str | None = None
    expires_at: str | None = None


@dataclass
class ImportReport:
    """What an import did: items read, facts written, items already current (a re-run),
    and items the source had let expire."""

    read: int = 0
    written: int = 0
    unchanged: int = 0
    expired: int = 0


@dataclass(frozen=True)
class SupersessionDecision:
    """What the memory manager decided about a new memory and one current memory it may
    replace: "supersedes" (the old one was closed where the new one starts),
    "independent" or "duplicate" (both left as they were), with the reason and the
    evidence it was shown. `undone_at` is set once the decision was taken back."""

    decision_id: int
    tenant_id: str
    new_fact_id: int
    old_fact_id: int
    decision: str
    score: float | None
    reason: str
    evidence: dict[str, Any]
    decided_by: str
    decided_at: str
    undone_at: str | None

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> SupersessionDecision:
        """From an engine's decision row (evidence as JSON text)."""
        fields = list(row)
        fields[7] = json.loads(fields[7])
        return cls(*fields)


StoredKey = tuple[str, str]  # (namespace as stored text, attribute)


def latest_per_key(rows: Iterable[FactRow]) -> dict[StoredKey, FactRow]:
    """Per (namespace, attribute), the row with the latest valid start: what `get` picks
    should several versions be visible."""
    best: dict[StoredKey, FactRow] = {}
    for row in rows:
        key = (row.namespace, row.attribute)
        if key not in best or row.valid_from > best[key].valid_from:
            best[key] = row
    return best


class Fact(BaseModel):
    """One stored fact version as the store currently believes it (or believed at known_at)."""

    model_config = ConfigDict(frozen=True)

    fact_id: int = Field(description="Stable id; survives interval closing.")
    tenant_id: str
    namespace: tuple[str, ...] = Field(description="The BaseStore namespace (key: attribute).")
    subject: str
    attribute: str
    value: Any
    valid_from: datetime = Field(description="Start of validity in the world (inclusive).")
    valid_to: datetime | None = Field(description="End of validity (exclusive); None = open.")
    supersedes_fact_id: int | None = Field(description="The fact this one replaced, if any.")
    source_episode_id: str = Field(description="Who said it: the episode or external source.")
    recorded_at: datetime = Field(description="When the store first learned this fact.")
    known_from: datetime = Field(description="Transaction time this version became belief.")
    known_to: datetime | None = Field(description="Transaction time it stopped being belief.")
    created_at: datetime = Field(description="valid_from of the first fact for this key.")
    memory_type: str
    schema_version: int
    confidence: float | None
    retention_policy: str | None
    expires_at: datetime | None
    decided_by: str | None = Field(default=None, description="Conflict policy that chose it.")

    @property
    def is_open(self) -> bool:
        return self.valid_to is None


ChangeKind = Literal["new", "superseded", "closed", "expired", "revised", "erased"]


class Change(BaseModel):
    """One entry of the change feed (`SGAMStore.changes`): a version the store wrote, or
    withdrew, at transaction time `at`, and what that did to the fact.

    Kinds: "new" a fact's first version; "superseded" it was closed (or withdrawn) because
    a fact written at the same instant replaced it (`supersedes_fact_id` points back);
    "closed" a delete ended it; "expired" its TTL ended it; "revised" a version that
    changed the fact but not its interval (a schema backfill, an undone review's link).
    "erased" is reserved: a purge removes rows and keeps no record of them yet, so the
    feed cannot report one. Times are the store's fixed-width UTC text.
    """

    model_config = ConfigDict(frozen=True)

    kind: ChangeKind
    at: str = Field(description="Transaction time of the change.")
    tenant_id: str
    subject: str
    attribute: str
    namespace: tuple[str, ...]
    fact_id: int
    row_id: int = Field(description="The version row the change is about.")
    value: Any
    valid_from: str = Field(description="The fact's valid interval after the change.")
    valid_to: str | None
    supersedes_fact_id: int | None
    superseded_by_fact_id: int | None = Field(
        default=None, description='The fact that replaced it (kind "superseded").'
    )
    source_episode_id: str
    decided_by: str | None = None


@dataclass
class PurgeReport:
    """What an erasure removed: rows per table, and which facts and episodes."""

    deleted: dict[str, int] = field(default_factory=dict)  # the engine's tables
    fact_ids: list[int] = field(default_factory=list)
    episode_ids: list[str] = field(default_factory=list)
    source_episode_ids: list[str] = field(default_factory=list)  # sources of erased facts
    resourced_fact_ids: list[int] = field(default_factory=list)  # kept: another source remains
    cleared_supersedes: int = 0  # rows whose supersedes_fact_id named an erased fact
    checkpointed: bool | None = None  # secure purge only: the WAL was truncated

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

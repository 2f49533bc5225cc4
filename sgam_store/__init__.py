"""sgam-store: a LangGraph BaseStore that keeps memory as typed facts with validity
intervals, tenant scope and provenance, so it never returns a superseded value as current.

The public API is listed here (and `sgam_store.harness` for replay and evaluation tooling,
`sgam_store.cli` for the command); everything else is internal.

The model-facing managers (extraction, the supersession review) load on first use
(PEP 562 `__getattr__`): they import LangChain's chat-model stack, which costs about half
a second, and `import sgam_store` (every `sgam` read command) needs none of it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sgam_store.core.errors import (
    ConfigurationError,
    ConflictError,
    DimensionMismatchError,
    EpisodeNotFoundError,
    ExtensionLoadError,
    FactNotFoundError,
    ForeignDatabaseError,
    InvalidCandidateError,
    InvalidEpisodeError,
    InvalidFactError,
    InvalidFilterError,
    InvalidNamespaceError,
    InvalidQueryError,
    InvalidRetentionPolicyError,
    InvalidSchemaError,
    InvalidTimestampError,
    KeptExistingError,
    ReadOnlyViewError,
    SchemaTransformError,
    SchemaVersionError,
    SGAMError,
    StoreBusyError,
    StoreUnavailableError,
    TenantScopeError,
    ValueTooDeepError,
    ValueTooLargeError,
)
from sgam_store.core.models import Change, Fact, MemoryFact, PurgeReport, SupersessionDecision
from sgam_store.core.namespaces import fact_namespace
from sgam_store.core.schema_migration import TransformRegistry, register_transform
from sgam_store.engines.sqlite.connection import connect
from sgam_store.ledger.episodes import Episode, ExternalSource
from sgam_store.ledger.policies import (
    ConflictPolicy,
    Decision,
    LatestRecordedWins,
    SourcePrecedence,
)
from sgam_store.lifecycle.backfill import BackfillReport
from sgam_store.lifecycle.retention import RetentionPolicy, RetentionReport, parse_policy
from sgam_store.managers.consolidation import (
    ConsolidationConfig,
    ConsolidationResult,
    confirm_candidate,
    consolidate,
    is_extracted,
    list_candidates,
    sweep_candidates,
)
from sgam_store.read.embeddings import LOCAL_DIMS, LocalMiniLM, default_index, local_available
from sgam_store.store import SGAMStore
from sgam_store.views import View
from sgam_store.write.candidates import MemoryUpdate, normalize_attribute, normalize_subject
from sgam_store.write.schemas import AttributeSpec, MemorySchema
from sgam_store.write.service import Rejection, Supersession, WriteResult
from sgam_store.write.supersession import Verdict

if TYPE_CHECKING:
    from sgam_store.managers.extraction import (
        extract_candidates,
        extract_updates,
        extraction_messages,
    )
    from sgam_store.managers.supersession import (
        Dismissal,
        ReviewReport,
        SupersessionVerdicts,
        create_supersession_manager,
        resolve_supersessions,
    )

_LAZY = {
    "extract_candidates": "sgam_store.managers.extraction",
    "extract_updates": "sgam_store.managers.extraction",
    "extraction_messages": "sgam_store.managers.extraction",
    "ReviewReport": "sgam_store.managers.supersession",
    "Dismissal": "sgam_store.managers.supersession",
    "SupersessionVerdicts": "sgam_store.managers.supersession",
    "create_supersession_manager": "sgam_store.managers.supersession",
    "resolve_supersessions": "sgam_store.managers.supersession",
}


def __getattr__(name: str) -> Any:
    """Load a model-facing name on first use, then keep it as a plain module attribute."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sgam_store' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "SGAMStore",
    "View",
    "Fact",
    "Change",
    "MemoryFact",
    "MemoryUpdate",
    "Episode",
    "ExternalSource",
    "MemorySchema",
    "AttributeSpec",
    "ConflictPolicy",
    "Decision",
    "SourcePrecedence",
    "LatestRecordedWins",
    "WriteResult",
    "Rejection",
    "Supersession",
    "extraction_messages",
    "extract_candidates",
    "extract_updates",
    "ConsolidationConfig",
    "ConsolidationResult",
    "consolidate",
    "confirm_candidate",
    "list_candidates",
    "sweep_candidates",
    "is_extracted",
    "resolve_supersessions",
    "create_supersession_manager",
    "ReviewReport",
    "Dismissal",
    "SupersessionVerdicts",
    "SupersessionDecision",
    "Verdict",
    "normalize_subject",
    "normalize_attribute",
    "fact_namespace",
    "connect",
    "LocalMiniLM",
    "LOCAL_DIMS",
    "default_index",
    "local_available",
    "PurgeReport",
    "RetentionPolicy",
    "RetentionReport",
    "parse_policy",
    "BackfillReport",
    "TransformRegistry",
    "register_transform",
    "ConflictError",
    "DimensionMismatchError",
    "EpisodeNotFoundError",
    "ExtensionLoadError",
    "FactNotFoundError",
    "ConfigurationError",
    "ForeignDatabaseError",
    "InvalidCandidateError",
    "InvalidEpisodeError",
    "InvalidFactError",
    "InvalidFilterError",
    "InvalidQueryError",
    "InvalidNamespaceError",
    "InvalidRetentionPolicyError",
    "InvalidSchemaError",
    "InvalidTimestampError",
    "KeptExistingError",
    "ReadOnlyViewError",
    "SchemaTransformError",
    "SchemaVersionError",
    "SGAMError",
    "StoreBusyError",
    "StoreUnavailableError",
    "TenantScopeError",
    "ValueTooDeepError",
    "ValueTooLargeError",
]

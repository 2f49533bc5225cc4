"""sgam-store: a LangGraph BaseStore that keeps memory as typed facts with validity
intervals, tenant scope and provenance, so it never returns a superseded value as current.

The public API is listed here; everything else is internal.
"""

from .backfill import BackfillReport
from .candidates import MemoryUpdate
from .episodes import Episode, ExternalSource
from .erasure import PurgeReport
from .errors import (
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
    InvalidRetentionPolicyError,
    InvalidSchemaError,
    InvalidTimestampError,
    KeptExistingError,
    ReadOnlyViewError,
    SchemaTransformError,
    SchemaVersionError,
    SGAMError,
    StoreBusyError,
    TenantScopeError,
    ValueTooLargeError,
)
from .extraction import extract_candidates, extract_updates, extraction_messages
from .models import Fact, MemoryFact
from .policies import ConflictPolicy, Decision, LatestRecordedWins, SourcePrecedence
from .retention import RetentionPolicy, RetentionReport, parse_policy
from .schema_migration import TransformRegistry, register_transform
from .schemas import AttributeSpec, MemorySchema
from .store import SGAMStore
from .views import View
from .write_path import Rejection, Supersession, WriteResult

__all__ = [
    "SGAMStore",
    "View",
    "Fact",
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
    "ForeignDatabaseError",
    "InvalidCandidateError",
    "InvalidEpisodeError",
    "InvalidFactError",
    "InvalidFilterError",
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
    "TenantScopeError",
    "ValueTooLargeError",
]

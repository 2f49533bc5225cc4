"""sgam-store: a LangGraph BaseStore that keeps memory as typed facts with validity
intervals, tenant scope and provenance, so it never returns a superseded value as current.

The public API is listed here; everything else is internal.
"""

from .errors import (
    ConflictError,
    DimensionMismatchError,
    ExtensionLoadError,
    InvalidFactError,
    InvalidFilterError,
    InvalidNamespaceError,
    InvalidTimestampError,
    ReadOnlyViewError,
    SchemaVersionError,
    SGAMError,
    StoreBusyError,
    TenantScopeError,
    ValueTooLargeError,
)
from .models import Fact, MemoryFact
from .store import SGAMStore
from .views import View

__all__ = [
    "SGAMStore",
    "View",
    "Fact",
    "MemoryFact",
    "ConflictError",
    "DimensionMismatchError",
    "ExtensionLoadError",
    "InvalidFactError",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidTimestampError",
    "ReadOnlyViewError",
    "SchemaVersionError",
    "SGAMError",
    "StoreBusyError",
    "TenantScopeError",
    "ValueTooLargeError",
]

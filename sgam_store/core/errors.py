"""Every error the store raises, in one hierarchy users can catch.

Each class also derives from the builtin that LangGraph code and users already catch
(`ValueError` for bad input, `PermissionError` for scope), so switching from another
`BaseStore` does not break existing `except` clauses.
"""

from __future__ import annotations

from langgraph.store.base import InvalidNamespaceError
from pydantic import BaseModel, ValidationError

from sgam_store.core.decision import Decision

__all__ = [
    "SGAMError",
    "ConflictError",
    "InvalidTimestampError",
    "InvalidFactError",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "DimensionMismatchError",
    "ValueTooLargeError",
    "ReadOnlyViewError",
    "TenantScopeError",
    "StoreBusyError",
    "StoreUnavailableError",
    "ExtensionLoadError",
    "SchemaVersionError",
    "ForeignDatabaseError",
    "KeptExistingError",
    "InvalidEpisodeError",
    "EpisodeNotFoundError",
    "FactNotFoundError",
    "InvalidCandidateError",
    "InvalidSchemaError",
    "InvalidRetentionPolicyError",
    "SchemaTransformError",
    "InvalidScenarioError",
    "ConfigurationError",
]


class SGAMError(Exception):
    """Base class for every error raised by sgam-store."""


class ConflictError(SGAMError, ValueError):
    """A stored fact already has the same key and the same `valid_from`.

    Resolving it needs an application policy (source precedence, confirmation);
    the store never overwrites silently. Nothing was written.
    """


class KeptExistingError(ConflictError):
    """A conflict policy decided to keep the stored fact; the incoming one was not written.

    A `ConflictError` because the contract is the same (nothing written), with the
    policy's `decision` (who decided, and why) and the `existing` fact that won (a
    `core.models.Fact`, typed by its base class because `core.models` imports this module).
    """

    def __init__(self, message: str, *, decision: Decision, existing: BaseModel) -> None:
        super().__init__(message)
        self.decision = decision
        self.existing = existing


class InvalidTimestampError(SGAMError, ValueError):
    """A timestamp was naive (no UTC offset) or could not be parsed."""


class InvalidFactError(SGAMError, ValueError):
    """A fact or candidate is malformed (bad subject, attribute or value)."""


class ValueTooDeepError(InvalidFactError):
    """A value nests lists and objects deeper than the store keeps (`MAX_VALUE_DEPTH`)."""


class InvalidFilterError(SGAMError, ValueError):
    """A search filter used an unknown operator or an unsafe key."""


class InvalidQueryError(SGAMError, ValueError):
    """A search query or recall question that no engine can run (e.g. it holds NUL)."""


class DimensionMismatchError(SGAMError, ValueError):
    """A vector's length differs from the index's configured `dims`."""


class ValueTooLargeError(SGAMError, ValueError):
    """A value's JSON encoding exceeds the store's `max_value_bytes`."""


class ReadOnlyViewError(SGAMError, PermissionError):
    """A write was sent to a read-only view (`as_of`)."""


class TenantScopeError(SGAMError, PermissionError):
    """An operation named a tenant outside the view's scope."""


class ConfigurationError(SGAMError, ValueError):
    """A store option or connection string that cannot be used (e.g. a bad schema name)."""


class StoreBusyError(SGAMError, RuntimeError):
    """The database stayed locked after every bounded retry."""


class StoreUnavailableError(SGAMError, ConnectionError):
    """The database server could not be reached or refused the connection (its host and
    port are named, never the password), or a read-only open found no store to read (no
    file, an empty one, a schema that is not there). A `ConnectionError`, so an `OSError`
    too."""


class ExtensionLoadError(SGAMError, RuntimeError):
    """No SQLite build on this machine can load sqlite-vec."""


# The database in the upgrade command a read-only open's SchemaVersionError names
# (`sgam migrate --db <database>`): a placeholder the CLI fills with its own --db.
DATABASE_PLACEHOLDER = "<database>"


class SchemaVersionError(SGAMError, RuntimeError):
    """The database was written by a newer sgam-store than this one, or, opened read-only,
    by an older one (a read-only open does not upgrade: `sgam migrate` does)."""


class ForeignDatabaseError(SGAMError, ValueError):
    """The file holds another program's tables (LangGraph's SqliteStore, say): refused untouched."""


class InvalidEpisodeError(SGAMError, ValueError):
    """An episode is malformed (bad kind, empty content, reserved or duplicate id)."""


class EpisodeNotFoundError(SGAMError, ValueError):
    """An episode id is not recorded for the tenant (and is not an external marker)."""


class FactNotFoundError(SGAMError, ValueError):
    """A fact id does not exist (or belongs to another tenant than the one named)."""


class InvalidCandidateError(SGAMError, ValueError):
    """A memory candidate from a model is malformed or not allowed by the memory schema."""


class InvalidSchemaError(SGAMError, ValueError):
    """A memory schema declaration is inconsistent (unknown memory type, bad retention)."""


class InvalidRetentionPolicyError(SGAMError, ValueError):
    """A retention policy (fact) or retention class (episode) does not parse."""


class SchemaTransformError(SGAMError, ValueError):
    """A value transform is registered wrongly, or failed on a stored value."""


class InvalidScenarioError(SGAMError, ValueError):
    """A replay scenario file is not valid YAML or does not match the scenario format."""


def explain(error: ValidationError) -> str:
    """One line per problem, 'field: message', without pydantic's boilerplate."""
    parts = []
    for err in error.errors(include_url=False):
        msg = err["msg"].removeprefix("Value error, ")
        loc = ".".join(str(p) for p in err["loc"])
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)

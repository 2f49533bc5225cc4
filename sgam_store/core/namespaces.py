"""Namespaces ↔ fact identity, and namespace matching.

A fact is identified by (tenant_id, subject, attribute). In BaseStore terms the key is
the attribute, and the namespace holds the tenant label at index `tenant_at` (a
`Layout`; 0 by default): ``(tenant_id, *subject_path)``, or with ``tenant_at=1``
LangMem's ``("memories", user_id, ...)``. The subject is every other label, in order,
joined with "." (``"memories"`` there). Labels may not contain "." (LangGraph's own
rule), so the dot-joined text is unambiguous and round-trips.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langgraph.store.base import InvalidNamespaceError, MatchCondition

from sgam_store.core.errors import ConfigurationError, InvalidFactError

SEP = "."
WILDCARD = "*"


def check_labels(labels: Sequence[object], *, allow_wildcard: bool = False) -> tuple[str, ...]:
    """Reject labels that are not non-empty strings free of '.' and NUL."""
    for label in labels:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"namespace label {label!r} in {tuple(labels)!r} must be a str, "
                f"not {type(label).__name__}"
            )
        if not label:
            raise InvalidNamespaceError(f"empty namespace label in {tuple(labels)!r}")
        if SEP in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"namespace label {label!r} in {tuple(labels)!r} contains '.' or NUL"
            )
        if not label.isascii() and _not_utf8(label):
            raise InvalidNamespaceError(f"namespace label {label!r} is not valid UTF-8 text")
        if label == WILDCARD and not allow_wildcard:
            raise InvalidNamespaceError(f"'*' is only a wildcard in list_namespaces: {labels!r}")
    return tuple(labels)  # type: ignore[arg-type]


def _not_utf8(label: str) -> bool:
    """True for text SQLite cannot store, such as a lone surrogate."""
    try:
        label.encode()
    except UnicodeEncodeError:
        return True
    return False


def check_key(key: object, what: str = "key") -> str:
    """A key (the attribute) is non-empty text that SQLite can store: no NUL, valid UTF-8."""
    if not isinstance(key, str) or not key or "\x00" in key:
        raise InvalidFactError(f"{what} must be a non-empty string without NUL, got {key!r}")
    if not key.isascii() and _not_utf8(key):
        raise InvalidFactError(f"{what} {key!r} is not valid UTF-8 text (a lone surrogate?)")
    return key


def check_item_namespace(namespace: Sequence[object]) -> tuple[str, ...]:
    """A namespace that addresses items under the default layout (tenant first)."""
    return DEFAULT_LAYOUT.check_item(namespace)


@dataclass(frozen=True)
class Layout:
    """Where a namespace names its tenant: the label at index `tenant_at`.

    The labels before it are a shared scope (LangMem's "memories"): they belong to the
    subject and partition nothing, so one user's ("memories", "alice") and another's
    ("memories", "bob") are two tenants. A namespace needs at least `tenant_at` + 1
    labels to address an item; a shorter prefix names no tenant and searches them all.
    """

    tenant_at: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.tenant_at, bool) or not isinstance(self.tenant_at, int):
            raise ConfigurationError(f"tenant_at must be an int, got {self.tenant_at!r}")
        if self.tenant_at < 0:
            raise ConfigurationError(f"tenant_at must be 0 or more, got {self.tenant_at}")

    def check_item(self, namespace: Sequence[object]) -> tuple[str, ...]:
        """A namespace that addresses items: its tenant label present, all labels valid."""
        if len(namespace) <= self.tenant_at:
            where = "its first label" if self.tenant_at == 0 else f"label {self.tenant_at}"
            raise InvalidNamespaceError(
                f"namespace {tuple(namespace)!r} names no tenant: {where} is the tenant "
                f"(tenant_at={self.tenant_at})"
            )
        ns = check_labels(namespace)
        if "langgraph" in (ns[0], ns[self.tenant_at]):
            raise InvalidNamespaceError(
                f'"langgraph" is reserved as the root label and as a tenant: {ns!r}'
            )
        return ns

    def check_tenant(self, tenant_id: object) -> str:
        """A tenant label. "langgraph" is never one, wherever the tenant sits: LangGraph
        reserves it as a root label, and a tenant's name means the same in every layout."""
        return self.check_item(("x",) * self.tenant_at + (tenant_id,))[self.tenant_at]

    def split(self, namespace: Sequence[str]) -> tuple[str, str]:
        """(tenant_id, subject) of an item namespace."""
        k = self.tenant_at
        return namespace[k], SEP.join((*namespace[:k], *namespace[k + 1 :]))

    def join(self, tenant_id: str, subject: str) -> tuple[str, ...]:
        """The item namespace of a (tenant, subject) pair: the subject's first
        `tenant_at` labels, the tenant, the rest. An empty subject adds no label."""
        labels = subject.split(SEP) if subject else []
        k = self.tenant_at
        if len(labels) < k:
            raise InvalidNamespaceError(
                f"subject {subject!r} has {len(labels)} labels; with tenant_at={k} its "
                f"first {k} are the namespace's labels before the tenant"
            )
        return (*labels[:k], tenant_id, *labels[k:])

    def fact_namespace(self, tenant_id: str, subject: str) -> tuple[str, ...]:
        """The BaseStore namespace of a fact's (tenant, subject), both checked first."""
        return self.check_item(self.join(self.check_tenant(tenant_id), check_subject(subject)))

    def tenant_of(self, prefix: Sequence[str]) -> str | None:
        """The tenant a namespace prefix names, if it is long enough to name one."""
        return prefix[self.tenant_at] if len(prefix) > self.tenant_at else None

    def relative(self, namespace: Sequence[str]) -> tuple[str, ...]:
        """A namespace as a tenant view shows it: without its tenant label."""
        k = self.tenant_at
        return (*namespace[:k], *namespace[k + 1 :])

    def absolute(self, tenant_id: str, relative: Sequence[str]) -> tuple[str, ...]:
        """A tenant view's namespace (or prefix) in the store: the tenant label inserted
        at `tenant_at`. A prefix shorter than that stays as it is; the view's tenant
        condition confines it."""
        k = self.tenant_at
        if len(relative) < k:
            return tuple(relative)
        return (*relative[:k], tenant_id, *relative[k:])


DEFAULT_LAYOUT = Layout()


def settle_tenant_at(stored: str | None, requested: int | None, has_facts: bool) -> int:
    """The database's `tenant_at`: the stored one (a database from before the setting
    has facts laid out with 0), else the requested one. Asking for another raises,
    since reading with another position would silently re-partition every fact."""
    found = int(stored) if stored is not None else (0 if has_facts else None)
    if found is None:
        return Layout(0 if requested is None else requested).tenant_at
    if requested is not None and Layout(requested).tenant_at != found:
        raise ConfigurationError(
            f"this database places the tenant at namespace label {found} (tenant_at={found}); "
            f"it was opened with tenant_at={requested}. Open it with tenant_at={found}, "
            "or import its items into a new store (sgam import)"
        )
    return found


def to_text(namespace: Sequence[str]) -> str:
    return SEP.join(namespace)


def from_text(text: str) -> tuple[str, ...]:
    return tuple(text.split(SEP))


def split(namespace: Sequence[str]) -> tuple[str, str]:
    """(tenant_id, subject) of an item namespace under the default layout."""
    return DEFAULT_LAYOUT.split(namespace)


def join(tenant_id: str, subject: str) -> tuple[str, ...]:
    """The item namespace of a (tenant, subject) pair under the default layout."""
    return DEFAULT_LAYOUT.join(tenant_id, subject)


def fact_namespace(tenant_id: str, subject: str, *, tenant_at: int = 0) -> tuple[str, ...]:
    """The BaseStore namespace of a fact's (tenant, subject), both checked first, for a
    store whose tenant label is at `tenant_at`."""
    return Layout(tenant_at).fact_namespace(tenant_id, subject)


def check_subject(subject: str) -> str:
    """A subject is '' or dot-separated valid labels."""
    if subject:
        check_labels(subject.split(SEP))
    return subject


def prefix_sql(column: str, prefix: Sequence[str]) -> tuple[str, list[str]]:
    """SQL matching namespaces under `prefix` at label boundaries ('foo' never matches 'foobar').

    The range [text, text + '/') holds the namespace and every one under it ('.' sorts just
    before '/'), and lets the planner seek an index on (tenant_id, namespace): with the
    label test alone it walked the tenant's current facts instead (one subject of a
    10,000-fact tenant: 6.3 -> 0.06 ms). Inside the range, a namespace at or past
    text + '.' starts with it: the label test is two comparisons, where a GLOB cost about
    a microsecond a row (one user's filtered listing at 5k, the statement 75 -> 32 us).
    An empty prefix matches everything.
    """
    if not prefix:
        return "1", []
    text = to_text(prefix)
    return (
        f"({column} >= ? AND {column} < ? AND ({column} = ? OR {column} >= ?))",
        [text, text + "/", text, text + SEP],
    )


def matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    """Label-wise prefix/suffix match where '*' stands for exactly one label."""
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    if not path:
        return True
    return all(p in (WILDCARD, label) for p, label in zip(path, part, strict=True))


def literal_prefix(conditions: Sequence[MatchCondition]) -> tuple[str, ...]:
    """The leading wildcard-free labels of the first prefix condition, for SQL narrowing."""
    for condition in conditions:
        if condition.match_type == "prefix":
            labels: list[str] = []
            for label in condition.path:
                if label == WILDCARD:
                    break
                labels.append(label)
            return tuple(labels)
    return ()

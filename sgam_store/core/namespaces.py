"""Namespaces ↔ fact identity, and namespace matching.

A fact is identified by (tenant_id, subject, attribute). In BaseStore terms
``namespace = (tenant_id, *subject_path)`` and ``key = attribute``; the subject is
the subject path joined with ".". Labels may not contain "." (LangGraph's own rule),
so the dot-joined text is unambiguous and round-trips.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langgraph.store.base import InvalidNamespaceError, MatchCondition

from sgam_store.core.errors import InvalidFactError

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
    """A namespace that addresses items: at least the tenant label, all labels valid."""
    if not namespace:
        raise InvalidNamespaceError("namespace cannot be empty: its first label is the tenant")
    ns = check_labels(namespace)
    if ns[0] == "langgraph":
        raise InvalidNamespaceError(f'root label "langgraph" is reserved: {ns!r}')
    return ns


def to_text(namespace: Sequence[str]) -> str:
    return SEP.join(namespace)


def from_text(text: str) -> tuple[str, ...]:
    return tuple(text.split(SEP))


def split(namespace: Sequence[str]) -> tuple[str, str]:
    """(tenant_id, subject) of an item namespace."""
    return namespace[0], SEP.join(namespace[1:])


def join(tenant_id: str, subject: str) -> tuple[str, ...]:
    """The item namespace of a (tenant, subject) pair; an empty subject adds no label."""
    return (tenant_id, *subject.split(SEP)) if subject else (tenant_id,)


def fact_namespace(tenant_id: str, subject: str) -> tuple[str, ...]:
    """The BaseStore namespace of a fact's (tenant, subject), both checked first."""
    check_item_namespace((tenant_id,))
    return join(tenant_id, check_subject(subject))


def check_subject(subject: str) -> str:
    """A subject is '' or dot-separated valid labels."""
    if subject:
        check_labels(subject.split(SEP))
    return subject


def glob_literal(text: str) -> str:
    """Escape GLOB metacharacters. GLOB, not LIKE: LIKE is case-insensitive for ASCII."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def prefix_sql(column: str, prefix: Sequence[str]) -> tuple[str, list[str]]:
    """SQL matching namespaces under `prefix` at label boundaries ('foo' never matches 'foobar').

    `= ? OR GLOB ?` keeps the condition indexable; an empty prefix matches everything.
    """
    if not prefix:
        return "1", []
    text = to_text(prefix)
    return f"({column} = ? OR {column} GLOB ?)", [text, glob_literal(text) + ".*"]


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

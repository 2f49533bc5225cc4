"""Query parameters of the inspector's pages: parsed and bounded here, so a bad one is a
400 page naming the parameter, never a 500 from deep inside the store."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sgam_store.core import clock
from sgam_store.core.errors import InvalidTimestampError

PER_PAGE = 50  # rows a listing shows unless ?per_page= says otherwise
MAX_PER_PAGE = 200  # a page never reads more values than this
MAX_PAGE = 100_000
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# The instants a page accepts: wide for any history people record, and far enough from
# datetime's ends (years 1 and 9999) that a picture's margins around them stay dates.
EARLIEST, LATEST = "1000-01-01T00:00:00.000000Z", "9000-01-01T00:00:00.000000Z"


class BadParameter(ValueError):
    """A query parameter the page cannot use; the app answers 400 with this message."""


def text(query: Mapping[str, str], name: str, *, required: bool = False, limit: int = 500) -> str:
    """A text parameter exactly as given, spaces kept: a tenant, subject, key or episode id
    may begin or end with a space, and "passport " must never show "passport".
    `required` refuses it missing or empty."""
    value = query.get(name, "")
    if required and not value:
        raise BadParameter(f"{name} is required")
    if len(value) > limit or "\x00" in value:
        raise BadParameter(f"{name} must be at most {limit} characters, without NUL")
    return value


def cursor(query: Mapping[str, str], name: str) -> str | None:
    """A keyset cursor: the last name the page before showed, exactly as `text` takes it,
    "" included (a tenant's own namespace is the subject ""); None when absent, the
    first page."""
    return text(query, name) if name in query else None


def number(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """A whole number in [low, high], or `default` when absent."""
    raw = query.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise BadParameter(f"{name} must be a whole number from {low} to {high}, got {raw!r}")
    return int(raw)


def instant(query: Mapping[str, str], name: str) -> str | None:
    """An instant in UTC: a date (its midnight, UTC) or an ISO-8601 time with an offset.
    A naive time is refused, as the store refuses it, rather than guessed."""
    raw = query.get(name, "").strip()
    if not raw:
        return None
    if _DATE.match(raw):
        raw += "T00:00:00Z"
    try:
        moment = clock.normalize(raw)
    except InvalidTimestampError as exc:
        raise BadParameter(f"{name}: {exc}") from None
    if not EARLIEST <= moment < LATEST:
        raise BadParameter(f"{name} must lie between years 1000 and 8999, got {raw!r}")
    return moment


@dataclass(frozen=True)
class Paging:
    """Which slice of a listing a page shows (1-based page number)."""

    page: int
    per_page: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    @classmethod
    def of(cls, query: Mapping[str, str]) -> Paging:
        return cls(
            number(query, "page", 1, 1, MAX_PAGE),
            number(query, "per_page", PER_PAGE, 1, MAX_PER_PAGE),
        )


@dataclass(frozen=True)
class When:
    """The point in time every page answers for: valid time and belief time (None: now)."""

    valid_at: str | None = None
    known_at: str | None = None

    @classmethod
    def of(cls, query: Mapping[str, str]) -> When:
        return cls(instant(query, "valid_at"), instant(query, "known_at"))

    @property
    def now(self) -> bool:
        return self.valid_at is None and self.known_at is None

    def params(self) -> dict[str, str]:
        """The URL parameters that carry this point in time to the next page: to the
        second where that is exact (`2026-06-02T00:00:00Z`), in full where it is not."""
        found = {"valid_at": self.valid_at, "known_at": self.known_at}
        return {k: _exact_text(v) for k, v in found.items() if v}


def _exact_text(stored: str) -> str:
    """A stored instant as a link carries it: its microseconds only when they are not 0."""
    return f"{stored[:19]}Z" if stored.endswith(".000000Z") else stored

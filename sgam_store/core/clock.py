"""Time handling: parse aware timestamps, store them as fixed-width UTC text.

Stored form is ``YYYY-MM-DDTHH:MM:SS.ffffffZ``: every value has the same width and
the same zone, so SQLite's plain text comparison *is* chronological order and the
interval predicates in the ledger can use ordinary indexes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta

from sgam_store.core.errors import InvalidTimestampError

Timestamp = datetime | str
MICROSECOND = timedelta(microseconds=1)


def to_utc(value: Timestamp) -> datetime:
    """Return an aware UTC datetime; naive or unparseable input is an error, never a guess."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError as exc:
            raise InvalidTimestampError(f"cannot parse timestamp {value!r}: {exc}") from None
    elif isinstance(value, datetime):
        parsed = value
    else:
        raise InvalidTimestampError(
            f"timestamp must be a datetime or ISO-8601 string, got {type(value).__name__}"
        )
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise InvalidTimestampError(
            f"timestamp {value!r} is naive; give a UTC offset or 'Z' (e.g. 2026-06-03T10:00:00Z)"
        )
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise InvalidTimestampError(
            f"timestamp {value!r} is outside the representable range"
        ) from None


def fmt(value: datetime) -> str:
    """Fixed-width UTC text for an aware datetime (zero-padded year: text order = time order)."""
    v = value.astimezone(UTC)
    return (
        f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:"
        f"{v.second:02d}.{v.microsecond:06d}Z"
    )


def normalize(value: Timestamp) -> str:
    """Parse, check and format in one step: the form every stored timestamp takes."""
    return fmt(to_utc(value))


def parse_stored(text: str | None) -> datetime | None:
    """Read a stored timestamp back as an aware datetime."""
    if text is None:
        return None
    return datetime.fromisoformat(text)


def readable(instants: Iterable[Timestamp | None]) -> list[str | None]:
    """Instants as a person reads them: UTC to the second (``2026-06-03T10:00:00Z``), with
    microseconds only on those that would otherwise read the same as another, distinct one
    of the same listing (two versions a microsecond apart must not look equal). Stored text
    and JSON keep full precision; this is for tables, pages and pictures. None stays None."""
    moments = [None if i is None else to_utc(i) for i in instants]
    seconds: dict[datetime, set[datetime]] = {}
    for moment in moments:
        if moment is not None:
            seconds.setdefault(moment.replace(microsecond=0), set()).add(moment)
    shown: list[str | None] = []
    for moment in moments:
        if moment is None:
            shown.append(None)
            continue
        text = fmt(moment)
        crowded = len(seconds[moment.replace(microsecond=0)]) > 1
        shown.append(text if crowded else f"{text[:19]}Z")
    return shown


def readable_one(instant: Timestamp | None) -> str | None:
    """One instant, to the second: `readable` of a listing of one."""
    return readable([instant])[0]


_second: tuple[int, str] = (-1, "")


def utc_now() -> str:
    """Wall-clock now in stored form (for reads; writes use CLOCK).

    Every current read compares expiry with it, so the formatted second is cached.
    """
    global _second
    now = time.time()
    whole = int(now)
    if whole != _second[0]:
        _second = (whole, fmt(datetime.fromtimestamp(whole, UTC))[:19])
    return f"{_second[1]}.{int((now - whole) * 1_000_000):06d}Z"


def shift(text: str, delta: timedelta) -> str:
    """Move a stored timestamp by `delta`, keeping the stored form."""
    return fmt(datetime.fromisoformat(text) + delta)


_REPLAYED: ContextVar[Callable[[], str] | None] = ContextVar("sgam_replayed_now", default=None)


@contextmanager
def replayed_time(now: Callable[[], str]) -> Iterator[None]:
    """Writes inside the block, in this thread or task only, take their transaction time
    from `now` (stored form) instead of the wall clock.

    For replaying a recorded conversation (`harness.scenario.replay`), whose belief times
    are the recording's own, so `known_at` questions can be asked of the replayed file.
    No write path of the library sets it: belief time is never back-dated in production.
    """
    token = _REPLAYED.set(now)
    try:
        yield
    finally:
        _REPLAYED.reset(token)


class Clock:
    """Strictly increasing UTC "now" for one process.

    Two writes in the same microsecond would otherwise share a `valid_from` and
    trip the ConflictError rule; the clock hands out distinct instants instead.
    """

    def __init__(self) -> None:
        self._last = datetime.min.replace(tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> str:
        replayed = _REPLAYED.get()
        if replayed is not None:  # a replay's own, strictly increasing clock
            return replayed()
        with self._lock:
            current = datetime.now(UTC)
            if current <= self._last:
                current = self._last + MICROSECOND
            self._last = current
            return fmt(current)


CLOCK = Clock()

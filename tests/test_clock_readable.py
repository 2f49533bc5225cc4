"""Times people read: to the second, microseconds only where two distinct instants of a
listing would otherwise look the same."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from sgam_store.core import clock


def test_seconds_unless_two_versions_would_look_equal() -> None:
    shown = clock.readable(
        ["2026-06-03T10:00:00Z", "2026-06-03T10:00:00.000001Z", "2026-06-02T00:00:00+02:00", None]
    )
    assert shown == [
        "2026-06-03T10:00:00.000000Z",
        "2026-06-03T10:00:00.000001Z",
        "2026-06-01T22:00:00Z",
        None,
    ]
    assert clock.readable_one("2026-12-06T04:51:19.822836Z") == "2026-12-06T04:51:19Z"


moments = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)


@given(st.lists(moments, max_size=8))
def test_distinct_instants_never_read_the_same(instants: list[datetime]) -> None:
    shown = clock.readable(instants)
    for a, text_a in zip(instants, shown, strict=True):
        assert clock.to_utc(text_a) == a.replace(microsecond=0) or clock.to_utc(text_a) == a
        for b, text_b in zip(instants, shown, strict=True):
            assert (text_a == text_b) == (a == b)

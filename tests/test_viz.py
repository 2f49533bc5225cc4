"""The timeline picture (`sgam_store.viz.timeline_svg`): well-formed SVG with one bar per
version the store ever wrote, open bars marked, retired ones distinct, every text escaped."""

from __future__ import annotations

import bisect
import itertools
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sgam_store import (
    Fact,
    FactNotFoundError,
    InvalidTimestampError,
    MemoryFact,
    SGAMStore,
    TenantScopeError,
)
from sgam_store.core import clock
from sgam_store.viz import MIN_STRETCH, SVG, timeline_svg, value_text

NS = {"svg": "http://www.w3.org/2000/svg"}
HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>\x01'


def fact(value: object, valid_from: str, source: str, attribute: str = "deadline") -> MemoryFact:
    return MemoryFact(
        tenant_id="acme",
        subject="mira",
        attribute=attribute,
        value=value,
        valid_from=valid_from,
        source_episode_id=source,
    )


@pytest.fixture
def seeded(db_path: str) -> Iterator[SGAMStore]:
    """The seed's check: e1, its correction e2, and a delayed e0 (4 versions, 1 retired)."""
    with SGAMStore.from_conn_string(db_path) as store:
        store.setup()
        store.replace_fact(fact("2026-07-15", "2026-06-01T09:00:00Z", "e1"))
        store.replace_fact(fact("2026-06-30", "2026-06-03T10:00:00Z", "e2"))
        store.replace_fact(fact("2026-08-01", "2026-05-30T08:00:00Z", "e0"))
        yield store


def bars(svg: str) -> list[ET.Element]:
    return ET.fromstring(svg).findall(".//svg:g[@data-fact-id]", NS)


def test_one_bar_per_version_retired_ones_distinct(seeded: SGAMStore) -> None:
    svg = timeline_svg(seeded, "acme", "mira", "deadline")
    versions = seeded.versions("acme", "mira", "deadline")
    drawn = bars(svg)
    assert len(drawn) == len(versions) == 4
    assert [int(g.get("data-fact-id")) for g in drawn] == [v.fact_id for v in versions]
    assert [g.get("data-believed") for g in drawn] == ["false", "true", "true", "true"]
    assert "retired" in drawn[0].get("class") and "current" in drawn[1].get("class")
    for g in drawn:
        assert len(g.findall("svg:rect[@class='bar']", NS)) == 1
    assert ET.fromstring(svg).find(".//svg:g[@class='legend']", NS) is not None


def test_open_bars_are_marked_and_closed_ones_not(seeded: SGAMStore) -> None:
    drawn = bars(timeline_svg(seeded, "acme", "mira", "deadline"))
    versions = seeded.versions("acme", "mira", "deadline")
    assert [v.is_open for v in versions] == [True, False, True, False]  # e1 until corrected
    for g, version in zip(drawn, versions, strict=True):
        marked = g.find("svg:path[@class='open-arrow']", NS) is not None
        labelled = [t.text for t in g.findall("svg:text[@class='open-label']", NS)]
        assert marked == version.is_open == (g.get("data-open") == "true")
        assert labelled == (["open"] if marked else [])


def test_the_bars_sit_where_their_times_say(seeded: SGAMStore) -> None:
    """Valid time across: e0 lies left of e1, which lies left of e2; belief time up: the
    corrected e1 band starts above the retired one."""
    drawn = bars(timeline_svg(seeded, "acme", "mira", "deadline"))
    rect = [g.find("svg:rect[@class='bar']", NS) for g in drawn]
    x = [float(r.get("x")) for r in rect]
    bottom = [float(r.get("y")) + float(r.get("height")) for r in rect]
    retired, e1, e2, e0 = range(4)
    assert x[e0] < x[e1] == x[retired] < x[e2]
    assert bottom[retired] > bottom[e1] == bottom[e2] > bottom[e0]  # SVG y grows down


def test_every_text_is_escaped(db_path: str) -> None:
    with SGAMStore.from_conn_string(db_path) as store:
        store.replace_fact(fact(HOSTILE, "2026-06-01T09:00:00Z", "e1", attribute="x"))
        store.replace_fact(fact({"html": HOSTILE}, "2026-06-02T09:00:00Z", "e2", attribute="x"))
        svg = timeline_svg(store, "acme", "mira", "x", width=1600)
    root = ET.fromstring(svg)  # well-formed, though the value holds a control character
    assert root.findall(".//svg:script", NS) == [] and root.findall(".//svg:img", NS) == []
    assert "<script>" not in svg and "<img" not in svg
    texts = " ".join(t.text or "" for t in root.iter(f"{{{NS['svg']}}}text"))
    assert "<script>alert(1)</script>" in texts  # shown as text, not markup


def test_marks_for_valid_at_and_known_at(seeded: SGAMStore) -> None:
    first = seeded.versions("acme", "mira", "deadline")[0]
    svg = timeline_svg(
        seeded,
        "acme",
        "mira",
        "deadline",
        valid_at="2026-06-02T00:00:00Z",
        known_at=first.known_from,
    )
    root = ET.fromstring(svg)
    assert "2026-06-02" in "".join(root.find(".//svg:g[@class='valid-at']", NS).itertext())
    assert root.find(".//svg:g[@class='known-at']", NS) is not None
    plain = ET.fromstring(timeline_svg(seeded, "acme", "mira", "deadline"))
    assert plain.find(".//svg:g[@class='valid-at']", NS) is None
    with pytest.raises(InvalidTimestampError):
        timeline_svg(seeded, "acme", "mira", "deadline", valid_at="2026-06-02T00:00:00")


def test_notebooks_display_it_and_bad_calls_are_refused(seeded: SGAMStore) -> None:
    svg = timeline_svg(seeded, "acme", "mira", "deadline", width=500, height=240)
    assert isinstance(svg, SVG) and isinstance(svg, str)
    assert svg._repr_svg_() == svg
    assert ET.fromstring(svg).get("width") == "500"
    with pytest.raises(FactNotFoundError):
        timeline_svg(seeded, "acme", "mira", "no_such_key")
    with pytest.raises(ValueError, match="at least"):
        timeline_svg(seeded, "acme", "mira", "deadline", width=10)
    with pytest.raises(TenantScopeError):
        timeline_svg(seeded.for_tenant("globex"), "acme", "mira", "deadline")
    assert len(bars(timeline_svg(seeded.for_tenant("acme"), "acme", "mira", "deadline"))) == 4


def test_import_sgam_store_does_not_load_viz() -> None:
    code = "import sys, sgam_store; print('sgam_store.viz' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- the picture cannot lie
#
# Random histories written through the store (belief times from a replayed clock, so a
# history spans months of belief time as a real one does), then the SVG read back: its
# coordinates against the instants the store holds and those its labels name.

BASE = datetime(2025, 6, 1, tzinfo=UTC)
TX_BASE = datetime(2026, 1, 1, tzinfo=UTC)
TOLERANCE = 0.05  # px: coordinates are written to 1/100 px
BELIEF_LABEL = re.compile(r"^(?:(\d{4}-\d{2}-\d{2}) )?(\d{2}:\d{2}:\d{2})(\.\d{6})?$")
MINUTES = st.one_of(
    st.integers(0, 400).map(lambda d: d * 1440),  # on a midnight, where ticks also sit
    st.integers(0, 400 * 1440),
    st.integers(0, 3).map(lambda d: 200 * 1440 + d),  # minutes apart, inside a long span
)
SILENCES = st.one_of(st.sampled_from([0, 1, 60, 86_400, 90 * 86_400]), st.integers(0, 10**7))
HISTORIES = st.lists(
    st.tuples(MINUTES, SILENCES), min_size=1, max_size=12, unique_by=lambda w: w[0]
)


class Replay:
    """A strictly increasing transaction clock that the test moves forward."""

    def __init__(self) -> None:
        self.at = TX_BASE

    def now(self) -> str:
        self.at += clock.MICROSECOND
        return clock.fmt(self.at)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SGAMStore]:
    """One store for every example; each history is a key of its own."""
    with SGAMStore.from_conn_string(str(tmp_path_factory.mktemp("viz") / "p.db")) as store:
        store.setup()
        yield store


KEYS = itertools.count()


def write(store: SGAMStore, history: list[tuple[int, int]]) -> str:
    """Write `history` ((valid_from in minutes after BASE, seconds of silence before the
    write) in write order) as one new key; return the key's name."""
    attribute, replay = f"k{next(KEYS)}", Replay()
    with clock.replayed_time(replay.now):
        for n, (minutes, silence) in enumerate(history):
            replay.at += timedelta(seconds=silence)
            when = BASE + timedelta(minutes=minutes)
            store.replace_fact(fact(f"v{n}", clock.fmt(when), f"e{n}", attribute=attribute))
    return attribute


def valid_label(text: str) -> datetime:
    """A valid-time tick's label as the instant it names (a date, or to the minute or
    the second); a label that names no instant fails the test."""
    try:
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    except ValueError:
        pytest.fail(f"the tick label {text!r} names no instant")


def belief_labels(texts: list[str]) -> list[tuple[datetime, timedelta]]:
    """The belief ticks' labels, bottom up, as (instant, precision): a label without a
    date carries the date of the one below it."""
    found, day = [], None
    for text in texts:
        match = BELIEF_LABEL.match(text)
        assert match, f"the belief label {text!r} names no instant"
        day = match.group(1) or day
        exact = match.group(3) or ""
        moment = datetime.fromisoformat(f"{day}T{match.group(2)}{exact}+00:00")
        found.append((moment, timedelta(microseconds=1) if exact else timedelta(seconds=1)))
    return found


@dataclass
class Read:
    """What the SVG says: bars (with the version each draws), ticks, marks, axis words."""

    bars: list[tuple[Fact, float, float, float, float]]  # version, x, y, width, height
    valid_ticks: list[tuple[datetime, float]]
    belief_ticks: list[tuple[datetime, timedelta, float]]
    valid_at: tuple[datetime, float] | None
    known_at: tuple[datetime, float] | None
    words: str


def read(svg: str, versions: list[Fact], marks: tuple[datetime | None, datetime | None]) -> Read:
    root = ET.fromstring(svg)
    rects = [g.find("svg:rect[@class='bar']", NS) for g in bars(svg)]
    drawn = [
        (v, *(float(r.get(a)) for a in ("x", "y", "width", "height")))
        for v, r in zip(versions, rects, strict=True)
    ]
    ticks = [t for t in root.iter(f"{{{NS['svg']}}}text") if "tick" in (t.get("class") or "")]
    across = [t for t in ticks if t.get("text-anchor") == "middle"]
    up = sorted(
        (t for t in ticks if t.get("text-anchor") == "end"), key=lambda t: -float(t.get("y"))
    )
    lines = {}
    for name, axis in (("valid-at", "x1"), ("known-at", "y1")):
        g = root.find(f".//svg:g[@class='{name}']", NS)
        lines[name] = None if g is None else float(g.find("svg:line", NS).get(axis))
    return Read(
        bars=drawn,
        valid_ticks=[(valid_label(t.text), float(t.get("x"))) for t in across],
        belief_ticks=[
            (moment, precision, float(t.get("y")) - 4)
            for (moment, precision), t in zip(belief_labels([t.text for t in up]), up, strict=True)
        ],
        valid_at=None if marks[0] is None else (marks[0], lines["valid-at"]),
        known_at=None if marks[1] is None else (marks[1], lines["known-at"]),
        words=" ".join("".join(t.itertext()) for t in root.iter(f"{{{NS['svg']}}}text")),
    )


def check_valid_time(seen: Read) -> None:
    """One instant, one x; a later instant never to the left; between two version edges
    x runs linearly (so a tick's label is the instant at its place); to scale means x is
    linear in time everywhere; every bar at least 2 px wide when the key has few edges."""
    edges = {}
    for v, x, _, width, _ in seen.bars:
        for moment, at in ((v.valid_from, x), (v.valid_to, x + width)):
            if moment is not None:
                assert abs(edges.setdefault(moment, at) - at) <= TOLERANCE, (moment, at, edges)
    if seen.valid_at is not None:
        edges.setdefault(*seen.valid_at)
    points = sorted([*edges.items(), *seen.valid_ticks])
    for (t1, x1), (t2, x2) in itertools.pairwise(points):
        assert x1 <= x2 + TOLERANCE if t1 < t2 else abs(x1 - x2) <= TOLERANCE, (t1, x1, t2, x2)
    knots = sorted(edges.items())
    for moment, x in seen.valid_ticks:
        i = bisect.bisect_left(knots, (moment,))
        if 0 < i < len(knots) and knots[i][0] != moment:
            (a, xa), (b, xb) = knots[i - 1], knots[i]
            assert abs(x - (xa + (moment - a) / (b - a) * (xb - xa))) <= TOLERANCE, (moment, x)
    if "not to scale: short stretches widened" not in seen.words and len(points) > 2:
        (t0, x0), (t1, x1) = points[0], points[-1]
        for moment, x in points:
            assert abs(x - (x0 + (moment - t0) / (t1 - t0) * (x1 - x0))) <= TOLERANCE, moment
    if len(edges) <= 30:
        assert min(width for *_, width, _ in seen.bars) >= 2
    labels = [label for label, _ in seen.valid_ticks]
    assert len(labels) == len(set(labels)) and len(labels) >= 2, labels


def check_belief_time(seen: Read) -> None:
    """The belief axis says it is not to scale; one instant, one y; a later instant
    never lower; every label sits on the step of an instant it names (so a band starts
    at its tick), and no two labels name the same instant."""
    assert "not to scale" in seen.words.split("belief time", 1)[-1]
    steps = {}
    for v, _, y, _, height in seen.bars:
        ends = [(v.known_from, y + height)]
        if v.known_to is not None and v.known_to > v.known_from:
            ends.append((v.known_to, y))
        for moment, at in ends:
            assert abs(steps.setdefault(moment, at) - at) <= TOLERANCE, (moment, at)
    for (t1, y1), (t2, y2) in itertools.pairwise(sorted(steps.items())):
        assert y1 > y2, (t1, y1, t2, y2)
    if seen.known_at is not None:
        moment, y = seen.known_at
        assert all(y <= at + TOLERANCE for t, at in steps.items() if t <= moment)
        assert all(y >= at - TOLERANCE for t, at in steps.items() if t > moment)
    for moment, precision, y in seen.belief_ticks:
        named = [at for t, at in steps.items() if moment <= t < moment + precision]
        assert any(abs(y - at) <= TOLERANCE for at in named), (moment, y, named)
    labels = [(moment, precision) for moment, precision, _ in seen.belief_ticks]
    assert len(labels) == len(set(labels)) >= 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=HISTORIES,
    valid_at=st.none() | st.integers(-60, 500).map(lambda d: BASE + timedelta(days=d)),
    known_after=st.none() | st.integers(0, 10**8),
)
def test_the_picture_puts_every_instant_where_its_axis_says(
    drawn: SGAMStore, history: list[tuple[int, int]], valid_at, known_after
) -> None:
    attribute = write(drawn, history)
    known_at = None if known_after is None else TX_BASE + timedelta(seconds=known_after)
    svg = timeline_svg(drawn, "acme", "mira", attribute, valid_at=valid_at, known_at=known_at)
    seen = read(svg, drawn.versions("acme", "mira", attribute), (valid_at, known_at))
    check_valid_time(seen)
    check_belief_time(seen)


def test_the_issues_picture_valid_at_sits_on_its_tick_and_a_late_band_on_its_step(
    seeded: SGAMStore,
) -> None:
    """Issue 38's key: "valid at 2026-06-02" on the 2026-06-02 tick, not left of it; the
    delayed e0, believed last, starts on its own belief tick, not half a band above."""
    june2 = datetime(2026, 6, 2, tzinfo=UTC)
    versions = seeded.versions("acme", "mira", "deadline")
    seen = read(
        timeline_svg(seeded, "acme", "mira", "deadline", valid_at=june2), versions, (june2, None)
    )
    assert (june2, seen.valid_at[1]) in seen.valid_ticks
    e0 = next(b for b in seen.bars if b[0].source_episode_id == "e0")
    last = max(seen.belief_ticks, key=lambda t: t[0])
    assert last[0] <= e0[0].known_from < last[0] + last[1]
    assert abs(last[2] - (e0[2] + e0[4])) <= TOLERANCE
    check_valid_time(seen)
    check_belief_time(seen)


def test_a_one_day_version_in_a_year_is_visible_and_the_axis_says_it_is_not_to_scale(
    drawn: SGAMStore,
) -> None:
    attribute = write(drawn, [(0, 0), (180 * 1440, 60), (181 * 1440, 60), (365 * 1440, 60)])
    svg = timeline_svg(drawn, "acme", "mira", attribute)
    seen = read(svg, drawn.versions("acme", "mira", attribute), (None, None))
    one_day = next(b for b in seen.bars if b[0].value == "v1" and b[0].known_to is None)
    assert one_day[3] >= MIN_STRETCH - TOLERANCE
    assert "not to scale" in seen.words
    check_valid_time(seen)
    check_belief_time(seen)


@pytest.mark.parametrize("valid_at", ["0001-01-01T00:00:00Z", "9999-12-31T00:00:00Z"])
def test_a_mark_at_the_ends_of_the_calendar_draws(seeded: SGAMStore, valid_at: str) -> None:
    """Issue 39, finding 16: the plot's padding never runs past year 1 or 9999."""
    svg = timeline_svg(seeded, "acme", "mira", "deadline", valid_at=valid_at)
    assert ET.fromstring(svg).find(".//svg:g[@class='valid-at']", NS) is not None


def test_langmem_values_are_drawn_as_their_content() -> None:
    assert value_text({"content": "prefers tea"}) == "prefers tea"
    assert value_text({"kind": "Memory", "content": {"content": "likes jazz"}}) == "likes jazz"
    assert value_text({"value": 3}) == "3"
    assert value_text({"content": "a", "extra": 1}) == '{"content": "a", "extra": 1}'
    deep: list = []
    for _ in range(2 * sys.getrecursionlimit()):  # deeper than the interpreter's limit,
        deep = [deep]  # which `sgam` run in this process may have raised
    assert "too deep" in value_text(deep)

"""The bitemporal picture of one key, as a self-contained SVG: what notebooks show in one
call and what `sgam ui` draws on a key's page.

Valid time runs across: each version is a bar from `valid_from` to `valid_to`, and a bar
with no end runs into a fade and an arrow marked "open". Belief time runs up: each
version's band starts when the store began to believe it (`known_from`) and ends when it
stopped (`known_to`); versions still believed reach the top ("now"), retired ones are
drawn hatched grey. A correction recorded late shows as a band that starts higher up; a
delayed fact placed in the past, as a bar to the left that starts higher up.

The picture cannot lie about where things are:

- Valid time is one piecewise-linear scale through every edge of every version, so a bar
  spans exactly its interval and two versions that meet share an edge. It is to scale
  unless some stretch between two edges would be too narrow to see (a one-day version in
  a year); that stretch is widened to `MIN_STRETCH` px and the axis says "not to scale".
- A tick sits at a round instant (a midnight, an hour, the first of a month) and its label
  is that instant, written out; no two ticks read the same.
- Belief time is drawn by order, not to scale, and the axis says so: a store's writes
  often come seconds apart after months of silence, which a linear axis would squash into
  one line. Each distinct instant is a step, labelled with its time (to the second, with
  microseconds only where two steps would otherwise read the same), and every band
  starts exactly at its step.

Every text is escaped, and characters XML cannot hold are replaced: values are whatever
users and models said. Only the store's public API is read (`versions`), so a tenant
view (`store.for_tenant(t)`) draws only its own keys.
"""

from __future__ import annotations

import bisect
import html
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from sgam_store.core import clock
from sgam_store.core.errors import FactNotFoundError
from sgam_store.core.models import Fact

MARGIN = {"left": 172, "right": 48, "top": 44, "bottom": 96}
OPEN_ZONE = 48  # px at the right where open bars fade into their arrow
MIN_STRETCH = 6.0  # px: the narrowest a stretch of valid time between two edges is drawn
CHAR_PX = 6.4  # a rough width of one 11px character, to shorten labels that would spill
BELIEF_GAP = 14  # px between two belief labels at least
CURRENT, RETIRED, MARK = "#2b6cb0", "#a0aec0", "#c53030"
# XML 1.0 cannot hold these, even escaped; a value may contain them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_FIRST = datetime.min.replace(tzinfo=UTC)
_LAST = datetime.max.replace(tzinfo=UTC)
# Round instants a valid-time tick may sit on: (a step in seconds, or in months) and
# how its label writes the instant out (every label names its instant exactly).
_SECONDS = [
    *((s, 19) for s in (1, 10)),
    *((s * 60, 16) for s in (1, 10, 60, 360)),
    *((d * 86400, 10) for d in (1, 2, 7, 14)),
]
_MONTHS = [1, 3, 6, *(12 * y for y in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000))]


class Versioned(Protocol):
    """What the picture reads: `SGAMStore` or a view of it."""

    def versions(self, tenant_id: str, subject: str, attribute: str) -> list[Fact]: ...


class SVG(str):
    """SVG markup that Jupyter displays as a picture (`_repr_svg_`); still a `str` to
    write to a file or put in a page."""

    def _repr_svg_(self) -> str:
        return str(self)


def esc(text: object) -> str:
    """Text safe in SVG content and in quoted attributes."""
    return html.escape(_NOT_XML.sub("\ufffd", str(text)), quote=True)


def value_text(value: Any) -> str:
    """A value as a person reads it: LangMem's `{"content": ...}` (and its manager's
    `{"kind": ..., "content": {...}}`) as the content, the store's `{"value": x}` as x,
    strings as they are, anything else as JSON. A value nested too deep for the JSON
    writer is named, not shown: one value never breaks a page."""
    for _ in range(3):  # LangMem's manager nests content once; more is someone's data
        if isinstance(value, dict) and (set(value) in ({"value"}, {"content"})):
            value = next(iter(value.values()))
        elif isinstance(value, dict) and set(value) == {"kind", "content"}:
            value = value["content"]
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (RecursionError, ValueError):
        return f"({type(value).__name__} nested too deep to show)"


def timeline_svg(
    store: Versioned,
    tenant_id: str,
    subject: str,
    attribute: str,
    *,
    valid_at: clock.Timestamp | None = None,
    known_at: clock.Timestamp | None = None,
    width: int = 760,
    height: int = 360,
) -> SVG:
    """The bitemporal picture of the key (tenant_id, subject, attribute): one
    `<g class="version" data-fact-id=...>` bar per version the store ever wrote,
    retired ones included; `valid_at` adds a vertical line, `known_at` a horizontal one.
    Raises FactNotFoundError when the key has no version."""
    versions = store.versions(tenant_id, subject, attribute)
    if not versions:
        raise FactNotFoundError(f"{tenant_id}/{subject}.{attribute} has no versions to draw")
    if width < 360 or height < 200:
        raise ValueError(f"the picture needs at least 360x200 px, got {width}x{height}")
    marks = (
        None if valid_at is None else clock.to_utc(valid_at),
        None if known_at is None else clock.to_utc(known_at),
    )
    frame = _Frame.fit(versions, marks[0], width, height)
    title = f"{tenant_id} · {subject}.{attribute}" if subject else f"{tenant_id} · {attribute}"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" class="sgam-timeline" '
        f'font-family="sans-serif" font-size="11">',
        f"<title>{esc(title)}: valid time across, belief time up</title>",
        _DEFS,
        f'<text x="{MARGIN["left"]}" y="20" font-size="14" font-weight="bold">{esc(title)}</text>',
        *frame.axes(),
        *(frame.bar(v) for v in versions),
        *frame.marks(*marks),
        *frame.legend(),
        "</svg>",
    ]
    return SVG("\n".join(parts))


_DEFS = (
    "<defs>"
    '<linearGradient id="sgam-fade"><stop offset="0" stop-color="white" stop-opacity="0"/>'
    '<stop offset="1" stop-color="white" stop-opacity="0.9"/></linearGradient>'
    '<pattern id="sgam-hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="#edf2f7"/>'
    f'<line x1="0" y1="0" x2="0" y2="6" stroke="{RETIRED}" stroke-width="2"/></pattern>'
    "</defs>"
)


@dataclass(frozen=True)
class _Scale:
    """Valid time to x: linear between consecutive knots (every version's edges, the
    plot's ends, the valid-at mark), each stretch at least `MIN_STRETCH` px wide (or
    less when the knots are so many that the plot has no room for that)."""

    knots: list[datetime]
    xs: list[float]
    to_scale: bool  # no stretch was widened: x is linear in time

    @classmethod
    def fit(cls, knots: list[datetime], left: float, right: float) -> _Scale:
        spans = [(b - a).total_seconds() for a, b in itertools.pairwise(knots)]
        floor = min(MIN_STRETCH, (right - left) / (2 * len(spans)))
        widths, widened = _widths(spans, right - left, floor)
        return cls(knots, list(itertools.accumulate(widths, initial=left)), not widened)

    def x(self, moment: datetime) -> float:
        i = bisect.bisect_right(self.knots, moment) - 1
        if i < 0:
            return self.xs[0]
        if i >= len(self.knots) - 1:
            return self.xs[-1]
        a, b = self.knots[i], self.knots[i + 1]
        return self.xs[i] + (moment - a) / (b - a) * (self.xs[i + 1] - self.xs[i])


def _widths(spans: list[float], room: float, floor: float) -> tuple[list[float], bool]:
    """Each stretch's width: in proportion to its seconds, except those that would be
    narrower than `floor`, which get `floor` (the rest share what is left). The longest
    stretch is never widened (floor <= room / 2n), so the rest always has seconds."""
    widened: set[int] = set()
    while True:
        free = sum(s for i, s in enumerate(spans) if i not in widened)
        per_second = (room - floor * len(widened)) / free
        short = {i for i, s in enumerate(spans) if i not in widened and s * per_second < floor}
        if not short:
            break
        widened |= short
    return [floor if i in widened else s * per_second for i, s in enumerate(spans)], bool(widened)


@dataclass(frozen=True)
class _Frame:
    """The plot's geometry: valid time to x (`_Scale`), belief instants to y (by order)."""

    width: int
    height: int
    scale: _Scale
    instants: list[datetime]  # every known_from and known_to, in order
    said: dict[datetime, str]  # every instant of the key as a person reads it

    @classmethod
    def fit(
        cls, versions: list[Fact], valid_at: datetime | None, width: int, height: int
    ) -> _Frame:
        edges = {v.valid_from for v in versions} | {v.valid_to for v in versions if v.valid_to}
        if valid_at is not None:
            edges.add(valid_at)
        low, high = min(edges), max(edges)
        pad = max((high - low) * 0.06, timedelta(hours=12))
        ends = {_shifted(low, -pad), _shifted(high, pad)}
        left, right = MARGIN["left"], width - MARGIN["right"] - OPEN_ZONE
        scale = _Scale.fit(sorted(edges | ends), left, right)
        believed = {v.known_from for v in versions} | {v.known_to for v in versions if v.known_to}
        said = {
            moment: str(text)
            for group in (list(edges), list(believed))  # two clocks, each read on its own
            for moment, text in zip(group, clock.readable(group), strict=True)
        }
        return cls(width, height, scale, sorted(believed), said)

    # ------------------------------------------------------------ geometry

    @property
    def left(self) -> int:
        return MARGIN["left"]

    @property
    def right(self) -> int:
        return self.width - MARGIN["right"]

    @property
    def top(self) -> int:
        return MARGIN["top"]

    @property
    def bottom(self) -> int:
        return self.height - MARGIN["bottom"]

    def x(self, moment: datetime) -> float:
        return self.scale.x(moment)

    @property
    def step(self) -> float:
        """The height of one belief step: the instants from the bottom up, then now."""
        return (self.bottom - self.top) / len(self.instants)

    def y(self, moment: datetime | None) -> float:
        """The height of a belief instant (None: now, the top): the i-th instant sits
        exactly on step i; an instant between two steps sits between them in proportion
        to time, and one after the last, half a step above it."""
        if moment is None:
            return self.top
        steps = self.instants
        i = bisect.bisect_right(steps, moment) - 1
        if i < 0:
            return self.bottom
        if i == len(steps) - 1:
            return self.bottom - i * self.step - (self.step / 2 if moment > steps[i] else 0)
        share = (moment - steps[i]) / (steps[i + 1] - steps[i])
        return self.bottom - (i + share) * self.step

    # ------------------------------------------------------------ parts

    def bar(self, v: Fact) -> str:
        x0 = self.x(v.valid_from)
        x1 = self.right if v.valid_to is None else self.x(v.valid_to)
        y_low, y_high = self.y(v.known_from), self.y(v.known_to)
        h = max(y_low - y_high, 2.0)  # retired in the transaction that wrote it: a sliver
        believed = v.known_to is None
        state = "current" if believed else "retired"
        fill = CURRENT if believed else "url(#sgam-hatch)"
        # A white edge keeps bars that touch (a close and its successor) apart.
        stroke = ' stroke="white"' if believed else f' stroke="{RETIRED}" stroke-dasharray="4 2"'
        label = value_text(v.value)
        said = self.said
        tip = (
            f"#{v.fact_id} {_shorten(label, 200)}\nvalid {said[v.valid_from]} → "
            f"{said[v.valid_to] if v.valid_to else 'open'}\nbelieved {said[v.known_from]} → "
            f"{said[v.known_to] if v.known_to else 'now'}\nsaid in {v.source_episode_id}"
        )
        parts = [
            f'<g class="version {state}" data-fact-id="{v.fact_id}" '
            f'data-believed="{str(believed).lower()}" '
            f'data-open="{str(v.valid_to is None).lower()}" '
            f'data-valid-from="{clock.fmt(v.valid_from)}" '
            f'data-valid-to="{clock.fmt(v.valid_to) if v.valid_to else ""}" '
            f'data-known-from="{clock.fmt(v.known_from)}" '
            f'data-known-to="{clock.fmt(v.known_to) if v.known_to else ""}">',
            f"<title>{esc(tip)}</title>",
            f'<rect class="bar" x="{x0:.2f}" y="{y_low - h:.2f}" width="{x1 - x0:.2f}" '
            f'height="{h:.2f}" fill="{fill}"{stroke} rx="1"/>',
        ]
        if v.valid_to is None:  # fades out at the right, into an arrow marked "open"
            mid = y_low - h / 2
            parts.append(
                f'<rect class="open-fade" x="{x1 - OPEN_ZONE}" y="{y_low - h:.2f}" '
                f'width="{OPEN_ZONE}" height="{h:.2f}" fill="url(#sgam-fade)"/>'
                f'<path class="open-arrow" d="M{x1 + 1},{mid - 6:.2f} L{x1 + 9},{mid:.2f} '
                f'L{x1 + 1},{mid + 6:.2f} Z" fill="{CURRENT if believed else RETIRED}"/>'
                f'<text class="open-label" x="{x1 + 11}" y="{mid + 4:.2f}" '
                'font-style="italic" fill="#2d3748">open</text>'
            )
        room = (x1 - x0 - 8) / CHAR_PX
        if h >= 12 and room >= 4:
            colour = "white" if believed else "#1a202c"
            parts.append(
                f'<text class="value" x="{x0 + 4:.2f}" y="{y_low - h / 2 + 4:.2f}" '
                f'fill="{colour}">{esc(_shorten(label, int(room)))}</text>'
            )
        parts.append("</g>")
        return "".join(parts)

    def axes(self) -> list[str]:
        mid = (self.top + self.bottom) // 2
        across = "valid time (when it was true)"
        if not self.scale.to_scale:
            across += ", not to scale: short stretches widened to stay visible"
        out = [
            f'<line x1="{self.left}" y1="{self.bottom}" x2="{self.right}" y2="{self.bottom}" '
            'stroke="#4a5568"/>',
            f'<line x1="{self.left}" y1="{self.top}" x2="{self.left}" y2="{self.bottom}" '
            'stroke="#4a5568"/>',
            f'<text class="axis valid-axis" x="{self.right}" y="{self.bottom + 34}" '
            f'text-anchor="end" fill="#4a5568">{across} →</text>',
            f'<text class="axis belief-axis" x="14" y="{mid}" transform="rotate(-90 14 {mid})" '
            'text-anchor="middle" fill="#4a5568">belief time, in order of change '
            "(not to scale) →</text>",
            f'<text x="{self.left - 6}" y="{self.top + 4}" text-anchor="end" '
            'fill="#4a5568">now</text>',
        ]
        return out + self.valid_ticks() + self.belief_ticks()

    def valid_ticks(self) -> list[str]:
        """Ticks on round instants, each labelled with its instant; a label that would
        touch the one before is left out."""
        knots = self.scale.knots
        out, last = [], float("-inf")
        for moment, chars in _round_instants(knots[0], knots[-1], (self.right - self.left)):
            x = self.x(moment)
            if x - last < (chars + 2) * CHAR_PX:
                continue
            last = x
            out.append(
                f'<line x1="{x:.2f}" y1="{self.bottom}" x2="{x:.2f}" y2="{self.bottom + 4}" '
                f'stroke="#4a5568"/><text class="tick valid-tick" x="{x:.2f}" '
                f'y="{self.bottom + 16}" text-anchor="middle">{_written(moment, chars)}</text>'
            )
        return out

    def belief_ticks(self) -> list[str]:
        """A label on every step that has room (every `every`-th), the date only where it
        changes."""
        every = max(1, int(BELIEF_GAP // self.step) + 1)
        shown = self.instants[::every]
        out, day = [], None
        for moment, text in zip(shown, clock.readable(shown), strict=True):
            y = self.y(moment)
            stamp = str(text).removesuffix("Z").replace("T", " ")
            label = stamp[11:] if moment.date() == day else stamp
            day = moment.date()
            out.append(
                f'<line x1="{self.left - 3}" y1="{y:.2f}" x2="{self.left}" y2="{y:.2f}" '
                f'stroke="#4a5568"/><text class="tick belief-tick" x="{self.left - 6}" '
                f'y="{y + 4:.2f}" text-anchor="end">{label}</text>'
            )
        return out

    def marks(self, valid_at: datetime | None, known_at: datetime | None) -> list[str]:
        out = []
        if valid_at is not None:
            x = self.x(valid_at)
            out.append(
                f'<g class="valid-at" data-at="{clock.fmt(valid_at)}"><line x1="{x:.2f}" '
                f'y1="{self.top}" x2="{x:.2f}" y2="{self.bottom}" stroke="{MARK}" '
                f'stroke-dasharray="5 3"/><text x="{x:.2f}" y="{self.top - 5}" '
                f'text-anchor="middle" fill="{MARK}">valid at {clock.readable_one(valid_at)}'
                "</text></g>"
            )
        if known_at is not None:
            y = self.y(known_at)
            out.append(
                f'<g class="known-at" data-at="{clock.fmt(known_at)}"><line x1="{self.left}" '
                f'y1="{y:.2f}" x2="{self.right}" y2="{y:.2f}" stroke="{MARK}" '
                f'stroke-dasharray="2 3"/><text x="{self.right}" y="{y - 3:.2f}" '
                f'text-anchor="end" fill="{MARK}">known at {clock.readable_one(known_at)}'
                "</text></g>"
            )
        return out

    def legend(self) -> list[str]:
        y = self.height - 30
        items = [
            f'<rect width="14" height="10" fill="{CURRENT}"/>',
            f'<rect width="14" height="10" fill="url(#sgam-hatch)" stroke="{RETIRED}"/>',
            f'<path d="M0,0 L8,5 L0,10 Z" fill="{CURRENT}"/>',
            f'<line x1="0" y1="5" x2="14" y2="5" stroke="{MARK}" stroke-dasharray="5 3"/>',
        ]
        words = [
            "believed now",
            "retired (no longer believed)",
            "open: no end yet",
            "valid at / known at",
        ]
        out = ['<g class="legend">']
        x = self.left
        for swatch, word in zip(items, words, strict=True):
            out.append(
                f'<g transform="translate({x},{y})">{swatch}<text x="18" y="9">{word}</text></g>'
            )
            x += 28 + len(word) * CHAR_PX
        out.append("</g>")
        return out


def _shifted(moment: datetime, delta: timedelta) -> datetime:
    """`moment + delta`, held inside the years a datetime can name (a "valid at" of
    year 1 or 9999 must not overflow the plot's padding)."""
    try:
        return moment + delta
    except OverflowError:
        return _FIRST if delta < timedelta(0) else _LAST


def _round_instants(start: datetime, end: datetime, room: float) -> Iterator[tuple[datetime, int]]:
    """The round instants in [start, end] of the finest step that gives at most about
    one per 40 px, each with the length of the label that writes it out exactly."""
    most = max(room / 40, 2)
    seconds = (end - start).total_seconds()
    for step, chars in _SECONDS:
        if seconds / step <= most:
            first = datetime.fromtimestamp(-(-start.timestamp() // step) * step, UTC)
            count = int((end - first).total_seconds() // step) + 1
            yield from ((first + timedelta(seconds=step * k), chars) for k in range(count))
            return
    for months in _MONTHS:
        if seconds / (months * 30.4 * 86400) <= most or months == _MONTHS[-1]:
            index = start.year * 12 + start.month - 1
            index = -(-index // months) * months  # the first whole step at or after start
            moment = _month(index)
            if moment < start:
                index += months
                moment = _month(index)
            while moment is not None and moment <= end:
                yield moment, 10
                index += months
                moment = _month(index)
            return


def _month(index: int) -> datetime | None:
    """The first of month `index` (year * 12 + month - 1), None past year 9999."""
    year, month = divmod(index, 12)
    return datetime(year, month + 1, 1, tzinfo=UTC) if 1 <= year <= 9999 else None


def _written(moment: datetime, chars: int) -> str:
    """A round instant written out to `chars` characters: the date, then to the minute
    or the second (zero-padded years, so year 1 reads 0001)."""
    text = clock.fmt(moment).replace("T", " ")
    return text[:chars]


def _shorten(text: str, room: int) -> str:
    return text if len(text) <= room else text[: max(room - 1, 1)] + "…"

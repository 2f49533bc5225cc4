"""The bitemporal picture of one key, as a self-contained SVG: what notebooks show in one
call and what `sgam ui` draws on a key's page.

Valid time runs across: each version is a bar from `valid_from` to `valid_to`, and a bar
with no end runs into a fade and an arrow marked "open". Belief time runs up: each
version's band starts when the store began to believe it (`known_from`) and ends when it
stopped (`known_to`); versions still believed reach the top ("now"), retired ones are
drawn hatched grey. A correction recorded late shows as a band that starts higher up; a
delayed fact placed in the past, as a bar to the left that starts higher up.

Belief time is drawn by order, not to scale: a store's writes often come seconds apart
after months of silence, which a linear axis would squash into one line. Each distinct
instant is a step, labelled with its time.

Every text is escaped, and characters XML cannot hold are replaced: values are whatever
users and models said. Only the store's public API is read (`versions`), so a tenant
view (`store.for_tenant(t)`) draws only its own keys.
"""

from __future__ import annotations

import html
import itertools
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sgam_store.core import clock
from sgam_store.core.errors import FactNotFoundError
from sgam_store.core.models import Fact

MARGIN = {"left": 150, "right": 48, "top": 44, "bottom": 96}
OPEN_ZONE = 48  # px at the right where open bars fade into their arrow
CHAR_PX = 6.4  # a rough width of one 11px character, to shorten labels that would spill
CURRENT, RETIRED, MARK = "#2b6cb0", "#a0aec0", "#c53030"
# XML 1.0 cannot hold these, even escaped; a value may contain them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


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
class _Frame:
    """The plot's geometry: valid time to x (linear), belief instants to y (by order)."""

    width: int
    height: int
    start: datetime  # valid time at the plot's left edge
    end: datetime  # valid time where the open zone begins
    instants: list[datetime]  # every known_from and known_to, in order

    @classmethod
    def fit(
        cls, versions: list[Fact], valid_at: datetime | None, width: int, height: int
    ) -> _Frame:
        times = [v.valid_from for v in versions] + [v.valid_to for v in versions if v.valid_to]
        if valid_at is not None:
            times.append(valid_at)
        low, high = min(times), max(times)
        pad = max((high - low) * 0.06, timedelta(hours=12))
        believed = {v.known_from for v in versions} | {v.known_to for v in versions if v.known_to}
        return cls(width, height, low - pad, high + pad, sorted(believed))

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
        span = (self.end - self.start).total_seconds()
        share = (moment - self.start).total_seconds() / span
        return self.left + share * (self.right - OPEN_ZONE - self.left)

    @property
    def step(self) -> float:
        return (self.bottom - self.top) / len(self.instants)

    def y(self, moment: datetime | None) -> float:
        """The height of a belief instant (None: now, the top); an instant between two
        steps sits between them in proportion to time."""
        if moment is None:
            return self.top
        steps = self.instants
        if moment <= steps[0]:
            return self.bottom
        for i, (before, after) in enumerate(itertools.pairwise(steps)):
            if moment < after:
                share = (moment - before) / (after - before)
                return self.bottom - (i + share) * self.step
        return self.bottom - (len(steps) - 1) * self.step - self.step / 2  # after the last

    # ------------------------------------------------------------ parts

    def bar(self, v: Fact) -> str:
        x0 = self.x(v.valid_from)
        x1 = self.right if v.valid_to is None else self.x(v.valid_to)
        y_low, y_high = self.y(v.known_from), self.y(v.known_to)
        h = max(y_low - y_high, 3.0)  # retired in the transaction that wrote it: a sliver
        believed = v.known_to is None
        state = "current" if believed else "retired"
        fill = CURRENT if believed else "url(#sgam-hatch)"
        # A white edge keeps bars that touch (a close and its successor) apart.
        stroke = ' stroke="white"' if believed else f' stroke="{RETIRED}" stroke-dasharray="4 2"'
        label = _label(v.value)
        tip = (
            f"#{v.fact_id} {label}\nvalid {_day(v.valid_from)} → "
            f"{_day(v.valid_to) if v.valid_to else 'open'}\n"
            f"believed {_stamp(v.known_from)} → "
            f"{_stamp(v.known_to) if v.known_to else 'now'}\nsaid in {v.source_episode_id}"
        )
        parts = [
            f'<g class="version {state}" data-fact-id="{v.fact_id}" '
            f'data-believed="{str(believed).lower()}" '
            f'data-open="{str(v.valid_to is None).lower()}" '
            f'data-valid-from="{clock.fmt(v.valid_from)}" '
            f'data-known-from="{clock.fmt(v.known_from)}">',
            f"<title>{esc(tip)}</title>",
            f'<rect class="bar" x="{x0:.1f}" y="{y_low - h:.1f}" width="{max(x1 - x0, 2):.1f}" '
            f'height="{h:.1f}" fill="{fill}"{stroke} rx="2"/>',
        ]
        if v.valid_to is None:  # fades out at the right, into an arrow marked "open"
            mid = y_low - h / 2
            parts.append(
                f'<rect class="open-fade" x="{x1 - OPEN_ZONE}" y="{y_low - h:.1f}" '
                f'width="{OPEN_ZONE}" height="{h:.1f}" fill="url(#sgam-fade)"/>'
                f'<path class="open-arrow" d="M{x1 + 1},{mid - 6} L{x1 + 9},{mid} '
                f'L{x1 + 1},{mid + 6} Z" fill="{CURRENT if believed else RETIRED}"/>'
                f'<text class="open-label" x="{x1 + 11}" y="{mid + 4:.1f}" '
                'font-style="italic" fill="#2d3748">open</text>'
            )
        if h >= 12:
            room = max((x1 - x0 - 8) / CHAR_PX, 4)
            colour = "white" if believed else "#1a202c"
            parts.append(
                f'<text class="value" x="{x0 + 4:.1f}" y="{y_low - h / 2 + 4:.1f}" '
                f'fill="{colour}">{esc(_shorten(label, int(room)))}</text>'
            )
        parts.append("</g>")
        return "".join(parts)

    def axes(self) -> list[str]:
        mid = (self.top + self.bottom) // 2
        out = [
            f'<line x1="{self.left}" y1="{self.bottom}" x2="{self.right}" y2="{self.bottom}" '
            'stroke="#4a5568"/>',
            f'<line x1="{self.left}" y1="{self.top}" x2="{self.left}" y2="{self.bottom}" '
            'stroke="#4a5568"/>',
            f'<text x="{self.right}" y="{self.bottom + 32}" text-anchor="end" fill="#4a5568">'
            "valid time (when it was true) →</text>",
            f'<text x="14" y="{mid}" transform="rotate(-90 14 {mid})" text-anchor="middle" '
            'fill="#4a5568">belief time →</text>',
            f'<text x="{self.left - 6}" y="{self.top + 4}" text-anchor="end" '
            'fill="#4a5568">now</text>',
        ]
        span = self.end - self.start
        fine = span < timedelta(days=3)
        for i in range(5):
            moment = self.start + span * (i + 0.5) / 5
            x = self.x(moment)
            text = f"{moment:%m-%d %H:%M}" if fine else f"{moment:%Y-%m-%d}"
            out.append(
                f'<line x1="{x:.1f}" y1="{self.bottom}" x2="{x:.1f}" y2="{self.bottom + 4}" '
                f'stroke="#4a5568"/><text class="tick" x="{x:.1f}" y="{self.bottom + 16}" '
                f'text-anchor="middle">{text}</text>'
            )
        every = max(1, int(14 // self.step) + 1)  # labels 14px apart at least
        shown = self.instants[::every]
        seconds = {m.replace(microsecond=0) for m in shown}
        fine = len(seconds) < len(shown)  # a replay writes many in one second
        for i, (before, moment) in enumerate(zip([None, *shown], shown, strict=False)):
            y = self.bottom - i * every * self.step
            out.append(
                f'<text class="tick" x="{self.left - 6}" y="{y + 4:.1f}" '
                f'text-anchor="end">{_belief_tick(before, moment, fine)}</text>'
            )
        return out

    def marks(self, valid_at: datetime | None, known_at: datetime | None) -> list[str]:
        out = []
        if valid_at is not None:
            x = self.x(valid_at)
            out.append(
                f'<g class="valid-at"><line x1="{x:.1f}" y1="{self.top}" x2="{x:.1f}" '
                f'y2="{self.bottom}" stroke="{MARK}" stroke-dasharray="5 3"/>'
                f'<text x="{x:.1f}" y="{self.top - 5}" text-anchor="middle" fill="{MARK}">valid at '
                f"{_day(valid_at)}</text></g>"
            )
        if known_at is not None:
            y = self.y(known_at)
            out.append(
                f'<g class="known-at"><line x1="{self.left}" y1="{y:.1f}" x2="{self.right}" '
                f'y2="{y:.1f}" stroke="{MARK}" stroke-dasharray="2 3"/>'
                f'<text x="{self.right}" y="{y - 3:.1f}" text-anchor="end" fill="{MARK}">'
                f"known at {_stamp(known_at)}</text></g>"
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


def _label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _shorten(text: str, room: int) -> str:
    return text if len(text) <= room else text[: max(room - 1, 1)] + "…"


def _day(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M}"


def _stamp(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S}"


def _belief_tick(before: datetime | None, moment: datetime, fine: bool) -> str:
    """An instant on the belief axis: the date only where it changes, with microseconds
    when `fine` (some instants share a second)."""
    text = f"{moment:%H:%M:%S}" if before and before.date() == moment.date() else _stamp(moment)
    return f"{text}.{moment.microsecond:06d}" if fine else text

"""The read path's window stage: a time named in the query, as a window of valid time.

Between scoring and fusion, with `RetrievalConfig.time_window` on (the default). A
query that names a time ("in May", "two weeks ago", "en marzo de 2025") is resolved by
dateparser against the search's reference instant (the view's `as_of` instant, else
now) into windows of valid time; the candidates valid in one form the `window` signal
that fusion weighs with `time_weight` ("rank"), or are the only ones kept ("filter"). A
query that names no time leaves the signals as they were. SGAM is the store that knows
when each memory was true: this is where a search uses it. Nothing here writes.

dateparser takes a few tenths of a second to import, so it is imported when a search
first needs it, and a query reaches it only through `names_time`, a gate of dateparser's
own words for the language (read from its data files without importing it): a query
that names no time costs a few microseconds and is answered as with the setting off.
"""

from __future__ import annotations

import calendar
import functools
import importlib.util
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sgam_store.core import clock
from sgam_store.core.errors import ConfigurationError
from sgam_store.read.query import Ranked, Search
from sgam_store.read.scope import Bounds
from sgam_store.read.scoring import Signals

# dateparser's codes of the keyword languages (`core.analysis`); "simple" (no language)
# lets it choose among them all.
CODES = {"english": "en", "spanish": "es", "french": "fr", "german": "de",
         "italian": "it", "portuguese": "pt"}  # fmt: skip
# English capitalizes its months: "may" or "march" in lower case is a verb (dateparser read
# "How much may Lena spend?" as May).
VERBS = frozenset(month.lower() for month in calendar.month_name if month)
# The entries of dateparser's per-language data whose words name a time on their own:
# months, weekdays, units and parts of the day (`vocabulary`).
CALENDAR = VERBS | {day.lower() for day in calendar.day_name}
MONTHS = VERBS  # dateparser's entries of the months are their English names, lower-cased
# English words of time before a month that dateparser's data lacks ("between May and
# June", "since April"): with its own, where a month name is a time (`_given_name`).
EXTRA_CUES = {"en": {"since", "until", "till", "during", "between", "through", "early", "mid",
                     "late", "every"}}  # fmt: skip
UNITS = ("year", "month", "week", "day", "hour", "minute", "second", "century", "decade",
         "fortnight")  # fmt: skip
NAMES = (*sorted(CALENDAR), *UNITS, "early_morning", "morning", "afternoon", "evening", "night")
# A form this short ("we" is Wednesday, "mi" miércoles, "d" a day) is a word more often
# than a time; beside a number it is a time, and the number passes the gate.
SHORTEST = 3
# How many words either side of a time word, a number or a number word dateparser reads
# ("hace 3 semanas", "hace una semana", "the day before yesterday"): `phrases`.
REACH = 1
WORD = re.compile(r"[^\W\d_]+")
# A query's words for `phrases`, a date in digits whole ("12/03", "2025-03-12", "15:30")
# and punctuation left out ("July?" is "July"), so the same stretch recurs.
TOKEN = re.compile(r"\w+(?:[/:.-]\w+)*")
# A number is a time with a word of the vocabulary ("May 5", "3 weeks ago"), or alone as
# a year or a date or hour in digits ("2023", "12/03", "2025-03-12", "15:30"). Alone,
# a short one is not: dateparser read "(7)" as July and "(42)" as 1942.
DATE_NUMBER = re.compile(r"\d{4}|\d[/.:-]\d")
# The words that place a question's answer before or after an event ("before moving",
# "antes de mudarse"), each with whether the answer comes after it, and the clause that
# names the event up to the end of the sentence: `anchored`. English and Spanish, the
# languages benchmarks/retrieval_hard.py asks in.
_CLAUSE = r"\s+(?:de\s+(?:que\s+)?)?([^?.!;,]+)"
RELATIONS = {
    "en": tuple((re.compile(rf"\b{word}{_CLAUSE}", re.I), after)
                for word, after in (("before", False), ("until", False), ("after", True),
                                    ("since", True))),
    "es": tuple((re.compile(rf"\b{word}{_CLAUSE}", re.I), after)
                for word, after in (("antes", False), ("hasta", False), ("después", True),
                                    ("desde", True))),
}  # fmt: skip
# Any language's relation word (`RELATIONS`' patterns as one): the gate before a query's
# languages are read, a statement that the great many queries without one then skip.
_ANY_RELATION = re.compile(
    "|".join(pattern.pattern for patterns in RELATIONS.values() for pattern, _ in patterns), re.I
)
FAR_START, FAR_END = "0001-01-01T00:00:00.000000Z", "9999-12-31T23:59:59.999999Z"
# "Two weeks ago" is a rough instant: its week reaches this far to either side.
WEEK_REACH = timedelta(days=7)


@dataclass(frozen=True)
class Window:
    """A half-open span of valid time, [start, end), in the stored UTC text form."""

    start: str
    end: str

    def holds(self, valid_from: str, valid_to: str | None) -> bool:
        """Whether a memory valid over [valid_from, valid_to) falls in the window: its
        interval overlaps it, an open one by its start. An open memory is still true now,
        so what places it in time is when it began: a chat turn said in May is May's,
        though it is a record still."""
        if valid_to is None:
            return self.start <= valid_from < self.end
        return valid_from < self.end and valid_to > self.start


def windowed(bounds: Bounds, search: Search, signals: Signals) -> Signals:
    """The stage: `signals` with the query's windows applied (as they were when the
    setting is off or the query names no time): a time it names, else an event it places
    the answer before or after (`anchored`)."""
    mode = search.cfg.time_window
    if mode == "off":
        return signals
    windows, event = _dated(bounds, search), None
    if not windows and search.hybrid and not signals.keyword_only:
        event = anchored(bounds, search, signals)
    if not windows and event is None:
        return signals
    spans = _spans(bounds, signals)
    anchor = left_out = None
    if event is not None:  # the event's memory is a candidate: its interval is in `spans`
        anchor, after = event
        windows, left_out = _around(spans[anchor][0], anchor, after)
    inside = {fid for fid, (start, end) in spans.items()
              if any(w.holds(start, end) for w in windows)} - {left_out}  # fmt: skip
    signals = replace(signals, inside=frozenset(inside), anchor=anchor)
    if inside == {fid for fid, _, _ in signals.vector + signals.keyword}:
        return signals  # a window holding every candidate ranks none above another
    if mode == "filter":
        return replace(
            signals,
            vector=[r for r in signals.vector if r[0] in inside],
            keyword=[r for r in signals.keyword if r[0] in inside],
        )
    if search.hybrid and not signals.keyword_only:
        window = {fid: row for fid, _, row in signals.vector + signals.keyword if fid in inside}
        return replace(signals, window=[(fid, 1.0, row) for fid, row in window.items()])
    if signals.keyword_only:
        return replace(signals, keyword=promoted(signals.keyword, inside, lower=True))
    return replace(signals, vector=promoted(signals.vector, inside, lower=False))


def _dated(bounds: Bounds, search: Search) -> tuple[Window, ...]:
    """The windows of the times the query names, read by dateparser (none where the gate
    finds no time word)."""
    if not _may_name_time(search.text):
        return ()
    langs = names_time(search.text, languages(bounds, search))
    if not langs:
        return ()
    at = reference(search)
    return tuple(dict.fromkeys(w for part in phrases(search.text, langs)
                               for w in resolve(part, at, langs)))  # fmt: skip


def anchored(bounds: Bounds, search: Search, signals: Signals) -> tuple[int, bool] | None:
    """The event a query places its answer before or after ("where did Rosa live before
    relocating to Seville?"): its memory (the anchor) and whether the answer comes after
    it; else None. `_around` makes its window.

    The event is a memory of the store, not a date. Its memory (the anchor) is the hybrid
    candidate whose keyword row holds the largest share of the clause's terms ("relocat",
    "seville"); among equals, the one holding most of the words asked before the clause
    (the person, "rosa": "What car did Leo drive before getting the Honda Jazz?" is
    Leo's purchase, not a friend's mention of the car), then the nearest the query.
    The window ends when the anchor became valid (before: the anchor is the event, not
    the answer) or starts then (after, since: the event's own memory may say what
    followed it, "my back hurts since I lifted the box"). Words of English and Spanish
    (`RELATIONS`), in hybrid search only: its keyword and vector candidates are as deep
    for every page up to `depth`, so the anchor is too.
    """
    if not _ANY_RELATION.search(search.text):
        return None  # no relation word in any language: the store's language is not read
    placed = relation(search.text, languages(bounds, search))
    if placed is None:
        return None
    match, after = placed
    clause, asked = match.group(1), search.text[: match.start()]
    engine, conn = bounds.engine, bounds.conn
    terms = engine.reads.keyword_terms(conn, clause)
    rows = {fid: row for fid, _, row in signals.vector + signals.keyword}
    share = engine.reads.keyword_coverage(conn, terms, list(rows)) if terms else {}
    best = max(share.values(), default=0.0)
    if best <= 0:
        return None
    tied = [fid for fid, held in share.items() if held == best]
    told = {}
    if len(tied) > 1 and (words := engine.reads.keyword_terms(conn, asked)):
        told = engine.reads.keyword_coverage(conn, words, tied)
    cosine = signals.cosine
    anchor = max(tied, key=lambda fid: (told.get(fid, 0.0), cosine.get(fid, -1.0), -fid))
    return anchor, after


def _around(start: str, anchor: int, after: bool) -> tuple[tuple[Window, ...], int | None]:
    """The window of an event whose memory became valid at `start`, and the memory it
    leaves out: before it, the anchor is the event, not the answer; after it, the event's
    own memory may say what followed ("hurts since I fell"), so none is left out."""
    if after:
        return (Window(start, FAR_END),), None
    return (Window(FAR_START, start),), anchor


def relation(text: str, langs: tuple[str, ...]) -> tuple[re.Match[str], bool] | None:
    """The words of a query that place its answer before or after an event, in one of
    `langs` (from the relation word to the clause's end; the clause, the event's words,
    is its group 1), and whether the answer comes after it; else None."""
    for lang in langs:
        for pattern, after in RELATIONS.get(lang, ()):
            if (match := pattern.search(text)) and WORD.search(match.group(1)):
                return match, after
    return None


def promoted(ranked: Ranked, inside: set[int], lower: bool) -> Ranked:
    """A single ranking (vector or keyword mode) with its hits in the window first, each
    group in its order, scored so that none rises down the list as each mode scores:
    keyword coverage is lowered to the lowest at or above a hit (`scoring.calibrated`),
    a cosine raised to the best at or below it (`fusion.similarity_scores`)."""
    order = [r for r in ranked if r[0] in inside] + [r for r in ranked if r[0] not in inside]
    scores = [score for _, score, _ in order]
    if not lower:
        scores.reverse()
    for i in range(1, len(scores)):
        scores[i] = min(scores[i], scores[i - 1]) if lower else max(scores[i], scores[i - 1])
    if not lower:
        scores.reverse()
    return [(fid, score, row) for (fid, _, row), score in zip(order, scores, strict=True)]


def _spans(bounds: Bounds, signals: Signals) -> dict[int, tuple[str, str | None]]:
    """Each candidate's visible version's interval of valid time, by fact id: one
    statement, which both a window's members and an event's start are read from."""
    rows = {row: fid for fid, _, row in signals.vector + signals.keyword}
    found = bounds.engine.reads.intervals_by_id(bounds.conn, list(rows))
    return {rows[row]: span for row, span in found.items()}


def reference(search: Search) -> datetime:
    """The instant a query's time resolves against: noon (UTC) of its view's valid day,
    else of today. A window is whole days, so the day is what matters, and a repeated
    query is parsed once a day (`resolve`'s cache), whatever the view's instant."""
    at = search.scope.at
    day = clock.to_utc(at) if at is not None else datetime.now(UTC)
    return day.replace(hour=12, minute=0, second=0, microsecond=0)


def languages(bounds: Bounds, search: Search) -> tuple[str, ...]:
    """dateparser's languages for the query: the keyword language's (the store's recorded
    one where the config names none), all of them for "simple"."""
    language = search.cfg.language
    if language is None:
        language = bounds.engine.indexing.stored_language(bounds.conn)
    code = CODES.get(language)
    return (code,) if code else tuple(CODES.values())


@functools.lru_cache(maxsize=1024)
def resolve(text: str, at: datetime, langs: tuple[str, ...]) -> tuple[Window, ...]:
    """The windows of valid time the time expressions of `text` name, seen from `at`.

    dateparser finds each expression and its date ("May" asked in January 2026: May
    2025, the latest before `at`), and how precise it is (its period): a day, a week
    (reaching `WEEK_REACH` to each side), a month or a year is the window. An expression
    that names `at` itself ("now", "ahora") says nothing the scope does not, one the
    gate would stop (`names_time`: "we", a lower-case "may") is a word, and one of units
    and numbers alone ("a week") a length of time: all skipped; so is an English month
    name that is a person's (`_given_name`: "What did June say?").
    Cached: `at` is a day's noon (`reference`), so a query is parsed once a day.
    """
    search, parser = _dateparser()
    base = at.astimezone(UTC).replace(tzinfo=None)
    settings = {"RELATIVE_BASE": base, "PREFER_DATES_FROM": "past", "TIMEZONE": "UTC",
                "RETURN_AS_TIMEZONE_AWARE": False}  # fmt: skip
    read = parser(languages=list(langs), settings=settings)
    windows = []
    # A date at the calendar's edge ("in 9999": its year ends past datetime's last) makes
    # dateparser or `span` raise: it names no window a memory can be in, so none is made.
    try:
        found = search(text, languages=list(langs), settings=settings) or []
    except (OverflowError, ValueError):
        found = []
    for words, when in found:
        if when == base or not names_time(words, langs) or _duration(words, langs):
            continue
        if "en" in langs and _given_name(words, text):
            continue
        try:
            windows.append(span(when, read.get_date_data(words).period or "day"))
        except (OverflowError, ValueError):
            continue
    return tuple(dict.fromkeys(windows))


def phrases(text: str, langs: tuple[str, ...]) -> list[str]:
    """The stretches of `text` around its time words, numbers and number words, `REACH`
    words to either side ("in July" of "who is travelling to Lyon in July?", "hace 3
    semanas"): what dateparser reads. Its search costs with the length of the text, and
    the stretch recurs across questions where the whole text does not, so `resolve`'s
    cache answers it."""
    tokens = TOKEN.findall(text)
    numbers = [vocabulary(lang).numbers for lang in langs]
    hits = [i for i, token in enumerate(tokens)
            if names_time(token, langs) or any(c.isdigit() for c in token)
            or any(token.lower() in n for n in numbers)]  # fmt: skip
    spans: list[list[int]] = []
    for i in hits:
        if spans and i - REACH <= spans[-1][1] + 1:
            spans[-1][1] = i + REACH
        else:
            spans.append([i - REACH, i + REACH])
    return [" ".join(tokens[max(a, 0) : b + 1]) for a, b in spans]


def names_time(text: str, langs: tuple[str, ...]) -> tuple[str, ...]:
    """The languages of `langs` in which `text` may name a time (none: it names none):
    all of them for a year or a date in digits (`DATE_NUMBER`), else those with a word
    of their `vocabulary` (in English a month name that is also a verb, "may", or an
    abbreviation, "sun", only capitalized, as English writes them). The gate before
    dateparser, which then reads only those languages (each one more costs a parse),
    and the test of each expression it finds ("we" is not Wednesday, "(7)" not July)."""
    if DATE_NUMBER.search(text):
        return langs
    words = WORD.findall(text)
    return tuple(lang for lang in langs if _named(words, vocabulary(lang)))


def _may_name_time(text: str) -> bool:
    """`names_time` in any language, loosely (capitals aside): one pass over the words
    before the store's language is read, so a query naming no time costs one set lookup
    a word and no statement."""
    if DATE_NUMBER.search(text):
        return True
    return not _every_known().isdisjoint(WORD.findall(text.lower()))


@functools.cache
def _every_known() -> frozenset[str]:
    return frozenset().union(*(vocabulary(lang).known for lang in CODES.values()))


def _named(words: list[str], vocab: Words) -> bool:
    """Whether one of `words` is known (capitalized where it must be)."""
    for word in words:
        lower = word.lower()
        if lower in vocab.known and (lower not in vocab.capitalized or word[0].isupper()):
            return True
    return False


def _duration(words: str, langs: tuple[str, ...]) -> bool:
    """Whether an expression dateparser found is a length of time in one of `langs`:
    units, number words and fillers alone ("a week", "3 days"), no "ago" nor "hace"."""
    found = {w.lower() for w in WORD.findall(words)}
    for vocab in map(vocabulary, langs):
        alone = vocab.units | vocab.numbers | vocab.fillers
        if not found.isdisjoint(vocab.units) and found <= alone:
            return True
    return False


def _given_name(words: str, text: str) -> bool:
    """Whether an expression dateparser found in `text` is an English month name alone
    that names a person: April, May, June and August are given names too, and English
    writes both capitalized. A month is a time with a number ("June 5", "May 2024") or
    after a word of dateparser's own for one ("in June", "of May", "by April", "last
    March", "the August trip": `Words.cues`); "What did June say?" is June's, and asked
    as a time it ranked every memory of last June first."""
    if any(c.isdigit() for c in words):
        return False
    vocab = vocabulary("en")
    found = [w.lower() for w in WORD.findall(words)]
    if not found or not all(w in vocab.months for w in found):
        return False
    at = text.find(words)
    if at < 0:  # not the text's own words: dateparser's reading, left as it found it
        return False
    before = WORD.findall(text[:at])
    return not before or before[-1].lower() not in vocab.cues


@dataclass(frozen=True)
class Words:
    """dateparser's words of one language, as the gate reads them."""

    known: frozenset[str]  # name a time on their own ("May", "yesterday", "semana")
    capitalized: frozenset[str]  # English ones that count only capitalized ("May", "Sun")
    # An expression of units, number words and fillers alone (and digits) is a length of
    # time ("how many km a week", "3 days"), not a time (to dateparser, a week ago).
    units: frozenset[str]
    numbers: frozenset[str]  # number words ("a", "two", "una"), which dateparser reads as digits
    fillers: frozenset[str]
    months: frozenset[str]  # the month names' one-word forms ("june", "jun")
    # dateparser's words that may stand before a date ("in", "of", "by", "the", "before";
    # "last", "next", "this" of its relative phrases) and `EXTRA_CUES`: where a month
    # name is a time
    cues: frozenset[str]


@functools.cache
def vocabulary(lang: str) -> Words:
    """The words that name a time in dateparser's data for `lang` (`Words`).

    The one-word forms of its `NAMES` entries, then the words of each phrase that has
    none of their forms (any length): its relative words ("yesterday", "ayer") and plain
    simplifications ("tonight"). Not the "0 ... ago" phrases ("now", "today", "this
    year"): they resolve to the reference instant itself, which `resolve` skips.
    """
    info = _translation_data(lang)
    skip = {word.lower() for word in info.get("skip", [])}
    entries = {name: info.get(name, []) for name in NAMES}
    forms = {f.lower(): name for name, fs in entries.items() for f in fs if WORD.fullmatch(f)}
    relative = [p for key, ps in info.get("relative-type", {}).items()
                if not key.startswith("0 ") for p in ps]  # fmt: skip
    rules = [rule for rules in info.get("simplifications", []) for rule in rules.items()]
    plain = [key for key, value in rules if WORD.fullmatch(key.replace(" ", ""))]
    numbers = {key.lower() for key, value in rules if WORD.fullmatch(key) and value.isdigit()}
    phrases = [f for fs in entries.values() for f in fs if not WORD.fullmatch(f)]
    known = {form for form in forms if len(form) >= SHORTEST}
    for phrase in phrases + relative + [key for key in plain if key.lower() not in numbers]:
        words = {w.lower() for w in WORD.findall(phrase)}
        if words.isdisjoint(forms):
            known.update(w for w in words if len(w) >= SHORTEST and w not in skip)
    capitalized = set()
    if lang == "en":
        capitalized = {form for form in known if form in VERBS
                       or (forms.get(form) in CALENDAR and form != forms[form])}  # fmt: skip
    units = {form for form, name in forms.items() if name in UNITS}
    marks = {form.lower() for key in ("am", "pm") for form in info.get(key, [])}  # "a week am"
    months = {form for form, name in forms.items() if name in MONTHS}
    leading = {p.split()[0].lower() for p in relative if len(p.split()) > 1}
    linking = {f.lower() for key in ("in", "ago", "pertain") for f in info.get(key, [])}
    cues = {w for w in skip | linking | leading | EXTRA_CUES.get(lang, set())
            if WORD.fullmatch(w) and len(w) > 1}  # fmt: skip
    fields = (known, capitalized, units, numbers, skip | marks, months, cues)
    return Words(*map(frozenset, fields))


def _translation_data(lang: str) -> dict[str, Any]:
    """dateparser's data for `lang` (`dateparser/data/date_translation_data/<lang>.py`,
    a dict of words and patterns), loaded from its file alone: importing it through
    the package would run dateparser's `__init__`, the import the gate exists to skip."""
    try:
        package = importlib.util.find_spec("dateparser")
    except ValueError:  # hidden: None in sys.modules
        package = None
    roots = package.submodule_search_locations if package else None
    path = Path(roots[0]) / "data" / "date_translation_data" / f"{lang}.py" if roots else None
    if path is None or not path.is_file():
        raise ConfigurationError(
            f"time_window reads dateparser's words for {lang!r}, and dateparser is not "
            "installed as sgam-store needs it: pip install 'dateparser>=1.2', or set "
            "retrieval={'time_window': 'off'}"
        )
    spec = importlib.util.spec_from_file_location(f"_sgam_dateparser_{lang}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.info


def span(when: datetime, period: str) -> Window:
    """The window of `when` (naive UTC) at dateparser's `period` precision."""
    day = when.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "year":
        start, end = day.replace(month=1, day=1), day.replace(year=day.year + 1, month=1, day=1)
    elif period == "month":
        start = day.replace(day=1)
        end = (start + timedelta(days=32)).replace(day=1)
    elif period == "week":
        start, end = day - WEEK_REACH, day + WEEK_REACH + timedelta(days=1)
    else:  # a day, or a time of day: its day
        start, end = day, day + timedelta(days=1)
    return Window(clock.fmt(start.replace(tzinfo=UTC)), clock.fmt(end.replace(tzinfo=UTC)))


@functools.cache
def _dateparser() -> tuple[Any, Any]:
    """dateparser's `search_dates` and `DateDataParser`, imported at first use."""
    from dateparser.date import DateDataParser
    from dateparser.search import search_dates

    return search_dates, DateDataParser

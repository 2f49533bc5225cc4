"""A time named in a search's query (read/window.py, `RetrievalConfig.time_window`).

The interval rule is checked against a small reference model (minutes as integers, an
open interval a point at its start); the windows dateparser's periods give, on real
dateparser; the stage through real stores on both engines: the memories of the named
period rank first ("rank") or alone ("filter"), and a query naming no time gets exactly
the hits it got without the setting.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import SearchItem

from sgam_store import ConfigurationError, MemoryFact, SGAMStore
from sgam_store.core import clock
from sgam_store.read.query import RetrievalConfig
from sgam_store.read.window import Window, names_time, resolve, span

from .conftest import HashEmbeddings, told

ENGINES = ("sqlite", "postgres")
BASE = datetime(2025, 1, 1, tzinfo=UTC)


def stamp(minute: int) -> str:
    return clock.fmt(BASE + timedelta(minutes=minute))


minutes = st.integers(min_value=0, max_value=500)


@given(minutes, minutes, minutes, st.one_of(st.none(), st.integers(1, 200)))
def test_a_window_holds_what_the_reference_model_holds(
    a: int, b: int, start: int, length: int | None
) -> None:
    low, high = sorted((a, b + 1 if a == b else b))
    window = Window(stamp(low), stamp(high))
    end = None if length is None else start + length
    # The model: an open memory is the instant it began; a closed one every minute of it.
    held = {start} if end is None else set(range(start, end))
    expected = any(low <= minute < high for minute in held)
    assert window.holds(stamp(start), None if end is None else stamp(end)) == expected


@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)),
       st.sampled_from(["day", "time", "week", "month", "year"]))  # fmt: skip
def test_a_period_spans_its_calendar_unit(when: datetime, period: str) -> None:
    window = span(when, period)
    bounds = (window.start, window.end)
    start, end = (datetime.fromisoformat(t).replace(tzinfo=None) for t in bounds)
    assert start <= when < end
    if period in ("day", "time"):
        assert end - start == timedelta(days=1) and start.time() == datetime.min.time()
    elif period == "week":
        assert end - start == timedelta(days=15)
    elif period == "month":
        assert (start.day, end.day) == (1, 1) and 28 <= (end - start).days <= 31
        assert start.month == when.month
    else:
        assert (start.month, start.day, end.year) == (1, 1, when.year + 1)


ASKED = datetime(2026, 1, 20, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "languages", "window"),
    [
        ("What did Mira cook in May?", ("en",), ("2025-05-01", "2025-06-01")),  # the last May
        ("Where was Leo living in 2023?", ("en",), ("2023-01-01", "2024-01-01")),
        ("What did I say on March 12?", ("en",), ("2025-03-12", "2025-03-13")),
        ("What changed two weeks ago?", ("en",), ("2025-12-30", "2026-01-14")),
        ("What did I buy last month?", ("en",), ("2025-12-01", "2026-01-01")),
        ("¿Qué hice en marzo de 2025?", ("es",), ("2025-03-01", "2025-04-01")),
        ("¿Qué dijo Lucía hace 3 semanas?", ("es",), ("2025-12-23", "2026-01-07")),
    ],
)
def test_time_in_a_query_resolves_against_the_reference(
    query: str, languages: tuple[str, ...], window: tuple[str, str]
) -> None:
    (found,) = resolve(query, ASKED, languages)
    assert (found.start[:10], found.end[:10]) == window


@pytest.mark.parametrize(
    "query",
    ["When did Mira complete the race?", "Which city does Leo live in now?", "¿Dónde vive ahora?"],
)
def test_a_query_naming_no_period_has_no_window(query: str) -> None:
    assert resolve(query, ASKED, ("en", "es")) == ()  # "now" is the scope itself


def test_the_setting_is_checked() -> None:
    with pytest.raises(ConfigurationError, match="time_window must be one of off, rank, filter"):
        RetrievalConfig(time_window="on")
    with pytest.raises(ConfigurationError, match="time_weight"):
        RetrievalConfig(time_window="rank", time_weight=-1)
    assert RetrievalConfig().time_window == "rank"


def test_importing_the_package_does_not_import_the_parser() -> None:
    code = "import sys, sgam_store; print('dateparser' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# One user's dinners in three months; asked on 2025-08-01, "in May" names the second.
DINNERS = [
    ("t1", "Cooked paella for friends, they loved it", "2025-03-14"),
    ("t2", "Cooked lasagne for friends, a success", "2025-05-10"),
    ("t3", "Cooked a stew for friends, a quiet night", "2025-07-02"),
    ("t4", "The weather has been grey all week", "2025-05-11"),
]
ASKED_ON = "2025-08-01T12:00:00Z"


@contextmanager
def dinners(target: str, retrieval: dict) -> Iterator[SGAMStore]:
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    with SGAMStore.from_conn_string(target, index=index, retrieval=retrieval) as store:
        store.setup()
        for key, text, day in DINNERS:
            fact = MemoryFact(tenant_id="u", subject="turns", attribute=key,
                              value={"text": text}, valid_from=f"{day}T18:00:00Z",
                              source_episode_id=key)  # fmt: skip
            store.replace_fact(fact)
        yield store


def keys(items: list[SearchItem]) -> list[str]:
    return [item.key for item in items]


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_memories_of_the_named_period_rank_first_or_alone(target: str, mode: str) -> None:
    with dinners(target, {"mode": mode, "time_window": "rank"}) as store:
        view = store.as_of(ASKED_ON)
        ranked = view.search(("u", "turns"), query="What did I cook for friends in May?")
        assert keys(ranked)[0] == "t2"
        scores = [item.score for item in ranked]
        assert scores == sorted(scores, reverse=True)
        store.retrieval = RetrievalConfig(mode=mode, time_window="filter")
        alone = view.search(("u", "turns"), query="What did I cook for friends in May?")
        assert set(keys(alone)) <= {"t2", "t4"} and "t2" in keys(alone)
        # Asked in 2025-04, "in May" is May 2024: nothing of this user's is in it.
        early = store.as_of("2025-04-01T00:00:00Z")
        assert early.search(("u", "turns"), query="What did I cook in May?") == []


def test_a_query_naming_no_time_gets_the_same_hits(target: str) -> None:
    query = "What did I cook for friends?"
    found = {}
    with dinners(target, {}) as store:
        for setting in ("off", "rank", "filter"):
            store.retrieval = RetrievalConfig(time_window=setting)
            found[setting] = [
                store.search(("u", "turns"), query=query, limit=10),
                store.as_of(ASKED_ON).search(("u",), query=query, limit=10),
            ]
    assert found["rank"] == found["off"] and found["filter"] == found["off"]
    assert all(len(hits) >= 3 for hits in found["off"])


def test_an_english_month_in_lower_case_is_a_verb() -> None:
    assert resolve("How much may Lena spend per month?", ASKED, ("en",)) == ()
    assert resolve("We march on", ASKED, ("en",)) == ()
    assert len(resolve("How much did Lena spend in May?", ASKED, ("en",))) == 1


@pytest.mark.parametrize(
    "query",
    ["What did June say about the trip?", "Did April call back?", "What is August's new job?",
     "June said what?"],
)  # fmt: skip
def test_a_month_that_names_a_person_makes_no_window(query: str) -> None:
    assert resolve(query, ASKED, ("en",)) == ()


@pytest.mark.parametrize(
    ("query", "windows"),
    [("What did I cook in June?", 1), ("Where was Leo last March?", 1),
     ("What happened June 5?", 1), ("How was the August trip?", 1),
     ("What changed between May and June?", 2), ("Who has called since April?", 1)],
)  # fmt: skip
def test_a_month_as_a_time_keeps_its_window(query: str, windows: int) -> None:
    assert len(resolve(query, ASKED, ("en",))) == windows


# June (a friend) spoke in March; in June the user booked and packed for the trip.
TRIP = [
    ("a1", "June: the trip to Lyon is off, sorry", "2025-03-10"),
    ("a2", "Booked the trip to Lyon for the autumn", "2025-06-12"),
    ("a3", "Packed early for the trip, as always", "2025-06-20"),
    ("a4", "The weather has been grey all week", "2025-06-21"),
]


def test_a_person_named_june_is_asked_about_as_without_the_window(target: str) -> None:
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    found = {}
    with SGAMStore.from_conn_string(target, index=index) as store:
        store.setup()
        told(store, "u", TRIP)
        for setting in ("off", "rank", "filter"):
            store.retrieval = RetrievalConfig(time_window=setting)
            view = store.as_of(ASKED_ON)
            found[setting] = view.search(("u",), query="What did June say about the trip?")
        store.retrieval = RetrievalConfig(time_window="filter")
        in_june = store.as_of(ASKED_ON).search(("u",), query="What did I do for the trip in June?")
    assert found["rank"] == found["off"] and found["filter"] == found["off"]
    assert set(keys(in_june)) <= {"a2", "a3", "a4"} and "a2" in keys(in_june)


# The gate before dateparser (`names_time`, from dateparser's own words for the language).

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from hard_memories import generate  # noqa: E402

CODES = {"english": "en", "spanish": "es"}


def test_the_gate_passes_every_dated_question_of_the_evaluation() -> None:
    """Every dated question of hard_templates (both languages, both splits) passes, and
    so does every question dateparser finds a window in; its windows are unchanged."""
    questions = [(q, CODES[c.language]) for c in generate().conversations for q in c.questions]
    dated = [(q, lang) for q, lang in questions if q.asked is not None]
    assert len(dated) == 96 and {lang for _, lang in dated} == {"en", "es"}
    assert all(names_time(q.text, (lang,)) for q, lang in dated)
    for q, lang in questions:
        asked = clock.to_utc(q.asked) if q.asked else ASKED
        if resolve(q.text, asked, (lang,)):
            assert names_time(q.text, (lang,)), q.text


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("What does Mira like to cook for friends?", "en"),
        ("What did we cook?", "en"),  # dateparser reads "we" as Wednesday
        ("How much may Lena spend?", "en"),  # a verb
        ("The sun came out", "en"),  # not Sunday
        ("Which city does Leo live in now?", "en"),  # now is the scope itself
        ("¿Dónde vive mi hermana?", "es"),  # "mi" is miércoles to dateparser
        ("¿Qué hace Lucía?", "es"),
        ("what does the user think about hiking? (7)", "en"),  # dateparser: July
        ("what is the user doing with tennis? (42)", "en"),  # dateparser: 1942
    ],
)
def test_a_query_naming_no_time_stops_at_the_gate(text: str, lang: str) -> None:
    assert not names_time(text, (lang,))


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("What did I cook in May?", "en"),
        ("what did I do yesterday", "en"),
        ("what happened on monday", "en"),  # a full name counts in lower case
        ("Where was Leo in 2023?", "en"),
        ("lunch tonight", "en"),
        ("¿Qué hice ayer?", "es"),
        ("la semana pasada", "es"),
        ("en enero", "es"),
        ("hace 3 días", "es"),
    ],
)
def test_a_query_naming_a_time_passes_the_gate(text: str, lang: str) -> None:
    assert names_time(text, (lang,))


def test_a_word_dateparser_misreads_makes_no_window() -> None:
    """Each expression dateparser finds must pass the gate too: "we" is no Wednesday."""
    (window,) = resolve("What did we cook last week?", ASKED, ("en",))
    assert (window.start[:10], window.end[:10]) == ("2026-01-06", "2026-01-21")
    assert resolve("¿Dónde comió mi hermana?", ASKED, ("es",)) == ()
    assert resolve("What did Mira say about hiking? (7)", ASKED, ("en",)) == ()
    assert resolve("How many km a week am I running?", ASKED, ("en",)) == ()  # a length
    assert resolve("¿Cuántos km corro a la semana?", ASKED, ("es",)) == ()
    (year,) = resolve("What did Mira say about hiking in 2023? (7)", ASKED, ("en",))
    assert (year.start[:10], year.end[:10]) == ("2023-01-01", "2024-01-01")


def test_a_query_naming_no_time_keeps_its_order_and_skips_the_parser() -> None:
    """With the window on, "What did we cook" (no time: "we" is no Wednesday) gets the
    hits it gets with the window off, and dateparser is never imported."""
    code = """
import sys
from sgam_store import MemoryFact, SGAMStore
days = [("t1", "Cooked paella for friends", "2025-07-16"),
        ("t2", "Cooked a curry for friends", "2025-07-30"),  # a Wednesday
        ("t3", "Cooked lasagne for friends", "2025-07-23")]
found = {}
for setting in ("off", "rank"):
    with SGAMStore.from_conn_string(":memory:", retrieval={"time_window": setting}) as store:
        for key, text, day in days:
            store.replace_fact(MemoryFact(tenant_id="u", subject="s", attribute=key,
                value={"text": text}, valid_from=day + "T18:00:00Z", source_episode_id=key))
        view = store.as_of("2025-08-01T12:00:00Z")
        found[setting] = [h.key for h in view.search(("u",), query="What did we cook for friends")]
print(found["off"] == found["rank"], "dateparser" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"], out


def test_the_gate_reads_dateparser_words_without_importing_it() -> None:
    code = """
import sys
from sgam_store.read.window import vocabulary
en, es = vocabulary("en"), vocabulary("es")
print("dateparser" in sys.modules)
print(all(w in es.known for w in ("ayer", "semana", "enero", "mañana")), "mi" in es.known)
print("yesterday" in en.known, "may" in en.capitalized, "monday" in en.capitalized,
      "sun" in en.capitalized)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "False", "True", "True", "False", "True"], out


def test_a_store_of_every_language_parses_only_those_the_query_names_a_time_in() -> None:
    """A "simple" store reads all six languages; each costs dateparser a parse, so the
    gate hands on only the ones with a word of the query (all of them for a digit)."""
    every = ("en", "es", "fr", "de", "it", "pt")
    assert names_time("¿Qué hizo Lucía ayer?", every) == ("es",)
    assert names_time("What did Mira do yesterday?", every) == ("en",)
    assert names_time("Where was Leo in 2023?", every) == every
    assert names_time("What does Mira like?", every) == ()


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_a_window_holding_every_candidate_reorders_none(target: str, mode: str) -> None:
    """Asked at the end of 2025, "in 2025" holds every dinner: the hits, scores
    included, are those of the query without the window."""
    found = {}
    with dinners(target, {"mode": mode}) as store:
        view = store.as_of("2025-12-31T12:00:00Z")
        for setting in ("off", "rank", "filter"):
            store.retrieval = RetrievalConfig(mode=mode, time_window=setting)
            found[setting] = view.search(("u",), query="What did I cook in 2025?", limit=10)
    assert found["rank"] == found["off"] and found["filter"] == found["off"]
    assert len(found["off"]) >= 3


@pytest.mark.parametrize("query", ["What happened in 9999?", "notes of 9999-12-31", "year 0001"])
def test_a_date_at_the_calendars_edge_is_a_search_not_an_error(query: str) -> None:
    """dateparser reads "in 9999" as a year whose end datetime cannot hold: the search
    answers as it would without a window (on by default, it must never raise)."""
    with SGAMStore.from_conn_string(":memory:") as store:
        store.put(("u", "s"), "k", {"text": "the year 9999 is far off"})
        assert [hit.key for hit in store.search(("u",), query=query)] in (["k"], [])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["May", "in", "9999", "0001", "31/12", "2025-13-40", "ago",
                                 "hace", "semanas", "3", "weeks", "yesterday", "de", "٢٠٢٣"]),
                max_size=6).map(" ".join))  # fmt: skip
def test_the_window_never_raises(text: str) -> None:
    every = ("en", "es", "fr", "de", "it", "pt")
    named = names_time(text, every)
    assert all(isinstance(w, Window) for w in resolve(text, ASKED, named or every))


def test_dateparser_reads_the_words_around_a_time_word() -> None:
    """What is parsed is the stretch around each time word, number or number word, one
    word either side: it recurs across questions ("in July"), so the parse is cached for
    all of them."""
    from sgam_store.read.window import phrases

    assert phrases("who is travelling to Lyon in July?", ("en",)) == ["in July"]
    assert phrases("¿Qué regalo compró Lucía hace 3 semanas?", ("es",)) == ["hace 3 semanas"]
    assert phrases("¿Qué regalo compró Lucía hace una semana?", ("es",)) == ["hace una semana"]
    assert phrases("In May we cooked paella for all the friends on March 12", ("en",)) == [
        "In May we",
        "on March 12",
    ]


def test_without_dateparser_a_search_is_a_clear_error() -> None:
    """dateparser is a dependency (its words are the gate's); a broken install gets a
    typed error that says so and how to turn the window off, which then needs none."""
    code = """
import sys
sys.modules["dateparser"] = None  # not installed, as far as imports go
from sgam_store import ConfigurationError, SGAMStore
with SGAMStore.from_conn_string(":memory:") as store:
    store.put(("u",), "k", {"text": "paella"})
    try:
        store.search(("u",), query="what did I cook in May")
    except ConfigurationError as error:
        print(error)
with SGAMStore.from_conn_string(":memory:", retrieval={"time_window": "off"}) as store:
    store.put(("u",), "k", {"text": "paella in May"})
    print(len(store.search(("u",), query="what did I cook in May")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'dateparser" in out.stdout and out.stdout.endswith("\n1\n"), out

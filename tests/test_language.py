"""Keyword analysis by language (`core.analysis`, `lifecycle.keywords`): stemming and stop
words at index and query time, the language recorded in the database and enforced, its
change a rebuild that keeps history, and the stale-answer guarantee in every language.

Store-contract tests run on both engines (a real SQLite file, the embedded PostgreSQL);
the ones that read SQLite's own tables are marked `sqlite_only`.
"""

from __future__ import annotations

import shutil
import unicodedata
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
import sqlean
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sgam_store import ConfigurationError, MemoryFact, SGAMStore
from sgam_store.core import analysis
from sgam_store.engines import open_engine
from sgam_store.lifecycle import transfer
from sgam_store.read.query import RetrievalConfig
from tests.conftest import HashEmbeddings
from tests.test_migrations import FIXTURE

ENGINES = ("sqlite", "postgres")
KEYWORD = {"mode": "keyword"}


def keyword_store(target: str, language: str | None) -> AbstractContextManager[SGAMStore]:
    retrieval = {**KEYWORD, "language": language} if language else KEYWORD
    return SGAMStore.from_conn_string(target, retrieval=retrieval)


def keys(store: SGAMStore, query: str, prefix: tuple[str, ...] = ("acme",)) -> list[str]:
    return [item.key for item in store.search(prefix, query=query)]


# ---------------------------------------------------------------- stemming finds inflections


def test_spanish_viajes_finds_viajar_only_when_stemmed(target: str) -> None:
    with keyword_store(target, "spanish") as store:
        store.put(("acme", "mira"), "plan", {"text": "Quiere viajar a Japón en otoño"})
        store.put(("acme", "mira"), "pet", {"text": "Tiene un gato llamado Miso"})
        assert keys(store, "viajes") == ["plan"]
        assert keys(store, "¿Cuándo viajó?") == ["plan"]
        store.set_language("simple")  # today's unstemmed analysis: the inflection is missed
        assert keys(store, "viajes") == []
        assert keys(store, "viajar") == ["plan"]


def test_english_deadlines_finds_deadline_only_when_stemmed(target: str) -> None:
    with keyword_store(target, None) as store:  # English: a new store's default
        assert store.language == "english"
        store.put(("acme", "mira"), "passport", {"text": "the passport renewal deadline"})
        store.put(("acme", "mira"), "city", {"text": "lives in Lisbon"})
        assert keys(store, "deadlines") == ["passport"]
        assert keys(store, "renewing passports") == ["passport"]
        store.set_language("simple")
        assert keys(store, "deadlines") == []


def test_accents_meet_whichever_side_has_them(target: str) -> None:
    with keyword_store(target, "spanish") as store:
        store.put(("acme", "ana"), "song", {"text": "Su canción favorita es de Cádiz"})
        store.put(("acme", "ana"), "trip", {"text": "Ayer viajé a Sevilla"})
        assert keys(store, "cancion") == ["song"]
        assert keys(store, "canciones") == ["song"]
        assert keys(store, "cadiz") == ["song"]
        assert keys(store, "viaje") == ["trip"]
        # A decomposed "é" (e + combining accent) is the same word as the composed one.
        assert keys(store, unicodedata.normalize("NFD", "viajé")) == ["trip"]


def test_stop_words_do_not_match_on_their_own(target: str) -> None:
    with keyword_store(target, "english") as store:
        store.put(("acme", "mira"), "note", {"text": "what is the plan for the trip"})
        assert keys(store, "the") == []
        assert keys(store, "what is the") == []
        assert keys(store, "the trips") == ["note"]
    with keyword_store(target, None) as store:
        store.set_language("spanish")
        store.put(("globex", "ana"), "nota", {"text": "el plan de la semana"})
        assert keys(store, "de la", ("globex",)) == []
        assert keys(store, "los planes", ("globex",)) == ["nota"]


def test_simple_keeps_todays_stop_word_rule(target: str) -> None:
    """A query of stop words alone still asks for them under "simple", as before."""
    with keyword_store(target, "simple") as store:
        store.put(("acme", "mira"), "note", {"text": "the plan"})
        assert keys(store, "the") == ["note"]
        assert keys(store, "the plan") == ["note"]


# ---------------------------------------------------------------- the stored setting


def test_the_stored_language_is_enforced(target: str) -> None:
    with keyword_store(target, "spanish") as store:
        store.put(("acme", "ana"), "plan", {"text": "viajar a Japón"})
    with keyword_store(target, "english") as store, pytest.raises(ConfigurationError) as err:
        store.setup()
    assert "spanish" in str(err.value) and "set_language('english')" in str(err.value)
    assert "sgam reindex" in str(err.value)
    with keyword_store(target, None) as store:  # no language: the database's
        assert store.language == "spanish"
        assert keys(store, "viajes") == ["plan"]
    with keyword_store(target, "spanish") as store:
        assert keys(store, "viajes") == ["plan"]


def test_an_empty_index_takes_the_requested_language(target: str) -> None:
    with keyword_store(target, None) as store:
        assert store.language == "english"
    with keyword_store(target, "spanish") as store:  # nothing to rebuild: it switches
        assert store.language == "spanish"
        store.put(("acme", "ana"), "plan", {"text": "viajar"})
    with keyword_store(target, None) as store:
        assert store.language == "spanish"


def test_an_unknown_language_is_refused(target: str) -> None:
    with pytest.raises(ConfigurationError, match="klingon"):
        RetrievalConfig(language="klingon")
    with keyword_store(target, None) as store, pytest.raises(ConfigurationError):
        store.set_language("klingon")


@pytest.mark.sqlite_only
def test_a_database_from_before_languages_keeps_unstemmed_keywords(tmp_path: Path) -> None:
    path = tmp_path / "schema_v1.db"
    shutil.copy(FIXTURE, path)
    with keyword_store(str(path), None) as store:
        assert store.language == "simple"  # its rows were written unstemmed
        assert keys(store, "short answers") == ["tone"]
        assert keys(store, "answer") == []
    with keyword_store(str(path), "english") as store, pytest.raises(ConfigurationError):
        store.setup()
    with keyword_store(str(path), None) as store:
        store.set_language("english")
        assert keys(store, "answer") == ["tone"]
        assert keys(store, "short answers", ("globex",)) == []  # tenants stay apart


# ---------------------------------------------------------------- the rebuild


def test_rebuild_changes_results_and_keeps_history(target: str) -> None:
    with keyword_store(target, "simple") as store:
        for value, start, episode in (
            ("deadline moved to July", "2026-06-01T09:00:00Z", "e1"),
            ("deadline moved to June", "2026-06-03T10:00:00Z", "e2"),
        ):
            store.replace_fact(
                MemoryFact(tenant_id="acme", subject="mira", attribute="passport",
                           value={"text": value}, valid_from=start, source_episode_id=episode)
            )  # fmt: skip
        store.put(("acme", "mira"), "diet", {"text": "vegetarian"}, index=False)
        before = store.history("acme", "mira", "passport")
        june2 = store.as_of("2026-06-02T00:00:00Z")
        assert june2.search(("acme",), query="deadlines") == []

        rebuilt = store.set_language("english")

        assert rebuilt == 2  # one row per fact version; the unindexed fact has none
        assert store.history("acme", "mira", "passport") == before
        now = store.search(("acme",), query="deadlines")
        assert [i.value["text"] for i in now] == ["deadline moved to June"]
        past = store.as_of("2026-06-02T00:00:00Z").search(("acme",), query="deadlines moving")
        assert [i.value["text"] for i in past] == ["deadline moved to July"]
        assert store.search(("acme",), query="vegetarian") == []  # index=False stays out


def test_a_put_restricted_to_fields_keeps_them_through_a_rebuild(target: str) -> None:
    with keyword_store(target, "simple") as store:
        store.put(("acme", "mira"), "k", {"text": "deadlines", "secret": "tokens"}, index=["text"])
        store.set_language("english")
        assert keys(store, "deadline") == ["k"]
        assert keys(store, "token") == []


def test_another_store_on_the_database_follows_a_rebuild(target: str) -> None:
    with keyword_store(target, "simple") as first, keyword_store(target, None) as second:
        first.put(("acme", "mira"), "a", {"text": "deadlines"})
        second.setup()
        first.set_language("english")
        second.put(("acme", "mira"), "b", {"text": "deadline"})  # written in English too
        assert sorted(keys(second, "deadline")) == ["a", "b"]
        assert sorted(keys(first, "deadlines")) == ["a", "b"]


@pytest.mark.sqlite_only
def test_the_rebuild_keeps_rowids_and_the_text_as_written(db_path: str) -> None:
    with keyword_store(db_path, "simple") as store:
        store.put(("acme", "mira"), "k", {"text": "Deadlines moved"})
        store.put(("globex", "li"), "k", {"text": "Deadlines moved"})
        rows = store.conn.execute("SELECT rowid, body, source FROM fact_fts").fetchall()
        store.set_language("english")
        after = store.conn.execute("SELECT rowid, body, source FROM fact_fts ORDER BY rowid")
        assert [r[0] for r in after.fetchall()] == sorted(r[0] for r in rows)
        body, source = store.conn.execute("SELECT body, source FROM fact_fts").fetchone()
        assert "deadlin" in body.split() and "Deadlines moved" in source
        store.set_language("simple")
        assert store.conn.execute("SELECT body, source FROM fact_fts").fetchall() == [
            (rows[0][1], None),
            (rows[1][1], None),
        ]
        assert store.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_sgam_reindex_rebuilds_in_another_language(
    target: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from tests.test_cli import sgam

    with keyword_store(target, "simple") as store:
        store.put(("acme", "ana"), "plan", {"text": "viajar a Japón"})
    status, out, _ = sgam(monkeypatch, capsys, "reindex", "--db", target, "--language", "spanish")
    assert status == 0 and "spanish" in out and "simple" in out
    with keyword_store(target, None) as store:
        assert store.language == "spanish"
        assert keys(store, "viajes") == ["plan"]


def test_a_copy_keeps_the_source_language(target: str, tmp_path: Path) -> None:
    source = str(tmp_path / "source.db")
    with keyword_store(source, "spanish") as store:
        store.put(("acme", "ana"), "plan", {"text": "viajar a Japón"})
    src, dst = open_engine(source, dims=None), open_engine(target, dims=None)
    try:
        src.ensure_ready()
        transfer.copy_store(src, dst)
    finally:
        src.close()
        dst.close()
    with keyword_store(target, None) as store:
        assert store.language == "spanish"
        assert keys(store, "viajes") == ["plan"]


# ---------------------------------------------------------------- nothing stale, any language

# Values of one key, corrected in turn, each sharing a term with the last under that
# language's analysis, so a search for an old value finds the key; it must find the
# current value only. Other languages get names and numbers, which every analysis keeps.
CORRECTIONS = {
    "english": ["deadline moved", "deadlines moving", "the deadline moves"],
    "spanish": ["viajar a Japón", "viajes a Japón", "viajé a Corea"],
}
NEUTRAL = ["Lisbon 2026", "Porto 2027 Lisbon", "Lisbon 2028"]


@pytest.mark.parametrize("language", analysis.LANGUAGES)
def test_a_corrected_value_is_never_current(target: str, language: str) -> None:
    values = CORRECTIONS.get(language, NEUTRAL)
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
    with SGAMStore.from_conn_string(target, index=index, retrieval={"language": language}) as store:
        for value in values:
            store.put(("acme", "mira"), "plan", {"text": value})
        for mode in ("keyword", "hybrid"):
            store.retrieval = RetrievalConfig(mode=mode)
            for old in values[:-1]:
                found = store.search(("acme",), query=old)
                assert [i.value["text"] for i in found] == [values[-1]]


WORDS = ("deadline", "deadlines", "viajar", "viajes", "viajé", "canción", "the", "moving",
         "moved", "Lisbon", "Japón", "de la")  # fmt: skip


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    language=st.sampled_from(analysis.LANGUAGES),
    writes=st.lists(
        st.tuples(
            st.sampled_from(["plan", "city"]),
            st.sampled_from(WORDS),
        ),
        min_size=1,
        max_size=8,
    ),
    query=st.sampled_from(["deadlines", "viaje", "cancion", "the", "moves", "japon", "lisbon"]),
)
def test_search_returns_only_current_values_in_any_language(
    tmp_path: Path, language: str, writes: list[tuple[str, str]], query: str
) -> None:
    path = tmp_path / f"p{abs(hash((language, tuple(writes), query)))}.db"
    with keyword_store(str(path), language) as store:
        for key, word in writes:
            store.put(("acme", "mira"), key, {"text": f"{word} {key}"})
        current = {key: store.get(("acme", "mira"), key).value for key, _ in writes}
        for item in store.search(("acme",), query=query, limit=10):
            assert item.value == current[item.key]
        # The old versions are still there for history, and only there.
        for key in current:
            history = store.history("acme", "mira", key)
            assert history[-1].value == current[key] and history[-1].valid_to is None
            assert all(f.valid_to is not None for f in history[:-1])


# ---------------------------------------------------------------- the analyzer itself


@pytest.mark.parametrize(
    ("language", "plural", "singular", "stop"),
    [
        ("english", "deadlines", "deadline", "the"),
        ("spanish", "canciones", "canción", "los"),
        ("french", "chansons", "chanson", "les"),
        ("german", "Häuser", "Hauses", "die"),
        ("italian", "canzoni", "canzone", "gli"),
        ("portuguese", "livros", "livro", "os"),
    ],
)
def test_each_language_meets_its_inflections_and_drops_its_stop_words(
    language: str, plural: str, singular: str, stop: str
) -> None:
    analyzer = analysis.analyzer(language)
    assert analyzer.query_terms(plural) == analyzer.query_terms(singular) != []
    assert analyzer.query_terms(stop) == []
    assert analyzer.index_text(f"{stop} {plural}") == analyzer.query_terms(singular)[0]


def test_tokens_with_digits_are_kept_as_they_are() -> None:
    """Numbers, dates, ids and UUID pieces are not words: never stemmed (nor slowed by it)."""
    analyzer = analysis.analyzer("english")
    key = "3f2a9c1e-77b4-4c1d-9e0f-5a6b7c8d9e0f"
    assert analyzer.query_terms(f"mp3s 2026-06-30 k12 {key}") == [
        "mp3s", "2026", "06", "30", "k12", *key.split("-")
    ]  # fmt: skip


def test_index_and_query_analysis_agree_with_the_sqlite_tokenizer() -> None:
    """What the analyzer writes is what SQLite's tokenizer keeps: one token per term,
    spelled the same, so a term looked up in the vocabulary is found."""
    conn = sqlean.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(b, tokenize = 'unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
    text = "Ayer VIAJÉ a Cádiz; passport_deadline: 2026-06-30, niño's canción"
    for language in analysis.LANGUAGES:
        analyzer = analysis.analyzer(language)
        if not analyzer.stems:
            continue  # "simple" hands the tokenizer the text itself
        conn.execute("DELETE FROM t")
        body = analyzer.index_text(text)
        conn.execute("INSERT INTO t (b) VALUES (?)", (body,))
        vocabulary = {term for (term,) in conn.execute("SELECT term FROM v")}
        assert vocabulary == set(body.split())
        assert analyzer.query_terms(text) == list(dict.fromkeys(body.split()))

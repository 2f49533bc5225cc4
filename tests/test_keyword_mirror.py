"""SQLite scores a small scope's keyword rows in process (`reads.scope_keywords`, kept in a
`KeywordMirror` across searches): it must give exactly what FTS5's bm25() gives for the
same rows (`keyword_scores`), hits, scores and order, after any sequence of writes that
the mirror has to notice (new rows, deleted ones, rewritten ones, another language)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sgam_store import SGAMStore
from sgam_store.core import clock
from sgam_store.engines.sqlite import reads
from tests.seed import fresh_store

WORDS = ["coffee", "Tea", "tea", "chess", "roadmap", "run", "running", "runs", "42", "x7"]
# Words of other scripts and accents, in rows only: unicode61 folds some ("Malmö", "café"),
# keeps others as letters ("Søren", "Łukasz", "straße"), splits at others ("—", "€").
OTHER = ["Søren", "Łukasz", "Malmö", "café", "straße", "日本語", "naïve", "—", "€5", "soren"]
SEPARATORS = [" ", ", ", "-", "'s ", ". ", "_", "  "]
USERS = ["u0", "u1", "u2"]
FAR = "9999-12-31T00:00:00.000000Z"

text = st.lists(
    st.tuples(st.sampled_from(WORDS + OTHER), st.sampled_from(SEPARATORS)),
    min_size=0,
    max_size=12,
).map(lambda parts: "".join(w + s for w, s in parts))
write = st.one_of(
    st.tuples(st.just("put"), st.sampled_from(USERS), st.integers(0, 6), text),
    st.tuples(st.just("delete"), st.sampled_from(USERS), st.integers(0, 6), st.just("")),
)
# ASCII terms only (a term FTS5 must analyze is its to score), among them what unicode61
# makes of some words of OTHER ("malmo", "cafe", "naive") and what it does not ("lukasz").
query = st.lists(
    st.sampled_from([*WORDS, "absent", "malmo", "cafe", "naive", "lukasz", "soren", "5"]),
    min_size=1,
    max_size=4,
)


def fts_scores(conn: Any, terms: list[str], user: str, ids: list[int]) -> reads.Hits:
    query = reads.keyword_query(conn, terms, user)
    return reads.keyword_scores(conn, query, ids) if query else []


def check_every_user(store: SGAMStore, mirror: reads.KeywordMirror, words: list[str]) -> int:
    """Compare both scorers on every user's scope; how many scopes were scored in process."""
    in_process = 0
    with store.engine.reading() as conn:
        terms = reads.keyword_terms(conn, " ".join(words))
        for user in USERS:
            found = reads.in_scope(conn, None, None, user, ("memories", user), None, 100)
            ids = sorted(found)
            local = reads.scope_keywords(conn, mirror, user, ids) if ids else None
            tokens = local.tokens(terms) if local is not None else None
            if local is None or tokens is None:
                continue
            in_process += 1
            assert local.terms(" ".join(words)) == terms  # in the language it read
            assert local.scores(conn, tokens) == fts_scores(conn, terms, user, ids), (user, terms)
            for term, token in zip(terms, tokens, strict=True):
                assert local.holding(token) == len(fts_scores(conn, [term], user, ids))
    return in_process


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rounds=st.lists(st.tuples(st.lists(write, max_size=6), query), min_size=1, max_size=5),
    language=st.sampled_from(["english", "simple"]),
)
def test_in_process_scores_equal_fts5s(
    rounds: list[tuple[list[tuple[str, str, int, str]], list[str]]], language: str
) -> None:
    mirror = reads.keyword_mirror()
    with fresh_store(tenant_at=1, retrieval={"language": language}) as store:
        for u, user in enumerate(USERS):  # every user has rows from the start
            store.put(("memories", user), "seed", {"text": f"coffee and tea, {u}"})
        for writes, words in rounds:
            for kind, user, key, body in writes:
                if kind == "put":
                    store.put(("memories", user), f"k{key}", {"text": body})
                else:
                    store.delete(("memories", user), f"k{key}")
            # every user keeps its seed row, so every scope is scored in process
            assert check_every_user(store, mirror, words) == len(USERS)


def test_rows_other_than_ascii_are_scored_in_process() -> None:
    """A user whose memories name a Søren or a Łukasz is scored in process too, with the
    tokens FTS5 made of them (before: left to FTS5's bm25(), 3.3 ms at 20k)."""
    mirror = reads.keyword_mirror()
    with fresh_store(tenant_at=1, retrieval={"language": "simple"}) as store:
        store.put(("memories", "u0"), "a", {"text": "Søren drinks un café au lait in Malmö"})
        store.put(("memories", "u0"), "b", {"text": "soren's coffee — with Łukasz"})
        store.put(("memories", "u1"), "a", {"text": "a coffee with milk"})
        with store.engine.reading() as conn:
            ids = sorted(reads.in_scope(conn, None, None, "u0", ("memories", "u0"), None, 100))
            local = reads.scope_keywords(conn, mirror, "u0", ids)
            assert local is not None and local.tokens(["café"]) is None
            for terms in (["soren"], ["cafe", "malmo"], ["coffee", "lukasz"], ["au", "s"]):
                tokens = local.tokens(terms)
                assert tokens is not None
                assert local.scores(conn, tokens) == fts_scores(conn, terms, "u0", ids), terms
            assert local.holding("soren") == 1 and local.holding("malmo") == 1


def test_a_new_language_is_noticed() -> None:
    mirror = reads.keyword_mirror()
    with fresh_store(tenant_at=1, retrieval={"language": "simple"}) as store:
        for i in range(5):
            store.put(("memories", "u0"), f"k{i}", {"text": f"running and runs {i}"})
        assert check_every_user(store, mirror, ["running"]) == 1
        store.set_language("english")
        assert check_every_user(store, mirror, ["running"]) == 1


# ---------------------------------------------- a connection remembers its current scopes


def test_a_remembered_scope_still_checks_expiry(monkeypatch: Any) -> None:
    """Nothing changes in the file when a fact expires: the connection's remembered scope
    must drop it all the same, at the moment the statement would."""
    with fresh_store(tenant_at=1) as store:
        store.put(("memories", "u0"), "short", {"text": "coffee"}, ttl=1.0)
        store.put(("memories", "u0"), "long", {"text": "coffee and tea"})
        assert {i.key for i in store.search(("memories", "u0"), query="coffee")} == {
            "short",
            "long",
        }
        later = clock.utc_now().replace(clock.utc_now()[:4], str(int(clock.utc_now()[:4]) + 1))
        monkeypatch.setattr(clock, "utc_now", lambda: later)
        assert [i.key for i in store.search(("memories", "u0"), query="coffee")] == ["long"]


def test_a_remembered_scope_sees_every_write(tmp_path: Path) -> None:
    """Own writes and another connection's commits both move the scope on."""
    path = str(tmp_path / "memory.db")
    with (
        SGAMStore.from_conn_string(path, tenant_at=1) as store,
        SGAMStore.from_conn_string(path, tenant_at=1) as other,
    ):
        store.setup()
        store.put(("memories", "u0"), "a", {"text": "coffee"})
        for _ in range(2):  # the second search reads the remembered scope
            assert [i.key for i in store.search(("memories", "u0"), query="coffee")] == ["a"]
        store.put(("memories", "u0"), "b", {"text": "more coffee"})
        assert {i.key for i in store.search(("memories", "u0"), query="coffee")} == {"a", "b"}
        other.delete(("memories", "u0"), "a")
        assert [i.key for i in store.search(("memories", "u0"), query="coffee")] == ["b"]
        other.put(("memories", "u0"), "c", {"text": "coffee again"}, ttl=None)
        assert {i.key for i in store.search(("memories", "u0"), query="coffee")} == {"b", "c"}


def test_inside_a_write_the_scope_is_read_again() -> None:
    """The writer's own uncommitted rows change no data_version: its total_changes must
    move the scope on for the reads inside the same transaction."""
    with fresh_store(tenant_at=1) as store:
        engine = store.engine
        store.put(("memories", "u0"), "a", {"text": "coffee"})

        def scope() -> int:
            return len(reads.in_scope(engine.conn, None, None, "u0", ("memories", "u0"), None, 9))

        def body(cur: Any) -> tuple[int, int]:
            before = scope()
            cur.execute("UPDATE facts SET known_to = ? WHERE tenant_id = 'u0'", (FAR,))
            after = scope()
            cur.execute("ROLLBACK")
            cur.execute("BEGIN IMMEDIATE")
            return before, after

        assert engine.transaction(body) == (1, 0)


def test_a_remembered_listing_drops_what_expired(monkeypatch: Any) -> None:
    """A filtered list read twice (the second from the connection's memory) is the same
    page as the rule gives, before and after two in three of its rows expire."""
    with fresh_store(tenant_at=1) as store:
        keys = []  # newest last
        for i in range(60):
            ttl = 1.0 if i % 3 else None  # two in three expire
            kind = "fact" if i % 2 else "event"
            store.put(
                ("memories", "u0"), f"k{i:02d}", {"text": f"memory {i}", "kind": kind}, ttl=ttl
            )
            keys.append((f"k{i:02d}", kind, ttl is not None))
        newest_first = keys[::-1]

        def page(offset: int, limit: int, expired: bool) -> list[str]:
            live = [
                k for k, kind, short in newest_first if kind == "fact" and not (expired and short)
            ]
            return live[offset : offset + limit]

        def listed(offset: int, limit: int) -> list[str]:
            items = store.search(
                ("memories", "u0"), filter={"kind": "fact"}, limit=limit, offset=offset
            )
            return [i.key for i in items]

        pages = [(0, 10), (5, 10), (0, 3), (20, 10), (0, 100)]
        for offset, limit in pages * 2:
            assert listed(offset, limit) == page(offset, limit, expired=False)
        later = clock.utc_now().replace(clock.utc_now()[:4], str(int(clock.utc_now()[:4]) + 1))
        monkeypatch.setattr(clock, "utc_now", lambda: later)
        for offset, limit in pages * 2:
            assert listed(offset, limit) == page(offset, limit, expired=True), (offset, limit)

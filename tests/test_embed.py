"""`SGAMStore.embed()` (issue 38: embedding an existing SGAM file): a store written with no
embedding, opened with an index config, gives its facts vectors in place; every version,
episode and source reads the same afterwards, a put with index=False stays out, and a
second run finds nothing. On both engines."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sgam_store import ConfigurationError, SGAMStore
from tests.conftest import HashEmbeddings

ENGINES = ("sqlite", "postgres")
INDEX = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}


def written_without_vectors(target: str) -> None:
    """Mira's city twice (history), a note kept out of search, and a fact from an episode."""
    with SGAMStore.from_conn_string(target) as store:
        store.setup()
        store.put(("acme", "mira"), "city", {"text": "Mira lives in Lisbon"})
        store.put(("acme", "mira"), "city", {"text": "Mira moved to Lima"})
        store.put(("acme", "mira"), "secret", {"text": "not for search"}, index=False)
        episode = store.record_episode("acme", "I prefer tea", source_kind="user_message")
        store.apply_updates(
            [{"evidence": "I prefer tea", "subject": "mira", "attribute": "drink",
              "current_value": None, "change": "new", "value": {"text": "tea"},
              "valid_from": "2026-06-01T00:00:00Z"}],
            tenant_id="acme", episode_id=episode.episode_id,
        )  # fmt: skip


def snapshot(store: SGAMStore) -> tuple:
    """Everything a reader sees but the vectors: versions with both clocks, the change
    feed, and the episode behind each fact."""
    keys = [("mira", a) for a in ("city", "secret", "drink")]
    versions = [store.versions("acme", s, a) for s, a in keys]
    said = [store.who_said(f) for f in store.ledger("acme") if f.attribute == "drink"]
    return versions, store.changes("2000-01-01T00:00:00Z", tenant_id="acme"), said


def vector_hits(store: SGAMStore, query: str) -> list[str]:
    store.retrieval = replace(store.retrieval, mode="vector")
    return [i.key for i in store.search(("acme",), query=query, limit=10)]


def test_embed_gives_vectors_in_place_and_keeps_the_history(target: str) -> None:
    written_without_vectors(target)
    with SGAMStore.from_conn_string(target, index=INDEX) as store:
        store.setup()
        before = snapshot(store)
        assert vector_hits(store, "Mira moved to Lima") == []  # no vectors yet
        report = store.embed(batch_size=1)  # a batch per fact: the cursor walks them all
        assert (report.embedded, report.skipped) == (3, 0)  # Lisbon, Lima, tea; not secret
        assert snapshot(store) == before
        hits = vector_hits(store, "Mira moved to Lima")
        assert hits[0] == "city" and "secret" not in hits
        assert store.embed().embedded == 0  # idempotent


def test_embed_without_an_index_config_is_a_typed_error(target: str) -> None:
    written_without_vectors(target)
    with (
        SGAMStore.from_conn_string(target) as store,
        pytest.raises(ConfigurationError, match="index config"),
    ):
        store.embed()
    with (
        SGAMStore.from_conn_string(target, index=INDEX) as indexed,
        pytest.raises(ValueError, match="batch_size"),
    ):
        indexed.embed(batch_size=0)

"""Schema migration: transform registry, dual-read window, and a backfill that keeps the ledger."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import sqlite_vec

from sgam_store import MemoryFact, SchemaTransformError, SGAMStore, register_transform
from sgam_store.cli import main
from sgam_store.core.schema_migration import REGISTRY, TransformRegistry
from sgam_store.engines.sqlite.indexing import FACT_MASK
from tests.conftest import HashEmbeddings
from tests.fixtures.make_fixture import FIXTURE, INDEX

TRANSFORMS_FILE = """
from sgam_store import register_transform

register_transform(1, 2, lambda v: {"date": v["value"]}, attribute="passport_deadline",
                   name="deadline_as_date")
"""


# Examples and tests register value transforms in the process-wide registry.
pytestmark = pytest.mark.usefixtures("empty_transform_registry")


def deadline_as_date(value: dict) -> dict:
    return {"date": value["value"]}


def passport(store: SGAMStore) -> list:
    facts = []
    for episode, value, valid_from in [
        ("e1", "2026-07-15", "2026-06-01T09:00:00Z"),
        ("e2", "2026-06-30", "2026-06-03T10:00:00Z"),
    ]:
        facts.append(
            store.replace_fact(
                MemoryFact(tenant_id="acme", subject="mira", attribute="passport_deadline",
                           value=value, valid_from=valid_from, source_episode_id=episode)
            )
        )  # fmt: skip
    return facts


def test_registry_rejects_ambiguous_or_backward_transforms() -> None:
    registry = TransformRegistry()
    with pytest.raises(SchemaTransformError, match="one memory_type or attribute"):
        registry.register(1, 2, deadline_as_date)
    with pytest.raises(SchemaTransformError, match="one memory_type or attribute"):
        registry.register(1, 2, deadline_as_date, attribute="a", memory_type="semantic")
    with pytest.raises(SchemaTransformError, match="must raise the version"):
        registry.register(2, 2, deadline_as_date, attribute="a")
    with pytest.raises(SchemaTransformError, match="positive ints"):
        registry.register(0, True, deadline_as_date, attribute="a")  # type: ignore[arg-type]
    registry.register(1, 2, deadline_as_date, attribute="a")
    with pytest.raises(SchemaTransformError, match="already has a transform from v1"):
        registry.register(1, 3, deadline_as_date, attribute="a")


def test_chains_prefer_the_attribute_over_its_memory_type() -> None:
    registry = TransformRegistry()
    registry.register(1, 2, lambda v: {**v, "by": "type"}, memory_type="semantic")
    registry.register(1, 2, lambda v: {**v, "by": "attribute"}, attribute="a")
    registry.register(2, 3, lambda v: {**v, "three": True}, memory_type="semantic")
    assert registry.upgrade("semantic", "a", 1, {}) == ({"by": "attribute", "three": True}, 3)
    assert registry.upgrade("semantic", "b", 1, {}) == ({"by": "type", "three": True}, 3)
    assert registry.upgrade("episodic", "b", 1, {"x": 1}) == ({"x": 1}, 1)
    assert registry.latest_version("semantic", "a", 1) == 3


def test_dual_read_presents_old_rows_in_the_new_shape(store: SGAMStore) -> None:
    passport(store)
    register_transform(1, 2, deadline_as_date, attribute="passport_deadline")
    now = store.fact_at("acme", "mira", "passport_deadline")
    assert now.value == {"date": "2026-06-30"} and now.schema_version == 2
    assert store.get(("acme", "mira"), "passport_deadline").value == {"date": "2026-06-30"}
    assert store.search(("acme",), query="passport")[0].value == {"date": "2026-06-30"}
    assert [f.value for f in store.history("acme", "mira", "passport_deadline")] == [
        {"date": "2026-07-15"},
        {"date": "2026-06-30"},
    ]
    past = store.as_of("2026-06-02T00:00:00Z").get(("acme", "mira"), "passport_deadline")
    assert past.value == {"date": "2026-07-15"}
    stored = store.conn.execute("SELECT DISTINCT schema_version FROM facts").fetchall()
    assert stored == [(1,)]  # nothing was rewritten: this is the read path only


def test_put_stamps_the_newest_version_and_is_not_transformed_twice(store: SGAMStore) -> None:
    register_transform(1, 2, lambda v: {"text": v["note"]}, attribute="tone")
    store.put(("acme", "mira"), "tone", {"text": "already new"})
    assert store.get(("acme", "mira"), "tone").value == {"text": "already new"}
    assert store.fact_at("acme", "mira", "tone").schema_version == 2


def test_failing_transform_names_itself(store: SGAMStore) -> None:
    passport(store)
    register_transform(1, 2, lambda v: v["missing"], attribute="passport_deadline", name="bad")
    with pytest.raises(SchemaTransformError, match="transform bad"):
        store.fact_at("acme", "mira", "passport_deadline")


def test_backfill_appends_versions_and_known_at_keeps_the_old_form(store: SGAMStore) -> None:
    e1, e2 = passport(store)
    before = store.history("acme", "mira", "passport_deadline")
    register_transform(1, 2, deadline_as_date, attribute="passport_deadline")
    assert store.stats()["believed_rows_by_value_version"] == {"1": 2}

    report = store.backfill(batch_size=1)  # several batches
    assert report.migrated == 2 and report.by_step == {"v1->v2": 2} and report.remaining == 0
    assert sorted(report.fact_ids) == sorted([e1.fact_id, e2.fact_id])
    assert store.stats()["believed_rows_by_value_version"] == {"2": 2}

    after = store.history("acme", "mira", "passport_deadline")
    assert [(f.fact_id, f.valid_from, f.valid_to) for f in after] == [
        (f.fact_id, f.valid_from, f.valid_to) for f in before
    ]
    assert [f.value for f in after] == [{"date": "2026-07-15"}, {"date": "2026-06-30"}]
    assert all(f.schema_version == 2 for f in after)
    # The ledger still holds what it believed before the backfill, in the old form.
    old = store.history("acme", "mira", "passport_deadline", known_at=e2.recorded_at)
    assert [(f.value, f.schema_version) for f in old] == [("2026-07-15", 1), ("2026-06-30", 1)]
    assert store.fact_at("acme", "mira", "passport_deadline", known_at=e2.recorded_at).value == (
        "2026-06-30"
    )
    log = store.conn.execute(
        "SELECT fact_id, from_version, to_version, transforms FROM backfill_log ORDER BY fact_id"
    ).fetchall()
    assert log == [(e1.fact_id, 1, 2, "deadline_as_date"), (e2.fact_id, 1, 2, "deadline_as_date")]

    again = store.backfill()
    assert again.migrated == 0 and again.remaining == 0


def test_backfill_reindexes_keyword_and_vectors(vstore: SGAMStore) -> None:
    vstore.put(("acme", "mira"), "tone", {"note": "prefers short answers"}, index=["note"])
    new_text = "prefers short answers about kiwifruit"
    register_transform(1, 2, lambda v: {"text": new_text}, attribute="tone")
    query = sqlite_vec.serialize_float32(HashEmbeddings(64).embed_query(new_text))

    def index_state() -> tuple[list, list, float]:
        conn = vstore.conn
        keyword = conn.execute(
            f"SELECT rowid & {FACT_MASK} FROM fact_fts WHERE fact_fts MATCH 'kiwifruit'"
        )
        fields = conn.execute("SELECT field FROM vector_rows").fetchall()
        [(distance,)] = conn.execute(
            "SELECT MIN(vec_distance_cosine(embedding, ?)) FROM vector_rows", (query,)
        ).fetchall()
        return keyword.fetchall(), fields, distance

    keyword, fields, distance = index_state()
    assert keyword == [] and fields == [("note",)] and distance > 0.1  # old words
    assert vstore.backfill().reindexed == 1
    keyword, fields, distance = index_state()
    fact_id = vstore.fact_at("acme", "mira", "tone").fact_id
    assert keyword == [(fact_id,)] and fields == [("text",)] and distance < 1e-6
    assert vstore.search(("acme",), query="kiwifruit")[0].value == {"text": new_text}


def test_backfill_on_a_database_made_by_the_first_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    db = tmp_path / "v1.db"
    shutil.copy(FIXTURE, db)
    transforms = tmp_path / "transforms.py"
    transforms.write_text(TRANSFORMS_FILE)
    with SGAMStore.from_conn_string(str(db), index=INDEX) as store:
        store.setup()
        was = store.history("acme", "mira", "passport_deadline")
        assert [f.value for f in was] == ["2026-08-01", "2026-07-15", "2026-06-30"]
        register_transform(1, 2, deadline_as_date, attribute="passport_deadline")
        assert store.fact_at("acme", "mira", "passport_deadline").value == {"date": "2026-06-30"}
        REGISTRY.clear()  # the CLI registers its own from the file

    assert main(["backfill", "--db", str(db), "--transforms", str(transforms), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["by_step"] == {"v1->v2": 4} and out["remaining"] == 0  # 3 acme + 1 globex
    REGISTRY.clear()
    with SGAMStore.from_conn_string(str(db), index=INDEX) as store:
        now = store.fact_at("acme", "mira", "passport_deadline")
        assert now.value == {"date": "2026-06-30"} and now.schema_version == 2
        believed_before = [f.known_from for f in was][-1]
        old = store.fact_at("acme", "mira", "passport_deadline", known_at=believed_before)
        assert old.value == "2026-06-30" and old.schema_version == 1
        assert store.get(("acme", "mira"), "tone").value == {"text": "prefers short answers"}

    assert main(["backfill", "--db", str(db), "--transforms", "no_such_module_xyz"]) == 2
    assert "cannot load transforms" in capsys.readouterr().err

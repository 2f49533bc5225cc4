"""Memory schemas: declared attributes, value types, memory types, retention, schema_version."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from sgam_store import AttributeSpec, InvalidSchemaError, MemorySchema, MemoryUpdate, SGAMStore
from sgam_store.write.candidates import validate_candidate
from sgam_store.write.schemas import check_retention
from tests.db import scalar

from .seed import E1_TEXT, candidate, record_seed

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine


class Passport(BaseModel):
    number: str
    expires: date


SCHEMA = MemorySchema(
    version=3,
    memory_types={
        "preference": "keep",
        "profile": "keep",
        "task_state": "expire_after:P30D",
        "compliance_note": "session_only",
    },
    attributes={
        "answer_style": AttributeSpec("preference", str, "how the user wants answers"),
        "passport_deadline": AttributeSpec("task_state", date),
        "visits": AttributeSpec("profile", int),
        "passport": AttributeSpec("profile", Passport),
    },
)


def update(**fields: Any) -> MemoryUpdate:
    return validate_candidate(candidate(**fields), E1_TEXT)


def test_a_declared_attribute_gets_its_type_retention_and_version(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    result = store.apply_updates(
        [candidate()], tenant_id="acme", episode_id=e1.episode_id, schema=SCHEMA
    )
    (fact,) = result.written
    assert (fact.value, fact.memory_type) == ("2026-07-15", "task_state")
    assert (fact.retention_policy, fact.schema_version) == ("expire_after:P30D", 3)
    assert store.fact_at("acme", "mira", "passport_deadline").schema_version == 3


def test_without_a_schema_rows_carry_the_default_version(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    (fact,) = store.apply_updates([candidate()], tenant_id="acme", episode_id=e1.episode_id).written
    assert (fact.memory_type, fact.schema_version, fact.retention_policy) == ("semantic", 1, None)


def test_values_are_validated_and_stored_as_json() -> None:
    admitted = SCHEMA.admit(
        update(attribute="passport", value={"number": "X1", "expires": "2030-01-31"})
    )
    assert admitted.value == {"number": "X1", "expires": "2030-01-31"}
    assert SCHEMA.admit(update(attribute="visits", value="3")).value == 3


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"value": "mid July"}, "does not match its declared type"),
        ({"attribute": "visits", "value": "several"}, "does not match its declared type"),
        ({"attribute": "passport", "value": {"number": "X1"}}, "expires"),
        ({"attribute": "shoe_size", "value": 38}, "not declared in memory schema v3"),
        ({"memory_type": "preference"}, "declared as memory type 'task_state'"),
    ],
)
def test_what_the_schema_does_not_allow_is_rejected(
    store: SGAMStore, fields: dict, message: str
) -> None:
    e1, _ = record_seed(store)
    result = store.apply_updates(
        [candidate(**fields)], tenant_id="acme", episode_id=e1.episode_id, schema=SCHEMA
    )
    (rejection,) = result.rejected
    assert rejection.kind == "schema" and message in rejection.reason
    assert result.written == []
    assert scalar(store, "SELECT COUNT(*) FROM facts") == 0


def test_free_attributes_need_the_schemas_permission_and_a_declared_type() -> None:
    free = MemorySchema(
        version=1,
        memory_types={"profile": "keep", "preference": "keep"},
        attributes={},
        allow_free_attributes=True,
        default_memory_type="profile",
    )
    assert free.admit(update(attribute="shoe_size", value=38)).memory_type == "profile"
    assert (
        free.admit(update(attribute="tone", memory_type="preference")).memory_type == "preference"
    )
    with pytest.raises(ValueError, match="needs a declared memory type"):
        free.admit(update(attribute="tone", memory_type="mood"))
    strict = MemorySchema(
        version=1, memory_types={"profile": "keep"}, attributes={}, allow_free_attributes=True
    )
    with pytest.raises(ValueError, match="got None"):
        strict.admit(update(attribute="shoe_size", value=38))


@pytest.mark.parametrize(
    "policy", ["keep", "session_only", "expire_after:P30D", "expire_after:PT12H"]
)
def test_retention_policies_accepted(policy: str) -> None:
    assert check_retention(policy) == policy


@pytest.mark.parametrize(
    "policy", ["", "forever", "expire_after:", "expire_after:30d", "expire_after:P0D", "Keep"]
)
def test_retention_policies_rejected(policy: str) -> None:
    with pytest.raises(InvalidSchemaError, match="retention policy"):
        check_retention(policy)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"version": 0}, "positive int"),
        ({"version": True}, "positive int"),
        ({"attributes": {"tone": AttributeSpec("mood")}}, "memory type 'mood'"),
        ({"attributes": {"Tone": AttributeSpec("profile")}}, "normalized form: 'tone'"),
        ({"memory_types": {"profile": "forever"}}, "retention policy"),
        ({"default_memory_type": "mood"}, "default_memory_type"),
        ({"attributes": {"tone": AttributeSpec("profile", object())}}, "unusable value type"),
    ],
)
def test_inconsistent_schemas_are_refused(kwargs: dict, message: str) -> None:
    args = {"version": 1, "memory_types": {"profile": "keep"}, "attributes": {}, **kwargs}
    with pytest.raises(InvalidSchemaError, match=message):
        MemorySchema(**args)


def test_describe_shows_the_model_what_it_may_remember() -> None:
    text = SCHEMA.describe()
    assert "Memory schema v3" in text and "Do not propose any other attribute." in text
    assert "- passport_deadline (memory_type task_state" in text and '"format": "date"' in text
    assert "how the user wants answers" in text


@settings(max_examples=60, deadline=None)
@given(st.integers(-(10**12), 10**12))
def test_declared_int_accepts_any_int(n: int) -> None:
    assert SCHEMA.admit(update(attribute="visits", value=n)).value == n


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=12).filter(lambda t: not any(c.isdigit() for c in t)))
def test_declared_int_rejects_text_without_digits(text: str) -> None:
    with pytest.raises(ValueError, match="does not match its declared type"):
        SCHEMA.admit(update(attribute="visits", value=text))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 10_000), st.sampled_from("DWMY"))
def test_any_positive_period_is_a_retention_policy(n: int, unit: str) -> None:
    assert check_retention(f"expire_after:P{n}{unit}") == f"expire_after:P{n}{unit}"

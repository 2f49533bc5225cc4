"""MemoryUpdate: SGR field order, normalization, and the validators' rejections."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgam_store import InvalidCandidateError, MemoryUpdate
from sgam_store.write.candidates import (
    MemoryUpdates,
    normalize_attribute,
    normalize_subject,
    validate_candidate,
)

from .seed import E1_TEXT, candidate

NAME = re.compile(r"[a-z0-9_]+")
SUBJECT = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)*")


def test_fields_are_declared_in_sgr_order() -> None:
    """The model fills fields in schema order: evidence first, the decision before the value."""
    item_schema = MemoryUpdates.model_json_schema()["$defs"]["MemoryUpdate"]
    assert list(item_schema["properties"]) == [
        "evidence",
        "subject",
        "attribute",
        "current_value",
        "change",
        "value",
        "valid_from",
        "memory_type",
        "confidence",
    ]
    assert all(p.get("description") for p in item_schema["properties"].values())


@pytest.mark.parametrize(
    ("raw", "subject"),
    [
        ("Mira", "mira"),
        ("  Mira Lopez ", "mira_lopez"),
        ("acme . Mira-Lopez", "acme.mira_lopez"),
        ("team.lead\tdev", "team.lead_dev"),
    ],
)
def test_subject_normalization(raw: str, subject: str) -> None:
    assert normalize_subject(raw) == subject


@pytest.mark.parametrize("raw", ["", "mira.", ".mira", "mira..x", "Müller", "mira/x", "a+b"])
def test_subjects_that_stay_invalid_are_rejected(raw: str) -> None:
    with pytest.raises(InvalidCandidateError, match="does not normalize"):
        normalize_subject(raw)


@pytest.mark.parametrize("raw", ["Passport Deadline", "passport-deadline", " PASSPORT_deadline "])
def test_attribute_normalization(raw: str) -> None:
    assert normalize_attribute(raw) == "passport_deadline"


@pytest.mark.parametrize("raw", ["", "passport.deadline", "fecha_límite", "a:b"])
def test_attributes_that_stay_invalid_are_rejected(raw: str) -> None:
    with pytest.raises(InvalidCandidateError, match="does not normalize"):
        normalize_attribute(raw)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_normalized_subjects_are_valid_and_fixed_points(text: str) -> None:
    try:
        subject = normalize_subject(text)
    except InvalidCandidateError:
        return
    assert SUBJECT.fullmatch(subject)
    assert normalize_subject(subject) == subject


@settings(max_examples=100, deadline=None)
@given(st.lists(st.from_regex(NAME, fullmatch=True), min_size=1, max_size=4))
def test_valid_subject_paths_are_kept_as_they_are(labels: list[str]) -> None:
    path = ".".join(labels)
    assert normalize_subject(path) == path
    assert normalize_subject(path.upper()) == path


def test_a_valid_candidate_is_normalized() -> None:
    update = validate_candidate(
        candidate(
            subject="Mira", attribute="Passport Deadline", valid_from="2026-06-01T11:00+02:00"
        ),
        E1_TEXT,
    )
    assert (update.subject, update.attribute) == ("mira", "passport_deadline")
    assert update.valid_from == "2026-06-01T09:00:00.000000Z"


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_any_quote_from_the_episode_is_evidence(data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(E1_TEXT) - 1))
    end = data.draw(st.integers(start + 1, len(E1_TEXT)))
    quote = E1_TEXT[start:end]
    if quote.strip():
        assert validate_candidate(candidate(evidence=quote), E1_TEXT).evidence == quote


@settings(max_examples=100, deadline=None)
@given(
    st.text(min_size=1, max_size=40).filter(
        lambda t: t.strip() and " ".join(t.split()) not in E1_TEXT
    )
)
def test_text_not_in_the_episode_is_not_evidence(quote: str) -> None:
    with pytest.raises(InvalidCandidateError, match="evidence"):
        validate_candidate(candidate(evidence=quote), E1_TEXT)


def test_evidence_may_differ_only_in_whitespace() -> None:
    assert validate_candidate(candidate(evidence="Her passport\n deadline is"), E1_TEXT)
    with pytest.raises(InvalidCandidateError, match="does not occur in the episode"):
        validate_candidate(candidate(evidence="her passport deadline is"), E1_TEXT)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"value": None}, "change='new' needs a value"),
        ({"change": "update", "valid_from": None}, "needs valid_from"),
        ({"valid_from": "2026-06-01T09:00:00"}, "naive"),
        ({"valid_from": "next tuesday"}, "cannot parse timestamp"),
        ({"change": "delete"}, "change"),
        ({"confidence": 1.5}, "confidence"),
        ({"evidence": "   "}, "evidence is empty"),
        ({"mood": "happy"}, "mood"),
    ],
)
def test_malformed_candidates_are_rejected_with_a_readable_reason(
    fields: dict, message: str
) -> None:
    with pytest.raises(InvalidCandidateError, match=re.escape(message)):
        validate_candidate(candidate(**fields), E1_TEXT)


@pytest.mark.parametrize(
    "key", ["tenant_id", "tenant", "TenantId", "episode_id", "source_episode_id", "episode"]
)
def test_a_candidate_may_not_choose_its_tenant_or_episode(key: str) -> None:
    with pytest.raises(InvalidCandidateError, match="come from the request"):
        validate_candidate(candidate(**{key: "acme"}), E1_TEXT)
    with pytest.raises(ValueError, match="come from the request"):
        MemoryUpdate(**candidate(**{key: "acme"}))


def test_no_change_needs_neither_value_nor_valid_from() -> None:
    update = validate_candidate(candidate(change="no_change", value=None, valid_from=None), E1_TEXT)
    assert update.change == "no_change"


def test_a_built_model_is_revalidated_against_the_episode() -> None:
    """Without an episode (no context) evidence is unchecked; the service always checks it."""
    update = MemoryUpdate(**candidate(evidence="Mira moved to Lisbon."))
    with pytest.raises(InvalidCandidateError, match="does not occur"):
        validate_candidate(update, E1_TEXT)
    with pytest.raises(InvalidCandidateError, match="MemoryUpdate or a dict"):
        validate_candidate(["not", "a", "candidate"], E1_TEXT)  # type: ignore[arg-type]

"""`MemoryUpdate`: the typed candidate a model proposes for one episode (SGR order).

Fields are declared in the order the model should fill them (schema-guided
reasoning): first the evidence it quotes, then what the fact is about, then the
stored value it was shown, then its decision (`change`), and only then the new value
and when it starts. The descriptions are written for the model.

Validation here is about the candidate alone (plus the episode text, passed as the
pydantic validation context ``{"episode_text": ...}``): the quote must occur in the
episode, names must normalize, a new/update needs a value and an aware `valid_from`.
A candidate may never name a tenant or an episode: those come from the request.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sgam_store.core import clock
from sgam_store.core.errors import InvalidCandidateError, explain

Change = Literal["new", "update", "no_change"]
EPISODE_TEXT = "episode_text"  # key of the validation context that carries the episode text

_SEPARATORS = re.compile(r"[\s\-]+")
_LABEL = re.compile(r"[a-z0-9_]+")
_WHITESPACE = re.compile(r"\s+")


def _normalize_label(text: str) -> str:
    return _SEPARATORS.sub("_", text.strip())


def normalize_attribute(text: str) -> str:
    """'Passport Deadline' -> 'passport_deadline'; what is still not [a-z0-9_]+ is rejected."""
    label = _normalize_label(text.lower())
    if not _LABEL.fullmatch(label):
        raise InvalidCandidateError(
            f"{text!r} does not normalize to a name: got {label!r}, which is not [a-z0-9_]+ "
            "(lowercase letters, digits and '_'; spaces and hyphens become '_')"
        )
    return label


def normalize_subject(text: str) -> str:
    """'Mira' -> 'mira', 'acme . Mira Lopez' -> 'acme.mira_lopez': '.'-separated names."""
    labels = [_normalize_label(part) for part in text.lower().split(".")]
    if not all(_LABEL.fullmatch(label) for label in labels):
        raise InvalidCandidateError(
            f"subject {text!r} does not normalize to an entity id: got {'.'.join(labels)!r}; "
            "each '.'-separated part must be [a-z0-9_]+ (spaces and hyphens become '_')"
        )
    return ".".join(labels)


def _squash(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def claims_scope(payload: dict[str, Any]) -> list[str]:
    """Keys by which a payload tries to choose its tenant or source episode."""
    return [k for k in payload if "tenant" in str(k).lower() or "episode" in str(k).lower()]


class MemoryUpdate(BaseModel):
    """One proposed change to long-term memory, grounded in a quote from the episode."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evidence: str = Field(
        description="The exact words from the episode that support this update, copied "
        "character for character. Do not paraphrase."
    )
    subject: str = Field(
        description="Normalized id of the entity the fact is about: lowercase, '_' instead of "
        "spaces, '.' between path parts. E.g. 'mira' or 'mira.passport'."
    )
    attribute: str = Field(
        description="The property of the subject, lowercase snake_case, e.g. 'passport_deadline'."
    )
    current_value: Any = Field(
        description="The value stored now for this subject and attribute, copied from the "
        "'Stored values' list you were shown; null if nothing is stored."
    )
    change: Change = Field(
        description="Compare the episode with current_value: 'new' if nothing is stored, "
        "'update' if the episode changes the stored value, 'no_change' if it repeats it."
    )
    value: Any = Field(
        description="The new value (a string, number, boolean or JSON object); null only "
        "when change is 'no_change'."
    )
    valid_from: str | None = Field(
        description="When the value starts to hold in the world: ISO-8601 with 'Z' or a UTC "
        "offset (e.g. 2026-06-03T10:00:00Z). Use the episode time if the text does not say. "
        "Null only when change is 'no_change'."
    )
    memory_type: str | None = Field(
        default=None,
        description="Kind of memory, e.g. preference, profile, task_state, compliance_note.",
    )
    confidence: float | None = Field(
        default=None, ge=0.0, le=1.0, description="How sure the evidence supports it, 0 to 1."
    )

    @model_validator(mode="before")
    @classmethod
    def _no_scope_fields(cls, data: Any) -> Any:
        claimed = claims_scope(data) if isinstance(data, dict) else []
        if claimed:
            raise InvalidCandidateError(
                f"candidate sets {', '.join(map(repr, claimed))}: tenant and source episode "
                "come from the request, never from model output"
            )
        return data

    @field_validator("evidence")
    @classmethod
    def _evidence(cls, v: str, info: ValidationInfo) -> str:
        if not v.strip():
            raise InvalidCandidateError("evidence is empty: quote the episode")
        text = (info.context or {}).get(EPISODE_TEXT)
        if text is not None and _squash(v) not in _squash(text):
            raise InvalidCandidateError(
                f"evidence {v!r} does not occur in the episode; it must be an exact quote "
                "(only runs of whitespace may differ)"
            )
        return v

    @field_validator("subject")
    @classmethod
    def _subject(cls, v: str) -> str:
        return normalize_subject(v)

    @field_validator("attribute", "memory_type")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        return None if v is None else normalize_attribute(v)

    @field_validator("valid_from", mode="before")
    @classmethod
    def _valid_from(cls, v: Any) -> str | None:
        return None if v is None else clock.normalize(v)

    @model_validator(mode="after")
    def _complete(self) -> MemoryUpdate:
        if self.change == "no_change":
            return self
        if self.value is None:
            raise InvalidCandidateError(f"change={self.change!r} needs a value; got null")
        if self.valid_from is None:
            raise InvalidCandidateError(f"change={self.change!r} needs valid_from; got null")
        return self

    @property
    def key(self) -> tuple[str, str, str | None]:
        """(subject, attribute, valid_from): two candidates with one key would conflict."""
        return self.subject, self.attribute, self.valid_from


class MemoryUpdates(BaseModel):
    """Every memory update found in one episode (an empty list if there is none)."""

    updates: list[MemoryUpdate] = Field(
        description="One entry per fact the episode states, confirms or changes."
    )


def validate_candidate(candidate: MemoryUpdate | dict[str, Any], episode_text: str) -> MemoryUpdate:
    """Validate one candidate (a payload or an already built model) against its episode.

    Every failure is an InvalidCandidateError whose message lists each problem.
    """
    payload = candidate.model_dump() if isinstance(candidate, MemoryUpdate) else candidate
    if not isinstance(payload, dict):
        raise InvalidCandidateError(
            f"a candidate is a MemoryUpdate or a dict, not {type(candidate).__name__}"
        )
    try:
        return MemoryUpdate.model_validate(payload, context={EPISODE_TEXT: episode_text})
    except ValidationError as exc:
        raise InvalidCandidateError(explain(exc)) from None

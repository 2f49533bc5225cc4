"""Scenarios: a fixed episode sequence replayed through the memory writer, then questions.

The seed's advice on testing memory, made runnable: feed a fixed sequence of episodes
into the memory writer (`record_episode` + `apply_updates`), inspect the ledger after
each turn that changed it, then ask current-state and point-in-time questions, of SGAM
and of a description-memory baseline (`sgam_store.harness.baseline`) over the same episodes.

Format (YAML; `sgam_store/harness/scenarios/passport.yaml` is the bundled example)::

    name: passport                    # optional; default: the file name
    description: One paragraph.       # optional
    episodes:                         # the turns, replayed in this order
      - id: e1                        # episode id that facts cite; unique in the file
        tenant: acme
        at: 2026-06-01T09:00:00Z      # when it was said: ISO-8601 with Z or an offset
        speaker: mira                 # optional
        text: Mira prefers concise answers. Her passport deadline is 2026-07-15.
        kind: user_message            # optional: user_message (default), assistant_message,
                                      #   tool_result, business_event
        thread: t1                    # optional conversation id
        path: hot                     # optional: hot (default) or background, see below
        extracted_at: 2026-06-05T02:00:00Z  # optional, background only: when the
                                      #   background manager extracted it (default: right
                                      #   after the last turn)
        candidates:                   # optional: pre-extracted MemoryUpdate fields, so the
          - evidence: Her passport deadline is 2026-07-15.   # replay needs no model
            subject: mira
            attribute: passport_deadline
            current_value: null
            change: new               # new | update | no_change
            value: "2026-07-15"
            valid_from: 2026-06-01T09:00:00Z
    questions:
      - ask: What was Mira's passport deadline on June 2?  # the text the baseline searches
        tenant: acme
        subject: mira                 # the key SGAM reads: exact state, no search
        attribute: passport_deadline
        at: 2026-06-02T00:00:00Z      # optional: the instant asked about; omitted = now
        expect: "2026-07-15"          # the right answer; null = nothing should be known
        after: e3                     # optional: ask right after this turn, not at the end

YAML's own timestamp parsing is off: `expect: 2026-06-30` is the string "2026-06-30".

Replay. Each episode is recorded at its turn. A `hot` episode's candidates are applied
in the same turn, so the next turn can rely on them (the seed's "remember that I prefer
short answers"); a `background` episode is only recorded, and a background manager
applies its candidates after the last turn, in file order: a delayed extraction, like
the seed's e0. With a chat model (`model=`), the candidates come from
`extraction.extract_candidates` on the episode text instead of the file, so the model
sees the values stored at that moment. Questions are asked after the background run,
or right after the turn their `after` names. SGAM answers with the fact valid at the
instant (`fact_at`); the baseline with the value its most similar episode states for
the key, read the way the writer read that episode (its candidates). Each answer is
judged against `expect`: ok; stale (a value the key had at another time in this
scenario); missing (no answer); or wrong.

Belief time. The replay writes on the scenario's clock, not the wall clock
(`clock.replayed_time`): an episode, and what its turn extracts, is recorded at the
episode's `at`; a background extraction at its `extracted_at`. So the replayed file's
transaction time is the conversation's, and `known_at` asks what was believed at an
instant of the scenario (`sgam ledger --known-at 2026-06-02T00:00:00Z`). Only the
replay does this; every other write is stamped with the wall clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from sgam_store.core import clock, namespaces
from sgam_store.core.errors import InvalidCandidateError, InvalidScenarioError, explain
from sgam_store.harness.baseline import DescriptionMemory
from sgam_store.ledger.episodes import Episode, SourceKind
from sgam_store.managers.extraction import extract_candidates
from sgam_store.write.candidates import normalize_attribute, normalize_subject
from sgam_store.write.service import WriteResult

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from sgam_store.store import SGAMStore

BUNDLED = "passport"  # the scenario `sgam replay` runs when given none
Verdict = Literal["ok", "stale", "missing", "wrong"]
Key = tuple[str, str]  # (subject, attribute)


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("tenant", check_fields=False)
    @classmethod
    def _tenant(cls, v: str) -> str:
        return namespaces.check_item_namespace((v,))[0]

    @field_validator("at", check_fields=False)
    @classmethod
    def _at(cls, v: str | None) -> str | None:
        return None if v is None else clock.normalize(v)


class EpisodeSpec(_Spec):
    """One turn: what was said, by whom, when, and (offline) what it means for memory."""

    id: str
    tenant: str
    at: str
    text: str
    speaker: str | None = None
    kind: SourceKind = "user_message"
    thread: str | None = None
    path: Literal["hot", "background"] = "hot"
    extracted_at: str | None = None
    candidates: list[dict[str, Any]] = Field(default_factory=list)

    @field_validator("extracted_at")
    @classmethod
    def _extracted_at(cls, v: str | None) -> str | None:
        return None if v is None else clock.normalize(v)

    @model_validator(mode="after")
    def _extraction_follows(self) -> EpisodeSpec:
        if self.extracted_at is None:
            return self
        if self.path != "background":
            raise ValueError(f"episode {self.id}: extracted_at is for background episodes")
        if self.extracted_at < self.at:
            raise ValueError(f"episode {self.id}: extracted_at is before the episode's at")
        return self


class QuestionSpec(_Spec):
    """A question, the key SGAM reads for it, the instant it asks about, the right answer."""

    ask: str
    tenant: str
    subject: str
    attribute: str
    expect: Any
    at: str | None = None
    after: str | None = None

    @field_validator("subject")
    @classmethod
    def _subject(cls, v: str) -> str:
        return normalize_subject(v)

    @field_validator("attribute")
    @classmethod
    def _attribute(cls, v: str) -> str:
        return normalize_attribute(v)


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    episodes: list[EpisodeSpec] = Field(min_length=1)
    questions: list[QuestionSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _references(self) -> Scenario:
        ids = [e.id for e in self.episodes]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"episode ids must be unique; repeated: {', '.join(repeated)}")
        for q in self.questions:
            if q.after is not None and q.after not in ids:
                raise ValueError(f"question {q.ask!r} is asked after {q.after!r}: no such episode")
        return self


# ---------------------------------------------------------------- loading


class _StringTimes(yaml.SafeLoader):
    """SafeLoader without implicit timestamps: dates and times stay the strings written."""


_StringTimes.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def bundled_names() -> list[str]:
    folder = resources.files(__package__).joinpath("scenarios")
    return sorted(
        p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml")
    )


def load_scenario(source: str | Path = BUNDLED) -> Scenario:
    """A scenario from a YAML file, or a bundled one by name (`bundled_names()`)."""
    path = Path(source)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise FileNotFoundError(f"no scenario file at {path}")
        text, name = path.read_text(encoding="utf-8"), path.stem
    elif str(source) in bundled_names():
        text = resources.files(__package__).joinpath("scenarios", f"{source}.yaml").read_text()
        name = str(source)
    else:
        raise FileNotFoundError(
            f"no scenario {str(source)!r}: give a .yaml file or a bundled name "
            f"({', '.join(bundled_names())})"
        )
    return parse_scenario(text, name=name, origin=str(path))


def parse_scenario(text: str, *, name: str = "scenario", origin: str = "scenario") -> Scenario:
    """Validate YAML text; every problem is one InvalidScenarioError line naming `origin`."""
    try:
        data = yaml.load(text, Loader=_StringTimes)  # a SafeLoader: no object construction
    except yaml.YAMLError as exc:
        raise InvalidScenarioError(f"{origin}: not valid YAML: {_one_line(exc)}") from None
    if not isinstance(data, dict):
        raise InvalidScenarioError(f"{origin}: a scenario is a mapping with 'episodes'")
    try:
        return Scenario.model_validate({"name": name, **data})
    except ValidationError as exc:
        raise InvalidScenarioError(f"{origin}: {explain(exc)}") from None


def _one_line(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    return f"{getattr(exc, 'problem', None) or exc}{where}"


# ---------------------------------------------------------------- replay


class ScenarioClock:
    """The replay's "now": the instant the scenario has reached, strictly increasing like
    `clock.CLOCK` (a write at an instant already handed out takes the next microsecond),
    so a scenario whose episodes are not in time order still writes in order."""

    def __init__(self) -> None:
        self._at = ""
        self._last = ""

    def reach(self, instant: str) -> None:
        self._at = max(self._at, instant)

    def now(self) -> str:
        current = self._at if self._at > self._last else clock.shift(self._last, clock.MICROSECOND)
        self._last = current
        return current


@dataclass(frozen=True)
class Turn:
    """One turn as replayed, or (background=True) the background run of a deferred one."""

    number: int  # position in the scenario, from 1
    spec: EpisodeSpec
    episode: Episode
    result: WriteResult | None  # None: recorded, extraction left to the background manager
    background: bool = False


@dataclass(frozen=True)
class Reply:
    value: Any
    source: str | None  # the episode the answer came from
    verdict: Verdict


@dataclass(frozen=True)
class Answer:
    question: QuestionSpec
    sgam: Reply
    baseline: Reply


def replay(
    store: SGAMStore,
    scenario: Scenario,
    *,
    model: BaseChatModel | None = None,
    baseline: DescriptionMemory | None = None,
) -> Iterator[Turn | Answer]:
    """Replay `scenario` into an empty `store`, yielding each turn and answer as it happens.

    Without `model`, candidates are the file's; with one, they are extracted by it.
    `baseline` defaults to `DescriptionMemory()` (MiniLM if installed, else word overlap).
    """
    memory = baseline if baseline is not None else DescriptionMemory()
    readings: dict[str, dict[Key, Any]] = {}
    deferred: list[tuple[int, EpisodeSpec, Episode]] = []
    scenario_clock = ScenarioClock()
    for number, spec in enumerate(scenario.episodes, 1):
        scenario_clock.reach(spec.at)
        with clock.replayed_time(scenario_clock.now):
            episode = store.record_episode(
                spec.tenant,
                spec.text,
                source_kind=spec.kind,
                speaker=spec.speaker,
                thread_id=spec.thread,
                occurred_at=spec.at,
                episode_id=spec.id,
            )
        memory.add(episode)
        if model is None:
            readings[spec.id] = statements(spec.candidates)
        if spec.path == "background":
            deferred.append((number, spec, episode))
            yield Turn(number, spec, episode, None)
        else:
            with clock.replayed_time(scenario_clock.now):
                result = _write(store, spec, episode, model, readings)
            yield Turn(number, spec, episode, result)
        for question in scenario.questions:
            if question.after == spec.id:
                yield answer(store, scenario, question, memory, readings)
    for number, spec, episode in deferred:
        scenario_clock.reach(spec.extracted_at or "")
        with clock.replayed_time(scenario_clock.now):
            result = _write(store, spec, episode, model, readings)
        yield Turn(number, spec, episode, result, background=True)
    for question in scenario.questions:
        if question.after is None:
            yield answer(store, scenario, question, memory, readings)


def _write(
    store: SGAMStore,
    spec: EpisodeSpec,
    episode: Episode,
    model: BaseChatModel | None,
    readings: dict[str, dict[Key, Any]],
) -> WriteResult:
    candidates: list[Any] = spec.candidates
    if model is not None:
        candidates = extract_candidates(model, store, episode)
        readings[spec.id] = statements(candidates)
    return store.apply_updates(candidates, tenant_id=spec.tenant, episode_id=spec.id)


def statements(candidates: list[Any]) -> dict[Key, Any]:
    """What an episode says, key by key, as its candidates read it (malformed ones skipped).

    A no_change candidate states the value it confirms (its current_value).
    """
    out: dict[Key, Any] = {}
    for c in candidates:
        if not isinstance(c, dict):
            continue
        try:
            key = (
                normalize_subject(str(c.get("subject"))),
                normalize_attribute(str(c.get("attribute"))),
            )
        except InvalidCandidateError:
            continue
        out[key] = c.get("current_value") if c.get("change") == "no_change" else c.get("value")
    return out


def answer(
    store: SGAMStore,
    scenario: Scenario,
    question: QuestionSpec,
    memory: DescriptionMemory,
    readings: dict[str, dict[Key, Any]],
) -> Answer:
    """Ask SGAM (exact state at the instant) and the baseline (top-1 episode), then judge."""
    q, key = question, (question.subject, question.attribute)
    others = [
        said[key]
        for spec in scenario.episodes
        if spec.tenant == q.tenant and key in (said := readings.get(spec.id, {}))
    ]
    fact = store.fact_at(q.tenant, q.subject, q.attribute, at=q.at)
    value = fact.value if fact else None
    sgam = Reply(value, fact.source_episode_id if fact else None, judge(value, q.expect, others))
    top = memory.top(q.tenant, q.ask, clock.to_utc(q.at) if q.at else None)
    value = readings.get(top.episode_id, {}).get(key) if top else None
    baseline = Reply(value, top.episode_id if top else None, judge(value, q.expect, others))
    return Answer(q, sgam, baseline)


def judge(value: Any, expected: Any, others: list[Any]) -> Verdict:
    """ok; stale if the key held `value` at another time; missing if None; else wrong."""
    if value == expected:
        return "ok"
    if value is None:
        return "missing"
    return "stale" if value in others else "wrong"


def tally(answers: list[Answer]) -> dict[str, dict[Verdict, int]]:
    """Verdict counts per memory: {"baseline": {...}, "sgam": {...}} (every verdict listed)."""
    verdicts: tuple[Verdict, ...] = ("ok", "stale", "missing", "wrong")
    out = {}
    for who in ("baseline", "sgam"):
        counts = Counter(getattr(a, who).verdict for a in answers)
        out[who] = {v: counts[v] for v in verdicts}
    return out

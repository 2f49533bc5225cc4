"""A harder retrieval evaluation: long, dated two-person conversations, every turn a memory.

`benchmarks/retrieval_eval.py`'s set is saturated (hybrid recall@10 0.983): one short
statement per attribute, asked in a paraphrase. Real chat memory is a long log in which
the answer is one turn among hundreds that talk about the same things. Here each
conversation has two speakers and a dozen sessions days or weeks apart, ~20 turns each;
small talk fills most turns, and storylines from `hard_templates.py` are planted in it.
The question categories:

- paraphrase: asked in other words than the evidence turn (synonyms);
- inflection: asked with other inflections of the evidence's words (deadline / deadlines);
- temporal: "when did ..." (the answer is the session date stored with the turn) and
  "what did ... do before ...", next to plan / aftermath turns that share more words;
- multi: the evidence is two turns in different sessions;
- changing: a value said in one session and changed in a later one; only the later turn
  is evidence, the earlier is its `stale` turn;
- spanish: every question of the Spanish conversations (mostly other inflections);
- dated, dated-spanish: a question that names a time ("in March", "two weeks ago", "hace
  3 semanas"), asked on a given day after the conversation, `Question.asked`; the same
  matter comes up in other periods. In conversations of their own (8 a language after
  the others), so the categories above keep their conversations and their figures.

Every item also plants distractor turns that share words with its question. A turn is
stored the way an app logs chat with SGAM: the item `((user, "turns"), "s03-t07",
{"text": "Maya: ...", "speaker": "Maya", "session_date": "2025-03-14"})`, one key per
turn, written as a fact valid from when it was said (the session's evening, a minute a
turn) whose source episode is its session ("session-03"), as a LangGraph app's puts
take their thread's id. A change of mind is a new turn, not a put to the old key: in a
log the old turn stays a true record of what was said then, so search must rank the
current turn above it.

Deterministic: conversation i draws from `random.Random(f"{seed}:{i}")` only, and falls
in the tune split when i is even, else test.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from hard_templates import EN_DATED, ENGLISH, ES_DATED, SPANISH, Bank, Dated, Item

from sgam_store import MemoryFact

CATEGORIES = (
    "paraphrase", "inflection", "temporal", "multi", "changing", "spanish",
    "dated", "dated-spanish",
)  # fmt: skip
SPLITS = ("tune", "test")
LABEL = "turns"  # namespace = (user, LABEL)
TURNS_PER_SESSION = (16, 24)
FIRST_DAY = date(2025, 1, 6)
SPEAKERS = {"S", "O"}
ASKED_AFTER = (1, 10)  # a dated question is asked this many days after the last session
# Chat turns carry more than the fact: half the storyline turns open with a greeting or
# the like, most go on about something else (weights of 0, 1, 2 more sentences), and
# small talk runs to one, two or three sentences. Vectors of such turns are diluted.
LEAD_SHARE = 0.5
AFTER_WEIGHTS = (0.2, 0.5, 0.3)
REMARK_SHARE = 0.5  # of those sentences after: a short remark, else a line of small talk
SMALL_TALK_WEIGHTS = (0.5, 0.35, 0.15)


@dataclass(frozen=True)
class Turn:
    key: str
    session: int
    date: str
    speaker: str
    text: str

    def value(self) -> dict[str, str]:
        text = f"{self.speaker}: {self.text}"
        return {"text": text, "speaker": self.speaker, "session_date": self.date}


@dataclass(frozen=True)
class Question:
    user: str
    category: str
    text: str
    evidence: tuple[str, ...]  # keys of the turns that answer it
    answer: str
    stale: tuple[str, ...] = ()  # keys of turns whose value the evidence replaced
    asked: str | None = None  # the instant a dated question is asked (its reference)


@dataclass(frozen=True)
class Conversation:
    user: str
    language: str
    split: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    @property
    def namespace(self) -> tuple[str, str]:
        return (self.user, LABEL)

    def facts(self, by_speaker: bool = False) -> list[MemoryFact]:
        """Every turn as a fact: valid from when it was said (the session's evening, a
        minute a turn), its session its source episode; `by_speaker` files it under its
        speaker, SGAM's subject-per-person layout, instead of under LABEL."""
        firsts = {t.session: n for n, t in reversed(list(enumerate(self.turns)))}
        return [
            MemoryFact(
                tenant_id=self.user,
                subject=t.speaker if by_speaker else LABEL,
                attribute=t.key,
                value=t.value(),
                valid_from=(evening(t.date) + timedelta(minutes=n - firsts[t.session])).isoformat(),
                source_episode_id=f"session-{t.session:02d}",
            )
            for n, t in enumerate(self.turns)
        ]


def evening(day: str) -> datetime:
    """When a session on `day` starts: 18:00 UTC."""
    return datetime.fromisoformat(f"{day}T18:00:00+00:00")


@dataclass(frozen=True)
class Dataset:
    conversations: tuple[Conversation, ...]

    def split(self, name: str) -> Dataset:
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}: {name!r}")
        return Dataset(tuple(c for c in self.conversations if c.split == name))

    @property
    def questions(self) -> list[Question]:
        return [q for c in self.conversations for q in c.questions]


def generate(
    seed: int = 18, english: int = 18, spanish: int = 6, sessions: int = 12, dated: int = 8
) -> Dataset:
    """`english` + `spanish` conversations of `sessions` sessions each, then `dated`
    conversations of dated questions in each language."""
    banks = [ENGLISH] * english + [SPANISH] * spanish
    made = [conversation(i, b, seed, sessions) for i, b in enumerate(banks)]
    kinds = [EN_DATED] * dated + [ES_DATED] * dated
    made += [dated_conversation(len(banks) + i, d, seed, sessions) for i, d in enumerate(kinds)]
    return Dataset(tuple(made))


@dataclass
class Beat:
    role: str  # E, X, C or D (see hard_templates)
    speaker: str
    text: str
    session: int
    key: str = field(default="")  # set when the turn is laid out


@dataclass(frozen=True)
class Planted:
    category: str
    question: str
    answer: str
    beats: tuple[Beat, ...]


def conversation(index: int, bank: Bank, seed: int, sessions: int) -> Conversation:
    rng = random.Random(f"{seed}:{index}")
    user = f"user-{index:02d}"
    a, b = rng.sample(bank.names, 2)
    dates = session_dates(rng, sessions)
    decks = Decks(rng, bank.pools)
    planted = [plant(rng, it, cat, (a, b), dates, decks) for it, cat in choose(rng, bank)]
    turns = lay_out(rng, bank, (a, b), dates, planted)
    questions = tuple(
        Question(
            user=user,
            category=p.category,
            text=p.question,
            evidence=tuple(x.key for x in p.beats if x.role == "E"),
            answer=p.answer,
            stale=tuple(x.key for x in p.beats if x.role == "X"),
        )
        for p in planted
    )
    split = SPLITS[index % 2]
    return Conversation(user, bank.language, split, (a, b), turns, questions)


def dated_conversation(index: int, dated: Dated, seed: int, sessions: int) -> Conversation:
    """A conversation whose questions each name the period of their evidence, all asked
    on one day a little after its last session."""
    rng = random.Random(f"{seed}:{index}")
    bank = dated.bank
    user = f"user-{index:02d}"
    a, b = rng.sample(bank.names, 2)
    speakers = (a, b)
    dates = session_dates(rng, sessions)
    asked = date.fromisoformat(dates[-1]) + timedelta(days=rng.randint(*ASKED_AFTER))
    decks = Decks(rng, {**bank.pools, **dated.pools})
    items = rng.sample(dated.items, dated.quota)
    planted = [plant_dated(rng, it, dated, speakers, dates, asked, decks) for it in items]
    turns = lay_out(rng, bank, speakers, dates, planted)
    instant = f"{asked.isoformat()}T12:00:00+00:00"
    questions = tuple(
        Question(user, p.category, p.question, tuple(x.key for x in p.beats if x.role == "E"),
                 p.answer, asked=instant)
        for p in planted
    )  # fmt: skip
    return Conversation(user, bank.language, SPLITS[index % 2], speakers, turns, questions)


def plant_dated(
    rng: random.Random,
    it: Item,
    dated: Dated,
    speakers: tuple[str, str],
    dates: list[str],
    asked: date,
    decks: Decks,
) -> Planted:
    """One dated storyline: its evidence and time distractors in distinct sessions at
    random, its question naming a period that holds the evidence and no distractor."""
    subject, other = rng.sample(speakers, 2)
    question = dict(it.asks)[dated.category]
    named = fields(*it.beats, question, it.answer)
    slots = {n: decks.draw(n) for n in named if n not in SPEAKERS | {"when"}}
    timed = iter(rng.sample(range(len(dates)), sum(b[0] in "ET" for b in it.beats)))
    beats = []
    for beat in it.beats:
        role, who, text = beat[0], beat[2], beat[5:]
        session = next(timed) if role in "ET" else rng.randrange(len(dates))
        speaker = subject if who == "S" else other
        beats.append(Beat(role, speaker, text.format(S=subject, O=other, **slots), session))
    evidence = date.fromisoformat(dates[next(b.session for b in beats if b.role == "E")])
    others = [date.fromisoformat(dates[b.session]) for b in beats if b.role == "T"]
    when = rng.choice(periods(dated, evidence, others, asked))
    words = question.format(S=subject, O=other, when=when, **slots)
    return Planted(dated.category, words, it.answer.format(**slots), tuple(beats))


def periods(dated: Dated, evidence: date, others: list[date], asked: date) -> list[str]:
    """Ways to name a period, asked on `asked`, that holds `evidence` and none of `others`:
    its day always; its month (with its year, or "last month") when no other falls in it;
    "n weeks ago" when the evidence is within 3 days of that and no other within 7."""
    when, month = dated.when, dated.months[evidence.month - 1]
    found = [when["day"].format(month=month, day=evidence.day)]
    if all((d.year, d.month) != (evidence.year, evidence.month) for d in others):
        found += [when["month"].format(month=month),
                  when["month year"].format(month=month, year=evidence.year)]  # fmt: skip
        before = asked.replace(day=1) - timedelta(days=1)
        if (before.year, before.month) == (evidence.year, evidence.month):
            found.append(when["last month"])
        elif evidence.month != asked.month and "last month name" in when:
            found.append(when["last month name"].format(month=month))
    weeks = round((asked - evidence).days / 7)
    then = asked - timedelta(weeks=weeks)
    apart = all(abs((d - then).days) > 7 for d in others)
    if 1 <= weeks <= len(dated.numbers) and abs((evidence - then).days) <= 3 and apart:
        n = dated.numbers[weeks - 1] or str(weeks)
        found.append(when["week"] if weeks == 1 else when["weeks"].format(n=n))
    return found


def session_dates(rng: random.Random, sessions: int) -> list[str]:
    """Sessions 6 to 20 days apart, starting somewhere in 2025."""
    day = FIRST_DAY + timedelta(days=rng.randrange(300))
    dates = []
    for _ in range(sessions):
        dates.append(day.isoformat())
        day += timedelta(days=rng.randint(6, 20))
    return dates


def choose(rng: random.Random, bank: Bank) -> list[tuple[Item, str]]:
    """Items for one conversation and the category each is asked in, meeting the quotas."""
    need = dict(bank.quotas)
    chosen = []
    for it in rng.sample(bank.items, len(bank.items)):
        options = [category for category, _ in it.asks if need.get(category, 0) > 0]
        if options:
            category = rng.choice(options)
            need[category] -= 1
            chosen.append((it, category))
    if any(need.values()):
        raise ValueError(f"not enough items for the quotas: {need}")
    return chosen


class Decks:
    """Slot values drawn without replacement per conversation, so two storylines of one
    conversation never share a city or a name by accident."""

    def __init__(self, rng: random.Random, pools: dict[str, tuple[str, ...]]) -> None:
        self.decks = {name: rng.sample(values, len(values)) for name, values in pools.items()}

    def draw(self, slot: str) -> str:
        deck = self.decks[slot.rstrip(string.digits)]
        if not deck:
            raise ValueError(f"pool {slot!r} ran out in one conversation")
        return deck.pop()


def fields(*templates: str) -> list[str]:
    """Field names of the templates, in order of appearance, each once."""
    names = (name for t in templates for _, name, _, _ in string.Formatter().parse(t) if name)
    return list(dict.fromkeys(names))


def plant(
    rng: random.Random,
    it: Item,
    category: str,
    speakers: tuple[str, str],
    dates: list[str],
    decks: Decks,
) -> Planted:
    """One storyline: its beats placed in sessions and worded, its question and answer."""
    subject, other = rng.sample(speakers, 2)
    question = dict(it.asks)[category]
    named = fields(*it.beats, question, it.answer)
    slots = {n: decks.draw(n) for n in named if n not in SPEAKERS | {"date"}}
    ordered = [b for b in it.beats if b[0] != "D"]
    in_order = iter(sorted(rng.sample(range(len(dates)), len(ordered))))
    beats = []
    for beat in it.beats:
        role, who, text = beat[0], beat[2], beat[5:]
        session = rng.randrange(len(dates)) if role == "D" else next(in_order)
        speaker = subject if who == "S" else other
        beats.append(Beat(role, speaker, text.format(S=subject, O=other, **slots), session))
    first = next(b.session for b in beats if b.role == "E")
    answer = it.answer.format(date=dates[first], **slots)
    return Planted(category, question.format(S=subject, O=other, **slots), answer, tuple(beats))


def lay_out(
    rng: random.Random,
    bank: Bank,
    speakers: tuple[str, str],
    dates: list[str],
    planted: list[Planted],
) -> tuple[Turn, ...]:
    """Every session's beats shuffled among small talk; each beat learns its turn's key."""
    by_session: list[list[Beat]] = [[] for _ in dates]
    for p in planted:
        for beat in p.beats:
            by_session[beat.session].append(beat)
    turns = []
    for s, beats in enumerate(by_session):
        length = max(rng.randint(*TURNS_PER_SESSION), len(beats) + 4)
        slots: list[Beat | None] = [*beats, *[None] * (length - len(beats))]
        rng.shuffle(slots)
        speaker = rng.choice(speakers)
        for t, beat in enumerate(slots):
            key = f"s{s + 1:02d}-t{t + 1:02d}"
            if beat is None:
                speaker = speakers[speakers[0] == speaker]  # small talk alternates
                text = small_talk(rng, bank, addressee=speakers[speakers[0] == speaker])
            else:
                beat.key, speaker = key, beat.speaker
                text = dress(rng, bank, beat.text, addressee=speakers[speakers[0] == speaker])
            turns.append(Turn(key, s + 1, dates[s], speaker, text))
    return tuple(turns)


def dress(rng: random.Random, bank: Bank, text: str, addressee: str) -> str:
    """A storyline sentence as a chat turn: often an opener before it, and a remark or
    other news after it, as people write."""
    lead = [rng.choice(bank.leads)] if rng.random() < LEAD_SHARE else []
    after = [
        rng.choice(bank.tails) if rng.random() < REMARK_SHARE else sentence(rng, bank, addressee)
        for _ in range(rng.choices((0, 1, 2), AFTER_WEIGHTS)[0])
    ]
    return " ".join([*lead, text, *after])


def small_talk(rng: random.Random, bank: Bank, addressee: str) -> str:
    """One to three small-talk sentences."""
    count = rng.choices((1, 2, 3), SMALL_TALK_WEIGHTS)[0]
    return " ".join(sentence(rng, bank, addressee) for _ in range(count))


def sentence(rng: random.Random, bank: Bank, addressee: str) -> str:
    template = rng.choice(bank.fillers)
    values = {n: rng.choice(bank.pools[n]) for n in fields(template) if n != "O"}
    return template.format(O=addressee, **values)

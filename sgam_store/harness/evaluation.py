"""A generated conversational-memory evaluation: does search find the fact a question needs?

The set mimics what an agent remembers: many people per tenant with the same kinds of
attributes, statements in one wording and questions in paraphrase, some values
corrected over time (the old value stays in history), and several tenants sharing
first names. Recall@k counts questions whose evidence fact is among the top k of a
tenant-scoped `search`. Used by `benchmarks/retrieval_eval.py`, the tests and the
retrieval notebook.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from sgam_store.store import SGAMStore

NAMES = (
    "mira",
    "leo",
    "ana",
    "omar",
    "sofia",
    "yuki",
    "ravi",
    "lena",
    "tomas",
    "ines",
    "kofi",
    "elena",
    "marco",
    "aisha",
    "jonas",
    "nadia",
    "pablo",
    "greta",
    "hugo",
    "zara",
    "ivan",
    "lucia",
    "samir",
    "freya",
    "diego",
    "amara",
    "felix",
    "noor",
    "oscar",
    "talia",
    "bruno",
    "keiko",
    "emil",
    "layla",
    "nico",
    "vera",
    "joel",
    "maya",
    "otto",
    "selin",
)

# attribute: (first-person statement, value pool, question paraphrases). As in real chat
# logs, the speaker is metadata (the namespace), not part of the sentence.
ATTRIBUTES: dict[str, tuple[str, list[str], list[str]]] = {
    "passport_deadline": (
        "My passport has to be renewed by {v}, so I booked the consulate.",
        ["2026-06-30", "2026-07-15", "2026-09-01", "2027-01-20", "2026-11-05"],
        ["When must {N} get a new travel document?", "What's {N}'s deadline for the passport?"],
    ),
    "home_city": (
        "We finally moved, I live in {v} now and love the neighbourhood.",
        ["Lisbon", "Osaka", "Nairobi", "Montreal", "Tallinn", "Quito"],
        ["Which city is {N} based in these days?", "Where is {N}'s home now?"],
    ),
    "answer_style": (
        "Please keep your answers {v}, that works best for me.",
        ["short", "detailed", "bullet-point", "formal", "playful"],
        ["How does {N} like replies to be written?", "What response format suits {N}?"],
    ),
    "employer": (
        "I started as an engineer at {v} last month.",
        ["Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Soylent"],
        ["Which company employs {N}?", "Who is {N}'s current employer?"],
    ),
    "allergy": (
        "Careful with the menu, I'm allergic to {v}.",
        ["peanuts", "shellfish", "gluten", "penicillin", "pollen"],
        ["What should {N} avoid eating or taking?", "Does {N} have any allergy?"],
    ),
    "meeting_day": (
        "Our weekly team sync moved to {v} mornings.",
        ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
        ["On which weekday is {N}'s recurring team meeting?", "When does {N} sync each week?"],
    ),
    "pet": (
        "We adopted a {v} from the shelter last year.",
        ["dog", "cat", "parrot", "rabbit", "tortoise"],
        ["What animal lives with {N}?", "Which pet did {N} adopt?"],
    ),
    "monthly_budget": (
        "I set my monthly budget to {v} euros.",
        ["300", "450", "800", "1200", "2000"],
        ["How much may {N} spend per month?", "What is {N}'s budget?"],
    ),
    "favorite_sport": (
        "On weekends I play {v} with friends at the park.",
        ["tennis", "football", "basketball", "volleyball", "badminton"],
        ["What game does {N} play at the weekend?", "Which sport is {N} into?"],
    ),
    "language_course": (
        "I signed up for an evening course in {v}.",
        ["Japanese", "Portuguese", "Arabic", "German", "Korean"],
        ["Which language is {N} learning?", "What evening course is {N} taking?"],
    ),
}

# Small talk every person also says: it shares words with the facts, never answers a question.
CHATTER = [
    "Had a long day, the morning meeting ran late again.",
    "The weather this weekend looks great for being outside.",
    "I tried a new recipe yesterday, it was a bit spicy.",
    "Traffic on the way home was terrible tonight.",
    "My friends and I watched a documentary about the ocean.",
    "I need to remember to call the bank about my card.",
    "The new phone update changed the whole menu layout.",
    "Coffee at the office tastes better since they got a new machine.",
]


@dataclass(frozen=True)
class Question:
    tenant: str
    text: str
    subject: str
    attribute: str
    answer: str


@dataclass(frozen=True)
class Dataset:
    puts: list[list[PutOp]]  # in order: older statements first, corrections later
    questions: list[Question]


def generate(
    tenants: Iterable[str] = ("acme", "globex", "initech"),
    people: int = 30,
    corrected: float = 0.3,
    questions_per_tenant: int = 60,
    seed: int = 7,
) -> Dataset:
    """Facts for `people` per tenant; a share of them corrected once; paraphrased questions."""
    rng = random.Random(seed)
    first, later, questions = [], [], []
    for tenant in tenants:
        names = rng.sample(NAMES, people)
        for name in names:
            for i, line in enumerate(CHATTER):
                first.append(PutOp((tenant, name), f"chat_{i}", {"text": line}))
            for attribute, (template, pool, _) in ATTRIBUTES.items():
                old, new = rng.sample(pool, 2)
                if rng.random() < corrected:
                    first.append(_put(tenant, name, attribute, template, old))
                    later.append(_put(tenant, name, attribute, template, new))
                else:
                    first.append(_put(tenant, name, attribute, template, new))
        for _ in range(questions_per_tenant):
            name, attribute = rng.choice(names), rng.choice(list(ATTRIBUTES))
            text = rng.choice(ATTRIBUTES[attribute][2]).format(N=name.capitalize())
            questions.append(Question(tenant, text, name, attribute, ""))
    return Dataset(puts=[first, later], questions=questions)


def _put(tenant: str, name: str, attribute: str, template: str, value: str) -> PutOp:
    text = template.format(v=value)
    return PutOp((tenant, name), attribute, {"text": text, "value": value})


def load(store: SGAMStore, dataset: Dataset, batch: int = 200) -> None:
    for group in dataset.puts:
        for i in range(0, len(group), batch):
            store.batch(group[i : i + batch])


def recall_at(store: SGAMStore, questions: list[Question], ks: tuple[int, ...]) -> dict[int, float]:
    """Share of questions whose (subject, attribute) is in the top k of a tenant search."""
    hits = dict.fromkeys(ks, 0)
    for q in questions:
        found = store.search((q.tenant,), query=q.text, limit=max(ks))
        keys = [(item.namespace[1], item.key) for item in found]
        for k in ks:
            hits[k] += (q.subject, q.attribute) in keys[:k]
    return {k: hits[k] / len(questions) for k in ks}


class CachedEmbeddings(Embeddings):
    """Memoizes another embedding, so every mode of the evaluation embeds each text once."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.cache: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            self.cache.update(zip(todo, self.inner.embed_documents(todo), strict=True))
        return [self.cache[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def compare_modes(
    path: str,
    embeddings: Embeddings,
    dims: int,
    dataset: Dataset,
    ks: tuple[int, ...] = (1, 5, 10),
    on_mode: Callable[[str], Any] | None = None,
) -> dict[str, dict[int, float]]:
    """Recall@k of vector-only, keyword-only and hybrid search on one database."""
    cached = CachedEmbeddings(embeddings)
    index = {"dims": dims, "embed": cached, "fields": ["text"]}
    with SGAMStore.from_conn_string(path, index=index) as store:
        load(store, dataset)
    results = {}
    for mode in ("vector", "keyword", "hybrid"):
        if on_mode:
            on_mode(mode)
        with SGAMStore.from_conn_string(path, index=index, retrieval={"mode": mode}) as store:
            results[mode] = recall_at(store, dataset.questions, ks)
    return results

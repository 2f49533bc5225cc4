"""The words of the realistic store (`realistic.py`): what people tell an agent about
themselves, as templates with fillers, so generated memories read like real ones
(first-person facts, preferences and plans) and searches over them find real words.

Everything here is data; `realistic.py` draws from it with a seeded `random.Random`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

# (shown name, ASCII slug): a subject id must normalize to [a-z0-9_]+.
FIRST = [
    ("Ana", "ana"), ("Mira", "mira"), ("João", "joao"), ("Zoë", "zoe"), ("Søren", "soren"),
    ("Łukasz", "lukasz"), ("Aiyana", "aiyana"), ("Chidi", "chidi"), ("Mei", "mei"),
    ("Yusuf", "yusuf"), ("Ingrid", "ingrid"), ("Priya", "priya"), ("Mateo", "mateo"),
    ("Hana", "hana"), ("Olu", "olu"), ("Björn", "bjorn"), ("Camille", "camille"),
    ("Kenji", "kenji"), ("Fatima", "fatima"), ("Diego", "diego"), ("Noor", "noor"),
    ("Tomás", "tomas"), ("Élodie", "elodie"), ("Ravi", "ravi"), ("Sade", "sade"),
]  # fmt: skip
LAST = [
    ("López", "lopez"), ("Okafor", "okafor"), ("Tanaka", "tanaka"), ("Schmidt", "schmidt"),
    ("Novak", "novak"), ("Haddad", "haddad"), ("Silva", "silva"), ("Kowalski", "kowalski"),
    ("Nguyen", "nguyen"), ("Müller", "muller"), ("Rossi", "rossi"), ("O'Brien", "obrien"),
    ("Andersen", "andersen"), ("Mensah", "mensah"), ("Costa", "costa"), ("Ivanova", "ivanova"),
]  # fmt: skip
CITIES = [
    "Lisbon", "Porto", "Kraków", "São Paulo", "Nairobi", "Osaka", "Montréal", "Zürich",
    "Reykjavík", "Bogotá", "Lyon", "Seville", "Tbilisi", "Hanoi", "Accra", "Oaxaca",
    "Gdańsk", "Malmö", "Valparaíso", "Cluj-Napoca", "Kyoto", "Marrakesh", "Tallinn",
]  # fmt: skip
COMPANIES = [
    "Northwind Logistics", "Blue Heron Clinic", "Atlas Robotics", "Café Lumière",
    "Kestrel Bank", "Orchard Labs", "Tidewater Schools", "Granite & Sons", "Nimbus Air",
]  # fmt: skip
JOBS = [
    "nurse", "backend developer", "primary school teacher", "data analyst", "pastry chef",
    "architect", "physiotherapist", "product manager", "translator", "bus driver",
]  # fmt: skip
DRINKS = ["black coffee", "green tea", "oat-milk flat whites", "rooibos", "yerba mate"]
FOODS = ["red meat", "dairy", "gluten", "shellfish", "sugar in the evenings", "fried food"]
DIETS = ["vegetarian", "vegan", "pescatarian", "low-FODMAP", "Mediterranean"]
ALLERGENS = ["peanuts", "penicillin", "cat hair", "shellfish", "pollen", "latex", "sesame"]
HOBBIES = ["bouldering", "sourdough baking", "birdwatching", "salsa classes", "chess",
           "open-water swimming", "woodworking", "urban sketching"]  # fmt: skip
RELATIONS = ["sister", "brother", "mother", "father", "cousin", "best friend", "partner"]
LANGUAGES = ["Portuguese", "Japanese", "Spanish", "German", "Swahili", "Polish", "French"]
STYLES = ["short and to the point", "detailed, with the reasoning", "in bullet points",
          "friendly but brief", "formal"]  # fmt: skip
DOCUMENTS = ["passport", "driving licence", "residence permit", "health card", "work visa"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
THINGS = ["groceries", "eating out", "the new flat", "the wedding gift", "books"]
PLANS = ["basic", "unlimited", "family", "travel", "student"]
TIMEZONES = ["Europe/Lisbon", "Asia/Tokyo", "America/Bogota", "Africa/Nairobi", "UTC"]
PROJECTS = ["kitchen renovation", "thesis", "product launch", "move abroad", "garden"]

# LangMem-style memories: first-person statements, one per memory.
MEMORIES = [
    "I prefer {drink} in the morning and nothing with caffeine after {hour}.",
    "My {relation} {name} lives in {city}; we usually call each other on {weekday}s.",
    "I'm planning a trip to {city} in {month} and need to renew my {document} before then.",
    "I work as a {job} at {company} and usually start around {hour}.",
    "I'm allergic to {allergen}, so please flag anything that contains it.",
    "Please keep answers {style}; I mostly read them on my phone between meetings.",
    "I'm learning {language} and practise for {minutes} minutes before bed.",
    "My budget for {thing} this month is {amount} euros.",
    "I've started {hobby} on weekends with friends from {city}.",
    "I moved to {city} in {month}; my old address in {city2} is no longer valid.",
    "Remind me that my {document} expires on {date}.",
    "I don't eat {food} any more; I switched to a {diet} diet in {month}.",
    "My manager is {name} and our one-to-ones are on {weekday} mornings.",
    "I want to run a half marathon in {city} next {month}; I'm at {km} km a week now.",
    "I'd rather be called {nickname} than by my full name.",
    "My {relation}'s birthday is on {date} and they love {hobby}.",
    "I'm on the {plan} phone plan and it renews on the {day}th of each month.",
]  # fmt: skip
OPENERS = [
    "Hi again!", "Morning.", "Quick thing before I forget.", "Thanks, that helped a lot yesterday.",
    "Sorry for the long message.", "Hey, one more update.", "Good evening!",
]  # fmt: skip
CLOSERS = [
    "Can you also draft a short reply to {name} about it?", "That's all for now, thanks!",
    "Let me know if you need anything else from me.", "No rush on this one.",
    "Could you add that to my notes?", "I'll check back tomorrow.",
]  # fmt: skip
NOTES = [
    "We agreed that {name} owns the budget and reports every {weekday}.",
    "Next step: get three quotes before the end of {month}.",
    "Open question: do we need a permit from the city of {city}?",
    "I spent {amount} euros so far, mostly on {thing}.",
    "The contractor from {company} can only start after the {day}th.",
    "Keep in mind that {name} is away in {city} during {month}.",
    "I decided against the cheaper option because of the noise.",
    "Reminder to myself: call {name} before booking anything.",
    "The timeline slipped by about {minutes} days because of the delivery.",
    "What worked well: short check-ins, written decisions, one shared list.",
]  # fmt: skip
# Correction phrasing: a user taking back what they said.
CORRECTIONS = ["Sorry, I got that wrong earlier:", "Correction to what I said before:",
               "Actually, scratch that:"]  # fmt: skip


def _name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)[0]} {rng.choice(LAST)[0]}"


def _date(rng: random.Random) -> str:
    return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


# Filler name -> how to draw it. A template draws only the fillers it names (as it names
# them), not all of them: a statement costs a few draws instead of twenty-five.
DRAWS: dict[str, Callable[[random.Random], Any]] = {
    "drink": lambda rng: rng.choice(DRINKS),
    "hour": lambda rng: f"{rng.randint(6, 20)}:00",
    "relation": lambda rng: rng.choice(RELATIONS),
    "name": _name,
    "nickname": lambda rng: rng.choice(FIRST)[0],
    "city": lambda rng: rng.choice(CITIES),
    "city2": lambda rng: rng.choice(CITIES),
    "weekday": lambda rng: rng.choice(WEEKDAYS),
    "month": lambda rng: rng.choice(MONTHS),
    "document": lambda rng: rng.choice(DOCUMENTS),
    "job": lambda rng: rng.choice(JOBS),
    "company": lambda rng: rng.choice(COMPANIES),
    "allergen": lambda rng: rng.choice(ALLERGENS),
    "style": lambda rng: rng.choice(STYLES),
    "language": lambda rng: rng.choice(LANGUAGES),
    "minutes": lambda rng: rng.choice([10, 15, 20, 30, 45]),
    "thing": lambda rng: rng.choice(THINGS),
    "amount": lambda rng: rng.choice([80, 150, 240, 400, 650, 1200]),
    "hobby": lambda rng: rng.choice(HOBBIES),
    "date": _date,
    "food": lambda rng: rng.choice(FOODS),
    "diet": lambda rng: rng.choice(DIETS),
    "km": lambda rng: rng.randint(8, 60),
    "plan": lambda rng: rng.choice(PLANS),
    "day": lambda rng: rng.randint(1, 28),
}


class Fillers(dict[str, Any]):
    """The fillers of one statement, each drawn from `rng` when first named."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.rng = rng

    def __missing__(self, name: str) -> Any:
        value = self[name] = DRAWS[name](self.rng)
        return value


def fillers(rng: random.Random) -> dict[str, Any]:
    """One draw of every filler, for a caller that formats a template of its own."""
    return {name: draw(rng) for name, draw in DRAWS.items()}


def fill(rng: random.Random, template: str) -> str:
    """`template` with its fillers drawn."""
    return template.format_map(Fillers(rng))


def memory(rng: random.Random) -> str:
    """One first-person memory."""
    return fill(rng, rng.choice(MEMORIES))


def notes(rng: random.Random, sentences: int) -> str:
    """A long memory: notes from a planning session, `sentences` sentences."""
    project = rng.choice(PROJECTS)
    body = " ".join(fill(rng, rng.choice(NOTES)) for _ in range(sentences))
    return f"Notes from my {project} planning session. {body}"


def message(rng: random.Random, statements: list[str]) -> str:
    """A user's message that says `statements`, with the small talk around them."""
    parts = [rng.choice(OPENERS), *statements]
    if rng.random() < 0.6:
        parts.append(fill(rng, rng.choice(CLOSERS)))
    return " ".join(parts)


def _allergies(f: dict[str, Any], rng: random.Random) -> tuple[str, Any]:
    first, second = rng.sample(ALLERGENS, 2)
    return f"I'm allergic to {first} and {second}.", [first, second]


def _short(f: dict[str, Any], rng: random.Random) -> tuple[str, Any]:
    if rng.random() < 0.5:
        return "Please keep your replies short, I read them on the bus.", True
    return "I like detailed answers that show the reasoning.", False


# SGAM's typed attributes: attribute -> (memory type, statement and value from fillers).
ATTRIBUTES: dict[str, tuple[str, Any]] = {
    "home_city": ("profile", lambda f, _: (f"I live in {f['city']} now.", f["city"])),
    "employer": (
        "profile",
        lambda f, _: (
            f"I work at {f['company']} as a {f['job']}.",
            {"company": f["company"], "role": f["job"]},
        ),
    ),
    "passport_deadline": (
        "task_state",
        lambda f, _: (f"My passport has to be renewed by {f['date']}.", f["date"]),
    ),
    "allergies": ("profile", _allergies),
    "prefers_short_answers": ("preference", _short),
    "monthly_budget_eur": (
        "profile",
        lambda f, _: (f"My monthly budget is {f['amount']}.50 euros.", f["amount"] + 0.5),
    ),
    "preferred_language": (
        "preference",
        lambda f, _: (f"I'd like to be answered in {f['language']}.", f["language"]),
    ),
    "next_trip": (
        "task_state",
        lambda f, _: (
            f"I'm going to {f['city']} in {f['month']}.",
            {"city": f["city"], "month": f["month"]},
        ),
    ),
    "diet": ("preference", lambda f, _: (f"I'm {f['diet']} these days.", f["diet"])),
    "phone_plan": ("profile", lambda f, _: (f"I switched to the {f['plan']} plan.", f["plan"])),
    "manager": ("profile", lambda f, _: (f"My manager is {f['name']}.", f["name"])),
    "timezone": (
        "preference",
        lambda f, rng: (f"I'm on {(tz := rng.choice(TIMEZONES))} time.", tz),
    ),
}


def statement(rng: random.Random, attribute: str) -> tuple[str, Any, str]:
    """What a person says about one of their attributes: (sentence, typed value, memory
    type)."""
    kind, say = ATTRIBUTES[attribute]
    sentence, value = say(Fillers(rng), rng)
    return sentence, value, kind

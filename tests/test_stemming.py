"""PyStemmer (C) and snowballstemmer's pure-Python stemmers give the same stems.

PyStemmer is a core dependency because `snowballstemmer.stemmer` hands out its C stemmer
when it is importable (~200x faster per word); the pure-Python classes stay as the
fallback where it is not. A keyword row written under one and a query stemmed under the
other must meet, so every language the store analyzes must stem identically in both.
"""

from __future__ import annotations

import importlib
import random

import pytest
import snowballstemmer

from sgam_store.core.analysis import LANGUAGES, STOPWORDS, words

Stemmer = pytest.importorskip("Stemmer")

STEMMED = [lang for lang in LANGUAGES if lang != "simple"]

# Letters each language writes with, for random words that reach its rarer suffix rules.
ALPHABETS = {
    "english": "abcdefghijklmnopqrstuvwxyz",
    "spanish": "abcdefghijklmnopqrstuvwxyzáéíóúñü",
    "french": "abcdefghijklmnopqrstuvwxyzàâæçéèêëîïôœùûüÿ",
    "german": "abcdefghijklmnopqrstuvwxyzäöüß",
    "italian": "abcdefghijklmnopqrstuvwxyzàèéìíîòóùú",
    "portuguese": "abcdefghijklmnopqrstuvwxyzáâãàçéêíóôõú",
}

SENTENCES = {
    "english": "The deadlines for generously organised conferences were relentlessly "
    "approaching; running, hiking and cycling happily remain her favourite activities.",
    "spanish": "Los viajes que deberíamos organizar rápidamente incluyen canciones, "
    "habitaciones tranquilas y reuniones semanales con los desarrolladores.",
    "french": "Les réunions hebdomadaires étaient généralement consacrées aux "
    "développements nationaux et aux chansons traditionnelles des montagnes.",
    "german": "Die Besprechungen über Häuser, Bäume und Möglichkeiten wurden "
    "regelmäßig verschoben, obwohl die Mitarbeiterinnen pünktlich erschienen.",
    "italian": "Le riunioni settimanali riguardavano principalmente le canzoni, "
    "le abitazioni cittadine e le possibilità organizzative dei programmatori.",
    "portuguese": "As reuniões semanais tratavam principalmente das canções, das "
    "habitações urbanas e das possibilidades organizacionais dos programadores.",
}


def pure_python(language: str) -> object:
    """snowballstemmer's own stemmer of `language`, bypassing its PyStemmer shortcut."""
    module = importlib.import_module(f"snowballstemmer.{language}_stemmer")
    return getattr(module, f"{language.capitalize()}Stemmer")()


def vocabulary(language: str, seed: int = 31) -> list[str]:
    """Real words (a sentence and the stop list) and 2,000 seeded random letter strings."""
    rng = random.Random(seed)
    letters = ALPHABETS[language]
    made = ["".join(rng.choices(letters, k=rng.randint(1, 14))) for _ in range(2000)]
    return [*words(SENTENCES[language]), *sorted(STOPWORDS[language]), *made]


def test_the_store_stems_with_pystemmer() -> None:
    """With PyStemmer installed (a core dependency), snowballstemmer hands out the C one."""
    assert isinstance(snowballstemmer.stemmer("english"), Stemmer.Stemmer)


def test_every_stemmed_language_has_an_alphabet_here() -> None:
    assert set(STEMMED) == set(ALPHABETS) == set(SENTENCES)


@pytest.mark.parametrize("language", STEMMED)
def test_c_and_pure_python_stems_are_equal(language: str) -> None:
    c, py = Stemmer.Stemmer(language), pure_python(language)
    differing = [
        (w, c.stemWord(w), py.stemWord(w))
        for w in vocabulary(language)
        if c.stemWord(w) != py.stemWord(w)
    ]
    assert differing == []

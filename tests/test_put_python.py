"""The batched put's per-put Python (issue 31): the shortcuts keep every keyword row
byte-identical to the analysis they replace."""

from __future__ import annotations

import json
import random
import uuid

import pytest

from sgam_store.core.analysis import LANGUAGES, STOPWORDS, Analyzer, fold, words
from sgam_store.core.errors import InvalidFactError
from sgam_store.ledger import encode_value


def _reference_terms(analyzer: Analyzer, text: str) -> list[str]:
    """Every word through `_term`, uncached: the analysis before the shortcut."""
    return [t for t in map(analyzer._term, words(text)) if t is not None]


def _random_text(rng: random.Random) -> str:
    pieces = [
        str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "conversation 12",
        "3rd",
        "v2",
        "x86_64",
        "B2B",
        "the",
        "THE",
        "running",
        "canción",
        "débería",
        "Straße",
        "\uff12\uff10\uff12\uff16",
        "²",
        "1st-place",
        "a1",
        "deadlines",
        "cafe",
        "beef",
        "über",
        "été",
        "42",
        "user_id",
        "Dämon7",
    ]
    return " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 20)))


def test_every_stop_word_is_letters_only() -> None:
    """What the shortcut rests on: a token with a digit is never a stop word."""
    for language, stop in STOPWORDS.items():
        assert all(fold(w).isalpha() for w in stop), language


@pytest.mark.parametrize("language", LANGUAGES)
def test_terms_match_the_uncached_analysis(language: str) -> None:
    rng = random.Random(31)
    analyzer = Analyzer(language)
    for _ in range(2000):
        text = _random_text(rng)
        assert analyzer.terms(text) == _reference_terms(analyzer, text), text


def test_uuid_pieces_stay_out_of_the_stem_cache() -> None:
    rng = random.Random(7)
    analyzer = Analyzer("english")
    keys = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(200)]
    for key in keys:
        analyzer.index_text(f"memories {key} the user likes gardening")
    # Cached: the real words, and the rare hex group that is all letters ("beef").
    lettered = {piece for key in keys for piece in key.split("-") if piece.isalpha()}
    assert analyzer.term.cache_info().currsize == 5 + len(lettered)
    key = "80133cba-2eb6-4617-b2c3-743db0a42c27"
    assert analyzer.index_text(f"{key} gardening") == " ".join([*key.split("-"), "garden"])


def test_value_json_is_json_dumps() -> None:
    rng = random.Random(5)
    for _ in range(500):
        value = {
            "content": _random_text(rng),
            "n": rng.randint(-(10**20), 10**20),
            "x": rng.random() * 10 ** rng.randint(-30, 30),
            "nested": [None, True, {"é": "\u2028", "k": []}],
        }
        text, scalar = encode_value(value)
        assert text == json.dumps(value, ensure_ascii=False, allow_nan=False)
        assert scalar == 0
    assert encode_value(3)[0] == json.dumps({"value": 3})


@pytest.mark.parametrize("bad", [{"x": float("nan")}, {"x": float("inf")}, {"x": object()}])
def test_value_json_refuses_what_json_dumps_refuses(bad: dict) -> None:
    with pytest.raises(InvalidFactError):
        encode_value(bad)
    circular: dict = {}
    circular["self"] = circular
    with pytest.raises(InvalidFactError):
        encode_value(circular)

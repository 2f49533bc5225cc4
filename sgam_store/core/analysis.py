"""Keyword analysis by language: how text becomes the terms a keyword index holds and a
query asks for.

One `Analyzer` per language does both sides, so a query's terms are spelled as the
index's: "deadlines" and "deadline" both become "deadlin" under English, "viajes" and
"viajar" both "viaj" under Spanish. Each word is lowercased and NFC-composed (a
decomposed "é" would otherwise split the word), stop words are dropped, the Snowball
stemmer of the language (`snowballstemmer`, which uses the C `PyStemmer` when installed:
same stems, faster) stems the word as written, and the stem loses its diacritics last.
Stemming before folding keeps the accent-aware rules: folded first, "debería" would stem
to "deberi" instead of "deb", missing "deber". Folding the stem gives what SQLite's
keyword tokenizer stores anyway (`remove_diacritics 2`), so "canción" and "cancion" meet.

"simple" is the analysis from before languages existed: words as the keyword tokenizer
splits them, no stemming, stop words dropped from queries only, and a query of nothing
but stop words still asks for them. A database written before the setting existed holds
keyword rows analyzed that way, so it keeps it (LEGACY_LANGUAGE) until rebuilt.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable
from functools import cache, lru_cache

import snowballstemmer

from sgam_store.core.errors import ConfigurationError

DEFAULT_LANGUAGE = "english"  # a new database's
LEGACY_LANGUAGE = "simple"  # a database's written before the setting existed
STEM_CACHE = 1 << 16  # distinct words remembered per language


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words too common to say anything about which fact a question needs. "simple" drops
# these from queries (a query of nothing else keeps them); English drops them everywhere.
SIMPLE_STOPWORDS = _word_set(
    "a an and are as at be by did do does for from has have how i in is it its me my of on "
    "or our so that the their them they this to was we were what when where which who whom "
    "why will with you your"
)

# Function words per language: articles, prepositions, conjunctions, pronouns, the
# commonest auxiliaries. Negations stay ("not", "no"): they change what a fact says.
STOPWORDS: dict[str, frozenset[str]] = {
    "simple": frozenset(),
    "english": SIMPLE_STOPWORDS
    | _word_set(
        "about also am any because been being both but can could each had he her here him his "
        "if into just s she should some such t than then there these those too us very would"
    ),
    "spanish": _word_set(
        "a al ante aquel aquella bajo como con contra cual cuales cuando cuanto de del desde "
        "donde durante e el ella ellas ello ellos en entre era es esa esas ese eso esos esta "
        "estaba estan estas este esto estos fue ha habia han has hasta hay he hemos la las le "
        "les lo los me mi mis mientras muy mas nos nosotras nosotros nuestra nuestras nuestro "
        "nuestros o os para pero pues por porque que quien quienes se segun ser si sin sino "
        "sobre son su sus tambien tan te ti tras tu tus u un una unas uno unos vosotras "
        "vosotros vuestra vuestro y ya yo"
    ),
    "french": _word_set(
        "a au aux avec avait avez avons ai as car ce ces cet cette chez comment d dans de des "
        "donc dont du elle elles en entre est et etait etre il ils j je l la le les leur leurs "
        "lui m ma mais me mes mon nous ni nos notre on ont ou par plus pour pourquoi qu quand "
        "que quel quelle quelles quels qui quoi s sa sans se ses son sont sous sur t ta te tes "
        "ton tres tu un une vers vos votre vous y"
    ),
    "german": _word_set(
        "aber als am an auch auf aus bei bin bist da dass dein deine dem den denn der des dich "
        "die dir doch du durch ein eine einem einen einer eines er es euch euer fur hat haben "
        "hatte ich ihm ihn ihnen ihr ihre im in ist mein meine mich mir mit nach noch nur ob "
        "oder sehr sein seine sich sie sind so sondern uber um und uns unser unter von vor war "
        "waren wann warum was wer werden wie wir wird wo wurde zu zum zur"
    ),
    "italian": _word_set(
        "a abbiamo agli ai al alla alle allo anche chi che ci come con cui da dal dalla degli "
        "dei del della delle dello di dove e ed era essere fra gia gli ha hai hanno ho i il in "
        "io la le lei lo loro lui ma mi mia mie miei mio molto nel nella noi nostro o per "
        "perche piu quale quali quando quella quello questa questo si sono su sua sul sulla suo "
        "ti tra tu tua tuo un una uno vi voi vostro"
    ),
    "portuguese": _word_set(
        "a ao aos aquela aquele as com como da das de do dos e ela elas ele eles em entre era "
        "essa esse esta estao este estar eu foi ha isso isto ja lhe lhes mais mas me meu meus "
        "minha minhas muito na nas no nos nossa nosso o onde os ou para pela pelo por porque "
        "qual quais quando que quem se sem ser seu seus sobre sua suas tambem te tem tu um uma "
        "umas uns"
    ),
}
LANGUAGES = tuple(STOPWORDS)

# Letters and digits: the keyword tokenizer splits on '_' as on punctuation, so
# "passport_deadline" is two words on both sides.
_WORD = re.compile(r"[^\W_]+")
_QUERY_WORD = re.compile(r"\w+")


def check_language(language: str) -> str:
    """`language` if this module can analyze it, else ConfigurationError."""
    if language not in STOPWORDS:
        raise ConfigurationError(
            f"keyword language must be one of {', '.join(LANGUAGES)}: {language!r}"
        )
    return language


def fold(word: str) -> str:
    """`word` without diacritics ("canción" -> "cancion")."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    """Lowercase, composed words of `text`, in order."""
    return _WORD.findall(unicodedata.normalize("NFC", text).lower())


def query_words(text: str) -> list[str]:
    """Distinct lowercase words of a query, SIMPLE_STOPWORDS dropped unless nothing else
    is left: the query side of "simple", and what a database that analyzes text itself
    (PostgreSQL's text-search configurations) is sent."""
    found = _QUERY_WORD.findall(text.lower())
    return list(dict.fromkeys([w for w in found if w not in SIMPLE_STOPWORDS] or found))


class Analyzer:
    """A language's analysis: `index_text` for a keyword row, `query_terms` for a query."""

    def __init__(self, language: str) -> None:
        self.language = check_language(language)
        self.stems = language != "simple"
        self._stop = {fold(w) for w in STOPWORDS[language]}
        self._stemmer = snowballstemmer.stemmer(language) if self.stems else None
        self._lock = threading.Lock()  # a stemmer keeps its word in its state: one at a time
        # Stemming is the cost of analysis (~50 us a word in pure Python) and words repeat,
        # so each is analyzed once (lru_cache through `map`: 8 us for a 15-word text warm).
        self.term: Callable[[str], str | None] = lru_cache(maxsize=STEM_CACHE)(self._term)

    def _term(self, word: str) -> str | None:
        """The term of one lowercase word, or None for a stop word."""
        if fold(word) in self._stop:
            return None
        # A token with a digit in it is a number, a date's part, an id or a piece of a
        # UUID key (LangMem's), not a word: nothing to strip, and stemming each new one
        # would cost a put ~50 us a piece.
        if self._stemmer is None or not word.isalpha():
            return word
        with self._lock:
            return fold(self._stemmer.stemWord(word))

    def terms(self, text: str) -> list[str]:
        """The terms of `text`, in order, stop words gone.

        An ASCII token that is not all letters (a number, an id, a piece of a UUID key)
        is its own term: every stop word is letters only and `_term` leaves such a token
        as it is. It skips the cache, so a store of uuid-keyed memories (LangMem's) does
        not fill it with one-off pieces that miss and evict real words: 8.9 -> 4.9 us a
        put's text, at 20k such memories."""
        term = self.term
        out: list[str] = []
        for word in words(text):
            if word.isalpha() or not word.isascii():
                word = term(word)
                if word is None:
                    continue
            out.append(word)
        return out

    def index_text(self, text: str) -> str:
        """What a keyword row holds for `text`: its terms (the text itself for "simple",
        which the tokenizer splits as before)."""
        return " ".join(self.terms(text)) if self.stems else text

    def query_terms(self, text: str) -> list[str]:
        """Distinct terms of a query. A query of stop words alone asks for nothing (for
        "simple", it asks for them, as before)."""
        if not self.stems:
            return query_words(text)
        return list(dict.fromkeys(self.terms(text)))


@cache
def analyzer(language: str) -> Analyzer:
    """The (shared) analyzer of `language`."""
    return Analyzer(language)

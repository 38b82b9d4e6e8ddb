"""Lucene's English analyzer, the one Search-R1's and WebShop's pyserini indexes apply.

Standard word splitting (letters joined across ``'`` ``.`` ``:``, digits
across ``.`` and ``,``), possessive ``'s`` removed, lowercase, Lucene's 33
English stop words, then Porter stemming (PyStemmer's ``porter``; words of one
or two letters stay unstemmed, as Lucene's PorterStemmer leaves them).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

ANALYZER_VERSION = 2  # bump when the tokens this module produces change

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET
LUCENE_STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no",
    "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to",
    "was", "will", "with",
))  # fmt: skip
_ROUGH = re.compile(r"\w+(?:[.,:'’]\w+)*")
_TOKEN = re.compile(r"\w+(?:(?:(?<=[^\W\d_])['’.:](?=[^\W\d_])|(?<=\d)[.,](?=\d))\w+)*")


def stemmer() -> Callable[[str], str]:
    """Porter stemming of one word, cached (corpora repeat their words)."""
    import Stemmer

    stem_word = Stemmer.Stemmer("porter").stemWord

    def stem(word: str) -> str:
        # Lucene's PorterStemmer leaves words of one or two letters alone ("us" stays "us")
        return word if len(word) <= 2 else stem_word(word)

    return lru_cache(maxsize=1 << 20)(stem)


def analyze_words(text: str) -> list[str]:
    """Lucene-style word tokens before stemming: split, possessives off, lowercase, no stop words."""
    words = []
    for rough in _ROUGH.findall(text.lower()):
        if rough.isalnum():
            if rough not in LUCENE_STOP_WORDS:
                words.append(rough)
            continue
        for token in _TOKEN.findall(rough):
            if token.endswith(("'s", "’s")):
                token = token[:-2]
            if token and token not in LUCENE_STOP_WORDS:
                words.append(token)
    return words


def analyze(text: str) -> list[str]:
    """The terms Lucene's English analyzer makes of ``text``: :func:`analyze_words`, Porter-stemmed."""
    stem = stemmer()
    return [stem(word) for word in analyze_words(text)]

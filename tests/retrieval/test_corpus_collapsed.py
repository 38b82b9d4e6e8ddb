"""The store's collapsed flags: a passage's flag is 1 exactly when its title and text are each already
whitespace-collapsed (``" ".join(s.split()) == s``) and the check can see it, for every kind of text a
published corpus holds; a store written before version 3 opens without flags, and a flags file that does
not match the passages is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from retrieval_index import Corpus, Passage
from retrieval_index.corpus import is_collapsed

HOSTILE = [
    "Paris is in France.", "", " ", "two  spaces", "trailing ", " leading", "tab\there", "nl\nhere",
    "\x1cfs", "nbsp\u00a0here", "ideo\u3000space", "line\u2028sep", "zero\u200bwidth", "bidi \u202eabc\u202c",
    "lone \ud800 surrogate", "é accent", "\x85next", "nul\x00here", "x" * 5000 + "  y", "Zürich \u6771\u4eac",
]  # fmt: skip


def collapsed(text: str) -> bool:
    return " ".join(text.split()) == text


def test_a_flag_is_set_only_for_collapsed_title_and_text_and_for_every_plain_one(tmp_path):
    passages = [Passage(str(i), title, text) for i, (title, text) in enumerate(
        [(title, "plain text.") for title in HOSTILE] + [("Plain", text) for text in HOSTILE]
    )]  # fmt: skip
    corpus = Corpus.from_passages(passages, tmp_path / "store")
    assert corpus.collapsed is not None and len(corpus.collapsed) == len(passages)
    for row, passage in enumerate(passages):
        both = collapsed(passage.title) and collapsed(passage.text)
        flag = corpus.collapsed[row]
        assert flag in (0, 1) and flag <= both, repr(passage)
        # the check decides printable text exactly; a zero-width or bidi mark reads as not collapsed
        if (passage.title + passage.text).isprintable():
            assert flag == both, repr(passage)
        assert flag == (is_collapsed(passage.title) and is_collapsed(passage.text))


def test_random_text_never_gets_a_flag_it_does_not_deserve(tmp_path):
    rng = np.random.default_rng(0)
    alphabet = list("abcdefghijklmnopqrstuvwxyz" + "  .\t\n\u00a0\u3000\u200b\u2028é")
    passages = [
        Passage(str(i), "".join(rng.choice(alphabet, size=int(rng.integers(0, 8)))),
                "".join(rng.choice(alphabet, size=int(rng.integers(0, 10)))))
        for i in range(2000)
    ]  # fmt: skip
    corpus = Corpus.from_passages(passages, tmp_path / "store")
    flagged = [row for row in range(len(passages)) if corpus.collapsed[row]]
    assert 100 < len(flagged) < 1900  # both kinds occur
    for row in flagged:
        assert collapsed(passages[row].title) and collapsed(passages[row].text), repr(passages[row])


def test_a_version_2_store_opens_without_flags(tmp_path):
    corpus = Corpus.from_passages([Passage("0", "Paris", "Paris is in France.")], tmp_path / "store")
    (corpus.directory / "collapsed.bin").unlink()
    meta = json.loads((corpus.directory / "corpus.json").read_text())
    (corpus.directory / "corpus.json").write_text(json.dumps({**meta, "version": 2}))
    old = Corpus.open(corpus.directory)
    assert old.collapsed is None
    assert old[0] == Passage("0", "Paris", "Paris is in France.")


def test_an_empty_store_has_no_flags_to_read(tmp_path):
    empty = Corpus.from_passages([], tmp_path / "empty")
    assert empty.collapsed == b""


@pytest.mark.parametrize("flags", [b"", b"\x01\x01\x01", None])
def test_a_flags_file_that_does_not_match_the_passages_is_refused(tmp_path, flags):
    corpus = Corpus.from_passages([Passage("0", "A", "a."), Passage("1", "B", "b.")], tmp_path / "store")
    path = corpus.directory / "collapsed.bin"
    if flags is None:
        path.unlink()
        with pytest.raises(FileNotFoundError, match="collapsed.bin"):
            Corpus.open(corpus.directory)
    else:
        path.write_bytes(flags)
        with pytest.raises(ValueError, match=f"collapsed.bin holds {len(flags)} flags for 2 passages"):
            Corpus.open(corpus.directory)

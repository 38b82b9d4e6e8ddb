"""A search hit's Search-R1 line read from the passage's title and text alone is :func:`passage_body`
of its ``contents``, whatever the title holds; it is called collapsed only when it is, and the
information text and obs_key are the same whether the store's flags say so or the text is checked."""

from __future__ import annotations

import json

from agentenvs.core.keys import text_key
from agentenvs.envs.search.env import PassageLines, corpus_line_parts, hit_rows, passage_body
from retrieval_index import Corpus, Passage

PASSAGES = [
    Passage("0", "Paris", "Paris is in France."),
    Passage("1", "", ""),
    # a title with a newline: contents' first line then ends inside the title, as Search-R1 splits it
    Passage("2", "Two\nlines", "text after"),
    Passage("3", "Tab\tand  spaces ", " lead and trail \n"),
    Passage("4", "Rome", ""),  # collapsed title and text, but the line ends with a space
    Passage("5", "", "No title."),
    Passage("6", " Lead", "text"),
    Passage("7", "Zero\u200bwidth", "bidi \u202eabc\u202c"),
]


def line_of(parts: tuple[str, str, bool]) -> str:
    title, text, _ = parts
    return f"(Title: {title}) {text}\n"


def test_a_corpus_rows_line_is_passage_body_of_its_contents(tmp_path):
    corpus = Corpus.from_passages(PASSAGES, tmp_path / "store")
    for row, passage in enumerate(PASSAGES):
        assert line_of(corpus_line_parts(corpus, row)) == passage_body(passage.contents)
    # worked: '"Two\nlines"\ntext after' splits at its first newline, inside the title
    assert line_of(corpus_line_parts(corpus, 2)) == '(Title: "Two) lines"\ntext after\n'
    assert line_of(corpus_line_parts(corpus, 0)) == '(Title: "Paris") Paris is in France.\n'


def test_a_line_is_called_collapsed_only_when_it_is(tmp_path):
    corpus = Corpus.from_passages(PASSAGES, tmp_path / "store")
    called = {row: corpus_line_parts(corpus, row)[2] for row in range(len(PASSAGES))}
    assert called == {0: True, 1: False, 2: False, 3: False, 4: False, 5: True, 6: False, 7: False}
    for row, passage in enumerate(PASSAGES):
        line = passage_body(passage.contents)[:-1]
        if called[row]:
            assert " ".join(line.split()) == line


def test_information_is_the_same_with_the_stores_flags_without_them_and_from_a_server(tmp_path):
    corpus = Corpus.from_passages(PASSAGES, tmp_path / "store")
    (tmp_path / "old").mkdir()
    for name in ("texts.bin", "offsets.npy"):
        (tmp_path / "old" / name).write_bytes((corpus.directory / name).read_bytes())
    meta = json.loads((corpus.directory / "corpus.json").read_text())
    (tmp_path / "old" / "corpus.json").write_text(json.dumps({**meta, "version": 2}))
    old = Corpus.open(tmp_path / "old")
    assert old.collapsed is None

    class Hit:
        def __init__(self, row: int) -> None:
            self.index, self.passage = row, PASSAGES[row]

    for rows in ([0, 5], [0, 4, 5], [5, 0, 0], [1], [3, 0], [7, 6, 2], [0], [5]):
        expected_text = (
            "\n\n<information>"
            + "".join(
                f"Doc {i}{passage_body(PASSAGES[row].contents)}" for i, row in enumerate(rows, 1)
            ).strip()
            + "</information>\n\n"
        )
        expected = (expected_text, text_key(expected_text))
        assert PassageLines().information(rows, lambda row: corpus_line_parts(corpus, row)) == expected
        assert PassageLines().information(rows, lambda row: corpus_line_parts(old, row)) == expected
        assert PassageLines().information(*hit_rows([Hit(row) for row in rows])) == expected


def test_another_retrievers_hit_is_read_through_its_passage():
    class Hit:  # what a server client returns: a passage, no corpus row reader
        index = 7
        passage = Passage("7", "Oslo", "Oslo is in Norway.")

    rows, read = hit_rows([Hit()])
    assert rows == [7]
    assert line_of(read(7)) == '(Title: "Oslo") Oslo is in Norway.\n'

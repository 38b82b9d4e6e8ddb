"""A search hit's Search-R1 line read from the passage's title and text alone is :func:`passage_body`
of its ``contents``, whatever the title holds."""

from __future__ import annotations

from agentenvs.envs.search.env import corpus_line_parts, hit_rows, passage_body
from retrieval_index import Corpus, Passage

PASSAGES = [
    Passage("0", "Paris", "Paris is in France."),
    Passage("1", "", ""),
    # a title with a newline: contents' first line then ends inside the title, as Search-R1 splits it
    Passage("2", "Two\nlines", "text after"),
    Passage("3", "Tab\tand  spaces ", " lead and trail \n"),
]


def line_of(parts: tuple[str, str]) -> str:
    title, text = parts
    return f"(Title: {title}) {text}\n"


def test_a_corpus_rows_line_is_passage_body_of_its_contents(tmp_path):
    corpus = Corpus.from_passages(PASSAGES, tmp_path / "store")
    for row, passage in enumerate(PASSAGES):
        assert line_of(corpus_line_parts(corpus, row)) == passage_body(passage.contents)
    # worked: '"Two\nlines"\ntext after' splits at its first newline, inside the title
    assert line_of(corpus_line_parts(corpus, 2)) == '(Title: "Two) lines"\ntext after\n'
    assert line_of(corpus_line_parts(corpus, 0)) == '(Title: "Paris") Paris is in France.\n'


def test_another_retrievers_hit_is_read_through_its_passage():
    class Hit:  # what a server client returns: a passage, no corpus row reader
        index = 7
        passage = Passage("7", "Oslo", "Oslo is in Norway.")

    rows, read = hit_rows([Hit()])
    assert rows == [7]
    assert line_of(read(7)) == '(Title: "Oslo") Oslo is in Norway.\n'

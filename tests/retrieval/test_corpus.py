"""The FlashRAG jsonl reader/writer and the memory-mapped corpus store."""

from __future__ import annotations

import gzip
import json
import pickle

import numpy as np
import pytest

from retrieval_index import Corpus, Passage, read_corpus_jsonl, write_corpus_jsonl

# Lines as FlashRAG's wiki-18.jsonl writes them: id a string, title quoted on the first line of contents.
PUBLISHED_LINES = [
    (
        r'{"id": "0", "contents": "\"Aaron\"\nAaron Aaron ( or ; \"Ahärôn\") is a prophet, high priest, and '
        r'the brother of Moses."}'
    ),
    r'{"id": "1", "contents": "\"The \"Best\" Song\"\nA title that holds quotes of its own."}',
    (
        r'{"id": "2", "contents": "\"Zürich\"\nZürich is the largest city in Switzerland \u2014 '
        r'\u6771\u4eac is not."}'
    ),
    '{"id": "3", "contents": "\\"Empty Text\\"\\n"}',
    r'{"id": "4", "contents": "\"Multi line\"\nfirst line\nsecond line"}',
]


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_reader_splits_the_published_format(tmp_path):
    passages = list(read_corpus_jsonl(write_lines(tmp_path / "wiki.jsonl", PUBLISHED_LINES)))
    assert [p.id for p in passages] == ["0", "1", "2", "3", "4"]
    assert passages[0].title == "Aaron"
    assert passages[0].text.startswith('Aaron Aaron ( or ; "Ahärôn")')
    assert passages[1].title == 'The "Best" Song'
    assert passages[2].title == "Zürich"
    assert passages[2].text.endswith("— 東京 is not.")
    assert passages[3] == Passage(id="3", title="Empty Text", text="")
    assert passages[4].text == "first line\nsecond line"


def test_contents_round_trip_the_published_strings(tmp_path):
    import json

    originals = [json.loads(line)["contents"] for line in PUBLISHED_LINES]
    passages = list(read_corpus_jsonl(write_lines(tmp_path / "wiki.jsonl", PUBLISHED_LINES)))
    assert [p.contents for p in passages] == originals


def test_writer_output_reads_back_identically_plain_and_gzipped(tmp_path):
    passages = list(read_corpus_jsonl(write_lines(tmp_path / "wiki.jsonl", PUBLISHED_LINES)))
    for name in ("copy.jsonl", "copy.jsonl.gz"):
        assert write_corpus_jsonl(passages, tmp_path / name) == len(passages)
        assert list(read_corpus_jsonl(tmp_path / name)) == passages
    with gzip.open(tmp_path / "copy.jsonl.gz", "rt", encoding="utf-8") as lines:
        assert set(json_keys(lines)) == {("id", "contents")}


def json_keys(lines):
    import json

    return (tuple(json.loads(line)) for line in lines)


def test_reader_accepts_title_text_rows_and_skips_blank_lines(tmp_path):
    path = write_lines(tmp_path / "c.jsonl", ['{"id": 7, "title": "T", "text": "body"}', "", "  "])
    [passage] = read_corpus_jsonl(path)
    assert (passage.id, passage.title, passage.text) == ("7", "T", "body")
    assert passage.row() == {"id": 7, "contents": '"T"\nbody'}  # the file's integer id comes back as it was


@pytest.mark.parametrize("bad_line", ['{"id": "0"}', "not json", '["id", "contents"]'])
def test_reader_names_the_bad_line(tmp_path, bad_line):
    path = write_lines(tmp_path / "c.jsonl", [PUBLISHED_LINES[0], bad_line])
    with pytest.raises(ValueError, match=r"c\.jsonl:2"):
        list(read_corpus_jsonl(path))


def test_store_serves_every_passage_and_pickles_as_its_path(tmp_path):
    source = write_lines(tmp_path / "wiki.jsonl", PUBLISHED_LINES)
    corpus = Corpus.build(source, tmp_path / "store")
    expected = list(read_corpus_jsonl(source))
    assert len(corpus) == len(expected)
    assert [corpus[i] for i in range(len(corpus))] == expected
    assert list(corpus) == expected
    assert corpus[-1] == expected[-1]
    with pytest.raises(IndexError):
        corpus[len(expected)]
    reopened = Corpus.open(tmp_path / "store")
    assert list(reopened) == expected
    blob = pickle.dumps(corpus)
    assert len(blob) < 500
    assert list(pickle.loads(blob)) == expected


def test_empty_corpus_and_unfinished_store(tmp_path):
    empty = Corpus.from_passages([], tmp_path / "empty")
    assert len(empty) == 0 and list(empty) == []
    (tmp_path / "empty" / "corpus.json").unlink()
    with pytest.raises(FileNotFoundError, match="cut short"):
        Corpus.open(tmp_path / "empty")


def test_a_store_keeps_every_field_of_a_row_and_writes_it_back(tmp_path):
    rows = [
        {"id": "0", "contents": '"A"\nfirst', "url": "u", "n": 3, "nested": {"k": [1, None]}},
        {"id": 12, "contents": "No quotes\nsecond"},
        {"id": "2", "contents": '"C"\nthird'},
    ]
    write_lines(tmp_path / "in.jsonl", [json.dumps(row) for row in rows])
    store = Corpus.build(tmp_path / "in.jsonl", tmp_path / "store")
    assert [passage.row() for passage in store] == rows
    assert store[2].extra == ""  # a plain row costs no extra bytes
    write_corpus_jsonl(store, tmp_path / "out.jsonl")
    assert [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()] == rows


def test_a_store_written_by_the_previous_version_still_opens(tmp_path):
    """Version 1 stores held three fields a passage (id, title, text) and no row extras."""
    store = tmp_path / "v1"
    store.mkdir()
    fields = [b"0", b"Paris", b"Paris is in France.", b"1", b"Rome", b"Rome is in Italy."]
    (store / "texts.bin").write_bytes(b"".join(fields))
    np.save(store / "offsets.npy", np.cumsum([0] + [len(field) for field in fields]).astype(np.int64))
    meta = {"format": "retrieval_index.corpus", "version": 1, "passages": 2}
    (store / "corpus.json").write_text(json.dumps(meta))
    assert list(Corpus.open(store)) == [
        Passage("0", "Paris", "Paris is in France."),
        Passage("1", "Rome", "Rome is in Italy."),
    ]

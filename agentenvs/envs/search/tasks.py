"""Task sources of the Search QA family: the built-in encyclopedia (cached on disk) or official files.

Built in: :func:`builtin_dir` generates the encyclopedia, its questions and a
BM25 index once per (generator version, size, seed) under
``$AGENTENVS_CACHE/search`` (default ``~/.cache/agentenvs/search``); the
build is written to a temporary folder and renamed into place, so concurrent
processes never read half a build.

Official: FlashRAG's question files in their published layout,
``{data_dir}/{dataset}/{train,dev,test}.jsonl`` with rows ``{"id", "question",
"golden_answers", "metadata"}`` (a row without an ``id`` takes ``#<row>``,
its position in the file), searched through a retrieval_index index folder
(BM25 or dense, over wiki-18) or a running retrieval server's URL.
Where FlashRAG has no test file (hotpotqa, 2wikimultihopqa, musique), the dev
file is the test split, as Search-R1 evaluates, and valid is empty.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from agentenvs.core.keys import stable_digest
from agentenvs.core.tasks import IdListTaskSource, UnknownTaskError
from agentenvs.envs.search.questions import (
    FLASHRAG_NAMES,
    STYLES,
    TEST_SIZES,
    TRAIN_SIZE,
    VALID_SIZE,
    Question,
    flashrag_id,
    make_questions,
    split_sizes,
    write_questions,
)

DEFAULT_PASSAGES = 100_000
SPLIT_FILES = {"train": "train", "valid": "dev", "test": "test"}


def cache_root() -> Path:
    base = os.environ.get("AGENTENVS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "agentenvs")
    return Path(base) / "search"


def builtin_version() -> str:
    """Cache key of the built world: the generator's source files and the index and store formats, so
    any change rebuilds."""
    from retrieval_index.analysis import ANALYZER_VERSION
    from retrieval_index.bm25 import INDEX_VERSION
    from retrieval_index.corpus import VERSION as STORE_VERSION

    here = Path(__file__).parent
    sources = [(here / name).read_bytes() for name in ("world.py", "questions.py")]
    return stable_digest([sources, ANALYZER_VERSION, INDEX_VERSION, STORE_VERSION])[:12]


def builtin_dir(num_passages: int = DEFAULT_PASSAGES, seed: int = 0) -> Path:
    """The folder holding the built-in corpus store, its BM25 index and the question files (built once)."""
    final = cache_root() / f"builtin-{builtin_version()}-{num_passages}-{seed}"
    if (final / "READY").exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        _build(staging, num_passages, seed)
        (staging / "READY").write_text("ok\n")
        try:
            os.rename(staging, final)
        except OSError:
            if not (final / "READY").exists():  # not a concurrent builder that won the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def _build(out: Path, num_passages: int, seed: int) -> None:
    from agentenvs.envs.search.world import Encyclopedia
    from retrieval_index import BM25Retriever, Corpus, Passage

    world = Encyclopedia(num_passages, seed)
    corpus = Corpus.from_passages(
        (Passage(str(row), p.title, p.text) for row, p in enumerate(world.passages)), out / "corpus"
    )
    BM25Retriever.build(corpus, out / "bm25")
    (out / "questions").mkdir()
    for style in STYLES:
        # a small world yields fewer questions: about eight per entity at most
        wanted = min(TEST_SIZES[style] + VALID_SIZE + TRAIN_SIZE, 8 * len(world.entities))
        questions = list(make_questions(world, style, wanted, seed))
        sizes = split_sizes(style, len(questions))
        start = 0
        for split in ("test", "valid", "train"):
            write_questions(
                questions[start : start + sizes[split]], out / "questions" / f"{style}.{split}.jsonl"
            )
            start += sizes[split]


@functools.lru_cache(maxsize=8)
def open_retriever(spec: str):
    """A retriever from a retrieval_index index folder (BM25 or dense), or a retrieval server's URL
    (its root, or Search-R1's ``http://HOST:8000/retrieve``; any other path raises ``ValueError``).

    Cached per process, so every env of a process shares one memory-mapped index.
    """
    if spec.startswith(("http://", "https://")):
        from retrieval_index.client import RemoteRetriever

        return RemoteRetriever(spec)
    from retrieval_index.loading import open_retriever as open_index

    return open_index(spec)[0]


@functools.lru_cache(maxsize=4)
def builtin_retriever(num_passages: int, seed: int):
    from retrieval_index import BM25Retriever, Corpus

    folder = builtin_dir(num_passages, seed)
    return BM25Retriever.load(folder / "bm25", Corpus.open(folder / "corpus"))


@dataclass(frozen=True)
class QuestionRows:
    """One split's FlashRAG jsonl rows, kept as text and parsed when a question is played.

    Parsing every row up front costs seconds for the 200k questions of the
    Search-R1 mix; reading the ids alone does not.
    """

    ids: tuple[str, ...]
    lines: tuple[str, ...]
    id_prefix: str = ""

    @classmethod
    def read(cls, path: Path, id_prefix: str = "") -> QuestionRows:
        if not path.exists():
            return cls((), (), id_prefix)
        with open(path, encoding="utf-8") as handle:
            numbered = [(number, line) for number, line in enumerate(handle, start=1) if line.strip()]
        ids = []
        for index, (number, line) in enumerate(numbered):
            try:
                ids.append(id_prefix + row_id(line, index))
            except ValueError as exc:  # json's decode error, or a row that is not an object
                raise ValueError(f"{path}:{number}: not a FlashRAG question row ({exc})") from None
        return cls(tuple(ids), tuple(line for _, line in numbered), id_prefix)

    def question(self, index: int) -> Question:
        question = Question.from_flashrag(json.loads(self.lines[index]), positional_id(index))
        return replace(question, id=self.ids[index])


def positional_id(index: int) -> str:
    """The id of the ``index``-th row (0-based, blank lines not counted) of a file whose row has none."""
    return f"#{index}"


def row_id(line: str, index: int) -> str:
    """The ``id`` of the ``index``-th jsonl row (:func:`positional_id` when it has none); rows written by
    ``json.dumps`` with ``id`` first skip the parse."""
    head = '{"id": "'
    if line.startswith(head):
        end = line.find('"', len(head))
        if end > len(head) and "\\" not in line[len(head) : end]:
            return line[len(head) : end]
    row = json.loads(line)
    if not isinstance(row, dict):
        raise ValueError(f"a JSON {type(row).__name__}, not an object")
    return flashrag_id(row.get("id"), positional_id(index))


class QuestionSource(IdListTaskSource[Question]):
    """Questions per split, addressed by their ids (built-in ``nq-000012`` or official ``nq:<row id>``)."""

    def __init__(self, splits: Mapping[str, Sequence[QuestionRows]]) -> None:
        super().__init__({split: [i for rows in parts for i in rows.ids] for split, parts in splits.items()})
        self._where = {
            task_id: (rows, index)
            for parts in splits.values()
            for rows in parts
            for index, task_id in enumerate(rows.ids)
        }

    def load(self, task_id: str) -> Question:
        try:
            rows, index = self._where[task_id]
        except KeyError:
            raise UnknownTaskError(f"unknown task id {task_id!r}") from None
        return rows.question(index)


def style_splits(
    rows_of: Callable[[str, str], QuestionRows], styles: Sequence[str], train_styles: Sequence[str]
):
    """Splits over several styles; a single style, or Search-R1's mix: train and valid from
    ``train_styles``, test from every style."""
    return {
        "train": [rows_of(style, "train") for style in train_styles],
        "valid": [rows_of(style, "valid") for style in train_styles],
        "test": [rows_of(style, "test") for style in styles],
    }


@functools.lru_cache(maxsize=64)
def builtin_questions(style: str, split: str, num_passages: int, seed: int) -> QuestionRows:
    return QuestionRows.read(builtin_dir(num_passages, seed) / "questions" / f"{style}.{split}.jsonl")


@functools.lru_cache(maxsize=64)
def official_questions(data_dir: str, style: str, split: str) -> QuestionRows:
    """FlashRAG's file of ``split`` for ``style``; ids become ``{style}:{id}`` so sets never collide in a
    mix."""
    folder = Path(data_dir) / FLASHRAG_NAMES[style]
    if not folder.is_dir():
        raise FileNotFoundError(f"no FlashRAG folder {folder} (expected test.jsonl or dev.jsonl in it)")
    if not (folder / "test.jsonl").exists():  # evaluated on dev, as Search-R1 does; no valid split
        names = {"train": "train", "valid": None, "test": "dev"}
    else:
        names = SPLIT_FILES
    name = names[split]
    path = folder / f"{name}.jsonl" if name else folder / "no-such-split"
    return QuestionRows.read(path, f"{style}:")

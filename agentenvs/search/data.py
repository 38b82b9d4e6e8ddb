"""Task sources of the Search QA family: the built-in encyclopedia (cached on disk) or official files.

Built in: :func:`builtin_dir` generates the encyclopedia, its questions and a
BM25 index once per (generator version, size, seed) under
``$AGENTENVS_CACHE/search`` (default ``~/.cache/agentenvs/search``); the
build is written to a temporary folder and renamed into place, so concurrent
processes never read half a build.

Official: FlashRAG's question files in their published layout,
``{data_dir}/{dataset}/{train,dev,test}.jsonl`` with rows ``{"id", "question",
"golden_answers", "metadata"}``, searched through a retrieval_index index
folder (BM25 or dense, over wiki-18) or a running retrieval server's URL.
Where FlashRAG has no test file (hotpotqa, 2wikimultihopqa, musique), the dev
file is the test split, as Search-R1 evaluates, and valid is empty.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from agentenvs.core.keys import stable_digest
from agentenvs.core.tasks import IdListTaskSource, UnknownTaskError
from agentenvs.search.questions import (
    FLASHRAG_NAMES,
    STYLES,
    TEST_SIZES,
    TRAIN_SIZE,
    VALID_SIZE,
    Question,
    make_questions,
    read_questions,
    split_sizes,
    write_questions,
)

DEFAULT_PASSAGES = 100_000
SPLIT_FILES = {"train": "train", "valid": "dev", "test": "test"}


def cache_root() -> Path:
    base = os.environ.get("AGENTENVS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "agentenvs")
    return Path(base) / "search"


def builtin_version() -> str:
    """Cache key of the generator: its source files, so an edited generator rebuilds."""
    here = Path(__file__).parent
    return stable_digest([(here / name).read_bytes() for name in ("world.py", "questions.py")])[:12]


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
    from retrieval_index import BM25Retriever, Corpus, Passage

    from agentenvs.search.world import Encyclopedia

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
            write_questions(questions[start : start + sizes[split]], out / "questions" / f"{style}.{split}.jsonl")
            start += sizes[split]


@functools.lru_cache(maxsize=8)
def open_retriever(spec: str):
    """A retriever from a retrieval_index index folder (BM25 or dense), or a retrieval server's URL.

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


class QuestionSource(IdListTaskSource[Question]):
    """Questions per split, addressed by their ids (built-in ``nq-000012`` or official ``nq:<row id>``)."""

    def __init__(self, splits: Mapping[str, Sequence[Question]]) -> None:
        super().__init__({split: [q.id for q in questions] for split, questions in splits.items()})
        self._questions = {q.id: q for questions in splits.values() for q in questions}

    def load(self, task_id: str) -> Question:
        try:
            return self._questions[task_id]
        except KeyError:
            raise UnknownTaskError(f"unknown task id {task_id!r}") from None


def mix_splits(per_style: Mapping[str, Mapping[str, Sequence[Question]]], train_styles: Sequence[str]):
    """Search-R1's mix: train and valid from ``train_styles``, test from every style."""
    return {
        "train": [q for style in train_styles for q in per_style[style]["train"]],
        "valid": [q for style in train_styles for q in per_style[style]["valid"]],
        "test": [q for questions in per_style.values() for q in questions["test"]],
    }


@functools.lru_cache(maxsize=64)
def builtin_questions(style: str, num_passages: int, seed: int) -> dict[str, tuple[Question, ...]]:
    folder = builtin_dir(num_passages, seed) / "questions"
    return {split: tuple(read_questions(folder / f"{style}.{split}.jsonl")) for split in SPLIT_FILES}


@functools.lru_cache(maxsize=64)
def official_questions(data_dir: str, style: str) -> dict[str, tuple[Question, ...]]:
    """FlashRAG's files for ``style``; ids become ``{style}:{id}`` so sets never collide in a mix."""
    folder = Path(data_dir) / FLASHRAG_NAMES[style]
    if not folder.is_dir():
        raise FileNotFoundError(f"no FlashRAG folder {folder} (expected {FLASHRAG_NAMES[style]}/test.jsonl or dev.jsonl)")
    files = {split: folder / f"{name}.jsonl" for split, name in SPLIT_FILES.items()}
    if not files["test"].exists():
        files["test"], files["valid"] = files["valid"], folder / "no-valid-split.jsonl"
    splits: dict[str, tuple[Question, ...]] = {}
    for split, path in files.items():
        rows = read_questions(path) if path.exists() else []
        splits[split] = tuple(
            Question(f"{style}:{q.id}", q.question, q.golden_answers, q.hops, q.metadata) for q in rows
        )
    return splits

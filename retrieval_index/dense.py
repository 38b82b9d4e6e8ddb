"""Dense retrieval: E5 embeddings in a FAISS inner-product index (Search-R1's ``e5_Flat.index``).

Building encodes the corpus in shards (``embeddings/shard-NNNNNN.npy``, each
written whole or not at all), so a killed build resumes where it stopped;
the shards are then merged into one FAISS index made by
``faiss.index_factory(dim, factory, METRIC_INNER_PRODUCT)``: ``"Flat"``
(exact, Search-R1's default) or an approximate one (``"HNSW64"``,
``"IVF4096,Flat"``, ``"IVF4096,PQ64"``, …), whose recall against Flat the
build measures and records.

An index directory holds ``e5_<factory>.index`` (a plain FAISS file that
Search-R1's own server reads too; or a path to an existing one, e.g. the
published wiki-18 ``e5_Flat.index``), the embeddings and ``retriever.json``
(kind, encoder settings, search parameters, corpus store; every path in it
relative to the index directory, see :mod:`retrieval_index.index_dir`).
Flat indexes load memory-mapped, so processes serving the same index share
its pages.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_index.corpus import Corpus
from retrieval_index.encoder import Encoder
from retrieval_index.index_dir import (
    begin_build,
    missing,
    open_corpus_of,
    read_meta,
    recorded_path,
    relative_to_index,
    write_meta,
)
from retrieval_index.ranking import top_k, validate_topk
from retrieval_index.types import RetrievedPassage

INDEX_VERSION = 1
RECALL_K = 10
DEFAULT_SEARCH_PARAMS = {"IVF": "nprobe=32", "HNSW": "efSearch=128"}
_PLAN = "plan.json"

Progress = Callable[[int], None]


def faiss_file_name(factory: str) -> str:
    return f"e5_{factory.replace(',', '_')}.index"


def shard_paths(directory: Path, passages: int, shard_size: int) -> list[Path]:
    count = -(-passages // shard_size) if passages else 0
    return [directory / f"shard-{i:06d}.npy" for i in range(count)]


def encode_corpus(
    corpus: Corpus,
    encoder: Encoder,
    shard_dir: str | os.PathLike,
    *,
    shard_size: int = 100_000,
    show_progress: bool = False,
) -> list[Path]:
    """Encode every passage into shard files, skipping the shards a previous run finished.

    A shard is written to a temporary name and renamed when complete, so a
    kill leaves only whole shards behind. The plan (passages, shard size,
    encoder settings) is recorded; resuming with another plan is refused.
    """
    directory = Path(shard_dir)
    directory.mkdir(parents=True, exist_ok=True)
    plan = {"passages": len(corpus), "shard_size": shard_size, "encoder": encoder.settings()}
    plan_path = directory / _PLAN
    if plan_path.exists():
        previous = json.loads(plan_path.read_text())
        if previous != plan:
            raise ValueError(
                f"{directory} holds shards of another build ({previous}); remove it to start over"
            )
    else:
        plan_path.write_text(json.dumps(plan, indent=1) + "\n")
    paths = shard_paths(directory, len(corpus), shard_size)
    done = sum(path.exists() for path in paths)
    bar = None
    if show_progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(corpus), desc="encode passages", unit="passage")
        bar.update(min(done * shard_size, len(corpus)))
        if done:
            bar.write(f"resuming: {done} of {len(paths)} shards already encoded", file=sys.stderr)
    for number, path in enumerate(paths):
        if path.exists():
            continue
        start, end = number * shard_size, min((number + 1) * shard_size, len(corpus))
        texts = [corpus[row].contents for row in range(start, end)]
        vectors = encoder.encode(texts, is_query=False)
        partial = path.with_suffix(".partial")
        with open(partial, "wb") as handle:
            np.save(handle, vectors)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
        if bar is not None:
            bar.update(end - start)
    if bar is not None:
        bar.close()
    return paths


def load_shards(paths: Sequence[Path]) -> list[np.ndarray]:
    return [np.load(path, mmap_mode="r") for path in paths]


def exact_top_k(shards: Sequence[np.ndarray], queries: np.ndarray, k: int) -> np.ndarray:
    """Rows of the exact inner-product top-``k`` of each query, streaming over the shards."""
    import faiss

    best_scores = np.empty((len(queries), 0), dtype=np.float32)
    best_rows = np.empty((len(queries), 0), dtype=np.int64)
    offset = 0
    for shard in shards:
        scores, rows = faiss.knn(
            queries, np.ascontiguousarray(shard), min(k, len(shard)), metric=faiss.METRIC_INNER_PRODUCT
        )
        best_scores = np.concatenate([best_scores, scores], axis=1)
        best_rows = np.concatenate([best_rows, rows + offset], axis=1)
        keep = np.argsort(-best_scores, axis=1, kind="stable")[:, :k]
        best_scores = np.take_along_axis(best_scores, keep, axis=1)
        best_rows = np.take_along_axis(best_rows, keep, axis=1)
        offset += len(shard)
    return best_rows


def sample_rows(shards: Sequence[np.ndarray], size: int) -> np.ndarray:
    """A seeded sample of ``size`` vectors across the shards (without loading the others)."""
    total = sum(len(shard) for shard in shards)
    rows = np.sort(np.random.default_rng(0).choice(total, size=min(size, total), replace=False))
    parts, offset = [], 0
    for shard in shards:
        mine = rows[(rows >= offset) & (rows < offset + len(shard))] - offset
        parts.append(np.asarray(shard[mine], dtype=np.float32))
        offset += len(shard)
    return np.ascontiguousarray(np.concatenate(parts))


def measure_recall(
    index: Any, shards: Sequence[np.ndarray], *, queries: int = 1000, k: int = RECALL_K
) -> float:
    """k-recall@k of ``index`` against exact search, with a seeded sample of passage vectors as queries."""
    k = min(k, sum(len(shard) for shard in shards))
    vectors = sample_rows(shards, queries)
    exact = exact_top_k(shards, vectors, k)
    _, approx = index.search(vectors, k)
    found = sum(len(set(a.tolist()) & set(e.tolist())) for a, e in zip(approx, exact, strict=False))
    return found / (len(vectors) * k)


def merge_shards(shards: Sequence[np.ndarray], dim: int, factory: str, *, train_size: int = 262_144) -> Any:
    """One FAISS inner-product index over all shards, trained on a seeded sample where it needs training."""
    import faiss

    index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    if not index.is_trained:
        index.train(sample_rows(shards, train_size))
    for shard in shards:
        index.add(np.ascontiguousarray(shard, dtype=np.float32))
    return index


def default_search_params(factory: str) -> str:
    return next(
        (params for prefix, params in DEFAULT_SEARCH_PARAMS.items() if factory.startswith(prefix)), ""
    )


def read_faiss(path: str | os.PathLike) -> Any:
    """Read a FAISS index; flat ones memory-mapped so processes share their pages."""
    import faiss

    return faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY)


class DenseRetriever:
    """E5-style dense retrieval over a :class:`Corpus` with a FAISS inner-product index.

    Pickles as the paths of its index and corpus; the encoder and the FAISS
    index load again in the receiving process.
    """

    def __init__(
        self, index: Any, corpus: Corpus, encoder: Encoder, directory: Path, meta: dict[str, Any]
    ) -> None:
        self.index = index
        self.corpus = corpus
        self.encoder = encoder
        self.directory = directory
        self.meta = meta
        if index.ntotal != len(corpus):
            raise ValueError(
                f"the index holds {index.ntotal} vectors but the corpus {corpus} holds {len(corpus)}"
            )
        if meta.get("search_params"):
            import faiss

            faiss.ParameterSpace().set_index_parameters(index, meta["search_params"])

    @classmethod
    def build(
        cls,
        corpus: Corpus,
        encoder: Encoder | str | os.PathLike,
        out_dir: str | os.PathLike,
        *,
        factory: str = "Flat",
        search_params: str | None = None,
        shard_size: int = 100_000,
        show_progress: bool = False,
        log: Callable[[str], None] = print,
    ) -> DenseRetriever:
        """Encode ``corpus`` (resuming a killed run) and write a FAISS index to ``out_dir``."""
        import faiss

        encoder = encoder if isinstance(encoder, Encoder) else Encoder(encoder)
        directory = begin_build(out_dir)
        paths = encode_corpus(
            corpus, encoder, directory / "embeddings", shard_size=shard_size, show_progress=show_progress
        )
        shards = load_shards(paths)
        dim = shards[0].shape[1] if shards else encoder.dim
        index = merge_shards(shards, dim, factory)
        search_params = default_search_params(factory) if search_params is None else search_params
        if search_params:
            faiss.ParameterSpace().set_index_parameters(index, search_params)
        recall = 1.0 if factory == "Flat" else measure_recall(index, shards)
        log(
            f"{factory} ({search_params or 'exact'}): {RECALL_K}-recall@{RECALL_K} against Flat = "
            f"{recall:.4f}"
        )
        name = faiss_file_name(factory)
        faiss.write_index(index, str(directory / (name + ".partial")))
        os.replace(directory / (name + ".partial"), directory / name)
        return cls._record(directory, corpus, encoder, name, factory, search_params, recall)

    @classmethod
    def from_faiss(
        cls,
        faiss_index: str | os.PathLike,
        corpus: Corpus,
        encoder: Encoder | str | os.PathLike,
        out_dir: str | os.PathLike,
        *,
        search_params: str = "",
    ) -> DenseRetriever:
        """Serve an existing FAISS file (e.g. Search-R1's published ``e5_Flat.index``) as it is, uncopied."""
        encoder = encoder if isinstance(encoder, Encoder) else Encoder(encoder)
        directory = Path(out_dir)
        directory.mkdir(parents=True, exist_ok=True)
        return cls._record(
            directory,
            corpus,
            encoder,
            relative_to_index(directory, faiss_index),
            "external",
            search_params,
            None,
        )

    @classmethod
    def _record(
        cls,
        directory: Path,
        corpus: Corpus,
        encoder: Encoder,
        faiss_file: str,
        factory: str,
        search_params: str,
        recall: float | None,
    ) -> DenseRetriever:
        meta = {
            "kind": "dense",
            "version": INDEX_VERSION,
            "faiss_index": faiss_file,
            "factory": factory,
            "search_params": search_params,
            f"recall@{RECALL_K}_vs_flat": recall,
            "encoder": {**encoder.settings(), "model_dir": relative_to_index(directory, encoder.model_dir)},
            "passages": len(corpus),
            "corpus": relative_to_index(directory, corpus.directory),
        }
        write_meta(directory, meta)
        return cls.load(directory, corpus, encoder=encoder)

    @classmethod
    def load(
        cls, index_dir: str | os.PathLike, corpus: Corpus | None = None, *, encoder: Encoder | None = None
    ) -> DenseRetriever:
        """Open an index directory; the corpus and encoder default to those it was built with."""
        directory = Path(index_dir).resolve()
        meta = read_meta(directory, "dense", version=INDEX_VERSION)
        corpus = open_corpus_of(directory, meta, corpus, int(meta["passages"]))
        if encoder is None:
            settings = dict(meta["encoder"])
            recorded = settings.pop("model_dir")
            if not recorded_path(directory, recorded).is_dir():
                raise missing(directory, "encoder", recorded, "encoder directory")
            encoder = Encoder(recorded_path(directory, recorded), **settings)
        faiss_file = recorded_path(directory, meta["faiss_index"])
        if not faiss_file.is_file():
            raise missing(directory, "faiss_index", meta["faiss_index"], "FAISS index file")
        return cls(read_faiss(faiss_file), corpus, encoder, directory, meta)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_load_with_encoder, (str(self.directory), self.corpus, self.encoder))

    def search_vectors(self, vectors: np.ndarray, topk: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Rows and scores of the ``topk`` best passages for each query vector, best first."""
        scores, rows = self.index.search(
            np.ascontiguousarray(vectors, dtype=np.float32), min(topk, len(self.corpus))
        )
        results = []
        for row_list, score_list in zip(rows, scores, strict=False):
            found = row_list >= 0
            results.append(top_k(row_list[found].astype(np.int64), score_list[found], topk))
        return results

    def retrieve(self, queries: Sequence[str], topk: int) -> list[list[RetrievedPassage]]:
        topk = validate_topk(topk)
        if not queries:
            return []
        vectors = self.encoder.encode(list(queries), is_query=True)
        return [
            [
                RetrievedPassage(passage=self.corpus[row], score=score, index=row)
                for row, score in zip(rows.tolist(), scores.tolist(), strict=False)
            ]
            for rows, scores in self.search_vectors(vectors, topk)
        ]

    def __repr__(self) -> str:
        return f"DenseRetriever({str(self.directory)!r}, {self.meta['factory']}, {len(self.corpus)} passages)"


def _load_with_encoder(index_dir: str, corpus: Corpus, encoder: Encoder) -> DenseRetriever:
    return DenseRetriever.load(index_dir, corpus, encoder=encoder)

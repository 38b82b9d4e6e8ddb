"""An index directory: its ``retriever.json``, read, checked and written, and the paths it records.

Every backend that saves an index directory (:mod:`retrieval_index.bm25`,
:mod:`retrieval_index.dense`) keeps its own files there beside
``retriever.json``, a JSON object with at least ``kind`` (one of
:data:`KINDS`), ``version``, ``passages`` and ``corpus``; this module is the
one place that reads it (:func:`read_meta`, :func:`index_kind`), writes it
(:func:`begin_build`, :func:`write_meta`), opens the corpus it names
(:func:`open_corpus_of`) and moves what it points to (:func:`relink`).

Every path ``retriever.json`` records (the corpus store, a dense index's
FAISS file and encoder directory) is written relative to the index folder:
an index built once and moved or copied to another machine, together with
what it points to, opens where it lands. A path is read relative to the
index folder; an absolute one (what earlier versions wrote) is used as it is.
When a recorded path no longer leads anywhere, the error names the one
command that repairs it::

    python -m retrieval_index relink INDEX_DIR --corpus STORE [--faiss-index FILE] [--encoder DIR]

which records the new places (relative again) after checking them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from retrieval_index.corpus import Corpus, is_store

META = "retriever.json"
# the kinds of index a directory can hold, each the ``kind`` its retriever.json records
KINDS = ("bm25", "dense")
# what every retriever.json holds, whatever its kind
REQUIRED = ("kind", "version", "passages", "corpus")
# retriever.json's path entries: where each sits in the metadata, and the relink option that sets it
PATH_ENTRIES = {"corpus": "--corpus", "faiss_index": "--faiss-index", "encoder": "--encoder"}


def read_meta(
    index_dir: str | os.PathLike, kind: str | None = None, *, version: int | None = None
) -> dict[str, Any]:
    """The ``retriever.json`` of an index directory: a JSON object holding :data:`REQUIRED`, whose ``kind``
    is one of :data:`KINDS` and whose ``passages`` is a count, checked to be ``kind`` (and ``version``)
    when given."""
    path = Path(index_dir) / META
    if not path.is_file():
        raise FileNotFoundError(f"{index_dir} is not a retrieval index (no {META}; was the build cut short?)")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not JSON ({exc}); rebuild the index") from exc
    if not isinstance(meta, dict):
        raise ValueError(f"{path} holds a {type(meta).__name__}, not a JSON object; rebuild the index")
    found = meta.get("kind")
    if found not in KINDS:
        raise ValueError(f"{path}: unknown index kind {found!r}")
    absent = [name for name in REQUIRED if name not in meta]
    if absent:
        raise ValueError(f"{path} lacks {', '.join(absent)}; rebuild the index")
    passages = meta["passages"]
    if isinstance(passages, bool) or not isinstance(passages, int) or passages < 0:
        raise ValueError(f"{path}: passages must be a count, got {passages!r}; rebuild the index")
    if kind is not None and found != kind:
        raise ValueError(f"{index_dir} holds a {found!r} index, not {kind!r}")
    if version is not None and meta.get("version") != version:
        raise ValueError(f"{index_dir} was built by another version; rebuild it")
    return meta


def index_kind(index_dir: str | os.PathLike) -> str:
    """The kind (one of :data:`KINDS`) of the index saved in ``index_dir``, without opening it."""
    return read_meta(index_dir)["kind"]


def begin_build(out_dir: str | os.PathLike) -> Path:
    """The index directory, created, with any ``retriever.json`` removed: a build cut short leaves none."""
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / META).unlink(missing_ok=True)
    return directory


def write_meta(index_dir: str | os.PathLike, meta: dict[str, Any]) -> None:
    """Write ``retriever.json`` whole or not at all (a partial file, then a rename)."""
    path = Path(index_dir) / META
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    os.replace(partial, path)


def open_corpus_of(
    index_dir: str | os.PathLike, meta: dict[str, Any], corpus: Corpus | None, num_docs: int
) -> Corpus:
    """``corpus``, or the store ``retriever.json`` records (relative to ``index_dir``, or absolute)."""
    if corpus is None:
        store = recorded_path(index_dir, meta["corpus"])
        if not is_store(store):
            raise missing(index_dir, "corpus", meta["corpus"], "corpus store")
        corpus = Corpus.open(store)
    if len(corpus) != num_docs:
        raise ValueError(f"the index covers {num_docs} passages but the corpus {corpus} holds {len(corpus)}")
    return corpus


def relative_to_index(index_dir: str | os.PathLike, target: str | os.PathLike) -> str:
    """``target`` as a POSIX path relative to the index folder (``..`` where it lies outside it)."""
    return Path(os.path.relpath(Path(target).resolve(), Path(index_dir).resolve())).as_posix()


def recorded_path(index_dir: str | os.PathLike, recorded: str) -> Path:
    """Where a path recorded in ``retriever.json`` leads: relative ones from the index folder."""
    if not isinstance(recorded, str) or not recorded:
        raise ValueError(f"{index_dir}: {META} records {recorded!r} where a path belongs; rebuild the index")
    path = Path(recorded)
    return path if path.is_absolute() else Path(index_dir).resolve() / path


def relink_hint(index_dir: str | os.PathLike, entry: str) -> str:
    """The command that records a new place for ``entry`` ("corpus", "faiss_index" or "encoder")."""
    what = {"corpus": "STORE", "faiss_index": "FILE", "encoder": "DIR"}[entry]
    return f"python -m retrieval_index relink {index_dir} {PATH_ENTRIES[entry]} {what}"


def missing(index_dir: str | os.PathLike, entry: str, recorded: str, what: str) -> FileNotFoundError:
    """The error for a recorded path that leads nowhere, naming the command that repairs it."""
    return FileNotFoundError(
        f"{index_dir}: the {what} recorded in {META} ({recorded!r}) is not at "
        f"{recorded_path(index_dir, recorded)}; if it moved, record its new place with: "
        f"{relink_hint(index_dir, entry)}"
    )


def relink(
    index_dir: str | os.PathLike,
    *,
    corpus: str | os.PathLike | None = None,
    faiss_index: str | os.PathLike | None = None,
    encoder: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Record new places for an index's corpus store, FAISS file or encoder; every path becomes relative.

    Each new place is checked before anything is written: the corpus store
    must open and hold the index's passage count, the FAISS file and the
    encoder directory must exist. Paths not given keep their place, rewritten
    relative when they still lead somewhere. Returns the new metadata.
    """
    directory = Path(index_dir)
    meta = read_meta(directory)
    is_dense = meta.get("kind") == "dense"
    for name, value in (("faiss_index", faiss_index), ("encoder", encoder)):
        if value is not None and not is_dense:
            raise ValueError(f"{index_dir} holds a {meta.get('kind')!r} index: it records no {name}")
    places = {
        "corpus": corpus if corpus is not None else recorded_path(directory, meta["corpus"]),
    }
    if is_dense:
        places["faiss_index"] = (
            faiss_index if faiss_index is not None else recorded_path(directory, meta["faiss_index"])
        )
        places["encoder"] = (
            encoder if encoder is not None else recorded_path(directory, meta["encoder"]["model_dir"])
        )
    store = Corpus.open(places["corpus"])  # raises, naming the folder, when it is not a store
    if len(store) != int(meta["passages"]):
        raise ValueError(f"the index covers {meta['passages']} passages but {store} holds {len(store)}")
    for name in ("faiss_index", "encoder"):
        if name in places and not Path(places[name]).exists():
            raise FileNotFoundError(f"no {name.replace('_', ' ')} at {places[name]}")
    meta["corpus"] = relative_to_index(directory, places["corpus"])
    if is_dense:
        meta["faiss_index"] = relative_to_index(directory, places["faiss_index"])
        meta["encoder"] = {**meta["encoder"], "model_dir": relative_to_index(directory, places["encoder"])}
    write_meta(directory, meta)
    return meta

"""Paths inside an index folder's ``retriever.json``: written relative to the folder, so it can move.

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

META = "retriever.json"
# retriever.json's path entries: where each sits in the metadata, and the relink option that sets it
PATH_ENTRIES = {"corpus": "--corpus", "faiss_index": "--faiss-index", "encoder": "--encoder"}


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
    from retrieval_index.corpus import Corpus

    directory = Path(index_dir)
    path = directory / META
    if not path.exists():
        raise FileNotFoundError(f"{index_dir} is not a retrieval index (no {META})")
    meta = json.loads(path.read_text())
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
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(partial, path)
    return meta

"""Corpora: the FlashRAG/Search-R1 jsonl format and an on-disk, memory-mapped document store.

The published corpora (wiki-18.jsonl: 21,015,324 passages) hold one JSON
object a line, ``{"id": "0", "contents": "\\"Title\\"\\nText"}``.
:func:`read_corpus_jsonl` streams such a file (plain or ``.gz``);
:meth:`Corpus.build` copies it once into a store directory::

    texts.bin      the UTF-8 bytes of every passage's id, title, text and the rest of its row
                   (compact JSON, empty when the row holds nothing else), back to back
    offsets.npy    int64 boundaries into texts.bin, four fields a passage, plus the end
    collapsed.bin  one byte a passage: 1 when its title and text are each whitespace-collapsed
                   (:func:`is_collapsed`; from version 3), so a reader that needs the collapsed form
                   of a passage's text knows without reading it through
    corpus.json    format name, version and passage count (written last: its presence marks a
                   complete build)

:meth:`Corpus.open` maps both files read-only, so opening costs no RAM beyond
the pages a lookup touches, and every process that opens the same store
shares those pages through the OS page cache.
"""

from __future__ import annotations

import gzip
import io
import json
import mmap
import os
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

import numpy as np

from retrieval_index.types import Passage

FORMAT = "retrieval_index.corpus"
VERSION = 3
# fields a passage by store version: id, title, text, and (from version 2) the rest of the row;
# version 3 adds the collapsed flags
FIELDS_OF_VERSION = {1: 3, 2: 4, 3: 4}
_META = "corpus.json"
_TEXTS = "texts.bin"
_OFFSETS = "offsets.npy"
_COLLAPSED = "collapsed.bin"

# ASCII whitespace besides the space: what str.split() splits on below code 128
OTHER_ASCII_WHITESPACE = bytes(code for code in range(128) if chr(code).isspace() and code != 32)


def is_collapsed(text: str) -> bool:
    """Whether ``text`` is already whitespace-collapsed: ``" ".join(text.split()) == text``.

    True when it holds no whitespace but the space (ASCII text: none of :data:`OTHER_ASCII_WHITESPACE`,
    read from its bytes, faster than :meth:`str.isprintable`; other text: printable, as every other
    whitespace character is non-printable), no two spaces in a row, and neither starts nor ends with
    one. False may still be collapsed (a non-printable character that is not whitespace); callers then
    take the general rule.
    """
    if text.isascii():
        encoded = text.encode()
        spaces_only = len(encoded.translate(None, OTHER_ASCII_WHITESPACE)) == len(encoded)
    else:
        spaces_only = text.isprintable()
    return spaces_only and "  " not in text and not text.startswith(" ") and not text.endswith(" ")


def _map_bytes(path: Path) -> mmap.mmap | bytes:
    """The file's bytes, mapped read-only (an empty file reads as ``b""``: an empty map is an error)."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return b""
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


def _open_text(path: str | os.PathLike, mode: str) -> IO[str]:
    if str(path).endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, mode.replace("t", "") + "b"), encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def read_corpus_jsonl(path: str | os.PathLike) -> Iterator[Passage]:
    """Stream the passages of a FlashRAG jsonl corpus (``{"id", "contents"}`` a line; ``.gz`` allowed).

    Rows that carry ``title`` and ``text`` instead of ``contents`` (another
    FlashRAG layout) are read too. Every other field of a row is kept with the
    passage (:attr:`Passage.extra`), so the row comes back whole. Blank lines are skipped; any other line
    that is not such an object raises ``ValueError`` naming its line number.
    """
    with _open_text(path, "rt") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise TypeError(f"a JSON {type(row).__name__}, not an object")
                yield Passage.from_row(row)
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a corpus row ({exc!r})") from exc


def write_corpus_jsonl(passages: Iterable[Passage], path: str | os.PathLike) -> int:
    """Write passages in the FlashRAG jsonl format; returns how many were written."""
    count = 0
    with _open_text(path, "wt") as out:
        for passage in passages:
            out.write(json.dumps(passage.row(), ensure_ascii=False) + "\n")
            count += 1
    return count


def is_store(directory: str | os.PathLike) -> bool:
    """Whether ``directory`` holds a complete corpus store."""
    return (Path(directory) / _META).is_file()


class Corpus:
    """A read-only, memory-mapped passage store; ``corpus[i]`` is the passage on row ``i``.

    Pickles as its directory, so handing a corpus to a worker process costs a path.
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory).resolve()
        meta_path = self.directory / _META
        if not meta_path.exists():
            raise FileNotFoundError(
                f"{self.directory} is not a corpus store (no {_META}; was the build cut short?)"
            )
        meta = json.loads(meta_path.read_text())
        if meta.get("format") != FORMAT or meta.get("version") not in FIELDS_OF_VERSION:
            raise ValueError(
                f"{meta_path}: format {meta.get('format')} v{meta.get('version')}, "
                f"expected {FORMAT} v{' or v'.join(map(str, FIELDS_OF_VERSION))}"
            )
        self._fields = FIELDS_OF_VERSION[meta["version"]]
        self._size = int(meta["passages"])
        # a plain ndarray over the mapped file: slicing numpy's memmap subclass costs about a microsecond
        # more a lookup (its __array_finalize__), as much as the lookup itself
        self._offsets = np.load(self.directory / _OFFSETS, mmap_mode="r").view(np.ndarray)
        if len(self._offsets) != self._fields * self._size + 1:
            raise ValueError(
                f"{self.directory}: offsets hold {len(self._offsets)} entries for {self._size} passages"
            )
        self._texts = _map_bytes(self.directory / _TEXTS)
        # collapsed[row] is 1 when the passage's title and text are each whitespace-collapsed
        # (is_collapsed), else 0; None for a store built before version 3: a reader checks the text itself
        self.collapsed: mmap.mmap | bytes | None = None
        if meta["version"] >= 3:
            self.collapsed = _map_bytes(self.directory / _COLLAPSED)
            if len(self.collapsed) != self._size:
                found = f"{_COLLAPSED} holds {len(self.collapsed)} flags"
                raise ValueError(f"{self.directory}: {found} for {self._size} passages")

    @classmethod
    def open(cls, out_dir: str | os.PathLike) -> Corpus:
        return cls(out_dir)

    @classmethod
    def build(cls, jsonl_path: str | os.PathLike, out_dir: str | os.PathLike) -> Corpus:
        """Copy a jsonl corpus into a store at ``out_dir`` (streaming: RAM holds the offsets and flags)."""
        return cls.from_passages(read_corpus_jsonl(jsonl_path), out_dir)

    @classmethod
    def from_passages(cls, passages: Iterable[Passage], out_dir: str | os.PathLike) -> Corpus:
        """Write passages into a store at ``out_dir`` and open it."""
        directory = Path(out_dir)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / _META).unlink(missing_ok=True)
        offsets = array("q", [0])
        collapsed = bytearray()
        position = 0
        count = 0
        with open(directory / _TEXTS, "wb") as texts:
            for passage in passages:
                for field in (passage.id, passage.title, passage.text, passage.extra):
                    # "surrogatepass": a lone surrogate a JSON escape put in a row survives the round trip
                    data = field.encode("utf-8", "surrogatepass")
                    texts.write(data)
                    position += len(data)
                    offsets.append(position)
                collapsed.append(is_collapsed(passage.title) and is_collapsed(passage.text))
                count += 1
        (directory / _COLLAPSED).write_bytes(collapsed)
        np.save(directory / _OFFSETS, np.frombuffer(offsets, dtype=np.int64))
        meta = {"format": FORMAT, "version": VERSION, "passages": count}
        (directory / _META).write_text(json.dumps(meta) + "\n")
        return cls(directory)

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: int) -> Passage:
        row = self._row(i)
        fields = self._fields
        bounds = self._offsets[fields * row : fields * row + fields + 1].tolist()
        texts = self._texts
        return Passage(
            *(texts[bounds[k] : bounds[k + 1]].decode("utf-8", "surrogatepass") for k in range(fields))
        )

    def _row(self, i: int) -> int:
        row = int(i)
        if row < 0:
            row += self._size
        if not 0 <= row < self._size:
            raise IndexError(f"passage {i} out of range for a corpus of {self._size}")
        return row

    def title_and_text(self, i: int) -> tuple[str, str]:
        """``(corpus[i].title, corpus[i].text)``, read without the passage's other fields."""
        start = self._fields * self._row(i) + 1
        title_start, text_start, text_end = self._offsets[start : start + 3].tolist()
        texts = self._texts
        return (
            texts[title_start:text_start].decode("utf-8", "surrogatepass"),
            texts[text_start:text_end].decode("utf-8", "surrogatepass"),
        )

    def __iter__(self) -> Iterator[Passage]:
        return (self[i] for i in range(self._size))

    def __reduce__(self) -> tuple[type[Corpus], tuple[str]]:
        return (Corpus, (str(self.directory),))

    def __repr__(self) -> str:
        return f"Corpus({str(self.directory)!r}, passages={self._size})"

"""The product store: products and goals as memory-mapped records on disk.

A catalog lives in one directory (built once, then read-only)::

    meta.json                  counts, what it was built from, format version
    products.bin               one compact JSON record per product, concatenated
    products.offsets.npy       int64 byte offsets, N + 1 of them
    asins.npy, asin_rows.npy   sorted ASINs (fixed-width bytes) and their rows
    goals.bin, goals.offsets.npy   the goals, in split order
    bm25/                      the search index (see :mod:`agentenvs.envs.webshop.search`)

Every array is opened with ``mmap_mode="r"``, so opening a catalog costs
milliseconds whatever its size, and all env copies of a process (one
:class:`Catalog` object per directory, cached) and all worker processes on
the machine read the same pages from the OS page cache instead of holding
copies. A product is decoded only when a page shows it.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from agentenvs.core.tasks import TaskSource, UnknownTaskError

FORMAT_VERSION = 1
ASIN_WIDTH = 10  # WebShop drops ASINs longer than 10 characters


@dataclass(frozen=True)
class Product:
    """One product as WebShop shows and scores it.

    ``options`` keeps the page order: ``((name, (value, ...)), ...)``.
    ``price_tag`` is the shown price ("$12.99" or "$10.99 to $25.99");
    ``price`` is the one price drawn inside ``pricing`` that the reward checks.
    """

    asin: str
    title: str
    description: str
    bullet_points: tuple[str, ...]
    category: str
    query: str
    product_category: str
    price_tag: str
    pricing: tuple[float, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    attributes: tuple[str, ...]
    main_image: str
    price: float

    def to_record(self) -> list[Any]:
        return [
            self.asin, self.title, self.description, list(self.bullet_points), self.category, self.query,
            self.product_category, self.price_tag, list(self.pricing),
            [[name, list(values)] for name, values in self.options], list(self.attributes), self.main_image,
            self.price,
        ]  # fmt: skip

    @classmethod
    def from_record(cls, record: list[Any]) -> Product:
        (asin, title, description, bullets, category, query, path, tag, pricing, options, attributes, image,
         price) = record  # fmt: skip
        return cls(
            asin, title, description, tuple(bullets), category, query, path, tag, tuple(pricing),
            tuple((name, tuple(values)) for name, values in options), tuple(attributes), image, price,
        )  # fmt: skip

    def search_text(self) -> str:
        """The text WebShop indexes: lower(title, description, first bullet, options)."""
        option_text = ", and ".join(f"{name}: {', '.join(values)}" for name, values in self.options)
        first_bullet = self.bullet_points[0] if self.bullet_points else ""
        return f"{self.title} {self.description} {first_bullet} {option_text}".lower()


@dataclass(frozen=True)
class Goal:
    """One instruction. ``goal_options`` holds strings (human goals) or
    ``(name, value)`` pairs (synthetic goals), as WebShop scores them."""

    asin: str
    instruction_text: str
    attributes: tuple[str, ...]
    goal_options: tuple[Any, ...]
    price_upper: float
    name: str
    query: str
    category: str
    product_category: str

    @classmethod
    def for_product(
        cls,
        product: Product,
        instruction_text: str,
        attributes: Sequence[str],
        goal_options: Sequence[Any],
        price_upper: float,
    ) -> Goal:
        """A goal whose target is ``product`` (name, query and categories taken from it)."""
        return cls(
            asin=product.asin,
            instruction_text=instruction_text,
            attributes=tuple(attributes),
            goal_options=tuple(goal_options),
            price_upper=price_upper,
            name=product.title,
            query=product.query,
            category=product.category,
            product_category=product.product_category,
        )

    def to_record(self) -> list[Any]:
        options = [list(o) if isinstance(o, tuple) else o for o in self.goal_options]
        return [self.asin, self.instruction_text, list(self.attributes), options, self.price_upper, self.name,
                self.query, self.category, self.product_category]  # fmt: skip

    @classmethod
    def from_record(cls, record: list[Any]) -> Goal:
        asin, text, attributes, options, upper, name, query, category, path = record
        goal_options = tuple(tuple(o) if isinstance(o, list) else o for o in options)
        return cls(asin, text, tuple(attributes), goal_options, upper, name, query, category, path)

    @property
    def named_options(self) -> dict[str, str]:
        """Option name -> wanted value, for synthetic goals (empty for human goals)."""
        return {o[0]: o[1] for o in self.goal_options if isinstance(o, tuple)}


class RecordFile:
    """Variable-length byte records: a blob plus an offsets array, both memory-mapped."""

    def __init__(self, directory: Path, stem: str) -> None:
        self.offsets = np.load(directory / f"{stem}.offsets.npy", mmap_mode="r")
        size = int(self.offsets[-1])
        self.blob = (
            np.memmap(directory / f"{stem}.bin", dtype=np.uint8, mode="r") if size else np.zeros(0, np.uint8)
        )

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index: int) -> bytes:
        start, end = int(self.offsets[index]), int(self.offsets[index + 1])
        return self.blob[start:end].tobytes()


def write_records(directory: Path, stem: str, records: Iterable[list[Any]]) -> int:
    """Write JSON records as ``stem.bin`` + ``stem.offsets.npy``; returns the count."""
    offsets = [0]
    with open(directory / f"{stem}.bin", "wb") as blob:
        for record in records:
            data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            blob.write(data)
            offsets.append(offsets[-1] + len(data))
    np.save(directory / f"{stem}.offsets.npy", np.asarray(offsets, dtype=np.int64))
    return len(offsets) - 1


class Catalog:
    """Products and goals of one catalog directory (read-only, memory-mapped).

    Use :func:`open_catalog` to share one instance per directory.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.meta: dict[str, Any] = json.loads((self.directory / "meta.json").read_text())
        if self.meta.get("format") != FORMAT_VERSION:
            raise ValueError(
                f"{self.directory} holds catalog format {self.meta.get('format')}, need {FORMAT_VERSION}"
            )
        self._products = RecordFile(self.directory, "products")
        self._goals = RecordFile(self.directory, "goals")
        self._asins = np.load(self.directory / "asins.npy", mmap_mode="r")
        self._asin_rows = np.load(self.directory / "asin_rows.npy", mmap_mode="r")
        self.product_at = lru_cache(maxsize=4096)(self._product_at)
        self._search_index: Any = None
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[Any, ...]:
        # pickles and copies travel as a handle: the receiver opens (or reuses) the memory-mapped files
        return open_catalog, (str(self.directory),)

    @property
    def num_products(self) -> int:
        return len(self._products)

    @property
    def num_goals(self) -> int:
        return len(self._goals)

    def _product_at(self, row: int) -> Product:
        return Product.from_record(json.loads(self._products[row]))

    def row_of(self, asin: str) -> int | None:
        key = asin.encode("utf-8")
        if len(key) > ASIN_WIDTH:
            return None
        position = int(np.searchsorted(self._asins, key))
        if position < len(self._asins) and self._asins[position] == key:
            return int(self._asin_rows[position])
        return None

    def product(self, asin: str) -> Product:
        row = self.row_of(asin)
        if row is None:
            raise KeyError(asin)
        return self.product_at(row)

    def goal(self, index: int) -> Goal:
        return Goal.from_record(json.loads(self._goals[index]))

    def products(self) -> Iterator[Product]:
        for row in range(self.num_products):
            yield self._product_at(row)

    def search_index(self) -> Any:
        """The BM25 index of this catalog, loaded (memory-mapped) on first use."""
        with self._lock:
            if self._search_index is None:
                from agentenvs.envs.webshop.search import BM25Index

                self._search_index = BM25Index.load(self.directory / "bm25")
            return self._search_index


def write_catalog(
    directory: str | os.PathLike[str],
    products: Iterable[Product],
    goals: Iterable[Goal],
    meta: dict[str, Any],
) -> Path:
    """Build a catalog directory atomically (a temporary sibling renamed into place).

    Writes products, goals, the ASIN index and the BM25 index. ``products``
    must have unique ASINs of at most 10 characters.
    """
    from agentenvs.envs.webshop.search import BM25Index

    final = Path(directory)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = final.parent / f".{final.name}.building-{os.getpid()}-{threading.get_ident()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    try:
        asins: list[bytes] = []
        texts: list[str] = []

        def records() -> Iterator[list[Any]]:
            for product in products:
                asins.append(product.asin.encode("utf-8"))
                texts.append(product.search_text())
                yield product.to_record()

        count = write_records(staging, "products", records())
        asin_array = np.asarray(asins, dtype=f"S{ASIN_WIDTH}")
        order = np.argsort(asin_array, kind="stable")
        sorted_asins = asin_array[order]
        if len(sorted_asins) > 1 and bool(np.any(sorted_asins[1:] == sorted_asins[:-1])):
            raise ValueError("duplicate ASINs in catalog")
        np.save(staging / "asins.npy", sorted_asins)
        np.save(staging / "asin_rows.npy", order.astype(np.int64))
        goal_count = write_records(staging, "goals", (g.to_record() for g in goals))
        BM25Index.build(texts).save(staging / "bm25")
        (staging / "meta.json").write_text(
            json.dumps({**meta, "format": FORMAT_VERSION, "products": count, "goals": goal_count}, indent=1)
        )
        try:
            staging.rename(final)
        except OSError:
            if not (final / "meta.json").exists():  # lost a race only if the winner finished
                raise
            shutil.rmtree(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


_OPEN: dict[Path, Catalog] = {}
_OPEN_LOCK = threading.Lock()


def open_catalog(directory: str | os.PathLike[str]) -> Catalog:
    """The process-wide :class:`Catalog` of ``directory`` (opened once, shared)."""
    path = Path(directory).resolve()
    with _OPEN_LOCK:
        catalog = _OPEN.get(path)
        if catalog is None:
            catalog = _OPEN[path] = Catalog(path)
        return catalog


def cache_root() -> Path:
    """Where built catalogs live: ``$AGENTENVS_CACHE/webshop`` or ``~/.cache/agentenvs/webshop``."""
    base = os.environ.get("AGENTENVS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "agentenvs")
    return Path(base) / "webshop"


def build_version(*modules: str) -> str:
    """Cache key part for catalogs built by ``modules``: their source, the catalog format
    and the search index version (so an edited generator or loader rebuilds)."""
    import importlib.util

    from agentenvs.core import stable_digest
    from agentenvs.envs.webshop.search import INDEX_VERSION

    sources = []
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ImportError(name)
        sources.append(Path(spec.origin).read_bytes())
    return stable_digest([sources, FORMAT_VERSION, INDEX_VERSION])[:16]


def build_or_open(directory: Path, build: Callable[[Path], None]) -> Catalog:
    """Open the catalog in ``directory``, building it first (``build(directory)``) if absent."""
    if not (directory / "meta.json").exists():
        build(directory)
    return open_catalog(directory)


class GoalTasks(TaskSource[Goal]):
    """A catalog's goals as tasks: test ``[0, 500)``, valid ``[500, 1500)``, train the rest.

    Task ids are ``"{asin}:{goal index}"``.
    """

    BOUNDS: ClassVar[dict[str, tuple[int, int | None]]] = {
        "test": (0, 500),
        "valid": (500, 1500),
        "train": (1500, None),
    }

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    @property
    def skipped(self) -> dict[str, int]:
        """What building the catalog left out of its files, by reason
        (:mod:`agentenvs.envs.webshop.official`)."""
        return dict(self.catalog.meta.get("skipped", {}))

    def _range(self, split: str) -> tuple[int, int]:
        self.check_split(split)
        start, end = self.BOUNDS[split]
        total = self.catalog.num_goals
        end = total if end is None else min(end, total)
        return min(start, total), end

    def size(self, split: str) -> int:
        start, end = self._range(split)
        return end - start

    def task_id(self, split: str, index: int) -> str:
        start, end = self._range(split)
        if not 0 <= index < end - start:
            raise IndexError(f"task index {index} outside split {split!r} of size {end - start}")
        goal_index = start + index
        return f"{self.catalog.goal(goal_index).asin}:{goal_index}"

    def load(self, task_id: str) -> Goal:
        asin, _, index = str(task_id).rpartition(":")
        if not index.isdigit() or int(index) >= self.catalog.num_goals:
            raise UnknownTaskError(f"unknown task id {task_id!r}")
        goal = self.catalog.goal(int(index))
        if goal.asin != asin:
            raise UnknownTaskError(f"unknown task id {task_id!r}")
        return goal

"""WebShop's published data files, read with the original loader's rules.

Files (in ``data_dir``; ``size="1000"`` reads the ``_1000`` variants)::

    items_shuffle[_1000].json   list of scraped products
    items_ins_v2[_1000].json    asin -> {"attributes": [...], "instruction": str,
                                         "instruction_attributes": [...]}
    items_human_ins.json        asin -> [{"instruction": str, "instruction_attributes":
                                          [...], "instruction_options": [...], ...}]

Product rules: skip ``asin == "nan"`` or longer than 10 characters, and
repeated ASINs (ours: also ASINs that are not strings or not ASCII);
``name`` is the title, ``full_description`` the description,
``small_description`` (string or list) the bullet points, ``images[0]`` the
image; ``query`` is lowercased and stripped; fields the pages do not show
(``product_information``, ``brand``, ...) are not read, whatever their type.
``pricing`` "$12.99", "$10.99 - $25.99" or "$19.99$27.99" is split on ``$``,
every part stripped of all but digits and dots, the first two kept; shown as
"$a" or "$a to $b"; missing, empty (``""``) or unparseable pricing means
``[100.0]`` shown as "$100.0" (ours: a bare number is that one price). Each
customization option becomes ``options[name.lower()]`` with values
``value.strip().replace("/", " | ").lower()``; ``customization_options`` of
``""`` or null and options of null (``{"Color": null}``) add nothing.
Attributes come from ``items_ins_v2`` (``["DUMMY_ATTR"]`` when absent).
Reviews are not shipped: every product shows ``Rating: N.A.`` and no reviews.

Goals: one price per product is drawn uniformly inside its pricing range;
the price cap takes two of the first four multiples of ten above it and keeps
the larger (no cap when fewer than two remain). Synthetic goals
(``human_goals=False``) give one goal per combination of option values,
``"{instruction} with {name}: {value}, and ...{price text}"``, for every
product whose ``items_ins_v2`` note has an instruction. Human goals
(``human_goals=True``, WebShop's switch of the same name: its
``load_products`` reads ``items_human_ins.json`` beside
``items_ins_v2_*.json``, whose attributes the products keep): for every
loaded product whose ASIN is a key of ``items_human_ins.json``, one goal per
entry of its list, ``instruction.strip(".")`` plus the price text, with the
entry's ``instruction_attributes`` and ``instruction_options`` (a list of
values); entries with no ``instruction_attributes`` are skipped, as
``get_human_goals`` skips them, and ASINs not among the products give none.
What is skipped is counted by reason (``GoalTasks.skipped``).

Goals are shuffled with ``random.Random(233)`` (the original's
``random.seed(233); random.shuffle``) and split test ``[0, 500)``,
valid ``[500, 1500)``, train ``[1500, end)``, so each split holds the same
products, instructions and options as the original's. Difference: the
original draws prices and price caps from the unseeded global RNG (they
change from run to run); here they are derived from the ASIN with
``derive_seed``, so they are the same on every run.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from agentenvs.core import derive_seed, stable_digest
from agentenvs.envs.webshop.catalog import (
    ASIN_WIDTH,
    Catalog,
    Goal,
    Product,
    build_or_open,
    build_version,
    cache_root,
    write_catalog,
)

PRICE_RANGE = [10.0 * i for i in range(1, 100)]
NO_PRICE_CAP = 1_000_000.0
SHUFFLE_SEED = 233
SPLIT_BOUNDS = {"test": (0, 500), "valid": (500, 1500)}  # train: the rest
_NOT_PRICE = re.compile(r"[^\d.]")


def parse_pricing(pricing: Any) -> tuple[tuple[float, ...], str]:
    """``(pricing, price_tag)`` from a WebShop pricing string ("$12.99", "$10.99 - $25.99", "$19.99$27.99").

    A number where the string stands is that one price; an empty, missing or
    unparseable pricing is ``[100.0]``, as the original's missing pricing.
    """
    if isinstance(pricing, (int, float)) and not isinstance(pricing, bool) and math.isfinite(pricing):
        return (float(pricing),), f"${float(pricing)}"
    if isinstance(pricing, str) and pricing:
        try:
            values = [float(Decimal(_NOT_PRICE.sub("", part))) for part in pricing.split("$")[1:]]
        except InvalidOperation:
            values = []
        values = [value for value in values if math.isfinite(value)]
        if len(values) == 1:
            return (values[0],), f"${values[0]}"
        if len(values) >= 2:
            return (values[0], values[1]), f"${values[0]} to ${values[1]}"
    return (100.0,), "$100.0"


def draw_price(asin: str, pricing: Sequence[float]) -> float:
    """The product's one price: its only price, or uniform inside its range."""
    if len(pricing) == 1:
        return float(pricing[0])
    low, high = pricing[:2]
    return float(low + (high - low) * _uniform("webshop-price", asin))


def _uniform(*key: Any) -> float:
    """A uniform draw in [0, 1) determined by ``key`` alone."""
    return derive_seed(*key) / 2.0**64


def price_cap(price: float, *key: Any) -> tuple[float, str]:
    """``(price_upper, price_text)`` for a goal on a product of this price."""
    candidates = [p for p in PRICE_RANGE if p > price][:4]
    if len(candidates) < 2:
        return NO_PRICE_CAP, ""
    pairs = list(itertools.combinations(candidates, 2))
    upper = max(pairs[int(_uniform("webshop-price-cap", *key) * len(pairs))])
    return upper, f", and price lower than {upper:.2f} dollars"


def option_values(raw_options: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``customization_options`` ({name: [{"value", "image"}, ...]}) as ``((name, (value, ...)), ...)``.

    The original's rules: an empty field (``""``, ``{}``, null) has no
    options, an option of null is left out, names are lowercased, values
    stripped, lowercased and "/" shown as " | ". An option entry without a
    string value is left out too (the original would stop loading on it).
    """
    if not raw_options or not isinstance(raw_options, dict):
        return ()
    options: dict[str, tuple[str, ...]] = {}
    for name, contents in raw_options.items():
        if not isinstance(contents, list):
            continue
        options[str(name).lower()] = tuple(
            c["value"].strip().replace("/", " | ").lower()
            for c in contents
            if isinstance(c, dict) and isinstance(c.get("value"), str)
        )
    return tuple(options.items())


def product_from_raw(raw: Mapping[str, Any], attributes: Sequence[str] | None) -> Product:
    """A :class:`Product` from one ``items_shuffle`` entry and its attributes (None: not annotated)."""
    bullets = raw.get("small_description")
    bullet_points = tuple(bullets) if isinstance(bullets, list) else (bullets if bullets is not None else "",)
    pricing, price_tag = parse_pricing(raw.get("pricing"))
    images = raw.get("images") or [""]
    asin = raw["asin"]
    return Product(
        asin=asin,
        title=raw.get("name") or "",
        description=raw.get("full_description") or "",
        bullet_points=tuple(str(b) for b in bullet_points),
        category=raw.get("category") or "",
        query=(raw.get("query") or "").lower().strip(),
        product_category=raw.get("product_category") or "",
        price_tag=price_tag,
        pricing=pricing,
        options=option_values(raw.get("customization_options")),
        attributes=tuple(attributes) if attributes is not None else ("DUMMY_ATTR",),
        main_image=images[0] or "",
        price=draw_price(asin, pricing),
    )


def synthetic_goal_text(instruction: str, named_options: Sequence[tuple[str, str]], price_text: str) -> str:
    option_text = ", and ".join(f"{name}: {value}" for name, value in named_options)
    return f"{instruction}{' with ' + option_text if option_text else ''}{price_text}"


def synthetic_goals(product: Product, instruction: str, instruction_attributes: Sequence[str]) -> list[Goal]:
    """One goal per combination of the product's option values (names sorted)."""
    upper, price_text = price_cap(product.price, product.asin)
    options = dict(product.options)
    names = sorted(options)
    goals = []
    for combination in itertools.product(*(options[name] for name in names)):
        pairs = tuple(zip(names, combination, strict=False))
        goals.append(
            Goal.for_product(
                product,
                synthetic_goal_text(instruction, pairs, price_text),
                instruction_attributes,
                pairs,
                upper,
            )
        )
    return goals


def human_goals(
    product: Product, annotations: Sequence[Mapping[str, Any]], skipped: Counter[str] | None = None
) -> list[Goal]:
    """WebShop's ``get_human_goals`` for one product: a goal per annotation with instruction attributes.

    The goal text is ``instruction.strip(".")`` plus the price text, its
    attributes the ``instruction_attributes``, its options the
    ``instruction_options`` list; an annotation without attributes (or
    without an instruction) is skipped, counted in ``skipped``.
    """
    goals = []
    skipped = Counter() if skipped is None else skipped
    for index, note in enumerate(annotations):
        attributes = (note.get("instruction_attributes") or []) if isinstance(note, dict) else []
        if not attributes:
            skipped["human instruction without instruction_attributes"] += 1
            continue
        if not isinstance(note.get("instruction"), str):
            skipped["human instruction without an instruction text"] += 1
            continue
        upper, price_text = price_cap(product.price, product.asin, index)
        goals.append(
            Goal.for_product(
                product,
                note["instruction"].strip(".") + price_text,
                attributes,
                note.get("instruction_options") or (),
                upper,
            )
        )
    return goals


def shuffle_goals(goals: list[Goal]) -> list[Goal]:
    """WebShop's fixed goal order: ``random.seed(233); random.shuffle(goals)``."""
    shuffled = list(goals)
    random.Random(SHUFFLE_SEED).shuffle(shuffled)
    return shuffled


def data_files(data_dir: Path, size: str) -> tuple[Path, Path, Path]:
    suffix = "_1000" if size == "1000" else ""
    if size not in ("1000", "full"):
        raise ValueError(f"size must be '1000' or 'full', got {size!r}")
    files = (
        data_dir / f"items_shuffle{suffix}.json",
        data_dir / f"items_ins_v2{suffix}.json",
        data_dir / "items_human_ins.json",
    )
    return files


def load_official(
    data_dir: str | Path, *, size: str = "1000", human: bool = False, skipped: Counter[str] | None = None
) -> tuple[list[Product], list[Goal]]:
    """Products and shuffled goals from WebShop's files in ``data_dir``.

    What the original's rules leave out is counted by reason in ``skipped``
    (when given): products by their ASIN, products without an instruction
    (synthetic goals), human instructions without attributes or for an ASIN
    that is not among the products.
    """
    skipped = Counter() if skipped is None else skipped
    products_path, attributes_path, human_path = data_files(Path(data_dir), size)
    for path in (products_path, attributes_path) + ((human_path,) if human else ()):
        if not path.exists():
            other = "full" if size == "1000" else "1000"
            hint = (
                f"; the folder holds the {other} files: pass data_size={other!r}"
                if all(p.exists() for p in data_files(Path(data_dir), other)[:2])
                else ""
            )
            raise FileNotFoundError(f"WebShop data file {path} not found{hint}")
    raw_products = json.loads(products_path.read_text(encoding="utf-8"))
    annotations = json.loads(attributes_path.read_text(encoding="utf-8"))
    human_notes = json.loads(human_path.read_text(encoding="utf-8")) if human else {}
    products = list(_products(raw_products, annotations, skipped))
    goals: list[Goal] = []
    for product in products:
        note = annotations.get(product.asin) or {}
        if human:
            if product.asin in human_notes:
                goals.extend(human_goals(product, human_notes[product.asin], skipped))
        elif isinstance(note.get("instruction"), str):
            goals.extend(
                synthetic_goals(product, note["instruction"], note.get("instruction_attributes") or [])
            )
        else:
            skipped["product without an instruction in items_ins_v2"] += 1
    if human:
        listed = {product.asin for product in products}
        for asin, notes in human_notes.items():
            if asin not in listed:
                skipped["human instruction for an ASIN not among the products"] += len(notes)
    return products, shuffle_goals(goals)


def skip_reason(asin: Any, seen: set[str]) -> str | None:
    """Why the original's loader leaves this product out (None: kept)."""
    if not isinstance(asin, str):
        return "asin is not a string"
    if asin == "nan":
        return 'asin is "nan"'
    if len(asin) > ASIN_WIDTH:
        return f"asin longer than {ASIN_WIDTH} characters"
    if not asin.isascii():  # ours: the catalog stores ASINs as 10 bytes
        return "asin is not ASCII"
    if asin in seen:
        return "asin repeated (the first is kept)"
    return None


def _products(
    raw_products: Sequence[Mapping[str, Any]], annotations: Mapping[str, Any], skipped: Counter[str]
) -> Iterator[Product]:
    seen: set[str] = set()
    for raw in raw_products:
        reason = skip_reason(raw.get("asin"), seen)
        if reason is not None:
            skipped[reason] += 1
            continue
        asin = raw["asin"]
        seen.add(asin)
        yield product_from_raw(raw, (annotations.get(asin) or {}).get("attributes"))


def official_catalog(
    data_dir: str | Path, *, size: str = "1000", human: bool = False, cache_dir: str | Path | None = None
) -> Catalog:
    """The catalog of WebShop's files in ``data_dir``, converted once into the cache."""
    files = [p for p in data_files(Path(data_dir), size) if p.exists()]
    stamp = [[str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns] for p in files]
    key = stable_digest([stamp, size, human, build_version("agentenvs.envs.webshop.official")])[:16]
    directory = (
        Path(cache_dir) if cache_dir else cache_root()
    ) / f"official-{size}-{'human' if human else 'synthetic'}-{key}"

    def build(target: Path) -> None:
        skipped: Counter[str] = Counter()
        products, goals = load_official(data_dir, size=size, human=human, skipped=skipped)
        meta = {
            "source": "official",
            "data_dir": str(Path(data_dir).resolve()),
            "size": size,
            "human": human,
            "skipped": dict(sorted(skipped.items())),
        }
        write_catalog(target, products, goals, meta)

    return build_or_open(directory, build)

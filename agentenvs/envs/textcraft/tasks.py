"""TextCraft tasks: a goal item and the crafting commands listed for it.

Splits (goals from the recipe book of :mod:`agentenvs.envs.textcraft.recipes`):

========  =====  ==============================================================
split     size   goals
========  =====  ==============================================================
train     431    our own splits over every craftable item (all depths) whose
valid     55     planned solution fits in 40 commands; disjoint by goal,
test      57     stratified by depth: within each depth, goals ordered by a
                 stable hash go to test, valid, train, ... train in turn
                 (1:1:8); each split is listed in stable-hash order, depths
                 mixed. ``netherite_block`` (48 commands at least) is left out.
adapt     419    ADaPT's goal list: items of depth >= 2, deepest first; index
                 ``i`` is the goal of the ``textcraft`` package's ``reset(seed)``
                 for every seed with ``seed % 419 == i`` (ADaPT evaluates seeds
                 0-199, the first 200). It shares goals with the splits above.
========  =====  ==============================================================

Task ids: ``train/oak_boat`` (split and goal) and ``adapt/007`` (ADaPT index).

Listed commands: every recipe of the goal's tree (the goal's recipes and,
recursively, those of its craftable ingredients, alternatives included) plus
up to 10 distractors, in an order shuffled per task. Distractors are drawn
without replacement from the other recipes that take an ingredient of the
tree (as written: a tag or an item). Draws and shuffle come from
``derive_rng("textcraft", task_id)``, so a task always lists the same commands.
The ``textcraft`` package draws from Python's global RNG and lists through
Python sets, so its order and its choice of distractors change with
``PYTHONHASHSEED``; its goal-tree lines are the same as ours.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from agentenvs.core.keys import derive_rng, stable_digest
from agentenvs.core.tasks import TaskSource, UnknownTaskError
from agentenvs.envs.textcraft.planning import plan_commands
from agentenvs.envs.textcraft.recipes import NAMESPACE_PREFIX, RecipeBook, load_recipe_book

OWN_SPLITS = ("train", "valid", "test")
ADAPT_SPLIT = "adapt"
MAX_DISTRACTORS = 10
MAX_PLAN_COMMANDS = 40  # ADaPT's step limit: our splits keep goals solvable within it
STRATA_CYCLE = ("test", "valid") + ("train",) * 8


@dataclass(frozen=True)
class TextCraftTask:
    """One episode's setting: the goal and the commands listed, in listing order."""

    task_id: str
    goal: str
    commands: tuple[str, ...]

    @functools.cached_property
    def commands_key(self) -> str:
        """Identity of the listed commands, whatever their order."""
        return stable_digest(sorted(self.commands))


def tree_lines(book: RecipeBook, goal: str) -> list[str]:
    """The lines of every recipe in the goal's tree, sorted."""
    return sorted({recipe.line for recipe in book.goal_tree(goal)})


def distractor_pool(book: RecipeBook, goal: str) -> list[str]:
    """Lines of the recipes outside the goal's tree that take one of the tree's ingredients, sorted."""
    ingredients = book.tree_names(goal) - {goal}
    in_tree = {recipe.line for recipe in book.goal_tree(goal)}
    return sorted(set().union(*(book.use_lines(name) for name in ingredients)) - in_tree)


def listed_commands(book: RecipeBook, goal: str, task_id: str) -> tuple[str, ...]:
    """The goal's tree lines plus up to 10 distractors, shuffled by the task's own RNG."""
    lines = tree_lines(book, goal)
    pool = distractor_pool(book, goal)
    rng = derive_rng("textcraft", task_id)
    picks = rng.choice(len(pool), size=min(MAX_DISTRACTORS, len(pool)), replace=False)
    lines += [pool[i] for i in sorted(picks)]
    return tuple(lines[i] for i in rng.permutation(len(lines)))


def own_splits(book: RecipeBook) -> dict[str, list[str]]:
    """Goals of train/valid/test: stratified by depth, disjoint, each solvable in 40 commands."""
    by_depth: dict[int, list[str]] = {}
    for item in book.craftable_items():
        if len(plan_commands(book, item)) <= MAX_PLAN_COMMANDS:
            by_depth.setdefault(book.min_depth(item), []).append(item)

    def shuffled(items: list[str]) -> list[str]:
        return sorted(items, key=lambda item: stable_digest(("textcraft-split", item)))

    splits: dict[str, list[str]] = {name: [] for name in OWN_SPLITS}
    for depth in sorted(by_depth):
        for position, item in enumerate(shuffled(by_depth[depth])):
            splits[STRATA_CYCLE[position % len(STRATA_CYCLE)]].append(item)
    # within a split, depths are mixed so that any run of seeds sees every depth
    return {name: shuffled(goals) for name, goals in splits.items()}


class TextCraftTasks(TaskSource[TextCraftTask]):
    """Our train/valid/test splits and ADaPT's goal list over one recipe book."""

    def __init__(self, book: RecipeBook) -> None:
        self.book = book
        self._goals = {**own_splits(book), ADAPT_SPLIT: book.adapt_goals()}
        self._own_ids = {
            split: {self._short(goal): goal for goal in self._goals[split]} for split in OWN_SPLITS
        }
        self._loaded: dict[str, TextCraftTask] = {}

    @property
    def splits(self) -> tuple[str, ...]:
        return (*OWN_SPLITS, ADAPT_SPLIT)

    def goals(self, split: str) -> list[str]:
        self.check_split(split)
        return list(self._goals[split])

    def size(self, split: str) -> int:
        self.check_split(split)
        return len(self._goals[split])

    def task_id(self, split: str, index: int) -> str:
        self.check_split(split)
        goals = self._goals[split]
        if not 0 <= index < len(goals):
            raise IndexError(f"split {split!r} has {len(goals)} tasks, no index {index}")
        if split == ADAPT_SPLIT:
            return f"{ADAPT_SPLIT}/{index:03d}"
        return f"{split}/{self._short(goals[index])}"

    def load(self, task_id: str) -> TextCraftTask:
        task = self._loaded.get(task_id)
        if task is None:
            goal = self._goal_of(task_id)
            task = TextCraftTask(task_id, goal, listed_commands(self.book, goal, task_id))
            self._loaded[task_id] = task
        return task

    def _goal_of(self, task_id: str) -> str:
        split, _, rest = str(task_id).partition("/")
        adapt_goals = self._goals[ADAPT_SPLIT]
        if (
            split == ADAPT_SPLIT
            and rest.isdigit()
            and rest == f"{int(rest):03d}"
            and int(rest) < len(adapt_goals)
        ):
            return adapt_goals[int(rest)]
        if split in self._own_ids and rest in self._own_ids[split]:
            return self._own_ids[split][rest]
        raise UnknownTaskError(f"unknown TextCraft task id {task_id!r}; e.g. 'test/oak_boat' or 'adapt/007'")

    @staticmethod
    def _short(goal: str) -> str:
        return goal.removeprefix(NAMESPACE_PREFIX)


@functools.lru_cache(maxsize=4)
def textcraft_tasks(recipes_dir: str | None = None) -> TextCraftTasks:
    """The task source over the recipe folder (the ``textcraft`` package's by default), shared."""
    return TextCraftTasks(load_recipe_book(recipes_dir))

"""TextCraft: agentenvs' native engine vs the ``textcraft`` package's env, in the same run.

Both play ADaPT seeds ``0..resets-1`` (the ``adapt`` split, index = package
seed) with the same commands: the planner's solution of each goal, sent as
bare command text. The package's reset is timed with a new env per episode
(construction included, the way to avoid its recipe-list leak) and with its
recipe lists restored before each reset (its reset alone); one long-lived
package env is not timed because its resets grow without bound. agentenvs'
turn includes the action protocol, state key, progress potential and info
(its engine, ``CraftingWorld``, is also timed alone); its reset is timed on
the first visit of each task (listing built) and on a second pass (listing
cached). Every figure is wall time on this machine in this run; the last two
columns give each rate as a multiple of the package's (its env with the recipe
lists restored: steps/s, and resets/s from its reset ms), and a closing line
the machine's cores and load average before and after the run.

    python benchmarks/bench_textcraft.py [--resets 100] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import time

import gymnasium as gym
from rich.table import Table
from run_record import print_table

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.envs.textcraft.planning import plan_commands
from agentenvs.envs.textcraft.recipes import default_recipes_dir, load_recipe_book
from agentenvs.envs.textcraft.tasks import textcraft_tasks
from agentenvs.envs.textcraft.world import CraftingWorld


def solutions(seeds: range) -> list[list[str]]:
    book = load_recipe_book()
    goals = book.adapt_goals()
    return [plan_commands(book, goals[seed % len(goals)]) for seed in seeds]


def play(env, seeds: range, commands: list[list[str]]) -> tuple[float, int]:
    """Seconds spent in ``step`` and steps taken, over one episode per seed."""
    spent, steps = 0.0, 0
    for seed, episode in zip(seeds, commands, strict=False):
        env.reset(seed=seed)
        for command in episode:
            started = time.perf_counter()
            _, _, terminated, truncated, *_ = env.step(command)
            spent += time.perf_counter() - started
            steps += 1
            if terminated or truncated:
                break
    return spent, steps


def time_resets(env, seeds: range) -> float:
    started = time.perf_counter()
    for seed in seeds:
        env.reset(seed=seed)
    return (time.perf_counter() - started) / len(seeds)


class RestoredPackageEnv:
    """The package's env with its recipe lists restored before each reset.

    Its reset appends sub-recipes to the recipe lists it walks, so on one
    long-lived instance resets slow down without bound (seconds per reset
    after a few dozen goals); restoring the lists keeps every reset as cheap
    as the first, which is the package's own cost.
    """

    def __init__(self) -> None:
        import textcraft

        self.env = textcraft.TextCraft(minecraft_dir=str(default_recipes_dir().parent))
        tree = self.env.crafting_tree
        self.pristine = [
            (index, {k: list(v) for k, v in index.items()})
            for index in (tree.itemid_recipes, tree.tag_recipes)
        ]

    def reset(self, seed: int):
        for index, lists in self.pristine:
            index.clear()
            index.update({k: list(v) for k, v in lists.items()})
        return self.env.reset(seed=seed)

    def step(self, command: str):
        return self.env.step(command)


def time_package(seeds: range, commands: list[list[str]]) -> dict[str, dict[str, float]]:
    import textcraft

    recipes_dir = str(default_recipes_dir().parent)
    started = time.perf_counter()
    for seed in seeds:
        textcraft.TextCraft(minecraft_dir=recipes_dir).reset(seed=seed)
    fresh = (time.perf_counter() - started) / len(seeds)
    env = RestoredPackageEnv()
    with contextlib.redirect_stdout(io.StringIO()):  # it prints on count mismatches
        spent, steps = play(env, seeds, commands)
    return {
        "textcraft package, new env per episode": {"reset": fresh, "rate": None},
        "textcraft package, recipe lists restored": {"reset": time_resets(env, seeds), "rate": steps / spent},
    }


def time_agentenvs(seeds: range, commands: list[list[str]]) -> dict[str, dict[str, float]]:
    load_recipe_book.cache_clear()
    textcraft_tasks.cache_clear()
    started = time.perf_counter()
    env = gym.make("agentenvs/TextCraft-v0", split="adapt").unwrapped
    construct = time.perf_counter() - started
    first = time_resets(env, seeds)
    again = time_resets(env, seeds)
    spent, steps = play(env, seeds, commands)
    engine_spent, engine_steps = 0.0, 0
    for seed, episode in zip(seeds, commands, strict=False):
        world = CraftingWorld(env.book, env.task_source.load(env.task_source.task_id("adapt", seed)).goal)
        for command in episode:
            started = time.perf_counter()
            world.apply(world.parse(command))
            engine_spent += time.perf_counter() - started
            engine_steps += 1
            if world.goal_crafted:
                break
    return {
        "agentenvs engine alone (CraftingWorld)": {"reset": None, "rate": engine_steps / engine_spent},
        "agentenvs, first visit of each task": {"reset": first, "rate": steps / spent},
        "agentenvs, listings cached": {"reset": again, "rate": None},
        f"(agentenvs env construction: {construct * 1e3:.0f} ms, once per process)": {},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--resets", type=int, default=100)
    parser.add_argument("--out", help="also write the printed table to this file")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]

    seeds = range(args.resets)
    commands = solutions(seeds)
    results = {**time_package(seeds, commands), **time_agentenvs(seeds, commands)}
    table = Table(
        title=(
            f"TextCraft: ADaPT seeds 0-{args.resets - 1}, "
            f"planner's commands ({sum(map(len, commands))} steps)"
        )
    )
    package = results["textcraft package, recipe lists restored"]
    for column in ("engine", "reset ms", "steps/s", "resets/s × package", "steps/s × package"):
        table.add_column(column, justify="left" if column == "engine" else "right")
    for engine, result in results.items():
        if not result:
            table.add_row(engine, "", "", "", "")
            continue
        rate = result["rate"]
        reset = result["reset"]
        table.add_row(
            engine,
            "" if reset is None else f"{reset * 1e3:.3f}",
            "" if rate is None else f"{rate:,.0f}",
            "" if reset is None else f"{package['reset'] / reset:.2f}",
            "" if rate is None else f"{rate / package['rate']:.2f}",
        )
    print_table(table, load_before, args.out)


if __name__ == "__main__":
    main()

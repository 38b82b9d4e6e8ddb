"""Sokoban: agentenvs' native engine vs gym-sokoban, in the same run.

agentenvs rows time full ``env.step(response)`` turns (protocol parsing,
moves, state keys, potentials, observation, info) with a random agent (three
uniform moves per turn on ``Sokoban-v0``, one on ``Sokoban-Verl-v0``) and the
BFS expert; resets are not inside the step timings. gym-sokoban (0.0.6, the
original engine; ``pip install gym-sokoban``) plays uniform push actions
1-4 on its own generated 6×6, 1-box rooms; its step always renders an image
(``tiny_rgb_array``, its cheapest), so agentenvs' image mode is timed too.

Reset latency: *cached* resets a task already generated (what GRPO groups
do), *uncached* a task never seen (room generation, BFS and first draw);
gym-sokoban's reset always generates a room. Each figure is the best of
``--rounds`` rounds, which damps the noise of a shared machine. gym-sokoban
is timed first; the last column gives each agentenvs rate (steps/s, or
uncached resets/s) as a multiple of gym-sokoban's in the same run, and a
closing line the machine's cores and load average before and after the run.

    python benchmarks/bench_sokoban.py [--turns 3000] [--resets 200] [--rounds 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import time
from collections.abc import Callable
from functools import partial

import gymnasium as gym
from rich.table import Table
from run_record import print_table

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.core import derive_rng
from agentenvs.core.registration import make_expert
from agentenvs.envs.sokoban.reference import load_reference
from agentenvs.envs.sokoban.room import DIRECTIONS, move
from agentenvs.envs.sokoban.tasks import GeneratorConfig, format_task_id, load_task


def best_of(runs: list[Callable[[], tuple[float, ...]]]) -> tuple[float, ...]:
    """Each figure's best (highest) value over the rounds (one callable per round)."""
    results = [run() for run in runs]
    return tuple(max(values) for values in zip(*results, strict=False))


def play(env_id: str, agent: str, turns: int, **kwargs) -> tuple[float, float]:
    """(primitive steps/s, turns/s) over ``turns`` turns; resets excluded."""
    env = gym.make(env_id, **kwargs)
    base = env.unwrapped
    rng = derive_rng("bench_sokoban", env_id, agent)
    expert = make_expert(env)
    seed = 0
    obs, info = env.reset(seed=seed)
    elapsed, steps = 0.0, 0
    for _ in range(turns):
        if agent == "expert":
            response = expert.act(obs, info)
        else:
            moves = [DIRECTIONS[int(i)] for i in rng.integers(4, size=base.max_actions_per_turn)]
            response = base.protocol.format(moves)
        started = time.perf_counter()
        obs, _, terminated, truncated, info = env.step(response)
        elapsed += time.perf_counter() - started
        steps += len(info["transitions"])
        if terminated or truncated:
            seed += 1
            obs, info = env.reset(seed=seed)
    return steps / elapsed, turns / elapsed


def engine_steps(moves: int) -> tuple[float]:
    """Bare ``room.move`` calls per second (no env around them)."""
    task = load_task(format_task_id(GeneratorConfig(), "train", 0))
    directions = [DIRECTIONS[int(i)] for i in derive_rng("bench_sokoban", "engine").integers(4, size=moves)]
    player, boxes = task.player, task.boxes
    started = time.perf_counter()
    for direction in directions:
        player, boxes = move(task.room, player, boxes, direction)
    return (moves / (time.perf_counter() - started),)


def resets(count: int, split: str, offset: int) -> tuple[float, float]:
    """(uncached, cached) resets per second of Sokoban-v0 on tasks ``offset..offset+count-1``."""
    env = gym.make("agentenvs/Sokoban-v0", split=split)
    source = env.unwrapped.task_source
    ids = [source.task_id(split, offset + i) for i in range(count)]
    started = time.perf_counter()
    for task_id in ids:
        env.reset(options={"task_id": task_id})
    uncached = (time.perf_counter() - started) / count
    started = time.perf_counter()
    for task_id in ids:
        env.reset(options={"task_id": task_id})
    cached = (time.perf_counter() - started) / count
    return 1 / uncached, 1 / cached


def generation(count: int, split: str, offset: int) -> tuple[float]:
    """Generated tasks per second (generator + BFS), cache bypassed."""
    config = GeneratorConfig(max_solution_length=9)
    started = time.perf_counter()
    for i in range(count):
        load_task.__wrapped__(format_task_id(config, split, offset + i))
    return (count / (time.perf_counter() - started),)


def reference_rows(env_module, turns: int, count: int) -> tuple[float, float]:
    """gym-sokoban: (steps/s, resets/s) on 6x6 rooms with one box."""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        env = env_module.SokobanEnv(dim_room=(6, 6), num_boxes=1, max_steps=10**9, reset=False)
        started = time.perf_counter()
        for _ in range(count):
            env.reset()
        reset_rate = count / (time.perf_counter() - started)
        actions = derive_rng("bench_sokoban", "reference").integers(1, 5, size=turns)
        env.reset()
        elapsed = 0.0
        for action in actions:
            started = time.perf_counter()
            _, _, done, _ = env.step(int(action), observation_mode="tiny_rgb_array")
            elapsed += time.perf_counter() - started
            if done:
                env.reset()
    return turns / elapsed, reset_rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--resets", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", help="also write the printed table to this file")
    args = parser.parse_args()
    rounds, turns = args.rounds, args.turns
    load_before = os.getloadavg()[0]

    env_module, _, missing = load_reference()
    reference_steps = reference_resets = None
    if env_module is not None:
        reference_steps, reference_resets = best_of(
            [partial(reference_rows, env_module, turns, args.resets)] * rounds
        )

    table = Table(title="Sokoban 6x6, 1 box: agentenvs vs gym-sokoban (best of rounds)")
    for column in ("engine", "case", "primitive steps/s", "turns/s", "reset ms", "× gym-sokoban"):
        table.add_column(column, justify="left" if column in ("engine", "case") else "right")

    def times(ours: float, reference: float | None) -> str:
        """Our rate (steps or resets per second) as a multiple of gym-sokoban's."""
        return "" if reference is None else f"{ours / reference:.1f}"

    for env_id, agent, kwargs in (
        ("agentenvs/Sokoban-v0", "random", {}),
        ("agentenvs/Sokoban-v0", "expert", {}),
        ("agentenvs/Sokoban-Verl-v0", "random", {}),
        ("agentenvs/Sokoban-v0", "random", {"obs_mode": "image"}),
    ):
        steps, turn_rate = best_of([partial(play, env_id, agent, turns, **kwargs)] * rounds)
        mode = f", {kwargs['obs_mode']} obs" if kwargs else ""
        table.add_row(
            "agentenvs",
            f"{env_id.split('/')[1]} {agent}{mode}",
            f"{steps:,.0f}",
            f"{turn_rate:,.0f}",
            "",
            times(steps, reference_steps),
        )
    (engine,) = best_of([partial(engine_steps, turns * 10)] * rounds)
    table.add_row("agentenvs", "room.move alone", f"{engine:,.0f}", "", "", times(engine, reference_steps))

    # every round needs tasks nobody generated yet: train from far beyond the played
    # seeds, test within its 1,000 tasks
    count = {"train": args.resets, "test": min(args.resets, 1000 // rounds)}
    first = {"train": 100_000, "test": 0}
    for split in ("train", "test"):
        n = count[split]
        offsets = [first[split] + r * n for r in range(rounds)]
        uncached, cached = best_of([partial(resets, n, split, offset) for offset in offsets])
        table.add_row(
            "agentenvs",
            f"reset, {split} split, uncached",
            "",
            "",
            f"{1000 / uncached:.2f}",
            times(uncached, reference_resets),
        )
        table.add_row("agentenvs", f"reset, {split} split, cached", "", "", f"{1000 / cached:.3f}", "")
        (rate,) = best_of([partial(generation, n, split, offset) for offset in offsets])
        table.add_row("agentenvs", f"room generation + BFS, {split} split", "", "", f"{1000 / rate:.2f}", "")

    if reference_steps is None:
        table.add_row("gym-sokoban", f"not timed: {missing}", "", "", "", "")
    else:
        table.add_row(
            "gym-sokoban",
            "random push, tiny_rgb_array obs",
            f"{reference_steps:,.0f}",
            f"{reference_steps:,.0f}",
            "",
            "1.0",
        )
        reference_reset = f"{1000 / reference_resets:.2f}"
        table.add_row("gym-sokoban", "reset (room generation)", "", "", reference_reset, "1.0")
    table.caption = "× gym-sokoban: our steps/s or resets/s over gym-sokoban's (timed first, in the same run)"
    print_table(table, load_before, args.out)


if __name__ == "__main__":
    main()

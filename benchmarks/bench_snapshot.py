"""Snapshots: what ``snapshot()`` / ``restore()`` cost on every main id, against a deep copy.

For each id, ``--episodes`` episodes (seeds 0..n-1) are played by the random
agent; after every turn the env is snapshotted. Timed per snapshot:
``snapshot()``; its pickled size; ``restore`` into the same env, which is on
the same task, later in the episode (the Monte-Carlo case: K rollouts from
each state); ``restore`` into an env on another task (the task is loaded and
started first); and, for comparison, ``copy.deepcopy`` of the bare env, the
generic way to keep a state. Medians over every snapshot, wall time on this
machine in this run.

    python benchmarks/bench_snapshot.py [--episodes 20] [--ids agentenvs/Sokoban-v0 ...]
"""

from __future__ import annotations

import argparse
import copy
import pickle
import statistics
import time
from typing import Any

import gymnasium as gym
from rich.console import Console
from rich.table import Table

import agentenvs
from agentenvs.agents import make_agent


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def measure(env_id: str, episodes: int) -> dict[str, Any]:
    env = gym.make(env_id, disable_env_checker=True)
    other = gym.make(env_id, disable_env_checker=True)
    base, other_base = env.unwrapped, other.unwrapped
    take, size, same_task, new_task, deep = [], [], [], [], []
    for seed in range(episodes):
        observation, info = env.reset(seed=seed)
        agent = make_agent("random", env, seed)
        snapshots = []
        done = False
        while not done:
            start = time.perf_counter()
            snapshot = base.snapshot()
            take.append(time.perf_counter() - start)
            size.append(len(pickle.dumps(snapshot)))
            start = time.perf_counter()
            copy.deepcopy(base)
            deep.append(time.perf_counter() - start)
            snapshots.append(snapshot)
            observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
            done = terminated or truncated
        for snapshot in snapshots:  # the env is at the episode's end, on the same task
            start = time.perf_counter()
            base.restore(snapshot)
            same_task.append(time.perf_counter() - start)
        other.reset(seed=seed + episodes)  # another task
        start = time.perf_counter()
        other_base.restore(snapshots[len(snapshots) // 2])
        new_task.append(time.perf_counter() - start)
    return {
        "env": env_id,
        "snapshots": len(take),
        "snapshot": _median_us(take),
        "bytes": statistics.median(size),
        "max bytes": max(size),
        "restore": _median_us(same_task),
        "restore, other task": _median_us(new_task),
        "deepcopy": _median_us(deep),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--ids", nargs="*", help="env ids (default: every main id)")
    args = parser.parse_args()
    ids = args.ids or [entry.env_id for entry in agentenvs.ENV_ENTRIES if entry.variant_of is None]
    table = Table(title=f"snapshot / restore, random agent, {args.episodes} episodes per id (medians)")
    for header in ("env", "snapshots", "snapshot µs", "pickled bytes (max)", "restore µs",
                   "restore µs, other task", "deepcopy µs"):  # fmt: skip
        table.add_column(header, justify="left" if header == "env" else "right")
    for env_id in ids:
        row = measure(env_id, args.episodes)
        table.add_row(
            row["env"],
            str(row["snapshots"]),
            f"{row['snapshot']:.1f}",
            f"{row['bytes']:,.0f} ({row['max bytes']:,})",
            f"{row['restore']:.1f}",
            f"{row['restore, other task']:.0f}",
            f"{row['deepcopy']:.0f}",
        )
    Console(width=160).print(table)


if __name__ == "__main__":
    main()

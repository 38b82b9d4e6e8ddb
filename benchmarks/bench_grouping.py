"""Grouping diagnostics of every family: how often GiGPO's anchor groups mix or split true states.

Runs ``agentenvs diagnose grouping`` (:mod:`agentenvs.diagnostics.grouping`) on each family's main
env with the random and the expert agent, writes each result (JSON and PNG) to
``benchmarks/results/grouping/`` and prints the Markdown table of every family's file there, which
docs/reference/grouping.md quotes (``--envs`` reruns some families).

    python benchmarks/bench_grouping.py [--episodes 64] [--group-size 8]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import gymnasium as gym
from rich.progress import Progress

from agentenvs.diagnostics.grouping import (
    DEFAULT_GROUP_SIZE,
    diagnose,
    markdown_table,
    results_name,
    write_results,
)

FAMILY_ENVS = (
    "agentenvs/ALFWorld-v0",
    "agentenvs/BabyAI-v0",
    "agentenvs/ColBench-v0",
    "agentenvs/ColBench-Frontend-v0",
    "agentenvs/Search-v0",
    "agentenvs/Sokoban-v0",
    "agentenvs/TextCraft-v0",
    "agentenvs/WebShop-v0",
)
AGENTS = ("random", "expert")
RESULTS = Path(__file__).resolve().parent / "results" / "grouping"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--group-size", type=int, default=DEFAULT_GROUP_SIZE)
    parser.add_argument("--envs", nargs="+", default=list(FAMILY_ENVS))
    args = parser.parse_args()
    documents = []
    with Progress() as progress:
        task = progress.add_task("grouping", total=len(args.envs) * len(AGENTS) * args.episodes)
        for env_id in args.envs:
            env = gym.make(env_id)
            for agent in AGENTS:
                progress.update(task, description=f"{env_id} {agent}")
                document = diagnose(
                    env,
                    env_id,
                    agent,
                    episodes=args.episodes,
                    group_size=args.group_size,
                    on_episode=lambda: progress.advance(task),
                )
                write_results(document, RESULTS)
                documents.append(document)
            env.close()
    print(f"ran: {json.dumps([d['env_id'] + ' ' + d['agent'] for d in documents])}\n")
    print(markdown_table(recorded()))


def recorded() -> list[dict]:
    """Every family's results file in ``RESULTS`` (those not written yet left out), in table order."""
    paths = [RESULTS / f"{results_name(env_id, agent)}.json" for env_id in FAMILY_ENVS for agent in AGENTS]
    return [json.loads(path.read_text(encoding="utf-8")) for path in paths if path.exists()]


if __name__ == "__main__":
    main()

"""Grouped rollout throughput: G groups x N copies with the random agent, per backend.

Times ``GroupedVectorEnv.reset`` and ``step`` only (the agents' response
choice runs outside the clock), over whole rounds: reset every group to a
fresh task (new seeds each round, so rooms are generated, not cached), then
step until every episode has ended. Prints, over the step calls, turns/s (one
turn = one response to one env) and primitive env steps/s
(``len(info["transitions"])`` summed), and over resets and steps together
the rollout turns/s a trainer sees, and the machine's cores and load average
before and after the run.

    python benchmarks/bench_vector.py [--env agentenvs/Sokoban-v0] [--groups 16]
        [--group-size 8] [--rounds 10] [--workers 2] [--ray] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import gymnasium as gym
from run_record import run_conditions

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.agents import make_agent
from agentenvs.vector import GroupedVectorEnv


def measure(
    env_id: str, groups: int, group_size: int, rounds: int, backend: str, workers: int
) -> dict[str, float]:
    started = time.perf_counter()
    vec = GroupedVectorEnv(env_id, groups, group_size, backend=backend, num_workers=workers)
    startup = time.perf_counter() - started
    agent_env = gym.make(env_id)
    reset_clock = step_clock = turns = steps = 0.0
    try:
        for round_index in range(rounds):
            agents = [
                make_agent("random", agent_env, round_index * vec.num_envs + i) for i in range(vec.num_envs)
            ]
            tick = time.perf_counter()
            observations, infos = vec.reset(seed=round_index * groups)
            reset_clock += time.perf_counter() - tick
            while not vec.done.all():
                done = vec.done
                responses = [
                    None if done[i] else agents[i].act(observations[i], infos[i]) for i in range(vec.num_envs)
                ]
                tick = time.perf_counter()
                observations, _, _, _, infos = vec.step(responses)
                step_clock += time.perf_counter() - tick
                turns += int((~done).sum())
                steps += sum(
                    len(info["transitions"])
                    for info, was_done in zip(infos, done, strict=False)
                    if not was_done
                )
    finally:
        vec.close()
    return {
        "startup_s": startup,
        "reset_s": reset_clock,
        "step_s": step_clock,
        "turns": turns,
        "turns_per_s": turns / step_clock,
        "steps_per_s": steps / step_clock,
        "rollout_turns_per_s": turns / (reset_clock + step_clock),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="agentenvs/Sokoban-v0")
    parser.add_argument("--groups", type=int, default=16)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray", action="store_true", help="also time the Ray backend (starts a local Ray)")
    parser.add_argument("--out", help="also write the printed lines to this file")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    lines: list[str] = []

    def emit(line: str) -> None:
        print(line)
        lines.append(line)

    runs = [("inprocess", 1), ("subprocess", args.workers)]
    if args.ray:
        import ray

        ray.init(num_cpus=args.workers, include_dashboard=False)
        runs.append(("ray", args.workers))
    emit(f"{args.env}: {args.groups} groups x {args.group_size} copies, random agent, {args.rounds} rounds")
    header = (
        f"{'backend':<11} {'workers':>7} {'startup s':>9} {'reset s':>8} {'step s':>7} {'turns':>7} "
        f"{'turns/s':>8} {'steps/s':>8} {'rollout turns/s':>15}"
    )
    emit(header)
    emit("-" * len(header))
    for backend, workers in runs:
        result = measure(args.env, args.groups, args.group_size, args.rounds, backend, workers)
        emit(
            f"{backend:<11} {workers:>7} {result['startup_s']:>9.2f} {result['reset_s']:>8.2f} "
            f"{result['step_s']:>7.2f} {int(result['turns']):>7} {result['turns_per_s']:>8.0f} "
            f"{result['steps_per_s']:>8.0f} {result['rollout_turns_per_s']:>15.0f}"
        )
    emit(run_conditions(load_before))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

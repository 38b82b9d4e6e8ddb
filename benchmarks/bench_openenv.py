"""Load test of ``agentenvs serve``: 64 concurrent OpenEnv sessions playing expert episodes.

    python benchmarks/bench_openenv.py                                   # Sokoban and TextCraft, 64 x 4
    python benchmarks/bench_openenv.py --env-ids agentenvs/Search-v0 --sessions 64 --episodes 2

Needs the openenv extra (CI's ``.venv-openenv``). For each id, ``agentenvs serve`` runs as its own
process; this process connects ``--sessions`` clients (openenv-core's async ``GenericEnvClient``,
one WebSocket each) and, all at once, each plays ``--episodes`` expert episodes one after another,
so that ``--sessions`` episodes are in flight the whole time. Every reply is checked against the
same episode played in ``gym.make`` here first (observation text, info without ``privileged``,
reward, done): a mismatch counts as an error, as does any exception. Printed per id, beside the
same expert turns stepped in-process through ``gym.make`` (the floor) and one session alone (what
the wire adds without contention): episodes, steps, errors, p50 / p99 of a step and of a reset,
and steps per second over the whole load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from rich.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_retrieval_server import free_port, start_server, stop_server  # noqa: E402

import agentenvs  # noqa: E402,F401  (registers the ids)
from agentenvs.agents.scripted import make_agent  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "bench_openenv.txt"


def expert_turns(env_id: str, seed: int) -> dict[str, Any]:
    """The expert's episode from ``reset(seed=seed)`` in gym.make, with its reset's and steps' latencies."""
    env = gym.make(env_id, disable_env_checker=True)
    start = time.perf_counter()
    observation, info = env.reset(seed=seed)
    reset_ms = (time.perf_counter() - start) * 1000
    agent = make_agent("expert", env)
    turns: list[dict[str, Any]] = []
    step_ms: list[float] = []
    done = False
    while not done:
        response = agent.act(observation, info)
        start = time.perf_counter()
        observation, reward, terminated, truncated, info = env.step(response)
        step_ms.append((time.perf_counter() - start) * 1000)
        done = terminated or truncated
        turns.append(
            {"response": response, "text": observation, "reward": reward, "done": done, "info": info}
        )
    env.close()
    return {"seed": seed, "turns": turns, "step_ms": step_ms, "reset_ms": reset_ms}


def wire_info(info: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps({key: value for key, value in info.items() if key != "privileged"}))


async def play(
    client: Any, episodes: list[dict[str, Any]], progress: Any, task: Any, stats: dict[str, list]
) -> None:
    """One session's episodes one after another, every reply checked against gym.make's."""
    for episode in episodes:
        try:
            start = time.perf_counter()
            await client.reset(seed=episode["seed"])
            stats["reset_ms"].append((time.perf_counter() - start) * 1000)
            for turn in episode["turns"]:
                start = time.perf_counter()
                result = await client.step({"response": turn["response"]})
                stats["step_ms"].append((time.perf_counter() - start) * 1000)
                same = (
                    result.observation["text"] == turn["text"]
                    and result.observation["info"] == wire_info(turn["info"])
                    and result.reward == turn["reward"]
                    and result.done == turn["done"]
                )
                if not same:
                    stats["errors"].append(f"seed {episode['seed']}: a reply differs from gym.make's")
        except Exception as exc:  # counted and shown in the table: the load test's verdict
            stats["errors"].append(f"seed {episode['seed']}: {type(exc).__name__}: {exc}")
        progress.advance(task)


async def load(url: str, per_session: list[list[dict[str, Any]]], progress: Any, task: Any) -> dict[str, Any]:
    """Every session connected first, then all playing at once; ``seconds`` times the play alone."""
    from openenv.core import GenericEnvClient

    stats: dict[str, Any] = {"step_ms": [], "reset_ms": [], "errors": []}
    clients = [GenericEnvClient(base_url=url, message_timeout_s=300) for _ in per_session]
    await asyncio.gather(*(client.connect() for client in clients))
    try:
        start = time.perf_counter()
        await asyncio.gather(
            *(
                play(client, episodes, progress, task, stats)
                for client, episodes in zip(clients, per_session, strict=False)
            )
        )
        stats["seconds"] = time.perf_counter() - start
    finally:
        await asyncio.gather(*(client.close() for client in clients))
    return stats


def percentiles(values: list[float]) -> list[str]:
    if not values:
        return ["-", "-"]
    return [f"{np.percentile(values, 50):.2f}", f"{np.percentile(values, 99):.2f}"]


COLUMNS = ["path", "sessions", "episodes", "steps", "errors", "step p50 ms", "step p99 ms", "reset p50 ms"]
COLUMNS += ["reset p99 ms", "steps/s, resets included"]


def row(path: str, sessions: int, episodes: int, stats: dict[str, Any]) -> str:
    steps = len(stats["step_ms"])
    rate = f"{steps / stats['seconds']:.0f}" if stats.get("seconds") else "-"
    cells = [path, sessions, episodes, steps, len(stats["errors"])]
    cells += [*percentiles(stats["step_ms"]), *percentiles(stats["reset_ms"]), rate]
    return "| " + " | ".join(map(str, cells)) + " |"


def bench(env_id: str, sessions: int, episodes_each: int, progress: Progress) -> list[str]:
    seeds = range(sessions * episodes_each)
    task = progress.add_task(f"{env_id}: expert episodes in gym.make", total=len(seeds))
    played = []
    for seed in seeds:
        played.append(expert_turns(env_id, seed))
        progress.advance(task)
    in_process = {
        "step_ms": [ms for episode in played for ms in episode["step_ms"]],
        "reset_ms": [episode["reset_ms"] for episode in played],
        "errors": [],
    }
    per_session = [played[index::sessions] for index in range(sessions)]

    port = free_port()
    command = [sys.executable, "-m", "agentenvs.cli", "serve", env_id, "--port", str(port)]
    server = start_server([*command, "--max-sessions", str(sessions)], port)
    url = f"http://127.0.0.1:{port}"
    try:
        task = progress.add_task(f"{env_id}: 1 session", total=episodes_each)
        alone = asyncio.run(load(url, [per_session[0]], progress, task))
        task = progress.add_task(f"{env_id}: {sessions} sessions", total=len(played))
        concurrent = asyncio.run(load(url, per_session, progress, task))
    finally:
        stop_server(server)
    lines = [
        f"{env_id}: {sessions} concurrent sessions x {episodes_each} expert episodes, "
        f"openenv-core {version('openenv-core')} client and server",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
        row("gym.make in-process", 1, len(played), in_process),
        row("agentenvs serve, 1 session", 1, episodes_each, alone),
        row(f"agentenvs serve, {sessions} sessions", sessions, len(played), concurrent),
    ]
    lines += [f"error: {error}" for error in (alone["errors"] + concurrent["errors"])[:10]]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-ids", nargs="+", default=["agentenvs/Sokoban-v0", "agentenvs/TextCraft-v0"])
    parser.add_argument("--sessions", type=int, default=64, help="concurrent sessions (default 64)")
    parser.add_argument("--episodes", type=int, default=4, help="episodes each session plays (default 4)")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results file (default {RESULTS})")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    body: list[str] = []
    with Progress() as progress:
        for env_id in args.env_ids:
            body += ["", *bench(env_id, args.sessions, args.episodes, progress)]
    lines = [
        f"agentenvs serve under load: {os.cpu_count()} CPUs shared by the server, its clients and other work "
        f"(1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after)",
        *body,
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()

"""Search QA: reset and turn cost with the in-process BM25 retriever (and a retrieval server when given).

Plays the expert on ``--episodes`` test questions of each set over the
built-in encyclopedia (``--passages``, default 100k; built and cached on the
first run, which this script does not time), timing ``reset`` and every
``step`` (a search turn = BM25 top-3 over the corpus + the information text +
state key + info). With ``--server URL`` (a running retrieval_index server
over the same corpus) the same episodes are timed through HTTP. Wall time on
this machine in this run.

    python benchmarks/bench_search.py [--episodes 100] [--passages 100000] [--server http://127.0.0.1:8000/retrieve]
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from agentenvs.search.env import SearchEnv
from agentenvs.search.questions import STYLES


def run(env: SearchEnv, episodes: int) -> tuple[float, float, float, int]:
    """Mean reset ms, mean search-turn ms, turns per second, turns played."""
    reset_s, search_s, turn_s, turns, searches = 0.0, 0.0, 0.0, 0, 0
    for seed in range(episodes):
        start = time.perf_counter()
        obs, info = env.reset(seed=seed)
        reset_s += time.perf_counter() - start
        expert = env.expert()
        done = False
        while not done:
            action = expert.act(obs, info)
            start = time.perf_counter()
            obs, _, terminated, truncated, info = env.step(action)
            elapsed = time.perf_counter() - start
            turn_s += elapsed
            turns += 1
            if "<search>" in action:
                search_s += elapsed
                searches += 1
            done = terminated or truncated
    return 1e3 * reset_s / episodes, 1e3 * search_s / max(searches, 1), turns / turn_s, turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--server", default=None, help="retrieval server URL over the same corpus")
    args = parser.parse_args()
    table = Table(title=f"Search QA, built-in encyclopedia ({args.passages:,} passages), expert episodes")
    for column in ("set", "retriever", "reset ms", "search turn ms", "turns/s", "turns"):
        table.add_column(column, justify="right")
    backends = [("in-process BM25", None)] + ([("server", args.server)] if args.server else [])
    for style in STYLES:
        for name, spec in backends:
            env = SearchEnv(style, split="test", corpus_passages=args.passages, retriever=spec)
            reset_ms, search_ms, rate, turns = run(env, min(args.episodes, env.task_source.size("test")))
            table.add_row(style, name, f"{reset_ms:.3f}", f"{search_ms:.2f}", f"{rate:,.0f}", str(turns))
    Console().print(table)


if __name__ == "__main__":
    main()

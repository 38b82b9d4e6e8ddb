"""Search QA: reset and turn cost with the in-process BM25 retriever and through a local retrieval server.

Plays the expert on ``--episodes`` test questions of each set over the
built-in encyclopedia (``--passages``, default 100k; built and cached on the
first run, which this script does not time), timing ``reset`` and every
``step`` (a search turn = BM25 top-3 over the corpus + the information text +
state key + info). The same episodes are then timed through HTTP: a
retrieval_index server (uvicorn, Search-R1's ``/retrieve``) started in this
process over the same index, or ``--server URL`` for one already running
over the same corpus. Wall time on this machine in this run.

    python benchmarks/bench_search.py [--episodes 100] [--passages 100000] [--server http://127.0.0.1:8000]
"""

from __future__ import annotations

import argparse
import contextlib
import time

from rich.console import Console
from rich.table import Table

from agentenvs.search.data import builtin_retriever
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
    with contextlib.ExitStack() as stack:
        if args.server is None:
            from retrieval_index.server import ServerThread, create_app

            app = create_app(builtin_retriever(args.passages, 0), kind="bm25")
            server = ("local server", stack.enter_context(ServerThread(app)))
        else:
            server = ("server", args.server)
        for style in STYLES:
            for name, spec in (("in-process BM25", None), server):
                env = SearchEnv(style, split="test", corpus_passages=args.passages, retriever=spec)
                reset_ms, search_ms, rate, turns = run(env, min(args.episodes, env.task_source.size("test")))
                table.add_row(style, name, f"{reset_ms:.3f}", f"{search_ms:.2f}", f"{rate:,.0f}", str(turns))
    Console().print(table)


if __name__ == "__main__":
    main()

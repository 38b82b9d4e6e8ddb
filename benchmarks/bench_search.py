"""Search QA: turn cost in process beside GEM's search env, and through a local retrieval server.

Part 1, agentenvs beside GEM (PyPI ``gem-llm`` 0.1.0, the ``bench-peers``
extra; skipped with a note when it is not installed). The expert plays
``--episodes`` test questions of each set once; both suites then replay the
same responses on the same questions, in process, over the same BM25 index
(the built-in encyclopedia, ``--passages``, default 100k): agentenvs'
``SearchEnv`` and GEM's ``ToolEnvWrapper(QaEnv, [SearchTool])``, whose
search tool here calls that index in process instead of posting to a
retrieval server (GEM's own parsing, formatting, answer check and wrapper
run unchanged). ``--repeats`` rounds; in each, the sides take turns every
``--chunk`` episodes (ours, GEM's, ours with cleared lines; who goes first
turns from chunk to chunk, as the first meets the chunk's index pages out
of the CPU caches), so that a shared machine's changing load falls on each
alike, and a side's pass is the sum of its chunks. The retriever's query cache is cleared before every
chunk, so every side searches the same queries cold. The table gives the
median turns/s of each and the median and lowest ratio of the rounds
(agentenvs ÷ GEM, ≥ 1 = ours is cheaper). agentenvs keeps each retrieved
corpus row's information line, and each result's information text and
obs_key, from chunk to chunk (as it does from episode to episode); the
third side, a second env over the same index, clears them before each of
its chunks (``clear_passage_lines``), and its ratio is the "cold lines"
column. Reset
cost is timed apart (GEM's reset samples a dataset row; putting GEM on the
same question afterwards, through its ``set_state``, stays outside the clock).

Part 2, agentenvs alone: mean reset ms, search-turn ms and turns/s with the
in-process retriever and through HTTP (a retrieval_index server started in
this process over the same index, or ``--server URL``).

Part 1 times by the CPU time of the benchmark's thread (``--clock cpu``,
the default; both sides run in it), so that on a shared machine the time
other processes hold the cores is not counted to either; ``--clock wall``
times by wall time. Part 2 takes wall time, as its server answers from
another thread. ``--out`` writes the printed tables.

    python benchmarks/bench_search.py [--episodes 100] [--passages 100000] [--repeats 9]
                                      [--chunk 10] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from agentenvs.envs.search.env import SearchEnv
from agentenvs.envs.search.expert import SearchExpert
from agentenvs.envs.search.questions import STYLES
from agentenvs.envs.search.tasks import builtin_retriever


@dataclass(frozen=True)
class Episode:
    """One played episode: the question's reset seed, the responses, the golden answers."""

    seed: int
    responses: tuple[str, ...]
    golden_answers: tuple[str, ...]


def expert_episodes(env: SearchEnv, episodes: int) -> list[Episode]:
    played = []
    for seed in range(episodes):
        obs, info = env.reset(seed=seed)
        expert = SearchExpert(env)
        responses, done = [], False
        while not done:
            responses.append(expert.act(obs, info))
            obs, _, terminated, truncated, info = env.step(responses[-1])
            done = terminated or truncated
        played.append(Episode(seed, tuple(responses), tuple(env.question.golden_answers)))
    return played


@dataclass
class Timing:
    reset_s: float = 0.0
    step_s: float = 0.0
    search_s: float = 0.0
    turns: int = 0
    searches: int = 0

    def add(self, other: Timing) -> None:
        self.reset_s += other.reset_s
        self.step_s += other.step_s
        self.search_s += other.search_s
        self.turns += other.turns
        self.searches += other.searches


def replay(
    reset: Callable[[Episode], Any],
    step: Callable[[str], Any],
    episodes: list[Episode],
    after_reset: Callable[[Episode], Any] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Time ``reset`` and every ``step`` of the played episodes (``after_reset`` runs outside the clock)."""
    timing = Timing()
    for episode in episodes:
        start = clock()
        reset(episode)
        timing.reset_s += clock() - start
        if after_reset is not None:
            after_reset(episode)
        for response in episode.responses:
            start = clock()
            step(response)
            elapsed = clock() - start
            timing.step_s += elapsed
            if "<search>" in response:
                timing.search_s += elapsed
                timing.searches += 1
        timing.turns += len(episode.responses)
    return timing


def gem_env(retriever: Any, topk: int, episodes: list[Episode]) -> Any:
    """GEM's search-tool QA env, its search tool calling ``retriever`` in process."""
    from datasets import Dataset
    from gem.envs.qa_env import QaEnv
    from gem.tools.search_tool import SearchTool
    from gem.tools.tool_env_wrapper import ToolEnvWrapper

    class InProcessSearchTool(SearchTool):
        def _search(self, query: str) -> str:
            hits = retriever.retrieve([query], self.topk)[0]
            return self._passages2string([{"document": {"contents": hit.passage.contents}} for hit in hits])

    rows = {"question": [str(e.seed) for e in episodes], "answer": [list(e.golden_answers) for e in episodes]}
    with contextlib.redirect_stderr(io.StringIO()):  # datasets' progress bar for the prompt map
        env = QaEnv(dataset=Dataset.from_dict(rows))
    return ToolEnvWrapper(env, [InProcessSearchTool(topk=topk)], max_tool_uses=None)


CLOCKS = {"cpu": time.thread_time, "wall": time.perf_counter}


def versus_gem(
    style: str, passages: int, episodes: int, repeats: int, chunk: int, clock: Callable[[], float]
) -> list[str] | str:
    """One table row's cells for ``style``, or why GEM did not run.

    A pass replays the episodes in chunks of ``chunk``, the three sides taking turns chunk by chunk (in
    an order that turns from chunk to chunk), so that a shared machine's changing load falls on all of
    them alike; each side's pass is the sum of its chunks, and the query cache (and for the cold side
    its kept lines) is cleared before each chunk.
    """
    try:
        import gem  # noqa: F401
    except ImportError:
        return "gem-llm not installed (pip install 'agentenvs[bench-peers]'): GEM not run"
    env = SearchEnv(style, split="test", corpus_passages=passages)
    played = expert_episodes(env, min(episodes, env.task_source.size("test")))
    peer = gem_env(env.retriever, env.topk, played)
    # the cold side is an env of its own (over the same index), so that clearing its lines leaves ours kept
    cold = SearchEnv(style, split="test", corpus_passages=passages)
    scorer = env.retriever.scorer
    assert cold.retriever is env.retriever
    ours_rates, gem_rates, ratios, cold_ratios, ours_resets, gem_resets = [], [], [], [], [], []
    # GEM's reset samples a dataset row; its set_state then puts it on the episode's question
    sides = (
        (lambda e: env.reset(seed=e.seed), env.step, None, ours_resets, None),
        (lambda e: peer.reset(), peer.step,
         lambda e: peer.env.set_state({"first_obs": str(e.seed), "answer": list(e.golden_answers)}),
         gem_resets, None),
        # resets: timed above
        (lambda e: cold.reset(seed=e.seed), cold.step, None, [], cold.clear_passage_lines),
    )  # fmt: skip
    chunks = [played[start : start + chunk] for start in range(0, len(played), chunk)]
    for _ in range(repeats):
        passes = [Timing() for _ in sides]
        for number, part in enumerate(chunks):
            # the side that goes first meets the chunk's index pages and passages out of the CPU caches:
            # the order turns with each chunk, so that each side goes first as often
            for side in range(number, number + len(sides)):
                (reset, step, after_reset, _, before_pass), total = (
                    sides[side % len(sides)],
                    passes[side % len(sides)],
                )
                scorer.clear_cache()
                if before_pass is not None:
                    before_pass()
                total.add(replay(reset, step, part, after_reset, clock))
        rates = [timing.turns / timing.step_s for timing in passes]
        for (*_, resets, _), timing in zip(sides, passes, strict=False):
            resets.append(1e6 * timing.reset_s / len(played))
        ours_rates.append(rates[0])
        gem_rates.append(rates[1])
        ratios.append(rates[0] / rates[1])
        cold_ratios.append(rates[2] / rates[1])
    turns = sum(len(e.responses) for e in played)
    return [
        style, str(len(played)), str(turns),
        f"{statistics.median(ours_rates):,.0f}", f"{statistics.median(gem_rates):,.0f}",
        f"{statistics.median(ratios):.2f}", f"{min(ratios):.2f}", f"{statistics.median(cold_ratios):.2f}",
        f"{statistics.median(ours_resets):.0f}", f"{statistics.median(gem_resets):.0f}",
    ]  # fmt: skip


def alone(env: SearchEnv, episodes: int) -> tuple[float, float, float, int]:
    """Mean reset ms, mean search-turn ms, turns per second, turns played."""
    played = expert_episodes(env, episodes)
    if hasattr(env.retriever, "scorer"):  # a server client holds no cache here
        env.retriever.scorer.clear_cache()
    timing = replay(lambda e: env.reset(seed=e.seed), env.step, played)
    search_ms = 1e3 * timing.search_s / max(timing.searches, 1)
    return 1e3 * timing.reset_s / len(played), search_ms, timing.turns / timing.step_s, timing.turns


def table_of(title: str, columns: tuple[str, ...], rows: list[list[str]]) -> Table:
    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(*row)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=9, help="alternating ours/GEM passes")
    parser.add_argument("--chunk", type=int, default=10, help="episodes per turn of each side within a pass")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="part 1's clock: this thread's CPU time (default) or wall time")  # fmt: skip
    parser.add_argument("--server", default=None, help="retrieval server URL over the same corpus")
    parser.add_argument("--skip-server", action="store_true", help="part 1 only")
    parser.add_argument("--out", help="also write the tables to this file")
    args = parser.parse_args()
    console = Console(record=True, width=160)
    emit: Callable[[Any], None] = console.print
    emit(
        "Search QA turns, agentenvs beside GEM (gem-llm 0.1.0), in process, same responses, same BM25 index;"
    )
    clock = "this thread's CPU time" if args.clock == "cpu" else "wall time"
    emit(
        f"{clock} on a shared 2-core machine (load average {os.getloadavg()[0]:.1f}), "
        "passes alternating in one run;"
    )
    emit("agentenvs alone: wall time (its server answers from another thread).")
    rows, notes = [], []
    for style in STYLES:
        row = versus_gem(style, args.passages, args.episodes, args.repeats, args.chunk, CLOCKS[args.clock])
        (notes.append(row) if isinstance(row, str) else rows.append(row))
        if isinstance(row, str):
            break
    columns = ("set", "episodes", "turns", "agentenvs turns/s", "GEM turns/s", "ratio median",
               "ratio lowest", "cold lines ratio", "agentenvs reset µs", "GEM reset µs")  # fmt: skip
    if rows:
        title = (
            f"agentenvs ÷ GEM, {args.passages:,} passages, median of {args.repeats} passes "
            f"alternating every {args.chunk} episodes"
        )
        emit(table_of(title, columns, rows))
    for note in notes:
        emit(note)
    if not args.skip_server:
        with contextlib.ExitStack() as stack:
            if args.server is None:
                from retrieval_index.server import ServerThread, create_app

                app = create_app(builtin_retriever(args.passages, 0), kind="bm25")
                server = ("local server", stack.enter_context(ServerThread(app)))
            else:
                server = ("server", args.server)
            rows = []
            for style in STYLES:
                for name, spec in (("in-process BM25", None), server):
                    env = SearchEnv(style, split="test", corpus_passages=args.passages, retriever=spec)
                    reset_ms, search_ms, rate, turns = alone(
                        env, min(args.episodes, env.task_source.size("test"))
                    )
                    rows.append(
                        [style, name, f"{reset_ms:.3f}", f"{search_ms:.2f}", f"{rate:,.0f}", str(turns)]
                    )
        columns = ("set", "retriever", "reset ms", "search turn ms", "turns/s", "turns")
        emit(table_of(f"agentenvs alone, {args.passages:,} passages, expert episodes", columns, rows))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(console.export_text())


if __name__ == "__main__":
    main()

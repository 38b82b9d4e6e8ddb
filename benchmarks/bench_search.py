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
alike, and a side's pass is the sum of its chunks. The retriever's query
cache is cleared before every chunk, so every side searches the same queries
cold. The table gives GEM's median turns/s and the median ratio of the
rounds by each clock (agentenvs ÷ GEM, ≥ 1 = ours is cheaper). agentenvs
keeps each retrieved corpus row's information line, and each result's
information text and obs_key, from chunk to chunk (as it does from episode
to episode, and for every env of the process over the same retriever, as
the rollouts of a group meet the same passages): the "kept" columns; the
third side, a second env over the same index with lines of its own, clears
them before each of its chunks (``clear_passage_lines``): the "cold"
columns, every search's passages new to it. Reset cost is timed apart
(GEM's reset samples a dataset row; putting GEM on the same question
afterwards, through its ``set_state``, stays outside the clock).

Where a search turn's time goes (the first set): process CPU µs per search
turn of each side (ours with the lines cold, and kept from its cold pass),
and of its parts timed alone over the same queries: the BM25 search both
sides call (the query cache cleared), reading the passages (GEM:
``retrieve``'s rows with their passages, beyond the search; ours: title and
text of each row, with the corpus store's collapsed flag), ours' check that
the joined lines are whitespace-collapsed already (the rows' flags, else a
scan of the lines), the obs_key's digest of the collapsed text, and ours'
information text and obs_key made from the rows (reads and check included;
kept: every result found again), and ours' contract work that GEM's env does
not do: the state key, the potentials and the info, timed in place as ours'
cold search turn less the same env's with that work replaced by constants; the
rest is each side's own turn (parsing, formatting, rewards, transitions).

Part 2, agentenvs alone: mean reset ms, search-turn ms and turns/s with the
in-process retriever and through HTTP (a retrieval_index server started in
this process over the same index, or ``--server URL``).

Part 1 reads three clocks around each episode's steps (its reset, and GEM's
``set_state``, outside them): the CPU time of the benchmark's thread, the
process's CPU time over all its threads (``time.process_time``), and wall
time; each column pair gives the median ratio of the rounds by one clock
(agentenvs ÷ GEM turns/s, ≥ 1 = ours is cheaper), lines kept and lines
cold. A search that spent time in another thread (a pool, a native library's
workers) would show as a process CPU ratio below the thread's; a line under
the table gives the CPU the process spent outside the benchmark's thread
during part 1, and the threads it ran. Resets are timed by process CPU.
Part 2 takes wall time, as its server answers from another thread. The
closing line gives the machine's cores and load average before and after
the run. ``--out`` writes the printed tables.

    python benchmarks/bench_search.py [--episodes 100] [--passages 100000] [--repeats 9]
                                      [--chunk 10] [--styles nq ...] [--skip-server] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from run_record import run_conditions

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
) -> Timing:
    """Time ``reset`` and every ``step`` of the played episodes by wall time (``after_reset`` runs outside
    the clock)."""
    clock = time.perf_counter
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


# part 1's clocks, read together around each episode's steps
CLOCKS = {"thread CPU": time.thread_time, "process CPU": time.process_time, "wall": time.perf_counter}


def read_clocks() -> list[float]:
    return [clock() for clock in CLOCKS.values()]


def replay_by_clocks(
    reset: Callable[[Episode], Any],
    step: Callable[[str], Any],
    episodes: list[Episode],
    after_reset: Callable[[Episode], Any] | None = None,
) -> tuple[float, list[float]]:
    """Process CPU seconds in ``reset``, and seconds in the steps by each of :data:`CLOCKS`.

    The clocks are read around each episode's steps rather than each step, so that reading three clocks
    (two of them system calls) adds little to a turn of tens of microseconds.
    """
    reset_s, step_s = 0.0, [0.0] * len(CLOCKS)
    for episode in episodes:
        started = time.process_time()
        reset(episode)
        reset_s += time.process_time() - started
        if after_reset is not None:
            after_reset(episode)
        before = read_clocks()
        for response in episode.responses:
            step(response)
        for number, (now, then) in enumerate(zip(read_clocks(), before, strict=True)):
            step_s[number] += now - then
    return reset_s, step_s


def versus_gem(style: str, passages: int, episodes: int, repeats: int, chunk: int) -> list[str] | str:
    """One table row's cells for ``style``, or why GEM did not run.

    A pass replays the episodes in chunks of ``chunk``, the three sides taking turns chunk by chunk (in
    an order that turns from chunk to chunk), so that a shared machine's changing load falls on all of
    them alike; each side's pass is the sum of its chunks, and the query cache (and for the cold side
    its kept lines) is cleared before each chunk. Each ratio is the median over the passes, by each of
    :data:`CLOCKS`.
    """
    try:
        import gem  # noqa: F401
    except ImportError:
        return "gem-llm not installed (pip install 'agentenvs[bench-peers]'): GEM not run"
    env = SearchEnv(style, split="test", corpus_passages=passages)
    played = expert_episodes(env, min(episodes, env.task_source.size("test")))
    peer = gem_env(env.retriever, env.topk, played)
    # the cold side is an env of its own (over the same index) with lines of its own, so that clearing them
    # leaves ours kept
    cold = with_own_passage_lines(SearchEnv(style, split="test", corpus_passages=passages))
    scorer = env.retriever.scorer
    assert cold.retriever is env.retriever
    # GEM's reset samples a dataset row; its set_state then puts it on the episode's question
    sides = (
        (lambda e: env.reset(seed=e.seed), env.step, None, None),
        (lambda e: peer.reset(), peer.step,
         lambda e: peer.env.set_state({"first_obs": str(e.seed), "answer": list(e.golden_answers)}), None),
        (lambda e: cold.reset(seed=e.seed), cold.step, None, cold.clear_passage_lines),
    )  # fmt: skip
    chunks = [played[start : start + chunk] for start in range(0, len(played), chunk)]
    turns = sum(len(e.responses) for e in played)
    kept_ratios: list[list[float]] = [[] for _ in CLOCKS]
    cold_ratios: list[list[float]] = [[] for _ in CLOCKS]
    gem_rates, ours_resets, gem_resets = [], [], []
    for _ in range(repeats):
        resets, steps = [0.0] * len(sides), [[0.0] * len(CLOCKS) for _ in sides]
        for number, _part in enumerate(chunks):
            # the side that goes first meets the chunk's index pages and passages out of the CPU caches:
            # the order turns with each chunk, so that each side goes first as often
            for turn in range(number, number + len(sides)):
                side = turn % len(sides)
                reset, step, after_reset, before_chunk = sides[side]
                scorer.clear_cache()
                if before_chunk is not None:
                    before_chunk()
                reset_s, step_s = replay_by_clocks(reset, step, chunks[number], after_reset)
                resets[side] += reset_s
                steps[side] = [total + part for total, part in zip(steps[side], step_s, strict=True)]
        for clock in range(len(CLOCKS)):
            # turns/s ratio = the peer's seconds ÷ ours, the turns being the same
            kept_ratios[clock].append(steps[1][clock] / steps[0][clock])
            cold_ratios[clock].append(steps[1][clock] / steps[2][clock])
        gem_rates.append(turns / steps[1][1])
        ours_resets.append(1e6 * resets[0] / len(played))
        gem_resets.append(1e6 * resets[1] / len(played))
    ratio_cells = [
        f"{statistics.median(ratios[clock]):.2f}"
        for clock in range(len(CLOCKS))
        for ratios in (kept_ratios, cold_ratios)
    ]
    return [
        style, str(len(played)), str(turns), f"{statistics.median(gem_rates):,.0f}", *ratio_cells,
        f"{statistics.median(ours_resets):.0f}", f"{statistics.median(gem_resets):.0f}",
    ]  # fmt: skip


def search_turn_parts(style: str, passages: int, episodes: int, rounds: int = 5) -> list[list[str]]:
    """Rows of the breakdown table: process CPU µs per search turn of each side (lines cold), and of
    the parts of it timed alone over the same queries (medians of ``rounds`` alternating rounds)."""
    from agentenvs.core.keys import text_digest
    from agentenvs.envs.search.env import PassageLines, bounded_query, corpus_line_parts
    from agentenvs.envs.search.protocol import SearchProtocol
    from retrieval_index.corpus import is_collapsed

    env = SearchEnv(style, split="test", corpus_passages=passages)
    played = expert_episodes(env, min(episodes, env.task_source.size("test")))
    peer = gem_env(env.retriever, env.topk, played)
    bare = with_own_passage_lines(
        without_contract_work(SearchEnv(style, split="test", corpus_passages=passages))
    )
    retriever, scorer, corpus = env.retriever, env.retriever.scorer, env.retriever.corpus
    protocol = SearchProtocol()
    queries = [
        bounded_query(parsed.actions[0][7:-1].strip())
        for episode in played
        for parsed in map(protocol.parse, episode.responses)
        if parsed.error is None and parsed.actions[0].startswith("search[")
    ]
    hits = [scorer.search(query, env.topk)[0].tolist() for query in queries]
    read = [[corpus_line_parts(corpus, row) for row in rows] for rows in hits]
    # each search's lines joined by a space: what the collapse check reads, and inside what the digest hashes
    spaced = [
        " ".join(f"Doc {i}(Title: {title}) {text}" for i, (title, text, _) in enumerate(lines, 1))
        for lines in read
    ]
    hashed = [f"<information>{text}</information>" for text in spaced]

    def turns_of(side: str) -> float:
        """Process CPU seconds in the side's search turns; ``ours kept`` keeps the lines ``ours`` made,
        ``ours bare`` (lines cold) is ours without its contract work."""
        scorer.clear_cache()
        ours = bare if side == "ours bare" else env
        if side in ("ours", "ours bare"):
            ours.clear_passage_lines()
        spent = 0.0
        for episode in played:
            if side == "gem":
                peer.reset()
                peer.env.set_state({"first_obs": str(episode.seed), "answer": list(episode.golden_answers)})
            else:
                ours.reset(seed=episode.seed)
            step = peer.step if side == "gem" else ours.step
            for response in episode.responses:
                started = time.process_time()
                step(response)
                if "<search>" in response:
                    spent += time.process_time() - started
        return spent

    def searches() -> float:
        scorer.clear_cache()
        started = time.process_time()
        for query in queries:
            scorer.search(query, env.topk)
        return time.process_time() - started

    def information_texts(lines: PassageLines) -> None:
        for rows in hits:
            lines.information(rows, lambda row: corpus_line_parts(corpus, row))

    def timed(call: Callable[[], Any]) -> float:
        started = time.process_time()
        call()
        return time.process_time() - started

    names = ("ours", "ours kept", "ours bare", "gem", "search", "gem reads", "our reads", "collapse check",
             "obs_key digest", "our lines", "our kept lines")  # fmt: skip
    parts: dict[str, list[float]] = {name: [] for name in names}
    for number in range(rounds):
        sides = ("ours", "ours kept", "ours bare", "gem")
        for side in sides if number % 2 == 0 else sides[::-1]:
            parts[side].append(turns_of(side))
        parts["search"].append(searches())
        # retrieve right after the searches: a cache lookup, then the rows' passages read and wrapped
        parts["gem reads"].append(timed(lambda: [retriever.retrieve([query], env.topk) for query in queries]))
        parts["our reads"].append(
            timed(lambda: [[corpus_line_parts(corpus, row) for row in rows] for rows in hits])
        )
        # ours' rule: the store's flags of the rows, else the check of the joined lines
        parts["collapse check"].append(
            timed(
                lambda: [
                    all([line[2] for line in lines]) or is_collapsed(text)
                    for lines, text in zip(read, spaced, strict=True)
                ]
            )
        )
        parts["obs_key digest"].append(timed(lambda: [text_digest(text) for text in hashed]))
        fill = functools.partial(information_texts, PassageLines())  # every row new to it, as when cold
        parts["our lines"].append(timed(fill))
        parts["our kept lines"].append(timed(fill))  # the second time every result is kept
    per_search = {name: 1e6 * statistics.median(values) / len(queries) for name, values in parts.items()}
    search = per_search["search"]

    # ours' contract work, in place: its cold turn less the turn of the same env without that work
    per_search["contract"] = per_search["ours"] - per_search["ours bare"]

    def cells(side: str, turn: str, reads: str, own: tuple[str, ...], lines: str, contract: str) -> list[str]:
        figures = [per_search[name] if name else None for name in (reads, *own, lines, contract)]
        rest = (
            per_search[turn] - search - per_search[lines or reads] - (per_search[contract] if contract else 0)
        )
        shown = ["—" if figure is None else f"{figure:.1f}" for figure in figures]
        return [side, f"{per_search[turn]:.1f}", f"{search:.1f}", *shown, f"{rest:.1f}"]

    own = ("collapse check", "obs_key digest")
    return [
        cells("GEM", "gem", "gem reads", ("", ""), "", ""),
        cells("agentenvs, lines cold", "ours", "our reads", own, "our lines", "contract"),
        cells("agentenvs, lines kept", "ours kept", "", ("", ""), "our kept lines", "contract"),
    ]


def with_own_passage_lines(env: SearchEnv) -> SearchEnv:
    """``env`` with passage lines of its own in place of those every env of the process over its
    retriever shares, so that clearing them leaves the other sides' lines kept (for timing alone)."""
    from agentenvs.envs.search.env import PassageLines

    env._passages = PassageLines()
    return env


def without_contract_work(env: SearchEnv) -> SearchEnv:
    """``env`` with the per-turn work of the env contract that GEM's env does not do replaced by
    constants, for timing alone: the state key, the potentials and the info (its obs_key, privileged
    information, success and score). The information text's obs_key digest is still made (it is timed
    apart); rewards and keys of this env are wrong, and it is used for nothing else."""
    env._compute_state_key = lambda: ""
    env._potentials = lambda: {}
    env._info = lambda *args, **kwargs: {}
    return env


PARTS_COLUMNS = ("side", "search turn", "BM25 search", "reading passages", "collapse check", "obs_key digest",
                 "information text + obs_key (ours' reads included)",
                 "contract work (state key, potentials, info)", "rest of the turn")  # fmt: skip


VERSUS_GEM_COLUMNS = (
    "set", "episodes", "turns", "GEM turns/s, process CPU",
    *(f"{clock} {lines}" for clock in CLOCKS for lines in ("kept", "cold")),
    "agentenvs reset µs", "GEM reset µs",
)  # fmt: skip


def threads_now() -> str:
    """The process's threads, by their kernel names (Linux), e.g. ``2 (python, python)``."""
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return f"{threading.active_count()} Python threads"
    names = [(task / "comm").read_text().strip() for task in sorted(tasks.iterdir())]
    return f"{len(names)} ({', '.join(names)})"


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
    parser.add_argument("--styles", nargs="+", choices=STYLES, default=list(STYLES), help="sets to play")
    parser.add_argument("--server", default=None, help="retrieval server URL over the same corpus")
    parser.add_argument("--skip-server", action="store_true", help="part 1 only")
    parser.add_argument("--out", help="also write the tables to this file")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    console = Console(record=True, width=170)
    emit: Callable[[Any], None] = console.print
    emit(
        "Search QA turns, agentenvs beside GEM (gem-llm 0.1.0), in process, same responses, same BM25 index;"
    )
    emit(
        "ratios agentenvs ÷ GEM turns/s (≥ 1: ours is cheaper) by this thread's CPU, the process's CPU "
        "(all threads) and wall time; kept: ours keeps its passage lines from pass to pass, cold: cleared "
        "before each chunk"
    )
    emit("agentenvs alone: wall time (its server answers from another thread).")
    rows, notes = [], []
    process_start, thread_start = time.process_time(), time.thread_time()
    for style in args.styles:
        row = versus_gem(style, args.passages, args.episodes, args.repeats, args.chunk)
        (notes.append(row) if isinstance(row, str) else rows.append(row))
        if isinstance(row, str):
            break
    other_threads = (time.process_time() - process_start) - (time.thread_time() - thread_start)
    if rows:
        title = (
            f"agentenvs ÷ GEM, {args.passages:,} passages, median of {args.repeats} passes "
            f"alternating every {args.chunk} episodes"
        )
        emit(table_of(title, VERSUS_GEM_COLUMNS, rows))
        emit(
            f"CPU outside the benchmark's thread during part 1: {1e3 * other_threads:.1f} ms; "
            f"threads: {threads_now()}"
        )
    for note in notes:
        emit(note)
    if rows:
        emit(
            table_of(
                f"where a search turn's CPU goes, {args.styles[0]}: process CPU µs per search turn, parts "
                "timed alone over the same queries (medians of 5 alternating rounds)",
                PARTS_COLUMNS,
                search_turn_parts(args.styles[0], args.passages, args.episodes),
            )
        )
    if not args.skip_server:
        with contextlib.ExitStack() as stack:
            if args.server is None:
                from retrieval_index.server import ServerThread, create_app

                app = create_app(builtin_retriever(args.passages, 0), kind="bm25")
                server = ("local server", stack.enter_context(ServerThread(app)))
            else:
                server = ("server", args.server)
            rows = []
            for style in args.styles:
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
    emit(run_conditions(load_before))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(console.export_text())


if __name__ == "__main__":
    main()

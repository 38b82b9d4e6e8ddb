"""BabyAI: agentenvs' text layer vs raw minigrid, in the same run.

Raw minigrid is the level instance itself (``gym.make("BabyAI-<Level>-v0")
.unwrapped``) taking integer actions; agentenvs takes the same actions as text
and adds parsing, the text observation, reward components, state key and
info. The two run in lockstep on the same seeds and the same uniformly random
actions (their worlds stay identical, as the differential test proves), each
call timed on its own, so that both see the same machine load. Rates are
1 / median time per call, which a shared machine's stalls do not skew. A
closing line gives the machine's cores and load average before and after the run.

    python benchmarks/bench_babyai.py [--steps 3000] [--resets 100] [--levels GoToLocal BossLevel]
        [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import time

import gymnasium as gym
from rich.table import Table
from run_record import print_table

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.core import derive_rng
from agentenvs.envs.babyai.describe import TEXT_ACTIONS
from agentenvs.envs.babyai.tasks import DEFAULT_MIX, make_level

DEFAULT_LEVELS = (*DEFAULT_MIX.values(), "BossLevel")


def lockstep(level: str, steps: int, resets: int) -> dict[str, list[float]]:
    """Seconds per call: raw and agentenvs resets (seeds 0..resets-1), then steps, interleaved."""
    raw = make_level(level)
    ours = gym.make(f"agentenvs/BabyAI-{level}-v0").unwrapped
    actions = derive_rng("bench_babyai", level).integers(len(TEXT_ACTIONS), size=steps).tolist()
    times: dict[str, list[float]] = {"raw_step": [], "our_step": [], "raw_reset": [], "our_reset": []}
    sink = io.StringIO()

    def reset_both(seed: int) -> None:
        started = time.perf_counter()
        with contextlib.redirect_stdout(sink):
            raw.reset(seed=seed)
        times["raw_reset"].append(time.perf_counter() - started)
        started = time.perf_counter()
        ours.reset(options={"task_id": f"{level}/{seed}"})
        times["our_reset"].append(time.perf_counter() - started)

    for seed in range(resets):
        reset_both(seed)
    seed = 0
    reset_both(seed)
    for action in actions:
        text = TEXT_ACTIONS[action]
        started = time.perf_counter()
        _, _, terminated, truncated, _ = raw.step(action)
        times["raw_step"].append(time.perf_counter() - started)
        started = time.perf_counter()
        ours.step(text)
        times["our_step"].append(time.perf_counter() - started)
        if terminated or truncated:
            seed += 1
            reset_both(seed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--resets", type=int, default=100)
    parser.add_argument("--levels", nargs="+", default=list(DEFAULT_LEVELS))
    parser.add_argument("--out", help="also write the printed table to this file")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]

    table = Table(
        title=f"BabyAI: agentenvs text layer vs raw minigrid ({args.steps} random actions per level)"
    )
    for column in (
        "level",
        "minigrid steps/s",
        "agentenvs turns/s",
        "overhead",
        "minigrid reset ms",
        "agentenvs reset ms",
    ):
        table.add_column(column, justify="left" if column == "level" else "right")
    for level in args.levels:
        median = {
            name: statistics.median(values)
            for name, values in lockstep(level, args.steps, args.resets).items()
        }
        table.add_row(
            level,
            f"{1 / median['raw_step']:,.0f}",
            f"{1 / median['our_step']:,.0f}",
            f"{median['our_step'] / median['raw_step'] - 1:+.0%}",
            f"{median['raw_reset'] * 1e3:.2f}",
            f"{median['our_reset'] * 1e3:.2f}",
        )
    print_table(table, load_before, args.out)


if __name__ == "__main__":
    main()

"""HICRA's mechanics in miniature: every token marked as planning against GRPO (direction not testable).

The paper's claim (Wang et al. 2025, HICRA, Qwen3-4B and others on math:
AIME, MATH500): amplifying the advantage of *planning tokens*, the
strategic phrases a pretrained model writes in its reasoning ("let's try a
different approach"), to Â + α·abs(Â) (α = 0.2) beats GRPO, which spreads
credit evenly over every token.

Why the direction is not testable here: a model trained from scratch on CPU
writes no reasoning and no planning phrases, so there is nothing for HICRA
to single out; any token set we picked would be ours, not the paper's
planning tokens. What can be shown is the mechanics: with *every* token
marked as planning, HICRA's advantage is Â + α·abs(Â) on every token (a
positive advantage x 1.2, a negative one x 0.8: less blame than credit),
and this ablation's effect on learning against GRPO's plain Â.

The miniature: ``baselines/configs/hicra_sokoban.yaml`` with the four action
words as its grams (``algorithm.grams=[up, down, left, right]``): each
response is one action token, so every policy token is a planning token
(``hicra/planning_token_share`` = 1 at every iteration), against
``mini_sokoban.yaml``'s GRPO; both are the tiny LM of
``mini_sokoban.yaml`` from scratch on its 8 fixed 5x5 rooms, 10 turns, with
:data:`SHARED` overrides (4 groups x 8 episodes = 32 an iteration; the
pool is cycled, so even iterations play rooms 0–3 and odd ones rooms 4–7)
and :data:`ITERATIONS` iterations (1,152 episodes), the sizes of
``archer_efficiency``; only the algorithm sections differ.

Metrics, per run (rules in :mod:`baselines.experiments.arms`): the success
curve, the final success (last :data:`WINDOW` iterations: two of each half
of the rooms), episodes to :data:`THRESHOLD` success (4x the random
policy's ≈ 0.05; an unreached run counted as its whole budget);
HICRA's planning-token share and amplified tokens per iteration.

Verdict rule (:func:`verdict`): "not testable here" always, since the
paper's planning tokens do not exist in this setting; the reason states
whether the mechanics held (the planning-token share is 1 at every
iteration of every HICRA run) and the final-success gap to GRPO.

    python -m baselines.experiments.hicra_mechanics --seeds 0 1 2 3 4 5 6 7 --out runs/hicra_mechanics
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from baselines.experiments.arms import (
    CONFIGS,
    Arm,
    arm_outcome,
    cpu_cell,
    curve_mean,
    file_success_summary,
    run_table,
)
from baselines.experiments.common import markdown_row

NAME = "hicra_mechanics"
ITERATIONS = 36
THRESHOLD = 0.2
WINDOW = 4
SHARED = ("env.num_groups=4",)
ARMS = {
    "hicra_all_planning": Arm(
        CONFIGS / "hicra_sokoban.yaml",
        ("algorithm.grams=[up, down, left, right]",),
        "HICRA, every token planning",
    ),
    "grpo": Arm(CONFIGS / "mini_sokoban.yaml", ("algorithm.estimator=grpo",), "GRPO"),
}
METRICS = ("success", "hicra/planning_token_share", "hicra/amplified_tokens")
TITLES = {"success": "success rate", "hicra/planning_token_share": "planning tokens / policy tokens"}
HICRA_ARM = "hicra_all_planning"


def summarise(results: dict[str, Any]) -> dict[str, Any]:
    """The summary from the file's curves: :func:`arms.success_summary` per arm, and for HICRA the
    smallest and largest planning-token share of any iteration of any seed and the mean amplified tokens."""
    summary = file_success_summary(results)
    shares = np.concatenate(
        [np.asarray(curve) for curve in results["curves"]["hicra/planning_token_share"][HICRA_ARM].values()]
    )
    summary[HICRA_ARM]["planning_token_share"] = {"min": float(shares.min()), "max": float(shares.max())}
    summary[HICRA_ARM]["amplified_tokens"] = curve_mean(
        results["curves"], "hicra/amplified_tokens", HICRA_ARM
    )
    return summary


def verdict(summary: dict[str, Any]) -> dict[str, str]:
    """The module docstring's rule: ``{"verdict": "not testable here", "reason": ...}``."""
    share = summary[HICRA_ARM]["planning_token_share"]
    mechanics = (
        "every token was planning at every iteration"
        if share["min"] == share["max"] == 1.0
        else f"the planning-token share ranged {share['min']:.3f}–{share['max']:.3f}, not 1"
    )
    gap = summary[HICRA_ARM]["final_success"]["mean"] - summary["grpo"]["final_success"]["mean"]
    return {
        "verdict": "not testable here",
        "reason": "a model trained from scratch writes no planning phrases; "
        f"mechanics ablation: {mechanics}, final success minus GRPO's {gap:+.3f}",
    }


def docs_row(results: dict[str, Any]) -> str:
    """The docs page's row of this table, from the results file."""
    summary = results["summary"]
    ours = "<br>".join(
        arm_outcome(ARMS[arm].label, block, results["threshold"]) for arm, block in summary.items()
    )
    cells = [
        "HICRA",
        "math (AIME, MATH500; Qwen3-4B and others): amplifying planning tokens by Â + 0.2·abs(Â) beats GRPO",
        f"tiny LM from scratch, 8 fixed 5x5 Sokoban rooms, {results['iterations']} iterations x "
        f"{results['episodes_per_iteration']} episodes; every token marked as planning vs GRPO",
        ours,
        f"{results['verdict']['verdict']}: {results['verdict']['reason']}",
        cpu_cell(results["cost"]),
    ]
    return markdown_row(cells)


def main(argv: Sequence[str] | None = None) -> int:
    return run_table(sys.modules[__name__], argv)


if __name__ == "__main__":
    raise SystemExit(main())

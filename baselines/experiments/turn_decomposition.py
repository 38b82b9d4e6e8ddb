"""Turn-decomposed against trajectory-level PPO on the Sokoban miniature: PPO-OR, PPO-MR, MT-PPO each way.

**The paper's claim** (Wei, Zeng et al. 2025, the MT-PPO paper's control; Qwen2.5-7B on TriviaQA
search, average exact match): splitting each trajectory into per-turn PPO instances loses against
training on whole trajectories: PPO-OR 0.432 → 0.335 turn-decomposed, PPO-MR 0.429 → 0.280, MT-PPO
0.447 → 0.293 (:data:`PAPER`).

**The miniature**: table 1's setting (:mod:`baselines.experiments.turn_rewards`,
``baselines/configs/paper_turn_rewards_sokoban.yaml``: 3 turns × up to 3 moves on 8 fixed 6×6
rooms of 2 moves, a tiny LM from scratch, 20 iterations × 32 episodes), so its success plays the
part of exact match. The trajectory-level arms are table 1's PPO-OR, PPO-MR and MT-PPO runs
themselves (same configs, seeds and ``--out``, read back, not retrained). What it simplifies,
besides table 1's simplifications: Sokoban instead of search, so the turn-decomposed instances
differ from the trajectory in the credit only, not in retrieved text.

**The arms** (:data:`ARMS`): each trajectory-level arm and its turn-decomposed twin, which adds
``algorithm.decomposition: turn`` (``baselines.trainers.ppo``): every turn is its own PPO instance
whose prompt is the whole episode so far (``context: full``) and whose GAE stops at its last token
(V = 0 after it); its reward is ``instance_reward: auto``, the trainer's default: the episode's last
reward under ``outcome`` and the summed return under ``summed`` on the last turn's instance only
(``last_only``), each turn's own reward under ``turn`` (``own_turn``). Optimiser settings are the
same, and ``optim.minibatch_size`` counts sequences, so a turn-decomposed run takes about three
times the optimizer steps of its twin on the same tokens (as the trainer's docstring says).

**Metrics**: :mod:`baselines.experiments.turn_rewards`' success and valid-action rate, final values
over the last ``--window`` iterations, mean ± population std over seeds.

**Verdict rule** (:func:`verdict`): for each of the three pairs, the claim "trajectory-level above
turn-decomposed" on final success holds, is reversed or is unresolved by ``turn_rewards.claim``
(gap of means against twice its standard error over seeds). The table's verdict is **holds** when
all three hold, **not testable here** when no run of the six arms solves a room in its last
``--window`` iterations, and **does not hold** otherwise.

The results file ``<results>/turn_decomposition.json`` and ``turn_decomposition.png``, as in
:mod:`baselines.experiments.turn_rewards`::

    python -m baselines.experiments.turn_decomposition --seeds 0 1 2 3 4 5 6 7

Seed 0 reruns bit for bit (pinned numerics, :mod:`baselines.experiments.common`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from baselines.experiments.arms import Arm, cpu_cell
from baselines.experiments.common import markdown_row
from baselines.experiments.turn_rewards import ARMS as TURN_REWARD_ARMS
from baselines.experiments.turn_rewards import (
    METRICS,
    arm_figures,
    claims,
    gap_text,
    nothing_learnt,
    run_turn_table,
    table_verdict,
)

NAME = "turn_decomposition"
TRAJECTORY_ARMS = ("ppo_or", "ppo_mr", "mt_ppo")


def decomposed(arm: Arm) -> Arm:
    """The turn-decomposed twin of a trajectory-level PPO arm."""
    return Arm(arm.config, (*arm.overrides, "algorithm.decomposition=turn"), f"Turn-Decomposed {arm.label}")


# Each trajectory-level arm (the same runs as turn_rewards.py's), then its turn-decomposed twin.
ARMS = {
    name: arm
    for trajectory in TRAJECTORY_ARMS
    for name, arm in (
        (trajectory, TURN_REWARD_ARMS[trajectory]),
        (f"{trajectory}_turn", decomposed(TURN_REWARD_ARMS[trajectory])),
    )
}
PAIRS = tuple((trajectory, f"{trajectory}_turn") for trajectory in TRAJECTORY_ARMS)
PAPER = {
    "setting": "Qwen2.5-7B, TriviaQA search, average exact match",
    "exact_match": {
        "ppo_or": 0.432,
        "ppo_or_turn": 0.335,
        "ppo_mr": 0.429,
        "ppo_mr_turn": 0.280,
        "mt_ppo": 0.447,
        "mt_ppo_turn": 0.293,
    },
}


def verdict(summary: Mapping[str, Any], window: int) -> dict[str, Any]:
    """The table's verdict from the summary (rule in the module docstring), and the claims behind it."""
    labels = {arm: spec.label for arm, spec in ARMS.items()}
    per_metric = {metric: {"pair_claims": claims(summary[metric], PAIRS)} for metric in METRICS}
    return {
        **table_verdict(
            per_metric["success"]["pair_claims"], nothing_learnt(summary["success"]), labels, window
        ),
        "claims": per_metric,
    }


def docs_row(results: Mapping[str, Any]) -> str:
    """The page's row: title, the paper's figures, the miniature, ours per pair, the verdict, the CPU cost."""
    paper, labels = results["paper"], results["labels"]
    exact = paper["exact_match"]
    drops = ", ".join(f"{labels[high]} {exact[high]:.3f} → {exact[low]:.3f}" for high, low in PAIRS)
    success = arm_figures(results, "success", "success", 3)
    ours = "<br>".join(f"{labels[arm]}: {success[arm]}" for arm in labels)
    judged = results["verdict"]
    cells = [
        "Turn-decomposed against trajectory PPO (MT-PPO paper)",
        f"{paper['setting']}: {drops} turn-decomposed",
        f"table 1's miniature, success for exact match: {results['miniature']}; a decomposed run trains "
        "one sequence per turn, so about 3× the optimizer steps of its twin",
        ours,
        f"{judged['verdict']}: {judged['reason']}",
        f"{cpu_cell(results['cost'])}, the trajectory-level ones shared with table 1",
    ]
    return markdown_row(cells)


def print_table(results: Mapping[str, Any]) -> None:
    """Each arm's final success and valid-action rate, then each pair's claim and the verdict."""
    labels = results["labels"]
    for arm in labels:
        print(f"{labels[arm]:28s} success {arm_figures(results, 'success', '', 3)[arm]}")
    for c in results["verdict"]["claims"]["success"]["pair_claims"]:
        print(f"{labels[c['above']]} > {labels[c['below']]}: {gap_text(c)} {c['outcome']}")
    print(f"verdict: {results['verdict']['verdict']} ({results['verdict']['reason']})")


def main(argv: Sequence[str] | None = None) -> int:
    return run_turn_table(sys.modules[__name__], argv)


if __name__ == "__main__":
    raise SystemExit(main())

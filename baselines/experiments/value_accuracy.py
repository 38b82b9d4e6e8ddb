"""VinePPO's value-accuracy table in miniature: PPO's critic against K Monte-Carlo rollouts, from snapshots.

**The paper's claim** (Kazemnejad et al. 2024, VinePPO, its value-prediction analysis on MATH):
against a ground truth of 256 rollouts from the same state, PPO's value network is
within 0.05 of the truth on at most 65% of the states, VinePPO's K-rollout estimate on 70–90%; and
asked to pick the best of 5 next steps, the PPO critic does about as well as chance.

**The miniature** (``baselines/configs/paper_value_ppo.yaml``): PPO with a critic trains the tiny
model of ``mini_sokoban.yaml`` from scratch on its 8 fixed 5x5 rooms, 10 turns of one move, with the
outcome as the only reward (1 on the step that solves the room), so that a value is a success
probability in [0, 1] as the paper's values are probabilities of a correct answer; GAE with
γ = λ = 1, so the critic learns the undiscounted return to go, the quantity VinePPO's rollouts
estimate. After every ``--every``-th iteration (10, 20, 30 by default) the experiment pauses the run
(``TrainingRun.train``'s ``progress`` hook, after the sampler took the new weights; it draws only from
its own ``derive_seed`` streams, so the run trains exactly as without it) and measures, for the
current policy π:

1. **root states**: one episode of π in each room (``RolloutEngine.collect`` with snapshots), and one
   turn of each episode drawn uniformly: ``--roots`` states, the states π visits;
2. **candidates**: from each root, each of the 4 moves is tried from its snapshot; the distinct
   next states (moves into a wall that leave the room as it was give one state) are the candidate
   next steps, their Q(s, a) = r(s, a) + V(s') (V = 0 once the move ended the episode);
3. per state: the **truth** V^π(s), the mean return of M = ``--truth-rollouts`` (256, the paper's)
   rollouts of π from its snapshot, with its standard error √(v(1 − v)/M) (at most 0.031: the
   results file records the mean); **PPO's critic** V_φ(s), the value head on the prompt of s (the
   value before its first response token, as PPO's GAE reads it); **VinePPO's estimate**, the mean
   return of K = ``--estimate-rollouts`` other rollouts of π (4 by default: ``vineppo_sokoban.yaml``'s
   K, the estimator VinePPO trains with here).

What it simplifies (ours): VinePPO's estimator is applied to the PPO run's policy at the very same
states as the critic (a paired comparison, one truth per state): the paper measured each method on
the checkpoints of its own run; the K-rollout mean of a policy does not depend on which run made the
policy, and sharing the states halves the cost. The critic sees what the policy sees, the room (the
compact prompt), not the turns left, although the truth depends on them (a room with 2 turns left is
worth less than with 8); the paper's critic reads the whole solution so far. The 4 moves stand for
the paper's 5 sampled next steps (the env has 4).

**Metrics**, per measurement point and estimator (the per-point curves are in the results file):

- ``within``: the share of root states whose estimate is within ``--tolerance`` (0.05) of the truth,
  abs(estimate − truth) ≤ 0.05;
- ``mae``: the mean abs(estimate − truth) over the root states;
- ``pick``: over the root states whose candidates' truths have a unique maximum and at least two
  candidates (``counted``), the expected share where the estimator picks the truly best candidate,
  argmax_a r(s, a) + V̂(s'_a); an estimator that ties several candidates picks among them uniformly,
  so a tie counts (best among the tied)/(tied); ``chance`` is the mean of 1/(candidates) over the same
  states.

Per seed the summary pools the points: ``within`` and ``mae`` are means over the points (each has
``--roots`` states), ``pick`` and ``chance`` are weighted by each point's ``counted``; over seeds, the
mean, the population std, the range and the number of seeds (:func:`summarise`).

**Verdict rule** (:func:`verdict`): the direction *holds* when the mean over seeds of VinePPO's
``within`` share exceeds the PPO critic's, else *does not hold*. The best-of part is stated beside
it: the critic is *near chance* when its pooled pick accuracy exceeds chance by less than 0.1 (ours:
the paper gives no margin), and VinePPO *beats the critic* at picking when its mean pick accuracy
exceeds the critic's.

Cost, per run: CPU and wall seconds (``cost.json`` of the run folder: the whole run, measurements
included, and the measurements alone), env steps and generations (one sampled response per env step)
of training and of the measurements, and the measurements' rollouts from snapshots.

    python -m baselines.experiments.value_accuracy --seeds 0 1 2 3 4 5 6 7 --out runs/value_accuracy

A seed's run whose measurement file under ``--out`` is complete for these settings is read back,
not retrained; an incomplete one is retrained from iteration 0. The numbers are bit-reproducible on
any x86-64 machine with AVX2 (pinned numerics, :mod:`baselines.experiments.common`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from agentenvs.core import derive_rng, derive_seed
from agentenvs.core.env import agent_env
from agentenvs.vector import GroupedVectorEnv
from baselines.experiments.common import (
    COST_FILE,
    PINNED_TORCH_THREADS,
    environment_is_pinned,
    experiment_parser,
    markdown_row,
    pin_numerics,
    run_pinned,
    save_figure,
    seed_count,
)
from baselines.metrics import read_jsonl
from baselines.rollout import RolloutBatch, RolloutEngine, Trajectory, Turn
from baselines.trainers.branches import mean_returns
from baselines.trainers.config import ConfigError, TrainConfig, load_config
from baselines.trainers.ppo import PPO
from baselines.trainers.run import TrainingRun
from baselines.trainers.sampler import make_engine

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
CONFIG = CONFIGS / "paper_value_ppo.yaml"
VINEPPO_CONFIG = CONFIGS / "vineppo_sokoban.yaml"
RESULTS_NAME = "value_accuracy"
MEASUREMENTS_FILE = "value_accuracy.json"
ESTIMATORS = {"critic": "PPO critic", "estimate": "VinePPO K-rollout mean"}
NEAR_CHANCE_MARGIN = 0.1
MAX_BRANCH_ENVS = 4096


def within_share(estimates: Sequence[float], truths: Sequence[float], tolerance: float) -> float:
    """The share of states with abs(estimate − truth) ≤ ``tolerance`` (1e-12 of slack, so that an error
    that is the tolerance in decimals, abs(0.55 − 0.50) = 0.05000000000000004 in floats, counts)."""
    errors = np.abs(np.asarray(estimates, dtype=np.float64) - np.asarray(truths, dtype=np.float64))
    return float(np.mean(errors <= tolerance + 1e-12))


def truth_standard_error(value: float, rollouts: int) -> float:
    """√(v(1 − v)/M): the standard error of a mean of M returns in {0, 1} whose mean is v."""
    return math.sqrt(max(value * (1.0 - value), 0.0) / rollouts)


def pick_outcome(truths: Sequence[float], estimates: Sequence[float]) -> tuple[float, float] | None:
    """(expected pick accuracy, chance) of one root state's candidates; None when not counted.

    Counted when there are at least two candidates and the truths have a unique maximum. The
    estimator picks uniformly among its own maxima: the accuracy is the share of them that is the
    truly best candidate; chance is 1/(candidates).
    """
    truths = np.asarray(truths, dtype=np.float64)
    estimates = np.asarray(estimates, dtype=np.float64)
    if truths.size < 2 or np.sum(truths == truths.max()) != 1:
        return None
    picked = np.flatnonzero(estimates == estimates.max())
    return float(np.mean(picked == int(np.argmax(truths)))), 1.0 / truths.size


def candidate_q(candidate: dict[str, Any], estimator: str) -> float:
    """Q(s, a) = r(s, a) + V(s'), V = 0 after a move that ended the episode."""
    return candidate["reward"] + (0.0 if candidate["done"] else candidate[estimator])


def point_metrics(roots: Sequence[dict[str, Any]], tolerance: float, rollouts: int) -> dict[str, Any]:
    """The metrics of one measurement point from its root records (the module docstring's)."""
    truths = [root["truth"] for root in roots]
    metrics: dict[str, Any] = {
        "roots": len(roots),
        "truth_mean": float(np.mean(truths)),
        "truth_se_mean": float(np.mean([truth_standard_error(v, rollouts) for v in truths])),
    }
    for estimator in ESTIMATORS:
        values = [root[estimator] for root in roots]
        metrics[f"{estimator}_within"] = within_share(values, truths, tolerance)
        metrics[f"{estimator}_mae"] = float(np.mean(np.abs(np.subtract(values, truths))))
    for estimator in ESTIMATORS:
        outcomes = []
        for root in roots:
            candidates = root["candidates"]
            outcome = pick_outcome(
                [candidate_q(c, "truth") for c in candidates], [candidate_q(c, estimator) for c in candidates]
            )
            if outcome is not None:
                outcomes.append(outcome)
        metrics["counted"] = len(outcomes)
        metrics[f"{estimator}_pick"] = float(np.mean([o[0] for o in outcomes])) if outcomes else None
        metrics["chance"] = float(np.mean([o[1] for o in outcomes])) if outcomes else None
    return metrics


def seed_curves(points: Sequence[dict[str, Any]], tolerance: float, rollouts: int) -> dict[str, list[Any]]:
    """Per metric, its value at each measurement point (and the points' iterations)."""
    rows = [point_metrics(point["roots"], tolerance, rollouts) for point in points]
    curves: dict[str, list[Any]] = {"iteration": [point["iteration"] for point in points]}
    for key in rows[0]:
        curves[key] = [row[key] for row in rows]
    return curves


def _spread(values: Sequence[float]) -> dict[str, Any]:
    return {
        "mean": float(np.mean(values)),
        "std": float(np.std(values)),
        "min": float(min(values)),
        "max": float(max(values)),
        "seeds": len(values),
    }


def pooled(curves: dict[str, list[Any]]) -> dict[str, float | None]:
    """One seed's figures over its points: within/mae means, pick/chance weighted by ``counted``."""
    figures: dict[str, float | None] = {"truth_se_mean": float(np.mean(curves["truth_se_mean"]))}
    for estimator in ESTIMATORS:
        figures[f"{estimator}_within"] = float(np.mean(curves[f"{estimator}_within"]))
        figures[f"{estimator}_mae"] = float(np.mean(curves[f"{estimator}_mae"]))
    counted = sum(curves["counted"])
    for key in [f"{estimator}_pick" for estimator in ESTIMATORS] + ["chance"]:
        weighted = [v * n for v, n in zip(curves[key], curves["counted"], strict=True) if n]
        figures[key] = float(sum(weighted) / counted) if counted else None
    return figures


def summarise(curves: dict[str, dict[str, list[Any]]]) -> dict[str, Any]:
    """Per seed the pooled figures, and over seeds each figure's mean, std, range and seed count."""
    per_seed = {seed: pooled(seed_curve) for seed, seed_curve in curves.items()}
    over: dict[str, Any] = {}
    for key in next(iter(per_seed.values())):
        values = [figures[key] for figures in per_seed.values() if figures[key] is not None]
        over[key] = _spread(values) if values else None
    return {"seeds": per_seed, "over_seeds": over}


def verdict(summary: dict[str, Any]) -> dict[str, Any]:
    """The module docstring's verdict rule, from the summary."""
    over = summary["over_seeds"]
    critic, estimate = over["critic_within"]["mean"], over["estimate_within"]["mean"]
    holds = estimate > critic
    picks = {
        key: over[key]["mean"] if over[key] else None for key in ("critic_pick", "estimate_pick", "chance")
    }
    near_chance = (
        picks["critic_pick"] - picks["chance"] < NEAR_CHANCE_MARGIN
        if picks["critic_pick"] is not None and picks["chance"] is not None
        else None
    )
    beats = (
        picks["estimate_pick"] > picks["critic_pick"]
        if picks["estimate_pick"] is not None and picks["critic_pick"] is not None
        else None
    )
    return {
        "verdict": "holds" if holds else "does not hold",
        "rule": "holds when the mean over seeds of VinePPO's within-0.05 share exceeds the PPO critic's",
        "within": {"critic": critic, "estimate": estimate},
        "critic_near_chance": near_chance,
        "estimate_beats_critic_at_picking": beats,
        "picks": picks,
    }


def docs_row(results: dict[str, Any]) -> str:
    """The docs page's row of this table (6 cells, each computed from ``results``)."""
    over = results["summary"]["over_seeds"]
    settings = results["settings"]

    def figure(key: str) -> str:
        block = over[key]
        return (
            f"{block['mean']:.2f} ± {block['std']:.2f} ({block['min']:.2f}–{block['max']:.2f}, "
            f"{seed_count(block['seeds'])})"
        )

    judged = results["verdict"]
    picks = judged["picks"]
    near = "near chance" if judged["critic_near_chance"] else "well above chance"
    reason = (
        f"VinePPO within 0.05 on {judged['within']['estimate']:.2f} of states vs the critic's "
        f"{judged['within']['critic']:.2f}; best of {settings['moves']} moves: critic "
        f"{picks['critic_pick']:.2f} vs chance {picks['chance']:.2f} ({near}), "
        f"VinePPO {picks['estimate_pick']:.2f}"
    )
    cost = results["cost_total"]
    cells = [
        "VinePPO's value accuracy (Kazemnejad et al.)",
        "MATH reasoning steps; truth = 256 rollouts: PPO's critic within 0.05 on ≤ 65% of states, "
        "VinePPO's estimate on 70–90%; critic near chance at picking the best of 5 next steps",
        f"tiny LM from scratch, 8 Sokoban 5x5 rooms, outcome reward; PPO {settings['iterations']} "
        f"iterations, measured every {settings['every']} on {settings['roots']} states each; "
        f"truth M = {settings['truth_rollouts']} (mean s.e. {over['truth_se_mean']['mean']:.3f}), "
        f"VinePPO K = {settings['estimate_rollouts']}",
        f"within 0.05: critic {figure('critic_within')}<br>VinePPO {figure('estimate_within')}"
        f"<br>pick: critic {figure('critic_pick')}, VinePPO {figure('estimate_pick')}, "
        f"chance {over['chance']['mean']:.2f}",
        f"{judged['verdict']}: {reason}",
        f"{cost['cpu_s']:,.0f} CPU s, {cost['env_steps']:,} env steps",
    ]
    return markdown_row(cells)


# --- measuring ---


class Branches:
    """Rollouts of a run's current policy from start states, K per state, with the run's engine.

    Grouped vector envs (one group of K copies per state, at most ``MAX_BRANCH_ENVS`` envs alive) are
    kept per (states, K) until :meth:`close`.
    """

    def __init__(self, run: TrainingRun) -> None:
        self.run = run
        self.vecs: dict[tuple[int, int], GroupedVectorEnv] = {}

    def engine(self, states: int, rollouts: int) -> RolloutEngine:
        config = self.run.config
        if (states, rollouts) not in self.vecs:
            self.vecs[states, rollouts] = GroupedVectorEnv(
                config.env.id,
                num_groups=states,
                group_size=rollouts,
                backend=config.env.vector_backend,
                env_kwargs=config.env.kwargs,
            )
        run = self.run
        return make_engine(config, self.vecs[states, rollouts], run.sampler, run.tokenizer, run.template)

    def values(
        self, starts: Sequence[tuple[Trajectory, int]], rollouts: int, sample_seed: int
    ) -> tuple[np.ndarray, list[list[int]], list[RolloutBatch]]:
        """(mean undiscounted return per start, each start's prompt ids, the branch batches)."""
        per_batch = max(1, MAX_BRANCH_ENVS // rollouts)
        values, prompts, batches = [], [], []
        for number, begin in enumerate(range(0, len(starts), per_batch)):
            part = list(starts[begin : begin + per_batch])
            branches = self.engine(len(part), rollouts).branch(
                part, sample_seed=derive_seed("value-accuracy/batch", sample_seed, number)
            )
            values.extend(mean_returns(branches, len(part), 1.0))
            first: dict[int, list[int]] = {}
            for branch in branches.trajectories:
                first.setdefault(branch.group, branch.turns[0].prompt_ids)
            prompts.extend(first[group] for group in range(len(part)))
            batches.append(branches)
        return np.asarray(values, dtype=np.float64), prompts, batches

    def close(self) -> None:
        for vec in self.vecs.values():
            vec.close()


@torch.no_grad()
def critic_value(critic: Any, prompt_ids: Sequence[int], device: str) -> float:
    """The critic's value of a prompt: its head at the prompt's last token (before the response)."""
    ids = torch.tensor([list(prompt_ids)], device=device)
    return float(critic(ids, torch.ones_like(ids))[0, -1])


def candidate_start(
    trajectory: Trajectory, turn: int, move: str, step: tuple[Any, ...], snapshot: Any
) -> Any:
    """The start (trajectory, turn) of the state after ``move`` from ``trajectory``'s turn ``turn``.

    The trajectory is the original one up to that turn, the move as turn ``turn``, and the next state
    (with ``snapshot``) as turn ``turn + 1``, so that a branch renders its prompts from that history.
    """
    observation, reward, _, _, info = step
    root = trajectory.turns[turn]
    moved = Turn(
        prompt_text=root.prompt_text,
        prompt_ids=root.prompt_ids,
        response_ids=[],
        response_text=move,
        observation=root.observation,
        obs_key=root.obs_key,
        state_key=root.state_key,
        reward=float(reward),
    )
    following = Turn(
        prompt_text="",
        prompt_ids=[],
        response_ids=[],
        response_text="",
        observation=str(observation),
        obs_key=str(info["obs_key"]),
        state_key=str(info["state_key"]),
        snapshot=snapshot,
    )
    path = Trajectory(
        trajectory.group, trajectory.copy, trajectory.task_id, [*trajectory.turns[:turn], moved, following]
    )
    return path, turn + 1


def measure(run: TrainingRun, iteration: int, settings: dict[str, Any]) -> dict[str, Any]:
    """One measurement point of the current policy (the module docstring's steps 1–3)."""
    config, seed = run.config, run.config.run.seed
    pool = list(config.env.task_pool)
    branches = Branches(run)
    single = agent_env(gym.make(config.env.id, disable_env_checker=True, **config.env.kwargs))
    counts = {"episode_steps": 0, "candidate_steps": 0, "truth_rollouts": 0, "truth_steps": 0}
    counts |= {"estimate_rollouts": 0, "estimate_steps": 0}
    try:
        batch = branches.engine(len(pool), 1).collect(
            seed=derive_seed("value-accuracy/reset", seed, iteration) >> 1,
            task_ids=pool,
            sample_seed=derive_seed("value-accuracy/episodes", seed, iteration),
            record_snapshots=True,
        )
        counts["episode_steps"] = sum(len(t.turns) for t in batch.trajectories)
        rng = derive_rng("value-accuracy/roots", seed, iteration)
        episodes = sorted(batch.trajectories, key=lambda t: t.group)[: settings["roots"]]
        roots = [(trajectory, int(rng.integers(len(trajectory.turns)))) for trajectory in episodes]
        starts: list[tuple[Trajectory, int]] = list(roots)
        candidates: list[list[dict[str, Any]]] = []
        for trajectory, turn in roots:
            distinct: dict[tuple[str, bool], dict[str, Any]] = {}
            for move in config.policy.action_words:
                single.restore(trajectory.turns[turn].snapshot)
                step = single.step(move)
                counts["candidate_steps"] += 1
                _, reward, terminated, truncated, info = step
                done = bool(terminated or truncated)
                key = (str(info["state_key"]), done)
                if key in distinct:
                    distinct[key]["moves"].append(move)
                    continue
                distinct[key] = {"moves": [move], "reward": float(reward), "done": done}
                if not done:
                    distinct[key]["start"] = len(starts)
                    starts.append(candidate_start(trajectory, turn, move, step, single.snapshot()))
            candidates.append(list(distinct.values()))
        truth, prompts, truth_batches = branches.values(
            starts, settings["truth_rollouts"], derive_seed("value-accuracy/truth", seed, iteration)
        )
        estimate, _, estimate_batches = branches.values(
            starts, settings["estimate_rollouts"], derive_seed("value-accuracy/estimate", seed, iteration)
        )
    finally:
        branches.close()
        single.close()
    for name, batches in (("truth", truth_batches), ("estimate", estimate_batches)):
        counts[f"{name}_rollouts"] = sum(len(b.trajectories) for b in batches)
        counts[f"{name}_steps"] = sum(len(t.turns) for b in batches for t in b.trajectories)
    if not isinstance(run.algorithm, PPO):
        raise ConfigError(
            f"the value-accuracy measurement reads PPO's critic; the run trains {run.config.algorithm.name}"
        )
    critic = run.algorithm.critic
    values = {
        "truth": truth,
        "estimate": estimate,
        "critic": np.array([critic_value(critic, ids, config.policy.device) for ids in prompts]),
    }
    records = []
    for index, ((trajectory, turn), options) in enumerate(zip(roots, candidates, strict=True)):
        record: dict[str, Any] = {"task_id": trajectory.task_id, "turn": turn}
        record |= {name: float(array[index]) for name, array in values.items()}
        for option in options:
            where = option.pop("start", None)
            for name, array in values.items():
                option[name] = None if where is None else float(array[where])
        record["candidates"] = options
        records.append(record)
    return {"iteration": iteration, "roots": records, "counts": counts}


def run_config(seed: int, run_dir: Path, iterations: int | None = None) -> TrainConfig:
    """The PPO run of one seed (``paper_value_ppo.yaml``), pinned to one torch thread."""
    overrides = [f"run.seed={seed}", f"run.out_dir={run_dir}", f"policy.num_threads={PINNED_TORCH_THREADS}"]
    if iterations is not None:
        overrides.append(f"run.iterations={iterations}")
    return load_config(CONFIG, overrides)


def train_and_measure(config: TrainConfig, settings: dict[str, Any]) -> dict[str, Any]:
    """One seed's run with its measurements: read back from the run folder when complete, else trained.

    Returns {"records": the run's metrics records, "points": the measurement points, "cost": times}.
    """
    out = Path(config.run.out_dir)
    stored = out / MEASUREMENTS_FILE
    if stored.exists():
        kept = json.loads(stored.read_text(encoding="utf-8"))
        if kept["settings"] == settings:
            return {**kept, "records": read_jsonl(out / "metrics.jsonl")}
    if config.sampler.context != "window":
        raise ConfigError(
            "the value-accuracy measurement renders window-context prompts: set sampler.context=window"
        )
    (out / "checkpoint.pt").unlink(missing_ok=True)
    points: list[dict[str, Any]] = []
    spent = {"cpu_s": 0.0, "wall_s": 0.0}
    run = TrainingRun(config)

    def progress(record: dict[str, Any]) -> None:
        if (record["iteration"] + 1) % settings["every"]:
            return
        cpu, wall = time.process_time(), time.perf_counter()
        points.append(measure(run, record["iteration"], settings))
        spent["cpu_s"] += time.process_time() - cpu
        spent["wall_s"] += time.perf_counter() - wall
        print(f"  iteration {record['iteration']}: measured {len(points[-1]['roots'])} states", flush=True)

    cpu, wall = time.process_time(), time.perf_counter()
    records = run.train(progress=progress)
    cost = {
        "cpu_s": time.process_time() - cpu,
        "wall_s": time.perf_counter() - wall,
        "measure_cpu_s": spent["cpu_s"],
        "measure_wall_s": spent["wall_s"],
    }
    (out / COST_FILE).write_text(json.dumps(cost, indent=2) + "\n", encoding="utf-8")
    kept = {"settings": settings, "points": points, "cost": cost}
    stored.write_text(json.dumps(kept, indent=2) + "\n", encoding="utf-8")
    return {**kept, "records": records}


def run_cost(
    records: Sequence[dict[str, Any]], points: Sequence[dict[str, Any]], times: dict[str, Any]
) -> dict[str, Any]:
    """One run's cost: times, and env steps and generations (one response per env step) of training and
    of the measurements (episodes, candidate moves, truth and estimate rollouts)."""
    training_steps = sum(round(r["episodes"] * r["turns"]) for r in records)
    counts: dict[str, int] = {}
    for point in points:
        for key, value in point["counts"].items():
            counts[key] = counts.get(key, 0) + int(value)
    measured = sum(counts[key] for key in ("episode_steps", "truth_steps", "estimate_steps"))
    all_steps = training_steps + measured + counts.get("candidate_steps", 0)
    return {
        **times,
        "training_env_steps": training_steps,
        **counts,
        "env_steps": all_steps,
        "generations": training_steps + measured,
    }


def plot(curves: dict[str, dict[str, list[Any]]], out: Path) -> Path | None:
    """Within-0.05 share and pick accuracy per measurement point: mean ± std over seeds."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    iterations = next(iter(curves.values()))["iteration"]
    x = np.asarray(iterations) + 1
    for axis, metric, title in (
        (axes[0], "within", "share within 0.05 of the truth"),
        (axes[1], "pick", "best-next-move pick accuracy"),
    ):
        keys = [f"{e}_{metric}" for e in ESTIMATORS] + (["chance"] if metric == "pick" else [])
        for key in keys:
            rows = np.array(
                [[np.nan if v is None else v for v in c[key]] for c in curves.values()], dtype=np.float64
            )
            mean, std = np.nanmean(rows, 0), np.nanstd(rows, 0)
            label = ESTIMATORS.get(key.rsplit("_", 1)[0], "chance")
            (line,) = axis.plot(x, mean, marker="o", label=f"{label} ({seed_count(len(curves))})")
            axis.fill_between(x, mean - std, mean + std, alpha=0.2, color=line.get_color())
        axis.set_xlabel("PPO iterations trained")
        axis.set_ylabel(title)
        axis.set_ylim(0, 1.05)
        axis.grid(alpha=0.3)
        axis.legend()
    return save_figure(figure, out / f"{RESULTS_NAME}.png")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = experiment_parser(
        (__doc__ or "").splitlines()[0],
        "runs/value_accuracy",
        "the runs' metrics, checkpoints, measurements",
        prog="python -m baselines.experiments.value_accuracy",
    )
    parser.add_argument("--iterations", type=int, default=None, help="override the config's iterations")
    parser.add_argument("--every", type=int, default=10, help="measure after every EVERY-th iteration")
    parser.add_argument(
        "--roots", type=int, default=8, help="root states per point (one per room, at most 8)"
    )
    parser.add_argument("--truth-rollouts", type=int, default=256, help="M, the ground truth's rollouts")
    parser.add_argument(
        "--estimate-rollouts", type=int, default=None, help="K (default: vineppo_sokoban.yaml's)"
    )
    parser.add_argument("--tolerance", type=float, default=0.05)
    args = parser.parse_args(argv)
    for name in ("every", "roots", "truth_rollouts"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv: Sequence[str] | None = None, progress: Callable[[str], None] = print) -> int:
    args = parse_args(argv)
    if not environment_is_pinned():
        return run_pinned("baselines.experiments.value_accuracy", argv)
    numerics = pin_numerics()
    estimate_rollouts = args.estimate_rollouts or int(
        load_config(VINEPPO_CONFIG).to_dict()["algorithm"]["mc_rollouts"]
    )
    out = Path(args.out)
    configs = {seed: run_config(seed, out / f"ppo-s{seed}", args.iterations) for seed in args.seeds}
    first = next(iter(configs.values()))
    if args.roots > len(first.env.task_pool):
        raise SystemExit(f"--roots is at most the {len(first.env.task_pool)} rooms of the pool")
    settings = {
        "config": CONFIG.name,
        "iterations": first.run.iterations,
        "every": args.every,
        "roots": args.roots,
        "moves": len(first.policy.action_words),
        "truth_rollouts": args.truth_rollouts,
        "estimate_rollouts": estimate_rollouts,
        "tolerance": args.tolerance,
    }
    if first.run.iterations < args.every:
        raise SystemExit(
            f"--iterations {first.run.iterations} ends before the first measurement (--every {args.every})"
        )
    curves, success, costs, points = {}, {}, {}, {}
    for seed, config in configs.items():
        progress(f"seed {seed}: {config.run.out_dir}")
        run = train_and_measure(config, settings)
        curves[str(seed)] = seed_curves(run["points"], args.tolerance, args.truth_rollouts)
        success[str(seed)] = [r["success"] for r in run["records"]]
        costs[str(seed)] = run_cost(run["records"], run["points"], run["cost"])
        points[str(seed)] = run["points"]
    summary = summarise(curves)
    results: dict[str, Any] = {
        "command": "python -m baselines.experiments.value_accuracy "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "numerics": numerics,
        "settings": settings,
        "config": first.to_dict()
        | {"run": {k: v for k, v in first.to_dict()["run"].items() if k not in ("seed", "out_dir")}},
        "curves": curves,
        "success_curves": success,
        "summary": summary,
        "cost": costs,
        "cost_total": {
            "cpu_s": float(sum(c["cpu_s"] for c in costs.values())),
            "wall_s": float(sum(c["wall_s"] for c in costs.values())),
            "env_steps": int(sum(c["env_steps"] for c in costs.values())),
            "generations": int(sum(c["generations"] for c in costs.values())),
            "branch_rollouts": int(sum(c["truth_rollouts"] + c["estimate_rollouts"] for c in costs.values())),
        },
        "points": points,
    }
    results["verdict"] = verdict(summary)
    folder = Path(args.results)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{RESULTS_NAME}.json"
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    figure = plot(curves, folder)
    over = summary["over_seeds"]
    for key in (
        "critic_within",
        "estimate_within",
        "critic_mae",
        "estimate_mae",
        "critic_pick",
        "estimate_pick",
        "chance",
    ):
        block = over[key]
        if block:
            progress(
                f"{key:16s} {block['mean']:.3f} ± {block['std']:.3f} ({block['min']:.3f}–{block['max']:.3f})"
            )
    progress(f"verdict: {results['verdict']['verdict']}")
    progress(docs_row(json.loads(path.read_text(encoding="utf-8"))))
    progress(f"results: {path}" + (f", curves: {figure}" if figure else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

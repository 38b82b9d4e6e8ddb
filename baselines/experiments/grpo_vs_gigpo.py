"""Miniature learning experiment: GRPO vs GiGPO from scratch on small Sokoban rooms, several seeds.

Trains the tiny policy of ``baselines/configs/mini_sokoban.yaml`` with each
estimator and each seed (same rooms, same settings; the seed changes the
model's initialisation and the sampling), then prints per run and per
estimator: the success rate of the last iterations, the best moving-average
success, and the episodes needed until the moving average of the success
rate first reaches ``--threshold``. Learning curves go to ``<out>/curves.png``
(mean over seeds) when matplotlib is installed, the table to
``<out>/summary.json``.

    python -m baselines.experiments.grpo_vs_gigpo --seeds 0 1 2 --threshold 0.4 --out runs/mini
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baselines.metrics import read_jsonl
from baselines.trainers import critic_free
from baselines.trainers.common import load_config

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "mini_sokoban.yaml"


def moving_average(values: Sequence[float], window: int) -> np.ndarray:
    """Mean of the last ``window`` values at each point (fewer at the start)."""
    values = np.asarray(values, dtype=np.float64)
    sums = np.cumsum(values)
    out = np.empty_like(values)
    for i in range(values.shape[0]):
        start = max(0, i - window + 1)
        out[i] = (sums[i] - (sums[start - 1] if start else 0.0)) / (i - start + 1)
    return out


def episodes_to_threshold(records: Sequence[dict[str, Any]], threshold: float, window: int) -> int | None:
    """Episodes seen when the moving-average success first reaches ``threshold`` (None: never)."""
    smoothed = moving_average([r["success"] for r in records], window)
    reached = np.flatnonzero(smoothed >= threshold)
    return int(records[reached[0]]["episodes_seen"]) if reached.size else None


def summarise(
    runs: dict[str, dict[int, list[dict[str, Any]]]], threshold: float, window: int
) -> dict[str, Any]:
    summary: dict[str, Any] = {"threshold": threshold, "window": window, "estimators": {}}
    for estimator, by_seed in runs.items():
        per_seed = {}
        for seed, records in by_seed.items():
            per_seed[seed] = {
                "final_success": float(np.mean([r["success"] for r in records[-window:]])),
                "best_smoothed_success": float(moving_average([r["success"] for r in records], window).max()),
                "episodes_to_threshold": episodes_to_threshold(records, threshold, window),
                "singleton_share": float(np.mean([r["anchor/singleton_share"] for r in records])),
            }
        reached = [s["episodes_to_threshold"] for s in per_seed.values()]
        summary["estimators"][estimator] = {
            "seeds": per_seed,
            "mean_final_success": float(np.mean([s["final_success"] for s in per_seed.values()])),
            "runs_reaching_threshold": sum(r is not None for r in reached),
            "mean_episodes_to_threshold_of_those": float(np.mean([r for r in reached if r is not None]))
            if any(r is not None for r in reached)
            else None,
        }
    return summary


def plot(runs: dict[str, dict[int, list[dict[str, Any]]]], out: Path, window: int) -> Path | None:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    for estimator, by_seed in runs.items():
        curves = np.array(
            [moving_average([r["success"] for r in records], window) for records in by_seed.values()]
        )
        episodes = [r["episodes_seen"] for r in next(iter(by_seed.values()))]
        axis.plot(episodes, curves.mean(0), label=f"{estimator} (mean of {len(curves)} seeds)")
        axis.fill_between(episodes, curves.min(0), curves.max(0), alpha=0.2)
    axis.set_xlabel("episodes")
    axis.set_ylabel(f"success rate (moving average, {window} iterations)")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    path = out / "curves.png"
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(DEFAULT_CONFIG))
    parser.add_argument("--estimators", nargs="+", default=["grpo", "gigpo"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--iterations", type=int, default=None, help="override the config's iterations")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--out", default="runs/mini")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)

    out = Path(args.out)
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for estimator in args.estimators:
        for seed in args.seeds:
            run_dir = out / f"{estimator}-s{seed}"
            overrides = [f"estimator={estimator}", f"seed={seed}", f"out_dir={run_dir}", *args.set]
            if args.iterations is not None:
                overrides.append(f"iterations={args.iterations}")
            config = load_config(args.config, overrides)
            if (run_dir / "metrics.jsonl").exists() and len(
                read_jsonl(run_dir / "metrics.jsonl")
            ) >= config.iterations:
                records = read_jsonl(run_dir / "metrics.jsonl")
            else:
                records = critic_free.train(config, resume=(run_dir / "checkpoint.pt").exists())
                records = read_jsonl(run_dir / "metrics.jsonl")
            runs.setdefault(estimator, {})[seed] = records
            smoothed = moving_average([r["success"] for r in records], args.window)
            print(
                f"{estimator:6s} seed {seed}: final success {smoothed[-1]:.3f}  best {smoothed.max():.3f}",
                flush=True,
            )

    summary = summarise(runs, args.threshold, args.window)
    (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print(f"\nsuccess threshold {args.threshold} (moving average over {args.window} iterations)")
    print(f"{'estimator':10s} {'seed':>4s} {'final':>7s} {'best':>7s} {'episodes to threshold':>22s}")
    for estimator, block in summary["estimators"].items():
        for seed, stats in block["seeds"].items():
            reached = stats["episodes_to_threshold"]
            print(
                f"{estimator:10s} {seed:>4d} {stats['final_success']:7.3f} {stats['best_smoothed_success']:7.3f} {reached if reached is not None else 'not reached':>22}"
            )
        print(
            f"{estimator:10s} {'mean':>4s} {block['mean_final_success']:7.3f} {'':7s} "
            f"{block['runs_reaching_threshold']}/{len(block['seeds'])} runs, mean {block['mean_episodes_to_threshold_of_those']}"
        )
    figure = plot(runs, out, args.window)
    if figure:
        print(f"curves: {figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

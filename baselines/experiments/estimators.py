"""Miniature learning experiment: GRPO vs GiGPO from scratch on small Sokoban rooms, several seeds.

Trains the tiny policy of ``baselines/configs/mini_sokoban.yaml`` with each
estimator and each seed (same rooms, same settings; the seed changes the
model's initialisation and the sampling), then prints per run and per
estimator: the success rate of the last iterations, the best moving-average
success, and the episodes needed until the moving average of the success
rate first reaches ``--threshold``. The runs (metrics, checkpoints) go to
``--out``; the results file ``<results>/grpo_vs_gigpo.json`` (the summary,
every run's success curve and the settings) and the curves
``<results>/grpo_vs_gigpo.png`` (mean over seeds, needs matplotlib) go to
``--results``, by default ``baselines/experiments/results`` in the repo: the
README's numbers are :func:`readme_sentence` of that file.

    python -m baselines.experiments.grpo_vs_gigpo --seeds 0 1 2 3 4 5 6 7 --out runs/mini

The numbers are bit-reproducible on any x86-64 machine with AVX2: a float's
rounding depends on which CPU kernels torch dispatches (ATen's vector width,
MKL's code branch, the thread count), so the experiment trains in a process
started with :data:`PINNED_ENVIRONMENT` (ATen's AVX2 kernels, MKL's
``COMPATIBLE`` branch, the only one MKL keeps equal on Intel and non-Intel
CPUs, oneDNN capped at AVX2, one thread) whatever the caller's environment
says, since these are read once when torch first dispatches. It then turns
on ``torch.use_deterministic_algorithms``, checks that the pins took hold,
and records them in the results file under ``numerics``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from baselines.metrics import read_jsonl
from baselines.trainers.config import load_config
from baselines.trainers.run import train

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "mini_sokoban.yaml"
RESULTS_DIR = Path(__file__).resolve().parent / "results"
RESULTS_NAME = "grpo_vs_gigpo"
REPO_ROOT = Path(__file__).resolve().parents[2]
PINNED_ENVIRONMENT = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "COMPATIBLE",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
PINNED_TORCH_THREADS = 1
# MKL's names for the code branch its CNR mode runs (mkl_cbwr_get's return values).
MKL_CBWR_BRANCHES = {1: "OFF", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 9: "AVX", 10: "AVX2", 12: "AVX512"}


class UnpinnedNumerics(RuntimeError):
    """torch runs with other kernels than the pinned ones, so the numbers would depend on the machine."""


def environment_is_pinned(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``environ`` holds every :data:`PINNED_ENVIRONMENT` value."""
    return all(environ.get(name) == value for name, value in PINNED_ENVIRONMENT.items())


def mkl_branch() -> str | None:
    """The code branch MKL's conditional numerical reproducibility runs; None without MKL in torch."""
    library = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    try:
        mkl = ctypes.CDLL(str(library))
        cbwr_get = mkl.mkl_serv_cbwr_get  # mkl_cbwr_get, as MKL links statically into libtorch_cpu
    except (OSError, AttributeError):
        return None
    cbwr_get.restype, cbwr_get.argtypes = ctypes.c_int, [ctypes.c_int]
    branch = cbwr_get(1)  # MKL_CBWR_BRANCH
    return MKL_CBWR_BRANCHES.get(branch, str(branch))


def pin_numerics() -> dict[str, Any]:
    """Check the process's pins, then fix the thread count and deterministic algorithms; what to record.

    Raises :class:`UnpinnedNumerics` when ATen or MKL run other kernels than
    the pinned ones (a CPU without AVX2, or torch initialised before the
    environment was set).
    """
    capability = torch.backends.cpu.get_cpu_capability()
    wanted = PINNED_ENVIRONMENT["ATEN_CPU_CAPABILITY"].upper()
    if capability != wanted:
        raise UnpinnedNumerics(
            f"ATen dispatches {capability} kernels, not {wanted}: the CPU lacks {wanted}, "
            "or torch ran before ATEN_CPU_CAPABILITY was set"
        )
    branch = mkl_branch()
    if torch.backends.mkl.is_available() and branch != PINNED_ENVIRONMENT["MKL_CBWR"]:
        found = "an unreadable" if branch is None else f"its {branch}"
        raise UnpinnedNumerics(
            f"MKL runs {found} branch, not {PINNED_ENVIRONMENT['MKL_CBWR']}: "
            "torch ran before MKL_CBWR was set, or this torch links another MKL"
        )
    torch.set_num_threads(PINNED_TORCH_THREADS)
    torch.use_deterministic_algorithms(True)
    return {
        "environment": dict(PINNED_ENVIRONMENT),
        "aten_cpu_capability": capability,
        "mkl_cbwr_branch": branch,
        "torch_threads": torch.get_num_threads(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "torch": torch.__version__,
    }


def run_pinned(argv: Sequence[str]) -> int:
    """Run this experiment with ``argv`` in a child process started with :data:`PINNED_ENVIRONMENT`."""
    environ = {**os.environ, **PINNED_ENVIRONMENT}
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), environ.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "baselines.experiments.grpo_vs_gigpo", *argv]
    return subprocess.run(command, env=environ, check=False).returncode


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
        finals = [s["final_success"] for s in per_seed.values()]
        summary["estimators"][estimator] = {
            "seeds": per_seed,
            "mean_final_success": float(np.mean(finals)),
            "std_final_success": float(np.std(finals)),
            "min_final_success": float(min(finals)),
            "max_final_success": float(max(finals)),
            "runs_reaching_threshold": sum(r is not None for r in reached),
            "mean_episodes_to_threshold_of_those": float(np.mean([r for r in reached if r is not None]))
            if any(r is not None for r in reached)
            else None,
        }
    return summary


def readme_sentence(results: dict[str, Any]) -> str:
    """The README's sentence about the experiment, from its results file."""
    gigpo, grpo = results["estimators"]["gigpo"], results["estimators"]["grpo"]
    seeds = len(gigpo["seeds"])
    faster = sum(
        a is not None and (b is None or a < b)
        for a, b in (
            (gigpo["seeds"][seed]["episodes_to_threshold"], grpo["seeds"][seed]["episodes_to_threshold"])
            for seed in gigpo["seeds"]
        )
    )
    higher = sum(
        gigpo["seeds"][seed]["final_success"] > grpo["seeds"][seed]["final_success"]
        for seed in gigpo["seeds"]
    )

    def episodes(block: dict[str, Any]) -> str:
        mean = block["mean_episodes_to_threshold_of_those"]
        reached = f"{block['runs_reaching_threshold']} of {seeds} runs"
        return f"{mean:,.0f} ({reached})" if mean is not None else f"not reached ({reached})"

    def spread(block: dict[str, Any]) -> str:
        return (
            f"{block['mean_final_success']:.3f} ± {block['std_final_success']:.3f} "
            f"(range {block['min_final_success']:.3f}–{block['max_final_success']:.3f})"
        )

    return (
        f"mean final success ± std over seeds GiGPO {spread(gigpo)} vs GRPO {spread(grpo)} "
        f"(GiGPO higher on {higher} of {seeds} seeds); episodes to {results['threshold']} success: "
        f"GiGPO {episodes(gigpo)} vs GRPO {episodes(grpo)}, GiGPO faster on {faster} of {seeds} seeds"
    )


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
    path = out / f"{RESULTS_NAME}.png"
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(DEFAULT_CONFIG))
    parser.add_argument("--estimators", nargs="+", default=["grpo", "gigpo"])
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(8)))
    parser.add_argument("--iterations", type=int, default=None, help="override the config's iterations")
    parser.add_argument("--threshold", type=float, default=0.4)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--out", default="runs/mini", help="the runs' metrics and checkpoints")
    parser.add_argument("--results", default=str(RESULTS_DIR), help="where the results file and curves go")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    args = parser.parse_args(argv)
    if not environment_is_pinned():
        return run_pinned(sys.argv[1:] if argv is None else list(argv))
    numerics = pin_numerics()

    out = Path(args.out)
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for estimator in args.estimators:
        for seed in args.seeds:
            run_dir = out / f"{estimator}-s{seed}"
            overrides = [
                f"algorithm.estimator={estimator}",
                f"run.seed={seed}",
                f"run.out_dir={run_dir}",
                *args.set,
            ]
            if args.iterations is not None:
                overrides.append(f"run.iterations={args.iterations}")
            overrides.append(f"policy.num_threads={PINNED_TORCH_THREADS}")
            config = load_config(args.config, overrides)
            if (run_dir / "metrics.jsonl").exists() and len(
                read_jsonl(run_dir / "metrics.jsonl")
            ) >= config.run.iterations:
                records = read_jsonl(run_dir / "metrics.jsonl")
            else:
                train(config, resume=(run_dir / "checkpoint.pt").exists())
                records = read_jsonl(run_dir / "metrics.jsonl")
            runs.setdefault(estimator, {})[seed] = records
            smoothed = moving_average([r["success"] for r in records], args.window)
            print(
                f"{estimator:6s} seed {seed}: final success {smoothed[-1]:.3f}  best {smoothed.max():.3f}",
                flush=True,
            )

    summary = summarise(runs, args.threshold, args.window)
    results_dir = Path(args.results)
    results_dir.mkdir(parents=True, exist_ok=True)
    results = {
        "command": "python -m baselines.experiments.grpo_vs_gigpo "
        + " ".join(
            [
                "--seeds",
                *map(str, args.seeds),
                "--threshold",
                str(args.threshold),
                "--window",
                str(args.window),
            ]
        ),
        "config": Path(args.config).name,
        "overrides": args.set + ([f"run.iterations={args.iterations}"] if args.iterations is not None else []),
        "numerics": numerics,
        **summary,
        "episodes_per_iteration": int(runs[args.estimators[0]][args.seeds[0]][0]["episodes_seen"]),
        "success_curves": {
            estimator: {str(seed): [r["success"] for r in records] for seed, records in by_seed.items()}
            for estimator, by_seed in runs.items()
        },
    }
    results_path = results_dir / f"{RESULTS_NAME}.json"
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
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
    figure = plot(runs, results_dir, args.window)
    print(f"results: {results_path}" + (f", curves: {figure}" if figure else ""))
    if set(runs) >= {"grpo", "gigpo"}:
        print(f"README: {readme_sentence(json.loads(results_path.read_text(encoding='utf-8')))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What every CPU experiment shares: pinned numerics, timed runs read back when complete, smoothing.

The numbers of an experiment are bit-reproducible on any x86-64 machine with
AVX2: a float's rounding depends on which CPU kernels torch dispatches (ATen's
vector width, MKL's code branch, the thread count), so an experiment trains in
a process started with :data:`PINNED_ENVIRONMENT` (ATen's AVX2 kernels, MKL's
``COMPATIBLE`` branch, the only one MKL keeps equal on Intel and non-Intel
CPUs, oneDNN capped at AVX2, one thread) whatever the caller's environment
says, since these are read once when torch first dispatches. Its ``main``
starts with::

    if not environment_is_pinned():
        return run_pinned("baselines.experiments.NAME", argv)  # argv None: sys.argv[1:]
    numerics = pin_numerics()  # checks the pins took hold; record it in the results file
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from baselines.metrics import read_jsonl
from baselines.trainers.config import TrainConfig
from baselines.trainers.run import train

COST_FILE = "cost.json"
RESULTS_DIR = Path(__file__).resolve().parent / "results"
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


def experiment_parser(
    description: str, out: str, out_help: str, prog: str | None = None
) -> argparse.ArgumentParser:
    """An experiment's argument parser with the options every one takes: ``--seeds`` (default 0–7),
    ``--out`` (default ``out``: where its runs go) and ``--results`` (default :data:`RESULTS_DIR`, the
    committed results)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(8)))
    parser.add_argument("--out", default=out, help=out_help)
    parser.add_argument("--results", default=str(RESULTS_DIR), help="where the results file and curves go")
    return parser


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


def run_pinned(module: str, argv: Sequence[str] | None) -> int:
    """Run ``python -m module argv`` in a child process started with :data:`PINNED_ENVIRONMENT`
    (``argv`` None: this process's own arguments, as ``main(None)`` parses them)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    environ = {**os.environ, **PINNED_ENVIRONMENT}
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), environ.get("PYTHONPATH")]))
    command = [sys.executable, "-m", module, *argv]
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


def train_or_read(config: TrainConfig) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """A run's metrics records and its times (None: not timed), training it unless its metrics are complete.

    The times are the wall seconds (``time.perf_counter``) and the process's CPU
    seconds (``time.process_time``: every thread of the process, and the
    in-process envs) of one uninterrupted ``train`` call from iteration 0,
    kept in the run's ``cost.json``; a run resumed from a checkpoint is not timed.
    """
    run_dir = Path(config.run.out_dir)
    metrics, cost_file = run_dir / "metrics.jsonl", run_dir / COST_FILE
    if metrics.exists() and len(read_jsonl(metrics)) >= config.run.iterations:
        times = json.loads(cost_file.read_text(encoding="utf-8")) if cost_file.exists() else None
        return read_jsonl(metrics), times
    resume = (run_dir / "checkpoint.pt").exists()
    cost_file.unlink(missing_ok=True)
    load_before = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    train(config, resume=resume)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if resume:
        return read_jsonl(metrics), None
    times = {"wall_s": wall, "cpu_s": cpu, "load_average_1min": [load_before, os.getloadavg()[0]]}
    cost_file.write_text(json.dumps(times, indent=2) + "\n", encoding="utf-8")
    return read_jsonl(metrics), times


def seed_count(count: int) -> str:
    """ "1 seed", "8 seeds"."""
    return f"{count} seed" if count == 1 else f"{count} seeds"


def save_figure(figure: Any, path: Path, dpi: int = 120) -> Path:
    """Lay out a matplotlib ``figure``, write it to ``path`` and close it; returns ``path``."""
    import matplotlib.pyplot as plt

    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    plt.close(figure)
    return path


def markdown_row(cells: Sequence[str]) -> str:
    """One row of a markdown table: ``| a | b |``."""
    return "| " + " | ".join(cells) + " |"

"""Training metrics: per-iteration JSONL records and the ``plot`` command.

Each trainer appends one JSON object per iteration to ``<out>/metrics.jsonl``:
success rate, mean score and return, the number of crashed episodes left out,
the mean per-episode sum of every reward component (``component/<name>``),
turns, anchor-group statistics (size histogram, singleton share, obs-key vs
state-key disagreement), the time split (generation / env / update seconds) and
tokens per second.

Plot learning curves of one or more runs::

    python -m baselines.metrics plot runs/gigpo-s0/metrics.jsonl runs/grpo-s0/metrics.jsonl \
        --metric success --out curves.png
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baselines.rollout import RolloutBatch, Trajectory


def rollout_metrics(batch: RolloutBatch) -> dict[str, float]:
    """Success, score, return, turns, component sums and the time split of one rollout batch.

    Rates are over the episodes trained on; ``crashed_episodes`` counts the
    ones dropped because their env crashed (``info["crashed"]``).
    """
    trajectories = batch.trajectories
    metrics: dict[str, float] = {
        "episodes": float(len(trajectories)),
        "crashed_episodes": float(len(batch.crashed)),
        "success": float(np.mean([t.success for t in trajectories])),
        "score": float(np.mean([t.score for t in trajectories])),
        "return": float(np.mean([t.episode_return for t in trajectories])),
        "turns": float(np.mean([len(t.turns) for t in trajectories])),
        "response_tokens": float(batch.generated_tokens / max(1, sum(len(t.turns) for t in trajectories))),
        "time/generation_s": batch.generation_s,
        "time/env_s": batch.env_s,
        "tokens_per_s": batch.tokens_per_s,
    }
    sums: dict[str, list[float]] = defaultdict(list)
    for trajectory in trajectories:
        for name, value in trajectory.component_sums().items():
            sums[name].append(value)
    for name, values in sorted(sums.items()):
        metrics[f"component/{name}"] = float(np.sum(values) / len(trajectories))
    return metrics


def anchor_groups(
    trajectories: Sequence[Trajectory], key: str
) -> dict[tuple[int, Hashable], list[tuple[int, int]]]:
    """Anchor-state groups (group, key) → [(trajectory, turn)], keyed by ``"obs_key"`` or ``"state_key"``."""
    groups: dict[tuple[int, Hashable], list[tuple[int, int]]] = defaultdict(list)
    for i, trajectory in enumerate(trajectories):
        for t, turn in enumerate(trajectory.turns):
            groups[(trajectory.group, getattr(turn, key))].append((i, t))
    return groups


def anchor_metrics(trajectories: Sequence[Trajectory], key: str = "state_key") -> dict[str, Any]:
    """Anchor-group size histogram, singleton share, and obs-key vs state-key disagreement.

    ``grouping_disagreement`` is the share of turns whose anchor group under
    observation matching differs (as a set of members) from their group under
    the env's state key: observation matching over-groups (two states that
    look alike) or under-groups (one state shown two ways) on those turns.
    """
    groups = anchor_groups(trajectories, key)
    sizes = [len(members) for members in groups.values()]
    histogram = Counter(sizes)
    by_obs = {member: frozenset(m) for m in anchor_groups(trajectories, "obs_key").values() for member in m}
    by_state = {
        member: frozenset(m) for m in anchor_groups(trajectories, "state_key").values() for member in m
    }
    turns = len(by_obs)
    disagreeing = sum(by_obs[member] != by_state[member] for member in by_obs)
    return {
        "anchor/groups": float(len(sizes)),
        "anchor/mean_size": float(np.mean(sizes)) if sizes else 0.0,
        "anchor/singleton_share": float(histogram.get(1, 0) / len(sizes)) if sizes else 0.0,
        "anchor/size_histogram": {str(size): count for size, count in sorted(histogram.items())},
        "anchor/grouping_disagreement": float(disagreeing / turns) if turns else 0.0,
    }


class MetricsWriter:
    """Appends one JSON object per line to ``path`` (created with its folder)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")

    def truncate_after(self, iteration: int) -> None:
        """Drop records past ``iteration`` (a resumed run rewrites them)."""
        if not self.path.exists():
            return
        kept = [line for line in read_jsonl(self.path) if line["iteration"] <= iteration]
        self.path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in kept), encoding="utf-8")


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    with Path(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def plot_runs(paths: Sequence[str | Path], metric: str, out: str | Path, *, x: str = "episodes_seen") -> Path:
    """Draw ``metric`` against ``x`` for every run file; one line per file (needs matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    for path in paths:
        records = read_jsonl(path)
        axis.plot([r[x] for r in records], [r[metric] for r in records], label=Path(path).parent.name)
    axis.set_xlabel(x)
    axis.set_ylabel(metric)
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(out, dpi=120)
    plt.close(figure)
    return Path(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m baselines.metrics")
    commands = parser.add_subparsers(dest="command", required=True)
    plot = commands.add_parser("plot", help="learning curves of metrics.jsonl files")
    plot.add_argument("runs", nargs="+", help="metrics.jsonl files")
    plot.add_argument("--metric", default="success")
    plot.add_argument("--x", default="episodes_seen")
    plot.add_argument("--out", default="curves.png")
    args = parser.parse_args(argv)
    print(plot_runs(args.runs, args.metric, args.out, x=args.x))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The numbers of a bundle's summary, and the one rule that compares recorded numbers with recomputed ones.

:func:`summarize` turns a bundle's episodes into its ``summary.json``
(:data:`agentenvs.eval.bundle.SUMMARY_SCHEMA`): per env, episodes, success,
score, mean turns, token totals and context overflows; ``overall``, the
unweighted mean over envs. Every interval is 95%:

* success: the Wilson score interval (:func:`wilson_interval`). With
  ``n`` episodes, ``p = successes / n`` and ``z`` = :data:`WILSON_Z` (the
  standard normal's 97.5% quantile)::

      (p + z²/2n ± z·sqrt(p(1 − p)/n + z²/4n²)) / (1 + z²/n)

  with the low end 0 when nothing succeeded and the high end 1 when
  everything did. Unlike a bootstrap, it stays wide when every episode fails
  or succeeds (0/3 gives [0, 0.56]). Overall: the interval of the
  unweighted mean rate over envs, taken as a rate over all episodes.
* score: the percentile bootstrap of the mean (:func:`bootstrap_interval`):
  :data:`BOOTSTRAP_RESAMPLES` resamples with replacement, the 2.5th and
  97.5th percentiles of their means. Overall: each env resampled
  independently, the resampled env means averaged, the same percentiles.

A summary is deterministic: envs in sorted order, each env's episodes by
(seed, task id), one generator seeded with :data:`BOOTSTRAP_SEED`, so the
same episodes give the same summary anywhere, in any order. Below
:data:`FEW_EPISODES` episodes per env the intervals are wide, and the eval
table says so.

A recorded number and its recomputation (a replayed reward, a recomputed
summary) agree by one rule, :func:`same_number`:
``|a − b| ≤ max(1e-9 · max(|a|, |b|), 1e-12)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
WILSON_Z = 1.959963984540054  # the standard normal's 97.5% quantile: a 95% interval
FEW_EPISODES = 30  # below this many episodes per env, intervals are wide; the eval table says so

# the tolerance of every comparison of recorded numbers with recomputed ones (see same_number)
RELATIVE_TOLERANCE = 1e-9
ABSOLUTE_TOLERANCE = 1e-12


def same_number(recorded: Any, recomputed: Any) -> bool:
    """Whether a recorded number and its recomputation agree; the one rule replay and the board apply.

    ``|a − b| ≤ max(1e-9 · max(|a|, |b|), 1e-12)`` (``math.isclose`` with
    :data:`RELATIVE_TOLERANCE` and :data:`ABSOLUTE_TOLERANCE`). JSON carries
    doubles exactly, so the slack only absorbs a sum taken in another order
    (a return, a component sum, a summary mean); an edited number is off by far
    more. Strings (keys) compare exactly; None agrees only with None.
    """
    if isinstance(recorded, str) or isinstance(recomputed, str):
        return recorded == recomputed
    if recorded is None or recomputed is None:
        return recorded is None and recomputed is None
    return math.isclose(
        float(recorded), float(recomputed), rel_tol=RELATIVE_TOLERANCE, abs_tol=ABSOLUTE_TOLERANCE
    )


def bootstrap_interval(values: Sequence[float], rng: np.random.Generator) -> tuple[float, float, np.ndarray]:
    """95% percentile-bootstrap interval of the mean, and the resampled means."""
    data = np.asarray(values, dtype=np.float64)
    means = data[rng.integers(0, len(data), size=(BOOTSTRAP_RESAMPLES, len(data)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high), means


def wilson_interval(successes: float, trials: int) -> tuple[float, float]:
    """95% Wilson score interval of a success rate.

    With p = successes / n and z = :data:`WILSON_Z`:
    (p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n). Unlike a bootstrap,
    it stays wide when every episode fails or succeeds (0/3 gives [0, 0.56]).
    """
    if trials < 1:
        return 0.0, 0.0
    p, z2 = successes / trials, WILSON_Z**2
    centre = p + z2 / (2 * trials)
    spread = WILSON_Z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials**2))
    scale = 1 + z2 / trials
    low = 0.0 if successes <= 0 else (centre - spread) / scale
    high = 1.0 if successes >= trials else (centre + spread) / scale
    return low, high


def _interval(mean: float, low: float, high: float) -> dict[str, float]:
    return {"mean": float(mean), "low": low, "high": high}


def summarize(episodes: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per-env and overall success (Wilson intervals) and score (bootstrap intervals), 95%.

    Success: :func:`wilson_interval` of each env's successes; overall, of the
    unweighted mean rate over envs taken as a rate over all episodes. Score:
    percentile bootstrap of the mean; the overall interval resamples each env
    independently and averages the resampled env means. Deterministic: envs
    in sorted order, each env's episodes by (seed, task id), one generator
    seeded with :data:`BOOTSTRAP_SEED`, so the same episodes give the same
    summary anywhere, in any order.
    """
    by_env: dict[str, list[Mapping[str, Any]]] = {}
    for episode in episodes:
        by_env.setdefault(episode["env_id"], []).append(episode)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    envs: dict[str, Any] = {}
    resampled_scores: list[np.ndarray] = []
    for env_id in sorted(by_env):
        rows = sorted(by_env[env_id], key=lambda row: (row["seed"], row["task_id"]))
        successes = sum(bool(row["success"]) for row in rows)
        scores = [float(row["score"]) for row in rows]
        low, high, means = bootstrap_interval(scores, rng)
        resampled_scores.append(means)
        envs[env_id] = {
            "episodes": len(rows),
            "success": _interval(successes / len(rows), *wilson_interval(successes, len(rows))),
            "score": _interval(float(np.mean(scores)), low, high),
            "turns": float(np.mean([row["turns"] for row in rows])),
            "prompt_tokens": int(sum(row["prompt_tokens"] for row in rows)),
            "completion_tokens": int(sum(row["completion_tokens"] for row in rows)),
            "context_overflows": sum(row.get("end_reason") == "context_overflow" for row in rows),
        }
    overall: dict[str, Any] = {"envs": len(envs)}
    total = sum(entry["episodes"] for entry in envs.values())
    success = float(np.mean([entry["success"]["mean"] for entry in envs.values()])) if envs else 0.0
    overall["success"] = _interval(success, *wilson_interval(success * total, total))
    score = float(np.mean([entry["score"]["mean"] for entry in envs.values()])) if envs else 0.0
    if envs:
        low, high = np.percentile(np.mean(resampled_scores, axis=0), [2.5, 97.5])
    else:
        low = high = 0.0
    overall["score"] = _interval(score, float(low), float(high))
    return {"envs": envs, "overall": overall}


def summary_differences(claimed: Any, actual: Any, path: str = "summary") -> list[str]:
    """Where two summaries differ (numbers compared by :func:`same_number`)."""
    if isinstance(actual, Mapping):
        if not isinstance(claimed, Mapping) or set(claimed) != set(actual):
            return [f"{path}: keys {sorted(claimed) if isinstance(claimed, Mapping) else claimed!r}"]
        return [
            d
            for key in sorted(actual)
            for d in summary_differences(claimed[key], actual[key], f"{path}.{key}")
        ]
    if isinstance(claimed, bool) or not isinstance(claimed, (int, float)):
        return [f"{path}: {claimed!r}, recomputed {actual!r}"]
    if not same_number(claimed, actual):
        return [f"{path}: {claimed!r}, recomputed {actual!r}"]
    return []

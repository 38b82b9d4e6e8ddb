"""Print a training run's learning curve from its ``metrics.jsonl``.

::

    python docs/tutorials/scripts/read_metrics.py runs/gigpo-sokoban/metrics.jsonl

One row every ``--every`` iterations and one for the last: the episodes seen so
far, that iteration's success rate, and the moving average of the success rate
over the last ``--window`` iterations (fewer at the start), the number the
experiment in ``baselines/experiments/estimators.py`` reports as final success.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from baselines.experiments.common import moving_average
from baselines.metrics import read_jsonl


def curve_table(records: Sequence[dict[str, Any]], every: int = 10, window: int = 5) -> str:
    """The rows described in the module docstring, as aligned text."""
    smoothed = moving_average([record["success"] for record in records], window)
    shown = sorted({*range(0, len(records), every), len(records) - 1})
    lines = [f"{'iteration':>9}  {'episodes':>8}  {'success':>7}  {f'mean of last {window}':>14}"]
    for index in shown:
        record = records[index]
        iteration, episodes, success = record["iteration"], record["episodes_seen"], record["success"]
        lines.append(f"{iteration:>9}  {episodes:>8}  {success:>7.3f}  {smoothed[index]:>14.3f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metrics", help="a run's metrics.jsonl")
    parser.add_argument("--every", type=int, default=10, help="show one iteration in this many")
    parser.add_argument("--window", type=int, default=5, help="iterations in the moving average")
    args = parser.parse_args(argv)
    records = read_jsonl(args.metrics)
    if not records:
        parser.error(f"{args.metrics} holds no iteration yet")
    if args.every < 1 or args.window < 1:
        parser.error("--every and --window must be at least 1")
    print(curve_table(records, args.every, args.window))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The trainers' command line: ``python -m baselines.trainers --config CONFIG [--set S.KEY=V] [--resume]``.

``--config`` takes a path to a YAML file or the name of a config shipped in the package
(``--config mini_sokoban`` reads ``baselines/configs/mini_sokoban.yaml`` from any folder).

``--print-config`` prints the resolved config as one JSON line (every section, defaults filled
in) and the algorithm it names, then exits without building anything.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from baselines.trainers.config import ConfigError, load_config, packaged_configs


def progress_line(record: dict[str, Any]) -> str:
    """One line per iteration: success, return and the time split."""
    return (
        f"iter {record['iteration']:4d}  success {record['success']:.3f}  return {record['return']:+.3f}  "
        f"gen {record['time/generation_s']:.1f}s ({record['tokens_per_s']:.0f} tok/s)  "
        f"env {record['time/env_s']:.1f}s  "
        f"advantage {record['time/advantage_s']:.1f}s  update {record['time/update_s']:.1f}s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m baselines.trainers", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--config",
        required=True,
        help=f"a YAML file, or a packaged config's name: {', '.join(packaged_configs())}",
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help="override a config key"
    )
    parser.add_argument("--resume", action="store_true", help="continue from <run.out_dir>/checkpoint.pt")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config, args.set)
    except ConfigError as error:
        print(f"{args.config}: {error}", file=sys.stderr)
        return 2
    if args.print_config:
        print(json.dumps(config.to_dict(), sort_keys=True))
        return 0
    from baselines.trainers.run import TrainingRun

    TrainingRun(config, resume=args.resume).train(
        progress=lambda record: print(progress_line(record), flush=True)
    )
    print(f"metrics: {config.run.out_dir}/metrics.jsonl")
    return 0

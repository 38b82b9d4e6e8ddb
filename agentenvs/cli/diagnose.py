"""``agentenvs diagnose grouping ID``: score GiGPO's anchor groupings against the true state.

Plays ``--episodes`` episodes of the agent in rollout groups of
``--group-size`` (:mod:`agentenvs.diagnostics.grouping`) and prints a table:
for each anchor (observation, similarity) how often its groups mix or split
true states. ``--out DIR`` writes the results (JSON) and histograms (PNG)
there. Exits 1 when the agent cannot play the id, or when the histograms
cannot be drawn (the JSON is still written).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agentenvs.agents import AGENTS, AgentUnavailable
from agentenvs.cli.common import (
    UsageError,
    add_env_options,
    make_env,
    note,
    parse_env_kwargs,
    progress,
    resolve_env_id,
)
from agentenvs.core.untrusted import one_line

GROUPING_HELP = "how often GiGPO's anchor groups (observation, similarity) mix or split true states"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """``diagnose`` and its one diagnostic so far, ``grouping``."""
    diagnose = subparsers.add_parser("diagnose", help="diagnostics of what the envs' keys tell a trainer")
    diagnostics = diagnose.add_subparsers(dest="diagnostic", required=True, metavar="DIAGNOSTIC")
    grouping = diagnostics.add_parser("grouping", help=GROUPING_HELP, description=GROUPING_HELP)
    grouping.set_defaults(handler=run)
    grouping.add_argument("env_id", metavar="ID")
    grouping.add_argument("--agent", choices=sorted(AGENTS), default="random", help="default random")
    grouping.add_argument(
        "--episodes", type=int, default=64, help="episodes, a multiple of --group-size (default 64)"
    )
    grouping.add_argument(
        "--group-size", type=int, default=8, help="episodes per rollout group, one task each (default 8)"
    )
    grouping.add_argument("--seed", type=int, default=0, help="rollout group g resets with SEED + g")
    grouping.add_argument("--out", metavar="DIR", help="write the results (JSON) and histograms (PNG) here")
    add_env_options(grouping)


def run(args: argparse.Namespace) -> int:
    """``diagnose grouping``: score GiGPO's anchor groupings against the true state."""
    from agentenvs.diagnostics import grouping

    if args.group_size < 1 or args.episodes < args.group_size or args.episodes % args.group_size:
        raise UsageError(
            f"--episodes ({args.episodes}) must be a positive multiple of --group-size ({args.group_size})"
        )
    env_id = resolve_env_id(args.env_id)
    env = make_env(env_id, parse_env_kwargs(args.env_kwarg, args.split))
    notes = Console(stderr=True)
    try:
        with progress(notes) as bar:
            task = bar.add_task(f"{env_id} {args.agent}", total=args.episodes)
            results = grouping.diagnose(
                env,
                env_id,
                args.agent,
                episodes=args.episodes,
                group_size=args.group_size,
                seed=args.seed,
                on_episode=lambda: bar.advance(task),
            )
    except AgentUnavailable as exc:
        note(notes, f"agent {args.agent} cannot play {env_id}: {one_line(exc)}", "red")
        return 1
    finally:
        env.close()
    table = Table(
        title=f"anchor grouping vs true state: {env_id}, {args.agent} agent, {results['episodes']} episodes "
        f"in groups of {results['group_size']}, {results['turns']} turns, {results['true_states']} states",
        title_justify="left",
    )
    for column in grouping.TABLE_COLUMNS:
        table.add_column(column, justify="left" if column == "anchor" else "right")
    for row in grouping.table_rows(results):
        table.add_row(*row)
    Console(width=200).print(table)
    if args.out:
        try:
            paths = grouping.write_results(results, Path(args.out))
        except ImportError as exc:
            written = Path(args.out) / f"{grouping.results_name(env_id, args.agent)}.json"
            note(notes, f"wrote {written}; {exc}", "red")
            return 1
        except OSError as exc:
            raise UsageError(f"cannot write to {args.out}: {exc.strerror}") from None
        note(notes, "wrote " + ", ".join(map(str, paths)))
    return 0

"""``agentenvs check-data ID DATA_DIR``: check a data folder through an env's official loader.

Loads every task of the folder, plays the expert and the random agent on
``--episodes`` tasks spread over it, and prints a table: the tasks loaded per
split, what the original's rules skipped and why, the tasks that failed to
load, each agent's success and the crashes; then every unreadable task, crash
and task the expert did not solve on a line of its own, and ``check-data
passed`` or ``FAILED``. Exits 1 when a task does not load, an episode crashes,
the expert fails a task it was given, or the folder cannot be opened at all.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agentenvs.cli.common import (
    UsageError,
    add_command,
    add_env_kwarg_option,
    note,
    output_console,
    parse_env_kwargs,
    progress,
    resolve_env_id,
)
from agentenvs.core import registration
from agentenvs.core.registration import unavailable_reason


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    sub = add_command(
        subparsers,
        "check-data",
        run,
        "load a data folder through an env's official loader, report what it skipped, play expert and random",
    )
    sub.add_argument("env_id", metavar="ID")
    sub.add_argument("data_dir", metavar="DATA_DIR", help="a folder in the original's published layout")
    sub.add_argument("--episodes", type=int, default=10, help="tasks played by each agent (default 10)")
    add_env_kwarg_option(sub)


def run(args: argparse.Namespace) -> int:
    """Load a data folder through the env's official loader, play the expert and the random agent, report."""
    from agentenvs.eval.data_check import DataFolderError, check_data, takes_data_dir

    env_id = resolve_env_id(args.env_id)
    reason = unavailable_reason(env_id)
    if reason is not None:
        raise UsageError(f"{env_id} {reason}")
    if not takes_data_dir(env_id):
        with_data = sorted(
            e.env_id for e in registration.entries() if e.variant_of is None and _has_data_dir(e.env_id)
        )
        raise UsageError(f"{env_id} reads no data folder (no data_dir=); these do: {', '.join(with_data)}")
    if not Path(args.data_dir).is_dir():
        raise UsageError(f"no such folder: {args.data_dir}")
    if args.episodes < 1:
        raise UsageError(f"--episodes must be >= 1, got {args.episodes}")
    kwargs = parse_env_kwargs(args.env_kwarg, None)
    for fixed in ("data_dir", "split"):
        if fixed in kwargs:
            raise UsageError(f"--env-kwarg {fixed}= is set by check-data itself")
    notes = Console(stderr=True)
    with progress(notes) as bar:
        task = bar.add_task("open", total=None)

        def advance(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total)

        try:
            report = check_data(
                env_id, str(args.data_dir), episodes=args.episodes, env_kwargs=kwargs, progress=advance
            )
        except DataFolderError as exc:
            note(notes, f"{env_id} cannot open {args.data_dir}: {exc}", "red")
            return 1
    _print_data_report(report)
    return 0 if report.passed else 1


def _has_data_dir(env_id: str) -> bool:
    from agentenvs.eval.data_check import takes_data_dir

    try:
        return takes_data_dir(env_id)
    except ImportError:  # a family whose extra is missing here
        return False


def _print_data_report(report: Any) -> None:
    """The check's table, then every unreadable task, crash and unsolved task on a line of its own."""
    console = output_console()
    table = Table(title=f"agentenvs check-data {report.env_id} {report.data_dir}", title_justify="left")
    table.add_column("what", overflow="fold")
    table.add_column("count", justify="right", no_wrap=True)
    splits = ", ".join(f"{split} {count:,}" for split, count in report.tasks.items())
    table.add_row(f"tasks loaded ({splits or 'none'})", f"{report.loaded:,}")
    for reason, count in sorted(report.skipped.items()):
        table.add_row(f"skipped: {reason}", f"{count:,}")
    table.add_row("tasks that failed to load", f"{len(report.unreadable):,}")
    for name, result in report.agents.items():
        if result.unavailable:
            table.add_row(f"{name} success", f"unavailable: {result.unavailable}")
        else:
            share = f" ({result.solved / result.played:.0%})" if result.played else ""
            table.add_row(f"{name} success", f"{result.solved}/{result.played}{share}")
    table.add_row("crashes", f"{len(report.crashes):,}")
    console.print(table)
    for task_id, error in report.unreadable:
        console.print(f"failed to load: task {task_id}: {error}", markup=False, highlight=False)
    for agent, task_id, error in report.crashes:
        console.print(f"crash: {agent} on task {task_id}: {error}", markup=False, highlight=False)
    expert = report.agents.get("expert")
    for task_id in expert.unsolved if expert is not None else ():
        console.print(f"expert did not solve task {task_id}", markup=False, highlight=False)
    verdict = "passed" if report.passed else "FAILED"
    console.print(f"check-data {verdict}", markup=False, highlight=False)

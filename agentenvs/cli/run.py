"""``agentenvs run ID|all|PATTERN``: run scripted agents and print a summary table.

Episode ``e`` of every (env, agent) pair is played from ``reset(seed=SEED + e)``.
Prints one summary row per pair (episodes, success, score, turns, return),
then each pair's mean reward components on lines of their own. ``all`` selects
every main id, a shell pattern every id it matches; ids whose extra is missing
are skipped with a note on stderr. ``--out FILE`` writes one JSON line per
episode (:class:`agentenvs.eval.episodes.EpisodeRecord`), which ``agentenvs
replay`` re-runs. Exits 1 when nothing ran or an agent or env raised (that
pair's row is left out, the others still run).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import IO, Any

import gymnasium as gym
from rich.console import Console
from rich.table import Table

from agentenvs.agents import AGENTS, AgentUnavailable
from agentenvs.cli.common import (
    UsageError,
    add_command,
    add_env_options,
    is_pattern,
    make_env,
    matching_ids,
    note,
    output_console,
    parse_env_kwargs,
    progress,
    resolve_env_id,
)
from agentenvs.core.env import MissingProgram
from agentenvs.core.registration import main_ids, unavailable_reason
from agentenvs.core.untrusted import one_line
from agentenvs.eval.episodes import EpisodeRecord, play_episode


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    sub = add_command(subparsers, "run", run, "run scripted agents and print a summary table")
    sub.add_argument(
        "env_id", metavar="ID|all|PATTERN", help="an id, all ids, or a shell pattern ('BabyAI-Go*')"
    )
    sub.add_argument(
        "--agent", action="append", help=f"agent to run (repeatable; default random): {', '.join(AGENTS)}"
    )
    sub.add_argument("--episodes", type=int, default=20, help="episodes per env and agent (default 20)")
    sub.add_argument("--seed", type=int, default=0, help="episode e resets with seed SEED + e (default 0)")
    sub.add_argument("--out", metavar="FILE", help="write one JSON line per episode")
    add_env_options(sub)


def run(args: argparse.Namespace) -> int:
    agent_names = list(dict.fromkeys(args.agent or ["random"]))
    for name in agent_names:
        if name not in AGENTS:
            raise UsageError(f"unknown agent {name!r}; choose from {sorted(AGENTS)}")
    if args.episodes < 1:
        raise UsageError(f"--episodes must be >= 1, got {args.episodes}")
    kwargs = parse_env_kwargs(args.env_kwarg, args.split)
    notes = Console(stderr=True)
    envs = _open_envs(args.env_id, kwargs, notes)
    env_kwargs = {key: value for key, value in kwargs.items() if key != "split"}
    out = _open_out(args.out)
    try:
        rows, failures = _play_all(envs, agent_names, args, env_kwargs, out, notes)
    finally:
        if out is not None:
            out.close()
        for _, env in envs:
            env.close()
    if not rows:
        note(notes, "nothing ran", "red")
        return 1
    _print_table(rows, split=args.split)
    if args.out:
        note(notes, f"wrote {sum(row['episodes'] for row in rows)} episodes to {args.out}")
    if failures:
        note(notes, f"{failures} (env, agent) runs stopped on an error", "red")
    return 1 if failures else 0


def _open_envs(name: str, kwargs: dict[str, Any], notes: Console) -> list[tuple[str, gym.Env]]:
    """The envs ``name`` selects (an id, ``all`` or a pattern); a selected id that cannot run is skipped."""
    envs: list[tuple[str, gym.Env]] = []
    if name == "all" or is_pattern(name):
        selected = main_ids() if name == "all" else matching_ids(name)
        for env_id in selected:
            reason = unavailable_reason(env_id)
            if reason is not None:
                note(notes, f"skipping {env_id}: {reason}", "yellow")
                continue
            try:
                envs.append((env_id, make_env(env_id, kwargs)))
            except MissingProgram as exc:
                note(notes, f"skipping {env_id}: {exc}", "yellow")
    else:
        env_id = resolve_env_id(name)
        envs.append((env_id, make_env(env_id, kwargs)))
    return envs


def _open_out(path: str | None) -> IO[str] | None:
    if path is None:
        return None
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def _play_all(
    envs: list[tuple[str, gym.Env]],
    agent_names: list[str],
    args: argparse.Namespace,
    env_kwargs: dict[str, Any],
    out: IO[str] | None,
    notes: Console,
) -> tuple[list[dict[str, Any]], int]:
    """Every (env, agent) pair's summary row, and how many pairs stopped on an error."""
    rows = []
    failures = 0
    with progress(notes) as bar:
        task = bar.add_task("", total=len(envs) * len(agent_names) * args.episodes)
        for env_id, env in envs:
            for agent_name in agent_names:
                bar.update(task, description=f"{env_id} {agent_name}")
                records: list[EpisodeRecord] = []
                try:
                    _play_pair(
                        env, env_id, agent_name, args, env_kwargs, out, records, lambda: bar.advance(task)
                    )
                except AgentUnavailable as exc:
                    note(notes, f"skipping agent {agent_name} on {env_id}: {exc}", "yellow")
                    bar.advance(task, args.episodes - len(records))
                    continue
                except Exception as exc:
                    failures += 1
                    note(
                        notes,
                        f"error: agent {agent_name} on {env_id}, episode seed {args.seed + len(records)}: "
                        f"{type(exc).__name__}: {one_line(exc)}",
                        "red",
                    )
                    bar.advance(task, args.episodes - len(records))
                    continue
                rows.append(_summary(env_id, agent_name, records))
    return rows, failures


def _play_pair(
    env: gym.Env,
    env_id: str,
    agent_name: str,
    args: argparse.Namespace,
    env_kwargs: dict[str, Any],
    out: IO[str] | None,
    records: list[EpisodeRecord],
    on_episode: Callable[[], None],
) -> None:
    """Play ``args.episodes`` episodes, appending each record to ``records`` (and to ``out``) as it ends."""
    for episode in range(args.episodes):
        record = play_episode(env, agent_name, seed=args.seed + episode, env_id=env_id, env_kwargs=env_kwargs)
        records.append(record)
        if out is not None:
            out.write(json.dumps(record.to_json()) + "\n")
        on_episode()


def _summary(env_id: str, agent_name: str, records: list[EpisodeRecord]) -> dict[str, Any]:
    count = len(records)
    scores = [r.score for r in records if r.score is not None]
    names = sorted({name for r in records for name in r.component_sums})
    return {
        "env": env_id,
        "agent": agent_name,
        "episodes": count,
        "success": sum(bool(r.success) for r in records) / count,
        "score": sum(scores) / len(scores) if scores else None,
        "turns": sum(r.turns for r in records) / count,
        "return": sum(r.episode_return for r in records) / count,
        "components": {name: sum(r.component_sums.get(name, 0.0) for r in records) / count for name in names},
    }


def _print_table(rows: list[dict[str, Any]], split: str | None) -> None:
    """The summary table, then each run's reward components on lines of their own,
    so that every column stays readable on an 80-column terminal."""
    console = output_console()
    table = Table(title=f"agentenvs run (split: {split or 'env default'})", title_justify="left")
    table.add_column("env", overflow="fold", min_width=10)
    table.add_column("agent", overflow="fold", min_width=6)
    for header in ("episodes", "success", "score", "turns", "return"):
        table.add_column(header, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(
            row["env"],
            row["agent"],
            str(row["episodes"]),
            f"{row['success']:.0%}",
            "-" if row["score"] is None else f"{row['score']:.3f}",
            f"{row['turns']:.2f}",
            f"{row['return']:+.2f}",
        )
    console.print(table)
    console.print("reward components (mean sum per episode):", highlight=False)
    for row in rows:
        console.print(f"  {row['env']} {row['agent']}:", markup=False, highlight=False)
        entries = [f"{name} {value:+.2f}" for name, value in row["components"].items()] or ["-"]
        for line in _packed(entries, console.width - 4):
            console.print(f"    {line}", markup=False, highlight=False)


def _packed(entries: list[str], width: int) -> list[str]:
    """``entries`` joined by two spaces into lines of at most ``width`` characters (entries stay whole)."""
    lines = [entries[0]]
    for entry in entries[1:]:
        if len(lines[-1]) + 2 + len(entry) <= width:
            lines[-1] += f"  {entry}"
        else:
            lines.append(entry)
    return lines

"""The ``agentenvs`` command.

::

    agentenvs list
    agentenvs play ID [--seed S] [--split SPLIT] [--env-kwarg KEY=VALUE ...]
    agentenvs run ID|all|PATTERN --agent random --agent expert [--episodes 20] [--seed 0]
                  [--split test] [--out results.jsonl] [--env-kwarg KEY=VALUE ...]
    agentenvs replay results.jsonl [--backend inprocess|subprocess|ray] [--workers N]
    agentenvs check-data ID DATA_DIR [--episodes 10] [--env-kwarg KEY=VALUE ...]
    agentenvs diagnose grouping ID [--agent random|expert] [--episodes 64] [--group-size 8] [--out DIR]
    agentenvs eval ID|all|PATTERN ... --model NAME (--base-url URL [--api-key-env VAR] | --local-model PATH)
                   [--panel test] [--out DIR] [--concurrency 8] [--model-size 7B]
                   [--max-tokens N] [--temperature 0] [--top-p 1] [--seed S] [--history-window K]
                   [--max-model-len N]
    agentenvs serve ID [--port 8000] [--host 127.0.0.1] [--max-sessions 128] [--env-kwarg KEY=VALUE ...]

``run`` plays episode ``e`` of every (env, agent) pair from ``reset(seed=S + e)``
and prints one summary row per pair. ``all`` selects every main id (variants
such as the per-level ``BabyAI-<Level>`` ids are left to patterns), a shell
pattern such as ``'BabyAI-*'`` every id it matches; those whose extra is
missing are skipped with a note. ``--out`` writes one JSON line per episode
(see :class:`agentenvs.eval.episodes.EpisodeRecord`), which ``replay`` re-runs
and checks (:mod:`agentenvs.eval.replay`). ``eval`` plays a chat model on a
fixed panel and writes a submission bundle (see :mod:`agentenvs.eval.evaluate`);
rerun it to resume. ``serve`` exposes an id as an OpenEnv environment server,
one env per WebSocket session (:mod:`agentenvs.integrations.openenv`).
``--env-kwarg`` values are read as JSON when they parse
(``max_turns=5``, ``dim_room=[8,8]``) and as plain strings otherwise.

Exit status: 0 on success; 1 when ``replay`` finds a mismatch, or when
``run`` could run nothing or an agent or env raised (that pair's row is left
out, the others still run); 2 for bad arguments (unknown id or agent, bad kwarg,
missing file; a results file that is empty, not text, cut short or not
records), reported in one line on stderr. ``check-data`` exits 1 when a task
does not load, an episode crashes or the expert fails a task it was given, or
when the folder cannot be opened at all.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import gymnasium as gym
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import agentenvs
from agentenvs.agents import AGENTS, AgentUnavailable
from agentenvs.core import registration
from agentenvs.core.env import MissingProgram
from agentenvs.core.registration import main_ids, unavailable_reason
from agentenvs.core.untrusted import one_line
from agentenvs.eval.bundle import BundleError, parse_json
from agentenvs.eval.episodes import EpisodeRecord, play_episode

QUIT_WORDS = ("quit", "exit")


class UsageError(Exception):
    """Bad arguments: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


# ------------------------------------------------------------------ env access
def resolve_env_id(name: str) -> str:
    """A registered id, accepting ``Sokoban-v0`` for ``agentenvs/Sokoban-v0``; a usage error otherwise."""
    try:
        return registration.resolve_id(name)
    except registration.UnknownEnvError as exc:
        raise UsageError(str(exc)) from None


def matching_ids(pattern: str) -> list[str]:
    """Registered ids matching a shell pattern; a pattern that matches none is a usage error."""
    ids = registration.matching_ids(pattern)
    if not ids:
        raise UsageError(f"no registered id matches {pattern!r}; `agentenvs list` shows the ids")
    return ids


def make_env(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    reason = unavailable_reason(env_id)
    if reason is not None:
        raise UsageError(f"{env_id} {reason}")
    try:
        return gym.make(env_id, disable_env_checker=True, **kwargs)
    except (TypeError, ValueError, KeyError) as exc:
        raise UsageError(f"{env_id} rejects the env kwargs {kwargs}: {exc}") from None


def parse_env_kwargs(pairs: Sequence[str] | None, split: str | None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, text = pair.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--env-kwarg wants KEY=VALUE, got {pair!r}")
        try:
            kwargs[key] = json.loads(text)
        except json.JSONDecodeError:
            kwargs[key] = text
    if split is not None:
        kwargs["split"] = split
    return kwargs


def _note(console: Console, text: str, style: str | None = None) -> None:
    """One unwrapped line on the notes console (stderr), taken literally."""
    console.print(text, style=style, markup=False, highlight=False, soft_wrap=True)


# --------------------------------------------------------------------- list
def cmd_list(args: argparse.Namespace) -> int:
    width = max((len(entry.env_id) for entry in registration.entries()), default=0)
    for entry in registration.entries():
        reason = unavailable_reason(entry.env_id)
        note = f"  [{reason.split(':')[0]}]" if reason else ""
        print(f"{entry.env_id:<{width}}  {entry.summary}{note}")
    return 0


# --------------------------------------------------------------------- play
def cmd_play(args: argparse.Namespace) -> int:
    env_id = resolve_env_id(args.env_id)
    env = make_env(env_id, parse_env_kwargs(args.env_kwarg, args.split))
    try:
        return _play(env, env_id, args.seed)
    finally:
        env.close()


def _play(env: gym.Env, env_id: str, seed: int) -> int:
    weights = getattr(env.unwrapped, "reward_weights", {})
    observation, info = env.reset(seed=seed)
    print(f"{env_id} | task {info.get('task_id')} | type an action; '{QUIT_WORDS[0]}' or end of input exits")
    episode_return = 0.0
    while True:
        _show(observation, info)
        try:
            line = input("> ")
        except EOFError:
            print()
            return 0
        if not sys.stdin.isatty():
            print(line)  # show piped input as if typed
        if line.strip().lower() in QUIT_WORDS:
            return 0
        observation, reward, terminated, truncated, info = env.step(line)
        episode_return += reward
        for name, value in info.get("reward_components", {}).items():
            weight = weights.get(name)
            weighted = f" x {weight:g} = {weight * value + 0.0:+.2f}" if weight is not None else ""
            print(f"  {name:<16} {value:+.2f}{weighted}")
        print(f"  {'reward':<16} {reward:+.2f}   (return {episode_return:+.2f})")
        if terminated or truncated:
            _show(observation, {})
            ending = "terminated" if terminated else "truncated"
            print(
                f"episode {ending} after {info.get('turn')} turns: success {info.get('success')}, "
                f"score {info.get('score')}, return {episode_return:+.2f}"
            )
            return 0


def _show(observation: Any, info: dict[str, Any]) -> None:
    if isinstance(observation, str):
        print(f"\n{observation}")
    else:
        print(f"\n[{type(observation).__name__} observation of shape {getattr(observation, 'shape', '?')}]")
    admissible = info.get("admissible_actions")
    if admissible:
        shown = ", ".join(admissible[:30]) + (
            f", ... ({len(admissible)} in all)" if len(admissible) > 30 else ""
        )
        print(f"actions: {shown}")


# ---------------------------------------------------------------------- run
def cmd_run(args: argparse.Namespace) -> int:
    agent_names = list(dict.fromkeys(args.agent or ["random"]))
    for name in agent_names:
        if name not in AGENTS:
            raise UsageError(f"unknown agent {name!r}; choose from {sorted(AGENTS)}")
    if args.episodes < 1:
        raise UsageError(f"--episodes must be >= 1, got {args.episodes}")
    kwargs = parse_env_kwargs(args.env_kwarg, args.split)
    notes = Console(stderr=True)
    envs: list[tuple[str, gym.Env]] = []
    if args.env_id == "all" or any(char in args.env_id for char in "*?["):
        selected = main_ids() if args.env_id == "all" else matching_ids(args.env_id)
        for env_id in selected:
            reason = unavailable_reason(env_id)
            if reason is not None:
                _note(notes, f"skipping {env_id}: {reason}", "yellow")
                continue
            try:
                envs.append((env_id, make_env(env_id, kwargs)))
            except MissingProgram as exc:
                _note(notes, f"skipping {env_id}: {exc}", "yellow")
    else:
        env_id = resolve_env_id(args.env_id)
        envs.append((env_id, make_env(env_id, kwargs)))
    env_kwargs = {key: value for key, value in kwargs.items() if key != "split"}
    out = _open_out(args.out)
    rows = []
    failures = 0
    try:
        with _progress(notes) as progress:
            task = progress.add_task("", total=len(envs) * len(agent_names) * args.episodes)
            for env_id, env in envs:
                for agent_name in agent_names:
                    progress.update(task, description=f"{env_id} {agent_name}")
                    records = []
                    try:
                        for episode in range(args.episodes):
                            record = play_episode(
                                env,
                                agent_name,
                                seed=args.seed + episode,
                                env_id=env_id,
                                env_kwargs=env_kwargs,
                            )
                            records.append(record)
                            if out is not None:
                                out.write(json.dumps(record.to_json()) + "\n")
                            progress.advance(task)
                    except AgentUnavailable as exc:
                        _note(notes, f"skipping agent {agent_name} on {env_id}: {exc}", "yellow")
                        progress.advance(task, args.episodes - len(records))
                        continue
                    except Exception as exc:
                        failures += 1
                        _note(
                            notes,
                            f"error: agent {agent_name} on {env_id}, episode seed {args.seed + len(records)}: "
                            f"{type(exc).__name__}: {one_line(exc)}",
                            "red",
                        )
                        progress.advance(task, args.episodes - len(records))
                        continue
                    rows.append(_summary(env_id, agent_name, records))
    finally:
        if out is not None:
            out.close()
        for _, env in envs:
            env.close()
    if not rows:
        _note(notes, "nothing ran", "red")
        return 1
    _print_table(rows, split=args.split)
    if args.out:
        _note(notes, f"wrote {sum(row['episodes'] for row in rows)} episodes to {args.out}")
    if failures:
        _note(notes, f"{failures} (env, agent) runs stopped on an error", "red")
    return 1 if failures else 0


def _open_out(path: str | None) -> Any:
    if path is None:
        return None
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


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
    console = Console()
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(width=200)  # piped output: no terminal width to respect
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


# ------------------------------------------------------------------- replay
def cmd_replay(args: argparse.Namespace) -> int:
    from agentenvs.eval.replay import Replayed, env_key, replay_records

    path = Path(args.results)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    numbered = _read_records(path)
    records = [dataclasses.replace(record, env_id=resolve_env_id(record.env_id)) for _, record in numbered]
    for env_id, _, _ in sorted({env_key(record) for record in records}):
        reason = unavailable_reason(env_id)
        if reason is not None:
            raise UsageError(f"{env_id} {reason}")
    mismatched = 0
    notes = Console(stderr=True)
    with _progress(notes) as progress:
        task = progress.add_task("replay", total=len(records))

        def report(index: int, replayed: Replayed) -> None:
            nonlocal mismatched
            if not replayed.reproduced:
                mismatched += 1
                line_number, record = numbered[index]
                _note(
                    progress.console,
                    f"{path.name}:{line_number} {record.env_id} {record.agent} task {record.task_id} "
                    f"seed {record.seed}: " + "; ".join(replayed.problems[:4]),
                )
            progress.advance(task)

        replay_records(records, backend=args.backend, num_workers=args.workers, on_replayed=report)
    verdict = "all match" if not mismatched else f"{mismatched} mismatched"
    print(f"replayed {len(records)} episodes from {path}: {verdict}")
    return 1 if mismatched else 0


def _read_records(path: Path) -> list[tuple[int, EpisodeRecord]]:
    """The records of a results file; a ``UsageError`` for an empty, binary or cut-short file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{path} is not a text file of episode records (byte {exc.start} is not UTF-8)"
        ) from None
    if "\x00" in text:
        raise UsageError(f"{path} is not a text file of episode records (it holds NUL bytes)")
    lines = text.split("\n")
    records = []
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = parse_json(line)
        except BundleError as exc:
            if line_number == len(lines):  # the last line, with no newline after it
                raise UsageError(
                    f"{path}:{line_number} is cut short: the file ends inside a record"
                ) from None
            raise UsageError(f"{path}:{line_number} is not an episode record: {one_line(exc)}") from None
        try:
            records.append((line_number, EpisodeRecord.from_json(data, kind="record")))
        except BundleError as exc:
            raise UsageError(f"{path}:{line_number} is not an episode record: {one_line(exc)}") from None
    if not records:
        raise UsageError(f"{path} holds no episode records")
    return records


# --------------------------------------------------------------- check-data
def cmd_check_data(args: argparse.Namespace) -> int:
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
    with _progress(notes) as progress:
        bar = progress.add_task("open", total=None)

        def advance(what: str, done: int, total: int) -> None:
            progress.update(bar, description=what, completed=done, total=total)

        try:
            report = check_data(
                env_id, str(args.data_dir), episodes=args.episodes, env_kwargs=kwargs, progress=advance
            )
        except DataFolderError as exc:
            _note(notes, f"{env_id} cannot open {args.data_dir}: {exc}", "red")
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
    console = Console(width=200) if not Console().is_terminal and not os.environ.get("COLUMNS") else Console()
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


# --------------------------------------------------------------------- eval
def cmd_eval(args: argparse.Namespace) -> int:
    from agentenvs.core.chat import ChatError
    from agentenvs.eval.bundle import FEW_EPISODES
    from agentenvs.eval.evaluate import GenerationSettings, run_eval
    from agentenvs.eval.panel import panel_spec

    env_ids: list[str] = []
    for name in args.env_ids:
        if name == "all":
            env_ids += [env_id for env_id in main_ids() if unavailable_reason(env_id) is None]
        elif any(char in name for char in "*?["):
            env_ids += matching_ids(name)
        else:
            env_ids.append(resolve_env_id(name))
    env_ids = list(dict.fromkeys(env_ids))
    for env_id in env_ids:
        reason = unavailable_reason(env_id)
        if reason is not None:
            raise UsageError(f"{env_id} {reason}")
    try:
        spec = panel_spec(args.panel)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        settings = GenerationSettings(
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            top_p=args.top_p,
            seed=args.seed,
            history_window=args.history_window,
            max_model_len=args.max_model_len,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    backend, endpoint = _chat_backend(args)
    out = Path(args.out or f"eval-{args.model.replace('/', '_')}-{spec.name}")
    notes = Console(stderr=True)
    with _progress(notes) as progress:
        task = progress.add_task(f"eval {args.model}", total=None)

        def advance(episode: Any, record: EpisodeRecord | None) -> None:
            if record is None:
                _note(progress.console, f"crashed: {episode.env_id} task {episode.task_id}", "red")
            progress.advance(task)

        try:
            report = run_eval(
                env_ids,
                backend,
                out,
                spec=spec,
                model=args.model,
                model_size=args.model_size,
                endpoint=endpoint,
                concurrency=args.concurrency,
                settings=settings,
                on_resume=lambda finished: progress.update(
                    task, description=f"replaying the {finished} episodes in {out}", total=finished
                ),
                on_replayed=lambda index, replayed: progress.advance(task),
                on_start=lambda pending: progress.reset(
                    task, description=f"eval {args.model}", total=pending
                ),
                on_episode=advance,
            )
        except (BundleError, ChatError) as exc:
            raise UsageError(str(exc)) from None
    print(
        f"{report.played} episodes played, {report.skipped} already in {out}, {len(report.crashed)} crashed; "
        f"time in the model {report.model_s:.1f} s, in the envs {report.env_s:.1f} s (summed over episodes)"
    )
    for episode, error in report.crashed[:10]:
        _note(
            notes,
            f"crashed: {episode.env_id} task {episode.task_id} seed {episode.seed}: {' '.join(error.split())}",
            "red",
        )
    if report.crashed:
        _note(notes, "rerun the same command to play the crashed episodes again", "red")
        return 1
    table = Table(title=f"agentenvs eval {args.model} (panel {spec.name})", title_justify="left")
    headers = ("env", "episodes", "success [95% Wilson]", "score [95% bootstrap]", "turns", "tokens in/out")
    for header in (*headers, "context overflows"):
        table.add_column(header, justify="left" if header == "env" else "right", no_wrap=True)
    for env_id, entry in report.summary["envs"].items():
        success, score = entry["success"], entry["score"]
        table.add_row(
            env_id,
            str(entry["episodes"]),
            f"{success['mean']:.0%} [{success['low']:.0%}, {success['high']:.0%}]",
            f"{score['mean']:.3f} [{score['low']:.3f}, {score['high']:.3f}]",
            f"{entry['turns']:.2f}",
            f"{entry['prompt_tokens']}/{entry['completion_tokens']}",
            str(entry["context_overflows"]),
        )
    Console(width=200).print(table)
    few = [env_id for env_id, entry in report.summary["envs"].items() if entry["episodes"] < FEW_EPISODES]
    if few:
        print(
            f"fewer than {FEW_EPISODES} episodes for {', '.join(few)}: "
            "the intervals are wide and rankings on them are tentative"
        )
    print(f"bundle: {out}")
    return 0


def _chat_backend(args: argparse.Namespace) -> tuple[Any, str]:
    """The chat backend the eval arguments name, and its endpoint kind."""
    if (args.base_url is None) == (args.local_model is None):
        raise UsageError("give exactly one of --base-url (an OpenAI-compatible endpoint) and --local-model")
    if args.local_model is not None:
        from agentenvs.agents.local import TransformersChat

        return TransformersChat.from_pretrained(args.local_model), "transformers"
    from agentenvs.core.chat import ChatClient

    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise UsageError(f"--api-key-env names {args.api_key_env}, which is not set")
    client = ChatClient(
        args.base_url,
        args.model,
        api_key=api_key,
        timeout_s=args.timeout_s,
        max_retries=args.max_retries,
    )
    return client, "openai"


# ----------------------------------------------------------- diagnose grouping
def cmd_diagnose_grouping(args: argparse.Namespace) -> int:
    """Score GiGPO's anchor groupings against the true state (:mod:`agentenvs.diagnostics.grouping`)."""
    from agentenvs.diagnostics import grouping

    if args.group_size < 1 or args.episodes < args.group_size or args.episodes % args.group_size:
        raise UsageError(
            f"--episodes ({args.episodes}) must be a positive multiple of --group-size ({args.group_size})"
        )
    env_id = resolve_env_id(args.env_id)
    env = make_env(env_id, parse_env_kwargs(args.env_kwarg, args.split))
    notes = Console(stderr=True)
    try:
        with _progress(notes) as progress:
            task = progress.add_task(f"{env_id} {args.agent}", total=args.episodes)
            results = grouping.diagnose(
                env,
                env_id,
                args.agent,
                episodes=args.episodes,
                group_size=args.group_size,
                seed=args.seed,
                on_episode=lambda: progress.advance(task),
            )
    except AgentUnavailable as exc:
        _note(notes, f"agent {args.agent} cannot play {env_id}: {one_line(exc)}", "red")
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
            _note(notes, f"wrote {written}; {exc}", "red")
            return 1
        except OSError as exc:
            raise UsageError(f"cannot write to {args.out}: {exc.strerror}") from None
        _note(notes, "wrote " + ", ".join(map(str, paths)))
    return 0


# -------------------------------------------------------------------- serve
def cmd_serve(args: argparse.Namespace) -> int:
    """Serve one id as an OpenEnv environment server until interrupted."""
    if not 1 <= args.port <= 65535 or args.max_sessions < 1:
        raise UsageError(
            f"--port must be in [1, 65535] and --max-sessions >= 1, got {args.port}, {args.max_sessions}"
        )
    env_id = resolve_env_id(args.env_id)
    kwargs = parse_env_kwargs(args.env_kwarg, args.split)
    make_env(env_id, kwargs).close()
    try:
        from agentenvs.integrations import openenv
    except ImportError as exc:
        raise UsageError(f"serve needs the openenv extra (pip install 'agentenvs[openenv]'): {exc}") from None
    _note(
        Console(stderr=True),
        f"serving {env_id} as an OpenEnv environment on http://{args.host}:{args.port} "
        f"(sessions on ws://{args.host}:{args.port}/ws, up to {args.max_sessions})",
    )
    openenv.serve(env_id, host=args.host, port=args.port, env_kwargs=kwargs, max_sessions=args.max_sessions)
    return 0


# ------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="agentenvs", description="Multi-turn text environments for LLM agents.")
    parser.add_argument("--version", action="version", version=f"agentenvs {agentenvs.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, handler: Callable[[argparse.Namespace], int], help_text: str
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(handler=handler)
        return sub

    def env_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--split", help="task split (train, valid, test); the env's default when omitted")
        sub.add_argument(
            "--env-kwarg", action="append", metavar="KEY=VALUE", help="env keyword argument (repeatable)"
        )

    command("list", cmd_list, "list the registered env ids")

    play = command("play", cmd_play, "play an env yourself in the terminal")
    play.add_argument("env_id", metavar="ID")
    play.add_argument("--seed", type=int, default=0, help="reset seed (picks the task)")
    env_options(play)

    run = command("run", cmd_run, "run scripted agents and print a summary table")
    run.add_argument(
        "env_id", metavar="ID|all|PATTERN", help="an id, all ids, or a shell pattern ('BabyAI-Go*')"
    )
    run.add_argument(
        "--agent", action="append", help=f"agent to run (repeatable; default random): {', '.join(AGENTS)}"
    )
    run.add_argument("--episodes", type=int, default=20, help="episodes per env and agent (default 20)")
    run.add_argument("--seed", type=int, default=0, help="episode e resets with seed SEED + e (default 0)")
    run.add_argument("--out", metavar="FILE", help="write one JSON line per episode")
    env_options(run)

    replay = command("replay", cmd_replay, "re-run the episodes of a results file and report mismatches")
    replay.add_argument("results", metavar="FILE")
    replay.add_argument(
        "--backend",
        choices=["inprocess", "subprocess", "ray"],
        default="inprocess",
        help="where the env copies run (default inprocess; subprocess and ray spread a large file over cores)",
    )
    replay.add_argument("--workers", type=int, help="worker processes for subprocess or ray (default: cores)")

    check = command(
        "check-data",
        cmd_check_data,
        "load a data folder through an env's official loader, report what it skipped, play expert and random",
    )
    check.add_argument("env_id", metavar="ID")
    check.add_argument("data_dir", metavar="DATA_DIR", help="a folder in the original's published layout")
    check.add_argument("--episodes", type=int, default=10, help="tasks played by each agent (default 10)")
    check.add_argument(
        "--env-kwarg", action="append", metavar="KEY=VALUE", help="env keyword argument (repeatable)"
    )

    evaluate = command("eval", cmd_eval, "evaluate a chat model on a panel and write a submission bundle")
    evaluate.add_argument("env_ids", nargs="+", metavar="ID|all|PATTERN")
    evaluate.add_argument(
        "--model", required=True, help="model name (sent to the endpoint, shown on the board)"
    )
    evaluate.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    evaluate.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    evaluate.add_argument(
        "--local-model", metavar="PATH", help="a local transformers model instead of an endpoint"
    )
    evaluate.add_argument("--panel", default="test", help="evaluation panel: test (default) or smoke")
    evaluate.add_argument(
        "--out", metavar="DIR", help="bundle folder (default eval-MODEL-PANEL); rerun to resume"
    )
    evaluate.add_argument("--concurrency", type=int, default=8, help="episodes in flight (default 8)")
    evaluate.add_argument(
        "--history-window", type=int, help="past turns shown besides the first (default all)"
    )
    evaluate.add_argument("--model-size", default="", help="parameter count shown on the board, e.g. 7B")
    evaluate.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    evaluate.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass (default 1)")
    evaluate.add_argument("--seed", type=int, help="sampling seed sent with every request (default none)")
    evaluate.add_argument(
        "--max-tokens", type=int, help="tokens per response for every env (default: each env's paper setting)"
    )
    evaluate.add_argument(
        "--max-model-len",
        type=int,
        help="the model's context in tokens (default: what the server's /v1/models reports)",
    )
    evaluate.add_argument("--timeout-s", type=float, default=60.0, help="per request (default 60)")
    evaluate.add_argument("--max-retries", type=int, default=3, help="per request (default 3)")

    serve = command("serve", cmd_serve, "serve an id as an OpenEnv environment server (HTTP and WebSocket)")
    serve.add_argument("env_id", metavar="ID")
    serve.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument(
        "--max-sessions",
        type=int,
        default=128,
        help="concurrent WebSocket sessions, one env each (default 128)",
    )
    env_options(serve)

    diagnose = commands.add_parser("diagnose", help="diagnostics of what the envs' keys tell a trainer")
    diagnostics = diagnose.add_subparsers(dest="diagnostic", required=True, metavar="DIAGNOSTIC")
    grouping_help = "how often GiGPO's anchor groups (observation, similarity) mix or split true states"
    grouping = diagnostics.add_parser("grouping", help=grouping_help, description=grouping_help)
    grouping.set_defaults(handler=cmd_diagnose_grouping)
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
    env_options(grouping)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.handler(args)
    except UsageError as exc:
        print(f"agentenvs: error: {one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

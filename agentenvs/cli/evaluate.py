"""``agentenvs eval ID|all|PATTERN ... --model NAME``: evaluate a chat model on a panel.

Plays the model (an OpenAI-compatible endpoint, ``--base-url``, or a local
transformers model, ``--local-model``) on every selected id's tasks of the
fixed panel and writes a submission bundle to ``--out``
(:mod:`agentenvs.eval.evaluate`); rerunning the same command resumes it. Prints
one line with the episodes played, skipped and crashed and the time spent,
then a table per env (success with its 95% Wilson interval, score with its
95% bootstrap interval, turns, tokens, context overflows) and the bundle's
folder. Exits 1 when an episode crashed (rerun to play it again).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agentenvs.cli.common import (
    UsageError,
    add_command,
    is_pattern,
    matching_ids,
    note,
    progress,
    resolve_env_id,
)
from agentenvs.core.registration import main_ids, unavailable_reason
from agentenvs.eval.bundle import BundleError
from agentenvs.eval.episodes import EpisodeRecord


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    sub = add_command(
        subparsers, "eval", run, "evaluate a chat model on a panel and write a submission bundle"
    )
    sub.add_argument("env_ids", nargs="+", metavar="ID|all|PATTERN")
    sub.add_argument("--model", required=True, help="model name (sent to the endpoint, shown on the board)")
    sub.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    sub.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    sub.add_argument(
        "--local-model", metavar="PATH", help="a local transformers model instead of an endpoint"
    )
    sub.add_argument("--panel", default="test", help="evaluation panel: test (default) or smoke")
    sub.add_argument("--out", metavar="DIR", help="bundle folder (default eval-MODEL-PANEL); rerun to resume")
    sub.add_argument("--concurrency", type=int, default=8, help="episodes in flight (default 8)")
    sub.add_argument("--history-window", type=int, help="past turns shown besides the first (default all)")
    sub.add_argument("--model-size", default="", help="parameter count shown on the board, e.g. 7B")
    sub.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    sub.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass (default 1)")
    sub.add_argument("--seed", type=int, help="sampling seed sent with every request (default none)")
    sub.add_argument(
        "--max-tokens", type=int, help="tokens per response for every env (default: each env's paper setting)"
    )
    sub.add_argument(
        "--max-model-len",
        type=int,
        help="the model's context in tokens (default: what the server's /v1/models reports)",
    )
    sub.add_argument("--timeout-s", type=float, default=60.0, help="per request (default 60)")
    sub.add_argument("--max-retries", type=int, default=3, help="per request (default 3)")


def run(args: argparse.Namespace) -> int:
    env_ids = _selected_ids(args.env_ids)
    spec, settings = _panel_and_settings(args)
    backend, endpoint = _chat_backend(args)
    out = Path(args.out or f"eval-{args.model.replace('/', '_')}-{spec.name}")
    notes = Console(stderr=True)
    report = _play_panel(args, env_ids, backend, endpoint, out, spec, settings, notes)
    print(
        f"{report.played} episodes played, {report.skipped} already in {out}, {len(report.crashed)} crashed; "
        f"time in the model {report.model_s:.1f} s, in the envs {report.env_s:.1f} s (summed over episodes)"
    )
    if report.crashed:
        _note_crashes(report.crashed, notes)
        return 1
    _print_summary(report.summary, args.model, spec.name)
    print(f"bundle: {out}")
    return 0


def _selected_ids(names: list[str]) -> list[str]:
    """The ids that ``names`` select, each once, in order; an id that cannot run here is a usage error.

    ``all`` selects the main ids that can run here, a shell pattern every id it matches.
    """
    env_ids: list[str] = []
    for name in names:
        if name == "all":
            env_ids += [env_id for env_id in main_ids() if unavailable_reason(env_id) is None]
        elif is_pattern(name):
            env_ids += matching_ids(name)
        else:
            env_ids.append(resolve_env_id(name))
    env_ids = list(dict.fromkeys(env_ids))
    for env_id in env_ids:
        reason = unavailable_reason(env_id)
        if reason is not None:
            raise UsageError(f"{env_id} {reason}")
    return env_ids


def _panel_and_settings(args: argparse.Namespace) -> tuple[Any, Any]:
    """The panel ``--panel`` names and the generation settings; a usage error for bad values."""
    from agentenvs.eval.evaluate import GenerationSettings
    from agentenvs.eval.panel import panel_spec

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
    return spec, settings


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


def _play_panel(
    args: argparse.Namespace,
    env_ids: list[str],
    backend: Any,
    endpoint: str,
    out: Path,
    spec: Any,
    settings: Any,
    notes: Console,
) -> Any:
    """Run (or resume) the eval into ``out`` under a progress bar; its report."""
    from agentenvs.core.chat import ChatError
    from agentenvs.eval.evaluate import run_eval

    with progress(notes) as bar:
        task = bar.add_task(f"eval {args.model}", total=None)

        def advance(episode: Any, record: EpisodeRecord | None) -> None:
            if record is None:
                note(bar.console, f"crashed: {episode.env_id} task {episode.task_id}", "red")
            bar.advance(task)

        try:
            return run_eval(
                env_ids,
                backend,
                out,
                spec=spec,
                model=args.model,
                model_size=args.model_size,
                endpoint=endpoint,
                concurrency=args.concurrency,
                settings=settings,
                on_resume=lambda finished: bar.update(
                    task, description=f"replaying the {finished} episodes in {out}", total=finished
                ),
                on_replayed=lambda index, replayed: bar.advance(task),
                on_start=lambda pending: bar.reset(task, description=f"eval {args.model}", total=pending),
                on_episode=advance,
            )
        except (BundleError, ChatError) as exc:
            raise UsageError(str(exc)) from None


def _note_crashes(crashed: list[tuple[Any, str]], notes: Console) -> None:
    """The first ten crashed episodes and their errors, then how to play them again."""
    for episode, error in crashed[:10]:
        note(
            notes,
            f"crashed: {episode.env_id} task {episode.task_id} seed {episode.seed}: "
            f"{' '.join(error.split())}",
            "red",
        )
    note(notes, "rerun the same command to play the crashed episodes again", "red")


def _print_summary(summary: dict[str, Any], model: str, panel: str) -> None:
    """The per-env table of the bundle's summary, and a warning for envs with few episodes."""
    from agentenvs.eval.statistics import FEW_EPISODES

    table = Table(title=f"agentenvs eval {model} (panel {panel})", title_justify="left")
    headers = ("env", "episodes", "success [95% Wilson]", "score [95% bootstrap]", "turns", "tokens in/out")
    for header in (*headers, "context overflows"):
        table.add_column(header, justify="left" if header == "env" else "right", no_wrap=True)
    for env_id, entry in summary["envs"].items():
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
    few = [env_id for env_id, entry in summary["envs"].items() if entry["episodes"] < FEW_EPISODES]
    if few:
        print(
            f"fewer than {FEW_EPISODES} episodes for {', '.join(few)}: "
            "the intervals are wide and rankings on them are tentative"
        )

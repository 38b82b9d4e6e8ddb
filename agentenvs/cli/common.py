"""What several ``agentenvs`` commands share: the usage error, env access, options and output.

Nothing here prints on its own. :class:`UsageError` is what every command
raises for bad arguments (``main`` reports it in one line and exits 2);
:func:`resolve_env_id`, :func:`matching_ids`, :func:`make_env` and
:func:`parse_env_kwargs` turn the command line into envs; :func:`add_command`
and :func:`add_env_options` declare a subcommand and its ``--split`` and
``--env-kwarg``; :func:`note`, :func:`progress` and :func:`output_console`
are the notes on stderr, the transient progress bar and the table console.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import gymnasium as gym
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agentenvs.core import registration
from agentenvs.core.registration import unavailable_reason

Handler = Callable[[argparse.Namespace], int]


class UsageError(Exception):
    """Bad arguments: reported in one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are :class:`UsageError` (its subparsers are ``Parser`` too)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


# ------------------------------------------------------------------ arguments
def add_command(
    subparsers: argparse._SubParsersAction, name: str, handler: Handler, help_text: str
) -> argparse.ArgumentParser:
    """A subcommand ``name`` whose help and description are ``help_text``, run by ``handler``."""
    sub = subparsers.add_parser(name, help=help_text, description=help_text)
    sub.set_defaults(handler=handler)
    return sub


def add_env_options(sub: argparse.ArgumentParser) -> None:
    """``--split`` and the repeatable ``--env-kwarg KEY=VALUE``."""
    sub.add_argument("--split", help="task split (train, valid, test); the env's default when omitted")
    add_env_kwarg_option(sub)


def add_env_kwarg_option(sub: argparse.ArgumentParser) -> None:
    """The repeatable ``--env-kwarg KEY=VALUE`` alone."""
    sub.add_argument(
        "--env-kwarg", action="append", metavar="KEY=VALUE", help="env keyword argument (repeatable)"
    )


# ------------------------------------------------------------------ env access
def is_pattern(name: str) -> bool:
    """Whether ``name`` is a shell pattern (``*``, ``?`` or ``[``) rather than an id."""
    return any(char in name for char in "*?[")


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
    """``gym.make(env_id, **kwargs)``; a usage error for a missing extra or kwargs the env rejects."""
    reason = unavailable_reason(env_id)
    if reason is not None:
        raise UsageError(f"{env_id} {reason}")
    try:
        return gym.make(env_id, disable_env_checker=True, **kwargs)
    except (TypeError, ValueError, KeyError) as exc:
        raise UsageError(f"{env_id} rejects the env kwargs {kwargs}: {exc}") from None


def parse_env_kwargs(pairs: Sequence[str] | None, split: str | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as kwargs (values read as JSON when they parse), plus ``split`` when given."""
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


# --------------------------------------------------------------------- output
def note(console: Console, text: str, style: str | None = None) -> None:
    """One unwrapped line on the notes console (stderr), taken literally."""
    console.print(text, style=style, markup=False, highlight=False, soft_wrap=True)


def progress(console: Console) -> Progress:
    """A transient progress bar (description, bar, done/total, time) on ``console``."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def output_console() -> Console:
    """The console for a command's tables: the terminal's width, or 200 columns when piped."""
    console = Console()
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(width=200)  # piped output: no terminal width to respect
    return console

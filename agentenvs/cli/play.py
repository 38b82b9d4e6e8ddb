"""``agentenvs play ID``: play an env yourself in the terminal.

Prints each observation and its admissible actions, reads one action a line
from stdin (echoing piped input as if typed), then prints every reward
component (weighted where the env says its weight), the turn's reward and the
return so far, and a closing line with the outcome. ``quit``, ``exit`` or the
end of input stop it; it exits 0.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import gymnasium as gym

from agentenvs.cli.common import add_command, add_env_options, make_env, parse_env_kwargs, resolve_env_id

QUIT_WORDS = ("quit", "exit")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    play = add_command(subparsers, "play", run, "play an env yourself in the terminal")
    play.add_argument("env_id", metavar="ID")
    play.add_argument("--seed", type=int, default=0, help="reset seed (picks the task)")
    add_env_options(play)


def run(args: argparse.Namespace) -> int:
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

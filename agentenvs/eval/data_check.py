"""Check a data folder in an original's published format: what loads, what is skipped, what plays.

:func:`check_data` opens an env on ``data_dir=`` through the family's
official loader and then:

1. loads every task of every split (``task_source.load``), listing each one
   that fails with its id and error;
2. reports what the loader skipped and why (``task_source.skipped``:
   WebShop's ASIN and instruction rules, ALFWorld's ``solvable`` flag, ...);
3. plays the expert and the random agent on ``episodes`` tasks spread evenly
   over all the tasks that loaded (the k-th of n tasks is number
   ``k * n // episodes``), listing every crash with its task id and every
   task the expert does not solve.

The folder passes when nothing crashed, every task loaded and the expert
solved every task it was given (:attr:`DataReport.passed`).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentenvs.agents.scripted import AgentUnavailable, make_agent
from agentenvs.core.env import EmptySplitError, agent_env

CHECKED_AGENTS = ("expert", "random")
# the split the env is opened on: the first of these that holds a task
OPEN_SPLITS = ("test", "valid", "train")
Progress = Callable[[str, int, int], None]  # (what, done, total)


class DataFolderError(Exception):
    """The env could not be opened on the folder at all (what the loader raised, in one line)."""


@dataclass
class AgentResult:
    """One agent's episodes: how many it played and solved, or why it could not play."""

    played: int = 0
    solved: int = 0
    unsolved: list[str] = field(default_factory=list)  # task ids
    unavailable: str = ""


@dataclass
class DataReport:
    env_id: str
    data_dir: str
    tasks: dict[str, int] = field(default_factory=dict)  # split -> tasks loaded
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (task id, error)
    agents: dict[str, AgentResult] = field(default_factory=dict)
    crashes: list[tuple[str, str, str]] = field(default_factory=list)  # (agent, task id, error)

    @property
    def loaded(self) -> int:
        return sum(self.tasks.values())

    @property
    def passed(self) -> bool:
        """Every task loaded, nothing crashed, and the expert solved all it played."""
        expert = self.agents.get("expert")
        expert_solved_all = expert is not None and not expert.unavailable and expert.solved == expert.played
        return self.loaded > 0 and not self.unreadable and not self.crashes and expert_solved_all


def takes_data_dir(env_id: str) -> bool:
    """Whether the env class behind ``env_id`` has a ``data_dir=`` argument."""
    entry_point = gym.spec(env_id).entry_point
    if isinstance(entry_point, str):
        module, _, name = entry_point.partition(":")
        entry_point = getattr(importlib.import_module(module), name)
    if entry_point is None:  # a spec that gym.make cannot make either
        raise TypeError(f"{env_id} is registered without an entry point")
    return "data_dir" in inspect.signature(entry_point).parameters


def open_on(env_id: str, data_dir: str, env_kwargs: Mapping[str, Any]) -> gym.Env:
    """The env on ``data_dir``, opened on the first of test, valid, train that holds a task."""
    last: EmptySplitError | None = None
    for split in OPEN_SPLITS:
        try:
            return gym.make(env_id, disable_env_checker=True, data_dir=data_dir, split=split, **env_kwargs)
        except EmptySplitError as exc:
            last = exc
        except Exception as exc:  # the loader's own reason: a missing file, a malformed row
            raise DataFolderError(f"{type(exc).__name__}: {' '.join(str(exc).split())}") from exc
    raise DataFolderError(f"no split of {data_dir} holds a task ({last})")


def spread(items: list[str], count: int) -> list[str]:
    """``count`` items spread evenly over ``items``, in order (all of them when there are fewer)."""
    if count >= len(items):
        return list(items)
    return [items[k * len(items) // count] for k in range(count)]


def check_data(
    env_id: str,
    data_dir: str,
    *,
    episodes: int = 10,
    env_kwargs: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
) -> DataReport:
    """Load every task of ``data_dir`` for ``env_id`` and play the expert and the random agent on some."""
    report = DataReport(env_id, data_dir)
    env = open_on(env_id, data_dir, env_kwargs or {})
    try:
        base = agent_env(env)
        source = base.task_source
        report.skipped = dict(source.skipped)
        readable: list[str] = []
        ids = [(split, task_id) for split in source.splits for task_id in source.task_ids(split)]
        for done, (split, task_id) in enumerate(ids, start=1):
            try:
                source.load(task_id)
            except Exception as exc:  # reported with its task id; the folder then fails the check
                report.unreadable.append((task_id, f"{type(exc).__name__}: {' '.join(str(exc).split())}"))
            else:
                report.tasks[split] = report.tasks.get(split, 0) + 1
                readable.append(task_id)
            if progress is not None:
                progress("load tasks", done, len(ids))
        chosen = spread(readable, episodes)
        for name in CHECKED_AGENTS:
            report.agents[name] = _play(env, name, chosen, report, progress)
    finally:
        env.close()
    return report


def _play(
    env: gym.Env, name: str, task_ids: list[str], report: DataReport, progress: Progress | None
) -> AgentResult:
    result = AgentResult()
    for seed, task_id in enumerate(task_ids):
        try:
            observation, info = env.reset(seed=seed, options={"task_id": task_id})
            agent = make_agent(name, env, seed)
            done = False
            while not done:
                observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
                done = terminated or truncated
        except AgentUnavailable as exc:
            result.unavailable = str(exc)
            return result
        except Exception as exc:  # a crash of the env or the agent on this task: listed, play goes on
            report.crashes.append((name, task_id, f"{type(exc).__name__}: {' '.join(str(exc).split())}"))
        else:
            result.played += 1
            if info.get("success"):
                result.solved += 1
            else:
                result.unsolved.append(task_id)
        if progress is not None:
            progress(f"play {name}", seed + 1, len(task_ids))
    return result

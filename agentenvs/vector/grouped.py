"""``GroupedVectorEnv``: G task groups x N copies, stepped as one batch.

The N copies of a group start from the identical state (same task, same
seed): the group GRPO and GiGPO compare responses within.

Env ``i`` is group ``i // N``, copy ``i % N``. ``reset(seed=S)`` starts group
``g`` with ``reset(seed=S + g)``; ``reset(task_ids=[...])`` names each
group's task (with seeds ``S + g`` still). ``reset()`` without a seed
continues after the previous reset's groups (``S + G`` next), from 0, so a
training loop draws fresh, reproducible groups every iteration.

An env whose episode ended is not stepped again until the next reset: its
entries repeat the last observation and flags with reward 0.0, and its info
is the last info with zeroed ``reward_components``, no ``transitions`` and
``finished=True``; its response may be ``None``. Every info carries
``group``, ``copy`` and ``finished``.

Branching (Monte-Carlo value estimates, tree search): ``snapshot(i)`` takes
env ``i``'s state (:meth:`agentenvs.core.env.AgentEnv.snapshot`), ``snapshots(indices)``
several envs' at once;
``branch(snapshots)`` starts the N copies of group ``g`` from
``snapshots[g]``, so N continuations of one state run as a batch.

An episode whose step raises, or whose action kills the worker process,
ends as truncated with ``info["crashed"] = True``, ``success`` False,
``score`` 0.0 and the reason in ``info["error"]``; the other envs go on
untouched and the next reset works (see :mod:`agentenvs.vector.backends`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from agentenvs.core.env import EnvSnapshot
from agentenvs.vector.backends import make_backend
from agentenvs.vector.slices import Crash, ResetRequest, RestoreRequest, StepResult, env_factory


class GroupedVectorEnv:
    """G groups x N identical-start copies of one env.

    Args:
        env: a registered id (``"agentenvs/Sokoban-v0"``) or a picklable
            callable returning an env (called with ``env_kwargs``).
        num_groups: G, the number of task groups.
        group_size: N, copies per group.
        backend: ``"inprocess"``, ``"subprocess"`` (worker processes, each
            holding a contiguous slice of envs, one message per worker per
            call) or ``"ray"`` (the slices held by Ray actors; needs the
            ``ray`` extra; uses the running Ray instance or starts a local one).
        num_workers: workers for the out-of-process backends (default: the
            CPU count, or Ray's available CPUs; never more than G*N).
        env_kwargs: keyword arguments of every copy (``split``, ``max_turns``...).
        start_method: multiprocessing context of the subprocess backend
            (``"forkserver"`` where available, else ``"spawn"``).
    """

    def __init__(
        self,
        env: str | Callable[..., gym.Env],
        num_groups: int,
        group_size: int,
        *,
        backend: str = "inprocess",
        num_workers: int | None = None,
        env_kwargs: Mapping[str, Any] | None = None,
        start_method: str | None = None,
    ) -> None:
        if num_groups < 1 or group_size < 1:
            raise ValueError(f"num_groups and group_size must be >= 1, got {num_groups} and {group_size}")
        self.num_groups = num_groups
        self.group_size = group_size
        self.num_envs = num_groups * group_size
        self.backend_name = backend
        self._backend = make_backend(
            backend, env_factory(env, env_kwargs), self.num_envs, num_workers, start_method
        )
        self._observations: list[Any] = [None] * self.num_envs
        self._infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        self._terminated = np.zeros(self.num_envs, dtype=bool)
        self._truncated = np.zeros(self.num_envs, dtype=bool)
        self._started = False
        self._next_seed = 0
        self._closed = False

    # ---------------------------------------------------------------- layout
    def group_of(self, index: int) -> int:
        return index // self.group_size

    def copy_of(self, index: int) -> int:
        return index % self.group_size

    @property
    def done(self) -> np.ndarray:
        """Which envs' episodes have ended (terminated or truncated); all True before the first reset."""
        if not self._started:
            return np.ones(self.num_envs, dtype=bool)
        return self._terminated | self._truncated

    # -------------------------------------------------------------- contract
    def reset(
        self, *, seed: int | None = None, task_ids: Sequence[str] | None = None
    ) -> tuple[list[Any], list[dict[str, Any]]]:
        """Start every group; see the module docstring for how seeds and task ids apply."""
        if task_ids is not None and len(task_ids) != self.num_groups:
            raise ValueError(
                f"task_ids must name one task per group ({self.num_groups}), got {len(task_ids)}"
            )
        first_seed = self._next_seed if seed is None else int(seed)
        self._next_seed = first_seed + self.num_groups
        requests = {}
        for index in range(self.num_envs):
            group = self.group_of(index)
            task_id = None if task_ids is None else str(task_ids[group])
            requests[index] = ResetRequest(first_seed + group, task_id)
        return self._start(requests)

    def branch(self, snapshots: Sequence[EnvSnapshot]) -> tuple[list[Any], list[dict[str, Any]]]:
        """Start the N copies of group ``g`` from ``snapshots[g]`` (one snapshot per group).

        Returns observations and infos as :meth:`reset` does; stepping on
        continues each copy exactly as the snapshotted env would.
        """
        if len(snapshots) != self.num_groups:
            raise ValueError(f"branch needs one snapshot per group ({self.num_groups}), got {len(snapshots)}")
        if any(snapshot.done for snapshot in snapshots):
            raise ValueError("cannot branch from a snapshot of an ended episode")
        requests = {index: RestoreRequest(snapshots[self.group_of(index)]) for index in range(self.num_envs)}
        return self._start(requests)

    def snapshot(self, index: int) -> EnvSnapshot:
        """Env ``index``'s state now, for :meth:`branch` or ``env.reset(options={"snapshot": ...})``."""
        return self.snapshots([index])[index]

    def snapshots(self, indices: Sequence[int]) -> dict[int, EnvSnapshot]:
        """:meth:`snapshot` of each env of ``indices``, in one message per worker."""
        if not self._started:
            raise RuntimeError("call reset() before snapshot()")
        for index in indices:
            integer = isinstance(index, (int, np.integer)) and not isinstance(index, bool)
            if not integer or not 0 <= index < self.num_envs:
                raise IndexError(f"env index {index!r} outside [0, {self.num_envs})")
        return self._backend.snapshot([int(index) for index in indices])

    def _start(
        self, requests: Mapping[int, ResetRequest | RestoreRequest]
    ) -> tuple[list[Any], list[dict[str, Any]]]:
        self._started = False  # until this start succeeds
        results = self._backend.reset(requests)
        for index in range(self.num_envs):
            observation, info = results[index]
            self._observations[index] = observation
            self._infos[index] = self._tagged(index, info, finished=False)
        self._terminated[:] = False
        self._truncated[:] = False
        self._started = True
        return list(self._observations), [dict(info) for info in self._infos]

    def step(
        self, responses: Sequence[Any]
    ) -> tuple[list[Any], np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """One turn of every env still running; ``responses[i]`` goes to env ``i``."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        if len(responses) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} responses (one per env), got {len(responses)}")
        done = self.done
        running = {index: responses[index] for index in range(self.num_envs) if not done[index]}
        results = self._backend.step(running) if running else {}
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        infos = []
        for index in range(self.num_envs):
            if index not in results:
                infos.append(self._finished_info(index))
                continue
            result = results[index]
            if isinstance(result, Crash):
                result = self._crashed(index, result)
            observation, reward, terminated, truncated, info = result
            self._observations[index] = observation
            self._terminated[index] = terminated
            self._truncated[index] = truncated
            self._infos[index] = self._tagged(index, info, finished=False)
            rewards[index] = reward
            infos.append(dict(self._infos[index]))
        return list(self._observations), rewards, self._terminated.copy(), self._truncated.copy(), infos

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._backend.close()

    def __enter__(self) -> GroupedVectorEnv:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_backend", None) is not None:
            self.close()

    # --------------------------------------------------------------- helpers
    def _tagged(self, index: int, info: Mapping[str, Any], *, finished: bool) -> dict[str, Any]:
        return {**info, "group": self.group_of(index), "copy": self.copy_of(index), "finished": finished}

    def _finished_info(self, index: int) -> dict[str, Any]:
        last = self._infos[index]
        components = dict.fromkeys(last.get("reward_components", {}), 0.0)
        return {**last, "reward_components": components, "transitions": [], "finished": True}

    def _crashed(self, index: int, crash: Crash) -> StepResult:
        last = self._infos[index]
        info = {
            **last,
            "reward_components": dict.fromkeys(last.get("reward_components", {}), 0.0),
            "transitions": [],
            "crashed": True,
            "success": False,
            "score": 0.0,
            "error": crash.error,
        }
        return self._observations[index], 0.0, False, True, info

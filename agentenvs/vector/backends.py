"""Backends step a set of env copies by global index: in-process, subprocesses or Ray.

The out-of-process backends survive dead workers. They record each live
episode's history (its reset and the responses it took). When a worker dies,
whether an action crashed it or it was killed from outside between steps,
the backend restarts it and replays the histories of the envs it held (envs
are deterministic, so their states come back exactly; the state key the
replay ends in is checked). It then retries the failed batch one env at a
time: an env whose step kills the worker again is the culprit and is reported
as a :class:`~agentenvs.vector.slices.Crash`; the others lose nothing.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentenvs.vector.slices import (
    Crash,
    EnvFactory,
    EnvSlice,
    EpisodeHistory,
    MakeRegistered,
    MakeWithKwargs,
    ResetRequest,
    RestoreRequest,
    StepResult,
)
from agentenvs.vector.workers import ProcessWorker, RayWorker, Worker, WorkerDied

if TYPE_CHECKING:
    from agentenvs.vector.workers import ProcessContext

BACKENDS = ("inprocess", "subprocess", "ray")


class InProcessBackend:
    """Every env copy in this process."""

    def __init__(self, factory: EnvFactory, num_envs: int) -> None:
        self.envs = EnvSlice(factory, range(num_envs))

    def reset(
        self, requests: Mapping[int, ResetRequest | RestoreRequest]
    ) -> dict[int, tuple[Any, dict[str, Any]]]:
        return self.envs.reset(requests)

    def step(self, responses: Mapping[int, Any]) -> dict[int, StepResult | Crash]:
        return self.envs.step(responses)

    def snapshot(self, indices: Sequence[int]) -> dict[int, Any]:
        return self.envs.snapshot(dict.fromkeys(indices))

    def close(self) -> None:
        self.envs.close()


class WorkerBackend:
    """Env copies spread over workers, each holding a contiguous slice; see module docstring."""

    def __init__(self, workers: Sequence[Worker]) -> None:
        self.workers = list(workers)
        self.worker_of = {index: worker for worker in self.workers for index in worker.indices}
        self.histories: dict[int, EpisodeHistory] = {}
        self.lost: dict[int, str] = {}  # envs whose state could not be restored, until reset
        for worker in self.workers:
            worker.launch()
        try:
            for worker in self.workers:
                worker.wait_ready()
        except WorkerDied as died:
            self.close()
            raise RuntimeError(f"{died} before building its envs; {died.worker_cause}") from None
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ calls
    def reset(
        self, requests: Mapping[int, ResetRequest | RestoreRequest]
    ) -> dict[int, tuple[Any, dict[str, Any]]]:
        for index in requests:
            self.histories.pop(index, None)
            self.lost.pop(index, None)
        results: dict[int, tuple[Any, dict[str, Any]]] = {}
        for worker, batch in self._scatter_and_gather("reset", requests, results):
            self._restore(worker)
            try:
                results.update(worker.call("reset", batch))
            except WorkerDied:
                raise RuntimeError(f"an env worker died twice while resetting envs {sorted(batch)}") from None
        for index, request in requests.items():
            self.histories[index] = EpisodeHistory(request, (), results[index][1].get("state_key"))
        return results

    def step(self, responses: Mapping[int, Any]) -> dict[int, StepResult | Crash]:
        results: dict[int, StepResult | Crash] = {
            index: Crash(self.lost.pop(index)) for index in responses if index in self.lost
        }
        pending = {index: response for index, response in responses.items() if index not in results}
        for worker, batch in self._scatter_and_gather("step", pending, results):
            results.update(self._recover(worker, batch))
        for index, response in responses.items():
            result = results[index]
            if isinstance(result, Crash) or result[2] or result[3]:
                self.histories.pop(index, None)
            else:
                self.histories[index] = self.histories[index].extended(response, result[4].get("state_key"))
        return results

    def snapshot(self, indices: Sequence[int]) -> dict[int, Any]:
        results: dict[int, Any] = {}
        for worker, batch in self._scatter_and_gather("snapshot", dict.fromkeys(indices), results):
            self._restore(worker)
            try:
                results.update(worker.call("snapshot", batch))
            except WorkerDied:
                raise RuntimeError(
                    f"an env worker died twice while taking snapshots of {sorted(batch)}"
                ) from None
        return results

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()

    # --------------------------------------------------------------- recovery
    def _scatter_and_gather(
        self, method: str, requests: Mapping[int, Any], results: dict[int, Any]
    ) -> list[tuple[Worker, dict[int, Any]]]:
        """Send each worker its share in one message and collect every answer into ``results``.

        Returns the workers that died, with their batches. An exception raised
        by a worker's envs is re-raised once every other answer has been read,
        so no answer is left behind in a pipe.
        """
        batches: dict[Worker, dict[int, Any]] = {}
        for index, request in requests.items():
            batches.setdefault(self.worker_of[index], {})[index] = request
        for worker, batch in batches.items():
            worker.submit(method, batch)
        dead = []
        failure: Exception | None = None
        for worker, batch in batches.items():
            try:
                results.update(worker.result())
            except WorkerDied:
                dead.append((worker, batch))
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure
        return dead

    def _recover(self, worker: Worker, batch: Mapping[int, Any]) -> dict[int, StepResult | Crash]:
        """Restore a dead worker's envs, then retry its batch env by env to find the culprit."""
        self._restore(worker)
        results: dict[int, StepResult | Crash] = {}
        for index, response in batch.items():
            if index in self.lost:
                results[index] = Crash(self.lost.pop(index))
                continue
            try:
                results.update(worker.call("step", {index: response}))
            except WorkerDied:
                results[index] = Crash("the env's worker process died during this step")
                self.histories.pop(index, None)
                self._restore(worker)
        return results

    def _restore(self, worker: Worker) -> None:
        """Restart ``worker`` and replay the live episodes it held."""
        while True:
            worker.restart()
            histories = {index: self.histories[index] for index in worker.indices if index in self.histories}
            if not histories:
                return
            try:
                self._check_replay(worker.call("replay", histories), histories)
                return
            except WorkerDied:
                pass
            # Replaying everything at once died, so some crash is not tied to
            # one action: replay env by env, give up the culprit, start over.
            worker.restart()
            for index, history in histories.items():
                try:
                    self._check_replay(worker.call("replay", {index: history}), {index: history})
                except WorkerDied:
                    self._lose(index, "the env's worker process died while its episode was replayed")
                    break
            else:
                return

    def _check_replay(self, keys: Mapping[int, Any], histories: Mapping[int, EpisodeHistory]) -> None:
        for index, key in keys.items():
            if isinstance(key, Crash):
                self._lose(index, key.error)
            elif key != histories[index].state_key:
                self._lose(
                    index, "replaying the episode reached a different state (the env is not deterministic)"
                )

    def _lose(self, index: int, error: str) -> None:
        self.histories.pop(index, None)
        self.lost[index] = error


def _slices(num_envs: int, num_workers: int) -> list[range]:
    base, extra = divmod(num_envs, num_workers)
    bounds = [0]
    for rank in range(num_workers):
        bounds.append(bounds[-1] + base + (rank < extra))
    return [range(start, stop) for start, stop in itertools.pairwise(bounds)]


def _modules_of(factory: EnvFactory) -> list[str]:
    """The modules an env factory will import: agentenvs and the env class's module."""
    if isinstance(factory, MakeRegistered):
        import gymnasium as gym

        entry_point = gym.spec(factory.env_id).entry_point
        module = entry_point.split(":")[0] if isinstance(entry_point, str) else entry_point.__module__
    elif isinstance(factory, MakeWithKwargs):
        module = getattr(factory.constructor, "__module__", None) or "agentenvs"
    else:  # a factory of the caller's own
        module = getattr(factory, "__module__", None) or "agentenvs"
    return ["agentenvs", module]


def default_start_method() -> str:
    """forkserver where the platform has it (cheap starts, no inherited threads), else spawn."""
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def start_context(method: str) -> ProcessContext:
    """``multiprocessing.get_context(method)``, typed as the context of one start method."""
    if method == "fork":
        return multiprocessing.get_context("fork")
    if method == "forkserver":
        return multiprocessing.get_context("forkserver")
    if method == "spawn":
        return multiprocessing.get_context("spawn")
    raise ValueError(f"cannot find context for {method!r}")  # what multiprocessing.get_context raises


def make_backend(
    name: str,
    factory: EnvFactory,
    num_envs: int,
    num_workers: int | None = None,
    start_method: str | None = None,
) -> InProcessBackend | WorkerBackend:
    """The backend ``name`` holding ``num_envs`` copies made by ``factory``."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {list(BACKENDS)}")
    if num_workers is not None and num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    if name == "inprocess":
        return InProcessBackend(factory, num_envs)
    if name == "ray":
        return _ray_backend(factory, num_envs, num_workers)
    slices = _slices(num_envs, min(num_workers or os.cpu_count() or 1, num_envs))
    method = start_method or default_start_method()
    context = start_context(method)
    if method == "forkserver":
        # Workers fork from a server that has imported the env's code once, so a
        # restart after a crash costs milliseconds; preloading also hands the
        # server this process's sys.path. Ignored if the server already runs.
        context.set_forkserver_preload(_modules_of(factory))
    return WorkerBackend([ProcessWorker(factory, indices, context) for indices in slices])


def _ray_backend(factory: EnvFactory, num_envs: int, num_workers: int | None) -> WorkerBackend:
    try:
        import ray
    except ImportError:
        raise ImportError("the ray backend needs Ray: pip install 'agentenvs[ray]'") from None
    if not ray.is_initialized():
        ray.init()
    free_cpus = float(ray.available_resources().get("CPU", 0.0))
    slices = _slices(num_envs, min(num_workers or max(1, int(free_cpus)), num_envs))
    cpus_each = min(1.0, free_cpus / len(slices))
    return WorkerBackend([RayWorker(factory, indices, cpus_each) for indices in slices])

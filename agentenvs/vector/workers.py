"""Workers that hold an :class:`EnvSlice` out of process: subprocesses and Ray actors.

A worker handle answers one call at a time: ``submit(method, payload)`` then
``result()``. ``result()`` raises :class:`WorkerDied` when the process (or
actor) is gone, whatever killed it; exceptions raised by the slice itself are
re-raised in the caller. ``restart()`` replaces a dead worker by a fresh one
holding freshly made envs.
"""

from __future__ import annotations

import pickle
import signal
import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from agentenvs.vector.slices import EnvFactory, EnvSlice

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext, ForkServerContext, SpawnContext
    from multiprocessing.process import BaseProcess

    # The context of one start method (multiprocessing.get_context("fork"), ("forkserver") or ("spawn")):
    # each has a Process class, which the BaseContext that get_context(str) is typed to answer lacks.
    ProcessContext = ForkContext | ForkServerContext | SpawnContext


class WorkerDied(Exception):
    """The worker process or actor is gone; ``worker_cause`` says what can kill one before it starts."""

    def __init__(self, message: str, worker_cause: str = "see the worker's log") -> None:
        super().__init__(message)
        self.worker_cause = worker_cause


class Worker(ABC):
    """One out-of-process holder of the envs at ``indices``."""

    def __init__(self, factory: EnvFactory, indices: Sequence[int]) -> None:
        self.factory = factory
        self.indices = list(indices)

    @abstractmethod
    def launch(self) -> None:
        """Start the worker without waiting for its envs to be built."""

    @abstractmethod
    def wait_ready(self) -> None:
        """Block until the envs are built; raise what building them raised."""

    @abstractmethod
    def submit(self, method: str, payload: Any) -> None:
        """Send one call of an :class:`EnvSlice` method."""

    @abstractmethod
    def result(self) -> Any:
        """The answer of the last call; :class:`WorkerDied` if the worker is gone."""

    @abstractmethod
    def pid(self) -> int:
        """Operating-system id of the process holding the envs."""

    @abstractmethod
    def stop(self) -> None:
        """End the worker (gracefully when it is alive)."""

    def call(self, method: str, payload: Any) -> Any:
        self.submit(method, payload)
        return self.result()

    def restart(self) -> None:
        self.stop()
        self.launch()
        try:
            self.wait_ready()
        except WorkerDied as died:
            raise RuntimeError(f"a restarted env worker died while building its envs: {died}") from None


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RuntimeError carrying its text."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _serve(conn: Connection, factory: EnvFactory, indices: list[int]) -> None:
    """Subprocess main loop: build the slice, then answer calls until told to stop."""
    # Ctrl-C reaches the whole process group; the parent decides what to do.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        envs = EnvSlice(factory, indices)
    except Exception as exc:
        conn.send(("error", _portable(exc)))
        return
    conn.send(("ok", None))
    try:
        while True:
            try:
                method, payload = conn.recv()
            except EOFError:
                return
            if method == "stop":
                return
            try:
                conn.send(("ok", getattr(envs, method)(payload)))
            except Exception as exc:
                conn.send(("error", _portable(exc)))
    finally:
        envs.close()


class ProcessWorker(Worker):
    """A subprocess (spawn or forkserver context) talking over a pipe."""

    def __init__(self, factory: EnvFactory, indices: Sequence[int], context: ProcessContext) -> None:
        super().__init__(factory, indices)
        self.context = context
        # Both set by launch(); stop() sets the process back to None.
        self.process: BaseProcess | None = None
        self.conn: Connection | None = None
        self._send_failed = False

    def _running(self) -> tuple[BaseProcess, Connection]:
        """The launched process and its end of the pipe."""
        if self.process is None or self.conn is None:
            raise RuntimeError("this env worker is not running: launch() it first (stop() ends it)")
        return self.process, self.conn

    def launch(self) -> None:
        parent_end, child_end = self.context.Pipe()
        self.process = self.context.Process(
            target=_serve,
            args=(child_end, self.factory, self.indices),
            daemon=True,
            name="agentenvs-env-worker",
        )
        self.process.start()
        child_end.close()  # so the parent sees EOF as soon as the child dies
        self.conn = parent_end
        self._send_failed = False

    def wait_ready(self) -> None:
        self.result()

    def submit(self, method: str, payload: Any) -> None:
        _, conn = self._running()
        try:
            conn.send((method, payload))
            self._send_failed = False
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError):
            self._send_failed = True

    def result(self) -> Any:
        process, conn = self._running()
        if self._send_failed:
            raise WorkerDied(f"env worker pid {process.pid} is gone")
        try:
            status, value = conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            process.join(timeout=5)
            raise WorkerDied(
                f"env worker pid {process.pid} died (exit code {process.exitcode})",
                self._start_cause(),
            ) from None
        if status == "error":
            raise value
        return value

    def pid(self) -> int:
        process, _ = self._running()
        if process.pid is None:  # only before start(), which launch() calls
            raise RuntimeError("this env worker's process has not started")
        return process.pid

    def _start_cause(self) -> str:
        """What kills a worker before it runs agentenvs' code (its own traceback is on stderr)."""
        main_script = getattr(sys.modules.get("__main__"), "__file__", None)
        if self.context.get_start_method() == "fork" or main_script is None:
            return "its traceback is on stderr above"
        return (
            f"its traceback is on stderr above. A {self.context.get_start_method()} worker first imports "
            f"the main script again ({main_script}); a script that builds the vector env at import time "
            'fails there: put that code under `if __name__ == "__main__":`'
        )

    def stop(self) -> None:
        if self.process is None:
            return
        process, conn = self._running()
        if process.is_alive():
            try:
                conn.send(("stop", None))
            except (BrokenPipeError, ConnectionResetError, OSError):
                pass
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
        process.join()
        conn.close()
        self.process = None


def _ray_slice_class() -> Any:
    import ray

    class RayEnvSlice(EnvSlice):
        def pid(self) -> int:
            import os

            return os.getpid()

        def ready(self) -> None:
            return None

    # max_restarts=0: a dead actor stays dead; the backend restores its envs itself.
    return ray.remote(max_restarts=0)(RayEnvSlice)


class RayWorker(Worker):
    """A Ray actor holding the slice (``ray`` is imported only when this is used).

    ``num_cpus`` is the actor's CPU reservation: the backend splits the free
    CPUs between its actors, so asking for more workers than CPUs never
    leaves an actor waiting to be scheduled.
    """

    _actor_class: Any = None

    def __init__(self, factory: EnvFactory, indices: Sequence[int], num_cpus: float = 1.0) -> None:
        super().__init__(factory, indices)
        self.num_cpus = num_cpus
        import ray
        import ray.exceptions

        self._ray = ray
        self._died = ray.exceptions.RayActorError
        if RayWorker._actor_class is None:
            RayWorker._actor_class = _ray_slice_class()
        self.actor: Any = None
        self._pending: Any = None

    def launch(self) -> None:
        self.actor = RayWorker._actor_class.options(num_cpus=self.num_cpus).remote(self.factory, self.indices)
        self._pending = self.actor.ready.remote()

    def wait_ready(self) -> None:
        self.result()

    def submit(self, method: str, payload: Any) -> None:
        self._pending = getattr(self.actor, method).remote(payload)

    def result(self) -> Any:
        try:
            return self._ray.get(self._pending)
        except self._died as exc:
            raise WorkerDied(f"env actor died: {type(exc).__name__}") from None

    def pid(self) -> int:
        try:
            return self._ray.get(self.actor.pid.remote())
        except self._died as exc:
            raise WorkerDied(f"env actor died: {type(exc).__name__}") from None

    def stop(self) -> None:
        if self.actor is not None:
            self._ray.kill(self.actor)
            self.actor = None

"""Run untrusted code on call expressions in a fresh, jailed process.

``Sandbox.run(code, calls)`` starts one interpreter (``python -I -S -B``, no
site-packages, an empty environment) on :mod:`agentenvs.colbench.jail`,
which jails itself (namespaces, tmpfs, rlimits, its own uid; see that
module) and answers with one line per call. The parent holds the deadlines:
``call_seconds`` for the code's definition and for each call, after a
``startup_seconds`` allowance for the interpreter itself. A call past its
deadline, or a jail that dies, fails that call: the parent kills the jailed
process (PID 1 of its PID namespace, so the kernel takes every process left
in it; without namespaces, the runner's process group), then starts a fresh
jail for the calls after it. One jail is kept set up ahead (``prewarm``), so
the interpreter's start overlaps the caller's work between evaluations.
Outputs come back as tagged JSON of exact builtin types, capped at
``output_chars`` per call and decoded here into plain values, so whatever
the code returns, the comparison with the reference (done by the caller, in
this process) is an honest ``==`` on plain data.

What the jail stops and what it does not is listed in the README (ColBench,
"The sandbox: what it stops and what it does not").
"""

from __future__ import annotations

import itertools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JAIL = Path(__file__).with_name("jail.py")
MAX_DECODE_DEPTH = 64
NAMESPACED = ("root", "userns")
_uid_counter = itertools.count()


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the code it ran): surfaced, never scored as a failed answer."""


class MalformedOutput(ValueError):
    """A jail line that is not the tagged plain data the jail writes."""


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one evaluation; the defaults follow ColBench's 1 s per test case."""

    call_seconds: float = 1.0
    startup_seconds: float = 10.0
    memory_bytes: int = 512 * 2**20
    cpu_seconds: int = 30
    max_processes: int = 8
    file_bytes: int = 2**20
    tmpfs_bytes: int = 8 * 2**20
    output_chars: int = 65_536


@dataclass(frozen=True)
class CallResult:
    """One call's outcome: ``value`` when ``ok``, else ``error`` (exception name, ``timeout``, ...)."""

    ok: bool
    value: Any = None
    error: str = ""


@dataclass(frozen=True)
class SandboxRun:
    """All calls of one evaluation."""

    results: tuple[CallResult, ...]
    defined: bool
    isolation: str
    jails: int
    definition_error: str = ""
    seconds: float = field(default=0.0, compare=False)


def decode(node: Any, depth: int = 0) -> Any:
    """The plain value a tagged JSON node stands for; raises :class:`MalformedOutput`."""
    if depth > MAX_DECODE_DEPTH:
        raise MalformedOutput("nested too deeply")
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if not isinstance(node, dict) or len(node) != 1:
        raise MalformedOutput(f"not a tagged value: {type(node).__name__}")
    ((tag, body),) = node.items()
    try:
        if tag in ("l", "t", "s", "f") and isinstance(body, list):
            items = [decode(item, depth + 1) for item in body]
            return {"l": list, "t": tuple, "s": set, "f": frozenset}[tag](items)
        if tag == "d" and isinstance(body, list):
            return {decode(k, depth + 1): decode(v, depth + 1) for k, v in body}
        if tag == "b" and isinstance(body, str):
            return bytes.fromhex(body)
        if tag == "c" and isinstance(body, list) and len(body) == 2:
            return complex(*(float(part) for part in body))
    except (TypeError, ValueError) as exc:  # unhashable keys, bad pairs, bad hex
        raise MalformedOutput(str(exc)) from None
    raise MalformedOutput(f"unknown tag {tag!r}")


def signal_quietly(send: Any) -> None:
    try:
        send()
    except (ProcessLookupError, PermissionError):
        pass  # already gone, or (without root) a process the jail no longer shares a uid with


class _Jail:
    """One running jail process and the lines it has written so far."""

    def __init__(self, python: str, setup: dict[str, Any], limits: SandboxLimits) -> None:
        self.limits = limits
        self.workdir = setup["workdir"]
        self.process = subprocess.Popen(
            [python, "-I", "-S", "-B", str(JAIL)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={},
            cwd="/",
            start_new_session=True,
            close_fds=True,
        )
        self.jailed_pid = 0
        self.isolation = "none"
        self._buffer = b""
        self.ended = False
        os.set_blocking(self.process.stdout.fileno(), False)
        self._send(json.dumps(setup).encode() + b"\n", close=False)

    def _send(self, data: bytes, *, close: bool) -> None:
        try:
            self.process.stdin.write(data)
            self.process.stdin.flush()
            if close:
                self.process.stdin.close()
        except BrokenPipeError:
            pass  # the runner died; its missing lines report it

    def start(self, task: dict[str, Any]) -> None:
        """Wait until the jail is set up (its ``J`` and ``S`` lines), then hand it its task."""
        head = self.read_line(self.limits.startup_seconds)
        if head is None or not head.startswith("J "):
            raise SandboxError(f"the jail runner did not start (first line {head!r})")
        _, pid, self.isolation = head.split()
        self.jailed_pid = int(pid)
        if self.read_line(self.limits.startup_seconds) != "S":
            raise SandboxError(f"the jail could not be set up ({self.isolation})")
        self._send(json.dumps(task).encode("utf-8", "surrogatepass"), close=True)

    def read_line(self, seconds: float) -> str | None:
        """The next line, or None when the deadline passes, the jail ends or a line runs too long."""
        deadline = time.monotonic() + seconds
        poller = select.poll()
        poller.register(self.process.stdout.fileno(), select.POLLIN | select.POLLHUP)
        while b"\n" not in self._buffer:
            if self.ended or len(self._buffer) > self.limits.output_chars + 1024:
                return None
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(max(1, int(left * 1000))):
                if time.monotonic() >= deadline:
                    return None
                continue
            chunk = os.read(self.process.stdout.fileno(), 1 << 16)
            if chunk:
                self._buffer += chunk
            else:
                self.ended = True
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def kill(self, *, reap: bool = True) -> None:
        """Kill the jailed process; the runner is reaped in the background.

        Killing PID 1 of the jail's PID namespace makes the kernel kill every
        process in it; the runner's ``waitpid`` returns once it is gone. The
        jailed pid is only signalled while the runner lives: until then the
        runner has not reaped it, so the pid cannot belong to anyone else.
        Without a PID namespace the runner's process group is killed instead.
        ``reap=False`` (at interpreter exit, where no thread may start) leaves
        the runner to init.
        """
        if self.jailed_pid and self.process.poll() is None:
            signal_quietly(lambda: os.kill(self.jailed_pid, signal.SIGKILL))
        if not self.isolation.startswith(NAMESPACED):
            signal_quietly(lambda: os.killpg(self.process.pid, signal.SIGKILL))
        for pipe in (self.process.stdin, self.process.stdout):
            pipe.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
        if reap and self.process.poll() is None:
            threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self) -> None:
        try:
            self.process.wait(timeout=self.limits.startup_seconds)
        except subprocess.TimeoutExpired:
            signal_quietly(lambda: os.killpg(self.process.pid, signal.SIGKILL))
            self.process.wait()


class Sandbox:
    """Evaluates code on call expressions in jailed processes; see the module docstring.

    With ``prewarm`` the next jail is started as soon as one is taken, so its
    interpreter start and set-up overlap with whatever the caller does between
    evaluations (one idle jail waits, blocked on its stdin; :meth:`close` ends it).

    Args:
        limits: the per-evaluation limits.
        hide: folders hidden from the jail behind an empty tmpfs (e.g. the task files).
        python: the interpreter that runs the jail (this one by default).
        prewarm: keep one jail set up ahead.
    """

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        hide: Sequence[str] = (),
        python: str = sys.executable,
        prewarm: bool = True,
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.hide = tuple(str(Path(p).resolve()) for p in hide)
        self.python = python
        self.prewarm = prewarm
        self._warm: _Jail | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_warm"] = None  # a process handle: the copy starts its own
        return state

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        """End the jail kept warm, if any (it is idle: killing it is all it takes)."""
        warm, self._warm = getattr(self, "_warm", None), None
        if warm is not None:
            warm.kill(reap=False)

    def run(self, code: str, calls: Sequence[str], *, split_namespace: bool = False) -> SandboxRun:
        """Run ``code`` then each call expression; ``split_namespace`` runs them as ColBench's
        scorer did (``exec`` inside a function: top-level names of the code are not globals)."""
        began = time.monotonic()
        results: list[CallResult] = []
        jails = 0
        while True:
            jails += 1
            outcome = self._run_jail(code, calls, len(results), split_namespace)
            results.extend(outcome["results"])
            isolation = outcome["isolation"]
            if outcome["definition_error"] or not outcome["defined"]:
                error = outcome["definition_error"] or "the code ended its process"
                results.extend(CallResult(False, error=error) for _ in range(len(calls) - len(results)))
                return SandboxRun(tuple(results), False, isolation, jails, error, time.monotonic() - began)
            if len(results) >= len(calls):
                return SandboxRun(tuple(results), True, isolation, jails, "", time.monotonic() - began)

    def _spawn(self) -> _Jail:
        limits = self.limits
        uid = 1_000_000 + (os.getpid() % 100_000) * 1_000 + next(_uid_counter) % 1_000
        setup = {
            "uid": uid,
            "memory_bytes": limits.memory_bytes,
            "cpu_seconds": limits.cpu_seconds,
            "max_processes": limits.max_processes,
            "file_bytes": limits.file_bytes,
            "tmpfs_bytes": limits.tmpfs_bytes,
            "hide": list(self.hide),
            "output_chars": limits.output_chars,
            "workdir": tempfile.mkdtemp(prefix="colbench-jail-"),
        }
        return _Jail(self.python, setup, limits)

    def _take_jail(self) -> _Jail:
        jail, self._warm = self._warm, None
        if jail is None or jail.process.poll() is not None:
            if jail is not None:
                jail.kill()
            jail = self._spawn()
        if self.prewarm:
            self._warm = self._spawn()
        return jail

    def _run_jail(self, code: str, calls: Sequence[str], start: int, split_namespace: bool) -> dict[str, Any]:
        """One jail from call ``start`` on: its results until it ended or a call overran."""
        limits = self.limits
        jail = self._take_jail()
        try:
            jail.start(
                {"code": code, "calls": list(calls), "start": start, "split_namespace": split_namespace}
            )
            outcome: dict[str, Any] = {
                "isolation": jail.isolation,
                "results": [],
                "defined": False,
                "definition_error": "",
            }
            ready = jail.read_line(limits.call_seconds)
            if ready is None:
                outcome["definition_error"] = "timeout" if not jail.ended else ""
                return outcome
            if ready.startswith("D "):
                outcome["definition_error"] = ready[2:] or "error"
                return outcome
            if ready != "R":
                outcome["definition_error"] = "malformed jail output"
                return outcome
            outcome["defined"] = True
            for index in range(start, len(calls)):
                line = jail.read_line(limits.call_seconds)
                if line is None:
                    error = "timeout" if not jail.ended else "the code ended its process"
                    outcome["results"].append(CallResult(False, error=error))
                    return outcome
                outcome["results"].append(self._call_result(line, index))
            return outcome
        finally:
            jail.kill()

    def _call_result(self, line: str, index: int) -> CallResult:
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or record.get("i") != index:
                raise MalformedOutput("call line out of order")
            if "e" in record:
                return CallResult(False, error=str(record["e"]))
            return CallResult(True, decode(record["v"]))
        except (MalformedOutput, ValueError, KeyError, RecursionError) as exc:
            return CallResult(False, error=f"malformed output: {type(exc).__name__}")

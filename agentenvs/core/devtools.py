"""A small client of Chromium's DevTools protocol over a pipe (no Node driver, no browser download).

What it speaks. Chromium started with ``--remote-debugging-pipe`` reads
DevTools commands on its file descriptor 3 and writes answers and events on
its descriptor 4. Each message is one JSON object ended by a NUL byte:

* a command ``{"id": n, "method": "Domain.method", "params": {...}}``, with
  ``"sessionId"`` when it is meant for a page (a target attached with
  ``Target.attachToTarget`` and ``flatten: true``) rather than the browser;
* its answer ``{"id": n, "result": {...}}`` or ``{"id": n, "error": {...}}``
  (:class:`DevToolsError`);
* an event ``{"method": ..., "params": {...}}``, with the ``"sessionId"`` of
  the page it comes from.

:class:`DevTools` is one such Chromium: :meth:`~DevTools.send` returns a
future of a command's ``result``, :meth:`~DevTools.post` sends without
waiting, and :meth:`~DevTools.on` routes a session's events to a handler.
The browser's ``Target.detachedFromTarget`` (a page closed or crashed)
reaches the page's session as ``Inspector.detached``. When the pipe closes
(Chromium exited or was killed), every unanswered command raises
:class:`BrowserGone` and every session's ``Inspector.detached`` handler
runs, so nothing waits on a browser that is gone.

Every browser of the process is driven from one thread of its own
(:func:`browser_thread`), whose asyncio loop sends the commands and reads
the answers: callers on any thread hand it coroutines
(:meth:`BrowserThread.call`) and hold no browser state, so their own threads
stay free for their own asyncio loops, and the commands of many pages are in
flight at once. :meth:`BrowserThread.browser` gives the process's one
Chromium for an executable and its switches, launched on first use and again
after it exited; the thread closes its browsers at interpreter exit.

Launch safety:

* the child is started with ``posix_spawn``: no Python code runs between
  fork and exec, so it is safe from a process with threads (the browser
  thread, the callers' threads);
* its stdin, stdout and stderr are ``/dev/null``; the two pipe ends it keeps
  are first moved to descriptors above 9, so that neither already is 3 or 4
  (a ``dup2`` onto itself would leave it closed on exec) and one cannot
  overwrite the other; every other descriptor of ours is closed on exec, as
  Python opens them;
* each browser gets a fresh temporary profile (``--user-data-dir``),
  removed when it closes; closing asks Chromium to close and kills it after
  5 s, polling rather than waiting in an executor thread (none can be
  started at interpreter exit);
* the switches (:data:`LAUNCH_ARGS`) are those Playwright launched Chromium
  with: headless, the pipe, no first run, no background work and no field
  trials.

Chromium is Debian's ``chromium``, looked up on ``PATH``
(:func:`find_chromium`, :func:`require_chromium`).
"""

from __future__ import annotations

import asyncio
import atexit
import fcntl
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from agentenvs.core.env import MissingProgram

_T = TypeVar("_T")

# Debian's package puts it at /usr/bin/chromium; it is looked up on PATH, so that a PATH without it
# behaves as a machine without it. (Debian's chromium-headless-shell costs less CPU per render but draws
# form controls and bidi text with other pixels, so scores would change with it.)
CHROMIUM_PROGRAM = "chromium"
CHROMIUM_INSTALL = (
    "install Debian's chromium as root: apt-get install chromium "
    "(the repository's scripts/install_system_packages.sh does it when missing)"
)
# how long a new browser may take to answer its first command (Browser.getVersion)
LAUNCH_TIMEOUT_S = 10.0
# The switches Playwright launched Chromium with (those of them Chromium knows), so that renders keep the
# pixels they had when Playwright drove them: headless, the DevTools pipe, no first-run, sync, update,
# metrics or other background work and no field trials (a trial could change how a page draws), every
# page rendered at full speed whether or not a window would show it, a desktop's hover and pointer media
# features, and no paint holding.
LAUNCH_ARGS = (
    "--headless",
    "--remote-debugging-pipe",
    "--no-startup-window",
    "--no-first-run",
    "--no-default-browser-check",
    "--no-service-autorun",
    "--disable-field-trial-config",
    "--disable-background-networking",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-back-forward-cache",
    "--disable-breakpad",
    "--disable-component-extensions-with-background-pages",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--disable-hang-monitor",
    "--disable-ipc-flooding-protection",
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    "--disable-sync",
    "--disable-infobars",
    "--disable-search-engine-choice-screen",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    "--mute-audio",
    "--allow-pre-commit-input",
    "--enable-gpu-rasterization",
    "--enable-unsafe-swiftshader",
    "--disable-features=AvoidUnnecessaryBeforeUnloadCheckSync,DestroyProfileOnBrowserClose,HttpsUpgrades,"
    "HttpsFirstBalancedModeAutoEnable,LensOverlay,MediaRouter,PaintHolding,ThirdPartyStoragePartitioning,"
    "AvoidCorsURLLoaderRestartOnRedirect,OptimizationHints,NetworkTimeServiceQuerying,AimEnabled,"
    "PreconnectToSearch",
    "--enable-features=CDPScreenshotNewSurface",
    "--blink-settings=primaryHoverType=2,availableHoverTypes=2,primaryPointerType=4,availablePointerTypes=4",
)


def find_chromium() -> str | None:
    """The path of the ``chromium`` executable on ``PATH``, or None where there is none."""
    return shutil.which(CHROMIUM_PROGRAM)


def require_chromium(executable: str | None = None) -> str:
    """``executable`` (or Chromium on ``PATH`` when None), checked to exist.

    Raises:
        MissingProgram: no such file, or no ``chromium`` on ``PATH``; the message says how to install it.
    """
    found = find_chromium() if executable is None else executable
    if found is None or not Path(found).is_file():
        where = "on PATH" if executable is None else f"at {executable}"
        raise MissingProgram(CHROMIUM_PROGRAM, f"no chromium {where}: {CHROMIUM_INSTALL}")
    return found


def _above_nine(fd: int) -> int:
    """``fd`` moved to a descriptor numbered 10 or more (closed on exec, as Python opens them)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class _Process:
    """A child started with ``posix_spawn`` (no Python code runs between fork and exec, so it is safe
    from a process with threads), with its stdio on /dev/null and the given descriptors moved to theirs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    @classmethod
    def spawn(cls, argv: list[str], descriptors: dict[int, int]) -> _Process:
        actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
        actions += [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
        actions += [(os.POSIX_SPAWN_DUP2, source, target) for source, target in descriptors.items()]
        return cls(os.posix_spawn(argv[0], argv, os.environ, file_actions=actions))

    def poll(self) -> int | None:
        """The exit status once the child has ended (it is reaped then), else None."""
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)


class DevToolsError(RuntimeError):
    """Chromium answered a DevTools command with an error (its message and code are in the text)."""


class BrowserGone(RuntimeError):
    """The Chromium process ended, or its DevTools pipe closed, before a command was answered."""


class DevTools:
    """One Chromium launched with ``--remote-debugging-pipe``, and its DevTools protocol.

    Chromium reads commands on its file descriptor 3 and writes answers and events on 4, each message
    JSON ended by a NUL byte. Commands are sent from the browser thread's loop and answered through
    futures; events go to the handlers registered for their session and method (``session`` None: the
    browser's own). When the pipe closes, every unanswered command raises :class:`BrowserGone` and every
    session's ``Inspector.detached`` handler runs, so a page never waits on a browser that is gone.
    """

    def __init__(self, process: _Process, profile: str) -> None:
        self.process = process
        self.profile = profile
        self._writer: asyncio.WriteTransport | None = None
        self._next_id = 0
        self._answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._handlers: dict[tuple[str | None, str], Callable[[dict[str, Any]], None]] = {}
        self._closed = False
        self._reading: asyncio.Task[None] | None = None

    @classmethod
    async def launch(cls, executable: str, args: Sequence[str] = ()) -> DevTools:
        """Start ``executable`` with :data:`LAUNCH_ARGS` and ``args`` in a new profile."""
        # both ends Chromium keeps are moved above 9 first, so that neither is already 3 or 4 (a dup2 onto
        # itself would leave it closed on exec) and one cannot overwrite the other
        commands_read, commands_write = (_above_nine(fd) for fd in os.pipe())
        answers_read, answers_write = (_above_nine(fd) for fd in os.pipe())
        profile = tempfile.mkdtemp(prefix="agentenvs-chromium-")
        try:
            process = _Process.spawn(
                [executable, *LAUNCH_ARGS, *args, f"--user-data-dir={profile}"],
                {commands_read: 3, answers_write: 4},
            )
        except BaseException:
            for fd in (commands_read, commands_write, answers_read, answers_write):
                os.close(fd)
            shutil.rmtree(profile, ignore_errors=True)
            raise
        os.close(commands_read)
        os.close(answers_write)
        devtools = cls(process, profile)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 31)  # a screenshot is one message
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(answers_read, "rb", 0)
        )
        devtools._writer, _ = await loop.connect_write_pipe(
            asyncio.Protocol, os.fdopen(commands_write, "wb", 0)
        )
        devtools._reading = asyncio.ensure_future(devtools._read(reader))
        try:
            await asyncio.wait_for(devtools.send("Browser.getVersion"), LAUNCH_TIMEOUT_S)
        except BaseException:
            await devtools.close()
            raise
        return devtools

    @property
    def connected(self) -> bool:
        return not self._closed and self.process.poll() is None

    def on(self, session: str | None, method: str, handler: Callable[[dict[str, Any]], None]) -> None:
        """Call ``handler(params)`` for each ``method`` event of ``session`` (replacing any before)."""
        self._handlers[(session, method)] = handler

    def forget(self, session: str) -> None:
        """Drop every handler of ``session``."""
        for key in [key for key in self._handlers if key[0] == session]:
            del self._handlers[key]

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> asyncio.Future[dict[str, Any]]:
        """The future answer to DevTools' ``method`` (its ``result``); :class:`DevToolsError` for an error."""
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        sent = self._write(method, params, session)
        if sent is None:
            answer.set_exception(BrowserGone(f"Chromium is gone; {method} was not sent"))
        else:
            self._answers[sent] = answer
        return answer

    def post(self, method: str, params: dict[str, Any], session: str | None = None) -> None:
        """Send ``method`` without waiting for its answer (which is dropped, an error too)."""
        self._write(method, params, session)

    def _write(self, method: str, params: dict[str, Any] | None, session: str | None) -> int | None:
        if not self.connected or self._writer is None or self._writer.is_closing():
            return None
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._writer.write(json.dumps(message).encode() + b"\0")
        return self._next_id

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                message = json.loads((await reader.readuntil(b"\0"))[:-1])
                if "id" in message:
                    answer = self._answers.pop(message["id"], None)
                    if answer is None or answer.done():  # posted, or a command whose waiter gave up
                        continue
                    if "error" in message:
                        answer.set_exception(DevToolsError(f"{message['error']!r:.300}"))
                    else:
                        answer.set_result(message.get("result", {}))
                else:
                    session, method, params = (
                        message.get("sessionId"),
                        message.get("method"),
                        message.get("params", {}),
                    )
                    if session is None and method == "Target.detachedFromTarget":  # a page closed or crashed
                        session, method = params.get("sessionId"), "Inspector.detached"
                    handler = self._handlers.get((session, method))
                    if handler is not None:
                        handler(params)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the pipe closed: Chromium exited
        finally:
            self._closed = True
            for answer in self._answers.values():
                if not answer.done():
                    answer.set_exception(BrowserGone("Chromium exited before it answered"))
            self._answers.clear()
            for (session, method), handler in list(self._handlers.items()):
                if session is not None and method == "Inspector.detached":
                    handler({"reason": "Chromium exited"})

    async def close(self) -> None:
        """Ask Chromium to close, kill it if it has not within 5 s, and remove its profile."""
        if self.connected:
            self.post("Browser.close", {})
        for _ in range(50):  # polled: at interpreter exit no executor thread can be started to wait
            if self.process.poll() is not None:
                break
            await asyncio.sleep(0.1)
        else:
            self.process.kill()
            self.process.wait()
        if self._writer is not None:
            self._writer.close()
        if self._reading is not None:
            await self._reading
        shutil.rmtree(self.profile, ignore_errors=True)


class BrowserThread:
    """The one thread that drives the process's browsers.

    It runs an asyncio loop that speaks DevTools with each Chromium over its
    pipes: callers on any thread hand it coroutines (:meth:`call`), and the
    commands of many pages are in flight at once (Chromium lays out and
    paints each page in its own renderer process). The callers' own threads
    hold no browser state and stay free for their own asyncio loops.
    """

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._browsers: dict[tuple[str, tuple[str, ...]], DevTools] = {}
        self._launching: asyncio.Lock | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="agentenvs-chromium", daemon=True)
        self._thread.start()

    def call(self, function: Callable[..., Coroutine[Any, Any, _T]], *args: Any) -> _T:
        """Run the coroutine ``function(*args)`` on the browser thread; its exception is raised here."""
        return asyncio.run_coroutine_threadsafe(function(*args), self._loop).result()

    async def browser(self, executable: str, args: Sequence[str] = ()) -> DevTools:
        """The process's one Chromium for ``executable`` with the switches ``args`` (beside
        :data:`LAUNCH_ARGS`), launched on first use and again after it exited (browser thread only)."""
        if self._launching is None:
            self._launching = asyncio.Lock()
        key = (executable, tuple(args))
        async with self._launching:  # concurrent first uses launch one browser, not several
            browser = self._browsers.get(key)
            if browser is None or not browser.connected:
                if browser is not None:
                    await browser.close()
                browser = self._browsers[key] = await DevTools.launch(executable, args)
            return browser

    def stop(self) -> None:
        """Close the browsers, then end the thread."""
        if self._thread.is_alive():
            self.call(self._close_all)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    async def _close_all(self) -> None:
        for browser in self._browsers.values():
            await browser.close()
        self._browsers = {}


_browser_thread: BrowserThread | None = None
_browser_thread_lock = threading.Lock()


def _forget_browser_thread_in_child() -> None:
    """A forked child has the parent's thread object but not its thread: start afresh on first use.

    Without this, a child forked after a render (Gymnasium's async vector envs fork their workers)
    would hand its commands to a loop that no thread runs, and wait on them for ever.
    """
    global _browser_thread, _browser_thread_lock
    _browser_thread = None
    _browser_thread_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_browser_thread_in_child)


def browser_thread() -> BrowserThread:
    """The process's browser thread, started on first use and stopped at exit."""
    global _browser_thread
    with _browser_thread_lock:
        if _browser_thread is None:
            _browser_thread = BrowserThread()
            atexit.register(_browser_thread.stop)
        return _browser_thread

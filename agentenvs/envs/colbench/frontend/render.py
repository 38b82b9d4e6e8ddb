"""Render HTML pages in Chromium and compare the renders.

:class:`PageRenderer` renders in one headless Chromium (Debian's
``chromium``, no browser download) that the whole process shares, launched
on first use and reused for every render. It is driven over DevTools'
pipe (``--remote-debugging-pipe``) from one thread of its own, whose
asyncio loop sends the commands itself (renderers may be called from any
thread, and many renders run at once); each renderer keeps a pool of pages,
each in a browser context of its own, so a batch of answers renders in
parallel (:meth:`PageRenderer.render_many`). A render is two commands: one
script, in an isolated world of the page, rewrites the page's document
with the answer (as Playwright's ``set_content`` did), waits for its load
event and settles the page for the capture; then the capture. Every
request the page makes (stylesheets, images, fonts, anything outside the
page) is refused, and JavaScript is off, so a render depends on the HTML
alone and nothing leaves the machine; ``autofocus`` never applies (each
page spends it when it opens, as a document applies it once in its life),
so a render does not depend on what its page rendered before either. The
browser's switches and each page's settings are those Playwright used
when it drove the renders, so the pixels are Playwright's (tested against
its own screenshot). The viewport is fixed at 800×600 CSS pixels at scale 1
(ColBench's Firefox had no window size set, so its width was the browser's
default): 800 px shows the desktop layout of the pages (WebSight's pages
switch to it from 768 px), keeps a render fast, and makes scores independent
of the host's display. The screenshot is the full page, cut at
``max_height`` (2,400 px) and ``MAX_WIDTH`` (3,200 px), with animations
settled and carets hidden as Playwright's ``screenshot(full_page=True,
animations="disabled", caret="hide")`` does, taken with DevTools'
``Page.captureScreenshot`` directly: clipped to the page, PNG in Chromium's
fast encoding (lossless, the same pixels).

:func:`page_similarity` is the deterministic image metric used when no CLIP
weights are given: both renders are padded with white to the same height,
reduced to 64 px wide (box filter, height in proportion, at most 192), and
compared as 1 − mean absolute difference / 255 over every pixel and channel.
Identical renders score exactly 1.0. :class:`ClipSimilarity` is the paper's
metric (CLIP image embeddings, L2-normalised, cosine) for a local CLIP
checkpoint (``openai/clip-vit-base-patch32`` in the paper).
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import fcntl
import io
import json
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from agentenvs.core.env import MissingProgram

# Debian's package puts it at /usr/bin/chromium; it is looked up on PATH, so that a PATH without it
# behaves as a machine without it. (Debian's chromium-headless-shell costs less CPU per render but draws
# form controls and bidi text with other pixels, so scores would change with it.)
CHROMIUM_PROGRAM = "chromium"
CHROMIUM_INSTALL = (
    "install Debian's chromium as root: apt-get install chromium "
    "(the repository's scripts/install_system_packages.sh does it when missing)"
)
VIEWPORT = {"width": 800, "height": 600}
MAX_HEIGHT = 2400
# a page wider than this is cut at it: a 200,000 px wide page would otherwise take ~10 s and a 120-megapixel
# image, and the similarity reduces every render to 64 px wide anyway
MAX_WIDTH = 4 * VIEWPORT["width"]
RENDER_TIMEOUT_MS = 10_000
PAGES = 8  # pages a renderer keeps for concurrent renders
COMPARE_WIDTH = 64
_HTML = re.compile(r"<html.*?>.*?</html>", re.DOTALL)
_BODY = re.compile(r"<body.*?>.*?</body>", re.DOTALL)
# the switches that fix a render's pixels across hosts (fonts unhinted, greyscale antialiasing, sRGB, no
# scrollbars, software raster)
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--font-render-hinting=none",
    "--disable-lcd-text",
    "--force-color-profile=srgb",
    "--hide-scrollbars",
)
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


def html_of(answer: str) -> str | None:
    """The page an answer holds, as ColBench extracts it (``<html>…</html>``, else ``<body>…</body>``)."""
    for pattern in (_HTML, _BODY):
        match = pattern.search(answer)
        if match:
            return match.group(0)
    return None


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
        actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
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


class _DevTools:
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
    async def launch(cls, executable: str) -> _DevTools:
        """Start ``executable`` with :data:`CHROMIUM_ARGS` and :data:`LAUNCH_ARGS` in a new profile."""
        # both ends Chromium keeps are moved above 9 first, so that neither is already 3 or 4 (a dup2 onto
        # itself would leave it closed on exec) and one cannot overwrite the other
        commands_read, commands_write = (_above_nine(fd) for fd in os.pipe())
        answers_read, answers_write = (_above_nine(fd) for fd in os.pipe())
        profile = tempfile.mkdtemp(prefix="agentenvs-chromium-")
        try:
            process = _Process.spawn(
                [executable, *LAUNCH_ARGS, *CHROMIUM_ARGS, f"--user-data-dir={profile}"],
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
            await asyncio.wait_for(devtools.send("Browser.getVersion"), RENDER_TIMEOUT_MS / 1000)
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
    ) -> asyncio.Future:
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


class _BrowserThread:
    """The one thread that drives the process's browsers.

    It runs an asyncio loop that speaks DevTools with each Chromium over its
    pipes: callers on any thread hand it coroutines (:meth:`call`), and the
    renders of many pages are in flight at once (Chromium lays out and
    paints each page in its own renderer process). The callers' own threads
    hold no browser state and stay free for their own asyncio loops.
    """

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._browsers: dict[str, _DevTools] = {}
        self._launching: asyncio.Lock | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="agentenvs-chromium", daemon=True)
        self._thread.start()

    def call(self, function: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run the coroutine ``function(*args)`` on the browser thread; its exception is raised here."""
        return asyncio.run_coroutine_threadsafe(function(*args), self._loop).result()

    async def browser(self, executable: str) -> _DevTools:
        """The process's one Chromium for ``executable``, launched on first use and again after it exited
        (browser thread only)."""
        if self._launching is None:
            self._launching = asyncio.Lock()
        async with self._launching:  # concurrent first renders launch one browser, not several
            browser = self._browsers.get(executable)
            if browser is None or not browser.connected:
                if browser is not None:
                    await browser.close()
                browser = self._browsers[executable] = await _DevTools.launch(executable)
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


_browser_thread: _BrowserThread | None = None
_browser_thread_lock = threading.Lock()


def browser_thread() -> _BrowserThread:
    """The process's browser thread, started on first use and stopped at exit."""
    global _browser_thread
    with _browser_thread_lock:
        if _browser_thread is None:
            _browser_thread = _BrowserThread()
            atexit.register(_browser_thread.stop)
        return _browser_thread


class RenderFailed(RuntimeError):
    """A page could not be rendered: its script reported an error, it took longer than
    :data:`RENDER_TIMEOUT_MS`, or its page crashed twice in a row."""


# Run in an isolated world of the page with the answer's HTML as its argument: the page's document is
# rewritten (open, write, close: as Playwright's set_content rewrites it) and its load event awaited (once
# every request it made has been refused). Then, with the rules of Playwright's
# screenshot(animations="disabled", caret="hide") that renders used before: finite CSS animations and
# transitions jump to their end, infinite ones are cancelled (also those that start during the capture),
# text carets are transparent. It waits for the page's fonts and returns the full page's CSS size (the
# largest of body's and the document element's scroll, offset and client sizes).
_LOAD_AND_PREPARE = """async (page) => {
  document.open();
  document.write(page);
  document.close();
  if (document.readyState !== "complete") {
    await new Promise((resolve) => window.addEventListener("load", resolve, { once: true }));
  }
  await document.fonts.ready;
  const roots = [];
  const collect = (root) => {
    roots.push(root);
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
    do {
      const node = walker.currentNode;
      if (node instanceof Element && node.shadowRoot) collect(node.shadowRoot);
    } while (walker.nextNode());
  };
  collect(document);
  const cancelled = new Set();
  const settle = (root) => {
    for (const animation of root.getAnimations()) {
      if (!animation.effect || animation.playbackRate === 0 || cancelled.has(animation)) continue;
      try {
        if (Number.isFinite(animation.effect.getComputedTiming().endTime)) animation.finish();
        else { animation.cancel(); cancelled.add(animation); }
      } catch (error) {}
    }
  };
  for (const root of roots) {
    root.querySelectorAll("input,textarea,[contenteditable]").forEach(
      (element) => element.style.setProperty("caret-color", "transparent", "important"));
    settle(root);
    root.addEventListener("transitionrun", () => settle(root));
    root.addEventListener("animationstart", () => settle(root));
  }
  const body = document.body, html = document.documentElement;
  if (!body || !html) return null;
  return [
    Math.max(body.scrollWidth, html.scrollWidth, body.offsetWidth, html.offsetWidth, body.clientWidth,
             html.clientWidth),
    Math.max(body.scrollHeight, html.scrollHeight, body.offsetHeight, html.offsetHeight, body.clientHeight,
             html.clientHeight),
  ];
}"""


# A document applies ``autofocus`` once in its life, and rewriting a page's document keeps the document:
# a page's renders would depend on what it rendered before (the first page with autofocus on it focused,
# the later ones not). Every pool page spends its autofocus on this page when it opens, so that autofocus
# never applies and every page of every pool renders an answer alike.
SPEND_AUTOFOCUS = "<html><body><input autofocus></body></html>"
_AFTER_TWO_FRAMES = """() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(
  () => resolve(document.activeElement && document.activeElement.tagName))))"""
# the settings Playwright gave each page (a context with this viewport, no JavaScript, every request
# aborted), sent as Playwright sent them
_FONT_FAMILIES = {
    "standard": "Times New Roman",
    "fixed": "Monospace",
    "serif": "Times New Roman",
    "sansSerif": "Arial",
    "cursive": "Comic Sans MS",
    "fantasy": "Impact",
}
_MEDIA_FEATURES = [
    {"name": "prefers-color-scheme", "value": "light"},
    {"name": "prefers-reduced-motion", "value": "no-preference"},
    {"name": "forced-colors", "value": "none"},
    {"name": "prefers-contrast", "value": "no-preference"},
]


class _PooledPage:
    """One page of a pool, in a browser context of its own: its DevTools session, its main frame, an
    isolated world to run the capture's script in (it outlives document rewrites), and whether it is gone.

    A DevTools command sent to a page that crashes never gets its answer, so :meth:`send` waits for the
    answer or the page's end, whichever comes first.
    """

    def __init__(self, devtools: _DevTools, context_id: str, target_id: str, session: str) -> None:
        self.devtools = devtools
        self.context_id = context_id
        self.target_id = target_id
        self.session = session
        self.frame_id = ""
        self.world_id = 0
        self._gone = asyncio.Event()
        for event in ("Inspector.targetCrashed", "Inspector.detached"):
            devtools.on(session, event, self._on_gone)

    def _on_gone(self, _params: dict[str, Any]) -> None:
        self._gone.set()

    @property
    def usable(self) -> bool:
        return not self._gone.is_set() and self.devtools.connected

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The answer to DevTools' ``method``; :class:`RenderFailed` when the page crashes or closes first."""
        answer = self.devtools.send(method, params, self.session)
        gone = asyncio.ensure_future(self._gone.wait())
        try:
            await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            answer.cancel()  # unless answered: given up on (the page went, or the render was cancelled)
        if not answer.cancelled():
            error = answer.exception()
            if error is None:
                return answer.result()
            if not isinstance(error, BrowserGone):
                raise error
        raise RenderFailed(f"the page crashed or closed during {method}")

    async def call(self, function: str, *args: Any) -> Any:
        """The value of ``function(*args)`` (awaited) in the page's isolated world (its scripts stay off)."""
        answer = await self.send(
            "Runtime.callFunctionOn",
            {
                "functionDeclaration": function,
                "executionContextId": self.world_id,
                "arguments": [{"value": arg} for arg in args],
                "awaitPromise": True,
                "returnByValue": True,
            },
        )
        if "exceptionDetails" in answer:
            raise RenderFailed(f"evaluating in the page failed: {answer['exceptionDetails']!r:.300}")
        return answer.get("result", {}).get("value")

    async def close(self) -> None:
        """Close the page and its browser context (nothing to do once the browser is gone)."""
        self._gone.set()
        self.devtools.forget(self.session)
        if self.devtools.connected:
            try:
                await self.devtools.send(
                    "Target.disposeBrowserContext", {"browserContextId": self.context_id}
                )
            except (DevToolsError, BrowserGone):
                pass  # already disposed, or the browser went meanwhile: the page is closed either way


class PageRenderer:
    """Renders HTML to images in the process's shared headless Chromium (see the module docstring).

    It holds a pool of up to ``pages`` pages, each in a browser context of
    its own with the same settings, opened as concurrent renders need them:
    :meth:`render_many` renders a batch on the pool at once, and
    :meth:`render_png` may be called from any number of threads at once
    (each render holds one page from load to screenshot). A page's pixels
    depend on the HTML alone, so every page of the pool renders a page
    identically. A page found crashed or closed is closed and replaced by a
    new one (counted in ``replaced_pages``); a render whose page crashes
    under it, or whose page DevTools refuses (a page that navigated away
    from its document), is retried once on a new page, and raises
    :class:`RenderFailed` if that one fails too, so a crash never yields an
    image. The pool is a handle into the browser: a pickled or copied
    renderer opens its own on first use.
    """

    def __init__(
        self, executable: str | None = None, max_height: int = MAX_HEIGHT, pages: int = PAGES
    ) -> None:
        if int(pages) < 1:
            raise ValueError(f"pages must be >= 1, got {pages}")
        self.executable = require_chromium(executable)
        self.max_height = max_height
        self.pages = int(pages)
        self._idle: list[_PooledPage] = []
        self._opened = 0
        self._freed: asyncio.Condition | None = None
        self.blocked_requests = 0
        self.replaced_pages = 0

    def __getstate__(self) -> dict[str, Any]:
        # the pool's pages live in this process's browser: only the settings and counts travel
        return {
            "executable": self.executable,
            "max_height": self.max_height,
            "pages": self.pages,
            "_idle": [],
            "_opened": 0,
            "_freed": None,
            "blocked_requests": self.blocked_requests,
            "replaced_pages": self.replaced_pages,
        }

    @property
    def open_pages(self) -> int:
        """Pages of the pool opened so far."""
        return self._opened

    async def _acquire(self) -> _PooledPage:
        if self._freed is None:
            self._freed = asyncio.Condition()
        while True:
            async with self._freed:
                while not self._idle and self._opened >= self.pages:
                    await self._freed.wait()
                if not self._idle:
                    self._opened += 1
                    break
                pooled = self._idle.pop()
            if pooled.usable:
                return pooled
            await self._discard(pooled)
        try:
            return await self._open()
        except BaseException:
            async with self._freed:
                self._opened -= 1
                self._freed.notify()
            raise

    async def _release(self, pooled: _PooledPage) -> None:
        async with self._freed:
            self._idle.append(pooled)
            self._freed.notify()

    async def _discard(self, pooled: _PooledPage) -> None:
        """Drop a crashed or closed page from the pool (its slot reopens on demand) and count it."""
        async with self._freed:
            self._opened -= 1
            self.replaced_pages += 1
            self._freed.notify()
        await pooled.close()

    async def _open(self) -> _PooledPage:
        devtools = await browser_thread().browser(self.executable)
        context_id = (await devtools.send("Target.createBrowserContext", {"disposeOnDetach": True}))[
            "browserContextId"
        ]
        pooled: _PooledPage | None = None
        try:
            target = await devtools.send(
                "Target.createTarget", {"url": "about:blank", "browserContextId": context_id}
            )
            attached = await devtools.send(
                "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
            )
            pooled = _PooledPage(devtools, context_id, target["targetId"], attached["sessionId"])
            devtools.on(pooled.session, "Fetch.requestPaused", lambda params: self._block(pooled, params))
            window = await pooled.send("Browser.getWindowForTarget")
            for method, params in (
                ("Inspector.enable", None),
                ("Fetch.enable", {"handleAuthRequests": True, "patterns": [{"urlPattern": "*"}]}),
                ("Emulation.setFocusEmulationEnabled", {"enabled": True}),
                ("Browser.setWindowBounds", {"windowId": window["windowId"], "bounds": dict(VIEWPORT)}),
                (
                    "Emulation.setDeviceMetricsOverride",
                    {
                        "mobile": False,
                        **VIEWPORT,
                        "screenWidth": VIEWPORT["width"],
                        "screenHeight": VIEWPORT["height"],
                        "deviceScaleFactor": 1,
                        "screenOrientation": {"angle": 0, "type": "landscapePrimary"},
                    },
                ),
                ("Emulation.setScriptExecutionDisabled", {"value": True}),
                ("Page.setFontFamilies", {"fontFamilies": _FONT_FAMILIES}),
                ("Emulation.setEmulatedMedia", {"media": "", "features": _MEDIA_FEATURES}),
            ):
                await pooled.send(method, params)
            tree = await pooled.send("Page.getFrameTree")
            pooled.frame_id = tree["frameTree"]["frame"]["id"]
            world = await pooled.send("Page.createIsolatedWorld", {"frameId": pooled.frame_id})
            pooled.world_id = world["executionContextId"]
            await asyncio.wait_for(pooled.call(_LOAD_AND_PREPARE, SPEND_AUTOFOCUS), RENDER_TIMEOUT_MS / 1000)
            focused = await asyncio.wait_for(pooled.call(_AFTER_TWO_FRAMES), RENDER_TIMEOUT_MS / 1000)
            if focused != "INPUT":
                raise RenderFailed(f"a new page did not spend its autofocus (focused: {focused!r:.100})")
        except BaseException:
            # a page that failed to open leaves no context behind
            if pooled is not None:
                await pooled.close()
            elif devtools.connected:
                devtools.post("Target.disposeBrowserContext", {"browserContextId": context_id})
            raise
        return pooled

    def _block(self, pooled: _PooledPage, params: dict[str, Any]) -> None:
        """Refuse a request the page makes, as Playwright's ``route.abort()`` refused it, and count it."""
        self.blocked_requests += 1
        pooled.devtools.post(
            "Fetch.failRequest", {"requestId": params["requestId"], "errorReason": "Failed"}, pooled.session
        )

    async def _capture(self, pooled: _PooledPage, html: str) -> bytes:
        """Load ``html`` on the page; its full page, cut at ``max_height`` and ``MAX_WIDTH``, as PNG.

        Chromium encodes the PNG with its fast settings (``optimizeForSpeed``): other bytes than
        Playwright's screenshot, the same pixels.
        """
        size = await pooled.call(_LOAD_AND_PREPARE, html)
        if not isinstance(size, list):
            raise RenderFailed(f"the page could not be measured: {size!r:.300}")
        width, height = size
        fits = width <= VIEWPORT["width"] and height <= VIEWPORT["height"]
        shot = await pooled.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                "clip": {
                    "x": 0,
                    "y": 0,
                    "width": min(width, MAX_WIDTH),
                    "height": min(height, self.max_height),
                    "scale": 1,
                },
                "captureBeyondViewport": not fits,
                "optimizeForSpeed": True,
            },
        )
        return base64.b64decode(shot["data"])

    async def _render_png(self, html: str) -> bytes:
        retried = False
        while True:
            pooled = await self._acquire()
            try:
                png = await asyncio.wait_for(self._capture(pooled, html), RENDER_TIMEOUT_MS / 1000)
            except TimeoutError:
                await self._discard(pooled)  # its capture may still be running: the page is not reused
                raise RenderFailed(
                    f"the page took longer than {RENDER_TIMEOUT_MS / 1000:g} s to render"
                ) from None
            except (RenderFailed, DevToolsError) as error:
                if pooled.usable and isinstance(error, RenderFailed):  # the page's own script error
                    await self._release(pooled)
                    raise
                await self._discard(pooled)
                if retried:
                    raise RenderFailed(f"the page failed twice rendering this HTML: {error}") from error
                retried = True
                continue
            except BaseException:
                await self._discard(
                    pooled
                )  # cancelled or interrupted mid-render: the page's state is unknown
                raise
            await self._release(pooled)
            return png

    async def _render_all(self, htmls: list[str]) -> list[bytes]:
        return list(await asyncio.gather(*(self._render_png(html) for html in htmls)))

    def render_png(self, html: str) -> bytes:
        """The full-page screenshot of ``html`` as PNG, cut at ``MAX_WIDTH`` wide and ``max_height`` tall."""
        return browser_thread().call(self._render_png, html)

    def render_many_png(self, htmls: Sequence[str]) -> list[bytes]:
        """:meth:`render_png` of every page, in order, rendered at once on the pool."""
        return browser_thread().call(self._render_all, list(htmls))

    def render(self, html: str) -> Image.Image:
        """The render of ``html`` as an RGB image."""
        return decode_png(self.render_png(html))

    def render_many(self, htmls: Sequence[str]) -> list[Image.Image]:
        """:meth:`render` of every page, in order, rendered at once on the pool."""
        return [decode_png(png) for png in self.render_many_png(htmls)]

    def close(self) -> None:
        """Close the pool's pages and contexts (the shared browser stays up); a later render reopens them."""
        if self._opened:
            browser_thread().call(self._close_pages)

    async def _close_pages(self) -> None:
        async with self._freed:
            while len(self._idle) < self._opened:  # renders in flight keep their pages until done
                await self._freed.wait()
            pooled, self._idle, self._opened = self._idle, [], 0
        for each in pooled:
            await each.close()


def decode_png(png: bytes) -> Image.Image:
    return Image.open(io.BytesIO(png)).convert("RGB")


def _reduced(image: Image.Image, height: int) -> np.ndarray:
    canvas = Image.new("RGB", (image.width, height), "white")
    canvas.paste(image, (0, 0))
    small_height = max(1, min(192, round(COMPARE_WIDTH * height / image.width)))
    return np.asarray(canvas.resize((COMPARE_WIDTH, small_height), Image.Resampling.BOX), dtype=np.float64)


def page_similarity(a: Image.Image, b: Image.Image) -> float:
    """1 − mean absolute pixel difference / 255 of the two renders (see the module docstring)."""
    width = max(a.width, b.width)
    a = a if a.width == width else a.resize((width, max(1, round(a.height * width / a.width))))
    b = b if b.width == width else b.resize((width, max(1, round(b.height * width / b.width))))
    height = max(a.height, b.height)
    return float(1.0 - np.abs(_reduced(a, height) - _reduced(b, height)).mean() / 255.0)


class ClipSimilarity:
    """Cosine of the CLIP image embeddings of two renders, from a local checkpoint (``transformers``)."""

    def __init__(self, checkpoint: str | Path) -> None:
        from transformers import CLIPImageProcessor, CLIPModel

        self.model = CLIPModel.from_pretrained(str(checkpoint), local_files_only=True).eval()
        self.processor = CLIPImageProcessor.from_pretrained(str(checkpoint), local_files_only=True)

    def __call__(self, a: Image.Image, b: Image.Image) -> float:
        import torch

        with torch.no_grad():
            pixels = self.processor(images=[a, b], return_tensors="pt")["pixel_values"]
            output = self.model.get_image_features(pixel_values=pixels)
            # transformers ≥ 5 wraps the projected embeddings in an output object
            features = output if isinstance(output, torch.Tensor) else output.pooler_output
            features = features / features.norm(dim=-1, keepdim=True)
        return float((features[0] * features[1]).sum())

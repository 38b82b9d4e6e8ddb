"""Render HTML pages in Chromium and compare the renders.

:class:`PageRenderer` renders in one headless Chromium (Debian's
``chromium`` driven by Playwright, no browser download) that the whole
process shares, launched on first use and reused for every render, and
driven from one thread of its own through Playwright's asyncio API
(renderers may be called from any thread, and many renders run at once);
each renderer keeps a pool of pages, each in a browser context of its own,
so a batch of answers renders in parallel
(:meth:`PageRenderer.render_many`). Each page is loaded with ``set_content``
(until its load event); every request it makes (stylesheets, images, fonts,
anything outside the page) is aborted, and JavaScript is off, so a render
depends on the HTML alone and nothing leaves the machine; ``autofocus``
never applies (each page spends it when it opens, as a document applies it
once in its life), so a render does not depend on what its page rendered
before either. The viewport is fixed at 800×600 CSS pixels at scale 1
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
import io
import re
import shutil
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
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--font-render-hinting=none",
    "--disable-lcd-text",
    "--force-color-profile=srgb",
    "--hide-scrollbars",
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


class _BrowserThread:
    """The one thread that drives Playwright and the process's browsers.

    It runs an asyncio loop with Playwright's async API: callers on any thread
    hand it coroutines (:meth:`call`), and the renders of many pages are in
    flight at once (Chromium lays out and paints each page in its own
    renderer process). The callers' own threads hold no Playwright state and
    stay free for other asyncio or Playwright users.
    """

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._playwright: Any = None
        self._browsers: dict[str, Any] = {}
        self._launching: asyncio.Lock | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="agentenvs-chromium", daemon=True)
        self._thread.start()

    def call(self, function: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run the coroutine ``function(*args)`` on the browser thread; its exception is raised here."""
        return asyncio.run_coroutine_threadsafe(function(*args), self._loop).result()

    async def browser(self, executable: str) -> Any:
        """The process's one Chromium for ``executable``, launched on first use (browser thread only)."""
        if self._launching is None:
            self._launching = asyncio.Lock()
        async with self._launching:  # concurrent first renders launch one browser, not several
            if self._playwright is None:
                from playwright.async_api import async_playwright

                self._playwright = await async_playwright().start()
            browser = self._browsers.get(executable)
            if browser is None or not browser.is_connected():
                browser = self._browsers[executable] = await self._playwright.chromium.launch(
                    executable_path=executable, args=list(CHROMIUM_ARGS)
                )
            return browser

    def stop(self) -> None:
        """Close the browsers and Playwright, then end the thread."""
        if self._thread.is_alive():
            self.call(self._close_all)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    async def _close_all(self) -> None:
        for browser in self._browsers.values():
            await browser.close()
        self._browsers = {}
        if self._playwright is not None:
            await self._playwright.stop()
            self._playwright = None


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


# Run in an isolated world of the loaded page just before the capture, with the rules of Playwright's
# screenshot(animations="disabled", caret="hide") that renders used before: finite CSS animations and
# transitions jump to their end, infinite ones are cancelled (also those that start during the capture),
# text carets are transparent. It waits for the page's fonts and returns the full page's CSS size (the
# largest of body's and the document element's scroll, offset and client sizes).
_PREPARE_CAPTURE = """(async () => {
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
})()"""


# ``set_content`` rewrites the page's document, and a document applies ``autofocus`` once in its life: a
# page's renders would depend on what it rendered before (the first page with autofocus on it focused, the
# later ones not). Every pool page spends its autofocus on this page when it opens, so that autofocus
# never applies and every page of every pool renders an answer alike.
SPEND_AUTOFOCUS = "<html><body><input autofocus></body></html>"
_AFTER_TWO_FRAMES = """new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(
  () => resolve(document.activeElement && document.activeElement.tagName))))"""


class _PooledPage:
    """One page of a pool: its Playwright page, a DevTools session on it, and whether it is gone.

    A DevTools command sent to a page that crashes never gets its answer, so :meth:`send` waits for the
    answer or the page's end, whichever comes first.
    """

    def __init__(self, page: Any, devtools: Any, frame_id: str) -> None:
        self.page = page
        self.devtools = devtools
        self.frame_id = frame_id
        self._gone = asyncio.Event()
        page.on("crash", self._on_gone)
        page.on("close", self._on_gone)

    def _on_gone(self, _page: Any) -> None:
        self._gone.set()

    @property
    def usable(self) -> bool:
        return not self._gone.is_set() and not self.page.is_closed()

    async def send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The answer to DevTools' ``method``; :class:`RenderFailed` when the page crashes or closes first."""
        answer = asyncio.ensure_future(self.devtools.send(method, params))
        gone = asyncio.ensure_future(self._gone.wait())
        try:
            await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if answer.done():
            return answer.result()
        answer.cancel()
        raise RenderFailed(f"the page crashed or closed during {method}")


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
    under it is retried once on a new page, and raises :class:`RenderFailed`
    if that one crashes too, so a crash never yields an image. The pool is a
    handle into the browser: a pickled or copied renderer opens its own on
    first use.
    """

    def __init__(self, executable: str | None = None, max_height: int = MAX_HEIGHT, pages: int = PAGES) -> None:
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
        # Playwright also hangs its wrappers of ``_block`` on the instance: only our own fields travel
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
        if pooled.page.context.browser is not None and pooled.page.context.browser.is_connected():
            await pooled.page.context.close()

    async def _open(self) -> _PooledPage:
        browser = await browser_thread().browser(self.executable)
        context = await browser.new_context(viewport=VIEWPORT, device_scale_factor=1, java_script_enabled=False)
        try:
            await context.route("**/*", self._block)
            page = await context.new_page()
            devtools = await context.new_cdp_session(page)
            tree = await devtools.send("Page.getFrameTree")
            pooled = _PooledPage(page, devtools, tree["frameTree"]["frame"]["id"])
            await page.set_content(SPEND_AUTOFOCUS, wait_until="load", timeout=RENDER_TIMEOUT_MS)
            focused = await self._evaluate(pooled, _AFTER_TWO_FRAMES)
            if focused != "INPUT":
                raise RenderFailed(f"a new page did not spend its autofocus (focused: {focused!r:.100})")
        except BaseException:
            await context.close()  # a page that failed to open leaves no context behind
            raise
        return pooled

    async def _block(self, route: Any) -> None:
        self.blocked_requests += 1
        await route.abort()

    async def _capture(self, pooled: _PooledPage, html: str) -> bytes:
        """Load ``html`` on the page; its full page, cut at ``max_height`` and ``MAX_WIDTH``, as PNG.

        Chromium encodes the PNG with its fast settings (``optimizeForSpeed``): other bytes than
        Playwright's screenshot, the same pixels.
        """
        await pooled.page.set_content(html, wait_until="load", timeout=RENDER_TIMEOUT_MS)
        size = await self._evaluate(pooled, _PREPARE_CAPTURE)
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

    @staticmethod
    async def _evaluate(pooled: _PooledPage, expression: str) -> Any:
        """The value of ``expression`` (awaited) in an isolated world of the page (its scripts stay off)."""
        world = await pooled.send("Page.createIsolatedWorld", {"frameId": pooled.frame_id})
        answer = await pooled.send(
            "Runtime.evaluate",
            {
                "expression": expression,
                "contextId": world["executionContextId"],
                "awaitPromise": True,
                "returnByValue": True,
            },
        )
        if "exceptionDetails" in answer:
            raise RenderFailed(f"evaluating in the page failed: {answer['exceptionDetails']!r:.300}")
        return answer.get("result", {}).get("value")

    async def _render_png(self, html: str) -> bytes:
        retried = False
        while True:
            pooled = await self._acquire()
            try:
                png = await asyncio.wait_for(self._capture(pooled, html), RENDER_TIMEOUT_MS / 1000)
            except TimeoutError:
                await self._discard(pooled)  # its capture may still be running: the page is not reused
                raise RenderFailed(f"the page took longer than {RENDER_TIMEOUT_MS / 1000:g} s to render") from None
            except Exception as error:
                from playwright.async_api import TimeoutError as LoadTimeout  # loaded with the browser

                if isinstance(error, LoadTimeout):  # set_content's own limit, the same as the capture's
                    await self._discard(pooled)
                    raise RenderFailed(f"the page did not load within {RENDER_TIMEOUT_MS / 1000:g} s") from None
                if pooled.usable:
                    await self._release(pooled)
                    raise
                await self._discard(pooled)
                if retried:
                    raise RenderFailed(f"the page crashed twice rendering this HTML: {error}") from error
                retried = True
                continue
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
            if not each.page.is_closed():
                await each.page.context.close()


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

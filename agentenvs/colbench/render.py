"""Render HTML pages in Chromium and compare the renders.

:class:`PageRenderer` renders in one headless Chromium (Debian's
``chromium`` driven by Playwright, no browser download) that the whole
process shares, launched on first use and reused for every render, and
driven from one thread of its own (renderers may be called from any thread);
each renderer keeps its own page. Each page is loaded with ``set_content``; every
request it makes (stylesheets, images, fonts, anything outside the page) is
aborted, and JavaScript is off, so a render depends on the HTML alone and
nothing leaves the machine. The viewport is fixed at 800×600 CSS pixels at
scale 1 (ColBench's Firefox had no window size set, so its width was the
browser's default): 800 px shows the desktop layout of the pages
(WebSight's pages switch to it from 768 px), keeps a render near 0.1 s, and
makes scores independent of the host's display. The screenshot is the full
page, cut at ``max_height`` (2,400 px).

:func:`page_similarity` is the deterministic image metric used when no CLIP
weights are given: both renders are padded with white to the same height,
reduced to 64 px wide (box filter, height in proportion, at most 192), and
compared as 1 − mean absolute difference / 255 over every pixel and channel.
Identical renders score exactly 1.0. :class:`ClipSimilarity` is the paper's
metric (CLIP image embeddings, L2-normalised, cosine) for a local CLIP
checkpoint (``openai/clip-vit-base-patch32`` in the paper).
"""

from __future__ import annotations

import atexit
import io
import queue
import re
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from agentenvs.core.env import MissingProgram

# Debian's package puts it at /usr/bin/chromium; it is looked up on PATH, so that a PATH without it
# behaves as a machine without it.
CHROMIUM_PROGRAM = "chromium"
CHROMIUM_INSTALL = (
    "install Debian's chromium as root: apt-get install chromium "
    "(the repository's scripts/install_system_packages.sh does it when missing)"
)
VIEWPORT = {"width": 800, "height": 600}
MAX_HEIGHT = 2400
RENDER_TIMEOUT_MS = 10_000
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

    Playwright's sync API binds to the thread that started it and refuses to
    start in a thread already running an event loop, so every browser call of
    the process runs here: renderers work from any caller thread, and the
    caller's own threads stay free for other asyncio or Playwright users.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None] = (
            queue.SimpleQueue()
        )
        self._playwright: Any = None
        self._browsers: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._serve, name="agentenvs-chromium", daemon=True)
        self._thread.start()

    def call(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run ``function(*args)`` on the browser thread; its exception is raised here."""
        future: Future[Any] = Future()
        self._jobs.put((future, function, args))
        return future.result()

    def browser(self, executable: str) -> Any:
        """The process's one Chromium for ``executable``, launched on first use (browser thread only)."""
        if self._playwright is None:
            from playwright.sync_api import sync_playwright

            self._playwright = sync_playwright().start()
        browser = self._browsers.get(executable)
        if browser is None or not browser.is_connected():
            browser = self._browsers[executable] = self._playwright.chromium.launch(
                executable_path=executable, args=list(CHROMIUM_ARGS)
            )
        return browser

    def stop(self) -> None:
        """Close the browsers and Playwright, then end the thread."""
        if self._thread.is_alive():
            self.call(self._close_all)
            self._jobs.put(None)
            self._thread.join(timeout=10)

    def _close_all(self) -> None:
        for browser in self._browsers.values():
            browser.close()
        self._browsers = {}
        if self._playwright is not None:
            self._playwright.stop()
            self._playwright = None

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, function, args = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(function(*args))
                except BaseException as exc:  # noqa: BLE001 (handed to the caller, raised there)
                    future.set_exception(exc)


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


class PageRenderer:
    """Renders HTML to images in the process's shared headless Chromium (see the module docstring).

    Its page is a handle into the browser: a pickled or copied renderer opens its own on first use.
    """

    def __init__(self, executable: str | None = None, max_height: int = MAX_HEIGHT) -> None:
        self.executable = require_chromium(executable)
        self.max_height = max_height
        self._page: Any = None
        self.blocked_requests = 0

    def __getstate__(self) -> dict[str, Any]:
        # Playwright also hangs its wrappers of ``_block`` on the instance: only our own fields travel
        return {
            "executable": self.executable,
            "max_height": self.max_height,
            "_page": None,
            "blocked_requests": self.blocked_requests,
        }

    @property
    def browser(self) -> Any:
        return None if self._page is None else self._page.context.browser

    def _open(self) -> Any:
        context = browser_thread().browser(self.executable).new_context(
            viewport=VIEWPORT, device_scale_factor=1, java_script_enabled=False
        )
        context.route("**/*", self._block)
        self._page = context.new_page()
        return self._page

    def _block(self, route: Any) -> None:
        self.blocked_requests += 1
        route.abort()

    def render_png(self, html: str) -> bytes:
        """The full-page screenshot of ``html`` as PNG (800 px wide, at most ``max_height`` tall)."""
        return browser_thread().call(self._render_png, html)

    def _render_png(self, html: str) -> bytes:
        page = self._page if self._page is not None else self._open()
        page.set_content(html, wait_until="load", timeout=RENDER_TIMEOUT_MS)
        png = page.screenshot(
            full_page=True, type="png", animations="disabled", caret="hide", timeout=RENDER_TIMEOUT_MS
        )
        image = Image.open(io.BytesIO(png))
        if image.height <= self.max_height:
            return png
        out = io.BytesIO()
        image.crop((0, 0, image.width, self.max_height)).save(out, format="PNG")
        return out.getvalue()

    def render(self, html: str) -> Image.Image:
        """The render of ``html`` as an RGB image."""
        return decode_png(self.render_png(html))

    def close(self) -> None:
        """Close this renderer's page and context (the shared browser stays up)."""
        if self._page is not None:
            browser_thread().call(self._page.context.close)
        self._page = None


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

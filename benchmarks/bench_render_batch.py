"""ColBench-Frontend: a batch of answers rendered by the previous single page, beside the renderer's pool.

Renders ``--batch`` built-in answer pages (the test split's references,
each a different page) in Chromium:

- previous: the render the frontend used before the pool (one page driven
  by Playwright, ``set_content`` then ``screenshot(full_page=True,
  animations="disabled", caret="hide")``, PNG cut at the maximum height by
  decoding and encoding again), one answer after another, in a Chromium of
  its own launched by Playwright. Every ratio is to it, in the same pass.
- a renderer with a single page (``pages=1``), one answer after another;
- the same batch at once with ``render_many`` on a pool of ``--pages``
  pages (default 4, 8 and 16);
- ``--batch`` threads at once, each calling ``render_png`` on one shared
  renderer.

Each way runs once untimed first (it opens its pages), and the run waits
until Chromium is quiet again; then ``--repeats`` passes time every way,
each pass starting from the next way in turn. Every render is compared with the previous render of the
same answer, pixel for pixel. The table gives the median seconds per batch,
answers/s, the ratio to the previous single page in the same pass, and the
CPU time per answer of Chromium's processes (and of Playwright's driver,
for the previous way) and of this Python process, and the ceiling that CPU sets: the answers/s were
all the machine's cores spent on it. Wall time on a shared 2-core machine,
whose load average is recorded before and after (compare ratios within the
run, not seconds across runs).

    python benchmarks/bench_render_batch.py [--batch 64] [--pages 4 8 16] [--repeats 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image
from rich.progress import track

from agentenvs.core.devtools import browser_thread, require_chromium
from agentenvs.envs.colbench.frontend.render import (
    CHROMIUM_ARGS,
    MAX_HEIGHT,
    RENDER_TIMEOUT_MS,
    VIEWPORT,
    PageRenderer,
    decode_png,
)
from agentenvs.envs.colbench.frontend.tasks import generate_page

PREVIOUS = "previous: one page, in turn"


class PreviousRenderer:
    """The single-page render the frontend used before the pool (Playwright's, in a Chromium of its own)."""

    def __init__(self) -> None:
        self.executable = require_chromium()
        self._playwright: Any = None
        self._browser: Any = None
        self._page: Any = None

    async def _render_png(self, html: str) -> bytes:
        if self._page is None:
            from playwright.async_api import async_playwright

            self._playwright = await async_playwright().start()
            self._browser = await self._playwright.chromium.launch(
                executable_path=self.executable, args=list(CHROMIUM_ARGS)
            )
            context = await self._browser.new_context(
                viewport=VIEWPORT, device_scale_factor=1, java_script_enabled=False
            )
            await context.route("**/*", lambda route: route.abort())
            self._page = await context.new_page()
        await self._page.set_content(html, wait_until="load", timeout=RENDER_TIMEOUT_MS)
        png = await self._page.screenshot(
            full_page=True, type="png", animations="disabled", caret="hide", timeout=RENDER_TIMEOUT_MS
        )
        image = Image.open(io.BytesIO(png))
        if image.height <= MAX_HEIGHT:
            return png
        out = io.BytesIO()
        image.crop((0, 0, image.width, MAX_HEIGHT)).save(out, format="PNG")
        return out.getvalue()

    def render_png(self, html: str) -> bytes:
        return browser_thread().call(self._render_png, html)

    def close(self) -> None:
        if self._page is not None:
            browser_thread().call(self._close)
            self._page = None

    async def _close(self) -> None:
        await self._browser.close()
        await self._playwright.stop()


def threaded_renders(renderer: PageRenderer, htmls: list[str]) -> list[bytes]:
    out: list[bytes] = [b""] * len(htmls)
    failures: list[BaseException] = []

    def render(i: int) -> None:
        try:
            out[i] = renderer.render_png(htmls[i])
        except BaseException as exc:  # noqa: BLE001 (raised below, in the caller)
            failures.append(exc)

    threads = [threading.Thread(target=render, args=(i,)) for i in range(len(htmls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return out


PROCESS_KINDS = ("browser", "GPU process", "renderers", "Playwright driver", "other")


def kind_of(command_line: list[str]) -> str:
    """Which of :data:`PROCESS_KINDS` a descendant is, by its command line (Chromium's ``--type=``)."""
    if "--type=renderer" in command_line:
        return "renderers"
    if "--type=gpu-process" in command_line:
        return "GPU process"
    if command_line and command_line[0].endswith("/node"):
        return "Playwright driver"
    if (
        command_line
        and "chrom" in command_line[0]
        and not any(arg.startswith("--type=") for arg in command_line)
    ):
        return "browser"
    return "other"


def browser_cpu_seconds() -> dict[str, float]:
    """CPU seconds (user + system) used so far by this process's descendants, per :data:`PROCESS_KINDS`:
    Chromium's processes (and Playwright's driver), read from Linux's /proc (fields 14 and 15 of each
    ``stat``, in clock ticks; Chromium rewrites its helpers' ``cmdline`` into one string of words)."""
    parent_of: dict[int, int] = {}
    ticks_of: dict[int, int] = {}
    command_of: dict[int, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # the fields after the command name, which may hold spaces
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # a process that ended meanwhile
            continue
        pid = int(stat.parent.name)
        parent_of[pid], ticks_of[pid] = int(fields[1]), int(fields[11]) + int(fields[12])
        command_of[pid] = command.split()
    descendants, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parent_of.items() if parent in frontier} - descendants
        descendants |= frontier
    seconds = dict.fromkeys(PROCESS_KINDS, 0.0)
    for pid in descendants:
        seconds[kind_of(command_of[pid])] += ticks_of[pid] / os.sysconf("SC_CLK_TCK")
    return seconds


def wait_until_quiet(window: float = 0.5, share: float = 0.05, limit: float = 20.0) -> None:
    """Sleep until Chromium's processes use under ``share`` of a core over ``window`` seconds (at most
    ``limit`` seconds): newly opened pages keep their renderers busy for seconds after their first
    renders, which would otherwise be charged to whichever way is timed first."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = sum(browser_cpu_seconds().values())
        time.sleep(window)
        if sum(browser_cpu_seconds().values()) - before < share * window:
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--pages", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", help="also write the printed lines to this file")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    htmls = [generate_page("test", i).reference for i in range(args.batch)]
    previous, single = PreviousRenderer(), PageRenderer(pages=1)
    # launches the browser; the pixels to match
    expected = [_pixels(previous.render_png(html)) for html in htmls]
    pools = {pages: PageRenderer(pages=pages) for pages in args.pages}
    ways: dict[str, Callable[[], list[bytes]]] = {
        PREVIOUS: lambda: [previous.render_png(h) for h in htmls],
        "one page (pages=1), in turn": lambda: [single.render_png(h) for h in htmls],
    }
    for pages, renderer in pools.items():
        ways[f"pool of {pages}, render_many"] = lambda renderer=renderer: renderer.render_many_png(htmls)
    largest = pools[max(pools)]
    ways[f"{args.batch} threads, render (pool of {max(pools)})"] = lambda: threaded_renders(largest, htmls)
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    ratios: dict[str, list[float]] = {name: [] for name in ways}
    browser_cpu = {name: dict.fromkeys(PROCESS_KINDS, 0.0) for name in ways}
    python_cpu = dict.fromkeys(ways, 0.0)
    mismatches = dict.fromkeys(ways, 0)
    for way in ways.values():  # opens every pool's pages, outside the clock
        way()
    wait_until_quiet()
    names = list(ways)
    for repeat in track(range(args.repeats), description="passes"):
        spent = {}
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:  # each pass starts elsewhere
            way = ways[name]
            browser_before, python_before = browser_cpu_seconds(), time.process_time()
            started = time.perf_counter()
            pngs = way()
            spent[name] = time.perf_counter() - started
            for kind, used in browser_cpu_seconds().items():
                browser_cpu[name][kind] += used - browser_before[kind]
            python_cpu[name] += time.process_time() - python_before
            mismatches[name] += sum(
                _pixels(png) != pixels for png, pixels in zip(pngs, expected, strict=False)
            )
        for name in ways:
            seconds[name].append(spent[name])
            ratios[name].append(spent[PREVIOUS] / spent[name])
    renders = args.batch * args.repeats
    cores = os.cpu_count() or 1
    lines = [
        f"ColBench-Frontend renders: a batch of {args.batch} different answer pages, "
        f"median of {args.repeats} alternating passes, one run on a shared {cores}-core machine "
        f"(load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after)",
        f"{'how':<34} {'s/batch':>8} {'answers/s':>10} {'× previous':>10} {'Chromium CPU ms/answer':>23} "
        f"{'Python CPU ms/answer':>21} {'CPU-bound ceiling/s':>20} {'pixels differing':>17}",
    ]
    for name in ways:
        median = statistics.median(seconds[name])
        chromium = sum(browser_cpu[name].values())
        cpu_per_answer = (chromium + python_cpu[name]) / renders
        lines.append(
            f"{name:<34} {median:>8.2f} {args.batch / median:>10.1f} "
            f"{statistics.median(ratios[name]):>10.2f} "
            f"{1000 * chromium / renders:>23.1f} {1000 * python_cpu[name] / renders:>21.1f} "
            f"{cores / cpu_per_answer:>20.1f} {mismatches[name]:>17}"
        )
    lines.append(
        f"CPU-bound ceiling: answers/s were every one of the {cores} cores spent on this way's CPU per "
        "answer (Chromium's and Python's) and nothing else"
    )
    lines.append("")
    lines.append("Where each way's CPU went, ms per answer")
    lines.append(f"{'how':<34} " + " ".join(f"{kind:>17}" for kind in (*PROCESS_KINDS, "this Python")))
    for name in ways:
        used = [*browser_cpu[name].values(), python_cpu[name]]
        lines.append(f"{name:<34} " + " ".join(f"{1000 * each / renders:>17.1f}" for each in used))
    for line in lines:
        print(line)
    previous.close()
    for renderer in (single, *pools.values()):
        renderer.close()
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")


def _pixels(png: bytes) -> bytes:
    return decode_png(png).tobytes()


if __name__ == "__main__":
    main()

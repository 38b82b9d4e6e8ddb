"""ColBench-Frontend: a batch of answers rendered on one page in turn, beside the renderer's pool of pages.

Renders ``--batch`` built-in answer pages (the test split's references,
each a different page) in Chromium: first one page at a time, as a
renderer with a single page renders (``pages=1``); then the same batch at
once with ``render_many`` on a pool of ``--pages`` pages (default 4, 8 and
16; each way runs once untimed first, which opens its pages); then from ``--batch`` threads at once, each calling ``render`` on one
shared renderer. Every render is compared with the single-page render of
the same answer, pixel for pixel. Passes alternate ``--repeats`` times in one
run; the table gives the median seconds per batch, answers/s and the ratio to
the single page in the same pass. Wall time on this machine (a shared
2-core machine: compare ratios within the run, not seconds across runs).

    python benchmarks/bench_render_batch.py [--batch 64] [--pages 4 8 16] [--repeats 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from collections.abc import Callable

from agentenvs.colbench.frontend.render import PageRenderer
from agentenvs.colbench.frontend.tasks import generate_page


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--pages", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", help="also write the printed lines to this file")
    args = parser.parse_args()
    htmls = [generate_page("test", i).reference for i in range(args.batch)]
    single = PageRenderer(pages=1)
    expected = [single.render_png(html) for html in htmls]  # launches the browser; the pixels to match
    pools = {pages: PageRenderer(pages=pages) for pages in args.pages}
    ways: dict[str, Callable[[], list[bytes]]] = {"one page, in turn": lambda: [single.render_png(h) for h in htmls]}
    for pages, renderer in pools.items():
        ways[f"pool of {pages}, render_many"] = lambda renderer=renderer: renderer.render_many_png(htmls)
    largest = pools[max(pools)]
    ways[f"{args.batch} threads, render (pool of {max(pools)})"] = lambda: threaded_renders(largest, htmls)
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    ratios: dict[str, list[float]] = {name: [] for name in ways}
    mismatches = dict.fromkeys(ways, 0)
    for way in ways.values():  # opens every pool's pages, outside the clock
        way()
    for _ in range(args.repeats):
        spent = {}
        for name, way in ways.items():
            started = time.perf_counter()
            pngs = way()
            spent[name] = time.perf_counter() - started
            mismatches[name] += sum(_pixels(a) != _pixels(b) for a, b in zip(pngs, expected))
        for name in ways:
            seconds[name].append(spent[name])
            ratios[name].append(spent["one page, in turn"] / spent[name])
    lines = [
        f"ColBench-Frontend renders: a batch of {args.batch} different answer pages, median of {args.repeats} "
        f"alternating passes, one run on a shared 2-core machine (load average {os.getloadavg()[0]:.1f})",
        f"{'how':<34} {'s/batch':>8} {'answers/s':>10} {'× one page':>10} {'pixels differing':>17}",
    ]
    for name in ways:
        median = statistics.median(seconds[name])
        lines.append(
            f"{name:<34} {median:>8.2f} {args.batch / median:>10.1f} {statistics.median(ratios[name]):>10.2f} "
            f"{mismatches[name]:>17}"
        )
    for line in lines:
        print(line)
    for renderer in (single, *pools.values()):
        renderer.close()
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")


def _pixels(png: bytes) -> bytes:
    from agentenvs.colbench.frontend.render import decode_png

    return decode_png(png).tobytes()


if __name__ == "__main__":
    main()

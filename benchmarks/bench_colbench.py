"""ColBench: the cost of a sandboxed evaluation, of a question turn, and of a whole episode.

- evaluation: one answer (the reference) on one task's 10 hidden calls,
  through :class:`~agentenvs.envs.colbench.backend.sandbox.Sandbox` (the budget is
  150 ms) in both modes: the fork server (a fresh jail forked from a
  pre-started template per evaluation, the default) and a fresh interpreter
  per evaluation (``fork_server=False``, as the sandbox ran before it; 36 ms
  median then), beside ColBench's own way in the same run: ``exec`` of the
  answer and ``eval`` of each call inside this process, with no isolation;
- question turn: ``env.step`` of a question answered by the rule collaborator
  (protocol, fact matching, potential, state key, info);
- expert episode: reset, every fact's question, the answer and its scoring;
- frontend render: one built-in page in the shared Chromium, a second render
  of the same page (the budget is 0.2 s), where Playwright and Debian's
  ``chromium`` are installed;
- jail start-up, the measurement behind :mod:`agentenvs.envs.colbench.backend.jail`'s
  choice of its own namespace code over bubblewrap: a jail forked from the
  template until it is ready, against an interpreter start
  (``python -I -S -c pass``) bare and under Debian's ``bwrap`` (namespaces,
  read-only binds, ``--disable-userns``), where bubblewrap is installed.

Every figure is wall time on this machine in this run (a loaded machine
inflates the sandbox's process start-up most).

    python benchmarks/bench_colbench.py [--evaluations 30] [--episodes 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

from rich.console import Console
from rich.table import Table

from agentenvs.envs.colbench.backend.env import ColBenchEnv
from agentenvs.envs.colbench.backend.sandbox import Sandbox
from agentenvs.envs.colbench.backend.tasks import GeneratedTasks
from agentenvs.envs.colbench.expert import ColBenchExpert


def colbench_in_process(code: str, calls: tuple[str, ...]) -> list:
    """ColBench's scorer: exec the code and eval each call in this process (no sandbox)."""
    outputs = []
    for call in calls:
        namespace: dict = {}
        exec(code, namespace)  # noqa: S102 (ColBench's way, timed for comparison)
        outputs.append(eval(call, namespace))
    return outputs


def render_timings(repeats: int) -> list[float]:
    """Seconds per render of one built-in page (empty when no browser is installed here)."""
    if shutil.which("chromium") is None:
        return []
    from agentenvs.envs.colbench.frontend.render import PageRenderer
    from agentenvs.envs.colbench.frontend.tasks import generate_page

    page = generate_page("test", 0).reference
    renderer = PageRenderer()
    renderer.render(page)  # launches the browser
    spent = timings(lambda: renderer.render(page), repeats)
    renderer.close()
    return spent


def startup_timings(repeats: int) -> dict[str, list[float]]:
    """Seconds to a ready jail from the template, and to a bare or bubblewrapped interpreter start."""
    sandbox = Sandbox(prewarm=False)

    def fork_until_ready() -> None:
        jail = sandbox._spawn()
        assert jail.ready()
        jail.kill()

    python = getattr(sys, "_base_executable", sys.executable)
    start = [python, "-I", "-S", "-c", "pass"]
    found = {"jail forked from the template, until ready": timings(fork_until_ready, repeats)}
    sandbox.close()
    found["interpreter start, bare"] = timings(lambda: subprocess.run(start, check=True), repeats)
    if shutil.which("bwrap"):
        prefix = os.path.realpath(sys.base_prefix)
        binds = [arg for top in ("/usr", prefix) for arg in ("--ro-bind", top, top)]
        links = [arg for top in ("bin", "lib", "lib64") for arg in ("--symlink", f"usr/{top}", f"/{top}")]
        bwrap = ["bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent"]
        bwrap += [*binds, *links, "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev", "--"]
        found["interpreter start under bubblewrap"] = timings(
            lambda: subprocess.run(bwrap + start, check=True), repeats
        )
    return found


def timings(run, repeats: int) -> list[float]:
    spent = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        spent.append(time.perf_counter() - started)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=30)
    parser.add_argument("--episodes", type=int, default=20)
    args = parser.parse_args()

    load = os.getloadavg()[0]
    tasks = GeneratedTasks()
    task = tasks.load(tasks.task_id("test", 0))
    sandbox, fresh = Sandbox(), Sandbox(fork_server=False)
    for each in (sandbox, fresh):
        run = each.run(task.reference, task.calls)
        assert [r.value for r in run.results] == [r.value for r in task.expected]
    jailed = timings(lambda: sandbox.run(task.reference, task.calls), args.evaluations)
    jailed_fresh = timings(lambda: fresh.run(task.reference, task.calls), args.evaluations)
    in_process = timings(lambda: colbench_in_process(task.reference, task.calls), args.evaluations)

    env = ColBenchEnv(split="test")
    env.reset(seed=0)
    question = env.task.facts[0].question
    turns = timings(lambda: env.step(question) if env.turn < env.max_turns - 1 else env.reset(seed=0), 300)

    episodes, scores = [], []
    for seed in range(args.episodes):
        started = time.perf_counter()
        obs, info = env.reset(seed=seed)
        expert, done = ColBenchExpert(env), False
        while not done:
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            done = terminated or truncated
        episodes.append(time.perf_counter() - started)
        scores.append(info["score"])

    renders = render_timings(20)
    startups = startup_timings(args.evaluations)

    table = Table(title=f"ColBench (isolation: {run.isolation}; 10 hidden calls per task)")
    for column in ("what", "median", "p90", "rate"):
        table.add_column(column, justify="right" if column != "what" else "left")

    def row(name: str, values: list[float], unit: str) -> None:
        p90 = statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]
        median = statistics.median(values)
        table.add_row(name, f"{median * 1000:.1f} ms", f"{p90 * 1000:.1f} ms", f"{1 / median:.1f} {unit}/s")

    row("evaluation, sandboxed, fork server (budget 150 ms)", jailed, "evaluations")
    row("evaluation, sandboxed, fresh interpreter each", jailed_fresh, "evaluations")
    row("evaluation, ColBench in-process (no isolation)", in_process, "evaluations")
    row("question turn, rule collaborator", turns, "turns")
    row("expert episode (questions + sandboxed answer)", episodes, "episodes")
    if renders:
        row("frontend page render, Chromium (budget 200 ms)", renders, "renders")
    for name, spent in startups.items():
        row(name, spent, "starts")
    Console().print(table)
    print(f"expert mean score {statistics.mean(scores):.3f} over {len(scores)} test tasks")
    print(
        f"load average {load:.1f} at the start on {os.cpu_count()} cores (other work on the machine "
        "inflates every row)"
    )


if __name__ == "__main__":
    main()

"""The benchmarks page's batched-rollout figures (env share, Search beside GEM, batch renders) quote the
recorded output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
FIGURE = re.compile(r"\d+\.\d+")
PAGE = ROOT / "docs" / "reference" / "benchmarks.md"
SECTION = "## The env's share of a batched rollout"


def page_section() -> str:
    text = PAGE.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start)
    return text[start : end if end >= 0 else len(text)]


def paragraph(section: str, opening: str) -> str:
    start = section.index(opening)
    end = section.find("\n\n", start)
    return section[start : end if end >= 0 else len(section)]


def test_the_share_table_has_one_row_per_recorded_env_with_its_figures():
    recorded = {
        line.split()[0]: line
        for line in (RESULTS / "bench_rollout_share.txt").read_text().splitlines()
        if line.startswith("agentenvs/")
    }
    rows = [line for line in page_section().splitlines() if line.startswith("| agentenvs/")]
    quoted = {row.split("|")[1].strip(): row for row in rows}
    assert len(rows) == len(quoted) and set(quoted) == set(recorded)
    for env_id, row in quoted.items():
        figures = FIGURE.findall(row)
        assert len(figures) >= 3, row
        assert set(figures) <= set(FIGURE.findall(recorded[env_id])), f"{env_id}: {row} vs {recorded[env_id]}"


def test_colbench_like_for_like_rows_are_the_recorded_processes_at_one_worker():
    # the vector worker, the jail template (its own CPU, not the jails it reaps) and the coordinator
    processes = ("vector worker", "sandbox jail template", "coordinator (this process, + what it reaped)")
    for result in ("bench_rollout_share.txt", "bench_rollout_share_cold_colbench.txt"):
        lines = (RESULTS / result).read_text().splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("agentenvs/ColBench-v0 "))
        cells = []
        for run in ("baseline 1w", "HEAD 1w"):
            (line,) = [line for line in lines[start + 1 : start + 6] if line.strip().startswith(run)]
            figures = [re.search(re.escape(name) + r" (\d+\.\d+)", line) for name in processes]
            cells.append(", ".join(figure[1] for figure in figures if figure is not None))
        row = f"(`{result}`) | {cells[0]} | {cells[1]} |"
        assert row in page_section(), row


def test_the_decode_speeds_and_their_source_are_the_recorded_ones():
    recorded = (RESULTS / "bench_rollout_share.txt").read_text()
    speeds = re.findall(r"([\d.]+B): (\d+) tokens/s", page_section())
    assert {model for model, _ in speeds} == {"1.5B", "7B"}
    for model, rate in speeds:
        assert f"decode {model}: {rate} tokens/s per sequence (vLLM blog 2024-09-05" in recorded


def test_search_beside_gem_and_batch_render_figures_are_recorded():
    section = page_section()
    for opening, result in (("**Search QA beside GEM**", "bench_search.txt"),
                            ("**Batch renders**", "bench_render_batch.txt")):  # fmt: skip
        quoted = set(FIGURE.findall(paragraph(section, opening)))
        recorded = set(FIGURE.findall((RESULTS / result).read_text()))
        assert len(quoted) >= 3, opening
        assert quoted <= recorded, f"{opening} quotes {sorted(quoted - recorded)}, not in {result}"


def test_the_search_ratio_ranges_quoted_are_the_lowest_and_highest_recorded():
    rows = [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in (RESULTS / "bench_search.txt").read_text().splitlines()
        if line.startswith("│")
    ]
    versus_gem = [row for row in rows if len(row) == 12]  # the first table's rows, one per set
    assert len(versus_gem) == 7
    medians = sorted(float(row[6]) for row in versus_gem)  # by the process's CPU, lines kept
    cold = sorted(float(row[7]) for row in versus_gem)  # by the process's CPU, lines cold
    text = " ".join(paragraph(page_section(), "**Search QA beside GEM**").split())
    assert f"{medians[0]:.2f}–{medians[-1]:.2f}× GEM's turns/s" in text
    assert f"the ratio is {cold[0]:.2f}–{cold[-1]:.2f}" in text


def test_every_figure_of_the_section_is_recorded():
    recorded = set()
    for result in ("bench_rollout_share.txt", "bench_rollout_share_cold_colbench.txt", "bench_search.txt",
                   "bench_render_batch.txt"):  # fmt: skip
        recorded |= set(FIGURE.findall((RESULTS / result).read_text()))
    quoted = set(FIGURE.findall(page_section()))
    assert quoted <= recorded, f"the page's section quotes {sorted(quoted - recorded)}, recorded nowhere"


@pytest.mark.parametrize(
    ("opening", "result"),
    [
        ("**Replay**", "bench_leaderboard.json"),
        ("**Replay of random play**", "bench_leaderboard_random.json"),
    ],
)
def test_the_replay_figures_are_the_recorded_episodes_per_second(opening: str, result: str) -> None:
    import json

    rows = json.loads((RESULTS / result).read_text())
    recorded = {
        row["env"].removeprefix("agentenvs/").removesuffix("-v0"): round(row["episodes_per_s"])
        for row in rows
    }
    quoted = dict(
        (name, int(rate.replace(",", "")))
        for rate, name in re.findall(r"(\d[\d,]*) on ([A-Z][A-Za-z-]+)", paragraph(page_section(), opening))
    )
    assert len(quoted) >= 4 and quoted.items() <= recorded.items(), (quoted, recorded)

"""The benchmarks page's Sokoban, grouped-rollout, TextCraft, BabyAI and ALFWorld rows quote the
benchmarks' recorded outputs, with the load average each was measured under."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "reference" / "benchmarks.md"
# a number, with or without thousands separators: 108,176 / 5.7 / 6688 (a range's ends and a percentage's too)
NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
LOAD = re.compile(r"(\d+)-core machine \(load average (\d+\.\d) before, (\d+\.\d) after\)")
ROWS = {
    "| Sokoban 6×6": "bench_sokoban.txt",
    "| Grouped rollouts, ": "bench_vector.txt",
    "| TextCraft (": "bench_textcraft.txt",
    "| BabyAI, ": "bench_babyai.txt",
    "| ALFWorld (": "bench_alfworld.txt",
}


def numbers(text: str) -> set[str]:
    """The numbers in ``text`` without thousands separators (the page writes 6,688 for a printed 6688)."""
    return {number.replace(",", "") for number in NUMBER.findall(text)}


def page_row(opening: str) -> str:
    (row,) = [line for line in PAGE.read_text().splitlines() if line.startswith(opening)]
    return row


@pytest.mark.parametrize(("opening", "result"), ROWS.items(), ids=ROWS.values())
def test_every_number_of_the_row_is_in_its_recorded_output(opening: str, result: str) -> None:
    row = page_row(opening)
    assert f"`benchmarks/results/{result}`" in row
    measured = row.rsplit("|", 2)[0]  # the script's cell names no figure
    quoted = numbers(measured)
    recorded = numbers((RESULTS / result).read_text())
    assert len({figure for figure in quoted if "." in figure or len(figure) >= 4}) >= 4, row
    assert quoted <= recorded, f"the page quotes {sorted(quoted - recorded)}, not in {result}"


@pytest.mark.parametrize(("opening", "result"), ROWS.items(), ids=ROWS.values())
def test_the_row_states_the_load_its_output_records(opening: str, result: str) -> None:
    (cores, before, after), *_ = LOAD.findall((RESULTS / result).read_text())
    assert f"(load average {before} → {after} on {cores} cores; " in page_row(opening)


def test_the_babyai_ranges_are_the_lowest_and_highest_of_the_default_mix_levels() -> None:
    from agentenvs.envs.babyai.tasks import DEFAULT_MIX

    cells = {
        row[0]: row[1:]
        for row in (
            [cell.strip() for cell in line.split("│")[1:-1]]
            for line in (RESULTS / "bench_babyai.txt").read_text().splitlines()
            if line.startswith("│")
        )
    }
    mix = [cells[level] for level in DEFAULT_MIX.values()]
    overhead = sorted(int(row[2].strip("+%")) for row in mix)
    raw = sorted((int(row[0].replace(",", "")), row[0]) for row in cells.values())
    ours = sorted((int(row[1].replace(",", "")), row[1]) for row in cells.values())
    text = page_row("| BabyAI, ")
    mix_overhead = f"+{overhead[0]}–{overhead[-1]}% time per turn over raw minigrid on the five default-mix"
    assert mix_overhead in text
    assert f"+{cells['BossLevel'][2].strip('+')} on BossLevel" in text
    assert f"{ours[0][1]}–{ours[-1][1]} turns/s" in text and f"{raw[0][1]}–{raw[-1][1]} steps/s" in text


@pytest.mark.parametrize("result", ROWS.values())
def test_the_recorded_outputs_section_shows_the_file(result: str) -> None:
    section = PAGE.read_text().split("\n## Recorded outputs\n")[1]
    assert f"```{{literalinclude}} ../../benchmarks/results/{result}\n" in section

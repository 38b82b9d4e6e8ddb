"""The integrations page's OpenEnv load-test figures are the ones benchmarks/bench_openenv.py recorded."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "bench_openenv.txt"
QUOTED = re.compile(
    r"(agentenvs/[\w-]+): (\d+) steps, (\d+) errors, a step p50 ([\d.]+) ms / p99 ([\d.]+) ms\s+"
    r"\(one session alone: p50 ([\d.]+) ms; in-process `gym.make`: p50 ([\d.]+) ms\)"
)


def load_paragraph() -> str:
    text = (ROOT / "docs" / "reference" / "integrations.md").read_text(encoding="utf-8")
    start = text.index("**Load test** (`benchmarks/bench_openenv.py`")
    end = text.find("\n\n", start)
    return " ".join(text[start : end if end >= 0 else len(text)].split())


def recorded_rows() -> dict[str, dict[str, list[str]]]:
    """{env id: {path: cells}} of every table in the results file."""
    tables: dict[str, dict[str, list[str]]] = {}
    env_id = None
    for line in RESULTS.read_text().splitlines():
        if line.startswith("agentenvs/"):
            env_id = line.split(":")[0]
            tables[env_id] = {}
        elif line.startswith("| ") and not line.startswith("| path") and env_id is not None:
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            tables[env_id][cells[0]] = cells
    return tables


def test_the_quoted_load_test_figures_are_the_recorded_ones():
    paragraph = load_paragraph()
    quoted = QUOTED.findall(paragraph)
    tables = recorded_rows()
    assert {row[0] for row in quoted} == set(tables) and len(quoted) >= 2
    for env_id, steps, errors, p50, p99, alone_p50, in_process_p50 in quoted:
        loaded = tables[env_id]["agentenvs serve, 64 sessions"]
        assert loaded[1] == "64" and loaded[3:7] == [steps, errors, p50, p99], (env_id, loaded)
        assert errors == "0"
        assert tables[env_id]["agentenvs serve, 1 session"][5] == alone_p50
        assert tables[env_id]["gym.make in-process"][5] == in_process_p50
    load = re.search(r"load average ([\d.]+) before", RESULTS.read_text()).group(1)
    assert f"load average of {load}" in paragraph

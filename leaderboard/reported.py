"""Numbers the papers report, shown on the board as reported, never replayed and never ranked.

Each row is quoted from its paper with the setting it was measured in; the
board cannot re-check them (no bundles exist), so they sit in a table of
their own below the ranked, replayed rows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReportedResult:
    """One number a paper reports: ``method`` on ``env`` (a family of the board) with a ``model_size`` policy."""

    method: str
    model_size: str
    family: str
    env: str
    metric: str
    value: str
    source: str


GIGPO = "Feng et al., NeurIPS 2025 (GiGPO); mean of 3 seeds"
MT_GRPO = "Wei/Zeng et al. 2025 (MT-GRPO), Qwen2.5-7B"
SWEET_RL = "Zhou et al. 2025 (SWEET-RL), full method"

REPORTED: tuple[ReportedResult, ...] = (
    ReportedResult("GiGPO", "1.5B", "ALFWorld", "ALFWorld", "success %", "86.1–86.7", GIGPO),
    ReportedResult("GRPO", "1.5B", "ALFWorld", "ALFWorld", "success %", "72.8", GIGPO),
    ReportedResult("GiGPO", "7B", "ALFWorld", "ALFWorld", "success %", "90.2–90.8", GIGPO),
    ReportedResult("GRPO", "7B", "ALFWorld", "ALFWorld", "success %", "77.6", GIGPO),
    ReportedResult("GiGPO", "1.5B", "WebShop", "WebShop", "score / success %", "83.1–83.5 / 65.0–67.4", GIGPO),
    ReportedResult("GRPO", "1.5B", "WebShop", "WebShop", "score / success %", "75.8 / 56.8", GIGPO),
    ReportedResult("GiGPO", "7B", "WebShop", "WebShop", "score / success %", "84.4–86.2 / 72.8–75.2", GIGPO),
    ReportedResult("GRPO", "7B", "WebShop", "WebShop", "score / success %", "79.3 / 66.1", GIGPO),
    ReportedResult("MT-GRPO", "7B", "Search", "TriviaQA, 2 turns", "exact match", "0.5010", MT_GRPO),
    ReportedResult("GRPO-MR", "7B", "Search", "TriviaQA, 2 turns", "exact match", "0.3346", MT_GRPO),
    ReportedResult("GRPO-OR", "7B", "Search", "TriviaQA, 2 turns", "exact match", "0", MT_GRPO),
    ReportedResult("SWEET-RL", "", "ColBench", "ColBench backend", "tests passed / success %", "56.8 / 40.4", SWEET_RL),
)

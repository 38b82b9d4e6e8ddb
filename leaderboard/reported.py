"""Numbers the papers report, shown on the board as reported, never replayed and never ranked.

Each row is quoted from its paper with the setting it was measured in; the
board cannot re-check them (no bundles exist), so they sit in a table of
their own below the ranked, replayed rows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReportedResult:
    """One number a paper reports: ``method`` on ``env`` (a family of the board) with a ``model_size``
    policy."""

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

# GiGPO's tables: per env, metric and policy size, the GRPO baseline then GiGPO (a range over its variants)
GIGPO_TABLES = {
    ("ALFWorld", "success %"): {"1.5B": ("72.8", "86.1–86.7"), "7B": ("77.6", "90.2–90.8")},
    ("WebShop", "score / success %"): {
        "1.5B": ("75.8 / 56.8", "83.1–83.5 / 65.0–67.4"),
        "7B": ("79.3 / 66.1", "84.4–86.2 / 72.8–75.2"),
    },
}
MT_GRPO_TRIVIAQA = {"MT-GRPO": "0.5010", "GRPO-MR": "0.3346", "GRPO-OR": "0"}

REPORTED: tuple[ReportedResult, ...] = (
    *(
        ReportedResult(method, size, env, env, metric, value, GIGPO)
        for (env, metric), by_size in GIGPO_TABLES.items()
        for size, values in by_size.items()
        for method, value in zip(("GiGPO", "GRPO"), reversed(values), strict=False)
    ),
    *(
        ReportedResult(method, "7B", "Search", "TriviaQA, 2 turns", "exact match", value, MT_GRPO)
        for method, value in MT_GRPO_TRIVIAQA.items()
    ),
    ReportedResult(
        "SWEET-RL", "", "ColBench", "ColBench backend", "tests passed / success %", "56.8 / 40.4", SWEET_RL
    ),
)

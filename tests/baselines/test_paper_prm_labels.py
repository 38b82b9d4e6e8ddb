"""AgentPRM's TD against Monte Carlo labels (baselines/experiments/prm_labels.py): the tabular PRM, the
budget accounting and the verdict by hand, the labels on real episodes, the committed results file
against its curves, and seed 0 rerun bit for bit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from baselines.experiments.common import RESULTS_DIR
from baselines.experiments.prm_labels import (
    CONFIG,
    RESULTS_NAME,
    TabularPRM,
    budget_to_reach,
    docs_row,
    errors_at_budgets,
    key_of,
    label_error,
    make_setting,
    mc_units,
    outcome_rewards,
    summarise,
    td_units,
    verdict,
)
from baselines.trainers.config import load_config

from fixtures.paper_tables import committed_results, docs_row_cells, json_roundtrip

ROOT = Path(__file__).resolve().parents[2]


def test_tabular_prm_is_the_mean_of_each_keys_labels_and_zero_when_unseen():
    table = TabularPRM()
    table.add(("s", "up"), 1.0)
    table.add(("s", "up"), 0.0)
    table.add(("s", "up"), 0.5)
    table.add(("t", "left"), 0.25)
    assert table.predict(("s", "up")) == 0.5  # (1 + 0 + 0.5) / 3
    assert table.predict(("s", "down")) == 0.0
    assert table.score(["s", "t", "u"], ["up", "left", "up"]).tolist() == [0.5, 0.25, 0.0]
    # truths 0.5, 0.75 and 0.25 for an unseen key: errors 0, 0.5, 0.25 → 0.25; 2 of 3 keys held
    error, coverage = label_error(table, {("s", "up"): 0.5, ("t", "left"): 0.75, ("u", "up"): 0.25})
    assert error == pytest.approx(0.25) and coverage == pytest.approx(2 / 3)


def test_outcome_rewards_put_the_success_on_the_last_turn():
    assert outcome_rewards(True, 3).tolist() == [0.0, 0.0, 1.0]
    assert outcome_rewards(False, 2).tolist() == [0.0, 0.0]
    assert outcome_rewards(True, 0).tolist() == []


def test_errors_at_budgets_evaluates_the_table_left_by_the_units_that_fit():
    """Units of cost 3, 4, 5, 1 (each adds one key), budgets 5, 7, 12.

    3 fits in 5 → applied (spent 3); 3 + 4 = 7 > 5 → budget 5 sees 1 key, then applied (7);
    7 + 5 = 12 > 7 → budget 7 sees 2 keys, then applied (12); 12 + 1 > 12 → budget 12 sees 3 keys,
    and nothing more is applied: spent 12.
    """
    applied = []

    def units():
        for number, cost in enumerate([3, 4, 5, 1, 100]):

            def apply(table: TabularPRM, number: int = number) -> None:
                applied.append(number)
                table.add((str(number), ""), 1.0)

            yield cost, apply

    points, spent = errors_at_budgets(units(), [12, 5, 7], lambda table: (float(len(table.counts)), 0.0))
    assert [p[0] for p in points] == [1.0, 2.0, 3.0]
    assert spent == 12 and applied == [0, 1, 2]


def test_budget_to_reach_and_the_prm_labels_verdict_by_hand():
    budgets = [1000, 2000, 4000, 8000]
    assert budget_to_reach([0.04, 0.03, 0.019, 0.01], budgets, 0.02) == 4000
    assert budget_to_reach([0.04, 0.03, 0.025, 0.021], budgets, 0.02) is None

    def summary(td: list[float], mc: list[float]) -> dict:
        return {
            "empty_error": {"mean": 0.04},  # target 0.02
            "td": {"error": [{"mean": e} for e in td]},
            "mc": {"error": [{"mean": e} for e in mc]},
        }

    # TD reaches 0.02 at 1,000, MC at 8,000 = 8 × 1,000: holds
    assert verdict(summary([0.02, 0.01, 0.01, 0.0], [0.04, 0.03, 0.03, 0.02]), budgets)["verdict"] == "holds"
    # MC at 4,000 < 8,000: does not hold
    assert verdict(summary([0.02, 0.01, 0.01, 0.0], [0.04, 0.03, 0.02, 0.0]), budgets)["verdict"] == (
        "does not hold"
    )
    # MC never, grid ends at 8,000 ≥ 8 × 1,000: MC needs more than 8×: holds
    judged = verdict(summary([0.02, 0.01, 0.01, 0.0], [0.04, 0.04, 0.04, 0.03]), budgets)
    assert judged["verdict"] == "holds" and judged["budget_to_target"] == {"td": 1000, "mc": None}
    # TD at 2,000, MC never, grid ends at 8,000 < 16,000: undecided
    assert verdict(summary([0.03, 0.02, 0.01, 0.0], [0.04] * 4), budgets)["verdict"] == "not testable here"
    # TD never: does not hold
    assert verdict(summary([0.04] * 4, [0.04] * 4), budgets)["verdict"] == "does not hold"
    # the pairwise report: TD at 1,000 (0.02) against MC at 8,000 (0.02): not worse
    pairs = verdict(summary([0.02, 0.01, 0.01, 0.0], [0.04, 0.03, 0.03, 0.02]), budgets)["pairs"]
    assert pairs == [{"budget": 1000, "td_error": 0.02, "mc_error_at_8x": 0.02, "td_not_worse": True}]


@pytest.fixture(scope="module")
def setting():
    return make_setting(load_config(CONFIG), 0)


def test_the_key_names_the_state_and_the_turn(setting):
    """The table's key (prompt, reply) is one-to-one with (state_key, turn, reply) on real episodes."""
    seen = {}
    groups = setting.groups()
    for _ in range(4):
        _, episodes = next(groups)
        for episode in episodes:
            for turn_number, turn in enumerate(episode.turns):
                seen.setdefault(key_of(turn), set()).add((turn.state_key, turn_number, turn.reply))
    assert all(len(states) == 1 for states in seen.values())
    named = [next(iter(states)) for states in seen.values()]
    assert len(set(named)) == len(named)


def test_td_labels_from_an_empty_table_are_the_discounted_outcome(setting):
    """With q ≡ 0 (an empty table), the seed form's labels are Q̂_1 = −q_0 + λ^(T−1)·r_T + q_0 and
    Q̂_t = λ^(T−t)·r_T for t > 1 (δ_1 = −q_0, δ_T = r_T, every other δ 0): λ^(T−t)·success for every
    turn, so a key's mean over the first group is the mean of those."""
    _, episodes = next(setting.groups())
    lam = setting.options.lam
    expected: dict = {}
    for episode in episodes:
        turns = len(episode.turns)
        for t, turn in enumerate(episode.turns, start=1):
            expected.setdefault(key_of(turn), []).append(lam ** (turns - t) * float(episode.success))
    assert any(e.success for e in episodes)  # the first group holds a success: the labels are not all 0
    cost, apply = next(td_units(setting))
    table = TabularPRM()
    apply(table)
    assert cost == sum(len(e.turns) for e in episodes)
    assert set(table.counts) == set(expected)
    for key, labels in expected.items():
        assert table.predict(key) == pytest.approx(np.mean(labels))


def test_mc_labels_end_with_the_outcome_and_pay_for_their_continuations(setting):
    """An episode's last label is its success (Q̂_T = r_T); its cost is its turns plus N_mc
    continuations from each of s_1 … s_{T−1}, each at least one step."""
    _, episodes = next(setting.groups())
    episode = episodes[0]
    cost, apply = next(mc_units(setting))
    table = TabularPRM()
    apply(table)
    turns = len(episode.turns)
    assert table.predict(key_of(episode.turns[-1])) == float(episode.success)
    assert cost >= turns + setting.options.mc_rollouts * (turns - 1)
    assert all(0.0 <= table.predict(key_of(turn)) <= 1.0 for turn in episode.turns)


def test_prm_labels_file_summary_and_verdict_follow_from_its_curves():
    results = committed_results(RESULTS_NAME)
    summary = summarise(results["curves"], results["best_of_n"])
    assert json_roundtrip(summary) == results["summary"]
    assert json_roundtrip(verdict(summary, results["settings"]["budgets"])) == results["verdict"]
    assert len(results["curves"]) == 8  # the default --seeds
    for curves in results["curves"].values():
        for name in ("td", "mc"):
            assert len(curves[name]["error"]) == len(results["settings"]["budgets"])
    assert (RESULTS_DIR / f"{RESULTS_NAME}.png").stat().st_size > 0


def test_prm_labels_docs_row_is_one_row_of_six_cells():
    results = committed_results(RESULTS_NAME)
    docs_row_cells(docs_row(results), results["verdict"]["verdict"])


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_prm_labels_seed_0_reruns_bit_for_bit(tmp_path):
    """Seed 0 whole (about 15 CPU s): its curves, Best-of-N and truths equal the file's."""
    results = committed_results(RESULTS_NAME)
    command = [sys.executable, "-m", "baselines.experiments.prm_labels", "--seeds", "0"]
    command += ["--out", str(tmp_path / "runs"), "--results", str(tmp_path)]
    subprocess.run(command, cwd=ROOT, check=True)
    rerun = json.loads((tmp_path / f"{RESULTS_NAME}.json").read_text(encoding="utf-8"))
    assert rerun["settings"] == results["settings"]
    assert rerun["curves"]["0"] == results["curves"]["0"]
    assert rerun["best_of_n"]["0"] == results["best_of_n"]["0"]
    assert rerun["truth_mean"]["0"] == results["truth_mean"]["0"]

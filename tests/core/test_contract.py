"""The env contract of DESIGN.md, checked on every registered env by the public checker.

:func:`agentenvs.core.checker.check_env` owns the contract's rules (its module docstring
states each one); this module runs them on every registered id, one test case per id and
rule (``test_env_keeps_the_contract[agentenvs/Sokoban-v0-snapshot]``), so a failure names
the id, the rule and the evidence. The rules run in three tiers:

- every id: ``spaces``, ``gymnasium`` (Gymnasium's own checker), ``declarations``;
- up to three ids per family (``contract_ids``): the rules that play many episodes
  (info keys and types, keys, task ids, reward = Σ weight · component, determinism across
  processes and hash seeds, 10k fuzzed and hostile responses, score in [0, 1], snapshots);
- every main id: ``pickling``, ``vector`` (Gymnasium's sync and async vector envs),
  ``docs`` (``help()`` shows the env's table).

An id whose extra is not installed skips, naming the extra; an env whose program outside
Python is missing (Chromium) skips through the suite's ``MissingProgram`` hook
(``tests/conftest.py``). What concerns the registry as a whole stays here: every family
registers, the env table documents every main env, and a snapshot restores only into its
own env class.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import gymnasium as gym
import pytest

import agentenvs
from agentenvs.core.checker import RULES, check_env
from agentenvs.core.registration import unavailable_reason

ALL_IDS = agentenvs.ENV_IDS
MAIN_IDS = [entry.env_id for entry in agentenvs.ENV_ENTRIES if entry.variant_of is None]

EVERY_ID_RULES = ("spaces", "gymnasium", "declarations")
MAIN_ID_RULES = ("pickling", "vector", "docs")
HEAVY_RULES = tuple(rule for rule in RULES if rule not in EVERY_ID_RULES + MAIN_ID_RULES)


def contract_ids(per_family: int = 3) -> list[str]:
    """Ids the heavy rules cover: up to ``per_family`` per env family."""
    chosen: dict[str, list[str]] = defaultdict(list)
    for entry in agentenvs.ENV_ENTRIES:
        ids = chosen[entry.family]
        if len(ids) < per_family:
            ids.append(entry.env_id)
    return [env_id for ids in chosen.values() for env_id in ids]


HEAVY_IDS = contract_ids()


def cases() -> list[pytest.param]:
    """(id, rule) for every rule each id's tier runs, in ``RULES`` order per id."""
    tiers = [(EVERY_ID_RULES, set(ALL_IDS)), (HEAVY_RULES, set(HEAVY_IDS)), (MAIN_ID_RULES, set(MAIN_IDS))]
    return [
        pytest.param(env_id, rule, id=f"{env_id}-{rule}")
        for env_id in ALL_IDS
        for rule in RULES
        if any(rule in rules and env_id in ids for rules, ids in tiers)
    ]


def test_every_family_registers_an_env():
    assert ALL_IDS, "no env registered"
    assert len(set(ALL_IDS)) == len(ALL_IDS)
    assert all(env_id.startswith("agentenvs/") and env_id.endswith("-v0") for env_id in ALL_IDS)


def test_the_tiers_run_every_rule():
    assert set(EVERY_ID_RULES + HEAVY_RULES + MAIN_ID_RULES) == set(RULES)
    assert set(MAIN_IDS) <= set(ALL_IDS) and set(HEAVY_IDS) <= set(ALL_IDS)


@pytest.mark.parametrize(("env_id", "rule"), cases())
def test_env_keeps_the_contract(env_id, rule):
    reason = unavailable_reason(env_id)
    if reason is not None:
        pytest.skip(f"{env_id} {reason}")
    report = check_env(env_id, rules=[rule])
    assert report.ok, str(report)


def test_the_env_table_page_documents_every_main_env():
    page = (Path(__file__).parents[2] / "docs" / "reference" / "env-table.md").read_text()
    table = [line for line in page.splitlines() if line.startswith("| `agentenvs/")]
    for entry in agentenvs.ENV_ENTRIES:
        if entry.variant_of is None:
            assert any(f"`{entry.env_id}`" in row for row in table), (
                f"docs/reference/env-table.md lacks {entry.env_id}"
            )


def test_snapshots_restore_only_into_their_own_env_class():
    sokoban = gym.make("agentenvs/Sokoban-v0")
    sokoban.reset(seed=0)
    other_id = next(env_id for env_id in MAIN_IDS if not env_id.startswith("agentenvs/Sokoban"))
    with pytest.raises(ValueError, match="not a snapshot"):
        gym.make(other_id).reset(options={"snapshot": sokoban.unwrapped.snapshot()})

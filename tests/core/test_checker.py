"""``agentenvs.core.checker.check_env``: a good env passes every rule, and each rule catches its own breach.

The envs are small subclasses of the counting env of ``tests/fixtures/counter_env.py``, each breaking one
promise of the contract; the checker must name the rule that promise belongs to, with evidence. The
registered ids run through the checker in ``tests/core/test_contract.py``.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import gymnasium as gym
import pytest

from agentenvs.core import EnvEntry, MissingProgram
from agentenvs.core.checker import RULES, CheckReport, ContractViolation, check_env
from agentenvs.core.spaces import UnicodeText

from fixtures.counter_env import CounterEnv
from fixtures.registry import register_for_test

FUZZ = 300  # fuzzed responses per hostile_text run: enough to see a tenth of them invalid


class GoodEnv(CounterEnv):
    """Count to a hidden target with ``inc`` and ``dec``: an env that keeps the contract.

    Args:
        max_turns: turns before truncation (default 12).
        reward_weights: overrides of the default component weights.

    ==============  ===============================================
    observation     ``count 3, target 5``
    action          ``inc`` or ``dec``, in ``<action>...</action>`` or bare
    outcome         1 when the count reaches the target; weight 1.0
    progress        Φ(s') − Φ(s), Φ = −distance; weight 0.5
    format          1 when the response is well formed; weight 0.1
    invalid_action  1 when the turn names no action; weight −0.1
    state key       the count and the target
    ==============  ===============================================
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass without a docstring of its own shows this table in help() (pydoc would show none)."""
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("__doc__") is None:
            cls.__doc__ = GoodEnv.__doc__


# ------------------------------------------------------------------ one breach per rule
# Each says what it breaks in a comment: a docstring of its own would replace GoodEnv's table in help().
class TinyObservationSpace(GoodEnv):
    # A space too small for text: breaks ``spaces``.

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.observation_space = UnicodeText(64)


class NoRenderFps(GoodEnv):
    # Gymnasium's checker warns without ``render_fps`` (where it renders): breaks ``gymnasium``.

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"]}


class GoalFlagIsNoBool(GoodEnv):
    # ``goal_in_first_observation`` must be a bool: breaks ``declarations``.

    goal_in_first_observation = "yes"  # type: ignore[assignment]


class EndKeysEveryTurn(GoodEnv):
    # ``success`` and ``score`` only at the episode's end: breaks ``info_keys``.

    def _info(
        self, text: str, components: Mapping[str, float], transitions: list[dict[str, Any]], **ends: bool
    ):
        info = super()._info(text, components, transitions, **ends)
        info.setdefault("success", False)
        info.setdefault("score", 0.0)
        return info


class PrivilegedSometimesNone(GoodEnv):
    # An info value that is a number, then None: breaks ``info_types``.

    def _privileged(self) -> Mapping[str, Any]:
        return {"target": self.target if self.turn % 2 else None}


class ReadableStateKey(GoodEnv):
    # A state key that is no hex digest: breaks ``keys``.

    def _compute_state_key(self) -> str:
        return f"count={self.count} target={self.target}"


class IgnoresUnknownOptions(GoodEnv):
    # Unknown reset options are dropped silently: breaks ``task_ids``.

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        known = {k: v for k, v in (options or {}).items() if k in ("task_id", "snapshot")}
        return super().reset(seed=seed, options=known)


class BonusOutsideTheComponents(GoodEnv):
    # A reward that is not Σ weight · component: breaks ``reward``.

    def _turn_reward(self, components: dict[str, float]) -> float:
        return super()._turn_reward(components) + 0.25


class HashInTheObservation(GoodEnv):
    # Python's ``hash()`` of a string changes with PYTHONHASHSEED: breaks ``determinism``.

    def _observation_text(self) -> str:
        return f"{super()._observation_text()} (salt {hash('counter')})"


class EncodesTheResponse(GoodEnv):
    # Encodes each action as UTF-8, which a lone surrogate cannot be: breaks ``hostile_text``.

    def _parse_action(self, action: str) -> str:
        action.encode("utf-8")
        return super()._parse_action(action)


class ScoreOnAHundredScale(GoodEnv):
    # A paper's ×100 scale under ``score``: breaks ``score``.

    def _score(self) -> float:
        return 100.0 * self._is_success() + 5.0


class RestoresOnlyTheStart(GoodEnv):
    # Restoring a snapshot puts the world back at the task's start: breaks ``snapshot``.

    def _restore_world(self, state: Any, *, started: bool) -> None:
        if not started:
            self._start(self._episode_task)


class HoldsALambda(GoodEnv):
    # A lambda attribute does not pickle: breaks ``pickling``.

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.on_step = lambda: None


class SeedlessResetsFromAClassCounter(GoodEnv):
    # Seedless resets (Gymnasium's autoresets) share one counter: breaks ``vector``.

    drawn: ClassVar[itertools.count[int]] = itertools.count()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is None and not options:
            index = next(SeedlessResetsFromAClassCounter.drawn) % self.task_source.size(self.split)
            options = {"task_id": self.task_source.task_id(self.split, index)}
        return super().reset(seed=seed, options=options)


class NoTable(GoodEnv):
    """A counter without its table."""


class ObservationModeKwarg(GoodEnv):
    # help() shows GoodEnv's table: the kwarg's name alone breaks ``docs``

    def __init__(self, view_mode: str = "text", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.view_mode = view_mode


BROKEN = [
    ("spaces", TinyObservationSpace, "at most 64 characters"),
    ("gymnasium", functools.partial(NoRenderFps, render_mode="ansi"), "render_fps"),
    ("declarations", GoalFlagIsNoBool, "goal_in_first_observation"),
    ("info_keys", EndKeysEveryTurn, "success/score early"),
    ("info_types", PrivilegedSometimesNone, "info.privileged.target"),
    ("keys", ReadableStateKey, "not a lowercase hex digest"),
    ("task_ids", IgnoresUnknownOptions, "bogus_option"),
    ("reward", BonusOutsideTheComponents, "Σ weight · component"),
    (
        "determinism",
        HashInTheObservation,
        "the reset differs in a fresh process with PYTHONHASHSEED=",
    ),
    ("hostile_text", EncodesTheResponse, "UnicodeEncodeError"),
    ("score", ScoreOnAHundredScale, "not a float in [0, 1]"),
    ("snapshot", RestoresOnlyTheStart, "restored into"),
    ("pickling", HoldsALambda, "does not copy"),
    ("vector", SeedlessResetsFromAClassCounter, "another observation than a single env's"),
    ("docs", NoTable, "table"),
    ("docs", ObservationModeKwarg, "view_mode"),
]


def name_of(make: Callable[[], gym.Env]) -> str:
    return getattr(make, "func", make).__name__


def test_the_broken_envs_cover_every_rule():
    assert {rule for rule, _, _ in BROKEN} == set(RULES)


@pytest.mark.parametrize(
    ("rule", "make", "evidence"), BROKEN, ids=[f"{r}-{name_of(m)}" for r, m, _ in BROKEN]
)
def test_each_rule_reports_its_breach_with_evidence(rule, make, evidence):
    report = check_env(make(), rules=[rule], fuzz_turns=FUZZ)
    assert report.failed_rules == [rule], str(report)
    assert evidence in report.result(rule).message, str(report)
    assert f"FAIL {rule}: " in str(report)


@pytest.mark.parametrize(
    ("rule", "make"),
    [(r, m) for r, m, _ in BROKEN if r != "docs"],
    ids=[r for r, _, _ in BROKEN if r != "docs"],
)
def test_a_breach_fails_no_rule_but_its_own_and_the_ones_it_implies(rule, make):
    """The whole check of a broken env names its rule, and the good env's other promises still hold."""
    implied = {  # what else one breach breaks, by the contract's own logic
        "spaces": {"gymnasium", "hostile_text", "vector"},  # texts do not fit: in a step, in shared memory
        "gymnasium": set(),
        "declarations": set(),
        "info_keys": set(),
        "info_types": set(),
        "keys": set(),
        "task_ids": set(),
        "reward": set(),
        "determinism": set(),
        "hostile_text": set(),
        "score": set(),
        "snapshot": {"pickling"},  # a copy's own snapshot replays from the start as well
        "pickling": {"vector"},  # no pickle, no factory for the vector envs (determinism skips, saying why)
        "vector": {"snapshot"},  # a restored RNG no longer draws the next task
    }
    report = check_env(make(), fuzz_turns=FUZZ)
    assert rule in report.failed_rules, str(report)
    assert set(report.failed_rules) <= {rule} | implied[rule], str(report)


def test_the_good_env_passes_every_rule():
    report = check_env(GoodEnv(), fuzz_turns=2000)
    assert report.ok, str(report)
    assert [(r.rule, r.status) for r in report.results] == [(rule, "passed") for rule in RULES]
    assert str(report).splitlines()[0] == f"check_env(GoodEnv): ok, {len(RULES)} passed, 0 failed, 0 skipped"


def test_an_id_string_is_made_by_gymnasium_and_rebuilt_in_the_child_process(monkeypatch):
    env_id = register_for_test(
        monkeypatch,
        EnvEntry(name="CheckerGood", entry_point=f"{__name__}:GoodEnv", summary="counter", family="Checker"),
    )
    report = check_env(env_id, fuzz_turns=FUZZ, make_kwargs={"max_turns": 8})
    assert report.env == env_id and report.ok, str(report)
    assert [r.status for r in report.results] == ["passed"] * len(RULES)


def test_a_registered_agentenvs_id_works_short_or_long():
    report = check_env("Sokoban-v0", rules=["spaces", "declarations", "keys"])
    assert report.env == "agentenvs/Sokoban-v0" and report.ok, str(report)
    assert [r.rule for r in report.results] == ["spaces", "declarations", "keys"]
    with pytest.raises(ValueError, match="unknown env id"):
        check_env("agentenvs/NoSuchEnv-v0")


def test_raise_on_failure_raises_a_contract_violation_listing_every_failure():
    class TwoBreaches(ScoreOnAHundredScale, BonusOutsideTheComponents):
        """Two breaches at once."""

    with pytest.raises(ContractViolation) as raised:
        check_env(TwoBreaches(), rules=["spaces", "reward", "score"], raise_on_failure=True)
    message = str(raised.value)
    assert "FAIL reward: " in message and "FAIL score: " in message and "PASS spaces" in message
    assert message.index("FAIL") < message.index("PASS")  # failures first
    assert isinstance(raised.value, AssertionError)  # pytest shows it as a failed assertion
    assert raised.value.report.failed_rules == ["reward", "score"]

    report = check_env(TwoBreaches(), rules=["score"])
    assert not report.ok
    with pytest.raises(ContractViolation, match="FAIL score"):
        report.raise_if_failed()
    check_env(GoodEnv(), rules=["score"], raise_on_failure=True).raise_if_failed()  # nothing to raise


def test_rule_selection_and_bad_arguments():
    report = check_env(GoodEnv(), skip=[rule for rule in RULES if rule != "reward"])
    assert [r.rule for r in report.results] == ["reward"]
    with pytest.raises(ValueError, match="unknown rules"):
        check_env(GoodEnv(), rules=["reward", "no_such_rule"])
    with pytest.raises(ValueError, match="at least one seed"):
        check_env(GoodEnv(), seeds=[])
    with pytest.raises(TypeError, match="gymnasium.Env"):
        check_env(object())  # type: ignore[arg-type]


def test_the_checked_instance_is_left_as_given():
    env = GoodEnv()
    env.reset(seed=4)
    before = env.snapshot()
    check_env(env, rules=["info_keys", "reward", "snapshot"])
    assert env.snapshot() == before


def test_a_missing_program_propagates_so_the_caller_can_skip():
    class NeedsAProgram(GoodEnv):
        """An env whose world lives in a program that is not installed."""

        def _start(self, task: tuple[int, int]) -> None:
            raise MissingProgram("no-such-program", "no no-such-program on PATH: apt-get install it")

    with pytest.raises(MissingProgram, match="apt-get install it"):
        check_env(NeedsAProgram())


def test_the_report_reads_one_line_per_rule():
    report = check_env(ScoreOnAHundredScale(), rules=["score", "reward"])
    assert isinstance(report, CheckReport)
    lines = str(report).splitlines()
    assert lines[0] == "check_env(ScoreOnAHundredScale): FAILED, 1 passed, 1 failed, 0 skipped"
    assert lines[1].startswith("  FAIL score: seed 0: the episode ends with score ")
    assert lines[2] == "  PASS reward"


def test_a_made_env_is_checked_through_its_wrappers():
    env = gym.make("agentenvs/Sokoban-v0")
    report = check_env(env, rules=["gymnasium", "pickling", "determinism"], hash_seeds=["1"])
    assert report.ok, str(report)
    assert report.env == "SokobanEnv (agentenvs/Sokoban-v0)"


def test_a_rule_that_cannot_run_skips_saying_why():
    report = check_env(HoldsALambda(), rules=["determinism", "pickling"])
    assert report.result("determinism").status == "skipped" and report.failed_rules == ["pickling"]
    assert "no child process can rebuild it" in report.result("determinism").message
    assert "SKIP determinism: the env does not pickle" in str(report)

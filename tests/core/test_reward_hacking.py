"""Reward-hacking audit: no invalid, stalling or repeated turn pays as much as playing.

For every registered id and every reward preset (Search's ``reward_preset``;
the other families have their default weights only), from states reached by
random and expert play (``snapshot()`` / ``restore()``: try each turn, put
the env back):

1. **Invalid < valid.** The reward of every invalid turn, potential-based
   components aside, is strictly below that of every valid turn that does
   not end the episode. The exception: where the original pays nothing for
   any intermediate turn (:data:`PAYS_NO_INTERMEDIATE_TURN`), every such turn,
   invalid or valid, pays exactly 0 — a tie at 0 that the env's "Known hacks"
   row documents.
2. **Repetition.** Repeating an identical valid turn earns a potential-based
   component's gain once: the sum over the repeats is Φ(after) − Φ(before),
   and every return to a state already visited nets 0 since that visit.
3. **Episode sums.** Over random and expert episodes each potential-based
   component sums to Φ(end) − Φ(start).
4. **Format does not pay for invalid output.** An episode of one invalid
   response repeated (a well-formed tag included) earns less than the
   expert's episode and a random player's well-formed one.
5. **Farming.** Repeating the expert's first turn for a whole episode earns
   less than the expert's episode; the one preset that pays per search by
   design with no penalty (mt-grpo) is named in the Search docstring, and its
   counterweight, MT-GRPO's two-turn limit, holds on its registered id.

The default suite plays one start per id and a few states; ``-m slow`` plays
three starts and longer walks.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import agentenvs
from agentenvs.agents.scripted import AgentUnavailable, make_agent
from agentenvs.core import derive_rng
from agentenvs.core.env import AgentEnv

ROOT = Path(__file__).resolve().parents[2]
SEARCH_ENTRY = "agentenvs.envs.search.env:SearchEnv"
SEARCH_PRESETS = ("agentenvs", "search-r1", "mt-grpo", "mt-ppo")

# responses no env reads as a valid action (where an env does, as ColBench reads any non-empty
# message as a question, the turn is simply classified as valid)
INVALID_RESPONSES = (
    "",
    "   \n\t",
    "<action>",
    "<action></action>",
    "<action>jump</action>",
    "<think>thinking only</think>",
    "definitely not an action",
    "\ud800",  # a lone surrogate
    "\u200b\u200d",  # zero-width characters only
    "\u202e\u2066up",  # bidi controls around a word
    "1" + "0" * 30,  # 10**30 written out
    "<action>" + "[" * 200_000 + "</action>",  # 200k nested brackets
)
THINK = "I plan my next move."
# the invalid responses repeated for whole episodes, most telling first (a well-formed tag, nothing)
STALLS = ("<action>jump</action>", "", "definitely not an action", "<action>", "\ud800", "   \n\t")

# (id prefix, preset): the original pays nothing for any turn before the episode's end
PAYS_NO_INTERMEDIATE_TURN = {
    ("agentenvs/WebShop-v0", None): "WebShop pays only at buy now",
    ("agentenvs/ColBench-v0", None): "ColBench pays only the final score",
    ("agentenvs/ColBench-Frontend-v0", None): "ColBench pays only the final similarity",
    ("agentenvs/Search", "search-r1"): "Search-R1 pays only the answer",
}
# a paper preset that pays per search with no search penalty: the named hack and its counterweight
PER_SEARCH_FARM = "mt-grpo"
FARM_COUNTERWEIGHT_ID = "agentenvs/Search-TriviaQA-2Turn-v0"


def load_hacks_script():
    spec = importlib.util.spec_from_file_location("hacks_column", ROOT / "scripts" / "hacks_column.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


HACKS = load_hacks_script()


def cases() -> list[tuple[str, str | None]]:
    """Every registered id, with each of Search's presets."""
    out: list[tuple[str, str | None]] = []
    for entry in agentenvs.ENV_ENTRIES:
        if entry.entry_point == SEARCH_ENTRY:
            out += [(entry.env_id, preset) for preset in SEARCH_PRESETS]
        else:
            out.append((entry.env_id, None))
    return out


CASES = cases()


def case_id(case: tuple[str, str | None]) -> str:
    env_id, preset = case
    return env_id.removeprefix("agentenvs/") + (f"[{preset}]" if preset else "")


def make(env_id: str, preset: str | None) -> AgentEnv:
    """The env (without wrappers); where its program is missing, conftest's hook skips, naming it."""
    kwargs = {} if preset is None else {"reward_preset": preset}
    return gym.make(env_id, **kwargs).unwrapped


def pays_no_intermediate_turn(env_id: str, preset: str | None) -> str | None:
    for (prefix, wanted), reason in PAYS_NO_INTERMEDIATE_TURN.items():
        if env_id.startswith(prefix) and preset == wanted:
            return reason
    return None


@dataclass(frozen=True)
class Turn:
    response: str
    reward: float
    components: dict[str, float]
    invalid: bool
    ends: bool
    state_key: str
    potentials: dict[str, float]
    success: bool  # False until the episode ends


def turn_of(env: AgentEnv, response: str, step: tuple) -> Turn:
    _, reward, terminated, truncated, info = step
    components = info["reward_components"]
    return Turn(
        response,
        reward,
        components,
        components["invalid_action"] > 0,
        terminated or truncated,
        info["state_key"],
        env.potentials,
        bool(info.get("success", False)),
    )


def take(env: AgentEnv, response: str) -> Turn:
    return turn_of(env, response, env.step(response))


def try_turn(env: AgentEnv, snapshot: Any, response: str) -> Turn:
    env.restore(snapshot)
    turn = take(env, response)
    env.restore(snapshot)
    return turn


def shaped_aside(env: AgentEnv, turn: Turn) -> float:
    """The turn's reward without its potential-based components."""
    weights = env.reward_weights
    return turn.reward - sum(weights[name] * turn.components[name] for name in env.potentials)


def candidate_actions(env: AgentEnv, info: dict[str, Any], rng: np.random.Generator, count: int) -> list[str]:
    """Up to ``count`` actions valid now: admissible ones where listed, else the env's samples."""
    admissible = info.get("admissible_actions")
    if admissible:
        picks = rng.permutation(len(admissible))[:count]
        return [admissible[int(i)] for i in picks]
    sample = getattr(env, "sample_action", None)
    return [sample(rng) for _ in range(count)] if sample is not None else []


def valid_responses(env: AgentEnv, info: dict[str, Any], rng: np.random.Generator, count: int) -> list[str]:
    """Well-formed (with a think block) and bare forms of valid actions, several moves per turn where
    allowed."""
    actions = candidate_actions(env, info, rng, count)
    responses = [env.protocol.format(a, think=THINK) for a in actions] + actions
    per_turn = getattr(env, "max_actions_per_turn", 1)
    for size in range(2, per_turn + 1):
        for combo in itertools.islice(itertools.product(actions, repeat=size), count):
            responses += [env.protocol.format(list(combo), think=THINK), " || ".join(combo)]
    return responses


def random_well_formed(env: AgentEnv, info: dict[str, Any], rng: np.random.Generator) -> str | None:
    actions = candidate_actions(env, info, rng, 1)
    return env.protocol.format(actions[0], think=THINK) if actions else None


Player = Callable[[Any, dict[str, Any]], str | None]  # (observation, info) -> response


def expert_player(env: AgentEnv) -> Player:
    try:
        return make_agent("expert", env).act
    except AgentUnavailable:
        return lambda observation, info: None


def random_player(env: AgentEnv, rng: np.random.Generator) -> Player:
    return lambda observation, info: random_well_formed(env, info, rng)


def repeating(response: str) -> Callable[[AgentEnv], Player]:
    return lambda env: lambda observation, info: response


def visited_states(env: AgentEnv, seed: int, walk: int) -> list[tuple[Any, Any, dict[str, Any]]]:
    """(snapshot, observation, info) of the start and of the states that ``walk`` expert turns
    and ``walk`` random well-formed turns from it reach."""
    observation, info = env.reset(seed=seed)
    start = env.snapshot()
    states = [(start, observation, info)]
    rng = derive_rng("reward-hacking-walk", env.task_id, seed)
    for make_player in (expert_player, lambda env: random_player(env, rng)):
        observation, info = env.restore(start)
        player = make_player(env)
        for _ in range(walk):
            response = player(observation, info)
            if response is None:
                break
            observation, _, terminated, truncated, info = env.step(response)
            if terminated or truncated:
                break
            states.append((env.snapshot(), observation, info))
    return states


def play(env: AgentEnv, seed: int, make_player: Callable[[AgentEnv], Player]) -> list[Turn]:
    """One episode from ``reset(seed)``, with the player ``make_player`` builds after the reset."""
    observation, info = env.reset(seed=seed)
    player = make_player(env)
    turns: list[Turn] = []
    while not turns or not turns[-1].ends:
        response = player(observation, info)
        step = env.step(response)
        observation, info = step[0], step[4]
        turns.append(turn_of(env, response, step))
    return turns


def episode_return(turns: list[Turn]) -> float:
    return sum(turn.reward for turn in turns)


# ------------------------------------------------------------------ properties
def check_invalid_below_valid(env: AgentEnv, env_id: str, preset: str | None, seeds: range, walk: int) -> int:
    """Property 1 at every visited state; returns how many states compared both kinds."""
    tie_reason = pays_no_intermediate_turn(env_id, preset)
    compared = 0
    for seed in seeds:
        rng = derive_rng("reward-hacking-candidates", env_id, preset or "", seed)
        for snapshot, observation, info in visited_states(env, seed, walk):
            env.restore(snapshot)
            responses = [*INVALID_RESPONSES, *valid_responses(env, info, rng, 6)]
            expert = expert_player(env)(observation, info)
            responses += [expert] if expert is not None else []
            turns = [try_turn(env, snapshot, response) for response in responses]
            invalid = [(shaped_aside(env, t), t.response[:60]) for t in turns if t.invalid]
            valid = [(shaped_aside(env, t), t.response[:60]) for t in turns if not t.invalid and not t.ends]
            if not invalid or not valid:
                continue
            compared += 1
            if tie_reason is not None:
                assert {value for value, _ in invalid + valid} == {0.0}, (tie_reason, invalid, valid)
            else:
                worst_valid, best_invalid = min(valid), max(invalid)
                assert best_invalid[0] < worst_valid[0], (
                    f"invalid {best_invalid[1]!r} pays {best_invalid[0]} >= valid {worst_valid[1]!r} "
                    f"{worst_valid[0]} at turn {snapshot.turn}"
                )
    return compared


def check_repetition(env: AgentEnv, env_id: str, seeds: range, walk: int, repeats: int) -> int:
    """Property 2 from every visited state; returns how many repeats were checked."""
    env.reset(seed=seeds[0])
    names = list(env.potentials)
    checked = 0
    for seed in seeds if names else ():
        rng = derive_rng("reward-hacking-repeat", env_id, seed)
        for snapshot, _, info in visited_states(env, seed, walk):
            for response in valid_responses(env, info, rng, 3):
                env.restore(snapshot)
                before = env.potentials
                keys, gains = [snapshot.state_key], []
                for _ in range(repeats):
                    turn = take(env, response)
                    if turn.invalid:
                        break
                    keys.append(turn.state_key)
                    gains.append(turn.components)
                    if turn.ends:
                        break
                for name in names:
                    paid = [components[name] for components in gains]
                    assert math.isclose(sum(paid), env.potentials[name] - before[name], abs_tol=1e-9)
                    for later, key in enumerate(keys):
                        for earlier in range(later):
                            if keys[earlier] == key:  # back in a state: nothing earned since it
                                assert abs(sum(paid[earlier:later])) < 1e-9, (response, name, paid)
                checked += len(gains)
    return checked


def check_episode_sums(env: AgentEnv, turns: list[Turn], start: dict[str, float]) -> None:
    """Property 3 over one played episode."""
    for name, phi_start in start.items():
        paid = sum(turn.components[name] for turn in turns)
        assert math.isclose(paid, turns[-1].potentials[name] - phi_start, abs_tol=1e-9), name


def audit(env_id: str, preset: str | None, seeds: range, walk: int, episodes: bool, stalls: int) -> None:
    """Every property on ``seeds``; the episode-level ones (3-5) only with ``episodes``, with the
    first ``stalls`` invalid responses."""
    env = make(env_id, preset)
    compared = check_invalid_below_valid(env, env_id, preset, seeds, walk)
    assert compared > 0, "no state offered both an invalid and a valid non-terminal turn to compare"
    repeated = check_repetition(env, env_id, seeds, walk, repeats=4)
    assert repeated > 0 or not env.potentials, "no valid turn could be repeated"
    tie_reason = pays_no_intermediate_turn(env_id, preset)
    for seed in seeds if episodes else ():
        env.reset(seed=seed)
        start = env.potentials
        expert = play(env, seed, expert_player)
        check_episode_sums(env, expert, start)
        rng = derive_rng("reward-hacking-random", env_id, seed)
        random = play(env, seed, lambda env, rng=rng: random_player(env, rng))
        check_episode_sums(env, random, start)

        # property 4: each invalid response, repeated for a whole episode, earns less than playing
        stalled = 0
        for response in STALLS[:stalls]:
            stall = play(env, seed, repeating(response))
            if not all(turn.invalid for turn in stall):
                continue  # the env reads it as an action (ColBench: a question)
            stalled += 1
            check_episode_sums(env, stall, start)
            for played in (episode for episode in (expert, random) if not any(t.invalid for t in episode)):
                # (an expert that gives up sends invalid turns itself: BabyAI's bot on KeyInBox)
                if tie_reason is not None:
                    assert episode_return(stall) == 0.0 <= episode_return(played), tie_reason
                else:
                    assert episode_return(stall) < episode_return(played), (response, episode_return(stall))
        assert stalled > 0, f"none of {STALLS[:stalls]} is invalid in every turn"

        # property 5: repeating the expert's first turn for a whole episode earns less than the expert
        first = expert[0]
        if first.invalid or first.ends or not expert[-1].success:
            continue
        farm = play(env, seed, repeating(first.response))
        check_episode_sums(env, farm, start)
        if preset == PER_SEARCH_FARM and env.max_turns > 2:
            continue  # the named farm: see test_the_farming_preset_is_named_and_its_counterweight_holds
        if not farm[-1].success:
            assert episode_return(farm) < episode_return(expert), (first.response, episode_return(farm))
    env.close()


VARIANTS = {entry.env_id for entry in agentenvs.ENV_ENTRIES if entry.variant_of is not None}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_no_invalid_stalling_or_repeated_turn_pays_as_much_as_playing(case):
    # one start per id; whole episodes on main ids (a variant shares its main id's rewards)
    env_id, preset = case
    audit(env_id, preset, seeds=range(1), walk=2, episodes=env_id not in VARIANTS, stalls=2)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_no_invalid_stalling_or_repeated_turn_pays_as_much_as_playing_long(case):
    env_id, preset = case
    variant = env_id in VARIANTS  # 97 BabyAI levels: fewer of their long stalling episodes
    audit(
        env_id,
        preset,
        seeds=range(2 if variant else 3),
        walk=6,
        episodes=True,
        stalls=2 if variant else len(STALLS),
    )


# ------------------------------------------------------- named hacks and docs
def search_env(env_id: str, preset: str, **kwargs: Any) -> AgentEnv:
    return gym.make(env_id, reward_preset=preset, **kwargs).unwrapped


def expert_episode_and_farm(env: AgentEnv, seed: int) -> tuple[list[Turn], list[Turn]]:
    """The expert's episode, and the episode that repeats its first turn (a good search) to the end."""
    expert = play(env, seed, expert_player)
    return expert, play(env, seed, repeating(expert[0].response))


def test_the_farming_preset_is_named_and_its_counterweight_holds():
    hacks = HACKS.known_hacks(FARM_COUNTERWEIGHT_ID)
    assert f"{PER_SEARCH_FARM} farms" in hacks and "counterweight" in hacks
    # with more turns than MT-GRPO's two, repeating a good search out-earns answering it
    many = search_env("agentenvs/Search-TriviaQA-v0", PER_SEARCH_FARM)
    expert, farm = expert_episode_and_farm(many, seed=0)
    assert expert[-1].success and [t.components["retrieval"] for t in farm] == [1.0] * many.max_turns
    assert episode_return(farm) > episode_return(expert)
    # MT-GRPO's own setting (two turns) caps the farm below the expert's episode
    two = gym.make(FARM_COUNTERWEIGHT_ID).unwrapped
    assert two.reward_preset == PER_SEARCH_FARM and two.max_turns == 2
    expert, farm = expert_episode_and_farm(two, seed=0)
    assert expert[-1].success and not farm[-1].success
    assert episode_return(farm) == pytest.approx(2 * (0.5 + 0.2))
    assert episode_return(farm) < episode_return(expert)


def test_mt_ppo_search_penalty_is_the_counterweight_of_its_per_search_retrieval():
    env = search_env("agentenvs/Search-TriviaQA-v0", "mt-ppo", max_turns=6)
    assert env.reward_weights["search_penalty"] < 0 and "retrieval" not in env.potentials
    assert "mt-ppo" in HACKS.known_hacks("agentenvs/Search-TriviaQA-v0")
    expert, farm = expert_episode_and_farm(env, seed=0)
    paid = [turn.reward for turn in farm[:-1]]  # the last turn also pays the unanswered outcome
    assert all(turn.components["retrieval"] == 1.0 for turn in farm)
    assert paid == pytest.approx([0.3 + 0.1 - 0.1 * k for k in range(1, len(paid) + 1)])
    assert farm[-1].components["outcome"] == -1.0
    assert episode_return(farm) < episode_return(expert)


@pytest.mark.parametrize("case", sorted(PAYS_NO_INTERMEDIATE_TURN), ids=lambda case: case[0] + str(case[1]))
def test_every_tie_at_zero_is_documented(case):
    prefix, preset = case
    env_id = next(entry.env_id for entry in agentenvs.ENV_ENTRIES if entry.env_id.startswith(prefix))
    hacks = HACKS.known_hacks(env_id)
    assert "a tie at 0" in hacks and (preset is None or preset in hacks)


@pytest.mark.parametrize(
    "env_id",
    sorted(
        {
            entry.entry_point: entry.env_id for entry in agentenvs.ENV_ENTRIES if entry.variant_of is None
        }.values()
    ),
)
def test_every_env_docstring_has_a_known_hacks_row(env_id):
    assert len(HACKS.known_hacks(env_id)) > 40


def test_known_hacks_row_is_read_from_the_docstring_table():
    doc = """Title.

    =====  ========
    One    first row
    Known hacks    not this: the label column is 5 wide
    =====  ========
    """
    table = """
=============  ======
Observation    text
Known hacks    farm ``x``, and
               then stop
Termination    solved
=============  ======
"""
    assert HACKS.docstring_row(doc, "Known hacks") is None
    assert HACKS.docstring_row(table, "Known hacks") == "farm ``x``, and then stop"
    assert HACKS.as_markdown("a ``b`` | c") == "a `b` \\| c"


def test_the_env_table_known_hacks_column_matches_the_docstrings():
    table = HACKS.BLOCK.current()
    assert table.splitlines()[0].endswith(f"| {HACKS.HEADER} |")
    assert HACKS.table_with_column(table) == table, "run python scripts/hacks_column.py --write"


def test_sokoban_invalid_turn_pays_less_than_a_legal_move_and_a_full_turn():
    # the examples: an invalid turn paid +0.4 in both ids, a legal move 0.4, three moves 0.2
    for env_id, legal, invalid in (
        ("agentenvs/Sokoban-Verl-v0", 0.4, -0.2),
        ("agentenvs/Sokoban-v0", 0.2, -0.4),
    ):
        env = gym.make(env_id).unwrapped
        env.reset(seed=0)
        start = env.snapshot()
        moves = ["left"] * env.max_actions_per_turn
        assert try_turn(env, start, "<action>jump</action>").reward == pytest.approx(invalid)
        full = try_turn(env, start, env.protocol.format(moves))
        assert full.components["box_placement"] == 0.0 and full.reward == pytest.approx(legal)

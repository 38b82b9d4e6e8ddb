"""agentenvs.diagnostics.grouping and `agentenvs diagnose grouping`: anchor groupings vs the true state."""

from __future__ import annotations

import json
import random
import re
from difflib import SequenceMatcher
from pathlib import Path

import gymnasium as gym
import pytest

from agentenvs.cli import main
from agentenvs.diagnostics.grouping import (
    Rollouts,
    diagnose,
    grouping_stats,
    markdown_table,
    results_name,
    score_groupings,
    similarity_anchor_keys,
)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "grouping"
FAMILY_ENVS = [
    "ALFWorld-v0", "BabyAI-v0", "ColBench-v0", "ColBench-Frontend-v0",
    "Search-v0", "Sokoban-v0", "TextCraft-v0", "WebShop-v0",
]  # fmt: skip


def test_aliasing_fragmentation_and_singletons_by_hand():
    # Group 0: "o1" shows states A and B (aliased, 3 turns); state C shows as "o2" and "o3" (fragmented).
    # Group 1 reuses "o1" for state A only: groups never span rollout groups.
    obs = [["o1", "o2"], ["o1", "o3", "o1"], ["o1"]]
    states = [["A", "C"], ["B", "C", "A"], ["A"]]
    stats = grouping_stats("observation", obs, states, [0, 0, 1])
    # groups: (0,o1){A,B} 3 turns, (0,o2){C}, (0,o3){C}, (1,o1){A}
    assert stats.groups == 4
    assert stats.aliased_group_share == pytest.approx(1 / 4)
    assert stats.aliased_turn_share == pytest.approx(3 / 6)
    # true states: (0,A) in o1 only, (0,B) o1, (0,C) in o2 and o3, (1,A) o1
    assert stats.fragmented_state_share == pytest.approx(1 / 4)
    assert stats.singleton_share == pytest.approx(3 / 4)
    assert stats.size_histogram == {1: 3, 3: 1}


def test_the_state_key_grouping_neither_aliases_nor_fragments():
    rollouts = Rollouts(
        group_ids=[0, 0],
        observations=[["room", "room"], ["room", "hall"]],
        obs_keys=[["r", "r"], ["r", "h"]],
        state_keys=[["s1", "s2"], ["s1", "s3"]],
    )
    rows = {row.anchor: row for row in score_groupings(rollouts)}
    assert list(rows) == ["observation", "state", "similarity≥0.95", "similarity≥0.9"]
    state = rows["state"]
    assert (state.aliased_group_share, state.fragmented_state_share) == (0.0, 0.0)
    assert state.size_histogram == {1: 2, 2: 1}
    assert rows["observation"].aliased_group_share == pytest.approx(1 / 2)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError):
        grouping_stats("observation", [["a", "b"]], [["s"]], [0])


def test_similarity_anchor_keys_cluster_against_first_member():
    observations = [
        ["You are in the kitchen. A red box is here.", "You hold the key."],
        ["You are in the kitchen. A red box is here!", "Completely different room text"],
    ]
    keys = similarity_anchor_keys(observations, ["g", "g"], threshold=0.9)
    assert keys[0][0] == keys[1][0]
    assert len({keys[0][0], keys[0][1], keys[1][1]}) == 3
    exact = similarity_anchor_keys(observations, ["g", "g"], threshold=1.0)
    assert exact[0][0] != exact[1][0]
    across = similarity_anchor_keys(observations, ["g", "h"], threshold=0.9)
    assert across[0][0] != across[1][0]
    for bad in (0.0, 1.5, float("nan")):
        with pytest.raises(ValueError):
            similarity_anchor_keys(observations, ["g", "g"], threshold=bad)


def test_similarity_clusters_equal_those_of_the_plain_ratio():
    """The quick-ratio bounds only skip founders; the clusters are those of ratio() alone."""
    rng = random.Random(3)
    alphabet = "ab c\u200b\u202e\ud800é"  # zero-width, bidi override, a lone surrogate
    base = ["".join(rng.choice(alphabet) for _ in range(40)) for _ in range(4)]

    def variant(text: str) -> str:
        return text[: rng.randrange(30, 41)] + "".join(rng.choice(alphabet) for _ in range(rng.randrange(4)))

    observations = [[variant(text) for text in base] for _ in range(6)]
    for threshold in (0.9, 0.95):
        expected, founders = [], []
        for steps in observations:
            row = []
            for text in steps:
                for founder, cluster in founders:
                    if SequenceMatcher(None, founder, text).ratio() >= threshold:
                        row.append(cluster)
                        break
                else:
                    founders.append((text, len(founders)))
                    row.append(len(founders) - 1)
            expected.append(row)
        assert similarity_anchor_keys(observations, [0] * 6, threshold=threshold) == expected


def test_sokoban_random_rollouts_score_consistently():
    env = gym.make("agentenvs/Sokoban-v0")
    results = diagnose(env, "agentenvs/Sokoban-v0", "random", episodes=16)
    again = diagnose(env, "agentenvs/Sokoban-v0", "random", episodes=16)
    assert results == again  # no wall clock, no global RNG
    for row in results["groupings"]:
        assert sum(size * count for size, count in row["size_histogram"].items()) == results["turns"]
        assert row["groups"] == sum(row["size_histogram"].values())
    state = results["groupings"][1]
    assert state["anchor"] == "state" and state["groups"] == results["true_states"]


def test_expert_members_repeat_so_state_groups_are_multiples_of_the_group_size():
    env = gym.make("agentenvs/Sokoban-v0")
    results = diagnose(env, "agentenvs/Sokoban-v0", "expert", episodes=16, group_size=8)
    assert all(size % 8 == 0 for size in results["groupings"][1]["size_histogram"])


@pytest.mark.parametrize("episodes, group_size", [(12, 8), (0, 8), (8, 0), (4, 8)])
def test_episodes_must_fill_whole_groups(episodes, group_size):
    with pytest.raises(ValueError):
        env = gym.make("agentenvs/Sokoban-v0")
        diagnose(env, "agentenvs/Sokoban-v0", "random", episodes=episodes, group_size=group_size)


def test_cli_prints_the_table_and_writes_json_and_png(tmp_path, capsys):
    argv = ["Sokoban-v0", "--agent", "expert", "--episodes", "8", "--out", str(tmp_path)]
    assert main(["diagnose", "grouping", *argv]) == 0
    printed = capsys.readouterr().out
    for anchor in ("observation", "state", "similarity≥0.95", "similarity≥0.9"):
        assert anchor in printed
    stem = results_name("agentenvs/Sokoban-v0", "expert")
    document = json.loads((tmp_path / f"{stem}.json").read_text(encoding="utf-8"))
    assert document["agent"] == "expert" and document["episodes"] == 8
    assert (tmp_path / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["Sokoban-v0", "--episodes", "12"],
        ["Sokoban-v0", "--episodes", "1.5"],
        ["Sokoban-v0", "--agent", "oracle"],
        ["NoSuchEnv-v0"],
        ["Sokoban-v0", "--env-kwarg", "max_turns"],
    ],
)
def test_cli_bad_arguments_exit_2_with_one_line(argv, capsys):
    assert main(["diagnose", "grouping", *argv]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_every_family_has_results_for_both_agents_and_the_grouping_page_shows_them():
    documents = []
    for env in FAMILY_ENVS:
        for agent in ("random", "expert"):
            path = RESULTS / f"{results_name(env, agent)}.json"
            document = json.loads(path.read_text(encoding="utf-8"))
            assert document["env_id"] == f"agentenvs/{env}" and document["agent"] == agent
            assert (RESULTS / f"{results_name(env, agent)}.png").stat().st_size > 0
            documents.append(document)
    page = (ROOT / "docs" / "reference" / "grouping.md").read_text(encoding="utf-8")
    table = markdown_table(documents)
    assert table in page
    prose = " ".join(page.split("# Grouping diagnostics", 1)[1].split(table, 1)[0].split())
    episodes = {d["episodes"] for d in documents}
    assert len(episodes) == 1 and f"{episodes.pop()} episodes (4 tasks, groups of 8)" in prose
    quoted = re.findall(r"\d+\.\d%", prose)
    assert quoted and set(quoted) <= set(re.findall(r"\d+\.\d%", table))


def verl_agent_step_groups(
    observations: list[list[str]], group_ids: list[int], threshold: float, observation_first: bool
) -> set[frozenset[tuple[int, int]]]:
    """verl-agent's build_step_group with enable_similarity, written out: the batch's step rows in
    trajectory-then-step order, per index a list of clusters {rep: first member, locs}, each row placed in
    the first cluster with are_similar(obs, rep) = SequenceMatcher(None, obs, rep).ratio() >= threshold.
    ``observation_first=False`` swaps the two arguments. Returns the partition of (trajectory, step)."""
    rows = [(i, t, text) for i, steps in enumerate(observations) for t, text in enumerate(steps)]
    partition: set[frozenset[tuple[int, int]]] = set()
    for index in sorted(set(group_ids)):
        clusters: list[dict] = []
        for i, t, obs in rows:
            if group_ids[i] != index:
                continue
            for cluster in clusters:
                pair = (obs, cluster["rep"]) if observation_first else (cluster["rep"], obs)
                if SequenceMatcher(None, *pair).ratio() >= threshold:
                    cluster["locs"].append((i, t))
                    break
            else:
                clusters.append({"rep": obs, "locs": [(i, t)]})
        partition.update(frozenset(cluster["locs"]) for cluster in clusters)
    return partition


def partition_of(keys: list[list[int]]) -> set[frozenset[tuple[int, int]]]:
    members: dict[int, set[tuple[int, int]]] = {}
    for i, row in enumerate(keys):
        for t, key in enumerate(row):
            members.setdefault(key, set()).add((i, t))
    return {frozenset(locs) for locs in members.values()}


def long_observation_groups(seed: int) -> tuple[list[list[str]], list[int]]:
    """Two rollout groups of 4 trajectories, 4 steps each; observations of about 170-300 characters built
    from a few shared rooms with edits, so many pairs sit near the threshold and difflib's junk heuristic
    (it applies to strings of 200+ characters, on the second argument only) matters."""
    rng = random.Random(seed)
    words = ["room", "box", "key", "door", "north", "the", "a", "is", "here", ".", "\n"]
    rooms = [" ".join(rng.choice(words) for _ in range(rng.randrange(40, 55))) for _ in range(3)]

    def observation() -> str:
        text = list(rng.choice(rooms))
        for _ in range(rng.randrange(0, 25)):
            text.insert(rng.randrange(len(text) + 1), rng.choice("abcde .\n"))
        return "".join(text)

    observations = [[observation() for _ in range(4)] for _ in range(8)]
    return observations, [0] * 4 + [1] * 4


@pytest.mark.parametrize("threshold", [0.95, 0.9])
def test_both_similarity_orders_match_verl_agents_arithmetic_on_random_long_groups(threshold):
    differing = 0
    for seed in range(20):
        observations, group_ids = long_observation_groups(seed)
        reference = similarity_anchor_keys(observations, group_ids, threshold=threshold, order="verl-agent")
        assert partition_of(reference) == verl_agent_step_groups(observations, group_ids, threshold, True)
        ours = similarity_anchor_keys(observations, group_ids, threshold=threshold, order="agentenvs")
        assert partition_of(ours) == verl_agent_step_groups(observations, group_ids, threshold, False)
        differing += partition_of(reference) != partition_of(ours)
    assert differing > 0  # the ratio is not symmetric: on these groups the order changes the clusters


def test_similarity_order_defaults_to_agentenvs_and_refuses_unknown_orders():
    observations, group_ids = long_observation_groups(0)
    assert similarity_anchor_keys(observations, group_ids) == similarity_anchor_keys(
        observations, group_ids, order="agentenvs"
    )
    for bad in ("verl_agent", "", None):
        with pytest.raises(ValueError, match="order must be one of"):
            similarity_anchor_keys(observations, group_ids, order=bad)

"""How often anchor grouping lies about the state: GiGPO's groupings measured against the true state.

GiGPO (Feng et al. 2025) compares the turns of one rollout group (N episodes
of one task from one start state) that acted from the same state. Its code
matches the observation text; its similarity option clusters observations;
agentenvs adds the env's ``state_key``, the true state. :func:`diagnose`
plays the rollout groups with a scripted agent and scores each grouping
against the state key (a turn's state is the one it acted from; groups never
span rollout groups):

======================  ===================================================
measure                 definition
======================  ===================================================
aliased_group_share     share of anchor groups holding turns of ≥ 2 true
                        states (over-grouping)
aliased_turn_share      share of turns inside such groups
fragmented_state_share  share of true states (per rollout group) whose turns
                        fall into ≥ 2 anchor groups (under-grouping)
singleton_share         share of anchor groups with one turn
size_histogram          {group size: number of anchor groups of that size}
======================  ===================================================

The groupings: ``observation`` (exact ``obs_key``), ``state`` (``state_key``:
0 aliasing and 0 fragmentation by construction, the reference row), and
``similarity≥t`` for GiGPO's thresholds :data:`SIMILARITY_THRESHOLDS`
(:func:`similarity_anchor_keys`, in its default ``"agentenvs"`` argument
order; ``"verl-agent"`` is the released code's).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym

from agentenvs.agents.scripted import make_agent

SIMILARITY_THRESHOLDS = (0.95, 0.9)
DEFAULT_GROUP_SIZE = 8  # GiGPO's N copies of each task


# Whose argument order similarity clustering uses: difflib's ratio is not symmetric.
SimilarityOrder = Literal["agentenvs", "verl-agent"]
SIMILARITY_ORDERS: tuple[SimilarityOrder, ...] = ("agentenvs", "verl-agent")


def similarity_anchor_keys(
    observations: Sequence[Sequence[str]],
    group_ids: Sequence[Hashable],
    *,
    threshold: float = 0.95,
    order: SimilarityOrder = "agentenvs",
) -> list[list[int]]:
    """Anchor keys by similarity clustering of observations, per rollout group.

    Greedy in trajectory-then-step order: an observation ``obs`` joins the
    first cluster (in founding order) of its group whose *first member*
    ``rep`` has ``ratio >= threshold``, else it founds a new cluster, where
    ``ratio`` is ``difflib.SequenceMatcher(None, a, b).ratio()`` with

    - ``order="agentenvs"``: ``(a, b) = (rep, obs)``;
    - ``order="verl-agent"``: ``(a, b) = (obs, rep)``, verl-agent's
      ``are_similar(obs, cluster["rep"])`` in gigpo/core_gigpo.py's
      ``build_step_group`` (``reference_preset("gigpo")``).

    The ratio is not symmetric (difflib's junk heuristic looks at ``b``
    only), so the two orders can cluster differently. Keys are cluster
    numbers, unique across groups. ``threshold=1.0`` reduces to exact
    matching. Equal texts join without a ratio (it is 1 for them), and the
    upper bounds ``real_quick_ratio`` and ``quick_ratio`` skip founders that
    cannot reach the threshold: both leave the clusters unchanged.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if order not in SIMILARITY_ORDERS:
        raise ValueError(f"order must be one of {SIMILARITY_ORDERS}, got {order!r}")
    observation_first = order == "verl-agent"
    members: dict[Hashable, list[int]] = defaultdict(list)
    for index, group in enumerate(group_ids):
        members[group].append(index)
    keys: list[list[int]] = [[0] * len(steps) for steps in observations]
    next_cluster = 0
    for indices in members.values():
        founders: list[tuple[str, int]] = []
        for i in indices:
            for t, text in enumerate(observations[i]):
                for founder, cluster in founders:
                    first, second = (text, founder) if observation_first else (founder, text)
                    if founder == text or _similar(first, second, threshold):
                        keys[i][t] = cluster
                        break
                else:
                    founders.append((text, next_cluster))
                    keys[i][t] = next_cluster
                    next_cluster += 1
    return keys


def _similar(first: str, second: str, threshold: float) -> bool:
    matcher = SequenceMatcher(None, first, second)
    return (
        matcher.real_quick_ratio() >= threshold
        and matcher.quick_ratio() >= threshold
        and matcher.ratio() >= threshold
    )


@dataclass
class Rollouts:
    """The state each turn acted from, per episode: its observation text, ``obs_key`` and ``state_key``."""

    group_ids: list[int] = field(default_factory=list)
    observations: list[list[str]] = field(default_factory=list)
    obs_keys: list[list[str]] = field(default_factory=list)
    state_keys: list[list[str]] = field(default_factory=list)

    @property
    def turns(self) -> int:
        return sum(len(keys) for keys in self.state_keys)


def play_groups(
    env: gym.Env,
    agent_name: str,
    *,
    groups: int,
    group_size: int = DEFAULT_GROUP_SIZE,
    seed: int = 0,
    on_episode: Callable[[], None] | None = None,
) -> Rollouts:
    """Rollout group g resets with ``seed + g`` (one task, one start state) ``group_size`` times.

    Member m of group g is played by agent ``agent_name`` built with seed
    ``g * group_size + m``, so random members differ and the expert repeats.
    """
    rollouts = Rollouts()
    for group in range(groups):
        for member in range(group_size):
            observation, info = env.reset(seed=seed + group)
            agent = make_agent(agent_name, env, group * group_size + member)
            texts, obs_keys, state_keys = [], [], []
            done = False
            while not done:
                texts.append(str(observation))
                obs_keys.append(info["obs_key"])
                state_keys.append(info["state_key"])
                observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
                done = terminated or truncated
            rollouts.group_ids.append(group)
            rollouts.observations.append(texts)
            rollouts.obs_keys.append(obs_keys)
            rollouts.state_keys.append(state_keys)
            if on_episode is not None:
                on_episode()
    return rollouts


@dataclass(frozen=True)
class GroupingStats:
    """One grouping scored against the true state (see the module docstring)."""

    anchor: str
    groups: int
    aliased_group_share: float
    aliased_turn_share: float
    fragmented_state_share: float
    singleton_share: float
    size_histogram: dict[int, int]


def grouping_stats(
    anchor: str,
    anchor_keys: Sequence[Sequence[Hashable]],
    state_keys: Sequence[Sequence[str]],
    group_ids: Sequence[int],
) -> GroupingStats:
    """Score ``anchor_keys`` (one per turn) against ``state_keys`` within each rollout group."""
    states_of_group: dict[tuple[int, Hashable], set[str]] = defaultdict(set)
    turns_of_group: Counter[tuple[int, Hashable]] = Counter()
    groups_of_state: dict[tuple[int, str], set[Hashable]] = defaultdict(set)
    for group, keys, states in zip(group_ids, anchor_keys, state_keys, strict=True):
        for key, state in zip(keys, states, strict=True):
            states_of_group[(group, key)].add(state)
            turns_of_group[(group, key)] += 1
            groups_of_state[(group, state)].add(key)
    aliased = [g for g, states in states_of_group.items() if len(states) > 1]
    turns = sum(turns_of_group.values())
    count = len(turns_of_group)
    histogram = Counter(turns_of_group.values())
    return GroupingStats(
        anchor=anchor,
        groups=count,
        aliased_group_share=len(aliased) / count if count else 0.0,
        aliased_turn_share=sum(turns_of_group[g] for g in aliased) / turns if turns else 0.0,
        fragmented_state_share=sum(len(keys) > 1 for keys in groups_of_state.values()) / len(groups_of_state)
        if groups_of_state
        else 0.0,
        singleton_share=histogram.get(1, 0) / count if count else 0.0,
        size_histogram=dict(sorted(histogram.items())),
    )


def score_groupings(
    rollouts: Rollouts, thresholds: Sequence[float] = SIMILARITY_THRESHOLDS
) -> list[GroupingStats]:
    """The observation, state and similarity groupings of ``rollouts``, in that order."""
    rows = [
        grouping_stats("observation", rollouts.obs_keys, rollouts.state_keys, rollouts.group_ids),
        grouping_stats("state", rollouts.state_keys, rollouts.state_keys, rollouts.group_ids),
    ]
    for threshold in thresholds:
        keys = similarity_anchor_keys(rollouts.observations, rollouts.group_ids, threshold=threshold)
        rows.append(grouping_stats(f"similarity≥{threshold}", keys, rollouts.state_keys, rollouts.group_ids))
    return rows


def diagnose(
    env: gym.Env,
    env_id: str,
    agent_name: str,
    *,
    episodes: int,
    group_size: int = DEFAULT_GROUP_SIZE,
    seed: int = 0,
    on_episode: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Play ``episodes`` (a multiple of ``group_size``) and score every grouping; the results document."""
    if group_size < 1 or episodes < group_size or episodes % group_size:
        raise ValueError(
            f"episodes ({episodes}) must be a positive multiple of the group size ({group_size})"
        )
    groups = episodes // group_size
    rollouts = play_groups(
        env, agent_name, groups=groups, group_size=group_size, seed=seed, on_episode=on_episode
    )
    return {
        "env_id": env_id,
        "agent": agent_name,
        "episodes": episodes,
        "group_size": group_size,
        "seed": seed,
        "turns": rollouts.turns,
        "true_states": len(
            {
                (group, state)
                for group, keys in zip(rollouts.group_ids, rollouts.state_keys, strict=False)
                for state in keys
            }
        ),
        "groupings": [asdict(row) for row in score_groupings(rollouts)],
    }


def results_name(env_id: str, agent_name: str) -> str:
    """File stem of one diagnostic's results: ``grouping-Sokoban-v0-random``."""
    return f"grouping-{env_id.rsplit('/', 1)[-1]}-{agent_name}"


def write_results(results: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """``<stem>.json`` and, with matplotlib installed, ``<stem>.png`` (the size histograms) in ``out``.

    Raises ``ImportError`` naming the extra after writing the JSON when
    matplotlib is missing.
    """
    out.mkdir(parents=True, exist_ok=True)
    stem = results_name(results["env_id"], results["agent"])
    path = out / f"{stem}.json"
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path, plot_histograms(results, out / f"{stem}.png")


def plot_histograms(results: dict[str, Any], path: Path) -> Path:
    """One panel per grouping: the number of anchor groups of each size (log scale)."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError("the PNG needs matplotlib: pip install 'agentenvs[diagnose]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results["groupings"]
    figure, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.2), sharey=True, squeeze=False)
    for axis, row in zip(axes[0], rows, strict=False):
        sizes = [int(size) for size in row["size_histogram"]]
        axis.bar(sizes, list(row["size_histogram"].values()), width=0.8)
        axis.set_yscale("log")
        axis.set_title(
            f"{row['anchor']}\naliased {row['aliased_group_share']:.1%}, "
            f"fragmented {row['fragmented_state_share']:.1%}",
            fontsize=9,
        )
        axis.set_xlabel("group size (turns)")
    axes[0][0].set_ylabel("anchor groups")
    figure.suptitle(
        f"{results['env_id']}, {results['agent']} agent: {results['episodes']} episodes "
        f"in groups of {results['group_size']}",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


TABLE_COLUMNS = ("anchor", "groups", "aliased groups", "aliased turns", "fragmented states", "singletons")


def table_rows(results: dict[str, Any]) -> list[tuple[str, ...]]:
    """The table's cells, one row per grouping (shares as percentages with one decimal)."""
    return [
        (
            row["anchor"],
            str(row["groups"]),
            f"{row['aliased_group_share']:.1%}",
            f"{row['aliased_turn_share']:.1%}",
            f"{row['fragmented_state_share']:.1%}",
            f"{row['singleton_share']:.1%}",
        )
        for row in results["groupings"]
    ]


def markdown_row(results: dict[str, Any]) -> str:
    """One Markdown table row of a diagnostic: per grouping, aliased groups / aliased turns / fragmented
    states / singletons (the state key's row holds only its singletons: it neither aliases nor fragments)."""
    cells = [results["env_id"].rsplit("/", 1)[-1], results["agent"], str(results["turns"])]
    for row in results["groupings"]:
        if row["anchor"] == "state":
            cells.append(f"{row['singleton_share']:.1%}")
        else:
            cells.append(
                " / ".join(
                    f"{row[name]:.1%}"
                    for name in (
                        "aliased_group_share",
                        "aliased_turn_share",
                        "fragmented_state_share",
                        "singleton_share",
                    )
                )
            )
    return "| " + " | ".join(cells) + " |"


def markdown_table(documents: Sequence[dict[str, Any]]) -> str:
    """The Markdown table of several diagnostics (one row each, columns named by the first's groupings)."""
    anchors = [row["anchor"] for row in documents[0]["groupings"]]
    measures = "aliased groups / turns / fragmented / singletons"
    header = ["env", "agent", "turns"] + [
        f"{anchor}: singletons" if anchor == "state" else f"{anchor}: {measures}" for anchor in anchors
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + [markdown_row(document) for document in documents])

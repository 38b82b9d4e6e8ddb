"""BabyAI's text against BALROG's, turn by turn, on recorded random walks.

``tests/fixtures/babyai/balrog_text_reference.json`` holds what BALROG's text
wrapper (on its minigrid fork) showed for the default mix's five levels x 20
test seeds, each played by a random walk; ``scripts/record_babyai_balrog_reference.py``
regenerates it. The env replays the same actions and must show the same lines,
rewards and episode ends.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentenvs.envs.babyai.env import BabyAIEnv
from agentenvs.envs.babyai.tasks import DEFAULT_MIX

RECORDING = json.loads(
    (Path(__file__).parents[2] / "fixtures" / "babyai" / "balrog_text_reference.json").read_text(
        encoding="utf-8"
    )
)
EPISODES = RECORDING["episodes"]


def view_text(observation: str) -> str:
    """Our observation's view lines, as BALROG joins them (no mission line, nothing for an empty view)."""
    mission_line, _, rest = observation.partition("\n")
    assert mission_line.startswith("Mission: ")
    lines = rest.split("\n\n")[0]  # the reset observation appends the action list
    return "" if lines == "Nothing in view." else lines


def balrog_text(text: str) -> str:
    """BALROG's lines with its one known slip mended: it writes "a open ... door" (ours: "an open")."""
    return "\n".join(("an " + line[2:]) if line.startswith("a open ") else line for line in text.split("\n"))


def test_the_recording_covers_the_default_mix_widely():
    levels = [episode["task_id"].split("/")[0] for episode in EPISODES]
    assert {level: levels.count(level) for level in set(levels)} == dict.fromkeys(DEFAULT_MIX.values(), 20)
    assert sum(len(episode["turns"]) for episode in EPISODES) >= 2000


@pytest.fixture(scope="module")
def env() -> BabyAIEnv:
    return BabyAIEnv()


@pytest.mark.parametrize("episode", EPISODES, ids=[episode["task_id"] for episode in EPISODES])
def test_each_turn_reads_as_balrog_shows_it(env, episode):
    first, *turns = episode["turns"]
    obs, _ = env.reset(options={"task_id": episode["task_id"]})
    assert obs.startswith(f"Mission: {episode['mission']}\n")
    assert view_text(obs) == balrog_text(first["text"])
    for index, turn in enumerate(turns, start=1):
        obs, _, terminated, _, info = env.step(turn["action"])
        assert view_text(obs) == balrog_text(turn["text"]), (index, turn["action"])
        assert info["reward_components"]["outcome"] == pytest.approx(turn["reward"])
        assert terminated == turn["terminated"]

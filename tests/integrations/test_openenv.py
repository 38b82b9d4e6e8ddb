"""`agentenvs serve` as an OpenEnv environment server, played with openenv-core's own client.

Expert episodes over the wire equal ``gym.make``'s turn by turn; sessions do not interfere; hostile
messages are refused with a reason while the session and the server keep going.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip(
    "openenv",
    reason="openenv-core needs pillow < 13 (through gradio): CI's OpenEnv step runs this in .venv-openenv",
)
import httpx  # noqa: E402
from openenv.core import GenericEnvClient  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from agentenvs.integrations.openenv import WS_FRAME_LIMIT, build_app  # noqa: E402

from expert_episodes import Episode, expert_episode  # noqa: E402
from fixtures.app_server import free_port, serving  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SOKOBAN = "agentenvs/Sokoban-v0"
# (id, seed) pairs whose expert episode takes more than one turn
EXPERT_CASES = [(SOKOBAN, 4), ("agentenvs/TextCraft-v0", 3), ("agentenvs/Search-v0", 1)]


def wire_info(info: dict[str, Any]) -> dict[str, Any]:
    """gym.make's info as the server sends it: JSON, without the privileged info."""
    return json.loads(json.dumps({key: value for key, value in info.items() if key != "privileged"}))


def assert_turn_matches(result: Any, episode: Episode, turn: int) -> None:
    """An OpenEnv StepResult equals turn ``turn`` of ``episode`` (0: the reset)."""
    observation = result.observation
    assert observation["text"] == episode.observations[turn]
    assert observation["info"] == wire_info(episode.infos[turn])
    assert "privileged" not in observation["info"] and episode.infos[turn].get("privileged") is not None
    if turn == 0:
        assert result.reward is None and result.done is False
        assert observation["instructions"] == episode.instructions
        return
    assert observation["instructions"] == ""
    assert result.reward == episode.rewards[turn - 1]
    assert observation["terminated"] is episode.terminated[turn - 1]
    assert observation["truncated"] is episode.truncated[turn - 1]
    assert result.done is (episode.terminated[turn - 1] or episode.truncated[turn - 1])


def play(client: Any, episode: Episode) -> None:
    assert_turn_matches(client.reset(seed=episode.seed), episode, 0)
    for turn, response in enumerate(episode.responses, start=1):
        assert_turn_matches(client.step({"response": response}), episode, turn)


@pytest.mark.parametrize("env_id, seed", EXPERT_CASES)
def test_openenvs_client_plays_an_expert_episode_as_gym_make_does(env_id, seed):
    episode = expert_episode(env_id, seed)
    assert len(episode.responses) >= 2 and episode.infos[-1]["success"]
    with serving(build_app(env_id)) as url, GenericEnvClient(base_url=url).sync() as client:
        play(client, episode)
        state = client.state()
        assert state["env_id"] == env_id and state["task_id"] == episode.infos[-1]["task_id"]
        assert state["state_key"] == episode.infos[-1]["state_key"] and state["step_count"] == len(
            episode.responses
        )
        with pytest.raises(RuntimeError, match="the episode is over: send reset"):
            client.step({"response": episode.responses[-1]})
        play(client, episode)  # the same session plays the episode again, identically


def test_two_sessions_interleaved_each_play_their_own_episode():
    first, second = expert_episode(SOKOBAN, 4), expert_episode(SOKOBAN, 5)
    with serving(build_app(SOKOBAN)) as url:
        with GenericEnvClient(base_url=url).sync() as a, GenericEnvClient(base_url=url).sync() as b:
            for (client_a, episode_a), (client_b, episode_b) in (
                ((a, first), (b, second)),
                ((a, second), (b, first)),
            ):
                assert_turn_matches(client_a.reset(seed=episode_a.seed), episode_a, 0)
                assert_turn_matches(client_b.reset(seed=episode_b.seed), episode_b, 0)
                for turn in range(1, max(len(episode_a.responses), len(episode_b.responses)) + 1):
                    for client, episode in ((client_a, episode_a), (client_b, episode_b)):
                        if turn <= len(episode.responses):
                            result = client.step({"response": episode.responses[turn - 1]})
                            assert_turn_matches(result, episode, turn)
                assert a.state()["task_id"] != b.state()["task_id"]


def test_sessions_past_max_sessions_are_refused_and_a_freed_slot_serves_again():
    episode = expert_episode(SOKOBAN, 4)
    with serving(build_app(SOKOBAN, max_sessions=1)) as url:
        ws_url = url.replace("http", "ws") + "/ws"
        with GenericEnvClient(base_url=url).sync() as held:
            held.reset(seed=4)
            with connect(ws_url) as extra:  # OpenEnv answers the socket with an error frame, then closes it
                assert json.loads(extra.recv(timeout=30))["data"]["code"] == "CAPACITY_REACHED"
        deadline = time.monotonic() + 10
        while True:  # the slot is free once the server has seen the held socket close
            with connect(ws_url) as later:
                later.send(json.dumps({"type": "reset", "data": {"seed": 4}}))
                reply = json.loads(later.recv(timeout=30))
            if reply["type"] == "observation":
                break
            assert reply["data"]["code"] == "CAPACITY_REACHED" and time.monotonic() < deadline
            time.sleep(0.1)
        with GenericEnvClient(base_url=url).sync() as client:
            play(client, episode)


# message text (or bytes) sent raw over /ws -> the error code and a piece of the reason
HOSTILE_FRAMES = [
    ("{not json", "INVALID_JSON", "Invalid JSON"),
    ("[1, 2]", "VALIDATION_ERROR", "must be a JSON object"),
    ('"reset"', "VALIDATION_ERROR", "must be a JSON object"),
    ('{"type": "reset", "data": {"seed": NaN}}', "INVALID_JSON", "NaN is not JSON"),
    ('{"type": "reset", "data": {"seed": Infinity}}', "INVALID_JSON", "Infinity is not JSON"),
    ('{"type": "reset", "data": {"seed": 1e999}}', "INVALID_JSON", "the number 1e999 is out of range"),
    ("[" * 200_000, "VALIDATION_ERROR", "nested deeper"),
    ('{"a": ' * 40 + "1" + "}" * 40, "VALIDATION_ERROR", "nested deeper than 32"),
    ('{"type": "step", "data": {"response": "\\ud800 lone"}}', "VALIDATION_ERROR", "lone surrogate (U+D800)"),
    ('{"type": "step", "data": {"\\udfff": "up"}}', "VALIDATION_ERROR", "lone surrogate (U+DFFF)"),
    ('{"type": "reset", "data": {"seed": 1' + "0" * 5000 + "}}", "INVALID_JSON", "Invalid JSON"),
    (
        json.dumps({"type": "step", "data": {"response": "x" * (2**20 + 1)}}),
        "VALIDATION_ERROR",
        "exceeds the limit",
    ),
    (b"\x00\x01binary", "VALIDATION_ERROR", "binary frames"),
    (json.dumps({"type": "step", "data": {"response": "up"}}), "EXECUTION_ERROR", "send reset first"),
    (
        json.dumps({"type": "reset", "data": {"seed": 10**30}}),
        "EXECUTION_ERROR",
        "seed must be an integer in [0, 2**63)",
    ),
    (json.dumps({"type": "reset", "data": {"seed": 2**63}}), "EXECUTION_ERROR", "seed must be an integer"),
    (json.dumps({"type": "reset", "data": {"seed": 1.5}}), "EXECUTION_ERROR", "seed must be an integer"),
    (json.dumps({"type": "reset", "data": {"seed": True}}), "EXECUTION_ERROR", "seed must be an integer"),
    (json.dumps({"type": "reset", "data": {"seed": "7"}}), "EXECUTION_ERROR", "seed must be an integer"),
    (json.dumps({"type": "reset", "data": {"seed": -1}}), "EXECUTION_ERROR", "seed must be an integer"),
    (
        json.dumps({"type": "reset", "data": {"seed": 1, "options": {}}}),
        "EXECUTION_ERROR",
        "unknown reset field",
    ),
    (
        json.dumps({"type": "reset", "data": {"task_id": "nope"}}),
        "EXECUTION_ERROR",
        "malformed Sokoban task id",
    ),
    (json.dumps({"type": "reset", "data": {"task_id": "t" * 300}}), "EXECUTION_ERROR", "1 to 255 characters"),
    (json.dumps({"type": "reset", "data": {"episode_id": ""}}), "EXECUTION_ERROR", "1 to 255 characters"),
    (json.dumps({"type": "step", "data": {"response": 5}}), "VALIDATION_ERROR", "Invalid message"),
    (json.dumps({"type": "step", "data": {"respons": "up"}}), "VALIDATION_ERROR", "Invalid message"),
    (json.dumps({"type": "fly"}), "UNKNOWN_TYPE", "Unknown message type"),
]


def refusal(socket_connection: Any, frame: str | bytes) -> dict[str, Any]:
    socket_connection.send(frame)
    reply = json.loads(socket_connection.recv(timeout=30))
    assert reply["type"] == "error", reply
    return reply["data"]


def docs_openenv_section() -> str:
    text = (ROOT / "docs" / "reference" / "integrations.md").read_text(encoding="utf-8")
    start = text.index("## OpenEnv: `agentenvs serve`")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory) -> Iterator[tuple[subprocess.Popen, int]]:
    """The integrations page's ``agentenvs serve`` command, run as written but on a free port."""
    command = re.search(r"^agentenvs serve .*$", docs_openenv_section(), re.MULTILINE).group(0).split()
    assert command[command.index("--port") + 1] == "8000"
    port = free_port()
    command[command.index("--port") + 1] = str(port)
    log_path = tmp_path_factory.mktemp("serve") / "serve.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "agentenvs.cli", *command[1:]], stdout=log, stderr=subprocess.STDOUT,
            env=os.environ.copy(),
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 90
            while True:
                assert server.poll() is None, log_path.read_text()
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                        break
                assert time.monotonic() < deadline, "agentenvs serve did not come up"
                time.sleep(0.2)
            yield server, port
        finally:
            server.terminate()
            server.wait(timeout=30)


def test_the_docs_client_example_runs_against_the_docs_command(docs_server, tmp_path):
    _, port = docs_server
    block = re.search(r"```python\n(.*?)```", docs_openenv_section(), re.DOTALL).group(1)
    assert "http://127.0.0.1:8000" in block
    script = tmp_path / "docs_openenv.py"
    script.write_text(block.replace("http://127.0.0.1:8000", f"http://127.0.0.1:{port}"), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'invalid_action'" in result.stdout  # the components of each turn were printed


def test_agentenvs_serve_refuses_hostile_input_and_keeps_serving(docs_server):
    server, port = docs_server
    base = f"http://127.0.0.1:{port}"
    episode = expert_episode(SOKOBAN, 4)
    with connect(f"ws://127.0.0.1:{port}/ws", max_size=WS_FRAME_LIMIT) as raw:
        for frame, code, reason in HOSTILE_FRAMES:
            data = refusal(raw, frame)
            assert data["code"] == code and reason in data["message"], (str(frame)[:60], data)
            assert len(json.dumps(data)) < 4000, "a refusal echoes the hostile input"
        # the same session then plays an episode exactly as gym.make does, bidi and zero-width text included
        raw.send(json.dumps({"type": "reset", "data": {"seed": 4}}))
        assert json.loads(raw.recv(timeout=30))["data"]["observation"]["text"] == episode.observations[0]
        gym_env = gym.make(SOKOBAN)
        gym_env.reset(seed=4)
        sly = "<action>\u202eup\u200b</action>"
        text, reward, *_ = gym_env.step(sly)
        raw.send(json.dumps({"type": "step", "data": {"response": sly}}))
        reply = json.loads(raw.recv(timeout=30))["data"]
        assert reply.get("observation", {}).get("text") == text and reply["reward"] == reward, reply
    with GenericEnvClient(base_url=base).sync() as client:
        play(client, episode)

    for body, status, reason in [
        (b"{not json", 400, "Invalid JSON"),
        (b'{"seed": 1000000000000000000000000000000}', 400, "seed must be an integer"),
        (b'{"seed": NaN}', 400, "NaN is not JSON"),
        (b"[" * 200_000, 400, "nested deeper"),
        (b'{"episode_id": "\\ud800"}', 400, "lone surrogate"),
        (b"\xff\xfe", 400, "not UTF-8"),
        (b"x" * (2**20 + 1), 413, "exceeds the limit"),
    ]:
        answer = httpx.post(f"{base}/reset", content=body, headers={"content-type": "application/json"})
        assert answer.status_code == status and reason in answer.json()["detail"], (body[:40], answer.text)
    answer = httpx.post(f"{base}/step", json={"action": {"response": "up"}})
    assert answer.status_code == 400 and "use /ws" in answer.json()["detail"]
    answer = httpx.post(f"{base}/reset", json={"seed": 4})
    assert answer.status_code == 200 and answer.json()["observation"]["text"] == episode.observations[0]
    assert httpx.get(f"{base}/metadata").json()["description"] == episode.instructions
    assert server.poll() is None, "the server died"

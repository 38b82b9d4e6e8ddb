"""`agentenvs serve` as an OpenEnv environment server, played with openenv-core's own client.

Expert episodes over the wire equal ``gym.make``'s turn by turn; sessions do not interfere; hostile
messages are refused with a reason while the session and the server keep going; a refusal never
carries the input back; idle sessions close; only the documented routes are served; a client that
vanishes mid-step is one log line. Raw clients talk to 127.0.0.1 only, in bounded loops.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import os
import re
import socket
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
from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from agentenvs.cli import build_parser  # noqa: E402
from agentenvs.integrations.openenv import (  # noqa: E402
    DEFAULT_SESSION_IDLE_S,
    MAX_ERROR_FRAME_BYTES,
    WS_FRAME_LIMIT,
    build_app,
)

from expert_episodes import Episode, expert_episode  # noqa: E402
from fixtures.app_server import free_port, serving  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SOKOBAN = "agentenvs/Sokoban-v0"
BABYAI = "agentenvs/BabyAI-v0"
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


# message text (or bytes) sent raw over /ws -> the error code and a piece of the reason (the rule it names)
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
        "VALIDATION_ERROR",
        "seed must be an integer in [0, 2**63)",
    ),
    (json.dumps({"type": "reset", "data": {"seed": 2**63}}), "VALIDATION_ERROR", "seed must be an integer"),
    (json.dumps({"type": "reset", "data": {"seed": 1.5}}), "VALIDATION_ERROR", "seed must be an integer"),
    (json.dumps({"type": "reset", "data": {"seed": True}}), "VALIDATION_ERROR", "seed must be an integer"),
    (json.dumps({"type": "reset", "data": {"seed": "7"}}), "VALIDATION_ERROR", "seed must be an integer"),
    (json.dumps({"type": "reset", "data": {"seed": -1}}), "VALIDATION_ERROR", "seed must be an integer"),
    (
        json.dumps({"type": "reset", "data": {"seed": 1, "options": {}}}),
        "VALIDATION_ERROR",
        "reset data takes only seed, task_id, episode_id; got 'options'",
    ),
    (json.dumps({"type": "reset", "data": None}), "VALIDATION_ERROR", "reset data must be an object"),
    (
        json.dumps({"type": "reset", "data": {"task_id": "nope"}}),
        "EXECUTION_ERROR",
        "malformed Sokoban task id",
    ),
    (
        json.dumps({"type": "reset", "data": {"task_id": "t" * 300}}),
        "VALIDATION_ERROR",
        "1 to 255 characters",
    ),
    (json.dumps({"type": "reset", "data": {"episode_id": ""}}), "VALIDATION_ERROR", "1 to 255 characters"),
    (json.dumps({"type": "step", "data": {"response": 5}}), "VALIDATION_ERROR", "needs a string response"),
    (json.dumps({"type": "step", "data": {"respons": "up"}}), "VALIDATION_ERROR", "got 'respons'"),
    (
        json.dumps({"type": "step", "data": {"response": "up", "metadata": []}}),
        "VALIDATION_ERROR",
        "metadata must be an object",
    ),
    (json.dumps({"type": "step"}), "VALIDATION_ERROR", "a step message needs data"),
    (json.dumps({"type": "state", "data": {}}), "VALIDATION_ERROR", "a state message holds only its type"),
    (json.dumps({"type": "fly"}), "UNKNOWN_TYPE", "unknown message type 'fly'"),
    (json.dumps({"data": {}}), "UNKNOWN_TYPE", "unknown message type None"),
    # OpenEnv's MCP messages would reach its session/create and session/close: not served here
    (
        json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}}),
        "UNKNOWN_TYPE",
        "unknown message type 'mcp'",
    ),
]

# frames built to be echoed or amplified (the issue's): each refusal must stay short and name its rule
ECHO_BAIT = [
    ({"type": "state", "note": "Q" * 900_000}, "a message takes only type, data; got 'note'"),
    (
        {"type": "state", **{f"x{index:05d}": 0 for index in range(60_000)}},
        "a message takes only type, data; got 'x00000' and 59999 more",
    ),
    ({"type": "Q" * 900_000}, "unknown message type 'QQQQ"),
    ({"type": "reset", "data": {f"k{index}": index for index in range(20_000)}}, "and 19999 more"),
    ({"type": "reset", "data": {"episode_id": "Q" * 900_000}}, "(900002 characters)"),
    ({"type": "reset", "data": {"seed": "Q" * 900_000}}, "seed must be an integer"),
    ({"type": "step", "data": {"response": "up", "Q" * 900_000: 1}}, "step data takes only response"),
    ({"type": "step", "data": {"response": ["Q" * 900_000]}}, "needs a string response, got list"),
    ({"type": "step", "data": {"response": "up", "metadata": "Q" * 900_000}}, "metadata must be an object"),
    ({"type": "state", "data": "Q" * 900_000}, "a state message holds only its type"),
]


def refusal(socket_connection: Any, frame: str | bytes) -> dict[str, Any]:
    """Send ``frame``; the reply is an error frame of at most 400 bytes holding a reason and a code alone."""
    socket_connection.send(frame)
    raw = socket_connection.recv(timeout=30)
    assert len(raw.encode("utf-8")) <= MAX_ERROR_FRAME_BYTES <= 400, (
        f"a {len(raw)}-character refusal: {raw[:200]}"
    )
    reply = json.loads(raw)
    assert reply["type"] == "error" and set(reply["data"]) == {"message", "code"}, reply
    return reply["data"]


def ws_url(url: str, path: str = "/ws") -> str:
    return url.replace("http://", "ws://") + path


@contextlib.contextmanager
def session(url: str, seed: int, wait_s: float = 15) -> Iterator[tuple[Any, Any]]:
    """openenv-core's client holding a session reset to ``seed``; while the server is full it tries again."""
    deadline = time.monotonic() + wait_s
    while True:
        with GenericEnvClient(base_url=url).sync() as client:
            try:
                first = client.reset(seed=seed)
            except RuntimeError as exc:
                assert "CAPACITY_REACHED" in str(exc) and time.monotonic() < deadline, exc
            else:
                yield client, first
                return
        time.sleep(0.1)


@contextlib.contextmanager
def uvicorn_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """uvicorn's log (where "Exception in ASGI application" goes) into caplog too: it does not propagate."""
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(caplog.handler)
    try:
        yield
    finally:
        logger.removeHandler(caplog.handler)


def docs_openenv_section() -> str:
    text = (ROOT / "docs" / "reference" / "integrations.md").read_text(encoding="utf-8")
    start = text.index("## OpenEnv: `agentenvs serve`")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


@contextlib.contextmanager
def agentenvs_serve(arguments: list[str], log_path: Path) -> Iterator[subprocess.Popen]:
    """``agentenvs ARGUMENTS`` (a serve command on 127.0.0.1 and a free port) with its stdout and stderr
    in ``log_path``, once it answers /health."""
    port = arguments[arguments.index("--port") + 1]
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "agentenvs.cli", *arguments], stdout=log, stderr=subprocess.STDOUT,
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
            yield server
        finally:
            server.terminate()
            server.wait(timeout=30)


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory) -> Iterator[tuple[subprocess.Popen, int]]:
    """The integrations page's ``agentenvs serve`` command, run as written but on a free port."""
    command = re.search(r"^agentenvs serve .*$", docs_openenv_section(), re.MULTILINE).group(0).split()
    assert command[command.index("--port") + 1] == "8000"
    port = free_port()
    command[command.index("--port") + 1] = str(port)
    with agentenvs_serve(command[1:], tmp_path_factory.mktemp("serve") / "serve.log") as server:
        yield server, port


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
    answer = httpx.post(f"{base}/reset", json={"seed": "7"})  # FastAPI would have made it 7
    assert answer.status_code == 400 and "seed must be an integer" in answer.json()["detail"]
    answer = httpx.post(f"{base}/reset", json={"seed": 4})
    assert answer.status_code == 200 and answer.json()["observation"]["text"] == episode.observations[0]
    assert httpx.get(f"{base}/metadata").json()["description"] == episode.instructions
    assert server.poll() is None, "the server died"


def test_a_refusal_never_carries_the_input_back(caplog):
    """The issue's frames (a 900 kB note; 60,000 extra keys in 650 kB) and other bait: each refusal over
    /ws, through openenv-core's client or over HTTP is at most 400 bytes and names the rule it broke."""
    episode = expert_episode(SOKOBAN, 4)
    with serving(build_app(SOKOBAN)) as url, uvicorn_errors(caplog):
        with connect(ws_url(url), max_size=WS_FRAME_LIMIT) as raw:
            for message, reason in ECHO_BAIT:
                frame = json.dumps(message)
                assert len(frame) > 200_000
                data = refusal(raw, frame)
                assert data["code"] in ("VALIDATION_ERROR", "UNKNOWN_TYPE"), data
                assert reason in data["message"], (frame[:60], data)
            raw.send(json.dumps({"type": "state"}))  # the session goes on
            assert json.loads(raw.recv(timeout=30))["type"] == "state"
        with GenericEnvClient(base_url=url).sync() as client:  # its reset kwargs and actions are the data
            with pytest.raises(
                RuntimeError, match="reset data takes only seed, task_id, episode_id"
            ) as caught:
                client.reset(seed=4, **{f"k{index}": index for index in range(20_000)})
            assert len(str(caught.value)) <= 400
            with pytest.raises(RuntimeError, match="needs a string response, got dict") as caught:
                client.step({"response": {"Q" * 900_000: 1}})
            assert len(str(caught.value)) <= 400
            play(client, episode)
        for path, body, reason in [  # FastAPI's own validation errors hold each input too
            ("/reset", {"episode_id": "Q" * 900_000}, "episode_id must be a string of 1 to 255 characters"),
            ("/reset", {"seed": 1, "note": "Q" * 900_000}, "reset data takes only seed, task_id, episode_id"),
            ("/reset", {"seed": ["Q" * 900_000]}, "seed must be an integer"),
            (
                "/step",
                {"action": {"response": "up"}, "note": "Q" * 900_000},
                "a step request takes only action",
            ),
            ("/step", {"action": {"response": 5, "z": "Q" * 900_000}}, "step data takes only response"),
            ("/step", {"action": {"response": "up"}, "request_id": "Q" * 900_000}, "body.request_id"),
        ]:
            answer = httpx.post(url + path, json=body, timeout=30)
            assert answer.status_code == 400 and len(answer.content) <= 400, (path, answer.text[:200])
            assert reason in answer.json()["detail"], (path, answer.text)
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR], caplog.text[-3000:]


def test_only_the_documented_routes_are_served_so_http_calls_cannot_take_the_sessions():
    """The issue's attack: anonymous POST /mcp openenv/session/create calls took every session slot for
    good. OpenEnv's client needs /ws alone: /mcp, /schema, /state and the API docs are not served."""
    episode = expert_episode(SOKOBAN, 4)
    with serving(build_app(SOKOBAN, max_sessions=2)) as url:
        create = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
        for _ in range(6):
            answer = httpx.post(f"{url}/mcp", json=create)
            assert answer.status_code == 404 and "session_id" not in answer.text, answer.text
        with pytest.raises(InvalidStatus), connect(ws_url(url, "/mcp"), open_timeout=10) as mcp:
            mcp.send(json.dumps(create))
        for path in ("/schema", "/docs", "/redoc", "/openapi.json", "/state", "/web"):
            assert httpx.get(url + path).status_code == 404, path
        assert httpx.get(f"{url}/health").json() == {"status": "healthy"}
        assert httpx.get(f"{url}/metadata").json()["name"] == SOKOBAN
        with GenericEnvClient(base_url=url).sync() as a, GenericEnvClient(base_url=url).sync() as b:
            play(a, episode)  # both slots are free
            play(b, episode)


def test_an_idle_session_is_closed_and_frees_its_slot(caplog):
    """A session of one slot (openenv-core's client) goes quiet: the server closes it after the idle
    time and the slot serves again; a raw client that never speaks is closed too; one that speaks within
    the idle time keeps its session."""
    caplog.set_level(logging.WARNING, logger="agentenvs.integrations.openenv")
    idle_s = 2.0
    episode = expert_episode(SOKOBAN, 4)
    app = build_app(SOKOBAN, max_sessions=1, session_idle_s=idle_s)
    with serving(app) as url, uvicorn_errors(caplog), GenericEnvClient(base_url=url).sync() as idle:
        assert_turn_matches(idle.reset(seed=4), episode, 0)
        with connect(ws_url(url)) as probe:  # the idle client's session holds the one slot
            assert "CAPACITY_REACHED" in probe.recv(timeout=30)
        deadline = time.monotonic() + 20
        while True:  # a silent client gets the slot once the idle session is closed, then is closed too
            with connect(ws_url(url)) as silent:
                try:
                    frame = silent.recv(timeout=10)
                except ConnectionClosed as closed:
                    assert closed.rcvd is not None and closed.rcvd.code == 1000, closed
                    assert f"session idle for more than {idle_s:g} s" in closed.rcvd.reason
                    break
            assert "CAPACITY_REACHED" in frame and time.monotonic() < deadline, frame
            time.sleep(0.1)
        with pytest.raises(ConnectionClosed):
            idle.step({"response": episode.responses[0]})
        with session(url, seed=4) as (busy, first):  # a message within the idle time keeps a session open
            assert_turn_matches(first, episode, 0)
            for _ in range(4):
                time.sleep(idle_s / 4)
                assert busy.state()["env_id"] == SOKOBAN
            for turn, response in enumerate(episode.responses, start=1):
                time.sleep(idle_s / 4)
                assert_turn_matches(busy.step({"response": response}), episode, turn)
    idle_lines = [
        record for record in caplog.records if f"no message for {idle_s:g} s" in record.getMessage()
    ]
    assert len(idle_lines) == app.idle_closed == 2, [record.getMessage() for record in idle_lines]
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR], caplog.text[-3000:]


def test_the_idle_timeout_is_on_by_default_and_documented():
    served = docs_openenv_section()
    cli_default = build_parser().parse_args(["serve", SOKOBAN]).session_idle_s
    assert DEFAULT_SESSION_IDLE_S == cli_default == 600
    assert inspect.signature(build_app).parameters["session_idle_s"].default == DEFAULT_SESSION_IDLE_S
    assert "`--session-idle-s`" in served and "(default 600)" in served
    cli_page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    assert "--session-idle-s" in cli_page
    for route in ("`/ws`", "`/health`", "`/metadata`", "`/reset`", "`/step`"):
        assert route in served, route
    assert re.search(r"`/mcp`.*`/schema`.*`/docs`.*not served", served, re.DOTALL)


def test_a_client_that_vanishes_mid_step_is_one_log_line(tmp_path):
    """The issue's server (BabyAI, six sessions): five clients each vanish right after sending a step,
    without a close frame. Its log holds one line per client and no traceback; it keeps serving."""
    pytest.importorskip("minigrid", reason="BabyAI needs the babyai extra: CI's OpenEnv lane installs it")
    port = free_port()
    log_path = tmp_path / "serve.log"
    arguments = ["serve", BABYAI, "--port", str(port), "--max-sessions", "6"]
    with agentenvs_serve(arguments, log_path) as server:
        for seed in range(5):
            with connect(f"ws://127.0.0.1:{port}/ws") as doomed:
                doomed.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
                assert json.loads(doomed.recv(timeout=30))["type"] == "observation"
                doomed.send(json.dumps({"type": "step", "data": {"response": "<action>go forward</action>"}}))
                doomed.socket.shutdown(socket.SHUT_RDWR)  # gone before the reply, with no close frame
        deadline = time.monotonic() + 15
        while log_path.read_text().count("went away") < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        with GenericEnvClient(base_url=f"http://127.0.0.1:{port}").sync() as client:
            assert client.reset(seed=0).observation["text"]
        assert server.poll() is None, "the server died"
    log = log_path.read_text()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]
    gone = [line for line in log.splitlines() if "went away" in line]
    assert len(gone) == 5 and all(line.startswith("WARNING:") for line in gone), log[-3000:]

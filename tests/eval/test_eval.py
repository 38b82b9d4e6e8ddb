"""agentenvs eval: a chat model on a fixed panel, concurrently, resumable, into a valid bundle."""

from __future__ import annotations

import json
import threading
import time

import gymnasium as gym
import pytest

from agentenvs.cli import main
from agentenvs.core.chat import ChatClient, ChatError, ChatReply
from agentenvs.eval.bundle import BundleError, read_bundle
from agentenvs.eval.evaluate import run_eval
from agentenvs.eval.panel import PANELS, PanelSpec, env_panel
from agentenvs.eval.statistics import summarize
from leaderboard.verify import verify_submission

from fixtures.openai_server import FakeOpenAIServer

ENV_IDS = ["agentenvs/Sokoban-v0", "agentenvs/TextCraft-v0"]
SMOKE = PANELS["smoke"]


def first_admissible_or_left(body: dict) -> str:
    """A deterministic policy reading the prompt: the first listed action, else a Sokoban move."""
    last = body["messages"][-1]["content"]
    if "Admissible actions: " in last:
        return f"<action>{last.split('Admissible actions: ')[1].split(', ')[-1]}</action>"
    return "<action>get 1 stick</action>"


class ScriptedChat:
    """A chat backend in-process: fixed reply, optional failures, counts calls and calls in flight."""

    def __init__(
        self, reply: str = "<action>left</action>", fail_task: str | None = None, delay_s: float = 0.0
    ):
        self.reply, self.fail_task, self.delay_s = reply, fail_task, delay_s
        self.calls = 0
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()

    def complete(self, messages, **request):
        with self.lock:
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay_s)
            if self.fail_task is not None and self.fail_task in messages[1]["content"]:
                raise ChatError("the endpoint gave no usable answer")
            return ChatReply(self.reply, "stop", 10, 3, 1)
        finally:
            with self.lock:
                self.in_flight -= 1


def test_eval_plays_the_panel_through_an_endpoint_into_a_bundle_that_verifies(tmp_path):
    with FakeOpenAIServer(reply=first_admissible_or_left) as server:
        client = ChatClient(server.base_url, "fake-model", max_retries=0)
        report = run_eval(
            ENV_IDS, client, tmp_path, spec=SMOKE, model="fake-model", model_size="1B", concurrency=4
        )
        requests = list(server.requests)
    assert report.played == 6 and not report.crashed and report.skipped == 0
    assert report.model_s > 0 and report.env_s > 0
    document = read_bundle(tmp_path)
    episodes = document["episodes"]
    assert sorted((e["env_id"], e["task_id"], e["seed"]) for e in episodes) == sorted(
        e.key for env_id in ENV_IDS for e in env_panel(env_id, SMOKE).episodes
    )
    assert sum(e["turns"] for e in episodes) == len(requests)  # one request per turn, nothing else
    for episode in episodes:
        assert episode["prompt_tokens"] > 0 and episode["completion_tokens"] > 0
        assert episode["model_s"] > 0 and episode["env_s"] > 0
    sokoban = gym.make(ENV_IDS[0], split="test").unwrapped
    assert any(r["messages"][0] == {"role": "system", "content": sokoban.instructions} for r in requests)
    assert document["metadata"]["model"] == "fake-model" and document["metadata"]["model_size"] == "1B"
    assert document["summary"] == summarize(episodes)
    verdict = verify_submission(document)
    assert verdict.verified, verdict.problems


def test_no_more_episodes_in_flight_than_the_concurrency(tmp_path):
    backend = ScriptedChat(delay_s=0.02)
    run_eval(ENV_IDS, backend, tmp_path, spec=SMOKE, model="m", concurrency=2)
    assert backend.max_in_flight == 2


def test_a_crashed_episode_is_reported_not_written_and_resume_plays_only_what_is_missing(tmp_path):
    failing_task = env_panel(ENV_IDS[1], SMOKE).episodes[0]
    goal = (
        gym.make(ENV_IDS[1], split="test")
        .reset(options={"task_id": failing_task.task_id})[0]
        .split("Goal:")[1]
    )
    broken = ScriptedChat(fail_task=goal)
    report = run_eval(ENV_IDS, broken, tmp_path, spec=SMOKE, model="m", concurrency=3)
    assert [episode for episode, _ in report.crashed] == [failing_task]
    assert "ChatError" in report.crashed[0][1] and report.summary is None
    assert not (tmp_path / "summary.json").exists()
    written = (tmp_path / "episodes.jsonl").read_text().splitlines()
    assert len(written) == 5
    # a crash in the middle of writing a line leaves a torn line: resume drops it and plays that episode again
    (tmp_path / "episodes.jsonl").write_text("\n".join(written[:4]) + "\n" + written[4][:30])
    healthy = ScriptedChat()
    resumed = run_eval(ENV_IDS, healthy, tmp_path, spec=SMOKE, model="m", concurrency=3)
    assert resumed.skipped == 4 and resumed.played == 2 and not resumed.crashed
    assert healthy.calls == sum(e["turns"] for e in read_bundle(tmp_path)["episodes"][4:])
    assert len(read_bundle(tmp_path)["episodes"]) == 6


def test_resume_refuses_another_model_or_panel(tmp_path):
    run_eval(ENV_IDS[:1], ScriptedChat(), tmp_path, spec=SMOKE, model="m", concurrency=1)
    with pytest.raises(BundleError, match="model"):
        run_eval(ENV_IDS[:1], ScriptedChat(), tmp_path, spec=SMOKE, model="other", concurrency=1)
    with pytest.raises(BundleError, match="panel_digest"):
        run_eval(ENV_IDS, ScriptedChat(), tmp_path, spec=SMOKE, model="m", concurrency=1)
    with pytest.raises(BundleError, match="panel_digest"):
        run_eval(ENV_IDS[:1], ScriptedChat(), tmp_path, spec=PanelSpec("smoke", "test", 2), model="m")


def test_failing_requests_are_retried_by_the_client(tmp_path):
    with FakeOpenAIServer(reply=lambda body: "<action>up</action>", fail_first=2) as server:
        client = ChatClient(server.base_url, "m", max_retries=3, backoff_s=0.0)
        report = run_eval(ENV_IDS[:1], client, tmp_path, spec=SMOKE, model="m", concurrency=1)
        assert len(server.requests) == sum(e["turns"] for e in read_bundle(tmp_path)["episodes"]) + 2
    assert not report.crashed and report.played == 3


def test_bundle_lines_are_validated_on_read(tmp_path):
    run_eval(ENV_IDS[:1], ScriptedChat(), tmp_path, spec=SMOKE, model="m", concurrency=1)
    path = tmp_path / "episodes.jsonl"
    lines = path.read_text().splitlines()
    edited = json.loads(lines[1])
    edited["score"] = "1.0"
    path.write_text("\n".join([lines[0], json.dumps(edited), lines[2]]) + "\n")
    with pytest.raises(BundleError, match=r"episodes.jsonl:2: episode: data.score must be number"):
        read_bundle(tmp_path)
    del edited["score"]
    path.write_text("\n".join([lines[0], json.dumps(edited)]) + "\n")
    with pytest.raises(BundleError, match=r"episodes.jsonl:2: episode: data must contain .*'score'"):
        read_bundle(tmp_path)


def test_summary_intervals_are_deterministic_and_bracket_the_mean():
    episodes = [
        {
            "env_id": env_id,
            "task_id": f"t{k}",
            "seed": k,
            "success": k % 3 == 0,
            "score": k / 10,
            "turns": 2,
            "prompt_tokens": 5,
            "completion_tokens": 1,
        }
        for env_id in ENV_IDS
        for k in range(10)
    ]
    summary = summarize(episodes)
    assert summary == summarize(list(reversed(episodes)))
    for entry in [*summary["envs"].values(), summary["overall"]]:
        for metric in ("success", "score"):
            interval = entry[metric]
            assert (
                interval["low"] <= interval["mean"] <= interval["high"] and interval["low"] < interval["high"]
            )
    assert summary["envs"][ENV_IDS[0]]["score"]["mean"] == pytest.approx(0.45)
    assert summary["envs"][ENV_IDS[0]]["prompt_tokens"] == 50


def test_eval_command_runs_resumes_and_prints_the_summary(tmp_path, capsys):
    out = tmp_path / "bundle"
    with FakeOpenAIServer(reply=lambda body: "<action>down</action>") as server:
        args = ["eval", "Sokoban-v0", "--model", "fake", "--base-url", server.base_url, "--panel", "smoke"]
        assert main([*args, "--out", str(out), "--concurrency", "2"]) == 0
        printed = capsys.readouterr().out
        assert "3 episodes played, 0 already" in printed and "agentenvs/Sokoban-v0" in printed
        assert main([*args, "--out", str(out)]) == 0
        assert "0 episodes played, 3 already" in capsys.readouterr().out
        assert main([*args, "--out", str(out), "--panel", "nope"]) == 2
        assert main(["eval", "Sokoban-v0", "--model", "fake", "--panel", "smoke"]) == 2  # no endpoint
    assert read_bundle(out)["metadata"]["endpoint"] == "openai"


def test_an_interrupted_eval_stops_starting_episodes_and_resumes(tmp_path):
    class Interrupting(ScriptedChat):
        def complete(self, messages, **request):
            if self.calls == 4:
                raise KeyboardInterrupt
            return super().complete(messages, **request)

    interrupting = Interrupting()
    with pytest.raises(KeyboardInterrupt):
        run_eval(ENV_IDS, interrupting, tmp_path, spec=SMOKE, model="m", concurrency=1)
    assert interrupting.calls == 4  # nothing ran after the interrupt
    resumed = run_eval(ENV_IDS, ScriptedChat(), tmp_path, spec=SMOKE, model="m", concurrency=1)
    assert resumed.skipped + resumed.played == 6 and len(read_bundle(tmp_path)["episodes"]) == 6

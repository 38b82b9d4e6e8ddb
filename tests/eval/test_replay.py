"""The one episode record and the one replay: JSON form, tolerance, batching, resume, hostile lines, no
shims."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
from pathlib import Path

import gymnasium as gym
import pytest

import agentenvs
from agentenvs.cli import main
from agentenvs.core.chat import ChatReply
from agentenvs.eval.bundle import USAGE_FIELDS, BundleError, validate
from agentenvs.eval.episodes import EpisodeRecord, play_episode
from agentenvs.eval.evaluate import run_eval
from agentenvs.eval.panel import PANELS
from agentenvs.eval.replay import replay_records
from agentenvs.eval.statistics import ABSOLUTE_TOLERANCE, RELATIVE_TOLERANCE, same_number

from fixtures.openai_server import FakeOpenAIServer

SOKOBAN = "agentenvs/Sokoban-v0"
PACKAGE = Path(agentenvs.__file__).parent


@pytest.fixture(scope="module")
def records() -> list[EpisodeRecord]:
    env = gym.make(SOKOBAN, disable_env_checker=True)
    played = [
        play_episode(env, agent, seed=seed, env_id=SOKOBAN, env_kwargs={})
        for seed, agent in enumerate(["random", "expert"] * 3)
    ]
    env.close()
    return played


def fresh(records: list[EpisodeRecord]) -> list[EpisodeRecord]:
    """Copies read back from their JSON form, so a test may edit them."""
    return [EpisodeRecord.from_json(record.to_json()) for record in records]


# ------------------------------------------------------------------ the record
def test_a_scripted_record_is_a_bundle_episode_and_reads_back_equal(records):
    for record in records:
        line = record.to_json()
        validate("episode", line)
        assert EpisodeRecord.from_json(line, kind="episode") == record
        assert line["turns"] == record.turns and line["return"] == record.episode_return
        assert line["end_reason"] in ("terminated", "truncated") and line["prompt_tokens"] == 0


def test_a_scripted_episode_gives_the_same_record_byte_for_byte(records):
    env = gym.make(SOKOBAN, disable_env_checker=True)
    again = play_episode(env, "random", seed=0, env_id=SOKOBAN, env_kwargs={})
    assert json.dumps(again.to_json()) == json.dumps(records[0].to_json())


def test_env_kwargs_make_a_results_record_but_never_a_bundle_episode(records):
    line = dataclasses.replace(records[0], env_kwargs={"max_turns": 5}).to_json()
    assert EpisodeRecord.from_json(line, kind="record").env_kwargs == {"max_turns": 5}
    with pytest.raises(BundleError, match="episode: data.env_kwargs must contain less than or equal to 0"):
        EpisodeRecord.from_json(line, kind="episode")


def test_a_results_line_written_before_the_usage_fields_still_reads_and_replays(records):
    line = records[1].to_json()
    for name in (*USAGE_FIELDS, "end_reason"):
        del line[name]
    old = EpisodeRecord.from_json(line, kind="record")
    assert old.prompt_tokens == 0 and old.end_reason is None
    assert replay_records([old])[0].problems == []
    with pytest.raises(BundleError, match="episode: data must contain .*'prompt_tokens'"):
        EpisodeRecord.from_json(line, kind="episode")


# ------------------------------------------------------------------ the tolerance
@pytest.mark.parametrize(
    ("recorded", "recomputed", "same"),
    [
        (1.0, 1.0 + 1e-10, True),  # inside 1e-9 relative
        (1.0, 1.0 + 1e-8, False),
        (0.0, 1e-13, True),  # inside 1e-12 absolute, where relative means nothing
        (0.0, 1e-11, False),
        (-0.0, 0.0, True),
        (None, None, True),
        (None, 0.0, False),
        ("ab" * 16, "ab" * 16, True),  # keys compare exactly
        ("ab" * 16, "AB" * 16, False),
    ],
)
def test_the_tolerance_rule(recorded, recomputed, same):
    assert same_number(recorded, recomputed) is same
    assert same_number(recomputed, recorded) is same


def test_the_replay_applies_the_tolerance_to_rewards(records):
    nudged, edited = fresh(records[:1]), fresh(records[:1])
    nudged[0].rewards[0] *= 1 + 1e-12
    edited[0].rewards[0] += 1e-6
    assert replay_records(nudged)[0].problems == []
    assert replay_records(edited)[0].problems[0].startswith("rewards differ from turn 0: ")


# ------------------------------------------------------------------ the replay
def test_batches_give_what_one_at_a_time_gives_and_problems_stay_with_their_record(records):
    batch = fresh(records)
    batch[2].responses[0] = "<action>push the wall</action>"
    batch[4] = dataclasses.replace(batch[4], task_id="nope")
    alone = replay_records(batch, batch=1)
    together = replay_records(batch, batch=len(batch))
    assert [r.problems for r in alone] == [r.problems for r in together]
    assert [r.transcript for r in alone] == [r.transcript for r in together]
    assert [bool(r.problems) for r in together] == [False, False, True, False, True, False]
    assert together[4].problems == [together[4].problems[0]]
    assert together[4].problems[0].startswith("the reset raised UnknownTaskError: malformed Sokoban task id")
    # the transcript is what the env said: the edited response beside the observation it answered
    first = together[2].transcript[0]
    assert first["response"] == "<action>push the wall</action>" and "#" in first["observation"]
    assert len(together[0].transcript) == records[0].turns + 1


def test_a_claimed_turn_count_or_return_that_does_not_follow_is_a_problem(records):
    line = records[1].to_json()
    line["turns"] += 1
    line["return"] += 1.0
    problems = replay_records([EpisodeRecord.from_json(line)])[0].problems
    assert f"turns {line['turns']}, but {records[1].turns} responses" in problems
    assert any(problem.startswith(f"return {line['return']!r}, replayed ") for problem in problems)


def test_the_replay_checks_how_each_episode_ended(records):
    """A record's end_reason is the flag the env raised on its last turn; an overflow claims a running env."""
    flipped = {"terminated": "truncated", "truncated": "terminated"}
    edited = fresh(records[:2])
    ends = [record.end_reason for record in edited]
    assert sorted(ends) == ["terminated", "truncated"]  # random runs out of turns, the expert solves
    for record in edited:
        record.end_reason = flipped[record.end_reason]
    for end, replayed in zip(ends, replay_records(edited), strict=True):
        claim = flipped[end]
        assert replayed.problems == [f"recorded {claim}=True (end_reason {claim!r}), the replay ended {end}"]
    overflowed = fresh(records[1:2])
    overflowed[0].end_reason = "context_overflow"
    assert replay_records(overflowed)[0].problems[0] == (
        f"recorded end_reason 'context_overflow' (the env still running), the replay ended {ends[1]}"
    )
    unknown = fresh(records[:2])
    for record in unknown:
        record.end_reason = None  # a results line older than end_reason claims nothing
    assert [replayed.problems for replayed in replay_records(unknown)] == [[], []]


def test_an_env_that_cannot_be_built_is_a_problem_of_each_of_its_records(records):
    broken = [dataclasses.replace(record, env_kwargs={"no_such_kwarg": 1}) for record in records[:2]]
    replays = replay_records([*broken, records[2]])
    assert [r.problems[0].split(":")[0] for r in replays[:2]] == ["the env cannot be built"] * 2
    assert "no_such_kwarg" in replays[0].problems[0] and replays[2].problems == []


def test_replay_reports_each_record_as_its_batch_ends(records, monkeypatch):
    from agentenvs.eval import replay

    log: list[object] = []
    chunk = replay._replay_chunk

    def logged_chunk(*args):
        log.append("batch starts")
        return chunk(*args)

    monkeypatch.setattr(replay, "_replay_chunk", logged_chunk)
    replay_records(fresh(records), batch=4, on_replayed=lambda index, replayed: log.append(index))
    assert log == ["batch starts", 0, 1, 2, 3, "batch starts", 4, 5]


def test_a_bad_backend_is_the_caller_s_error_not_each_record_s(records):
    with pytest.raises(ValueError, match="unknown backend 'threads'"):
        replay_records(records, backend="threads")
    with pytest.raises(ValueError, match="num_workers must be >= 1"):
        replay_records(records, backend="subprocess", num_workers=0)


# ------------------------------------------------------------------ eval's resume
class FixedReply:
    def complete(self, messages, **request):
        return ChatReply("<action>left</action>", "stop", 10, 3, 1)


def test_eval_resume_replays_what_the_bundle_holds_and_names_an_edited_episode(tmp_path):
    smoke = PANELS["smoke"]
    run_eval([SOKOBAN], FixedReply(), tmp_path, spec=smoke, model="m", concurrency=1)
    shown: list[object] = []
    resumed = run_eval(
        [SOKOBAN],
        FixedReply(),
        tmp_path,
        spec=smoke,
        model="m",
        concurrency=1,
        on_resume=lambda finished: shown.append(("replaying", finished)),
        on_replayed=lambda index, replayed: shown.append((index, replayed.reproduced)),
    )
    assert resumed.skipped == 3 and resumed.played == 0
    assert shown == [("replaying", 3), (0, True), (1, True), (2, True)]
    path = tmp_path / "episodes.jsonl"
    lines = path.read_text().splitlines()
    edited = json.loads(lines[1])
    edited["responses"][0] = "<action>up</action>"
    path.write_text("\n".join([lines[0], json.dumps(edited), lines[2]]) + "\n")
    with pytest.raises(
        BundleError, match=r"episodes.jsonl: episode 2 \(agentenvs/Sokoban-v0 .*does not replay"
    ):
        run_eval([SOKOBAN], FixedReply(), tmp_path, spec=smoke, model="m", concurrency=1)


def test_the_eval_command_refuses_to_resume_onto_an_edited_episode(tmp_path, capsys):
    with FakeOpenAIServer(reply=lambda body: "<action>left</action>") as server:
        command = ["eval", "Sokoban-v0", "--model", "m", "--base-url", server.base_url, "--panel", "smoke"]
        assert main([*command, "--out", str(tmp_path)]) == 0
        path = tmp_path / "episodes.jsonl"
        lines = path.read_text().splitlines()
        edited = json.loads(lines[2])
        edited["rewards"][0] += 0.5
        edited["return"] += 0.5
        path.write_text("\n".join([*lines[:2], json.dumps(edited)]) + "\n")
        capsys.readouterr()
        assert main([*command, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "episodes.jsonl: episode 3" in err and "does not replay: rewards differ from turn 0" in err


# ------------------------------------------------------------------ hostile results files
HOSTILE_LINES = {
    "lone surrogate": (
        lambda line: line.replace('"responses": ["', '"responses": ["\\ud800'),
        "not valid Unicode",
    ),
    "float seed": (lambda line: line.replace('"seed": 0,', '"seed": 0.0,'), "is not an exact integer"),
    "huge seed": (lambda line: line.replace('"seed": 0,', f'"seed": {10**30},'), "data.seed must be smaller"),
    "NaN reward": (lambda line: line.replace('"rewards": [', '"rewards": [NaN, '), "NaN is not JSON"),
    "1e999": (lambda line: line.replace('"score": ', '"score": 1e999, "x": '), "out of range"),
    "zero-width agent": (
        lambda line: line.replace('"agent": "random"', '"agent": "ran\\u200bdom"'),
        "U+200B",
    ),
    "nested": (lambda line: "[" * 200_000 + "]" * 200_000, "RecursionError"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_LINES))
def test_hostile_results_lines_exit_2_with_a_reason(name, records, tmp_path, capsys):
    edit, reason = HOSTILE_LINES[name]
    line = json.dumps(records[0].to_json())
    hostile = edit(line)
    assert hostile != line
    path = tmp_path / "hostile.jsonl"
    path.write_text(line + "\n" + hostile + "\n", encoding="utf-8", errors="surrogatepass")
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentenvs: error: ") and "hostile.jsonl:2" in err and reason in err, err


def test_free_form_env_kwargs_nested_past_the_recursion_limit_are_refused(records):
    deep: list = []
    for _ in range(5_000):  # json.loads stops near 1,000 levels; a caller's own object need not
        deep = [deep]
    line = dataclasses.replace(records[0], env_kwargs={"a": deep}).to_json()
    with pytest.raises(BundleError, match="record: nested too deeply to check"):
        EpisodeRecord.from_json(line, kind="record")


def test_an_env_error_quoting_huge_kwargs_is_cut_to_a_readable_problem(records):
    line = dataclasses.replace(records[0], env_kwargs={"a": "x" * 100_000})
    [problem] = replay_records([line])[0].problems
    assert problem.startswith("the env cannot be built: TypeError") and len(problem) <= 400


def test_replay_in_worker_processes_reports_what_in_process_replay_reports(records, tmp_path, capsys):
    lines = [record.to_json() for record in records]
    lines[3]["rewards"][-1] += 0.5
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    reports = []
    for backend in (["--backend", "inprocess"], ["--backend", "subprocess", "--workers", "2"]):
        assert main(["replay", str(path), *backend]) == 1
        captured = capsys.readouterr()
        assert "1 mismatched" in captured.out
        reports.append(sorted(line for line in captured.err.splitlines() if "results.jsonl:" in line))
    assert reports[0] == reports[1] and len(reports[0]) == 1 and "results.jsonl:4" in reports[0][0]
    assert main(["replay", str(path), "--backend", "subprocess", "--workers", "0"]) == 2


def test_a_short_id_in_a_results_file_replays(records, tmp_path, capsys):
    line = records[0].to_json()
    line["env_id"] = "Sokoban-v0"
    path = tmp_path / "short.jsonl"
    path.write_text(json.dumps(line) + "\n")
    assert main(["replay", str(path)]) == 0 and "all match" in capsys.readouterr().out


# ------------------------------------------------------------------ layout
def test_the_eval_modules_left_agents_without_a_shim():
    for name in ("panel", "bundle", "evaluate", "episodes", "data_check", "replay"):
        assert importlib.util.find_spec(f"agentenvs.eval.{name}") is not None
        assert importlib.util.find_spec(f"agentenvs.agents.{name}") is None
    for name in ("scripted", "local", "openai_server"):
        assert (PACKAGE / "agents" / f"{name}.py").is_file()


def test_the_command_line_page_states_the_one_tolerance():
    page = " ".join((PACKAGE.parent / "docs" / "reference" / "cli.md").read_text(encoding="utf-8").split())
    match = re.search(r"within 1e-(\d+) relative \(1e-(\d+) absolute\)", page)
    assert match is not None
    assert (10.0 ** -int(match[1]), 10.0 ** -int(match[2])) == (RELATIVE_TOLERANCE, ABSOLUTE_TOLERANCE)

"""How every episode ended is checked against the replay: terminated, truncated and the end reason.

Each tampered flag goes through the board's two entries, ``leaderboard
verify`` and the HTTP upload, and is refused with its reason.
"""

from __future__ import annotations

import copy
import json

import pytest
from fastapi.testclient import TestClient

from agentenvs.eval.panel import PANELS
from leaderboard.app import create_app
from leaderboard.cli import main
from leaderboard.seed import scripted_document
from leaderboard.store import Store
from leaderboard.verify import verify_submission

SOKOBAN = "agentenvs/Sokoban-v0"
TOKEN = "upload-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def truncating():
    """The random agent: every smoke episode runs out of turns (truncated)."""
    document = scripted_document([SOKOBAN], "random", PANELS["smoke"])
    assert {episode["end_reason"] for episode in document["episodes"]} == {"truncated"}
    return document


@pytest.fixture(scope="module")
def terminating():
    """The expert: every smoke episode is solved (terminated)."""
    document = scripted_document([SOKOBAN], "expert", PANELS["smoke"])
    assert {episode["end_reason"] for episode in document["episodes"]} == {"terminated"}
    return document


def with_end(document, number, end_reason):
    document = copy.deepcopy(document)
    if end_reason is None:
        del document["episodes"][number]["end_reason"]
    else:
        document["episodes"][number]["end_reason"] = end_reason
    return document


def with_flag(document, number, name, value):
    """``name`` (``terminated`` or ``truncated``) of one episode set to ``value``, or left out (None)."""
    document = copy.deepcopy(document)
    if value is None:
        del document["episodes"][number][name]
    else:
        document["episodes"][number][name] = value
    return document


def refused_by_both_entries(tmp_path, capsys, document, reason):
    """``leaderboard verify`` exits 1 naming ``reason``; the upload ends rejected with it."""
    path = tmp_path / "submission.json"
    path.write_text(json.dumps(document))
    assert main(["verify", str(path)]) == 1
    assert reason in capsys.readouterr().out
    app = create_app(Store(tmp_path / "board.sqlite"), [TOKEN])
    client = TestClient(app)
    reply = client.post("/submissions", json=document, headers=AUTH)
    assert reply.status_code == 202, reply.text
    app.state.worker.wait_idle()
    status = client.get(f"/submissions/{reply.json()['id']}/status").json()
    assert status["status"] == "rejected" and any(reason in problem for problem in status["problems"]), status


def test_the_honest_ends_verify(truncating, terminating):
    assert verify_submission(truncating).verified and verify_submission(terminating).verified


def test_the_records_hold_the_envs_own_flags(truncating, terminating):
    assert {(e["terminated"], e["truncated"]) for e in truncating["episodes"]} == {(False, True)}
    assert {(e["terminated"], e["truncated"]) for e in terminating["episodes"]} == {(True, False)}


@pytest.mark.parametrize("name", ["terminated", "truncated"])
def test_each_flipped_flag_is_refused_naming_it(tmp_path, capsys, truncating, terminating, name):
    for document in (truncating, terminating):
        number = 1
        recorded = not document["episodes"][number][name]
        forged = with_flag(document, number, name, recorded)
        turn = document["episodes"][number]["turns"] - 1
        refused_by_both_entries(
            tmp_path,
            capsys,
            forged,
            f"recorded {name}={recorded}, the replay's env returned {name}={not recorded} on turn {turn}",
        )


@pytest.mark.parametrize("name", ["terminated", "truncated"])
def test_an_episode_without_a_flag_is_refused(tmp_path, capsys, terminating, name):
    refused_by_both_entries(
        tmp_path, capsys, with_flag(terminating, 0, name, None), f"no {name}; every episode on the board"
    )


def test_a_changed_end_reason_naming_the_other_flag_is_refused(tmp_path, capsys, truncating):
    forged = with_end(truncating, 2, "terminated")  # recorded terminated=True; the env truncated
    task = forged["episodes"][2]["task_id"]
    refused_by_both_entries(
        tmp_path,
        capsys,
        forged,
        f"episode 2 ({SOKOBAN} task {task}): recorded terminated=True (end_reason 'terminated'), "
        "the replay ended truncated",
    )


def test_an_end_reason_changed_to_truncated_is_refused(tmp_path, capsys, terminating):
    forged = with_end(terminating, 1, "truncated")  # recorded truncated=True; the env terminated
    refused_by_both_entries(
        tmp_path,
        capsys,
        forged,
        "recorded truncated=True (end_reason 'truncated'), the replay ended terminated",
    )


def test_a_changed_end_reason_is_refused(tmp_path, capsys, terminating):
    forged = with_end(terminating, 0, "context_overflow")  # claims the env was still running
    refused_by_both_entries(
        tmp_path,
        capsys,
        forged,
        "recorded end_reason 'context_overflow' (the env still running), the replay ended terminated",
    )


def test_an_episode_that_does_not_say_how_it_ended_is_refused(tmp_path, capsys, terminating):
    refused_by_both_entries(
        tmp_path, capsys, with_end(terminating, 0, None), "no end_reason; every episode on the board records"
    )


def test_only_the_tampered_episode_is_named(truncating):
    problems = verify_submission(with_end(truncating, 1, "terminated")).problems
    assert len(problems) == 1 and problems[0].startswith("episode 1 ")

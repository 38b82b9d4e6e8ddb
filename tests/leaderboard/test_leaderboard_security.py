"""Attacks on the leaderboard, one test each: every one is rejected or rendered inert."""

from __future__ import annotations

import copy
import json
import sqlite3

import pytest
from fastapi.testclient import TestClient

from agentenvs.eval.panel import PANELS
from agentenvs.eval.statistics import summarize
from leaderboard.app import Limits, create_app
from leaderboard.pages import board_page, submission_page
from leaderboard.seed import scripted_document
from leaderboard.store import Store
from leaderboard.verify import verify_submission

ENV_IDS = ["agentenvs/Sokoban-v0", "agentenvs/TextCraft-v0"]
TOKEN = "upload-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HOSTILE_NAME = (
    '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">\'); DROP TABLE submissions;--'
)


@pytest.fixture(scope="module")
def honest():
    return scripted_document(ENV_IDS, "expert", PANELS["smoke"])


@pytest.fixture
def attack(honest):
    return copy.deepcopy(honest)


def rejected_for(document, phrase):
    verdict = verify_submission(document)
    assert not verdict.verified, "the attack was accepted"
    assert any(phrase in problem for problem in verdict.problems), verdict.problems
    return verdict


def resummarized(document):
    document["summary"] = summarize(document["episodes"])
    return document


def test_the_honest_submission_verifies(honest):
    assert verify_submission(honest).verified


def test_forged_summary_is_rejected(attack):
    attack["summary"]["envs"]["agentenvs/Sokoban-v0"]["success"]["mean"] = 1.0
    attack["summary"]["overall"]["score"]["mean"] = 0.99
    rejected_for(attack, "summary does not follow from the episodes")


def test_edited_response_is_rejected(attack):
    episode = attack["episodes"][0]
    episode["responses"][0] = "<action>up || up || up</action>"
    rejected_for(resummarized(attack), "differ from turn")


def test_edited_rewards_and_outcome_are_rejected(attack):
    failed = attack["episodes"][1]
    failed["rewards"] = [reward + 0.5 for reward in failed["rewards"]]
    failed["return"] = sum(failed["rewards"])
    rejected_for(resummarized(attack), "rewards differ from turn 0")


def test_claimed_success_the_replay_does_not_reach_is_rejected():
    document = scripted_document(ENV_IDS[:1], "random", PANELS["smoke"])
    loser = next(e for e in document["episodes"] if not e["success"])
    loser["success"], loser["score"] = True, 1.0
    rejected_for(resummarized(document), "success True, replayed False")


def test_missing_episode_is_rejected(attack):
    del attack["episodes"][2]
    rejected_for(resummarized(attack), "is missing")


def test_duplicated_episode_is_rejected(attack):
    attack["episodes"][2] = copy.deepcopy(attack["episodes"][0])
    rejected_for(resummarized(attack), "appears more than once")


def test_episode_off_the_panel_is_rejected(attack):
    attack["episodes"][0]["seed"] = 1000
    rejected_for(resummarized(attack), "is not on the panel")


def test_truncated_episode_is_rejected(attack):
    long = next(e for e in attack["episodes"] if e["turns"] > 1)
    for name in ("responses", "rewards"):
        long[name] = long[name][:-1]
    for name in ("obs_keys", "state_keys"):
        long[name] = long[name][:-1]
    long["turns"] -= 1
    rejected_for(resummarized(attack), "had not ended")


def test_panel_of_another_version_is_rejected(attack):
    attack["metadata"]["env_digests"]["agentenvs/Sokoban-v0"] = "0" * 32
    rejected_for(attack, "is not this version's")
    attack["metadata"]["panel"] = "yesterday"
    rejected_for(attack, "unknown panel")


def test_envs_outside_agentenvs_are_rejected(attack):
    attack["metadata"]["env_digests"]["CartPole-v1"] = "0" * 32
    rejected_for(attack, "'CartPole-v1' is not an agentenvs env id")


def test_panel_digest_that_does_not_match_the_envs_is_rejected(attack):
    attack["metadata"]["panel_digest"] = "f" * 32
    rejected_for(attack, "panel digest does not match")


def test_malformed_document_is_rejected(attack):
    attack["episodes"][0]["score"] = 7
    rejected_for(attack, "schema")
    assert not verify_submission({"metadata": {}, "episodes": []}).verified
    assert not verify_submission("not even an object").verified


# ------------------------------------------------------------------ the app
@pytest.fixture
def app(tmp_path):
    return create_app(
        Store(tmp_path / "board.sqlite"), [TOKEN], Limits(max_bytes=200_000, uploads_per_window=3)
    )


def test_upload_without_a_token_is_refused(app, honest):
    assert TestClient(app).post("/submissions", json=honest).status_code == 401


def test_upload_with_a_wrong_token_is_refused(app, honest):
    reply = TestClient(app).post("/submissions", json=honest, headers={"Authorization": "Bearer guess"})
    assert reply.status_code == 403
    assert (
        TestClient(app).post("/submissions", json=honest, headers={"Authorization": TOKEN}).status_code == 401
    )


def test_oversized_upload_is_refused_before_parsing(app):
    client = TestClient(app)
    assert client.post("/submissions", content=b"x" * 200_001, headers=AUTH).status_code == 413

    def chunks():  # no Content-Length: the limit is enforced while reading
        for _ in range(30):
            yield b" " * 10_000

    assert client.post("/submissions", content=chunks(), headers=AUTH).status_code == 413


def test_malformed_uploads_are_refused(app, honest):
    client = TestClient(app)
    assert client.post("/submissions", content=b"{not json", headers=AUTH).status_code == 400
    assert client.post("/submissions", content=b"\xff\xfe", headers=AUTH).status_code == 400
    broken = copy.deepcopy(honest)
    del broken["metadata"]["panel_digest"]
    reply = client.post("/submissions", json=broken, headers=AUTH)
    assert reply.status_code == 422 and "panel_digest" in reply.json()["detail"]


def test_uploads_past_the_rate_limit_are_refused(app, honest):
    client = TestClient(app)
    codes = [client.post("/submissions", json=honest, headers=AUTH).status_code for _ in range(4)]
    assert codes == [202, 202, 202, 429]


def hostile_document(honest):
    document = copy.deepcopy(honest)
    document["metadata"]["model"] = HOSTILE_NAME
    document["metadata"]["model_size"] = "<b>7B</b>"
    for episode in document["episodes"]:
        episode["agent"] = HOSTILE_NAME
    return document


def test_hostile_model_names_are_stored_verbatim_and_rendered_inert(app, honest):
    client = TestClient(app)
    submission_id = client.post("/submissions", json=hostile_document(honest), headers=AUTH).json()["id"]
    app.state.worker.wait_idle()
    store = app.state.store
    assert store.submission(submission_id)["model"] == HOSTILE_NAME  # the SQL text never held it
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT count(*) FROM submissions").fetchone() == (1,)
    for page in (client.get("/").text, client.get(f"/submissions/{submission_id}").text):
        assert "<script>window" not in page and "<img src=x" not in page and "<b>7B</b>" not in page
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page


def test_hostile_responses_replay_and_render_inert(tmp_path):
    from agentenvs.core.chat import ChatReply
    from agentenvs.eval.bundle import read_bundle
    from agentenvs.eval.evaluate import run_eval

    class Hostile:
        def complete(self, messages, **request):
            return ChatReply("<script>alert(1)</script></pre><action>left</action>", "stop", 1, 1, 1)

    run_eval(ENV_IDS[:1], Hostile(), tmp_path, spec=PANELS["smoke"], model="m", concurrency=1)
    document = read_bundle(tmp_path)
    verdict = verify_submission(document)
    assert verdict.verified
    row = {
        "id": 1, "model": "m", "model_size": "", "endpoint": "openai", "panel": "smoke", "created": "now",
        "received": "now", "submitter": "token-0", "status": "verified", "problems": [],
        "metadata": document["metadata"], "summary": verdict.summary, "families": verdict.families,
    }  # fmt: skip
    episodes = [
        {**episode, "transcript": transcript}
        for episode, transcript in zip(document["episodes"], verdict.transcripts, strict=False)
    ]
    page = submission_page(row, episodes, board_link="/")
    assert (
        "<script>alert(1)</script>" not in page
        and "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/pre&gt;" in page
    )
    assert json.dumps("<script>") not in board_page([row], lambda i: f"{i}", "submit")

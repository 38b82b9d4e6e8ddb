"""The leaderboard: replay verification, the SQLite store, the app, static export, seeding."""

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

ENV_IDS = ["agentenvs/Sokoban-v0", "agentenvs/TextCraft-v0"]
SMOKE = PANELS["smoke"]


@pytest.fixture(scope="module")
def random_document():
    return scripted_document(ENV_IDS, "random", SMOKE)


@pytest.fixture(scope="module")
def expert_document():
    return scripted_document(ENV_IDS, "expert", SMOKE)


def test_scripted_agents_verify_by_replay_with_the_expert_above_random(random_document, expert_document):
    floor, ceiling = verify_submission(random_document), verify_submission(expert_document)
    assert floor.verified and ceiling.verified, floor.problems + ceiling.problems
    assert ceiling.summary["overall"]["success"]["mean"] == 1.0
    assert floor.summary["overall"]["score"]["mean"] < ceiling.summary["overall"]["score"]["mean"]
    # transcripts are the replay's observations: the first is what reset showed, one entry per turn + the end
    for episode, transcript in zip(expert_document["episodes"], ceiling.transcripts, strict=False):
        assert [turn["response"] for turn in transcript[:-1]] == episode["responses"]
        assert [turn["reward"] for turn in transcript[:-1]] == pytest.approx(episode["rewards"])
        assert "observation" in transcript[-1] and "response" not in transcript[-1]


def test_verification_through_worker_processes_agrees_with_in_process(expert_document):
    in_process = verify_submission(expert_document)
    spread = verify_submission(expert_document, backend="subprocess", num_workers=2, batch=2)
    assert spread.verified and spread.summary == in_process.summary
    assert spread.transcripts == in_process.transcripts


def test_store_uses_wal_and_keeps_verified_submissions_with_their_transcripts(tmp_path, expert_document):
    store = Store(tmp_path / "board.sqlite")
    assert store.journal_mode == "wal"
    submission_id = store.add_pending(expert_document, submitter="test")
    assert store.pending_ids() == [submission_id] and store.board() == []
    store.finish(submission_id, verify_submission(expert_document))
    row = store.submission(submission_id)
    assert row["status"] == "verified" and row["model"] == "expert" and store.pending_ids() == []
    assert [r["id"] for r in store.board()] == [submission_id]
    episodes = store.episodes(submission_id)
    assert len(episodes) == len(expert_document["episodes"]) and all(e["success"] for e in episodes)
    reopened = Store(tmp_path / "board.sqlite")
    assert reopened.submission(submission_id)["summary"] == row["summary"]


def test_a_board_file_of_the_first_release_gains_the_new_columns(tmp_path, expert_document):
    import sqlite3

    from leaderboard.store import ADDED_COLUMNS, SCHEMA

    first_release = SCHEMA
    for name, kind in ADDED_COLUMNS.items():
        first_release = first_release.replace(f"    {name} {kind},\n", "")
    with sqlite3.connect(tmp_path / "old.sqlite") as db:
        db.executescript(first_release)
        assert "families" not in {row[1] for row in db.execute("PRAGMA table_info(submissions)")}
    store = Store(tmp_path / "old.sqlite")
    submission_id = store.add_pending(expert_document, submitter="test")
    store.finish(submission_id, verify_submission(expert_document))
    assert set(store.submission(submission_id)["families"]) == {"Sokoban", "TextCraft"}


def test_upload_is_verified_by_the_worker_and_shown_on_the_board(tmp_path, random_document, expert_document):
    store = Store(tmp_path / "board.sqlite")
    app = create_app(store, ["secret-token"])
    client = TestClient(app)
    headers = {"Authorization": "Bearer secret-token"}
    accepted = client.post("/submissions", json=random_document, headers=headers)
    assert accepted.status_code == 202 and accepted.json()["status"] == "pending"
    forged = copy.deepcopy(expert_document)
    forged["episodes"][0]["rewards"][0] += 1.0
    rejected_id = client.post("/submissions", json=forged, headers=headers).json()["id"]
    app.state.worker.wait_idle()
    status = client.get(f"/submissions/{accepted.json()['id']}/status").json()
    assert status == {"id": accepted.json()["id"], "status": "verified", "problems": []}
    rejection = client.get(f"/submissions/{rejected_id}/status").json()
    assert rejection["status"] == "rejected" and "rewards differ" in rejection["problems"][0]
    board = client.get("/")
    assert board.status_code == 200 and "script-src 'sha256-" in board.headers["content-security-policy"]
    assert (
        "random" in board.text
        and "re-checked by replay" in board.text
        and f"submissions/{rejected_id}" not in board.text
    )
    page = client.get(f"/submissions/{accepted.json()['id']}")
    assert (
        page.status_code == 200 and "final observation" in page.text and "agentenvs/TextCraft-v0" in page.text
    )
    assert client.get("/submissions/999").status_code == 404


def test_pending_submissions_are_verified_after_a_restart(tmp_path, expert_document):
    store = Store(tmp_path / "board.sqlite")
    submission_id = store.add_pending(expert_document, submitter="test")  # the app stopped before verifying
    app = create_app(Store(tmp_path / "board.sqlite"), ["t"], verify_backend="subprocess", verify_workers=2)
    app.state.worker.wait_idle()
    assert Store(tmp_path / "board.sqlite").submission(submission_id)["status"] == "verified"


def test_seed_and_export_write_the_board_as_static_pages(tmp_path, capsys):
    db = str(tmp_path / "board.sqlite")
    assert main(["seed", "--db", db, "--panel", "smoke", "--env", "agentenvs/Sokoban-v0"]) == 0
    assert "random: verified" in capsys.readouterr().out
    assert main(["export", "--db", db, "--out", str(tmp_path / "site")]) == 0
    index = (tmp_path / "site" / "index.html").read_text()
    assert 'href="submissions/1.html"' in index and 'href="submissions/2.html"' in index
    assert "Content-Security-Policy" in index
    transcript = (tmp_path / "site" / "submissions" / "2.html").read_text()
    assert "expert" in transcript and 'href="../index.html"' in transcript


def test_verify_command_rechecks_a_submission_file_locally(tmp_path, expert_document, capsys):
    honest, forged = tmp_path / "honest.json", tmp_path / "forged.json"
    honest.write_text(json.dumps(expert_document))
    edited = copy.deepcopy(expert_document)
    edited["episodes"][0]["responses"][0] = "<action>up</action>"
    forged.write_text(json.dumps(edited))
    assert main(["verify", str(honest)]) == 0
    assert "verified: 6 episodes reproduce" in capsys.readouterr().out
    assert main(["verify", str(forged), "--backend", "subprocess", "--workers", "2"]) == 1
    assert "differ from turn" in capsys.readouterr().out
    (tmp_path / "broken.json").write_text("{}")
    assert main(["verify", str(tmp_path / "broken.json")]) == 2


def test_submit_needs_a_token(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("LEADERBOARD_TOKEN", raising=False)
    assert main(["submit", str(tmp_path), "--url", "http://127.0.0.1:9"]) == 2
    assert "LEADERBOARD_TOKEN" in capsys.readouterr().err

"""The ``agentenvs`` command: list, play, run --out, replay, bad arguments."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import agentenvs
from agentenvs.cli import main
from agentenvs.core import EnvEntry
from agentenvs.core.devtools import find_chromium
from agentenvs.core.registration import main_ids

from fixtures.registry import register_for_test

SOKOBAN = "agentenvs/Sokoban-v0"
CONSOLE_SCRIPT = Path(sys.executable).parent / "agentenvs"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("run") / "results.jsonl"
    code = main(
        ["run", SOKOBAN, "--agent", "random", "--agent", "expert", "--episodes", "6", "--seed", "10",
         "--split", "test", "--out", str(path), "--env-kwarg", "max_turns=4"]
    )  # fmt: skip
    assert code == 0
    return path


def test_list_shows_every_id_once(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == agentenvs.ENV_IDS
    sokoban = next(line for line in lines if line.startswith(SOKOBAN + " "))
    assert "Sokoban" in sokoban[len(SOKOBAN) :] and "extra" not in sokoban


@pytest.fixture
def ghost_env(monkeypatch: pytest.MonkeyPatch) -> str:
    """A registered id whose extra is not installed."""
    ghost = EnvEntry(
        "Ghost", "agentenvs_ghost.env:GhostEnv", "needs a missing package", "Ghost", extra="ghost"
    )
    return register_for_test(monkeypatch, ghost)


def test_missing_extras_are_named_and_skipped(ghost_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    ghost = next(line for line in out.splitlines() if line.startswith(ghost_env))
    assert (
        "needs a missing package" in ghost
        and "needs the ghost extra" in ghost
        and "agentenvs[ghost]" in ghost
    )
    code, out, err = run_cli(capsys, "run", "Ghost*", "--episodes", "1")
    assert code == 1 and f"skipping {ghost_env}: needs the ghost extra" in err and "nothing ran" in err
    code, _, err = run_cli(capsys, "run", ghost_env)
    assert code == 2 and len(err.splitlines()) == 1 and "agentenvs[ghost]" in err


def test_run_writes_one_record_per_episode(results: Path) -> None:
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(r["agent"], r["seed"]) for r in records] == [
        (agent, seed) for agent in ("random", "expert") for seed in range(10, 16)
    ]
    for record in records:
        assert record["env_id"] == SOKOBAN and record["split"] == "test"
        assert record["env_kwargs"] == {"max_turns": 4}
        assert record["task_id"] and record["turns"] == len(record["responses"]) == len(record["rewards"])
        assert len(record["state_keys"]) == len(record["obs_keys"]) == record["turns"] + 1
        assert record["return"] == pytest.approx(sum(record["rewards"]))
        assert set(record["component_sums"]) >= {"outcome", "format", "step_penalty"}
        assert record["turns"] <= 4
    assert all(r["success"] and r["score"] == 1.0 for r in records if r["agent"] == "expert")


def test_run_prints_the_summary_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "run", SOKOBAN, "--agent", "expert", "--episodes", "3", "--split", "valid")
    assert code == 0
    for header in ("env", "agent", "episodes", "success", "score", "turns", "return", "outcome"):
        assert header in out
    row = next(line for line in out.splitlines() if SOKOBAN in line)
    assert "expert" in row and "100%" in row


def test_replay_of_an_untouched_file_matches(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "replay", str(results))
    assert code == 0
    assert "replayed 12 episodes" in out and "all match" in out


def test_replay_reports_a_tampered_episode(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [json.loads(line) for line in results.read_text().splitlines()]
    records[7]["rewards"][0] += 0.5
    records[9]["success"] = not records[9]["success"]
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("".join(json.dumps(r) + "\n" for r in records))
    code, out, err = run_cli(capsys, "replay", str(tampered))
    assert code == 1
    assert "2 mismatched" in out
    reports = err + out
    assert "tampered.jsonl:8" in reports and "rewards differ from turn 0" in reports
    assert "tampered.jsonl:10" in reports and "success" in reports


def test_play_reads_moves_until_end_of_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("up\nfly\n"))
    code, out, _ = run_cli(capsys, "play", SOKOBAN, "--seed", "2")
    assert code == 0
    assert "#" in out and "format" in out and "invalid_action" in out and "reward" in out


def test_play_stops_at_the_episode_end(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("left\nleft\nleft\nleft\n"))
    code, out, _ = run_cli(capsys, "play", SOKOBAN, "--env-kwarg", "max_turns=2")
    assert code == 0 and "episode" in out and ("truncated after 2 turns" in out or "terminated" in out)


def test_play_quits_on_request(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("quit\nup\n"))
    code, out, _ = run_cli(capsys, "play", SOKOBAN)
    assert code == 0 and "  reward " not in out  # nothing was stepped


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "agentenvs/NoSuchEnv-v0"],
        ["run", SOKOBAN, "--agent", "oracle"],
        ["run", SOKOBAN, "--env-kwarg", "no_such_kwarg=1"],
        ["run", SOKOBAN, "--env-kwarg", "max_turns"],
        ["run", SOKOBAN, "--split", "holdout"],
        ["run", SOKOBAN, "--episodes", "0"],
        ["run", SOKOBAN, "--episodes", "many"],
        ["play", "NoSuchEnv-v0"],
        ["replay", "no/such/results.jsonl"],
        ["launch"],
        [],
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("agentenvs: error: ")
    assert "Traceback" not in err and out == ""


def test_replay_of_a_file_that_is_not_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"env_id": "agentenvs/Sokoban-v0"}\n')
    code, _, err = run_cli(capsys, "replay", str(path))
    assert code == 2 and "notes.jsonl:1" in err and "record: data must contain" in err


def test_short_ids_are_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "run", "Sokoban-v0", "--agent", "random", "--episodes", "2")
    assert code == 0 and SOKOBAN in out


def test_console_script(tmp_path: Path) -> None:
    assert CONSOLE_SCRIPT.exists(), "the package's console script is installed next to the interpreter"
    listing = subprocess.run(
        [CONSOLE_SCRIPT, "list"], check=False, capture_output=True, text=True, timeout=120
    )
    assert listing.returncode == 0 and SOKOBAN in listing.stdout
    out = tmp_path / "r.jsonl"
    ran = subprocess.run(
        [CONSOLE_SCRIPT, "run", SOKOBAN, "--agent", "expert", "--episodes", "2", "--out", str(out)],
        check=False, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0 and "expert" in ran.stdout
    replayed = subprocess.run(
        [CONSOLE_SCRIPT, "replay", str(out)], check=False, capture_output=True, text=True, timeout=120
    )
    assert replayed.returncode == 0 and "all match" in replayed.stdout
    bad = subprocess.run(
        [CONSOLE_SCRIPT, "run", SOKOBAN, "--agent", "oracle"],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


def test_run_all_is_the_main_job_over_every_main_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every main id runs; only where Chromium is not on PATH is the frontend skipped, and named."""
    out = tmp_path / "all.jsonl"
    code = main(
        ["run", "all", "--agent", "random", "--agent", "expert", "--episodes", "1", "--out", str(out)]
    )
    assert code == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    skipped = set() if find_chromium() is not None else {"agentenvs/ColBench-Frontend-v0"}
    assert {r["env_id"] for r in records} == set(main_ids()) - skipped
    notes = " ".join(capsys.readouterr().err.split())
    assert all(f"skipping {env_id}: no chromium on PATH" in notes for env_id in skipped)
    assert all(r["success"] for r in records if r["agent"] == "expert")
    assert main(["replay", str(out)]) == 0


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "holds no episode records"),
        (b"\n  \n", "holds no episode records"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "not a text file"),
        (b"\x00\x00\x00\x01", "not a text file"),
        (None, "cut short"),
    ],
    ids=["empty", "blank", "binary", "nul-bytes", "truncated"],
)
def test_replay_of_an_empty_binary_or_truncated_file_exits_2_with_a_reason(
    content: bytes | None, reason: str, results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.jsonl"
    if content is None:  # a results file cut in the middle of its last record
        whole = results.read_bytes()
        content = whole[: whole.rindex(b"\n", 0, len(whole) - 1) + 40]
    path.write_bytes(content)
    code, out, err = run_cli(capsys, "replay", str(path))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("agentenvs: error: ") and reason in err


def test_run_table_keeps_every_column_readable_at_80_columns(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    env_id = "agentenvs/Sokoban-Verl-v0"
    code, out, _ = run_cli(capsys, "run", env_id, "--agent", "random", "--agent", "expert", "--episodes", "2")
    assert code == 0
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    header = next(line for line in lines if "episodes" in line)
    for column in ("env", "agent", "episodes", "success", "score", "turns", "return"):
        assert column in header
    weights = gym.make(env_id).unwrapped.reward_weights
    for agent in ("random", "expert"):
        start = lines.index(f"  {env_id} {agent}:")
        block = " ".join(lines[start + 1 : start + 4])
        assert all(f"{name} " in block for name in weights), block
    table_text = "".join(line.strip("│┃| ") for line in lines)
    assert env_id in table_text.replace(" ", "").replace("│", "")


def test_run_all_skips_an_env_whose_program_is_missing_and_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import gymnasium as gym

    monkeypatch.setitem(
        gym.spec("agentenvs/ColBench-Frontend-v0").kwargs, "chromium", str(tmp_path / "no-browser")
    )
    out = tmp_path / "colbench.jsonl"
    code = main(["run", "ColBench*", "--agent", "random", "--episodes", "1", "--out", str(out)])
    assert code == 0
    assert "skipping agentenvs/ColBench-Frontend-v0" in capsys.readouterr().err
    assert {json.loads(line)["env_id"] for line in out.read_text().splitlines()} == {"agentenvs/ColBench-v0"}


def test_a_reader_that_closes_the_pipe_early_ends_the_command_quietly():
    """``agentenvs list | head -1``: no traceback, the status of a SIGPIPE death (141)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes: every write meets a closed pipe
    try:
        result = subprocess.run(
            [sys.executable, "-m", "agentenvs.cli", "list"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert result.stderr.decode() == "" and result.returncode == 141

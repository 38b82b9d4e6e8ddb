"""``agentenvs serve``'s argument errors: one line on stderr, exit status 2, before any server starts.

The server itself is tested in tests/integrations/test_openenv.py (CI's OpenEnv step).
"""

from __future__ import annotations

import importlib.util

import pytest

from agentenvs.cli import build_parser, main


@pytest.mark.parametrize(
    "argv, message",
    [
        (["serve", "Nope-v0"], "unknown env id 'Nope-v0'"),
        (["serve", "Sokoban-v0", "--port", "0"], "--port must be in [1, 65535]"),
        (["serve", "Sokoban-v0", "--port", "70000"], "--port must be in [1, 65535]"),
        (["serve", "Sokoban-v0", "--max-sessions", "0"], "--max-sessions >= 1"),
        (["serve", "Sokoban-v0", "--port", "8000.5"], "invalid int value"),
        (["serve", "Sokoban-v0", "--session-idle-s", "0"], "--session-idle-s must be a number of seconds"),
        (["serve", "Sokoban-v0", "--session-idle-s", "-5"], "--session-idle-s must be a number of seconds"),
        (["serve", "Sokoban-v0", "--session-idle-s", "nan"], "--session-idle-s must be a number of seconds"),
        (["serve", "Sokoban-v0", "--session-idle-s", "inf"], "--session-idle-s must be a number of seconds"),
        (["serve", "Sokoban-v0", "--session-idle-s", "soon"], "invalid float value"),
        (["serve", "Sokoban-v0", "--env-kwarg", "max_turns=0"], "rejects the env kwargs"),
        (["serve", "Sokoban-v0", "--split", "nowhere"], "rejects the env kwargs"),
    ],
)
def test_bad_serve_arguments_exit_2_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_sessions_idle_out_by_default():
    assert build_parser().parse_args(["serve", "Sokoban-v0"]).session_idle_s == 600


def test_serve_without_the_openenv_extra_names_the_extra(capsys):
    if importlib.util.find_spec("openenv") is not None:
        pytest.skip("openenv-core is installed here: tests/integrations/test_openenv.py serves instead")
    assert main(["serve", "Sokoban-v0", "--port", "8000"]) == 2
    assert "pip install 'agentenvs[openenv]'" in capsys.readouterr().err

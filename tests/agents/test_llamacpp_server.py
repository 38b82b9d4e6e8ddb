"""`agentenvs eval` against a second real server, llama.cpp's (``python -m llama_cpp.server``), end to end
on CPU: ``scripts/llamacpp_eval_e2e.sh`` with a tiny random GGUF from ``scripts/make_tiny_gguf.py``.

llama-cpp-python ships only an sdist, so installing it compiles llama.cpp (5 to 6 minutes on 2 cores);
it lives in a venv of its own, ``LLAMACPP_PYTHON`` (default ``.venv-llamacpp/bin/python``), with the
``gguf`` package. Where that interpreter cannot import ``llama_cpp.server`` and ``gguf`` the test skips
and says why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def llamacpp_python() -> str:
    """The serving interpreter: ``LLAMACPP_PYTHON``, else ``.venv-llamacpp``'s, else this one."""
    named = os.environ.get("LLAMACPP_PYTHON")
    if named:
        return named
    venv = ROOT / ".venv-llamacpp" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def missing(python: str) -> str | None:
    """Why ``python`` cannot serve the tiny model, or None when it can."""
    try:
        done = subprocess.run(
            [python, "-c", "import llama_cpp.server.app, gguf, numpy"],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except OSError as exc:
        return f"{python}: {exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        install = "pip install llama-cpp-python[server] gguf"
        return f"{python} cannot import llama_cpp.server or gguf ({last}); {install}"
    return None


def test_eval_against_llamacpp_server_survives_a_kill_and_verifies(tmp_path):
    python = llamacpp_python()
    reason = missing(python)
    if reason:
        pytest.skip(reason)
    environ = dict(os.environ, PYTHON=sys.executable, LLAMACPP_PYTHON=python, PHASE_S="300")
    environ["TMPDIR"] = str(tmp_path)  # the script's work folder
    done = subprocess.run(
        ["bash", "scripts/llamacpp_eval_e2e.sh"],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=1500,
        env=environ,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    out = done.stdout
    assert "first run ended with status" in out
    assert "already in" in out
    assert "verified: 6 episodes reproduce" in out
    assert "stopped the llama.cpp server" in out
    settings = json.loads(next(line for line in out.splitlines() if line.startswith("settings: "))[10:])
    assert set(settings["envs"]) == {"agentenvs/Sokoban-v0", "agentenvs/Search-NQ-v0"}
    assert settings["token_count"] in ("server", "estimate", "none")

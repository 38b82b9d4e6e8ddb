"""Every ``python`` block of README.md runs as written, as a script of its own.

A block that needs what the default suite lacks (a model, a GPU) is preceded
by a line ``<!-- readme-test: skip (why) -->`` and is skipped by that mark; a
block that takes long (loads torch) is preceded by ``<!-- readme-test: slow
(why) -->`` and runs with the slow checks (``pytest -m slow``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_MARK = re.compile(r"<!--\s*readme-test:\s*skip\b(.*?)-->")
SLOW_MARK = re.compile(r"<!--\s*readme-test:\s*slow\b(.*?)-->")
FENCE = re.compile(r"^```python\s*$")


def python_blocks(text: str) -> list[tuple[int, str, str | None, bool]]:
    """(line number, code, skip reason or None, marked slow) of every python block."""
    lines = text.splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        if FENCE.match(lines[index]):
            start = index + 1
            end = next(i for i in range(start, len(lines)) if lines[i].startswith("```"))
            previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
            mark = SKIP_MARK.search(previous)
            reason = (mark.group(1).strip(" ()") or "marked") if mark else None
            slow = SLOW_MARK.search(previous) is not None
            blocks.append((start, "\n".join(lines[start:end]) + "\n", reason, slow))
            index = end
        index += 1
    return blocks


BLOCKS = python_blocks((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 3


def test_the_block_reader_sees_skip_marks_and_fences():
    text = "x\n```python\na = 1\n```\n<!-- readme-test: skip (needs a GPU) -->\n\n```python\nb\n```\n"
    assert python_blocks(text) == [(2, "a = 1\n", None, False), (7, "b\n", "needs a GPU", False)]
    slow = "<!-- readme-test: slow (loads torch) -->\n```python\nc\n```\n"
    assert python_blocks(slow) == [(2, "c\n", None, True)]


@pytest.mark.parametrize(
    ("line", "code", "skip"),
    [
        pytest.param(line, code, skip, marks=[pytest.mark.slow] if slow else [], id=f"README.md:{line}")
        for line, code, skip, slow in BLOCKS
    ],
)
def test_readme_block_runs_as_a_script(line, code, skip, tmp_path):
    if skip is not None:
        pytest.skip(skip)
    script = tmp_path / f"readme_line_{line}.py"
    script.write_text(code, encoding="utf-8")
    paths = [str(ROOT), os.environ.get("PYTHONPATH")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in paths if path))
    result = subprocess.run(
        [sys.executable, str(script)], check=False, cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, f"README.md:{line} failed:\n{result.stderr[-3000:]}"

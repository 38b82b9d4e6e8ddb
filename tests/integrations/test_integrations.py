"""agentenvs/integrations/ stays on the public contract: no baselines, no leaderboard, no library at
import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "agentenvs" / "integrations"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_adapter_imports_baselines_or_leaderboard():
    modules = sorted(FOLDER.glob("*.py"))
    assert {path.stem for path in modules} >= {"__init__", "trl", "verifiers"}
    for path in modules:
        tops = {name.split(".")[0] for name in imported_modules(path)}
        assert not tops & {"baselines", "leaderboard"}, path.name


def test_importing_the_package_imports_no_rl_library():
    code = (
        "import sys, agentenvs.integrations; print(sorted({'trl', 'verifiers', 'torch'} & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.strip() == "[]"

"""A fresh machine: the README's two commands, what they install, and what happens without Chromium.

The README's commands are the install: `.ci/run` runs command 2 exactly as written, with no install
step of its own before it, and both commands start with ``scripts/install_system_packages.sh``, which
installs Debian's chromium where it is missing and it can (root or sudo, apt-get). Where it cannot, the
script says so and exits 0, ``agentenvs run all`` names what it skipped and how to get it, and the
tests that need Chromium skip, naming why. These tests run the script, the CLI and pytest itself with
a ``PATH`` on which no ``chromium`` can be found.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install_system_packages.sh"
FRONTEND = "agentenvs/ColBench-Frontend-v0"
MiB = 1 << 20
# where large files belong: test fixtures and recorded benchmark results
LARGE_FILE_FOLDERS = ("tests/fixtures/", "benchmarks/results/")
# the library the script looks for as a file (stubs on PATH cannot hide it): asked for only where absent
SECCOMP_BINDING = "/usr/lib/python3/dist-packages/seccomp.cpython-*.so"
LIBRARIES_MISSING = [] if glob.glob(SECCOMP_BINDING) else ["python3-seccomp"]


def readme_commands() -> dict[str, str]:
    """The README's numbered shell commands: ``{"1": command, "2": command}``."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("```bash")
    block = lines[start + 1 : lines.index("```", start + 1)]
    commands = {}
    for comment, command in zip(block, block[1:], strict=False):
        number = re.match(r"# (\d)\. ", comment)
        if number:
            commands[number.group(1)] = command
    return commands


def path_without_chromium(tmp_path: Path) -> str:
    """A ``PATH`` holding only this interpreter's folder and a folder of links to the basic tools."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("bash", "sh", "env", "cat", "id", "git"):
        found = shutil.which(tool)
        if found is not None:
            (tools / tool).symlink_to(found)
    path = os.pathsep.join([str(Path(sys.executable).parent), str(tools)])
    assert shutil.which("chromium", path=path) is None
    return path


def stub(folder: Path, name: str, script: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(f"#!/bin/sh\n{script}\n")
    (folder / name).chmod(0o755)


def run_script(path: str) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run(
        [bash, str(SCRIPT)], env={"PATH": path}, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_readme_has_both_commands_and_each_installs_the_system_packages_first() -> None:
    commands = readme_commands()
    assert sorted(commands) == ["1", "2"]
    for command in commands.values():
        assert command.startswith("bash scripts/install_system_packages.sh && python -m venv .venv && ")
    assert commands["1"].endswith("agentenvs run all --agent random --agent expert --episodes 20")
    assert commands["2"].endswith('pip install -e ".[test]" && python -m pytest')


def ci_lanes() -> list[tuple[str, str]]:
    """``(name, command)`` of every ``lane NAME TIMEOUT 'COMMAND'`` line of .ci/run, in order."""
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8").replace("\\\n", " ")
    lanes = re.findall(r"^lane ([\w-]+) \d+ '(.*)'$", text, flags=re.M)
    return [(name, " ".join(command.split())) for name, command in lanes]


def test_ci_runs_the_readme_test_command_as_written_with_only_lint_between_its_parts() -> None:
    """Lane 1 installs as command 2 does, lane 3 is its ``python -m pytest``; lint runs between them."""
    lanes = ci_lanes()
    names = [name for name, _ in lanes]
    assert names[:5] == ["install", "lint", "default-suite", "docs", "slow-suite"], names
    install, lint, suite = (command for _, command in lanes[:3])
    assert f"{install} && {suite}" == readme_commands()["2"], ".ci/run does not run the README's command 2"
    assert not re.search(r"\b(apt|apt-get|pip|venv|install)\b", lint), lint
    preamble = (ROOT / ".ci" / "run").read_text(encoding="utf-8").split("\nlane install", 1)[0]
    steps = [line for line in preamble.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert not any(re.search(r"\b(apt|apt-get|pip|venv)\b", line) for line in steps), steps


def test_every_ci_lane_has_a_timeout_and_a_failure_stops_the_run_naming_its_lane(tmp_path: Path) -> None:
    """The lane function itself: a failing lane stops the run with its name, exit code and time."""
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    function = text[text.index("lane() {") : text.index("\n}\n", text.index("lane() {")) + 3]
    script = tmp_path / "lanes.sh"
    script.write_text(
        "set -euo pipefail\nrun_start=$SECONDS\n" + function + "lane first 10 'true'\n"
        "lane second 10 'exit 5'\n"
        "lane third 10 'echo never'\n"
    )
    result = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 5
    assert "=== lane first: " in result.stdout and "=== FAILED lane second (exit 5)" in result.stdout
    assert "never" not in result.stdout
    timed_out = tmp_path / "timeout.sh"
    timed_out.write_text("set -euo pipefail\nrun_start=$SECONDS\n" + function + "lane sleepy 1 'sleep 30'\n")
    result = subprocess.run(["bash", str(timed_out)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 124 and "timed out" in result.stdout


def test_the_readme_says_what_the_commands_install_and_that_it_needs_root() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    intro = text[: text.index("```python")]
    assert "chromium" in intro and "root or sudo" in intro


@pytest.mark.skipif(bool(LIBRARIES_MISSING), reason="python3-seccomp is not installed here")
def test_the_install_script_installs_nothing_where_everything_is_present(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "chromium", "exit 0")
    stub(bin_dir, "apt-get", f"echo ran >> {tmp_path / 'apt-calls'}")
    result = run_script(os.pathsep.join([str(bin_dir), path_without_chromium(tmp_path)]))
    assert result.returncode == 0 and result.stderr == ""
    assert not (tmp_path / "apt-calls").exists()


def test_the_install_script_without_root_or_sudo_names_the_package_and_exits_0(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "id", "echo 1000")  # an ordinary user, and no sudo on PATH
    result = run_script(os.pathsep.join([str(bin_dir), path_without_chromium(tmp_path)]))
    assert result.returncode == 0
    assert "no password-less sudo" in result.stderr and "apt-get install chromium" in result.stderr


def test_the_install_script_without_apt_get_names_the_package_and_exits_0(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "id", "echo 0")
    result = run_script(os.pathsep.join([str(bin_dir), path_without_chromium(tmp_path)]))
    assert result.returncode == 0 and "no apt-get" in result.stderr and "chromium" in result.stderr


def test_the_install_script_survives_a_failing_apt_get(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "id", "echo 0")
    stub(bin_dir, "apt-get", f'echo "$@" >> {tmp_path / "apt-calls"}; exit 100')  # no network, no archive
    result = run_script(os.pathsep.join([str(bin_dir), path_without_chromium(tmp_path)]))
    assert result.returncode == 0 and "could not install chromium" in result.stderr
    assert (tmp_path / "apt-calls").read_text().splitlines() == ["update -qq"]


def test_as_root_the_install_script_asks_apt_get_for_chromium(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "id", "echo 0")
    stub(bin_dir, "apt-get", f'echo "$@" >> {tmp_path / "apt-calls"}')
    result = run_script(os.pathsep.join([str(bin_dir), path_without_chromium(tmp_path)]))
    assert result.returncode == 0
    install = " ".join(["install -y -qq chromium", *LIBRARIES_MISSING])
    assert (tmp_path / "apt-calls").read_text().splitlines() == ["update -qq", install]


def test_without_chromium_on_path_run_all_names_what_it_skipped_and_how_to_get_it(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=path_without_chromium(tmp_path), PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-m", "agentenvs.cli", "run", "ColBench*", "--agent", "expert", "--episodes", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    notes = " ".join(result.stderr.split())  # rich wraps long notes
    assert f"skipping {FRONTEND}: no chromium on PATH" in notes
    assert "apt-get install chromium" in notes and "install_system_packages.sh" in notes
    assert "agentenvs/ColBench-v0" in result.stdout


def test_without_chromium_on_path_the_tests_that_need_it_skip_naming_why(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=path_without_chromium(tmp_path), PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rs",
            "--no-header",
            "-k",
            "Frontend",
            "tests/core/test_contract.py",
            "tests/envs/colbench/test_colbench_frontend.py",
        ],  # fmt: skip
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert "skipped" in summary and "failed" not in summary and "error" not in summary, summary
    assert "no chromium on PATH" in result.stdout and "chromium is not installed" in result.stdout


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium on PATH")
def test_with_chromium_on_path_the_frontend_env_finds_it_and_renders() -> None:
    import gymnasium as gym

    import agentenvs  # noqa: F401  (registers the ids: run alone, nothing else has imported it)

    env = gym.make(FRONTEND)
    try:
        env.reset(seed=0)
        assert env.unwrapped.renderer.executable == shutil.which("chromium")
        assert env.unwrapped.reference_render().size[0] == 800
    finally:
        env.close()


def test_no_tracked_file_over_1_mib_outside_fixtures_and_results() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    names = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    large = [
        name
        for name in names
        if name
        and not name.startswith(LARGE_FILE_FOLDERS)
        and (ROOT / name).is_file()
        and (ROOT / name).stat().st_size > MiB
    ]
    assert large == [], f"tracked files over 1 MiB: {large}"


def test_build_artefacts_are_ignored() -> None:
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    for pattern in ("*.whl", "*.tar.gz", "dist/", "build/", "*.egg-info/", ".venv/"):
        assert pattern in ignored


def test_the_suite_loads_where_the_project_cannot_be_imported(tmp_path: Path) -> None:
    """CI's vLLM and Lucene venvs run single test files without gymnasium: the suite's hooks must load
    there."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class Blocked:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('gymnasium', 'agentenvs'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, Blocked())\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "--no-header",
            "tests/install/test_install.py::test_build_artefacts_are_ignored",
        ],  # fmt: skip
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "1 passed" in result.stdout


# What the wheel is built from: the files pyproject.toml's [tool.setuptools] collects from.
WHEEL_SOURCES = (
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "agentenvs",
    "baselines",
    "leaderboard",
    "retrieval_index",
)


def test_the_wheel_carries_the_training_configs_the_license_and_every_module(tmp_path: Path) -> None:
    """Built from a clean copy (no build/ folder of the checkout): its file list, read with zipfile.

    ``scripts/wheel_check.sh`` (CI's wheel lane) installs such a wheel in a fresh venv and runs it.
    """
    import zipfile

    source = tmp_path / "source"
    for name in WHEEL_SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    built = subprocess.run(
        [*pip_wheel, "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("agentenvs-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    configs = sorted(
        f"baselines/configs/{path.name}" for path in (ROOT / "baselines" / "configs").glob("*.yaml")
    )
    assert "baselines/configs/mini_sokoban.yaml" in configs
    assert [name for name in configs if name not in names] == []
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names), sorted(names)[:20]
    assert "License-Expression: MIT" in metadata
    modules = sorted(
        path.relative_to(source).as_posix()
        for top in WHEEL_SOURCES[3:]
        for path in (source / top).rglob("*.py")
    )
    assert [module for module in modules if module not in names] == [], "modules the wheel leaves out"

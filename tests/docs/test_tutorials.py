"""The tutorials of ``docs/tutorials/``: each page's scripts run as the page shows them.

A page shows its code with ``{literalinclude}`` of a file in
``docs/tutorials/scripts/``, so the code a reader copies is the code these
tests run. A block of output a page shows is preceded by
``<!-- tutorial-output: NAME -->``; the tests compare it with what the script
prints, or with the results file it comes from. Runs that take minutes are
marked slow (``pytest -m slow``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType

import pytest

from fixtures.markdown import python_blocks

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "docs" / "tutorials"
SCRIPTS = TUTORIALS / "scripts"
INCLUDE = re.compile(r"^```\{literalinclude\}\s+(\S+)", re.MULTILINE)
OUTPUT_MARK = "<!-- tutorial-output: {name} -->"


def page(name: str) -> str:
    return (TUTORIALS / name).read_text(encoding="utf-8")


def output_block(text: str, name: str) -> str:
    """The fenced block right after the page's ``tutorial-output: name`` mark, without its fences."""
    mark = OUTPUT_MARK.format(name=name)
    assert text.count(mark) == 1, f"the page has no single {mark}"
    after = text.split(mark, 1)[1].lstrip("\n")
    assert after.startswith("```"), f"{mark} is not followed by a fenced block"
    return after.split("\n", 1)[1].split("\n```", 1)[0]


def reader_environ(checkout: Path) -> dict[str, str]:
    """This process's environment with this interpreter's ``bin`` first on ``PATH`` and ``checkout``
    first on ``PYTHONPATH``, as for a reader who installed that checkout."""
    environ = dict(os.environ)
    environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environ.get("PATH", "")])
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout), environ.get("PYTHONPATH")]))
    return environ


def run_tutorial(
    command: list[str], *, extra_env: Mapping[str, str] = {}, cwd: Path = ROOT, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` as a reader would, from the root of a checkout (``cwd``, this one by default):
    ``python`` and the console scripts (``agentenvs``, ``leaderboard``) are this interpreter's, and
    that checkout comes first on the path."""
    environ = {**reader_environ(cwd), **extra_env}
    result = subprocess.run(
        command, cwd=cwd, env=environ, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, (
        f"{shlex.join(command)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return result


# ------------------------------------------------------------------ every page
def test_every_tutorial_script_is_shown_by_a_page_and_every_include_exists():
    pages = sorted(TUTORIALS.glob("*.md"))
    included = set()
    for path in pages:
        for target in INCLUDE.findall(path.read_text(encoding="utf-8")):
            resolved = (path.parent / target).resolve()
            assert resolved.is_file(), f"{path.name} includes {target}, which does not exist"
            included.add(resolved)
    scripts = {p.resolve() for p in SCRIPTS.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert scripts, "no tutorial scripts"
    assert not scripts - included, f"scripts no page shows: {sorted(map(str, scripts - included))}"


def test_output_blocks_are_found_by_their_mark():
    text = "intro\n<!-- tutorial-output: demo -->\n```text\na  1\nb  2\n```\nafter\n"
    assert output_block(text, "demo") == "a  1\nb  2"
    with pytest.raises(AssertionError, match="no single"):
        output_block(text, "other")


# ------------------------------------------------------ 01: GiGPO on the CPU
TRAIN_PAGE = "01-train-gigpo-on-cpu.md"
TRAIN_SCRIPT = SCRIPTS / "train_gigpo_on_cpu.sh"
EXPERIMENT_RESULTS = ROOT / "baselines" / "experiments" / "results" / "estimators.json"


def recorded_gigpo_run() -> list[dict[str, float]]:
    """GiGPO's seed-0 run in the experiment's results file, as records of iteration, episodes, success."""
    results = json.loads(EXPERIMENT_RESULTS.read_text(encoding="utf-8"))
    per_iteration = results["episodes_per_iteration"]
    curve = results["success_curves"]["gigpo"]["0"]
    return [
        {"iteration": i, "episodes_seen": per_iteration * (i + 1), "success": success}
        for i, success in enumerate(curve)
    ]


def read_metrics_script() -> ModuleType:
    """``docs/tutorials/scripts/read_metrics.py`` as a module (it sits on no import path)."""
    spec = importlib.util.spec_from_file_location("read_metrics", SCRIPTS / "read_metrics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def curve_table_of(records: list[dict[str, float]]) -> str:
    return read_metrics_script().curve_table(records)


def test_the_pages_curve_is_the_results_files_gigpo_run():
    records = recorded_gigpo_run()
    assert len(records) == 50  # the config's run.iterations, which the script keeps by default
    assert output_block(page(TRAIN_PAGE), "gigpo-curve") == curve_table_of(records)


def test_the_curve_reader_refuses_an_empty_run_and_bad_options_with_a_reason(tmp_path, capsys):
    main = read_metrics_script().main
    empty = tmp_path / "metrics.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(SystemExit) as stopped:
        main([str(empty)])
    assert stopped.value.code == 2 and "holds no iteration yet" in capsys.readouterr().err
    empty.write_text(
        json.dumps({"iteration": 0, "episodes_seen": 64, "success": 0.5}) + "\n", encoding="utf-8"
    )
    with pytest.raises(SystemExit):
        main([str(empty), "--every", "0"])
    assert "at least 1" in capsys.readouterr().err
    assert main([str(empty)]) == 0 and "0.500" in capsys.readouterr().out


def test_the_scripts_pins_are_the_experiments():
    from baselines.experiments.common import PINNED_ENVIRONMENT

    (line,) = [
        line for line in TRAIN_SCRIPT.read_text(encoding="utf-8").splitlines() if line.startswith("export ")
    ]
    exported = dict(word.split("=", 1) for word in shlex.split(line)[1:])
    assert exported == PINNED_ENVIRONMENT


def test_one_iteration_reproduces_the_recorded_runs_start(tmp_path):
    """The smoke run the page names (``ITERATIONS=1``); the slow test below runs all 50."""
    out = tmp_path / "gigpo-sokoban"
    result = run_tutorial(["bash", str(TRAIN_SCRIPT)], extra_env={"OUT": str(out), "ITERATIONS": "1"})
    from baselines.metrics import read_jsonl

    records = read_jsonl(out / "metrics.jsonl")
    expected = recorded_gigpo_run()[:1]
    assert [(r["iteration"], r["episodes_seen"], r["success"]) for r in records] == [
        (e["iteration"], e["episodes_seen"], e["success"]) for e in expected
    ]
    assert {"return", "component/box_placement", "anchor/singleton_share", "time/update_s"} <= set(records[0])
    assert curve_table_of(records) in result.stdout
    assert (out / "success.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_the_tutorial_command_prints_the_pages_curve(tmp_path):
    result = run_tutorial(["bash", str(TRAIN_SCRIPT)], extra_env={"OUT": str(tmp_path / "run")}, timeout=3600)
    assert output_block(page(TRAIN_PAGE), "gigpo-curve") in result.stdout


# ------------------------------------------- 02: evaluate, verify, submit
EVAL_PAGE = "02-evaluate-and-submit.md"
EVAL_SCRIPT = SCRIPTS / "evaluate_and_submit.sh"
EVAL_WORK = "runs/tutorial-eval"  # the script's default WORK, as the page names it


def test_the_eval_tutorial_plays_verifies_and_lands_on_the_board(tmp_path):
    pytest.importorskip("torch")
    from agentenvs.eval.bundle import read_bundle

    from fixtures.app_server import free_port

    work = tmp_path / "eval"
    ports = {"MODEL_PORT": str(free_port()), "BOARD_PORT": str(free_port())}
    result = run_tutorial(["bash", str(EVAL_SCRIPT)], extra_env={"WORK": str(work), **ports})
    printed = {line.strip() for line in result.stdout.splitlines()}
    for line in output_block(page(EVAL_PAGE), "eval-and-submit").splitlines():
        assert line.replace(EVAL_WORK, str(work)) in printed, line

    document = read_bundle(work / "bundle")
    (summary,) = document["summary"]["envs"].values()
    assert (summary["episodes"], summary["success"]["mean"]) == (3, 0.0)
    assert "[0%, 56%]" in page(EVAL_PAGE) and round(100 * summary["success"]["high"]) == 56
    assert document["metadata"]["model_size"] == "0.6M"
    assert document["metadata"]["settings"]["envs"]["agentenvs/Sokoban-v0"]["max_tokens"] == 16
    board = (work / "site" / "index.html").read_text(encoding="utf-8")
    assert all(name in board for name in ("tiny", "0.6M", "expert", "random"))


# ------------------------------------------------------ 04: a new family
FAMILY_PAGE = "04-add-a-family.md"
# What a checkout needs for the family's checks: the package, the suite, and what the suite reads.
CHECKOUT_PARTS = [
    "agentenvs",
    "tests",
    "scripts",
    "baselines",
    "leaderboard",
    "retrieval_index",
    "pyproject.toml",
    "README.md",
]
FAMILY_CHECKS = [
    "tests/core/test_contract.py",
    "tests/core/test_layout.py",
    "tests/core/test_reward_hacking.py",
]


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A copy of this checkout's code and tests, for the tutorial to add its family to."""
    root = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in CHECKOUT_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, root / part, ignore=ignore)
        else:
            shutil.copy2(source, root / part)
    shutil.copytree(SCRIPTS, root / "docs" / "tutorials" / "scripts", ignore=ignore)
    return root


def test_the_new_family_registers_is_solved_by_its_expert_and_passes_the_contract(checkout):
    from agentenvs.core.checker import RULES

    script = SCRIPTS / "add_lock_family.sh"
    result = run_tutorial(["bash", str(script)], cwd=checkout)
    printed = set(result.stdout.splitlines())
    for line in output_block(page(FAMILY_PAGE), "play-lock").splitlines():
        assert line in printed, line
    assert (checkout / "agentenvs" / "envs" / "lock" / "env.py").is_file() and not (
        ROOT / "agentenvs" / "envs" / "lock"
    ).exists()

    # the page's check_env block, run where the family is in, prints the report the page shows
    (check_block,) = [code for _, code, _, _ in python_blocks(page(FAMILY_PAGE)) if "check_env(" in code]
    checked = run_tutorial([sys.executable, "-c", check_block], cwd=checkout)
    assert checked.stdout.strip() == output_block(page(FAMILY_PAGE), "check-lock")

    # the suite's checks did run on the new id: the selection the script makes holds its cases
    (selection,) = [line for line in script.read_text(encoding="utf-8").splitlines() if " -k " in line]
    keyword = shlex.split(selection)[shlex.split(selection).index("-k") + 1]
    listed = run_tutorial(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", *FAMILY_CHECKS, "-k", keyword], cwd=checkout
    ).stdout.splitlines()
    lock_cases = [line for line in listed if "Lock-v0" in line]
    assert all("Unlock" not in line for line in lock_cases)  # BabyAI's Unlock levels stay out
    contract_rules = {
        case.split("[agentenvs/Lock-v0-", 1)[1].rstrip("]")
        for case in lock_cases
        if case.startswith("tests/core/test_contract.py::test_env_keeps_the_contract[")
    }
    assert contract_rules == set(RULES)  # a family with one id is one of its family's heavy ids: every rule
    assert any(
        c.startswith("tests/core/test_reward_hacking.py::test_no_invalid_stalling") for c in lock_cases
    )
    assert any(line.startswith("tests/core/test_layout.py::") for line in listed)


# ------------------------------------------- 03: other RL libraries
LIBRARIES_PAGE = "03-other-rl-libraries.md"


def bash_block_lines(text: str, section: str) -> list[str]:
    """The lines of the first ``bash`` block after the page's ``## section`` heading."""
    after = text.split(f"\n## {section}\n", 1)[1]
    return after.split("```bash\n", 1)[1].split("\n```", 1)[0].splitlines()


def with_port(line: str, port: int) -> list[str]:
    """A page command as words, its port 8000 replaced by ``port`` and a trailing ``&`` dropped."""
    return [word.replace("8000", str(port)) for word in shlex.split(line.removesuffix(" &"))]


@contextlib.contextmanager
def background(words: list[str], ready_url: str, log: Path) -> Iterator[None]:
    """Run a page's server command (``... &``) until the block ends; up once ``ready_url`` answers."""
    import urllib.request

    with log.open("w") as sink:
        server = subprocess.Popen(
            words, cwd=ROOT, env=reader_environ(ROOT), stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, log.read_text()
            try:
                urllib.request.urlopen(ready_url, timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, f"{shlex.join(words)} did not come up:\n{log.read_text()}"
                time.sleep(0.5)
        yield
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_skyrl_gym_script_plays_the_gym_make_episode():
    pytest.importorskip("skyrl_gym", reason="skyrl-gym is not installed here (the skyrl-gym extra)")
    import gymnasium as gym

    import agentenvs  # noqa: F401  (registers the ids)

    result = run_tutorial([sys.executable, str(SCRIPTS / "with_skyrl_gym.py")])
    assert result.stdout.strip() == output_block(page(LIBRARIES_PAGE), "skyrl-gym")
    weights = gym.make("agentenvs/Sokoban-v0").unwrapped.reward_weights
    assert weights == {
        "outcome": 10.0,
        "box_placement": 1.0,
        "format": 0.5,
        "step_penalty": -0.1,
        "invalid_action": -0.1,
    }


@pytest.mark.slow
def test_the_trl_script_trains_a_step_whose_components_add_up(tmp_path):
    pytest.importorskip("trl", reason="TRL is not installed here (the trl extra)")
    result = run_tutorial([sys.executable, str(SCRIPTS / "with_trl.py"), str(tmp_path)], timeout=1200)
    components = [
        float(line.split()[1]) for line in result.stdout.splitlines() if line.startswith("rewards/")
    ]
    (total,) = [float(line.split()[1]) for line in result.stdout.splitlines() if line.startswith("reward: ")]
    assert len(components) == 5 and abs(sum(components) - total) < 2e-3  # each printed to 3 decimals
    assert "over 4 episodes" in result.stdout


def test_the_verifiers_commands_evaluate_and_replay(tmp_path):
    pytest.importorskip(
        "verifiers",
        reason="verifiers is not installed here: CI's verifiers step runs this test in .venv-verifiers",
    )
    pytest.importorskip("torch")
    from fixtures.app_server import free_port

    make_model, serve, evaluate = bash_block_lines(page(LIBRARIES_PAGE), "verifiers")
    port = free_port()
    run_tutorial([word.replace("runs/", f"{tmp_path}/") for word in shlex.split(make_model)])
    serve_words = [word.replace("runs/", f"{tmp_path}/") for word in with_port(serve, port)]
    with background(serve_words, f"http://127.0.0.1:{port}/v1/models", tmp_path / "server.log"):
        assignment, *command = shlex.split(evaluate)
        name, value = assignment.split("=", 1)
        url = {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", name: value}
        result = run_tutorial(command, extra_env=url)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 5 and lines[-1] == "4 rollouts, each replayed by gym.make to the same return"
    assert "4 rollouts, each replayed by gym.make to the same return" in page(LIBRARIES_PAGE)


def test_the_openenv_commands_play_the_pages_episode(tmp_path):
    pytest.importorskip(
        "openenv",
        reason="openenv-core is not installed here: CI's OpenEnv step runs this test in .venv-openenv",
    )
    from fixtures.app_server import free_port

    serve, client = bash_block_lines(page(LIBRARIES_PAGE), "OpenEnv")
    port = free_port()
    with background(with_port(serve, port), f"http://127.0.0.1:{port}/health", tmp_path / "serve.log"):
        result = run_tutorial(with_port(client, port))
    assert result.stdout.strip() == output_block(page(LIBRARIES_PAGE), "openenv")

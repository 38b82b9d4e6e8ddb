"""scripts/verl_gigpo.sh: the dataset it writes and its Hydra overrides, composed by verl's own config loader.

The script writes verl dataset rows to Parquet, then execs ``python -m
baselines.verl.main`` with Hydra overrides, which verl's ``main_ppo.main``
(``@hydra.main``) applies to its packaged trainer config. Here a ``python``
ahead of the real one on ``PATH`` records that last command instead of
training; the real interpreter runs the dataset step. The overrides are then
composed with Hydra over verl's config directory and config name, as read from
``main_ppo``'s decorator, at the pinned verl of the ``verl`` extra (0.9.1).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

pytest.importorskip("verl", reason="verl (the `verl` extra) provides the config tree the script targets")
pytest.importorskip("hydra", reason="verl composes its config with hydra-core")
pd = pytest.importorskip("pandas", reason="the script writes its dataset with pandas")

from hydra import compose, initialize_config_dir  # noqa: E402
from hydra.core.override_parser.overrides_parser import OverridesParser  # noqa: E402
from hydra.errors import ConfigCompositionException  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "verl_gigpo.sh"
ENV_ID = "agentenvs/Sokoban-Verl-v0"
USER_OVERRIDES = ["trainer.n_gpus_per_node=8", "+algorithm.agentenvs.preset=reference"]
# Stands in for the interpreter: records `python -m baselines.verl.main ARGS` (one JSON document:
# the arguments and the AGENTENVS_* environment) and hands every other call to the real one.
RECORDER = """#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "baselines.verl.main" ]; then
    shift 2
    exec "{python}" -c 'import json, os, sys; json.dump({{"argv": sys.argv[1:], "env": \
{{k: v for k, v in os.environ.items() if k.startswith("AGENTENVS_")}}}}, \
open(os.environ["VERL_MAIN_RECORD"], "w"))' "$@"
fi
exec "{python}" "$@"
"""


def verl_main_config() -> tuple[Path, str]:
    """The config directory and name of verl's ``main_ppo.main``, read from its ``@hydra.main`` decorator."""
    spec = importlib.util.find_spec("verl.trainer.main_ppo")
    assert spec is not None and spec.origin is not None
    source = Path(spec.origin)
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef) and node.name == "main":
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "hydra.main":
                    options = {k.arg: ast.literal_eval(k.value) for k in decorator.keywords}
                    return source.parent / options["config_path"], options["config_name"]
    raise AssertionError(f"no @hydra.main on main() in {source}")


def compose_verl(overrides: list[str]):
    config_dir, config_name = verl_main_config()
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name=config_name, overrides=overrides)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict:
    """One run of the script with the recorder: its exit status, the recorded command and the data dir."""
    tmp = tmp_path_factory.mktemp("verl_gigpo")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    recorder = bin_dir / "python"
    recorder.write_text(RECORDER.format(python=sys.executable), encoding="utf-8")
    recorder.chmod(0o755)
    record = tmp / "record.json"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "VERL_MAIN_RECORD": str(record),
        "DATA": str(tmp / "data"),
        "TRAIN_TASKS": "3",
        "VALID_TASKS": "2",
    }
    # the caller's own AGENTENVS_* settings (a cache folder, a preset) are not the script's to pass on
    for name in [name for name in env if name.startswith("AGENTENVS_")]:
        del env[name]
    done = subprocess.run(
        ["bash", str(SCRIPT), ENV_ID, "/models/tiny", *USER_OVERRIDES],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {**json.loads(record.read_text(encoding="utf-8")), "data": tmp / "data" / ENV_ID.replace("/", "_")}


@pytest.fixture(scope="module")
def composed(recorded):
    """verl's trainer config with the script's overrides applied."""
    return compose_verl(recorded["argv"])


def test_the_dataset_is_parquet_rows_the_agent_loop_reads(recorded):
    train = pd.read_parquet(recorded["data"] / "train.parquet")
    valid = pd.read_parquet(recorded["data"] / "valid.parquet")
    assert (len(train), len(valid)) == (3, 2)
    extra = train["extra_info"][0]
    assert extra["env_id"] == ENV_ID and extra["task_id"].endswith("/train/000000")
    assert json.loads(extra["env_kwargs"]) == {}
    assert valid["extra_info"][1]["task_id"].endswith("/valid/000001")
    assert train["agent_name"].tolist() == ["agentenvs"] * 3


def test_every_override_composes_into_verls_trainer_config(recorded, composed):
    overrides = recorded["argv"]
    assert overrides[-2:] == USER_OVERRIDES  # the user's overrides come last, so they win
    config = composed
    parsed = OverridesParser.create().parse_overrides(overrides)
    for override in parsed:
        value = override.value()
        expected = list(value) if isinstance(value, list) else value
        got = OmegaConf.select(config, override.key_or_group)
        got = OmegaConf.to_container(got) if OmegaConf.is_config(got) else got
        assert got == expected, override.input_line
    assert config.algorithm.adv_estimator == "agentenvs_gigpo"
    assert config.actor_rollout_ref.rollout.agent.default_agent_loop == "agentenvs"
    assert config.data.train_files.endswith("train.parquet") and Path(config.data.train_files).is_file()
    assert recorded["env"] == {"AGENTENVS_OMEGA": "1.0", "AGENTENVS_ANCHOR": "obs"}


def test_the_agentenvs_block_reaches_the_estimator_settings(composed):
    pytest.importorskip("torch")
    from baselines.verl.estimators import resolve_settings

    settings = resolve_settings({}, composed.algorithm)  # verl passes config=self.config.algorithm
    assert settings["preset"] == "reference" and settings["gamma"] == 0.95


def test_verl_refuses_an_override_outside_its_config():
    # only overrides under "+" may add keys: verl's config has no algorithm.agentenvs block
    with pytest.raises(ConfigCompositionException):
        compose_verl(["algorithm.agentenvs.preset=reference"])
    with pytest.raises(ConfigCompositionException):
        compose_verl(["actor_rollout_ref.rollout.agent.default_agent_loops=agentenvs"])


def test_the_config_tree_checked_is_that_of_the_pinned_verl():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    [pin] = [r for r in extras["optional-dependencies"]["verl"] if re.match(r"verl\b", r)]
    assert pin == f"verl=={importlib.metadata.version('verl')}"


def test_too_few_arguments_print_the_usage():
    done = subprocess.run(["bash", str(SCRIPT), ENV_ID], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "scripts/verl_gigpo.sh ENV_ID MODEL_DIR" in done.stdout

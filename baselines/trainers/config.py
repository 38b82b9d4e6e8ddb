"""A training run's configuration, in sections: env, policy, sampler, optim, algorithm, run.

A YAML file holds one mapping per section::

    env: {id: agentenvs/ALFWorld-v0, kwargs: {max_turns: 50}, num_groups: 16, group_size: 8}
    policy: {model: /models/Qwen2.5-1.5B-Instruct, device: cuda, dtype: bfloat16}
    sampler: {backend: vllm, history_window: 2, max_new_tokens: 512}
    optim: {lr: 1.0e-6, kl_coef: 0.01}
    algorithm: {name: critic_free, estimator: gigpo, gamma: 0.95}
    run: {iterations: 150, seed: 0, out_dir: runs/gigpo}

``--set section.key=value`` overrides one key (the value is read as YAML);
``--set section={...}`` replaces a whole section (how a file written for one
algorithm runs another: ``--set 'algorithm={name: critic_free, estimator: grpo}'``).
The algorithm section's keys are the options of the algorithm it names
(``algorithm.name``, a module of this package; its ``ALGORITHM.Options``).
Every bad key, section or value is a :class:`ConfigError` naming the valid
ones; a key of the former flat layout (``lr``, ``sweet_beta``...) says its
new place.

Every field has a default (GiGPO's, Feng et al. 2025, where the paper gives
one) except ``env.id``: the env comes from the config file.

A config is a path to a YAML file or the name of one shipped in the wheel
(``baselines/configs/<name>.yaml``: ``mini_sokoban``, ``gigpo_alfworld``...;
:func:`packaged_configs` lists them); a file that exists wins over a name.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.resources
import math
import pkgutil
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar


class ConfigError(ValueError):
    """A config file or override that names a key, section or value the trainers do not have."""


@dataclass
class EnvSection:
    """Which env and how many copies: ``num_groups`` tasks × ``group_size`` copies per iteration."""

    id: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)
    num_groups: int = field(default=16, metadata={"minimum": 1})
    group_size: int = field(default=8, metadata={"minimum": 1})
    vector_backend: Literal["inprocess", "subprocess", "ray"] = "inprocess"
    task_pool: list[str] = field(default_factory=list)  # fixed tasks, cycled; empty: split seeds
    task_seed_offset: int = field(default=0, metadata={"minimum": 0})


@dataclass
class PolicySection:
    """The policy model: ``tiny`` (offline, from scratch), ``random:<preset>`` or a local directory."""

    model: str = "tiny"
    tiny_hidden_size: int = field(default=64, metadata={"minimum": 1})
    tiny_layers: int = field(default=2, metadata={"minimum": 1})
    tiny_vocab_size: int = field(default=512, metadata={"minimum": 1})
    action_words: list[str] = field(default_factory=list)  # whole-word tokens of the tiny tokenizer
    constrain_to_actions: bool = False  # sample only action-word tokens (tiny from-scratch runs)
    device: str = "cpu"
    num_threads: int = field(default=0, metadata={"minimum": 0})  # torch CPU threads; 0: torch's default
    dtype: Literal["float32", "float16", "bfloat16"] = "float32"
    gradient_checkpointing: bool = False


@dataclass
class SamplerSection:
    """Prompts and rollouts: the template, the context layout and generation."""

    backend: Literal["transformers", "vllm"] = "transformers"
    vllm_gpu_memory_utilization: float = 0.4
    template_style: Literal["full", "compact"] = "full"
    history_window: int = field(default=2, metadata={"minimum": 0})
    think: bool = True
    context: Literal["window", "full"] = "window"
    max_new_tokens: int = field(default=512, metadata={"minimum": 1})
    max_prompt_tokens: int = field(default=4096, metadata={"minimum": 1})
    temperature: float = 1.0
    # an env crash stops the run ("stop") or its episode leaves the batch ("drop", counted
    # as crashed_episodes in the metrics); never trained on as an ordinary failure
    on_crash: Literal["stop", "drop"] = "stop"


@dataclass
class OptimSection:
    """The actor's optimiser and its PPO-clip update (token-mean over each minibatch)."""

    lr: float = 1e-6
    weight_decay: float = 0.01
    clip: float = 0.2
    kl_coef: float = 0.01
    kl_kind: Literal["low_var_kl", "k1"] = "low_var_kl"
    entropy_coef: float = 0.001
    epochs: int = field(default=1, metadata={"minimum": 1})
    minibatch_size: int = field(default=256, metadata={"minimum": 1})  # sequences per optimizer step
    micro_batch_size: int = field(default=8, metadata={"minimum": 1})  # sequences per forward pass
    grad_clip: float = 1.0


@dataclass
class RunSection:
    """Bookkeeping: how long, which seed, where the metrics and checkpoints go."""

    iterations: int = field(default=150, metadata={"minimum": 0})
    seed: int = 0
    out_dir: str = "runs/default"
    save_every: int = field(default=10, metadata={"minimum": 1})


@dataclass
class AlgorithmOptions:
    """Base of every algorithm's options; ``name`` is the algorithm's module in this package."""

    name: ClassVar[str] = ""


OptionsT = TypeVar("OptionsT", bound=AlgorithmOptions)

SECTIONS: dict[str, type] = {
    "env": EnvSection,
    "policy": PolicySection,
    "sampler": SamplerSection,
    "optim": OptimSection,
    "run": RunSection,
}
SECTION_NAMES = sorted([*SECTIONS, "algorithm"])
DEFAULT_ALGORITHM = "critic_free"

# Keys of the former flat layout whose new name is not "<section>.<same key>".
RENAMED_FLAT_KEYS = {
    "env_id": "env.id",
    "env_kwargs": "env.kwargs",
    "sampler": "sampler.backend",
    "estimator": "algorithm.estimator (algorithm.name: critic_free)",
}


@dataclass
class TrainConfig:
    """Every knob of a training run, one dataclass per section."""

    env: EnvSection = field(default_factory=EnvSection)
    policy: PolicySection = field(default_factory=PolicySection)
    sampler: SamplerSection = field(default_factory=SamplerSection)
    optim: OptimSection = field(default_factory=OptimSection)
    algorithm: AlgorithmOptions = field(default_factory=lambda: algorithm_options_class(DEFAULT_ALGORITHM)())
    run: RunSection = field(default_factory=RunSection)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> TrainConfig:
        """A config from ``{section: {key: value}}``; missing keys keep their defaults."""
        if not isinstance(values, Mapping):
            raise ConfigError(
                f"a config is a mapping of sections {SECTION_NAMES}, got {type(values).__name__}"
            )
        for name, value in values.items():
            if name not in SECTION_NAMES:
                raise ConfigError(_unknown_section_message(name))
            if not isinstance(value, Mapping):
                if name in RENAMED_FLAT_KEYS:
                    raise ConfigError(_unknown_section_message(name))
                raise ConfigError(f"config section {name!r} must be a mapping of keys, got {value!r}")
        sections = {
            name: _build_section(name, section, values.get(name, {})) for name, section in SECTIONS.items()
        }
        config = cls(**sections, algorithm=_build_algorithm(values.get("algorithm", {})))
        if not config.env.id:
            raise ConfigError("env.id is required: the config file names the env (env: {id: agentenvs/...})")
        return config

    def to_dict(self) -> dict[str, Any]:
        """The sectioned mapping (``from_mapping`` of it gives this config back)."""
        values = {name: dataclasses.asdict(getattr(self, name)) for name in SECTIONS}
        values["algorithm"] = {"name": self.algorithm.name, **dataclasses.asdict(self.algorithm)}
        return values

    def algorithm_options(self, kind: type[OptionsT]) -> OptionsT:
        """The algorithm section as ``kind``, the ``Options`` of the algorithm it names."""
        if not isinstance(self.algorithm, kind):
            raise ConfigError(
                f"the algorithm section holds {type(self.algorithm).__name__}, not {kind.__name__}"
            )
        return self.algorithm

    def with_overrides(self, assignments: Sequence[str]) -> TrainConfig:
        """Apply ``section.key=value`` (or ``section=<mapping>``) strings; values are read as YAML."""
        return TrainConfig.from_mapping(apply_overrides(self.to_dict(), assignments))


def apply_overrides(values: Mapping[str, Any], assignments: Sequence[str]) -> dict[str, Any]:
    """``values`` (a sectioned mapping, not yet checked) with ``section.key=value`` strings applied.

    ``section=<mapping>`` replaces the section; a new ``algorithm.name``
    starts that section afresh, since one algorithm's options are not another's.
    """
    values = {
        name: dict(section) if isinstance(section, Mapping) else section for name, section in values.items()
    }
    for assignment in assignments:
        target, sep, raw = assignment.partition("=")
        target = target.strip()
        if not sep or not target:
            raise ConfigError(f"override {assignment!r} is not section.key=value")
        value = read_yaml(raw, f"override {assignment[:80]!r}")
        section, dot, key = target.partition(".")
        if not dot:
            former_flat_key = section in RENAMED_FLAT_KEYS and not isinstance(value, Mapping)
            if section not in SECTION_NAMES or former_flat_key:
                raise ConfigError(_unknown_section_message(section))
            if not isinstance(value, Mapping):
                raise ConfigError(
                    f"override {assignment[:80]!r}: a whole section takes a mapping {{key: value}}"
                )
            values[section] = dict(value)
            continue
        if section not in SECTION_NAMES:
            raise ConfigError(_unknown_section_message(section))
        current = values.setdefault(section, {})
        if not isinstance(current, dict):
            raise ConfigError(f"config section {section!r} must be a mapping of keys, got {current!r}")
        if section == "algorithm" and key == "name" and value != current.get("name", DEFAULT_ALGORITHM):
            values["algorithm"] = {"name": value}
            continue
        current[key] = value
    return values


def read_yaml(text: str, where: str) -> Any:
    """``text`` parsed as YAML; a ConfigError naming ``where`` when it is not YAML or nests too deeply."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{where}: not YAML ({error})") from error
    except RecursionError as error:
        raise ConfigError(f"{where}: nested too deeply to read") from error


def packaged_configs() -> list[str]:
    """The names of the configs shipped in the package (``baselines/configs/<name>.yaml``)."""
    folder = importlib.resources.files("baselines") / "configs"
    if not folder.is_dir():
        return []
    return sorted(item.name.removesuffix(".yaml") for item in folder.iterdir() if item.name.endswith(".yaml"))


def config_source(config: str | Path) -> Any:
    """The YAML file ``config`` names: that file where it exists, else the packaged config of that name.

    A name is a bare file stem, ``.yaml`` optional (``mini_sokoban``); a path with a folder that does
    not exist never falls back on a packaged config. Neither: a ConfigError listing the packaged names.
    """
    path = Path(config)
    if path.is_file():
        return path
    name = str(config)
    stem = name.removesuffix(".yaml")
    names = packaged_configs()
    if path.name == name and stem in names:
        return importlib.resources.files("baselines") / "configs" / f"{stem}.yaml"
    raise ConfigError(
        "not a file, and no packaged config has that name; "
        f"packaged configs: {', '.join(names) or 'none'} (--config takes a path or one of these names)"
    )


def load_config(path: str | Path | None, overrides: Sequence[str] = ()) -> TrainConfig:
    """A config from a YAML file or a packaged config's name (:func:`config_source`), then overrides."""
    values = read_yaml(config_source(path).read_text(encoding="utf-8"), str(path)) if path else {}
    if values is None:
        values = {}
    if not isinstance(values, Mapping):
        raise ConfigError(f"{path}: a config is a mapping of sections {SECTION_NAMES}")
    return TrainConfig.from_mapping(apply_overrides(values, overrides))


def algorithm_names() -> list[str]:
    """The algorithms of this package: every module that defines ``ALGORITHM``."""
    import baselines.trainers as package

    names = []
    for module in pkgutil.iter_modules(package.__path__):
        if module.name.startswith("_"):
            continue
        if hasattr(importlib.import_module(f"{package.__name__}.{module.name}"), "ALGORITHM"):
            names.append(module.name)
    return sorted(names)


def algorithm_options_class(name: Any) -> type[AlgorithmOptions]:
    """The options dataclass of the algorithm module ``name``."""
    return algorithm_class(name).Options


def algorithm_class(name: Any) -> Any:
    """The ``ALGORITHM`` class of ``baselines.trainers.<name>``; a clear error for any other name."""
    if not isinstance(name, str) or name not in algorithm_names():
        raise ConfigError(f"unknown algorithm {name!r}; algorithms: {algorithm_names()}")
    return importlib.import_module(f"baselines.trainers.{name}").ALGORITHM


def _build_algorithm(values: Mapping[str, Any]) -> AlgorithmOptions:
    values = dict(values)
    name = values.pop("name", DEFAULT_ALGORITHM)
    options = algorithm_options_class(name)
    known = {f.name for f in dataclasses.fields(options)}
    for key in values:
        if key not in known:
            owners = [
                other
                for other in algorithm_names()
                if key in {f.name for f in dataclasses.fields(algorithm_options_class(other))}
            ]
            where = f" ({key} is an option of {', '.join(owners)})" if owners else ""
            raise ConfigError(
                f"algorithm {name!r} has no option {key!r}; its options: {sorted(known)}{where}"
            )
    return _typed(options, "algorithm", values)


def _build_section(name: str, section: type, values: Mapping[str, Any]) -> Any:
    known = {f.name for f in dataclasses.fields(section)}
    for key in values:
        if key not in known:
            raise ConfigError(f"unknown key {name}.{key}; {name} keys: {sorted(known)}")
    return _typed(section, name, values)


def _typed(section: type, prefix: str, values: Mapping[str, Any]) -> Any:
    hints = typing.get_type_hints(section)
    typed = {}
    for spec in dataclasses.fields(section):
        if spec.name in values:
            typed[spec.name] = _checked_value(
                f"{prefix}.{spec.name}", hints[spec.name], values[spec.name], spec.metadata
            )
    return section(**typed)


def _checked_value(key: str, kind: Any, value: Any, metadata: Mapping[str, Any]) -> Any:
    """``value`` as the field's type (YAML reads ``1e-6`` as a string), or a ConfigError saying why not."""
    origin = typing.get_origin(kind)
    if origin is Literal:
        choices = typing.get_args(kind)
        if value not in choices or isinstance(value, bool):
            raise ConfigError(f"{key} must be one of {list(choices)}, got {value!r}")
        return value
    if kind in (bool, str):
        if not isinstance(value, kind):
            raise ConfigError(
                f"{key} must be {'true or false' if kind is bool else 'a string'}, got {value!r}"
            )
        return value
    if kind in (int, float):
        number = _integer(value) if kind is int else _number(value)
        if number is None:
            raise ConfigError(
                f"{key} must be {'an integer' if kind is int else 'a finite number'}, got {value!r}"
            )
        if number < metadata.get("minimum", number):
            raise ConfigError(f"{key} must be at least {metadata['minimum']}, got {number}")
        return number
    if origin is list:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{key} must be a list of strings, got {value!r}")
        return list(value)
    if origin is dict:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise ConfigError(f"{key} must be a mapping with string keys, got {value!r}")
        return dict(value)
    raise TypeError(f"{key}: no rule for fields of type {kind!r}")


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _unknown_section_message(name: str) -> str:
    """The error for a top-level key that is no section: a flat key of the former layout says its new name."""
    new = RENAMED_FLAT_KEYS.get(name)
    if new is None and name.startswith("sweet_"):
        new = f"algorithm.{name.removeprefix('sweet_')} (algorithm.name: sweet_rl)"
    if new is None:
        new = _section_of_flat_key(name)
    if new is not None:
        return (
            f"config key {name!r} is now {new}: write it inside its section (or --set {new.split()[0]}=...)"
        )
    return f"unknown config section {name!r}; sections: {SECTION_NAMES}"


def _section_of_flat_key(name: str) -> str | None:
    for section_name, section in SECTIONS.items():
        if name in {f.name for f in dataclasses.fields(section)}:
            return f"{section_name}.{name}"
    for algorithm in algorithm_names():
        if name in {f.name for f in dataclasses.fields(algorithm_options_class(algorithm))}:
            return f"algorithm.{name} (algorithm.name: {algorithm})"
    return None

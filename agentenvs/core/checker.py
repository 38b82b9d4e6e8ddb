"""``check_env``: the env contract of DESIGN.md, checked on one env of any family, in this repository or not.

Gymnasium ships :func:`gymnasium.utils.env_checker.check_env` for its own API;
this checker adds what agentenvs promises on top of it. Give it an env (an
instance, wrapped or not) or a registered id::

    from agentenvs.core.checker import check_env

    report = check_env("agentenvs/Sokoban-v0")
    print(report)             # one line per rule: PASS, FAIL with the evidence, or SKIP with the reason
    report.raise_if_failed()  # ContractViolation listing every failed rule

Every rule plays on fresh copies of the env (``gym.make`` of the id, or
copies of the instance as it was given), so rules never see each other's
episodes. Responses come from a rollout policy that sends a well-formed
admissible action (``info["admissible_actions"]``, else the env's
``sample_action``) three times in four and malformed or hostile text
otherwise, drawn from :func:`~agentenvs.core.keys.derive_rng` so every run
plays the same responses. Scores are played with the registry entry's expert
where the env has one.

The rules, in the order they run (``RULES``):

``spaces``
    ``observation_space`` and ``action_space`` are ``gymnasium.spaces.Text``
    of at least 4,096 characters, and every observation of the first 50
    turns of an episode lies in ``observation_space``.
``gymnasium``
    Gymnasium's own checker, ``gymnasium.utils.env_checker.check_env``, runs
    on the unwrapped env without an error or a warning (deprecations aside).
    Its render check covers every declared render mode of an env made by
    ``gym.make`` (it remakes the env from its spec) and the render mode an
    instance built from its class was given, if any.
``declarations``
    What a model is told, one type each: ``instructions`` is a read-only
    property holding non-blank text, ``goal_in_first_observation`` a
    class-level ``bool``, ``protocol`` a ``ResponseProtocol`` whose
    ``answer_format`` is an ``AnswerFormat``, and a response laid out as that
    format declares (think block, action tag, as many actions as allowed)
    parses well formed, whole and without an error.
``info_keys``
    ``info`` after reset and after every step holds ``task_id``, ``turn``,
    ``max_turns``, ``state_key``, ``obs_key``, ``reward_components`` and
    ``transitions``; a reset's components and transitions are empty and its
    turn is 0; each transition holds ``state_key``, ``action``, ``reward``
    and ``next_state_key``, the last one ending in the info's ``state_key``;
    ``success`` (a bool) and ``score`` appear exactly when the episode ends;
    ``turn`` never passes ``max_turns``; an episode ends within its
    ``max_turns`` (every rule that plays whole episodes fails one that does
    not end within 1,000 turns or its ``max_turns``, whichever is more).
``info_types``
    Info values keep one type per key, nested keys included, over twice as
    many episodes as ``seeds`` (each seed ``s`` and ``s + len(seeds)``), with
    ``max_turns`` raised to 30 where the env has it (long enough to reach
    dead ends), so Gymnasium's vector envs can stack them.
``keys``
    ``state_key`` and ``obs_key`` are lowercase hex digests (16 digits or
    more) after reset and after every step; one observation text always gets
    one ``obs_key``; ``reset(seed=s)`` twice gives the same observation and
    keys.
``task_ids``
    ``reset(options={"task_id": id})`` reproduces the seeded reset that drew
    ``id`` (observation and state key); an unknown task id and an unknown
    reset option raise ``ValueError``; the splits of ``task_source`` never
    share a task id (the first 2,000 of each split).
``reward``
    Every turn's reward is a finite float equal to Σ weight · component over
    ``reward_weights``, every weighted component present; on a valid turn it
    is also Σ transition rewards + the turn-level terms (``format``,
    ``invalid_action``); an invalid turn has no transitions.
``determinism``
    The same seeds and responses give identical observations, rewards, ends,
    state keys, obs keys, components, scores and successes in this process,
    on a second fresh env, and in fresh interpreters with other
    ``PYTHONHASHSEED`` values (``hash_seeds``). The child process rebuilds the
    env from its id (the ``gymnasium`` spec) or from the instance's pickle, on
    this process's ``sys.path``.
``hostile_text``
    ``step`` never raises and returns a finite float reward and an
    observation inside ``observation_space`` on hostile input: lone
    surrogates, a 1,000,000-character string, bidi and zero-width
    characters, 200,000 nested brackets, thousands of nested tags, control
    characters, bytes, ``None``, numbers, lists and dicts, then
    ``fuzz_turns`` fuzzed responses (random code points, admissible actions
    with a character inserted, tag soup, random bytes). An invalid turn
    (``invalid_action`` fired) leaves the state key unchanged and has no
    transitions, and more than a tenth of the fuzzed turns are invalid.
``score``
    At every episode's end ``score`` is a float in [0, 1].
``snapshot``
    ``snapshot()`` before any reset raises ``RuntimeError``; a snapshot
    pickles in under 64 KiB; ``reset(options={"snapshot": s})`` (into the same
    env and into a fresh one) gives back the observation, state key and turn
    and then the same responses continue bit-identically, and a seedless
    reset after it draws the same next task (the RNG travels too); a snapshot
    with a ``task_id`` and an object that is no snapshot raise
    ``ValueError``; a snapshot taken before every turn of an episode (the
    expert's where the env has one) restores to replay the rest identically.
``pickling``
    The env pickles and deep-copies before and after reset, in under 2 MB;
    copies continue exactly as the original does, and the original's
    snapshots restore into them.
``vector``
    Gymnasium's vector envs (``gym.make_vec`` sync and async for an id,
    ``SyncVectorEnv`` and ``AsyncVectorEnv`` over a picklable factory for
    both) read exactly like single envs fed the same responses, across
    episode ends and next-step autoresets (``max_turns`` cut to 5 where the
    env has it); the async ones' worker processes (forked, Gymnasium's
    default) answer each call within 60 seconds.
``docs``
    ``help()`` of the env class shows ``Args:``, the table of the family (a
    ``====`` rule in the class docstring) and every reward component; an
    observation-mode kwarg is named ``obs_mode`` (``observation_mode`` only
    beside it, as an alias).

A rule fails with a short message saying what it saw; a rule that cannot run
on this env skips, saying why (``determinism`` for an instance that does not
pickle). :class:`~agentenvs.core.env.MissingProgram` (a program outside
Python, such as a browser, is not installed) is not a contract failure: it
propagates, so the caller can skip, naming the program.

Run from a shell: ``python -m agentenvs.core.checker ID [ID ...]`` prints each
report and exits 1 when one fails.

May import: ``agentenvs.core`` (its modules, never the package itself), the
standard library, gymnasium and numpy. The registered ids come from
``import agentenvs``, done by :mod:`importlib` when an id is given.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import inspect
import json
import math
import multiprocessing
import os
import pickle
import pydoc
import re
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils import env_checker as gymnasium_checker
from gymnasium.utils.passive_env_checker import env_render_passive_checker

from agentenvs.core import registration
from agentenvs.core.env import TURN_COMPONENTS, MissingProgram
from agentenvs.core.keys import derive_rng
from agentenvs.core.protocol import AnswerFormat, ResponseProtocol
from agentenvs.core.untrusted import short_repr

RULES: tuple[str, ...] = (
    "spaces",
    "gymnasium",
    "declarations",
    "info_keys",
    "info_types",
    "keys",
    "task_ids",
    "reward",
    "determinism",
    "hostile_text",
    "score",
    "snapshot",
    "pickling",
    "vector",
    "docs",
)

SEEDS: tuple[int, ...] = (0, 1, 2)
HASH_SEEDS: tuple[str, ...] = ("0", "4242")
FUZZ_TURNS = 10_000
BASE_INFO_KEYS = frozenset(
    {"task_id", "turn", "max_turns", "state_key", "obs_key", "reward_components", "transitions"}
)
TRANSITION_KEYS = frozenset({"state_key", "action", "reward", "next_state_key"})
MIN_SPACE_CHARS = 4096
MAX_EPISODE_TURNS = 1000  # an episode that has not ended by then (or by its max_turns, if more) never will
SPACES_TURNS = 50  # turns of an episode whose observations the spaces rule checks
MAX_SNAPSHOT_BYTES = 65_536
MAX_PICKLE_BYTES = 2_000_000
ROLLOUT_TURNS = 12
TYPES_MAX_TURNS = 30
VECTOR_TURNS = 5
VECTOR_TIMEOUT = 60.0  # seconds a vector env's worker processes may take to answer one call
HEX_KEY = re.compile(r"[0-9a-f]{16,}")
RESULT_MARK = "CHECK_ENV_RESULT "

# Malformed responses the rollout policy mixes in (a quarter of its turns).
NOISE: tuple[str, ...] = (
    "",
    "<action>",
    "</action><action>",
    "<think>no action here</think>",
    "definitely not an action",
    "<action>fly to the moon</action>",
    "\x00\xff\ud7ff",
    "<action>" + "z" * 5000 + "</action>",
)

# What a policy or a copied transcript may send: every one must leave the env standing.
HOSTILE: tuple[object, ...] = (
    *NOISE,
    "\ud800",  # lone surrogates, alone and inside an action
    "<action>\udfff</action>",
    "up\ud83d",
    "x" * 1_000_000,  # huge
    "<action>" + "y" * 100_000 + "</action>",
    "\u202eelcric\u202c",  # bidi overrides and isolates
    "<action>\u2067up\u2069</action>",
    "\u200b",  # zero-width characters
    "<action>u\u200bp\u200d</action>",
    "\ufeff<action>look</action>",
    "[" * 200_000,  # nested brackets
    "<action>" + "[{(" * 50_000 + ")}]" * 50_000 + "</action>",
    "<action>" * 20_000,  # nested and stray tags
    "</action>" * 20_000 + "<think>" * 5_000,
    "\r\n\t\x0b\x0c\x1b[31m\x7f\x85",  # control characters
    b"\xff\xfe\x00",
    bytearray(b"<action>up</action>"),
    None,
    12345,
    1.5,
    float("nan"),
    ["<action>up</action>"],
    {"action": "up"},
)

Status = Literal["passed", "failed", "skipped"]


class ContractViolation(AssertionError):
    """An env broke the contract: the message lists every failed rule with its evidence."""

    def __init__(self, report: CheckReport) -> None:
        super().__init__(str(report))
        self.report = report


class RuleFailed(AssertionError):
    """Raised inside a rule: the contract does not hold (the message is the evidence)."""


class RuleSkipped(Exception):
    """Raised inside a rule: the rule cannot run on this env (the message says why)."""


@dataclass(frozen=True)
class RuleResult:
    """One rule's outcome: ``passed``, ``failed`` (``message`` is the evidence) or ``skipped`` (why)."""

    rule: str
    status: Status
    message: str = ""
    seconds: float = 0.0

    def __str__(self) -> str:
        head = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP"}[self.status]
        return f"{head} {self.rule}" + (f": {self.message}" if self.message else "")


@dataclass
class CheckReport:
    """What :func:`check_env` found: one :class:`RuleResult` per rule run, in ``RULES`` order."""

    env: str
    results: list[RuleResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No rule failed (skipped rules do not count against the env)."""
        return not self.failures

    @property
    def failures(self) -> list[RuleResult]:
        return [result for result in self.results if result.status == "failed"]

    @property
    def failed_rules(self) -> list[str]:
        return [result.rule for result in self.failures]

    def result(self, rule: str) -> RuleResult:
        """The result of ``rule`` (KeyError when it did not run)."""
        for result in self.results:
            if result.rule == rule:
                return result
        raise KeyError(f"rule {rule!r} did not run; ran: {[r.rule for r in self.results]}")

    def raise_if_failed(self) -> None:
        """Raise :class:`ContractViolation` listing the failed rules, when there are any."""
        if not self.ok:
            raise ContractViolation(self)

    def __str__(self) -> str:
        counts = {status: sum(r.status == status for r in self.results) for status in ("passed", "failed")}
        skipped = len(self.results) - counts["passed"] - counts["failed"]
        head = (
            f"check_env({self.env}): {'ok' if self.ok else 'FAILED'}, {counts['passed']} passed, "
            f"{counts['failed']} failed, {skipped} skipped"
        )
        ordered = [*self.failures, *(r for r in self.results if r.status != "failed")]
        return "\n".join([head, *(f"  {result}" for result in ordered)])


# ------------------------------------------------------------------ what the rules play
def digest(value: Any) -> str:
    """A short stable digest of an observation (or of any value's ``repr``), surrogates included."""
    text = value if isinstance(value, str) else repr(value)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def choose_response(env: gym.Env[Any, Any], info: Mapping[str, Any], rng: np.random.Generator) -> str:
    """The rollout policy: mostly a well-formed admissible action (or a sampled one); sometimes noise."""
    admissible = info.get("admissible_actions")
    base = env.unwrapped
    protocol = getattr(base, "protocol", None)
    wrap: Callable[[str], str] = protocol.format if isinstance(protocol, ResponseProtocol) else str
    if rng.random() < 0.75:
        if admissible:
            return wrap(admissible[int(rng.integers(len(admissible)))])
        if hasattr(base, "sample_action"):
            return wrap(base.sample_action(rng))
    return NOISE[int(rng.integers(len(NOISE)))]


def fuzz_response(rng: np.random.Generator, admissible: Sequence[str] | None) -> object:
    """One fuzzed response: noise, random code points, a corrupted action, tag soup, bytes or a non-str."""
    kind = int(rng.integers(6))
    if kind == 0:
        return NOISE[int(rng.integers(len(NOISE)))]
    if kind == 1:
        return "".join(chr(int(c)) for c in rng.integers(1, 0xD7FF, size=int(rng.integers(0, 60))))
    if kind == 2 and admissible:
        action = admissible[int(rng.integers(len(admissible)))]
        cut = int(rng.integers(len(action) + 1))
        return f"<action>{action[:cut]}{chr(int(rng.integers(33, 127)))}{action[cut:]}</action>"
    if kind == 3:
        tags = ["<action>", "</action>", "<think>", "</think>", "||", "[", "]", "click", "search", "up"]
        return "".join(tags[int(i)] for i in rng.integers(0, len(tags), size=int(rng.integers(1, 8))))
    if kind == 4:
        return bytes(int(b) for b in rng.integers(0, 256, size=int(rng.integers(0, 40))))
    return None if rng.random() < 0.5 else 12345


def rollouts(
    env: gym.Env[Any, Any], seeds: Iterable[int], max_turns: int = ROLLOUT_TURNS
) -> list[dict[str, Any]]:
    """Deterministic mixed rollouts of ``env`` (admissible, malformed and hostile responses), as JSON data.

    What :func:`check_env`'s ``determinism`` rule compares between processes.
    """
    records = []
    for seed in seeds:
        rng = derive_rng("check_env", "determinism", seed)
        obs, info = env.reset(seed=seed)
        steps: list[list[Any]] = [
            [digest(obs), info.get("state_key"), info.get("obs_key"), info.get("task_id")]
        ]
        for _ in range(max_turns):
            response = choose_response(env, info, rng)
            obs, reward, terminated, truncated, info = env.step(response)
            steps.append(
                [
                    digest(response),
                    digest(obs),
                    float(reward),
                    bool(terminated),
                    bool(truncated),
                    info.get("state_key"),
                    info.get("obs_key"),
                    info.get("reward_components"),
                    info.get("score"),
                    info.get("success"),
                ]
            )
            if terminated or truncated:
                break
        records.append({"seed": seed, "steps": steps})
    result: list[dict[str, Any]] = json.loads(json.dumps(records, sort_keys=True, default=repr))
    return result


def _play(env: gym.Env[Any, Any], responses: Sequence[object]) -> list[tuple[Any, ...]]:
    """What stepping ``responses`` returns (observations digested, info as sorted JSON), until the end."""
    record: list[tuple[Any, ...]] = []
    for response in responses:
        observation, reward, terminated, truncated, info = env.step(response)
        info_text = json.dumps(info, sort_keys=True, default=repr)
        record.append((digest(observation), reward, terminated, truncated, info_text))
        if terminated or truncated:
            break
    return record


def _first_difference(expected: Sequence[Any], got: Sequence[Any]) -> str:
    """Where two played records part: ``turn N`` (1-based) or the lengths."""
    for index, (a, b) in enumerate(zip(expected, got, strict=False)):
        if a != b:
            return f"turn {index + 1}: expected {short_repr(a, 160)}, got {short_repr(b, 160)}"
    return f"{len(expected)} turns expected, {len(got)} played"


def _check(condition: object, message: str | Callable[[], str]) -> None:
    if not condition:
        raise RuleFailed(message() if callable(message) else message)


# ------------------------------------------------------------------ the env under check
class _Unpickle:
    """A picklable env factory: a fresh env from pickled bytes (the vector envs' constructor)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __call__(self) -> gym.Env[Any, Any]:
        env: gym.Env[Any, Any] = pickle.loads(self.data)
        return env


class _Make:
    """A picklable env factory: ``gym.make(spec, **kwargs)``."""

    def __init__(self, spec: EnvSpec, kwargs: Mapping[str, Any]) -> None:
        self.spec = spec
        self.kwargs = dict(kwargs)

    def __call__(self) -> gym.Env[Any, Any]:
        return gym.make(self.spec, **self.kwargs)


class _Subject:
    """The env under check, made afresh for every rule: ``gym.make`` of an id, or a copy of an instance."""

    def __init__(self, target: gym.Env[Any, Any] | str, make_kwargs: Mapping[str, Any]) -> None:
        self.kwargs = dict(make_kwargs)
        self.spec: EnvSpec | None = None
        self.instance: gym.Env[Any, Any] | None = None
        self.pickled: bytes | None = None
        self.pickle_error = ""
        self.copyable = True
        if isinstance(target, str):
            importlib.import_module("agentenvs")  # registers the ids (core never imports the package)
            self.env_id: str | None = registration.resolve_id(target)
            unavailable = registration.unavailable_reason(self.env_id)
            if unavailable is not None:
                raise ImportError(f"{self.env_id} cannot be checked here: it {unavailable}")
            self.spec = gym.spec(self.env_id)
            self.label = self.env_id
        else:
            if not isinstance(target, gym.Env):
                raise TypeError(
                    f"check_env takes a gymnasium.Env or a registered id, got {short_repr(target)}"
                )
            if make_kwargs:
                raise TypeError("make_kwargs apply to an id; an instance is checked as it was built")
            self.env_id = None
            self.instance = target
            spec = target.spec or target.unwrapped.spec
            self.label = f"{type(target.unwrapped).__qualname__}" + (f" ({spec.id})" if spec else "")
            try:
                self.pickled = pickle.dumps(target)
            except Exception as exc:
                self.pickle_error = f"{type(exc).__name__}: {exc}"
                try:
                    copy.deepcopy(target)
                except Exception:
                    self.copyable = False

    def make(self, **overrides: Any) -> gym.Env[Any, Any]:
        """A fresh env; ``overrides`` are kwargs for an id, attributes set on the copy's unwrapped env."""
        if self.spec is not None:
            return gym.make(self.spec, **{**self.kwargs, **overrides})
        assert self.instance is not None
        if self.pickled is not None:
            env: gym.Env[Any, Any] = pickle.loads(self.pickled)
        elif self.copyable:
            env = copy.deepcopy(self.instance)
        else:  # neither pickles nor deep-copies (the pickling rule says so): the rules share the instance
            return self.instance
        for name, value in overrides.items():
            if isinstance(getattr(env.unwrapped, name, None), int):
                setattr(env.unwrapped, name, value)
        return env

    def can_override(self, name: str) -> bool:
        """Whether ``make(name=...)`` takes effect (a kwarg of the id's class, an int attribute)."""
        if self.spec is not None:
            entry = self.spec.entry_point
            creator: Any = registration.load_import_string(entry) if isinstance(entry, str) else entry
            try:
                return name in inspect.signature(creator).parameters
            except (TypeError, ValueError):
                return False
        assert self.instance is not None
        return self.copyable and isinstance(getattr(self.instance.unwrapped, name, None), int)

    def child_target(self) -> tuple[str, bytes]:
        """How a child process rebuilds the env: ``("make", pickled factory)`` or ``("env", pickled env)``."""
        if self.spec is not None:
            return "make", pickle.dumps(_Make(self.spec, self.kwargs))
        if self.pickled is None:
            raise RuleSkipped(
                f"the env does not pickle ({self.pickle_error}), so no child process can rebuild it"
            )
        return "env", self.pickled

    def factory(self, **overrides: Any) -> Callable[[], gym.Env[Any, Any]]:
        """A picklable constructor of fresh envs (for ``AsyncVectorEnv``)."""
        if self.spec is not None:
            return _Make(self.spec, {**self.kwargs, **overrides})
        return _Unpickle(pickle.dumps(self.make(**overrides)))


@dataclass
class _Context:
    subject: _Subject
    seeds: tuple[int, ...]
    hash_seeds: tuple[str, ...]
    fuzz_turns: int
    timeout: float


Step = tuple[Any, Any, bool, bool, dict[str, Any]]  # what step() returned


def _episode(
    env: gym.Env[Any, Any],
    seed: int,
    rng: np.random.Generator,
    each: Callable[[str, Step], None] | None = None,
    act: Callable[[Any, dict[str, Any]], object] | None = None,
    turns: int | None = None,
) -> dict[str, Any]:
    """Play one episode from ``reset(seed=seed)`` (its first ``turns`` turns, when given); ``each`` sees
    every step with where it happened (``"seed S, turn T"``); the last info is returned.

    An episode must end within its declared ``max_turns``, or :data:`MAX_EPISODE_TURNS` when it declares
    fewer (or none)."""
    observation, info = env.reset(seed=seed)
    declared = info.get("max_turns")
    limit = max(MAX_EPISODE_TURNS, declared if isinstance(declared, int) else 0)
    for turn in range(1, limit + 1):
        if turns is not None and turn > turns:
            return info
        response = act(observation, info) if act else choose_response(env, info, rng)
        observation, reward, terminated, truncated, info = env.step(response)
        if each is not None:
            each(f"seed {seed}, turn {turn}", (observation, reward, terminated, truncated, info))
        if terminated or truncated:
            return info
    raise RuleFailed(f"seed {seed}: the episode did not end in {limit} turns")


def _expert(env: gym.Env[Any, Any]) -> Any | None:
    """The registry entry's expert on ``env``, or None (no entry, no expert)."""
    try:
        return registration.make_expert(env)
    except (registration.PolicyUnavailable, registration.UnknownEnvError):
        return None


def _closing(env: gym.Env[Any, Any]) -> None:
    try:
        env.close()
    except Exception:  # a failing close is gymnasium's rule to report, not every rule's
        pass


# ------------------------------------------------------------------ the rules
def _rule_spaces(ctx: _Context) -> None:
    env = ctx.subject.make()
    try:
        for name in ("observation_space", "action_space"):
            space = getattr(env, name)
            _check(isinstance(space, spaces.Text), f"{name} is {space!r}, not a gymnasium.spaces.Text")
            _check(
                space.max_length >= MIN_SPACE_CHARS,
                f"{name} holds at most {space.max_length} characters (fewer than {MIN_SPACE_CHARS})",
            )
        rng = derive_rng("check_env", "spaces")
        seed = ctx.seeds[0]
        observation, _ = env.reset(seed=seed)
        _check(
            env.observation_space.contains(observation),
            f"the observation of reset(seed={seed}) is outside observation_space: {short_repr(observation)}",
        )

        def each(where: str, step: Step) -> None:
            _check(
                env.observation_space.contains(step[0]),
                f"the observation of {where} is outside observation_space: {short_repr(step[0])}",
            )

        _episode(env, seed, rng, each, turns=SPACES_TURNS)
    finally:
        _closing(env)


def _rule_gymnasium(ctx: _Context) -> None:
    env = ctx.subject.make()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                # its render check remakes the env from its spec in each declared render mode; an env
                # built from its class has no spec, so its own render mode (if any) is checked alone
                base = env.unwrapped
                gymnasium_checker.check_env(base, skip_render_check=base.spec is None)
                if base.spec is None and base.render_mode is not None:
                    base.reset(seed=ctx.seeds[0])
                    env_render_passive_checker(base)
            except MissingProgram:
                raise
            except Exception as exc:
                raise RuleFailed(f"gymnasium's check_env raised {type(exc).__name__}: {exc}") from exc
        problems = [str(w.message) for w in caught if not issubclass(w.category, DeprecationWarning)]
        _check(not problems, lambda: "gymnasium's check_env warns: " + " | ".join(problems))
    finally:
        _closing(env)


def _rule_declarations(ctx: _Context) -> None:
    env = ctx.subject.make()
    try:
        base, family = env.unwrapped, type(env.unwrapped)
        _check(
            isinstance(inspect.getattr_static(family, "instructions", None), property),
            f"{family.__name__}.instructions is not a property",
        )
        try:
            base.instructions = "other text"  # type: ignore[attr-defined]
        except AttributeError:
            pass
        else:
            raise RuleFailed("instructions can be assigned: it must be a read-only property")
        text = base.instructions  # type: ignore[attr-defined]
        _check(
            isinstance(text, str) and text.strip(), f"instructions is {short_repr(text)}, not non-blank text"
        )
        declared = getattr(family, "goal_in_first_observation", None)
        _check(
            type(declared) is bool,
            f"{family.__name__}.goal_in_first_observation is {short_repr(declared)}, not a class-level bool",
        )
        protocol = getattr(base, "protocol", None)
        _check(
            isinstance(protocol, ResponseProtocol),
            f"protocol is {short_repr(protocol)}, not an agentenvs.core.protocol.ResponseProtocol",
        )
        assert isinstance(protocol, ResponseProtocol)
        answer = protocol.answer_format
        _check(isinstance(answer, AnswerFormat), f"protocol.answer_format is {short_repr(answer)}")
        words = [f"step{k}" for k in range(answer.max_actions)]
        body = f" {answer.separator} ".join(words) if answer.separator else words[0]
        block = f"<{answer.action_tags[0]}>{body}</{answer.action_tags[0]}>" if answer.action_tags else body
        response = f"<{answer.think_tag}>plan</{answer.think_tag}>{block}"
        parsed = protocol.parse(response)
        _check(
            parsed.well_formed and parsed.error is None and len(parsed.actions) == answer.max_actions,
            lambda: f"the declared format {short_repr(response)} reads as {parsed}",
        )
        _check(
            all(word in action for word, action in zip(words, parsed.actions, strict=False)),
            lambda: f"the declared format {short_repr(response)} reads the actions {parsed.actions}",
        )
    finally:
        _closing(env)


def _check_info(info: Mapping[str, Any], where: str, *, done: bool) -> None:
    missing = sorted(BASE_INFO_KEYS - set(info))
    _check(not missing, f"info {where} lacks {missing}")
    ended = "success" in info and "score" in info
    _check(
        ended == done,
        f"info {where} "
        + ("lacks success/score at the episode's end" if done else "holds success/score early"),
    )
    if done:
        _check(type(info["success"]) is bool, f"info['success'] {where} is {short_repr(info['success'])}")
    _check(
        isinstance(info["transitions"], list),
        f"info['transitions'] {where} is {short_repr(info['transitions'])}",
    )
    for transition in info["transitions"]:
        _check(
            isinstance(transition, Mapping) and TRANSITION_KEYS <= set(transition),
            f"a transition {where} is {short_repr(transition)}: it needs {sorted(TRANSITION_KEYS)}",
        )
    if info["transitions"]:
        _check(
            info["transitions"][-1]["next_state_key"] == info["state_key"],
            f"the last transition {where} does not end in info['state_key']",
        )
    _check(
        isinstance(info["turn"], int)
        and isinstance(info["max_turns"], int)
        and info["turn"] <= info["max_turns"],
        f"info {where}: turn {short_repr(info['turn'])} of max_turns {short_repr(info['max_turns'])}",
    )


def _check_step_info(where: str, step: Step) -> None:
    _check_info(step[4], f"of {where}", done=step[2] or step[3])


def _rule_info_keys(ctx: _Context) -> None:
    env = ctx.subject.make()
    try:
        for seed in ctx.seeds:
            _, info = env.reset(seed=seed)
            where = f"after reset(seed={seed})"
            _check_info(info, where, done=False)
            _check(
                info["reward_components"] == {} and info["transitions"] == [] and info["turn"] == 0,
                f"info {where} has components {short_repr(info['reward_components'])}, "
                f"transitions {short_repr(info['transitions'])}, turn {info['turn']} (want {{}}, [], 0)",
            )
            _episode(env, seed, derive_rng("check_env", "info", seed), _check_step_info)
    finally:
        _closing(env)


def _type_paths(value: Any, path: str, types: dict[str, set[type]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _type_paths(item, f"{path}.{key}", types)
    else:
        types.setdefault(path, set()).add(type(value))


def _long_seeds(seeds: Sequence[int]) -> list[int]:
    return [*seeds, *(seed + len(seeds) for seed in seeds)]


def _rule_info_types(ctx: _Context) -> None:
    overrides = {"max_turns": TYPES_MAX_TURNS} if ctx.subject.can_override("max_turns") else {}
    env = ctx.subject.make(**overrides)
    try:
        types: dict[str, set[type]] = {}
        for seed in _long_seeds(ctx.seeds):
            _, info = env.reset(seed=seed)
            _type_paths(info, "info", types)
            _episode(
                env,
                seed,
                derive_rng("check_env", "types", seed),
                lambda _where, step: _type_paths(step[4], "info", types),
            )
        mixed = {path: sorted(t.__name__ for t in kinds) for path, kinds in types.items() if len(kinds) > 1}
        _check(not mixed, f"info values change type: {mixed}")
    finally:
        _closing(env)


def _rule_keys(ctx: _Context) -> None:
    env = ctx.subject.make()
    try:
        obs_keys: dict[str, str] = {}

        def look(observation: Any, info: Mapping[str, Any], where: str) -> None:
            for name in ("state_key", "obs_key"):
                key = info.get(name)
                _check(
                    isinstance(key, str) and HEX_KEY.fullmatch(key),
                    f"info[{name!r}] {where} is {short_repr(key)}, not a lowercase hex digest",
                )
            if isinstance(observation, str):  # an image's repr is cut short: only texts are compared
                known = obs_keys.setdefault(observation, info["obs_key"])
                _check(known == info["obs_key"], f"one observation text got two obs_keys ({where})")

        for seed in ctx.seeds:
            observation, info = env.reset(seed=seed)
            look(observation, info, f"after reset(seed={seed})")
            again, info_again = env.reset(seed=seed)
            _check(
                digest(again) == digest(observation)
                and info_again.get("state_key") == info.get("state_key")
                and info_again.get("obs_key") == info.get("obs_key"),
                f"reset(seed={seed}) twice gives two different starts",
            )
            _episode(
                env,
                seed,
                derive_rng("check_env", "keys", seed),
                lambda where, step: look(step[0], step[4], where),
            )
    finally:
        _closing(env)


def _rule_task_ids(ctx: _Context) -> None:
    env = ctx.subject.make()
    try:
        seed = ctx.seeds[-1] + 5
        obs, info = env.reset(seed=seed)
        obs_again, info_again = env.reset(options={"task_id": info["task_id"]})
        _check(
            info_again["task_id"] == info["task_id"]
            and info_again["state_key"] == info["state_key"]
            and digest(obs_again) == digest(obs),
            f"reset(options={{'task_id': {info['task_id']!r}}}) differs from reset(seed={seed}) that drew it",
        )
        for options in ({"task_id": "no-such-task"}, {"bogus_option": 1}):
            try:
                env.reset(options=options)
            except ValueError:
                continue
            except MissingProgram:
                raise
            except Exception as exc:
                raise RuleFailed(
                    f"reset(options={options}) raised {type(exc).__name__}, not ValueError"
                ) from exc
            raise RuleFailed(f"reset(options={options}) did not raise ValueError")
        source = getattr(env.unwrapped, "task_source", None)
        if source is not None:
            seen: dict[str, str] = {}
            for split in source.splits:
                for index in range(min(source.size(split), 2000)):
                    task_id = source.task_id(split, index)
                    first = seen.setdefault(task_id, split)
                    _check(first == split, f"task {task_id!r} is in the splits {first!r} and {split!r}")
    finally:
        _closing(env)


def _rule_reward(ctx: _Context) -> None:
    env = ctx.subject.make()
    try:
        weights = getattr(env.unwrapped, "reward_weights", None)
        _check(isinstance(weights, Mapping) and weights, f"reward_weights is {short_repr(weights)}")
        assert isinstance(weights, Mapping)

        def each(where: str, step: Step) -> None:
            _, reward, _, _, info = step
            _check(
                isinstance(reward, float) and math.isfinite(reward),
                f"{where}: reward {short_repr(reward)} is no finite float",
            )
            components = info["reward_components"]
            _check(
                set(components) == set(weights),
                f"{where}: components {sorted(components)} are not the weighted names {sorted(weights)}",
            )
            weighted = sum(weights[k] * v for k, v in components.items())
            _check(
                math.isclose(reward, weighted, abs_tol=1e-9),
                f"{where}: reward {reward} != Σ weight · component = {weighted} ({components})",
            )
            if components.get("invalid_action"):
                _check(info["transitions"] == [], f"{where}: an invalid turn has transitions")
            else:
                turn_terms = sum(weights[k] * components[k] for k in TURN_COMPONENTS if k in components)
                from_steps = sum(t["reward"] for t in info["transitions"])
                _check(
                    math.isclose(reward, from_steps + turn_terms, abs_tol=1e-9),
                    f"{where}: reward {reward} != transition rewards {from_steps} + turn terms {turn_terms}",
                )

        for seed in ctx.seeds:
            _episode(env, seed, derive_rng("check_env", "reward", seed), each)
    finally:
        _closing(env)


def _child_environment(hash_seed: str) -> dict[str, str]:
    """This process's environment with ``PYTHONHASHSEED`` set and this ``sys.path`` on ``PYTHONPATH``."""
    paths = [path or os.getcwd() for path in sys.path]
    return dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=os.pathsep.join(paths))


def _run_child(ctx: _Context, hash_seed: str) -> list[dict[str, Any]]:
    kind, data = ctx.subject.child_target()
    payload = pickle.dumps({"kind": kind, "data": data, "seeds": list(ctx.seeds)})
    code = "from agentenvs.core.checker import child_main; child_main()"
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            input=payload,
            env=_child_environment(hash_seed),
            capture_output=True,
            timeout=ctx.timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuleFailed(f"the child process (PYTHONHASHSEED={hash_seed}) ran past {ctx.timeout} s") from exc
    lines = [
        line for line in done.stdout.decode("utf-8", "replace").splitlines() if line.startswith(RESULT_MARK)
    ]
    if not lines:
        stderr = done.stderr.decode("utf-8", "replace")[-1500:]
        raise RuleFailed(f"the child process (PYTHONHASHSEED={hash_seed}) exited {done.returncode}: {stderr}")
    answer = json.loads(lines[-1][len(RESULT_MARK) :])
    if "missing_program" in answer:
        raise MissingProgram(*answer["missing_program"])
    if "error" in answer:
        raise RuleFailed(f"in a fresh process (PYTHONHASHSEED={hash_seed}): {answer['error']}")
    result: list[dict[str, Any]] = answer["rollouts"]
    return result


# What each entry of a rollout records (``rollouts``): the reset's, then each turn's.
RESET_FIELDS = ("observation", "state_key", "obs_key", "task_id")
TURN_FIELDS = (
    "response",
    "observation",
    "reward",
    "terminated",
    "truncated",
    "state_key",
    "obs_key",
    "reward_components",
    "score",
    "success",
)


def _compare_rollouts(here: list[dict[str, Any]], there: list[dict[str, Any]], where: str) -> None:
    """Fail naming the first seed, turn and fields where two sets of rollouts part."""
    for mine, theirs in zip(here, there, strict=False):
        for turn, (a, b) in enumerate(zip(mine["steps"], theirs["steps"], strict=False)):
            if a != b:
                names = RESET_FIELDS if turn == 0 else TURN_FIELDS
                fields = [
                    f"{name} {short_repr(x, 40)} vs {short_repr(y, 40)}"
                    for name, x, y in zip(names, a, b, strict=False)
                    if x != y
                ]
                at = "the reset" if turn == 0 else f"turn {turn}"
                raise RuleFailed(f"seed {mine['seed']}, {at} differs {where}: " + "; ".join(fields))
        _check(
            len(mine["steps"]) == len(theirs["steps"]),
            f"seed {mine['seed']}: {len(mine['steps']) - 1} turns here, {len(theirs['steps']) - 1} {where}",
        )
    _check(len(here) == len(there), f"{len(here)} episodes here, {len(there)} {where}")


def _rule_determinism(ctx: _Context) -> None:
    envs = [ctx.subject.make(), ctx.subject.make()]
    try:
        here = rollouts(envs[0], ctx.seeds)
        _compare_rollouts(here, rollouts(envs[0], ctx.seeds), "when the same env plays it again")
        _compare_rollouts(here, rollouts(envs[1], ctx.seeds), "on a second fresh env")
    finally:
        for env in envs:
            _closing(env)
    for hash_seed in ctx.hash_seeds:
        _compare_rollouts(
            here, _run_child(ctx, hash_seed), f"in a fresh process with PYTHONHASHSEED={hash_seed}"
        )


def child_main() -> None:
    """The ``determinism`` rule's child: read a pickled target from stdin, print its rollouts as one line."""
    job = pickle.loads(sys.stdin.buffer.read())
    out = sys.stdout
    sys.stdout = sys.stderr  # whatever the env prints stays off the answer line
    try:
        if job["kind"] == "make":
            importlib.import_module("agentenvs")  # what an id's env module expects to find imported
            env = pickle.loads(job["data"])()
        else:
            env = pickle.loads(job["data"])
        answer: dict[str, Any] = {"rollouts": rollouts(env, job["seeds"])}
    except MissingProgram as exc:
        answer = {"missing_program": [exc.program, str(exc)]}
    except Exception as exc:
        answer = {"error": f"{type(exc).__name__}: {exc} [{_where_raised(exc)}]"}
    out.write(RESULT_MARK + json.dumps(answer) + "\n")
    out.flush()


def _rule_hostile_text(ctx: _Context) -> None:
    env = ctx.subject.make()
    try:
        seed = ctx.seeds[0]
        _, info = env.reset(seed=seed)
        invalid_fuzzed = 0
        rng = derive_rng("check_env", "fuzz")
        for turn in range(len(HOSTILE) + ctx.fuzz_turns):
            fuzzed = turn >= len(HOSTILE)
            response = fuzz_response(rng, info.get("admissible_actions")) if fuzzed else HOSTILE[turn]
            before = info["state_key"]
            try:
                observation, reward, terminated, truncated, info = env.step(response)
            except MissingProgram:
                raise
            except Exception as exc:
                raise RuleFailed(
                    f"step({short_repr(response)}) raised {type(exc).__name__}: {exc} [{_where_raised(exc)}]"
                ) from exc
            what = f"step({short_repr(response)})"
            _check(
                isinstance(reward, float) and math.isfinite(reward),
                f"{what} returned the reward {short_repr(reward)}",
            )
            if not env.observation_space.contains(observation):
                raise RuleFailed(
                    f"{what} returned an observation outside observation_space: {short_repr(observation)}"
                )
            if info["reward_components"].get("invalid_action"):
                invalid_fuzzed += fuzzed
                _check(info["state_key"] == before, f"{what} was invalid yet changed the state key")
                _check(info["transitions"] == [], f"{what} was invalid yet has transitions")
            if terminated or truncated:
                seed += 1
                _, info = env.reset(seed=seed)
        _check(
            ctx.fuzz_turns == 0 or invalid_fuzzed * 10 > ctx.fuzz_turns,
            f"only {invalid_fuzzed} of {ctx.fuzz_turns} fuzzed responses were invalid turns "
            "(no invalid_action component, or garbage accepted as actions)",
        )
    finally:
        _closing(env)


def _rule_score(ctx: _Context) -> None:
    env = ctx.subject.make()
    try:
        expert = _expert(env)
        act = expert.act if expert is not None else None
        for seed in ctx.seeds:
            info = _episode(env, seed, derive_rng("check_env", "score", seed), act=act)
            score = info.get("score")
            _check(
                isinstance(score, float) and 0.0 <= score <= 1.0,
                f"seed {seed}: the episode ends with score {short_repr(score)}, not a float in [0, 1]",
            )
    finally:
        _closing(env)


def _expect_error(kind: type[Exception], call: Callable[[], object], what: str) -> None:
    try:
        call()
    except kind:
        return
    except MissingProgram:
        raise
    except Exception as exc:
        raise RuleFailed(f"{what} raised {type(exc).__name__}: {exc}, not {kind.__name__}") from exc
    raise RuleFailed(f"{what} did not raise {kind.__name__}")


def _rule_snapshot(ctx: _Context) -> None:
    env = ctx.subject.make()
    fresh = ctx.subject.make()
    try:
        _check(callable(getattr(env.unwrapped, "snapshot", None)), "the env has no snapshot() method")
        _expect_error(RuntimeError, fresh.unwrapped.snapshot, "snapshot() before any reset")  # type: ignore[attr-defined]
        rng = derive_rng("check_env", "snapshot")
        for position, seed in enumerate(ctx.seeds):
            observation, info = env.reset(seed=seed)
            for _ in range(position * 7):  # snapshots at turn 0, 7 and 14 (or early in a next episode)
                observation, _, terminated, truncated, info = env.step(choose_response(env, info, rng))
                if terminated or truncated:
                    observation, info = env.reset(seed=seed + 100)
            snapshot = env.unwrapped.snapshot()  # type: ignore[attr-defined]
            data = pickle.dumps(snapshot)
            _check(len(data) < MAX_SNAPSHOT_BYTES, f"a snapshot pickles to {len(data)} bytes")
            responses = [choose_response(env, info, rng) for _ in range(8)]
            expected = _play(env, responses)
            expected_next_task = env.reset()[1]["task_id"]  # seedless: drawn from the env's RNG
            for target, name in ((env, "the same env"), (fresh, "a fresh env")):
                where = f"seed {seed}, turn {info['turn']}, restored into {name}"
                restored, restored_info = target.reset(options={"snapshot": pickle.loads(data)})
                _check(digest(restored) == digest(observation), f"{where}: another observation")
                _check(restored_info["state_key"] == info["state_key"], f"{where}: another state key")
                _check(restored_info["turn"] == info["turn"], f"{where}: turn {restored_info['turn']}")
                played = _play(target, responses)
                if played != expected:
                    raise RuleFailed(f"{where}: {_first_difference(expected, played)}")
                next_task = target.reset()[1]["task_id"]
                _check(
                    next_task == expected_next_task,
                    f"{where}: a seedless reset draws {next_task!r}, not {expected_next_task!r} (RNG state)",
                )
        env.reset(seed=ctx.seeds[0])
        snapshot = env.unwrapped.snapshot()  # type: ignore[attr-defined]
        _expect_error(
            ValueError,
            lambda: env.reset(options={"snapshot": snapshot, "task_id": "x"}),
            "reset with both a snapshot and a task_id",
        )
        _expect_error(
            ValueError,
            lambda: env.reset(options={"snapshot": object()}),
            "reset with a snapshot that is none",
        )
        _restore_every_turn(ctx, env)
    finally:
        _closing(env)
        _closing(fresh)


def _restore_every_turn(ctx: _Context, env: gym.Env[Any, Any]) -> None:
    """Snapshots before every turn of whole episodes (the expert's where there is one): each restores to
    replay the rest of its episode identically, latest first, so each restore goes back in time."""
    expert = _expert(env)
    for seed in _long_seeds(ctx.seeds):
        rng = derive_rng("check_env", "every-turn", seed)
        observation, info = env.reset(seed=seed)
        snapshots, responses, records = [], [], []
        for _ in range(MAX_EPISODE_TURNS):
            snapshots.append(env.unwrapped.snapshot())  # type: ignore[attr-defined]
            responses.append(expert.act(observation, info) if expert else choose_response(env, info, rng))
            observation, reward, terminated, truncated, info = env.step(responses[-1])
            info_text = json.dumps(info, sort_keys=True, default=repr)
            records.append((digest(observation), reward, terminated, truncated, info_text))
            if terminated or truncated:
                break
        for turn in range(len(snapshots) - 1, -1, -1):
            env.reset(options={"snapshot": snapshots[turn]})
            played = _play(env, responses[turn:])
            if played != records[turn:]:
                difference = _first_difference(records[turn:], played)
                raise RuleFailed(f"seed {seed}, restored before turn {turn + 1}: {difference}")


def _rule_pickling(ctx: _Context) -> None:
    env = ctx.subject.make()
    try:
        try:
            copies = [pickle.loads(pickle.dumps(env)), copy.deepcopy(env)]
        except MissingProgram:
            raise
        except Exception as exc:
            raise RuleFailed(f"the env does not copy before reset: {type(exc).__name__}: {exc}") from exc
        seed = ctx.seeds[0]
        for copied, how in zip(copies, ("pickled", "deep-copied"), strict=True):
            _check(
                digest(copied.reset(seed=seed)[0]) == digest(env.reset(seed=seed)[0]),
                f"a {how} copy made before reset starts elsewhere",
            )
        _, info = env.reset(seed=seed + 1)
        rng = derive_rng("check_env", "pickle")
        _, _, terminated, truncated, info = env.step(choose_response(env, info, rng))
        if terminated or truncated:  # a one-turn episode (an answer ends a Search episode): copy at a start
            _, info = env.reset(seed=seed + 2)
        try:
            data = pickle.dumps(env)
            copies = [pickle.loads(data), copy.deepcopy(env)]
        except MissingProgram:
            raise
        except Exception as exc:
            raise RuleFailed(f"the env does not copy mid-episode: {type(exc).__name__}: {exc}") from exc
        _check(
            len(data) < MAX_PICKLE_BYTES,
            f"the env pickles to {len(data)} bytes: it carries its shared data instead of a handle",
        )
        responses = [choose_response(env, info, rng) for _ in range(6)]
        expected = _play(env, responses)
        for copied, how in zip(copies, ("pickled", "deep-copied"), strict=True):
            snapshot = copied.unwrapped.snapshot()
            played = _play(copied, responses)
            if played != expected:
                raise RuleFailed(f"a {how} copy continues otherwise: {_first_difference(expected, played)}")
            copied.reset(options={"snapshot": snapshot})
            played = _play(copied, responses)
            if played != expected:
                difference = _first_difference(expected, played)
                raise RuleFailed(f"a {how} copy's own snapshot replays otherwise: {difference}")
            _closing(copied)
    finally:
        _closing(env)


def _vector_modes(subject: _Subject) -> list[str]:
    return (
        ["sync", "async", "SyncVectorEnv", "AsyncVectorEnv"]
        if subject.spec
        else ["SyncVectorEnv", "AsyncVectorEnv"]
    )


def _make_vector(
    subject: _Subject, how: str, overrides: Mapping[str, Any]
) -> gym.vector.VectorEnv[Any, Any, Any]:
    if how in ("sync", "async"):
        assert subject.spec is not None
        return gym.make_vec(
            subject.spec, num_envs=2, vectorization_mode=how, **{**subject.kwargs, **overrides}
        )
    factory = subject.factory(**overrides)
    if how == "SyncVectorEnv":
        return gym.vector.SyncVectorEnv([factory, factory])
    return gym.vector.AsyncVectorEnv([factory, factory])


def _rule_vector(ctx: _Context) -> None:
    short = ctx.subject.can_override("max_turns")
    overrides = {"max_turns": VECTOR_TURNS} if short else {}
    for how in _vector_modes(ctx.subject):
        vector = _make_vector(ctx.subject, how, overrides)
        mirrors = [ctx.subject.make(**overrides) for _ in range(2)]
        finished = False
        try:
            _vector_matches_mirrors(ctx, vector, mirrors, how, need_ends=short)
            finished = True
        finally:
            vector.close(terminate=not finished)  # a worker that hangs is ended, not waited for
            for mirror in mirrors:
                _closing(mirror)


def _vector_call(
    vector: gym.vector.VectorEnv[Any, Any, Any],
    how: str,
    timeout: float,
    what: str,
    *args: Any,
    **kwargs: Any,
) -> Any:
    """``vector.reset``/``vector.step``; in worker processes, within ``timeout`` seconds."""
    if not isinstance(vector, gym.vector.AsyncVectorEnv):
        return getattr(vector, what)(*args, **kwargs)
    getattr(vector, f"{what}_async")(*args, **kwargs)
    try:
        return getattr(vector, f"{what}_wait")(timeout=timeout)
    except multiprocessing.TimeoutError as exc:
        raise RuleFailed(
            f"{how}: the worker processes did not answer {what}() within {timeout:g} s (they are forked: "
            "state the env's process held before the fork, a thread or a connection, is dead in them)"
        ) from exc


def _vector_matches_mirrors(
    ctx: _Context,
    vector: gym.vector.VectorEnv[Any, Any, Any],
    mirrors: list[gym.Env[Any, Any]],
    how: str,
    *,
    need_ends: bool,
) -> None:
    """Each sub-env reads like a single env fed the same responses, through next-step autoresets."""
    seed = ctx.seeds[0]
    timeout = min(ctx.timeout, VECTOR_TIMEOUT)
    observations, _ = _vector_call(vector, how, timeout, "reset", seed=seed)
    mirror_infos = []
    for index, mirror in enumerate(mirrors):
        observation, info = mirror.reset(seed=seed + index)
        _check(
            observations[index] == observation, f"{how}: sub-env {index} starts otherwise than a single env"
        )
        mirror_infos.append(info)
    rngs = [derive_rng("check_env", "vector", index) for index in range(2)]
    ends = [0, 0]
    restart = [False, False]
    for turn in range(1, 41):
        responses = [choose_response(mirrors[i], mirror_infos[i], rngs[i]) for i in range(2)]
        observations, rewards, terminated, truncated, _ = _vector_call(
            vector, how, timeout, "step", responses
        )
        for index, mirror in enumerate(mirrors):
            reward: Any
            if restart[index]:  # Gymnasium's next-step autoreset: a seedless reset
                observation, mirror_infos[index] = mirror.reset()
                reward, ended = 0.0, (False, False)
            else:
                observation, reward, *ended_list, mirror_infos[index] = mirror.step(responses[index])
                ended = (bool(ended_list[0]), bool(ended_list[1]))
            where = f"{how}: sub-env {index}, vector step {turn}"
            _check(observations[index] == observation, f"{where}: another observation than a single env's")
            _check(
                rewards[index] == reward and (bool(terminated[index]), bool(truncated[index])) == ended,
                f"{where}: reward/ends {rewards[index]}, {terminated[index]}, {truncated[index]}; "
                f"a single env: {reward}, {ended}",
            )
            restart[index] = any(ended)
            ends[index] += any(ended)
        if min(ends) >= 2:
            break
    _check(not need_ends or min(ends) >= 2, f"{how}: sub-envs ended {ends} episodes in 40 steps, not 2 each")


def _rule_docs(ctx: _Context) -> None:
    env = ctx.subject.make()
    try:
        env_class = type(env.unwrapped)
        text = pydoc.render_doc(env_class, renderer=pydoc.plaintext)  # type: ignore[attr-defined]
        _check("Args:" in text, f"help({env_class.__name__}) shows no 'Args:' section")
        _check(
            "\n====" in inspect.cleandoc(env_class.__doc__ or ""),  # help() shows the class's own docstring
            f"help({env_class.__name__}) lacks the observation/action/reward table (a '====' rule)",
        )
        missing = [name for name in getattr(env.unwrapped, "reward_weights", {}) if name not in text]
        _check(not missing, f"help({env_class.__name__}) never names the reward components {missing}")
        parameters = inspect.signature(env_class).parameters
        modes = {name for name in parameters if name.endswith("mode") and name != "render_mode"}
        allowed = {"obs_mode"} | ({"observation_mode"} if "obs_mode" in modes else set())
        _check(modes <= allowed, f"observation-mode kwargs {sorted(modes - allowed)}: name it obs_mode")
    finally:
        _closing(env)


RULE_FUNCTIONS: dict[str, Callable[[_Context], None]] = {
    "spaces": _rule_spaces,
    "gymnasium": _rule_gymnasium,
    "declarations": _rule_declarations,
    "info_keys": _rule_info_keys,
    "info_types": _rule_info_types,
    "keys": _rule_keys,
    "task_ids": _rule_task_ids,
    "reward": _rule_reward,
    "determinism": _rule_determinism,
    "hostile_text": _rule_hostile_text,
    "score": _rule_score,
    "snapshot": _rule_snapshot,
    "pickling": _rule_pickling,
    "vector": _rule_vector,
    "docs": _rule_docs,
}


def _where_raised(exc: BaseException) -> str:
    """``file:line in function`` of the innermost frame of ``exc``'s traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "no traceback"
    last = frames[-1]
    return f"{os.path.basename(last.filename)}:{last.lineno} in {last.name}"


def _run_rule(rule: str, ctx: _Context) -> RuleResult:
    start = time.perf_counter()
    try:
        RULE_FUNCTIONS[rule](ctx)
    except MissingProgram:
        raise
    except RuleSkipped as exc:
        return RuleResult(rule, "skipped", str(exc), time.perf_counter() - start)
    except RuleFailed as exc:
        return RuleResult(rule, "failed", str(exc), time.perf_counter() - start)
    except Exception as exc:
        message = f"raised {type(exc).__name__}: {short_repr(str(exc), 300)[1:-1]} [{_where_raised(exc)}]"
        return RuleResult(rule, "failed", message, time.perf_counter() - start)
    return RuleResult(rule, "passed", "", time.perf_counter() - start)


def check_env(
    env_or_id: gym.Env[Any, Any] | str,
    *,
    seeds: Iterable[int] = SEEDS,
    rules: Iterable[str] | None = None,
    skip: Iterable[str] = (),
    fuzz_turns: int = FUZZ_TURNS,
    hash_seeds: Iterable[str] = HASH_SEEDS,
    make_kwargs: Mapping[str, Any] | None = None,
    raise_on_failure: bool = False,
    timeout: float = 600.0,
) -> CheckReport:
    """Check one env against the contract; see the module docstring for the rules.

    Args:
        env_or_id: an env (wrapped or not; copies of it are checked, it is left as given) or a
            registered id (``"agentenvs/Sokoban-v0"``, ``"Sokoban-v0"``).
        seeds: the reset seeds the rules play (at least one).
        rules: the rules to run (default all of ``RULES``, in that order).
        skip: rules to leave out.
        fuzz_turns: fuzzed responses the ``hostile_text`` rule sends after its fixed hostile ones.
        hash_seeds: a fresh process per value replays the ``determinism`` rollouts with that
            ``PYTHONHASHSEED``.
        make_kwargs: kwargs for ``gym.make`` of an id.
        raise_on_failure: raise :class:`ContractViolation` (listing every failure) when a rule fails.
        timeout: seconds each child process of the ``determinism`` rule may take.

    Returns:
        A :class:`CheckReport`: ``report.ok``, ``report.failures``, ``str(report)``.

    Raises:
        ValueError: an unknown rule name or no seed; an id that is not registered.
        ImportError: the id's code cannot be imported here (its extra is not installed).
        MissingProgram: the env needs a program that is not installed here.
    """
    chosen = list(RULES if rules is None else rules)
    left_out = set(skip)
    unknown = sorted((set(chosen) | left_out) - set(RULES))
    if unknown:
        raise ValueError(f"unknown rules {unknown}; the rules are {list(RULES)}")
    seed_tuple = tuple(int(seed) for seed in seeds)
    if not seed_tuple:
        raise ValueError("check_env needs at least one seed")
    subject = _Subject(env_or_id, make_kwargs or {})
    ctx = _Context(subject, seed_tuple, tuple(hash_seeds), int(fuzz_turns), float(timeout))
    report = CheckReport(subject.label)
    for rule in RULES:
        if rule in chosen and rule not in left_out:
            report.results.append(_run_rule(rule, ctx))
    if raise_on_failure:
        report.raise_if_failed()
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentenvs.core.checker ID [ID ...]``: print each id's report; 1 when one fails."""
    ids = list(sys.argv[1:] if argv is None else argv)
    if not ids:
        print("usage: python -m agentenvs.core.checker ID [ID ...]", file=sys.stderr)
        return 2
    failed = False
    for env_id in ids:
        report = check_env(env_id)
        print(report)
        failed = failed or not report.ok
    return 1 if failed else 0


if __name__ == "__main__":
    # the module's own copy, not __main__'s: the child processes rebuild its factories by their import path
    from agentenvs.core.checker import main as checker_main

    sys.exit(checker_main())

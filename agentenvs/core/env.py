"""``AgentEnv``: the env contract of agentenvs, shared by every family.

What a model is told comes from the env alone: trainers (the reference
baselines' prompt templates among them) and the eval harness read these
declarations of ``env.unwrapped``, and a new family implements each of them:

=============================  ==============================  ==========================================
declaration                    type                            what it says
=============================  ==============================  ==========================================
``instructions``               ``str`` (read-only property)    the task and the answer format, for this
                                                               instance's kwargs (its turns, its actions
                                                               per turn)
``goal_in_first_observation``  ``ClassVar[bool]``              the first observation states the goal and
                                                               later ones no longer repeat it (a prompt
                                                               with a short history keeps it)
``protocol``                   ``ResponseProtocol``            parses responses; its ``answer_format``
                               (``default_protocol()``)        (``AnswerFormat``: ``action_tags``,
                                                               ``think_tag``, ``max_actions``,
                                                               ``separator``) is what a prompt states
``reply_max_tokens``           ``ClassVar[int]``               the paper's per-turn generation budget
``reply_stop``                 ``ClassVar[tuple[str, ...]]``   stop strings of a generation (default none)
=============================  ==============================  ==========================================

A *turn* is one ``env.step(response)`` call with one raw model response; it
may carry several primitive actions where the env allows it (Sokoban: up to
3). Each primitive action is one *transition* of the world state.

Turn flow:

1. The env's protocol (:class:`~agentenvs.core.protocol.ResponseProtocol`) extracts the
   action strings from the response; ``format`` = 1 when the response is well
   formed, else 0.
2. Each action string is parsed into a primitive action
   (``_parse_action``). If the protocol found no action, or any action of the
   turn does not parse, the turn is *invalid*: no primitive is applied, the
   world state is unchanged, ``invalid_action`` = 1, and the observation says
   what was wrong and what is allowed.
   Families that charge time on every turn add their charge to an invalid
   turn too (``_invalid_turn_components``: Sokoban's step penalty, the
   MT-PPO preset's search penalty), so an invalid turn never pays more than
   a valid one.
3. Otherwise the primitives are applied in order (``_apply``) until one ends
   the episode. Each returns its reward components; the env's potentials
   (``_potentials``) add potential-based components Φ(s') − Φ(s) per
   primitive, so their sum over an episode is Φ(end) − Φ(start) and cannot be
   farmed by looping.
4. ``reward = Σ_c weight[c] · component[c]`` over the env's weighted
   components (weights are the ``reward_weights`` kwarg over the family's
   defaults). ``info["reward_components"]`` holds the unweighted values, every
   weighted name present (0.0 when it did not fire).
5. ``truncated`` when the turn count reaches ``max_turns`` and the episode did
   not terminate.

``info`` after reset and after every step: ``task_id``, ``turn``,
``max_turns``, ``state_key``, ``obs_key``, ``reward_components``,
``transitions`` (``state_key``, ``action``, ``reward``, ``next_state_key``
per primitive; a transition's reward is the weighted sum of that primitive's
components, so on a valid turn ``reward`` = Σ transition rewards + the
turn-level ``format``/``invalid_action`` terms; an invalid turn has no
transitions and its whole reward is turn-level), ``admissible_actions`` where the env
can enumerate them, ``privileged`` where the env has hidden information, and
at the episode's end ``success`` (bool) and ``score`` (float in [0, 1]; a
family's own scale, such as WebShop's ×100 paper score, travels under its own
key).

Info values keep one type per key, in every state of every episode, so
Gymnasium's vector envs can stack them: a number never becomes ``None``. Where
a number has no value (Sokoban's ``optimal_moves_left`` once the room is
deadlocked) the env reports the sentinel ``-1`` for counts and says so in its
docstring.

Snapshots (``snapshot()`` / ``restore(snapshot)``, also
``reset(options={"snapshot": snapshot})``) copy and restore the whole state of
an episode: task, world, turn, done flag, state key, potentials, the last
observation and the env's RNG. A snapshot is a small picklable
:class:`EnvSnapshot`; restoring it into any env of the same class and
arguments (another process included) continues bit-identically. Families
store their world directly (``_world_state`` / ``_restore_world``); the default
keeps the primitives applied since reset and replays them from the task's
start.

Envs pickle and deep-copy, before and after reset; large read-only data (a
catalog) travels as a handle that reopens its memory-mapped files.
"""

from __future__ import annotations

import inspect
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym

from agentenvs.core.keys import stable_digest, text_key
from agentenvs.core.protocol import ActionProtocol, ParsedResponse, ResponseProtocol
from agentenvs.core.spaces import observation_text_space, response_text_space
from agentenvs.core.tasks import TaskSource

Task = TypeVar("Task")
Primitive = TypeVar("Primitive")

TURN_COMPONENTS = ("format", "invalid_action")


class InvalidAction(Exception):
    """Raised by ``_parse_action`` for text that names no applicable action."""


class EmptySplitError(ValueError):
    """The chosen split of the env's task source holds no task (a data folder without that split)."""


class MissingProgram(FileNotFoundError):
    """A program outside Python that the env needs (a browser, a JVM) is not installed.

    The message says how to install it; ``agentenvs run all`` skips such envs with that message, and the
    test suite skips the tests that need it where ``program`` is not on ``PATH``.
    """

    def __init__(self, program: str, message: str) -> None:
        super().__init__(message)
        self.program = program

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        # the default would rebuild it from ``args`` alone (the message), losing ``program``
        return type(self), (self.program, str(self))


@dataclass
class StepOutcome:
    """What one primitive action did: feedback text, reward components, episode end."""

    feedback: str = ""
    components: dict[str, float] = field(default_factory=dict)
    terminated: bool = False


@dataclass(frozen=True)
class EnvSnapshot:
    """The whole state of an episode, as :meth:`AgentEnv.snapshot` takes it.

    ``env`` names the env class (a snapshot restores only into that class);
    ``world`` is the family's own small state (or the primitives applied since
    reset); ``rng_state`` is the env RNG's bit-generator state.
    """

    env: str
    task_id: str
    turn: int
    max_turns: int
    done: bool
    state_key: str
    potentials: Mapping[str, float]
    observation: str
    rng_state: Mapping[str, Any] | None
    world: Any


def agent_env(env: gym.Env[Any, Any]) -> AgentEnv[Any, Any]:
    """The :class:`AgentEnv` under ``env``'s wrappers (``env.unwrapped``); a TypeError for another env."""
    base = env.unwrapped
    if not isinstance(base, AgentEnv):
        raise TypeError(f"{type(base).__name__} is not an agentenvs env (a subclass of AgentEnv)")
    return base


def resolve_weights(defaults: Mapping[str, float], overrides: Mapping[str, float] | None) -> dict[str, float]:
    """Family defaults updated by user overrides; unknown names are an error."""
    weights = dict(defaults)
    for name, value in (overrides or {}).items():
        if name not in weights:
            raise ValueError(f"unknown reward component {name!r}; known: {sorted(weights)}")
        weights[name] = float(value)
    return weights


class AgentEnv(gym.Env[Any, str], ABC, Generic[Task, Primitive]):
    """Base class of every agentenvs env. Subclasses implement the world hooks.

    Args:
        task_source: the family's tasks.
        split: which split ``reset(seed=...)`` draws from.
        max_turns: turns before truncation (family default when None).
        reward_weights: overrides of the family's default component weights.
        protocol: how actions are read from responses (family default when None).
        render_mode: ``"ansi"`` (text) or a mode the family adds.
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {}
    default_max_turns: ClassVar[int] = 1
    # whether the first observation states the goal that later observations no longer repeat
    goal_in_first_observation: ClassVar[bool]
    # what a model may write per turn, from the family's paper (the ``max_tokens`` row of its table):
    # the eval harness asks for at most ``reply_max_tokens`` and stops generation at ``reply_stop``
    reply_max_tokens: ClassVar[int]
    reply_stop: ClassVar[tuple[str, ...]] = ()
    # not a ClassVar: gymnasium's Env declares ``metadata`` as an attribute its instances may set
    metadata: dict[str, Any] = {"render_modes": ["ansi"]}

    def __init__(
        self,
        task_source: TaskSource[Task],
        *,
        split: str = "train",
        max_turns: int | None = None,
        reward_weights: Mapping[str, float] | None = None,
        protocol: ResponseProtocol | None = None,
        render_mode: str | None = None,
    ) -> None:
        task_source.check_split(split)
        if task_source.size(split) == 0:
            raise EmptySplitError(f"split {split!r} holds no tasks")
        self.max_turns = self.default_max_turns if max_turns is None else int(max_turns)
        if self.max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}"
            )
        self.task_source = task_source
        self.split = split
        self.reward_weights = resolve_weights(self.default_reward_weights, reward_weights)
        self.protocol: ResponseProtocol = protocol if protocol is not None else self.default_protocol()
        self.render_mode = render_mode
        self.observation_space = observation_text_space()
        self.action_space = response_text_space()
        self.task_id: str | None = None
        self.turn = 0
        self._done = True
        self._state_key = ""
        self._potential_values: Mapping[str, float] = {}
        self._episode_task: Any = None
        self._last_text = ""
        self._applied: list[Primitive] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Let ``help(EnvClass)`` show the family's table: a class docstring
        gains its module's docstring when that holds the table (a ``====`` rule)."""
        super().__init_subclass__(**kwargs)
        module_doc = getattr(sys.modules.get(cls.__module__), "__doc__", None) or ""
        own_doc = cls.__dict__.get("__doc__")
        if own_doc and "\n====" in module_doc and inspect.cleandoc(module_doc) not in own_doc:
            cls.__doc__ = f"{inspect.cleandoc(own_doc)}\n\n{inspect.cleandoc(module_doc)}\n"

    # ----------------------------------------------------------- family hooks
    def default_protocol(self) -> ResponseProtocol:
        """The family's action protocol (one ``<action>`` per turn by default)."""
        return ActionProtocol()

    @property
    @abstractmethod
    def instructions(self) -> str:
        """The task and the answer format a model is told, for this instance's kwargs."""

    @abstractmethod
    def _start(self, task: Task) -> None:
        """Set the world to the start of ``task``."""

    @abstractmethod
    def _parse_action(self, action: str) -> Primitive:
        """Turn one action string into a primitive; raise :class:`InvalidAction`."""

    @abstractmethod
    def _apply(self, primitive: Primitive) -> StepOutcome:
        """Apply one primitive action to the world."""

    @abstractmethod
    def _observation_text(self) -> str:
        """The current state as the agent sees it."""

    @abstractmethod
    def _state_key_data(self) -> Any:
        """Plain data that determines the future (hidden parts included)."""

    @abstractmethod
    def _is_success(self) -> bool:
        """Whether the task is solved now."""

    def _score(self) -> float:
        """The task's own metric at the episode's end (default: 1.0 on success)."""
        return float(self._is_success())

    def _potentials(self) -> Mapping[str, float]:
        """Potential Φ per potential-based component name, in the current state (a new mapping per call)."""
        return {}

    def _world_state(self) -> Any:
        """The world's state as small picklable data (default: the primitives applied since reset)."""
        return tuple(self._applied)

    def _restore_world(self, state: Any, *, started: bool) -> None:
        """Put the world into ``state`` (from :meth:`_world_state`) of the current task.

        ``started`` tells that ``_start`` has just run for this task. The
        default replays the recorded primitives from the task's start.
        """
        if not started:
            self._start(self._episode_task)
        for primitive in state:
            self._apply(primitive)
        self._applied = list(state)

    def _privileged(self) -> Mapping[str, Any] | None:
        """Hidden training-time information (never shown to the agent)."""
        return None

    def admissible_actions(self) -> list[str] | None:
        """Every valid action now, where the env can enumerate them."""
        return None

    def action_help(self) -> str:
        """One line saying which actions exist (shown after an invalid turn)."""
        return ""

    def _reset_observation(self) -> str:
        """First observation of an episode (default: the state)."""
        return self._observation_text()

    def _turn_observation(self, outcomes: list[StepOutcome]) -> str:
        """Observation after a valid turn (default: last feedback, else the state)."""
        feedback = "\n".join(o.feedback for o in outcomes if o.feedback)
        return feedback or self._observation_text()

    def _invalid_observation(self, error: str) -> str:
        """Observation after an invalid turn: what went wrong, what is allowed, the state."""
        help_line = self.action_help()
        head = f"Invalid action: {error}." + (f" {help_line}" if help_line else "")
        return f"{head}\n\n{self._observation_text()}"

    def _format_value(self, parsed: ParsedResponse) -> float:
        return 1.0 if parsed.well_formed else 0.0

    def _observation_key(self, text: str) -> str:
        """``obs_key`` of ``text`` (families that build an observation from cached parts may know it
        already)."""
        return text_key(text)

    def _invalid_turn_components(self, parsed: ParsedResponse) -> Mapping[str, float]:
        """Components an invalid turn pays besides ``invalid_action`` = 1, replacing the
        values computed so far (default none: the format as read, every other one 0).

        Families whose rules charge time on every turn (a step penalty, a
        search penalty) charge it here too, so that an invalid turn never costs
        less than a valid one.
        """
        return {}

    def _emit(self, text: str) -> Any:
        """The observation object for ``text`` (families with image modes override)."""
        return text

    # --------------------------------------------------------------- contract
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        task_id = options.pop("task_id", None)
        snapshot = options.pop("snapshot", None)
        if options:
            raise ValueError(f"unknown reset options {sorted(options)}; supported: ['snapshot', 'task_id']")
        if snapshot is not None:
            if task_id is not None:
                raise ValueError("reset options 'snapshot' and 'task_id' exclude each other")
            return self.restore(snapshot)
        if task_id is None:
            size = self.task_source.size(self.split)
            index = seed % size if seed is not None else int(self.np_random.integers(size))
            task_id = self.task_source.task_id(self.split, index)
        task = self.task_source.load(str(task_id))
        self.task_id = str(task_id)
        self._episode_task = task
        self.turn = 0
        self._done = False
        self._applied = []
        self._start(task)
        self._state_key = self._compute_state_key()
        self._potential_values = self._potentials()
        text = self._last_text = self._reset_observation()
        return self._emit(text), self._info(text, {}, [], terminated=False, truncated=False)

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._done:
            raise RuntimeError("the episode has ended (or never started): call reset() first")
        parsed = self.protocol.parse(action)
        components = dict.fromkeys(self.reward_weights, 0.0)
        if "format" in components:
            components["format"] = self._format_value(parsed)
        error = parsed.error
        primitives: list[Primitive] = []
        if error is None:
            try:
                primitives = [self._parse_action(a) for a in parsed.actions]
            except InvalidAction as exc:
                error = str(exc)

        transitions: list[dict[str, Any]] = []
        terminated = False
        if error is not None:
            if "invalid_action" in components:
                components["invalid_action"] = 1.0
            components.update(self._invalid_turn_components(parsed))
            text = self._invalid_observation(error)
        else:
            outcomes = []
            for raw, primitive in zip(parsed.actions, primitives, strict=False):
                outcome = self._apply(primitive)
                self._applied.append(primitive)
                step_components = outcome.components
                potentials = self._potentials()
                if potentials:
                    # a copy: the family's outcome stays as it made it
                    step_components = dict(step_components)
                    previous = self._potential_values
                    for name, value in potentials.items():
                        step_components[name] = step_components.get(name, 0.0) + value - previous[name]
                self._potential_values = potentials
                before, self._state_key = self._state_key, self._compute_state_key()
                for name, value in step_components.items():
                    components[name] += value
                transitions.append(
                    {
                        "state_key": before,
                        "action": raw,
                        "reward": self._weighted(step_components),
                        "next_state_key": self._state_key,
                    }
                )
                outcomes.append(outcome)
                if outcome.terminated:
                    terminated = True
                    break
            text = self._turn_observation(outcomes)

        self.turn += 1
        truncated = not terminated and self.turn >= self.max_turns
        self._done = terminated or truncated
        reward = self._turn_reward(components)
        self._last_text = text
        info = self._info(text, components, transitions, terminated=terminated, truncated=truncated)
        return self._emit(text), reward, terminated, truncated, info

    def snapshot(self) -> EnvSnapshot:
        """The episode's whole state, small and picklable; see :meth:`restore`."""
        if self.task_id is None:
            raise RuntimeError("nothing to snapshot: call reset() first")
        rng = self._np_random
        return EnvSnapshot(
            env=self._snapshot_kind(),
            task_id=self.task_id,
            turn=self.turn,
            max_turns=self.max_turns,
            done=self._done,
            state_key=self._state_key,
            potentials=dict(self._potential_values),
            observation=self._last_text,
            rng_state=None if rng is None else rng.bit_generator.state,
            world=self._world_state(),
        )

    def restore(self, snapshot: EnvSnapshot) -> tuple[Any, dict[str, Any]]:
        """Put the env into the state ``snapshot`` holds; returns its observation and info.

        The info is a reset's (no reward components, no transitions). Stepping
        on gives exactly what stepping on from the snapshotted env gives.
        Through Gymnasium's wrappers use ``env.reset(options={"snapshot": s})``
        (the snapshot's RNG state then replaces a seed given with it).
        """
        if not isinstance(snapshot, EnvSnapshot) or snapshot.env != self._snapshot_kind():
            raise ValueError(f"not a snapshot of a {type(self).__name__}: {type(snapshot).__name__}")
        started = self.task_id != snapshot.task_id or self._episode_task is None
        if started:
            self._episode_task = self.task_source.load(snapshot.task_id)
            self.task_id = snapshot.task_id
            self._start(self._episode_task)
        self._restore_world(snapshot.world, started=started)
        self.turn = snapshot.turn
        self.max_turns = snapshot.max_turns
        self._done = snapshot.done
        self._state_key = snapshot.state_key
        self._potential_values = dict(snapshot.potentials)
        if snapshot.rng_state is not None:
            self.np_random.bit_generator.state = snapshot.rng_state
        text = self._last_text = snapshot.observation
        return self._emit(text), self._info(text, {}, [], terminated=self._done, truncated=False)

    def _snapshot_kind(self) -> str:
        return f"{type(self).__module__}.{type(self).__qualname__}"

    def render(self) -> Any:
        if self.render_mode == "ansi":
            return self._observation_text()
        return None

    # ---------------------------------------------------------------- helpers
    @property
    def state_key(self) -> str:
        return self._state_key

    @property
    def potentials(self) -> dict[str, float]:
        """Φ of each potential-based component in the current state (empty when the env has none).

        A potential-based component pays Φ(s') − Φ(s) per primitive step, so
        its sum over an episode is ``potentials`` at the end minus at reset.
        """
        return dict(self._potential_values)

    def _compute_state_key(self) -> str:
        return stable_digest(self._state_key_data())

    def _weighted(self, components: Mapping[str, float]) -> float:
        """Σ_c weight[c] · components[c], added in the components' order."""
        weights = self.reward_weights
        total = 0.0
        for name, value in components.items():
            total += weights[name] * value
        return total

    def _turn_reward(self, components: dict[str, float]) -> float:
        """:meth:`_weighted` of the turn's components, which hold the weighted names in the weights' order
        (``dict.fromkeys`` of them; a name outside them fails, as in :meth:`_weighted`), so the sum pairs
        the two value sequences without a lookup per name."""
        weights = self.reward_weights
        if len(components) != len(weights):
            return self._weighted(components)
        total = 0.0
        for weight, value in zip(weights.values(), components.values(), strict=False):
            total += weight * value
        return total

    def _info(
        self,
        text: str,
        components: Mapping[str, float],
        transitions: list[dict[str, Any]],
        *,
        terminated: bool,
        truncated: bool,
    ) -> dict[str, Any]:
        info: dict[str, Any] = {
            "task_id": self.task_id,
            "turn": self.turn,
            "max_turns": self.max_turns,
            "state_key": self._state_key,
            "obs_key": self._observation_key(text),
            "reward_components": components,  # made for this turn (or this reset) and kept nowhere else
            "transitions": transitions,
        }
        admissible = self.admissible_actions()
        if admissible is not None:
            info["admissible_actions"] = admissible
        privileged = self._privileged()
        if privileged is not None:
            info["privileged"] = privileged
        if terminated or truncated:
            info["success"] = bool(self._is_success())
            info["score"] = float(self._score())
        return info

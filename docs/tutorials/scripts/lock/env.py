"""``agentenvs/Lock-v0``: open a three-dial combination lock from higher/lower hints.

Each dial shows a digit from 0 to 9 and starts at 0; a hidden three-digit code
opens the lock. After every turn the env says, per dial, whether the code's
digit is higher, lower or set. The worked example of a new family
(docs/tutorials/04-add-a-family.md).

=================  =============================================================
observation        ``Dials: 0 0 0`` and ``Hints: dial 1 higher, dial 2 set,
                   dial 3 lower``
action             one move per turn, in ``<action>...</action>`` or bare:
                   ``up D`` or ``down D``, D from 1 to 3; case-insensitive;
                   read by the core rule (:mod:`agentenvs.core.protocol`)
reward             weighted sum of (unweighted values in ``reward_components``):
  outcome          1 when the lock opens (ends the episode); weight 1.0
  progress         Φ(s') − Φ(s), **potential-based**; weight 0.5. Φ = 1 −
                   distance / 27, distance = Σ |code digit − dial|, so an
                   episode's progress sums to Φ(end) − Φ(start) ≤ 1
  format           1 when the response is well formed; **not**
                   potential-based; weight 0.0 (paid every turn, it would pay
                   for stalling)
  invalid_action   1 when the turn names no move, or a move past 0 or 9; the
                   dials are unchanged; weight −0.1
termination        the lock opens
truncation         ``max_turns`` turns (default 30; the farthest code, 999, needs
                   27)
max_tokens         64 per turn
state key          the dials and the hidden code
Known hacks        none under the default weights: ``progress`` is
                   potential-based, so turning a dial back and forth earns
                   nothing; an invalid turn pays −0.1, below every move
=================  =============================================================

Splits (``split=``): ``train`` / ``valid`` / ``test`` (799 / 100 / 100
codes, disjoint; :mod:`agentenvs.envs.lock.tasks`). ``info["privileged"]`` holds
the code.

.. rubric:: Version history

=======  ====================================================================
Version  Change
=======  ====================================================================
``v0``   initial release: ``Lock``, generated three-digit codes.
=======  ====================================================================
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from agentenvs.core import ActionProtocol, AgentEnv, InvalidAction, StepOutcome
from agentenvs.envs.lock.tasks import lock_tasks
from agentenvs.envs.lock.world import HIGHEST, LOWEST, Lock

MOVE = re.compile(r"(up|down) ([0-9]{1,3})")  # bounded: a 5,000-digit dial number never reaches int()
STEPS = {"up": 1, "down": -1}


class LockEnv(AgentEnv[tuple[int, ...], tuple[int, int]]):
    """Open a combination lock; the table below is the family's contract.

    Args:
        split: ``train``, ``valid`` or ``test``.
        max_turns: turns before truncation (default 30).
        reward_weights: overrides of the default component weights.
        render_mode: ``"ansi"`` (the observation text).
    """

    default_reward_weights: ClassVar[dict[str, float]] = {
        "outcome": 1.0,
        "progress": 0.5,
        "format": 0.0,
        "invalid_action": -0.1,
    }
    # gymnasium's env checker warns when render_fps is missing, and the contract tests fail on its warnings
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    default_max_turns: ClassVar[int] = 30
    goal_in_first_observation: ClassVar[bool] = False
    reply_max_tokens: ClassVar[int] = 64

    def __init__(
        self,
        *,
        split: str = "train",
        max_turns: int | None = None,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            lock_tasks(),
            split=split,
            max_turns=max_turns,
            reward_weights=reward_weights,
            render_mode=render_mode,
        )
        self.lock = Lock(code=(0, 0, 0))

    def default_protocol(self) -> ActionProtocol:
        """One ``<action>`` per turn, case folded (``UP 1`` is ``up 1``)."""
        return ActionProtocol(fold_case=True)

    @property
    def instructions(self) -> str:
        dials = len(self.lock.dials)
        return (
            f"Open a combination lock. It has {dials} dials, each showing a digit from {LOWEST} to "
            f"{HIGHEST}; a hidden code opens it. After each move you see the dials and, per dial, whether "
            "the code's digit is higher, lower or set. Each turn, send one move: up D or down D, "
            f"D from 1 to {dials}, as <action>up 1</action>. You have {self.max_turns} turns."
        )

    def _start(self, task: tuple[int, ...]) -> None:
        self.lock = Lock(code=task)

    def _parse_action(self, action: str) -> tuple[int, int]:
        match = MOVE.fullmatch(action)
        if match is None:
            raise InvalidAction(f"{action[:40]!r} is no move")
        dial, step = int(match.group(2)) - 1, STEPS[match.group(1)]
        if not self.lock.can_turn(dial, step):
            raise InvalidAction(f"dial {match.group(2)} cannot go {match.group(1)}")
        return dial, step

    def _apply(self, primitive: tuple[int, int]) -> StepOutcome:
        self.lock.turn(*primitive)
        opened = self.lock.is_open()
        feedback = "The lock opens." if opened else ""
        return StepOutcome(feedback=feedback, components={"outcome": float(opened)}, terminated=opened)

    def _observation_text(self) -> str:
        dials = " ".join(str(d) for d in self.lock.dials)
        hints = ", ".join(f"dial {i + 1} {self.lock.hint(i)}" for i in range(len(self.lock.dials)))
        return f"Dials: {dials}\nHints: {hints}"

    def _turn_observation(self, outcomes: list[StepOutcome]) -> str:
        feedback = "".join(outcome.feedback for outcome in outcomes)
        return f"{feedback}\n{self._observation_text()}" if feedback else self._observation_text()

    def _state_key_data(self) -> Any:
        return {"code": list(self.lock.code), "dials": list(self.lock.dials)}

    def _is_success(self) -> bool:
        return self.lock.is_open()

    def _potentials(self) -> Mapping[str, float]:
        return {"progress": 1.0 - self.lock.distance() / (len(self.lock.code) * HIGHEST)}

    def _world_state(self) -> Any:
        return tuple(self.lock.dials)

    def _restore_world(self, state: Any, *, started: bool) -> None:
        if not started:
            self._start(self._episode_task)
        self.lock.dials = list(state)

    def _privileged(self) -> Mapping[str, Any]:
        return {"code": list(self.lock.code)}

    def admissible_actions(self) -> list[str]:
        return [
            f"{name} {dial + 1}"
            for dial in range(len(self.lock.dials))
            for name, step in STEPS.items()
            if self.lock.can_turn(dial, step)
        ]

    def action_help(self) -> str:
        return f"Send up D or down D, D from 1 to {len(self.lock.dials)}."

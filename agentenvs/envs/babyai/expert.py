"""The BabyAI expert: minigrid's ``BabyAIBot`` answering in text.

The bot reads the privileged world (the level instance behind the env) and
replans before every action. It is told the action actually applied when that
differs from its suggestion (an agent it advises may deviate), and it is not
asked to replan when a turn applied nothing (an invalid turn).

Where the bot fails, the expert gives up for the episode instead of raising
or hanging: it records why in ``failure`` and answers ``done``, which is not an
action here, so the remaining turns are invalid and leave the world as it is.
The bot fails

- on ``BOT_FAILING_LEVELS`` (:mod:`agentenvs.envs.babyai.tasks`), where it raises
  (``AssertionError``, ``DisappearedBoxError``);
- on rare worlds where its planner pushes subgoals forever inside one
  ``replan`` (e.g. ``UnlockToUnlock/1010003``): the expert caps the plan at
  ``MAX_SUBGOALS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minigrid.utils.baby_ai_bot import BabyAIBot, DisappearedBoxError

from agentenvs.envs.babyai.describe import TEXT_ACTIONS

if TYPE_CHECKING:
    from agentenvs.envs.babyai.env import BabyAIEnv

MAX_SUBGOALS = 500  # solved episodes stay under 50
GIVE_UP = "done"  # minigrid's done action, which has no text action


class PlannerLoop(Exception):
    """The bot's plan outgrew ``MAX_SUBGOALS``."""


class _BoundedPlan(list):
    """The bot's subgoal stack, refusing to grow past ``MAX_SUBGOALS``."""

    def append(self, subgoal: Any) -> None:
        if len(self) >= MAX_SUBGOALS:
            raise PlannerLoop(f"the BabyAI bot's plan grew past {MAX_SUBGOALS} subgoals")
        super().append(subgoal)


class BabyAIExpert:
    """``act(observation, info) -> response`` from ``BabyAIBot`` over ``env``'s current episode."""

    def __init__(self, env: BabyAIEnv) -> None:
        self.env = env
        self.failure: str | None = None
        self._bot: BabyAIBot | None = None
        self._episode = -1
        self._steps_seen = 0
        self._suggestion: int | None = None

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        world = self.env.world
        if self._episode != self.env.episode:
            self._episode = self.env.episode
            self.failure = None
            self._bot = None
            self._replan(None)
        elif world.step_count != self._steps_seen:
            taken = self.env.last_action
            self._replan(None if taken == self._suggestion else taken)
        self._steps_seen = world.step_count
        if self.failure is not None or self._suggestion >= len(TEXT_ACTIONS):
            return self.env.protocol.format(GIVE_UP)
        return self.env.protocol.format(TEXT_ACTIONS[self._suggestion])

    def _replan(self, action_taken: int | None) -> None:
        if self.failure is not None:
            return
        try:
            if self._bot is None:
                self._bot = BabyAIBot(self.env.world)
                self._bot.stack = _BoundedPlan(self._bot.stack)
            self._suggestion = self._bot.replan(action_taken)
        except (PlannerLoop, AssertionError, DisappearedBoxError) as exc:
            self.failure = f"{type(exc).__name__}: {exc}"

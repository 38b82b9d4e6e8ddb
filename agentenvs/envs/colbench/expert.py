"""ColBench's expert and the answer-at-once baseline.

:class:`ColBenchExpert` reads the task's hidden spec (privileged): it asks
the question of every hidden fact not asked yet, one per turn, then answers
with the reference function. It scores 1.0 on every built-in task, within
the 10 turns (no family has more than 5 facts). :class:`AnswerAtOnce` never
asks: it answers on its first turn with the family's usual guess (its
default parameters), the floor that asking must beat.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentenvs.envs.colbench.protocol import ANSWER_MARKER

if TYPE_CHECKING:
    from agentenvs.envs.colbench.dialogue import CollaborationEnv


class ColBenchExpert:
    """Asks about each hidden fact, then answers with the reference."""

    def __init__(self, env: CollaborationEnv) -> None:
        self.env = env

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        env = self.env
        turns_left = env.max_turns - env.turn
        for fact in env.task.facts:
            if fact.key not in env.asked and turns_left > 1:
                return fact.question
        return f"{ANSWER_MARKER}\n{env.task.reference}"


class AnswerAtOnce:
    """Answers on the first turn with the family's usual guess, asking nothing."""

    def __init__(self, env: CollaborationEnv) -> None:
        self.env = env

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        return f"{ANSWER_MARKER}\n{self.env.task.default_answer}"

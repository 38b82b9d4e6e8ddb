"""What both ColBench envs share: a dialogue with a simulated person, ended by an answer.

:class:`CollaborationEnv` runs the turn loop (question → collaborator reply,
``I WANT TO ANSWER:`` → judged answer, last turn → answer), the
``information`` potential, the state key, privileged information and
snapshots; a subclass supplies its task source and ``_judge``.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from agentenvs.core.env import AgentEnv, StepOutcome
from agentenvs.core.keys import stable_digest
from agentenvs.core.tasks import TaskSource
from agentenvs.envs.colbench.collaborators import Collaborator, RuleCollaborator, asked_facts
from agentenvs.envs.colbench.protocol import ANSWER_MARKER, DialogueProtocol, extract_answer


class CollaborationEnv(AgentEnv[Any, tuple[str, str]]):
    """The dialogue loop both ColBench envs share (see the module docstring).

    A task has ``request``, ``reference``, ``facts`` (hidden
    :class:`~agentenvs.envs.colbench.sources.Fact` s) and ``default_answer``.
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "outcome": 1.0,
        "information": 0.0,
        "format": 0.0,
        "invalid_action": 0.0,
    }
    default_max_turns = 10
    goal_in_first_observation: ClassVar[bool] = True
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 1}
    reply_chars: ClassVar[int] = 400
    answer_kind: ClassVar[str] = "answer"

    def __init__(
        self,
        task_source: TaskSource,
        *,
        split: str,
        collaborator: Collaborator | None,
        instructions: str,
        max_turns: int | None,
        reward_weights: Mapping[str, float] | None,
        render_mode: str | None,
    ) -> None:
        super().__init__(
            task_source,
            split=split,
            max_turns=max_turns,
            reward_weights=reward_weights,
            protocol=DialogueProtocol(),
            render_mode=render_mode,
        )
        self.collaborator = collaborator if collaborator is not None else RuleCollaborator()
        self._instructions = instructions.format(max_turns=self.max_turns)
        self.task: Any = None
        self.asked: frozenset[str] = frozenset()
        self.answer_score: float | None = None
        self.dialogue: tuple[tuple[str, str], ...] = ()

    @property
    def instructions(self) -> str:
        """The family's instructions with this env's turn limit filled in."""
        return self._instructions

    @abstractmethod
    def _judge(self, answer: str) -> tuple[float, str]:
        """Score an answer in [0, 1]; returns (score, feedback shown as the last observation)."""

    @abstractmethod
    def _is_success(self) -> bool: ...

    # ------------------------------------------------------------ world hooks
    def _start(self, task: Any) -> None:
        self.task = task
        self.asked = frozenset()
        self.answer_score = None
        self.dialogue = (("user", task.request),)

    def _parse_action(self, action: str) -> tuple[str, str]:
        answer = extract_answer(action)
        if answer is not None:
            return ("answer", answer)
        if self.turn + 1 >= self.max_turns:
            return ("answer", action)
        return ("ask", action)

    def _apply(self, primitive: tuple[str, str]) -> StepOutcome:
        kind, text = primitive
        if kind == "ask":
            self.asked = self.asked | set(asked_facts(self.task.facts, text))
            reply = self._reply(text)[: self.reply_chars]
            self.dialogue = (*self.dialogue, ("assistant", text), ("user", reply))
            return StepOutcome(reply)
        self.answer_score, feedback = self._judge(text)
        self.dialogue = (*self.dialogue, ("assistant", f"{ANSWER_MARKER}{text}"))
        return StepOutcome(feedback, {"outcome": self.answer_score}, terminated=True)

    def _reply(self, message: str) -> str:
        """The collaborator's answer to a message (before the cut to ``reply_chars``)."""
        return self.collaborator.respond(self.task, self.dialogue, message)

    def _observation_text(self) -> str:
        return self.task.request

    def _state_key_data(self) -> Any:
        return (
            stable_digest((self.task.reference, getattr(self.task, "calls", ()))),
            self.asked,
            self.answer_score,
        )

    def _score(self) -> float:
        return 0.0 if self.answer_score is None else float(self.answer_score)

    def _potentials(self) -> Mapping[str, float]:
        facts = self.task.facts
        return {"information": len(self.asked) / len(facts) if facts else 0.0}

    def _privileged(self) -> Mapping[str, Any] | None:
        if self.task is None:
            return None
        return {"reference": self.task.reference, "hidden_facts": [fact.answer for fact in self.task.facts]}

    def action_help(self) -> str:
        return f'Send a question for the person, or "{ANSWER_MARKER}" followed by your {self.answer_kind}.'

    def render(self) -> Any:
        if self.render_mode == "ansi":
            return "\n\n".join(f"{role}: {text}" for role, text in self.dialogue)
        return None

    # --------------------------------------------------------- exact restores
    def _world_state(self) -> Any:
        return (self.asked, self.answer_score, self.dialogue)

    def _restore_world(self, state: Any, *, started: bool) -> None:
        self.asked, self.answer_score, self.dialogue = state

    # ---------------------------------------------------------------- agents
    def sample_action(self, rng: np.random.Generator) -> str:
        """A random message: a fact's question, an off-topic question, the usual guess as the
        answer, or an answer that holds nothing (the hidden reference is never used)."""
        kind = rng.random()
        facts = self.task.facts
        if kind < 0.5 and facts:
            return facts[int(rng.integers(len(facts)))].question
        if kind < 0.75:
            return "Could you tell me more about what you need?"
        answer = self.task.default_answer if kind < 0.9 else "I am not sure yet."
        return f"{ANSWER_MARKER}\n{answer}"

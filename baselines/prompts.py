"""Prompt templates: what the policy reads at each turn of an agentenvs episode.

A turn's prompt, in the style of the GiGPO/verl-agent prompts (our wording):

    <the env's instructions: its task and action format (``env.unwrapped.instructions``)>
    Task: <the episode's first observation>        (families whose goal is stated there)
    Your last <h> observations and actions:        (history window, h = 2 by default)
    [Observation 3] ...  [Your action] ...
    Current observation (turn 5): ...
    Admissible actions: [...]                      (where the env lists them)
    <answer format: reason in <think></think>, then <action></action>>

``style="compact"`` drops everything but the current observation and the
turn marker, for tiny models trained from scratch on a small vocabulary.
With a chat tokenizer the text becomes the user message of its chat template.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentenvs.core.prompting import registered_instructions

# Families whose first observation states the goal, which later observations no longer repeat.
GOAL_IN_FIRST_OBSERVATION = ("ALFWorld", "WebShop", "TextCraft", "BabyAI", "Search", "ColBench")


def family_of(env_id: str) -> str:
    """``"agentenvs/Sokoban-Verl-v0"`` → ``"Sokoban"``."""
    name = env_id.split("/")[-1].rsplit("-v", 1)[0]
    return name.split("-")[0]


@dataclass(frozen=True)
class HistoryEntry:
    """One past turn as the prompt shows it."""

    observation: str
    action: str


@dataclass(frozen=True)
class PromptTemplate:
    """Renders the prompt text of one turn (see the module docstring).

    Args:
        env_id: the env whose instructions open the prompt.
        instructions: that env's ``instructions`` when it was built with other
            kwargs than the registered ones (default: the registered env's).
        history_window: how many past (observation, action) pairs to show.
        show_admissible: list the admissible actions when the env gives them.
        think: ask for ``<think>`` reasoning before the ``<action>`` block.
        style: ``"full"`` or ``"compact"``.
        max_actions: actions allowed per turn (Sokoban-v0: 3, separated by ``||``).
    """

    env_id: str
    history_window: int = 2
    show_admissible: bool = True
    think: bool = True
    style: Literal["full", "compact"] = "full"
    max_actions: int = 1
    instructions: str | None = None

    @property
    def family(self) -> str:
        return family_of(self.env_id)

    def render(
        self,
        *,
        first_observation: str,
        history: Sequence[HistoryEntry],
        observation: str,
        turn: int,
        admissible: Sequence[str] | None = None,
    ) -> str:
        """The prompt of turn ``turn`` (0-based) given the episode so far."""
        if self.style == "compact":
            return f"{observation}\n"
        if self.style != "full":
            raise ValueError(f"style must be 'full' or 'compact', got {self.style!r}")
        parts = [self.instructions or registered_instructions(self.env_id)]
        if turn > 0 and self.family in GOAL_IN_FIRST_OBSERVATION:
            parts.append(f"Task: {first_observation}")
        shown = list(history)[-self.history_window :] if self.history_window > 0 else []
        if shown:
            first_shown = turn - len(shown)
            lines = [f"You have taken {turn} turn(s). Your last {len(shown)} observation(s) and action(s):"]
            for offset, entry in enumerate(shown):
                lines.append(f"[Observation {first_shown + offset + 1}] {entry.observation}")
                lines.append(f"[Your action {first_shown + offset + 1}] {entry.action}")
            parts.append("\n".join(lines))
        parts.append(f"Current observation (turn {turn + 1}):\n{observation}")
        if self.show_admissible and admissible:
            parts.append("Admissible actions: [" + ", ".join(f"'{a}'" for a in admissible) + "]")
        parts.append(self._answer_format())
        return "\n\n".join(parts)

    def followup(self, *, observation: str, turn: int, admissible: Sequence[str] | None = None) -> str:
        """What the environment adds to a full-context conversation after a response."""
        if self.style == "compact":
            return f"{observation}\n"
        parts = [f"Current observation (turn {turn + 1}):\n{observation}"]
        if self.show_admissible and admissible:
            parts.append("Admissible actions: [" + ", ".join(f"'{a}'" for a in admissible) + "]")
        parts.append(self._answer_format())
        return "\n\n".join(parts)

    def _answer_format(self) -> str:
        several = (
            f" You may give up to {self.max_actions} actions, separated by ' || ', in that one block."
            if self.max_actions > 1
            else ""
        )
        if self.think:
            return (
                "Think about the situation step by step inside <think> </think>, then give your "
                f"action inside <action> </action>.{several}"
            )
        return f"Give your action inside <action> </action>.{several}"

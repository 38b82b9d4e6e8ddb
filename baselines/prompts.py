"""Prompt templates: what the policy reads at each turn of an agentenvs episode.

A turn's prompt, in the style of the GiGPO/verl-agent prompts (our wording):

    <the env's instructions: its task and action format (``env.unwrapped.instructions``)>
    Task: <the episode's first observation>        (envs whose goal is stated there)
    Your last <h> observations and actions:        (history window, h = 2 by default)
    [Observation 3] ...  [Your action] ...
    Current observation (turn 5): ...
    Admissible actions: [...]                      (where the env lists them)
    <answer format: reason in <think></think>, then <action></action>>

Everything env-specific comes from the env's declarations
(:mod:`agentenvs.core.env`), read by :meth:`PromptTemplate.for_env`: its
``instructions``, ``goal_in_first_observation`` (the ``Task:`` line) and its
protocol's ``answer_format`` (tags, actions per turn, separator), so an env
family added outside this package gets its prompts with no change here.

``style="compact"`` drops everything but the current observation and the
turn marker, for tiny models trained from scratch on a small vocabulary.
With a chat tokenizer the text becomes the user message of its chat template.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import gymnasium as gym

from agentenvs.core.protocol import AnswerFormat

STYLES = ("full", "compact")
# what for_env reads from env.unwrapped (the table of agentenvs.core.env)
DECLARATIONS = ("instructions", "goal_in_first_observation", "protocol")


@dataclass(frozen=True)
class HistoryEntry:
    """One past turn as the prompt shows it."""

    observation: str
    action: str


@dataclass(frozen=True)
class PromptTemplate:
    """Renders the prompt text of one turn (see the module docstring).

    Build it from an env with :meth:`for_env`; the fields are the env's
    declarations it copies and the template's own options.

    Args:
        instructions: the env's ``instructions``, which open every full prompt.
        goal_in_first_observation: show the first observation as ``Task:`` after turn 0.
        answer_format: the env protocol's tags, actions per turn and separator.
        history_window: how many past (observation, action) pairs to show.
        show_admissible: list the admissible actions when the env gives them.
        think: ask for reasoning in the think block before the action.
        style: ``"full"`` or ``"compact"``.
    """

    instructions: str
    goal_in_first_observation: bool
    answer_format: AnswerFormat
    history_window: int = 2
    show_admissible: bool = True
    think: bool = True
    style: Literal["full", "compact"] = "full"

    def __post_init__(self) -> None:
        if not isinstance(self.instructions, str):
            raise TypeError(f"instructions must be a str, got {type(self.instructions).__name__}")
        if not isinstance(self.goal_in_first_observation, bool):
            kind = type(self.goal_in_first_observation).__name__
            raise TypeError(f"goal_in_first_observation must be a bool, got {kind}")
        if not isinstance(self.answer_format, AnswerFormat):
            raise TypeError(f"answer_format must be an AnswerFormat, got {type(self.answer_format).__name__}")
        if self.style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {self.style!r}")
        if isinstance(self.history_window, bool) or not isinstance(self.history_window, int):
            raise TypeError(f"history_window must be an int, got {type(self.history_window).__name__}")
        if self.history_window < 0:
            raise ValueError(f"history_window must be >= 0, got {self.history_window}")

    @classmethod
    def for_env(
        cls,
        env: gym.Env,
        *,
        history_window: int = 2,
        show_admissible: bool = True,
        think: bool = True,
        style: Literal["full", "compact"] = "full",
    ) -> PromptTemplate:
        """The template of ``env`` (any wrapper of an :class:`~agentenvs.core.env.AgentEnv`),
        from ``env.unwrapped``'s ``instructions``, ``goal_in_first_observation`` and
        ``protocol.answer_format``: an instance built with other kwargs than the registered
        ones (more actions per turn, other turn limits) gets its own text."""
        declared = env.unwrapped
        missing = [name for name in DECLARATIONS if not hasattr(declared, name)]
        if missing:
            raise TypeError(
                f"{type(declared).__name__} does not declare {', '.join(missing)}: a prompt template "
                "reads them from an agentenvs env (see agentenvs.core.env)"
            )
        return cls(
            instructions=declared.instructions,
            goal_in_first_observation=declared.goal_in_first_observation,
            answer_format=declared.protocol.answer_format,
            history_window=history_window,
            show_admissible=show_admissible,
            think=think,
            style=style,
        )

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
        parts = [self.instructions]
        if turn > 0 and self.goal_in_first_observation:
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
        """The closing request, from the protocol's answer format: think block, action tags
        (or a tag-free message), and up to ``max_actions`` joined by the separator."""
        answer = self.answer_format
        if answer.action_tags:
            blocks = " or ".join(f"<{tag}> </{tag}>" for tag in answer.action_tags)
            give = f"give your action inside {blocks}"
        else:
            give = (
                "write your message after it, with no tags around it"
                if self.think
                else ("write your message with no tags around it")
            )
        several = (
            f" You may give up to {answer.max_actions} actions, separated by ' {answer.separator} ', "
            "in that one block."
            if answer.max_actions > 1 and answer.separator
            else ""
        )
        if self.think:
            think = f"<{answer.think_tag}> </{answer.think_tag}>"
            return f"Think about the situation step by step inside {think}, then {give}.{several}"
        return f"{give[0].upper()}{give[1:]}.{several}"

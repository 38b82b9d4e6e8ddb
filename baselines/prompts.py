"""Prompt templates: what the policy reads at each turn of an agentenvs episode.

A turn's prompt, in the style of the GiGPO/verl-agent prompts (our wording):

    <what the agent is and how the env works: one paragraph per env family>
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

FAMILY_ROLES: dict[str, str] = {
    "Sokoban": (
        "You are solving a Sokoban puzzle on a grid. Walk the player (P, or S on a target) "
        "to push every box (X) onto a target (O); a box on a target shows as √, walls are #, "
        "floor is _. Boxes can be pushed, never pulled, and a box against a wall may be stuck for good."
    ),
    "ALFWorld": (
        "You are a household robot in a text world. Reach the task's goal by moving to "
        "receptacles and handling objects, one admissible action per turn."
    ),
    "WebShop": (
        "You are shopping on a web store for the product the instruction describes. "
        "Search, open products, pick their options and buy the best match."
    ),
    "TextCraft": (
        "You are crafting items in a Minecraft-like text world. Get base items and "
        "craft intermediate items with the recipes you are given until you hold the target item."
    ),
    "BabyAI": (
        "You control an agent in a small grid world and must complete the stated mission "
        "by moving, turning and handling objects."
    ),
    "Search": (
        "You answer a question with the help of a search engine. Search as needed, then give "
        "a short final answer."
    ),
    "ColBench": (
        "You are writing code for a person who knows exactly what they want but only tells you "
        "when asked. Ask clarifying questions, then give your final answer."
    ),
}
GENERIC_ROLE = "You are an agent acting in a text environment. Reach the task's goal."
# Families whose first observation states the goal, which later observations no longer repeat.
GOAL_IN_FIRST_OBSERVATION = ("ALFWorld", "WebShop", "TextCraft", "BabyAI", "Search", "ColBench")


def family_of(env_id: str) -> str:
    """``"agentenvs/Sokoban-Verl-v0"`` → ``"Sokoban"`` (the family the role text is keyed by)."""
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
        env_id: selects the family's role paragraph.
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
        parts = [FAMILY_ROLES.get(self.family, GENERIC_ROLE)]
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

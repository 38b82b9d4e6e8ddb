"""From an env's own text to chat messages: one prompt source for trainers, eval and baselines.

Every env exposes ``instructions`` (``env.unwrapped.instructions``): what the
task is and how to answer, ending with the action format its protocol reads
(:func:`action_format`). The admissible actions, where the env can list them,
change every turn and arrive in ``info["admissible_actions"]``.

:func:`chat_messages` turns (observation, info, history) into an
OpenAI-style message list::

    system     the env's instructions
    user       observation of turn 1            ┐ the first turn is always kept
    assistant  response of turn 1               ┘ (it states the task)
    user       observation of turn k            ┐ the last ``history_window``
    assistant  response of turn k               ┘ turns (all when None)
    user       current observation
               "Admissible actions: a, b, c"    (where info lists them)

Roles alternate strictly, as chat templates require.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentenvs.core.protocol import ActionProtocol


@dataclass(frozen=True)
class Turn:
    """One past turn: what the env showed and what the model answered."""

    observation: str
    response: str


def action_format(protocol: ActionProtocol, example: str) -> str:
    """How a response must look under ``protocol``: its declared ``answer_format`` (tag,
    separator, actions per turn) and whether the think block is required."""
    answer = protocol.answer_format
    opening, closing = f"<{answer.action_tags[0]}>", f"</{answer.action_tags[0]}>"
    think = f"<{answer.think_tag}></{answer.think_tag}>"
    if answer.max_actions > 1:
        rule = (
            f"Answer with up to {answer.max_actions} actions separated by {answer.separator} inside "
            f"{opening}{closing}, e.g. {opening}{example} {answer.separator} {example}{closing}."
        )
    else:
        rule = f"Answer with one action inside {opening}{closing}, e.g. {opening}{example}{closing}."
    reasoning = "Think first inside " if protocol.require_think else "You may think first inside "
    return f"{rule} {reasoning}{think}; write nothing else outside the tags."


def compose_instructions(task: str, protocol: ActionProtocol, example: str) -> str:
    """An env's ``instructions``: its task paragraph, then the action format of its protocol."""
    return f"{task}\n\n{action_format(protocol, example)}"


def observation_text(observation: Any) -> str:
    """The text part of an observation (image modes carry it under ``"text"``)."""
    if isinstance(observation, Mapping):
        return str(observation.get("text", ""))
    if isinstance(observation, str):
        return observation
    raise TypeError(f"a chat prompt needs a text observation, got {type(observation).__name__}")


def chat_messages(
    instructions: str,
    observation: Any,
    info: Mapping[str, Any],
    history: Sequence[Turn] = (),
    *,
    history_window: int | None = None,
) -> list[dict[str, str]]:
    """The messages a chat model reads at this turn (layout in the module docstring).

    Args:
        instructions: ``env.unwrapped.instructions``.
        observation: the current observation (text, or a dict holding ``"text"``).
        info: the current info (its ``admissible_actions`` are listed).
        history: the episode's past turns, oldest first.
        history_window: past turns shown besides the first; None shows all.
    """
    if history_window is not None and history_window < 0:
        raise ValueError(f"history_window must be >= 0 or None, got {history_window}")
    shown = list(history)
    if history_window is not None and len(shown) > history_window + 1:
        shown = shown[:1] + (shown[len(shown) - history_window :] if history_window else [])
    messages = [{"role": "system", "content": instructions}]
    for turn in shown:
        messages.append({"role": "user", "content": turn.observation})
        messages.append({"role": "assistant", "content": turn.response})
    current = observation_text(observation)
    admissible = info.get("admissible_actions")
    if admissible:
        current = f"{current}\n\nAdmissible actions: {', '.join(admissible)}"
    messages.append({"role": "user", "content": current})
    return messages

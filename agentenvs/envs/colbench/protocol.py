"""ColBench's message protocol: every turn is one free-text message to the collaborator.

A message is the response with a leading ``<think>…</think>`` block removed
and, as in ColBench, the text after ``OUTPUT:`` (up to a second one) taking
its place when present. It is an *answer* when it contains
:data:`ANSWER_MARKER`; the answer is the text between the first marker and
a second one (ColBench's ``split(marker)[1]``). A message is well formed when
it is not empty and, if it is an answer, the answer holds some code; an
empty message is the only unreadable one.
"""

from __future__ import annotations

from agentenvs.core.protocol import AnswerFormat, ParsedResponse, ResponseProtocol, coerce_text, find_block

ANSWER_MARKER = "I WANT TO ANSWER:"
OUTPUT_MARKER = "OUTPUT:"


def message_text(response: object) -> str:
    """The message a raw response carries (think block dropped, ``OUTPUT:`` rule applied)."""
    text = coerce_text(response)
    think = find_block(text, "think")
    if think is not None and not text[: think[0]].strip():
        text = text[think[2] :]
    if OUTPUT_MARKER in text:
        text = text.split(OUTPUT_MARKER)[1]
    return text.strip()


def extract_answer(message: str) -> str | None:
    """The answer a message gives, or None when it gives none."""
    if ANSWER_MARKER not in message:
        return None
    return message.split(ANSWER_MARKER)[1]


class DialogueProtocol(ResponseProtocol):
    """Reads one message per turn (see the module docstring); same interface as the core protocol."""

    @property
    def answer_format(self) -> AnswerFormat:
        """No action tag: the text after an optional ``<think>`` block is the turn's one message."""
        return AnswerFormat((), "think", 1, None)

    def parse(self, response: object) -> ParsedResponse:
        message = message_text(response)
        if not message:
            return ParsedResponse((), False, "empty message")
        answer = extract_answer(message)
        return ParsedResponse((message,), answer is None or bool(answer.strip()))

    def format(self, actions: str | list[str] | tuple[str, ...], think: str | None = None) -> str:
        """The response sending ``actions`` (one message) with an optional think block."""
        message = actions if isinstance(actions, str) else "\n".join(actions)
        return (f"<think>{think}</think>" if think is not None else "") + message

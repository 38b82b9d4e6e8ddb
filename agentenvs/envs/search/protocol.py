"""Search-R1's reading of a response, and its format rule.

Reading (Search-R1's generation loop): the response is cut after its first
``</search>``, else after its first ``</answer>``; the action is the first
``<search>…</search>`` or ``<answer>…</answer>`` block of what remains (the
content stripped). Tags are case-sensitive, as there. A response without such
a block is invalid. A tag-free ``search[query]`` or ``answer[text]`` is
accepted too, so scripted agents need no tags; it is not well formed.

Format (Search-R1's ``is_valid_sequence``): the episode's text, responses
and observations in order, must read ``<think>…</think>`` then any number of
``<search>…</search> <information>…</information> <think>…</think>``, then
``<answer>…</answer>``, with nothing but whitespace between the tags.
:class:`SequenceChecker` runs that rule incrementally; a single turn is well
formed when it is a valid piece of such a sequence
(``<think>…</think><search>…</search>`` or ``<think>…</think><answer>…</answer>``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentenvs.core.protocol import AnswerFormat, ParsedResponse, ResponseProtocol, coerce_text

ACTION_PATTERN = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
BARE_PATTERN = re.compile(r"^\s*(search|answer)\[(.*)\]\s*$", re.DOTALL)
TAG_PATTERN = re.compile(r"(</?(?:think|search|information|answer)>)")
MOVES = {
    ("<think>", "start"): "in_think",
    ("<think>", "information"): "in_think",
    ("</think>", "in_think"): "after_think",
    ("<search>", "after_think"): "in_search",
    ("</search>", "in_search"): "after_search",
    ("<information>", "after_search"): "in_information",
    ("</information>", "in_information"): "information",
    ("<answer>", "after_think"): "in_answer",
    ("</answer>", "in_answer"): "end",
}
INSIDE = ("in_think", "in_search", "in_information", "in_answer")
THINK_PATTERN = re.compile(r"<think>(.*?)</think>", re.DOTALL)
TAG_IN_TEXT = re.compile(r"</?(?:think|search|information|answer)>")


def well_formed_turn(text: str) -> tuple[str, str, str] | None:
    """The common well-formed turn, read with ``str.find``: whitespace, ``<think>``, text without any of
    the tags, ``</think>``, whitespace, one ``<search>`` or ``<answer>`` block of such text, whitespace;
    its think text, action kind and action content, else None.

    Whitespace is what ``str.strip`` drops, as for :class:`SequenceChecker`, so exactly these turns are
    the ones it passes ending after a search or an answer. Each text ends at the first closing tag of
    its block, so it is tag-free when no tag occurs before that.
    """
    text = text.lstrip()
    if not text.startswith("<think>"):
        return None
    think_end = text.find("</think>", 7)
    if think_end < 0 or TAG_IN_TEXT.search(text, 7, think_end) is not None:
        return None
    rest = text[think_end + 8 :].lstrip()
    kind = "search" if rest.startswith("<search>") else "answer" if rest.startswith("<answer>") else None
    if kind is None:
        return None
    opening = len(kind) + 2
    content_end = rest.find(f"</{kind}>", opening)
    if content_end < 0 or TAG_IN_TEXT.search(rest, opening, content_end) is not None:
        return None
    if rest[content_end + opening + 1 :].strip():
        return None
    return text[7:think_end], kind, rest[opening:content_end]


def cut_response(text: str) -> str:
    """What Search-R1 keeps of a generation: up to the first ``</search>``, else the first ``</answer>``."""
    for closing in ("</search>", "</answer>"):
        at = text.find(closing)
        if at >= 0:
            return text[: at + len(closing)]
    return text


@dataclass
class SequenceChecker:
    """Search-R1's sequence rule, fed piece by piece; ``valid`` turns False for good at the first break."""

    state: str = "start"
    valid: bool = True

    def feed(self, text: str) -> None:
        if not self.valid:
            return
        for part in TAG_PATTERN.split(text):
            if not part.strip():
                continue
            if TAG_PATTERN.fullmatch(part):
                following = MOVES.get((part, self.state))
                if following is None:
                    self.valid = False
                    return
                self.state = following
            elif self.state not in INSIDE:
                self.valid = False
                return

    @property
    def complete(self) -> bool:
        return self.valid and self.state == "end"


@dataclass(frozen=True)
class SearchParse(ParsedResponse):
    """A parsed response plus the text Search-R1 keeps of it (after the cut)."""

    text: str = ""


class SearchProtocol(ResponseProtocol):
    """``<search> query </search>`` / ``<answer> text </answer>``; actions are ``search[q]`` /
    ``answer[a]``."""

    @property
    def answer_format(self) -> AnswerFormat:
        """One ``<search>`` or ``<answer>`` block per turn after a ``<think>`` block."""
        return AnswerFormat(("search", "answer"), "think", 1, None)

    def parse(self, response: object) -> SearchParse:
        text = cut_response(coerce_text(response))
        turn = well_formed_turn(text)
        if turn is not None:
            think, kind, content = turn
            return SearchParse((f"{kind}[{content.strip()}]",), True, None, think.strip(), text)
        return self.parse_cut(text)

    def parse_cut(self, text: str) -> SearchParse:
        """Read a response already cut (:func:`cut_response`), by the rule in the module docstring."""
        match = ACTION_PATTERN.search(text)
        if match is None:
            bare = BARE_PATTERN.match(text)
            if bare is None:
                return SearchParse(
                    (), False, "no <search>...</search> or <answer>...</answer> block", None, text
                )
            return SearchParse((f"{bare.group(1)}[{bare.group(2).strip()}]",), False, None, None, text)
        checker = SequenceChecker()
        checker.feed(text)
        well_formed = checker.valid and checker.state in ("after_search", "end")
        think = THINK_PATTERN.search(text)
        return SearchParse(
            (f"{match.group(1)}[{match.group(2).strip()}]",),
            well_formed,
            None,
            think.group(1).strip() if think else None,
            text,
        )

    def format(self, actions: str | list[str] | tuple[str, ...], think: str | None = None) -> str:
        """A well-formed response for one ``search[q]`` / ``answer[a]`` action."""
        action = actions if isinstance(actions, str) else actions[0]
        bare = BARE_PATTERN.match(action)
        if bare is None:
            raise ValueError(f"not a search[...] or answer[...] action: {action!r}")
        kind, content = bare.group(1), bare.group(2)
        return f"<think>{think or ''}</think>\n<{kind}> {content} </{kind}>"

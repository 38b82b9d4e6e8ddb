"""The action protocol: from a raw model response to the action(s) it names.

One reading rule serves every family (new ones included):

1. **Tags.** A response is *well formed* when it is, apart from surrounding
   whitespace::

       [<think> ... </think>] <action> a1 [SEP a2 ...] </action>

   with exactly one action block, at most one think block placed before it
   (required when ``require_think``), no other text outside the tags, and
   between one and ``max_actions`` non-empty actions. Tag names match in any
   case (``<ACTION>``, ``<Action>``); they and the separator are configurable
   (Search-R1 style envs read ``<search>``/``<answer>`` with their own parser
   built on :func:`find_block` and :func:`normalize_action`).
2. **Each action** is read by :func:`normalize_action`: surrounding
   whitespace and one trailing sentence period are stripped (``" left. "``
   reads ``left``), and the case is folded to lower case only where the
   env's commands are case-insensitive in the original (``fold_case``; each
   family's docstring says which it is and why).
3. **Format** is decided by the same reading: the ``format`` reward
   component is 1 exactly when the response is well formed under rule 1,
   whatever the env then makes of the action; a trailing period or the case
   of a tag does not change it.

Extraction is more lenient than the format check, so that the format reward
and the action's validity stay separate signals:

- the first complete ``<action>...</action>`` block is used, whatever else
  the response holds;
- a response with no tags at all is a *bare action* (``"up"``,
  ``"click[buy now]"``): accepted as the action, but not well formed;
- an opening tag without its closing tag, or tags without an action block,
  yield no action and an error message saying why.

``parse`` never raises, whatever it is given: ``None``, bytes, megabytes of
text, unbalanced tags. Work is linear in the response length.

Every family's protocol is a :class:`ResponseProtocol`: it parses, formats,
and declares its :class:`AnswerFormat` (action tags, think tag, actions per
turn, separator), so a trainer states the answer format from the env alone.
:class:`ActionProtocol` is the reading rule above; families with their own
reading (Search-R1's ``<search>``/``<answer>``, ColBench's free-text
messages) implement the same interface.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class ParsedResponse:
    """What the protocol read from one response.

    ``actions`` is empty when ``error`` says why no action could be read;
    it may hold actions *and* an error (e.g. too many actions).
    """

    actions: tuple[str, ...]
    well_formed: bool
    error: str | None = None
    think: str | None = None


def coerce_text(response: object) -> str:
    """Turn any response object into text without raising."""
    if isinstance(response, str):
        return response
    if isinstance(response, (bytes, bytearray, memoryview)):
        return bytes(response).decode("utf-8", "replace")
    if response is None:
        return ""
    try:
        return str(response)
    except Exception:  # a hostile __str__ must not crash the env
        return ""


def normalize_action(action: str, *, fold_case: bool = False) -> str:
    """One action as every family reads it (rule 2 of the module docstring).

    Surrounding whitespace and then one trailing sentence period are stripped
    (``"  go forward. "`` reads ``"go forward"``); with ``fold_case`` the
    result is lower-cased, for envs whose original commands ignore case.
    """
    text = action.strip()
    if text.endswith("."):
        text = text[:-1].rstrip()
    return text.lower() if fold_case else text


@lru_cache(maxsize=64)
def _tag_pattern(tag: str) -> re.Pattern[str]:
    """``<tag>`` in any (ASCII) case."""
    return re.compile(re.escape(f"<{tag}>"), re.IGNORECASE | re.ASCII)


def find_tag(text: str, tag: str, start: int = 0) -> int:
    """Index of the first ``<tag>`` (any case) at or after ``start``, else -1."""
    match = _tag_pattern(tag).search(text, start)
    return -1 if match is None else match.start()


def find_block(text: str, tag: str, start: int = 0) -> tuple[int, int, int] | None:
    """Locate ``<tag>...</tag>`` (tag names in any case) from ``start``: (open index, content start, close
    end)."""
    begin = find_tag(text, tag, start)
    if begin < 0:
        return None
    content_start = begin + len(tag) + 2
    end = find_tag(text, f"/{tag}", content_start)
    if end < 0:
        return None
    return begin, content_start, end + len(tag) + 3


@dataclass(frozen=True)
class AnswerFormat:
    """What a well-formed response looks like, as a prompt states it.

    ``action_tags``: the tags one of which holds the turn's action(s)
    (``("action",)``; Search-R1: ``("search", "answer")``); empty when the
    whole response, after the think block, is the action (a free-text
    message). ``think_tag``: the optional reasoning block placed first.
    ``max_actions``: actions allowed in one turn, joined by ``separator``
    (None when one action per turn).
    """

    action_tags: tuple[str, ...]
    think_tag: str
    max_actions: int
    separator: str | None

    def __post_init__(self) -> None:
        tags = (*self.action_tags, self.think_tag) if isinstance(self.action_tags, tuple) else None
        if tags is None or not all(isinstance(tag, str) and tag.strip() for tag in tags):
            raise ValueError(
                f"tags must be non-empty strings, got {self.action_tags!r} and {self.think_tag!r}"
            )
        if (
            isinstance(self.max_actions, bool)
            or not isinstance(self.max_actions, int)
            or self.max_actions < 1
        ):
            raise ValueError(f"max_actions must be an int >= 1, got {self.max_actions!r}")
        if self.separator is not None and not (isinstance(self.separator, str) and self.separator.strip()):
            raise ValueError(f"separator must be a non-blank string or None, got {self.separator!r}")
        if self.max_actions > 1 and self.separator is None:
            raise ValueError(f"{self.max_actions} actions per turn need a separator to split them")


class ResponseProtocol(ABC):
    """How an env reads a model response: ``parse``, ``format`` and the declared :class:`AnswerFormat`."""

    @property
    @abstractmethod
    def answer_format(self) -> AnswerFormat:
        """The tags, actions per turn and separator this protocol reads."""

    @abstractmethod
    def parse(self, response: object) -> ParsedResponse:
        """The action(s) a raw response names; never raises."""

    @abstractmethod
    def format(self, actions: str | list[str] | tuple[str, ...], think: str | None = None) -> str:
        """A well-formed response naming ``actions`` (what scripted agents send)."""


class ActionProtocol(ResponseProtocol):
    """Reads actions out of model responses; see the module docstring for the rules.

    Args:
        action_tag: name of the tag holding the action(s).
        think_tag: name of the optional reasoning tag.
        require_think: well formed only with a think block.
        separator: splits one action block into several actions (``"||"`` for
            Sokoban); ``None`` means one action per block.
        max_actions: actions allowed in one turn.
        max_action_chars: longer action text is rejected (keeps error
            messages and env work bounded).
        allow_bare: accept a tag-free response as the action itself.
        fold_case: lower-case every action (for envs whose original commands
            are case-insensitive); see :func:`normalize_action`.
    """

    def __init__(
        self,
        action_tag: str = "action",
        think_tag: str = "think",
        *,
        require_think: bool = False,
        separator: str | None = None,
        max_actions: int = 1,
        max_action_chars: int = 2000,
        allow_bare: bool = True,
        fold_case: bool = False,
    ) -> None:
        if max_actions < 1:
            raise ValueError(f"max_actions must be >= 1, got {max_actions}")
        if separator == "":
            raise ValueError("separator must be a non-empty string or None")
        self.action_tag = action_tag
        self.think_tag = think_tag
        self.require_think = require_think
        self.separator = separator
        self.max_actions = max_actions
        self.max_action_chars = max_action_chars
        self.allow_bare = allow_bare
        self.fold_case = fold_case

    @property
    def answer_format(self) -> AnswerFormat:
        """One ``action_tag`` block; several actions only where a separator can split them."""
        max_actions = self.max_actions if self.separator else 1
        return AnswerFormat((self.action_tag,), self.think_tag, max_actions, self.separator)

    def format(self, actions: str | list[str] | tuple[str, ...], think: str | None = None) -> str:
        """Build a well-formed response naming ``actions`` (what scripted agents send)."""
        if isinstance(actions, str):
            actions = [actions]
        joiner = f" {self.separator} " if self.separator else ""
        if len(actions) > 1 and not self.separator:
            raise ValueError("this protocol takes one action per response")
        body = joiner.join(actions)
        prefix = f"<{self.think_tag}>{think}</{self.think_tag}>" if think is not None else ""
        return f"{prefix}<{self.action_tag}>{body}</{self.action_tag}>"

    def parse(self, response: object) -> ParsedResponse:
        text = coerce_text(response)
        action_open = f"<{self.action_tag}>"
        action_close = f"</{self.action_tag}>"
        block = find_block(text, self.action_tag)
        if block is None:
            if find_tag(text, self.action_tag) >= 0:
                return ParsedResponse((), False, f"unclosed {action_open} tag")
            if find_tag(text, f"/{self.action_tag}") >= 0 or self._has_tag(text, self.think_tag):
                return ParsedResponse((), False, f"no {action_open}...{action_close} block")
            if not self.allow_bare:
                return ParsedResponse((), False, f"no {action_open}...{action_close} block")
            return self._split(text, well_formed=False, think=None)

        begin, content_start, end = block
        think_text, well_formed = self._check_layout(text, begin, end)
        content = text[content_start : end - len(action_close)]
        return self._split(content, well_formed=well_formed, think=think_text)

    def _has_tag(self, text: str, tag: str) -> bool:
        return find_tag(text, tag) >= 0 or find_tag(text, f"/{tag}") >= 0

    def _check_layout(self, text: str, begin: int, end: int) -> tuple[str | None, bool]:
        """Whether everything outside the action block is one optional think block."""
        before, after = text[:begin], text[end:]
        well_formed = not after.strip() and find_tag(after, self.action_tag) < 0
        think = find_block(before, self.think_tag)
        if think is None:
            well_formed = well_formed and not before.strip() and not self.require_think
            return None, well_formed
        think_begin, think_start, think_end = think
        think_text = before[think_start : think_end - len(self.think_tag) - 3].strip()
        outside = before[:think_begin] + before[think_end:]
        well_formed = well_formed and not outside.strip()
        return think_text, well_formed

    def _split(self, content: str, *, well_formed: bool, think: str | None) -> ParsedResponse:
        content = content.strip()
        if not content:
            return ParsedResponse((), False, "empty action", think)
        if len(content) > self.max_action_chars:
            return ParsedResponse((), False, f"action longer than {self.max_action_chars} characters", think)
        parts = content.split(self.separator) if self.separator else [content]
        actions = tuple(
            action for action in (normalize_action(p, fold_case=self.fold_case) for p in parts) if action
        )
        if not actions:
            return ParsedResponse((), False, "empty action", think)
        if len(actions) > self.max_actions:
            return ParsedResponse(
                actions, False, f"at most {self.max_actions} actions per turn, got {len(actions)}", think
            )
        return ParsedResponse(actions, well_formed, None, think)

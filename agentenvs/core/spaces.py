"""Text spaces for observations and model responses."""

from __future__ import annotations

import string
from typing import Any

from gymnasium import spaces

# Sampling draws from printable ASCII; membership accepts any Unicode text,
# because observations quote product titles and model responses are free text.
_SAMPLE_CHARSET = string.printable

OBSERVATION_MAX_CHARS = 1_000_000
RESPONSE_MAX_CHARS = 65_536


class UnicodeText(spaces.Text):
    """A ``gymnasium.spaces.Text`` whose members are any ``str`` within the length bounds.

    ``sample()`` draws printable ASCII strings; ``contains`` does not restrict
    the alphabet.
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=_SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"


def observation_text_space() -> UnicodeText:
    return UnicodeText(OBSERVATION_MAX_CHARS)


def response_text_space() -> UnicodeText:
    return UnicodeText(RESPONSE_MAX_CHARS)

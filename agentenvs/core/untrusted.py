"""Input from outside the process: JSON read strictly, and hostile values shown in one short line.

Python's ``json.loads`` accepts what no JSON number means (``NaN``,
``Infinity``, ``1e999``, which parses as infinity); :func:`loads_json` refuses
them. Everything that reads a file, an upload or a message someone else wrote
reads it here, and every error that quotes such a value quotes it through
:func:`short_repr`, so a 200,000-character name stays one short line.
"""

from __future__ import annotations

import json
import math
from typing import Any


def loads_json(text: str | bytes) -> Any:
    """``text`` as JSON proper.

    Raises ``ValueError`` for text that is not JSON, is not UTF-8, or holds
    ``NaN``, ``Infinity`` or a number out of float range, and lets
    ``RecursionError`` through for nesting deeper than Python recurses
    (``[[[…]]]`` 200,000 deep), so that callers can say which it was.
    """
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, saying how long it was when cut."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def one_line(exc: BaseException, limit: int | None = None) -> str:
    """An exception's message with its whitespace runs (newlines included) made single spaces.

    Cut to ``limit`` characters when given: an env's error may quote huge kwargs.
    """
    text = " ".join(str(exc).split())
    return text if limit is None else text[:limit]

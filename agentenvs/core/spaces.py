"""Text spaces for observations and model responses.

:class:`UnicodeText` also brings its own shared-memory layout for
``gymnasium.vector.AsyncVectorEnv`` (``shared_memory=True``, the default).
Gymnasium's layout for ``Text`` reads the shared block once, when the vector
env is built, so every later observation comes back as that first read (the
vector envs page, docs/reference/vector-envs.md, holds a reproduction); ours keeps, per env, the text's length
and its code points, and reads them back when the observation is taken.
"""

from __future__ import annotations

import multiprocessing
import string
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

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


# ------------------------------------------------------- AsyncVectorEnv memory
_CODEC = "utf-32-le"  # one int32 per code point; surrogatepass keeps any str intact


class SharedTexts(Sequence[str]):
    """The texts of ``n`` envs in one shared block, decoded when read.

    Copying it (``AsyncVectorEnv`` deep-copies observations by default) gives
    a plain tuple of ``str``.
    """

    def __init__(self, memory: Any, n: int, max_length: int) -> None:
        self._slots = np.frombuffer(memory.get_obj(), dtype=np.int32).reshape(n, max_length + 1)

    def __len__(self) -> int:
        return len(self._slots)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        slot = self._slots[index]
        return slot[1 : 1 + int(slot[0])].tobytes().decode(_CODEC, "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (SharedTexts, tuple)) else other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return tuple, (tuple(self),)

    def __repr__(self) -> str:
        return repr(tuple(self))


@create_shared_memory.register(UnicodeText)
def _create_text_memory(space: UnicodeText, n: int = 1, ctx: ModuleType = multiprocessing) -> Any:
    return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))


@read_from_shared_memory.register(UnicodeText)
def _read_text_memory(space: UnicodeText, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(shared_memory, n, space.max_length)


@write_to_shared_memory.register(UnicodeText)
def _write_text_memory(space: UnicodeText, index: int, value: str, shared_memory: Any) -> None:
    codes = np.frombuffer(value.encode(_CODEC, "surrogatepass"), dtype=np.int32)
    if len(codes) > space.max_length:
        raise ValueError(f"a text of {len(codes)} characters does not fit {space}")
    width = space.max_length + 1
    slots = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
    slots[index * width] = len(codes)
    slots[index * width + 1 : index * width + 1 + len(codes)] = codes

"""Stable keys and seeds: canonical serialization hashed with blake2b.

Every key agentenvs publishes (``state_key``, ``obs_key``) and every seed it
derives is computed here, from a canonical byte encoding of plain Python data.
The encoding never uses Python's ``hash()``, dict insertion order or set
iteration order, so a key is identical across processes, machines and
``PYTHONHASHSEED`` values.

Encoding (type tag, then a length-prefixed payload):

====================  ==================================================
value                 bytes
====================  ==================================================
None / True / False   ``N`` / ``T`` / ``F``
int                   ``i<decimal>;``
float                 ``f<float.hex()>;`` (``-0.0`` is encoded as ``0.0``)
str                   ``s<len(utf8)>:<utf8>``
bytes                 ``b<len>:<raw>``
list / tuple          ``l<n>:`` + items in order
dict                  ``d<n>:`` + (key, value) pairs sorted by encoded key
set / frozenset       ``S<n>:`` + items sorted by their encoding (a multiset
                      is a dict item -> count, or a sorted list)
numpy array           ``a<dtype>;<shape>;<len>:<C-order bytes>``
====================  ==================================================
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

DIGEST_SIZE = 16  # bytes; keys are 32 hex characters


def canonical_bytes(value: Any) -> bytes:
    """Encode ``value`` (nested plain data) as canonical bytes; see module docstring."""
    parts: list[bytes] = []
    _encode(value, parts)
    return b"".join(parts)


def _encode_str(value: str, out: list[bytes]) -> None:
    raw = value.encode("utf-8", "surrogatepass")
    out.append(b"s%d:" % len(raw))
    out.append(raw)


def _encode_int(value: int, out: list[bytes]) -> None:
    out.append(b"i%d;" % value)


def _encode_float(value: float, out: list[bytes]) -> None:
    out.append(b"f" + (0.0 if value == 0.0 else value).hex().encode() + b";")


def _encode_sequence(value: list | tuple, out: list[bytes]) -> None:
    out.append(b"l%d:" % len(value))
    encoders = _ENCODERS
    for item in value:  # _encode's exact-type lookup inline: a state key is mostly lists
        encoder = encoders.get(type(item))
        if encoder is None:
            _encode(item, out)
        else:
            encoder(item, out)


def _encode_dict(value: dict, out: list[bytes]) -> None:
    items = sorted((canonical_bytes(k), canonical_bytes(v)) for k, v in value.items())
    out.append(b"d%d:" % len(items))
    for key, val in items:
        out.append(key)
        out.append(val)


def _encode_set(value: set | frozenset, out: list[bytes]) -> None:
    members = sorted(canonical_bytes(item) for item in value)
    out.append(b"S%d:" % len(members))
    out.extend(members)


def _encode_bytes(value: bytes | bytearray | memoryview, out: list[bytes]) -> None:
    raw = bytes(value)
    out.append(b"b%d:" % len(raw))
    out.append(raw)


def _encode_array(value: np.ndarray, out: list[bytes]) -> None:
    array = np.ascontiguousarray(value)
    raw = array.tobytes()
    out.append(f"a{array.dtype.str};{','.join(map(str, array.shape))};{len(raw)}:".encode())
    out.append(raw)


def _encode_constant(value: None | bool, out: list[bytes]) -> None:
    out.append(b"N" if value is None else b"T" if value else b"F")


# An encoder takes a value of the type it is listed under (the tables dispatch on the value's type).
_Encoder = Callable[[Any, list[bytes]], None]

# Exact-type dispatch keeps the hot path (state keys every step) to one dict lookup;
# subclasses and numpy scalars take the isinstance route below.
_ENCODERS: dict[type, _Encoder] = {
    str: _encode_str,
    int: _encode_int,
    float: _encode_float,
    tuple: _encode_sequence,
    list: _encode_sequence,
    dict: _encode_dict,
    frozenset: _encode_set,
    set: _encode_set,
    bytes: _encode_bytes,
    bool: _encode_constant,
    type(None): _encode_constant,
    np.ndarray: _encode_array,
}
_FALLBACKS: tuple[tuple[type | tuple[type, ...], _Encoder], ...] = (
    (bool, _encode_constant),
    (int, _encode_int),
    (float, _encode_float),
    (str, _encode_str),
    ((bytes, bytearray, memoryview), _encode_bytes),
    ((list, tuple), _encode_sequence),
    (dict, _encode_dict),
    ((set, frozenset), _encode_set),
    (np.ndarray, _encode_array),
)


def _encode(value: Any, out: list[bytes]) -> None:
    encoder = _ENCODERS.get(type(value))
    if encoder is not None:
        encoder(value, out)
        return
    if isinstance(value, np.generic):
        _encode(value.item(), out)
        return
    for kind, fallback in _FALLBACKS:
        if isinstance(value, kind):
            fallback(value, out)
            return
    raise TypeError(f"cannot canonically encode {type(value).__name__!r}: use plain data")


def stable_digest(value: Any) -> str:
    """blake2b hex digest (32 hex chars) of ``canonical_bytes(value)``."""
    return bytes_digest(canonical_bytes(value))


def bytes_digest(encoded: bytes) -> str:
    """The digest :func:`stable_digest` gives a value whose canonical bytes are ``encoded`` (for a key
    whose encoding a family assembles from parts it keeps)."""
    return hashlib.blake2b(encoded, digest_size=DIGEST_SIZE).hexdigest()


def int_list_bytes(values: list[int]) -> bytes:
    """``canonical_bytes(values)`` for a list of exact ints."""
    return b"l%d:" % len(values) + b"".join([b"i%d;" % value for value in values])


def normalize_text(text: str) -> str:
    """Observation normalization used by ``obs_key``: strip, collapse whitespace runs to one space."""
    return " ".join(text.split())


def text_digest(normalized: str) -> str:
    """Digest of text that is already normalized (``text_key(t) == text_digest(normalize_text(t))``)."""
    return hashlib.blake2b(normalized.encode("utf-8", "surrogatepass"), digest_size=DIGEST_SIZE).hexdigest()


def text_key(text: str) -> str:
    """``obs_key`` of an observation: digest of its normalized text."""
    return text_digest(normalize_text(text))


def derive_seed(*parts: Any) -> int:
    """A 64-bit seed determined only by ``parts`` (e.g. family, split, index)."""
    digest = hashlib.blake2b(canonical_bytes(parts), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def derive_rng(*parts: Any) -> np.random.Generator:
    """A numpy Generator seeded only by ``parts``: the one way envs get randomness."""
    return np.random.Generator(np.random.PCG64(derive_seed(*parts)))

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
import re
from typing import Any

import numpy as np

DIGEST_SIZE = 16  # bytes; keys are 32 hex characters
_WHITESPACE = re.compile(r"\s+")


def canonical_bytes(value: Any) -> bytes:
    """Encode ``value`` (nested plain data) as canonical bytes; see module docstring."""
    parts: list[bytes] = []
    _encode(value, parts)
    return b"".join(parts)


def _encode(value: Any, out: list[bytes]) -> None:
    if value is None:
        out.append(b"N")
    elif value is True:
        out.append(b"T")
    elif value is False:
        out.append(b"F")
    elif isinstance(value, int):
        out.append(b"i%d;" % value)
    elif isinstance(value, float):
        out.append(b"f" + (0.0 if value == 0.0 else value).hex().encode() + b";")
    elif isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        out.append(b"s%d:" % len(raw))
        out.append(raw)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        out.append(b"b%d:" % len(raw))
        out.append(raw)
    elif isinstance(value, (list, tuple)):
        out.append(b"l%d:" % len(value))
        for item in value:
            _encode(item, out)
    elif isinstance(value, dict):
        items = sorted((canonical_bytes(k), canonical_bytes(v)) for k, v in value.items())
        out.append(b"d%d:" % len(items))
        for key, val in items:
            out.append(key)
            out.append(val)
    elif isinstance(value, (set, frozenset)):
        members = sorted(canonical_bytes(item) for item in value)
        out.append(b"S%d:" % len(members))
        out.extend(members)
    elif isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        raw = array.tobytes()
        header = f"a{array.dtype.str};{','.join(map(str, array.shape))};{len(raw)}:"
        out.append(header.encode())
        out.append(raw)
    elif isinstance(value, np.generic):
        _encode(value.item(), out)
    else:
        raise TypeError(f"cannot canonically encode {type(value).__name__!r}: use plain data")


def stable_digest(value: Any) -> str:
    """blake2b hex digest (32 hex chars) of ``canonical_bytes(value)``."""
    return hashlib.blake2b(canonical_bytes(value), digest_size=DIGEST_SIZE).hexdigest()


def normalize_text(text: str) -> str:
    """Observation normalization used by ``obs_key``: strip, collapse whitespace runs."""
    return _WHITESPACE.sub(" ", text).strip()


def text_key(text: str) -> str:
    """``obs_key`` of an observation: digest of its normalized text."""
    return hashlib.blake2b(
        normalize_text(text).encode("utf-8", "surrogatepass"), digest_size=DIGEST_SIZE
    ).hexdigest()


def derive_seed(*parts: Any) -> int:
    """A 64-bit seed determined only by ``parts`` (e.g. family, split, index)."""
    digest = hashlib.blake2b(canonical_bytes(parts), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def derive_rng(*parts: Any) -> np.random.Generator:
    """A numpy Generator seeded only by ``parts``: the one way envs get randomness."""
    return np.random.Generator(np.random.PCG64(derive_seed(*parts)))

"""Look-alike model names: a confusables skeleton (Unicode TS #39), so that no upload passes for a name on
the board.

:func:`skeleton` follows TS #39's ``skeleton(X)`` with the documented subset
of its data that :mod:`leaderboard.make_confusables` keeps (one character to
an ASCII prototype) and two steps of its own before the mapping, so that
names differing only by marks or invisible characters meet too:

1. NFKC (fullwidth ``ｅ`` and mathematical ``𝐞`` become ``e``, ligatures
   their letters);
2. control, format and other invisible characters are dropped (zero-width
   space and joiners, bidi controls, the Hangul fillers);
3. NFD, then every combining mark is dropped (Mn, Me: ``é``, ``x̱``, a
   letter with stacked marks that has no precomposed form);
4. each character that Unicode's confusables table maps to an ASCII
   prototype is replaced by it (Cyrillic ``а`` → ``a``, Greek ``ο`` → ``o``,
   ``0`` → ``O``, ``1`` and ``I`` → ``l``, ``m`` → ``rn``).

Case is kept (``Llama`` and ``llama`` look different), as TS #39 keeps it.
Two names with equal skeletons look alike; :func:`imitated` finds, among the
names on the board, the one an upload imitates: equal skeleton, another name.
The same name again is no imitation (a model may be submitted more than once).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from leaderboard._confusables import CONFUSABLES

# letters drawn as nothing that are no format characters (Lo): Hangul fillers
INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")


def skeleton(name: str) -> str:
    """``name``'s skeleton (module docstring): equal for names that look alike."""
    visible = "".join(
        character
        for character in unicodedata.normalize("NFKC", name)
        if unicodedata.category(character)[0] != "C" and character not in INVISIBLE_LETTERS
    )
    bases = (c for c in unicodedata.normalize("NFD", visible) if unicodedata.category(c) not in ("Mn", "Me"))
    return "".join(CONFUSABLES.get(character, character) for character in bases)


def imitated(name: str, names: Iterable[str]) -> str | None:
    """The first of ``names`` that ``name`` looks like without being it, or None (also when ``name`` is
    itself one of ``names``: a board that already holds look-alikes of each other still takes each again)."""
    names = list(names)
    if name in names:
        return None
    shape = skeleton(name)
    return next((other for other in names if skeleton(other) == shape), None)

"""What a submitted string may be: display names, versions, valid Unicode.

The bundle's schema (:mod:`agentenvs.eval.bundle`) names these rules as the
``format`` of a string field; :func:`agentenvs.eval.bundle.validate` applies
them after the schema. The rules:

* every string (and object key) is valid Unicode: it has no lone surrogate,
  so it encodes as UTF-8 (:func:`lone_surrogate`);
* a display name (the schema's ``format: agentenvs-name``: model, size,
  agent; :func:`name_problem`) has no control, format (zero-width, bidi
  override), private-use, surrogate or unassigned character (Unicode
  category ``C*``), no line or paragraph separator and no space but U+0020;
  no leading, trailing or doubled space; is in NFKC form (no fullwidth or
  ligature look-alikes); and does not mix the letters of
  :data:`LOOK_ALIKE_SCRIPTS` (no Latin name with a Cyrillic ``е``);
* a package version (``format: pep440-version``; :func:`version_problem`)
  parses as a PEP 440 version (``packaging.version.Version``).

Each rule answers why a string fails, or None when it passes, so that the
board can refuse a submission with a reason.
"""

from __future__ import annotations

import unicodedata

from packaging.version import InvalidVersion, Version

# scripts whose letters pass for each other (Latin "e", Cyrillic "е", Greek "ε"): one name uses one of them
LOOK_ALIKE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK"})


def name_problem(text: str) -> str | None:
    """Why ``text`` cannot be shown as a name (see the module docstring), or None."""
    for character in text:
        category = unicodedata.category(character)
        if category[0] == "C" or category in ("Zl", "Zp") or (category == "Zs" and character != " "):
            label = unicodedata.name(character, "unnamed")
            return f"U+{ord(character):04X} ({label}) is a control, format, bidi or invisible character"
    if text != text.strip() or "  " in text:
        return "leading, trailing or doubled spaces"
    if unicodedata.normalize("NFKC", text) != text:
        return "not in NFKC form (compatibility look-alikes such as fullwidth letters)"
    scripts = {unicodedata.name(c).split()[0] for c in text if c.isalpha()} & LOOK_ALIKE_SCRIPTS
    if len(scripts) > 1:
        return f"letters of look-alike scripts ({', '.join(sorted(scripts))}) can pass for another name"
    return None


def version_problem(text: str) -> str | None:
    """Why ``text`` is not a PEP 440 version, or None."""
    try:
        Version(text)
    except InvalidVersion:
        return "not a PEP 440 version"
    return None


def lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (it is no valid Unicode: it cannot be encoded as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False

"""Blocks of the documentation pages that a script generates, between a start and an end marker comment.

Each generating script (``reading_table.py``, ``hacks_column.py``) hands
:func:`main` its :class:`Block` (the page and the two markers) and a function
from the block the page holds now to the block it should hold; ``main`` prints
it, writes it back (``--write``) or exits 1 when the page differs (``--check``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Block:
    """The text between ``start`` and ``end`` in ``page`` (a path from the repository root)."""

    page: str
    start: str
    end: str

    @property
    def path(self) -> Path:
        return ROOT / self.page

    def read(self, text: str) -> str:
        """The block as the page text ``text`` holds it now (without the markers)."""
        begin, finish = text.index(self.start) + len(self.start), text.index(self.end)
        return text[begin:finish].strip("\n")

    def current(self) -> str:
        """The block as the page holds it now."""
        return self.read(self.path.read_text(encoding="utf-8"))

    def replaced(self, text: str, block: str) -> str:
        """The page text ``text`` with the block's text replaced by ``block``."""
        begin, finish = text.index(self.start) + len(self.start), text.index(self.end)
        return f"{text[:begin]}\n{block}\n{text[finish:]}"


def main(
    block: Block, generate: Callable[[str], str], description: str, argv: list[str] | None = None
) -> int:
    """Print the generated block, or ``--write`` it into its page, or ``--check`` that the page holds it."""
    parser = argparse.ArgumentParser(description=description)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"replace the block in {block.page}")
    mode.add_argument("--check", action="store_true", help=f"exit 1 when {block.page} differs")
    args = parser.parse_args(argv)
    text = block.path.read_text(encoding="utf-8")
    generated = generate(block.read(text))
    if args.check:
        if block.read(text) != generated:
            print(
                f"{block.page} differs from what {Path(sys.argv[0]).name} generates; run it with --write",
                file=sys.stderr,
            )
            return 1
    elif args.write:
        block.path.write_text(block.replaced(text, generated), encoding="utf-8")
    else:
        print(generated)
    return 0

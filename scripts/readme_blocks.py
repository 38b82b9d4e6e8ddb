"""Blocks of README.md that a script generates, between a start and an end marker comment.

Each generating script (``reading_table.py``, ``hacks_column.py``) hands
:func:`main` a function from the block README.md holds now to the block it
should hold; ``main`` prints it, writes it back (``--write``) or exits 1 when
README.md differs (``--check``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


@dataclass(frozen=True)
class Block:
    """The text between ``start`` and ``end`` in README.md."""

    start: str
    end: str

    def read(self, readme: str) -> str:
        """The block as ``readme`` holds it now (without the markers)."""
        begin, finish = readme.index(self.start) + len(self.start), readme.index(self.end)
        return readme[begin:finish].strip("\n")

    def replaced(self, readme: str, text: str) -> str:
        """``readme`` with the block's text replaced by ``text``."""
        begin, finish = readme.index(self.start) + len(self.start), readme.index(self.end)
        return f"{readme[:begin]}\n{text}\n{readme[finish:]}"


def main(block: Block, generate: Callable[[str], str], description: str, argv: list[str] | None = None) -> int:
    """Print the generated block, or ``--write`` it into README.md, or ``--check`` that README.md holds it."""
    parser = argparse.ArgumentParser(description=description)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="replace the block in README.md")
    mode.add_argument("--check", action="store_true", help="exit 1 when README.md differs")
    args = parser.parse_args(argv)
    readme = README.read_text(encoding="utf-8")
    text = generate(block.read(readme))
    if args.check:
        if block.read(readme) != text:
            print(f"README.md differs from what {Path(sys.argv[0]).name} generates; run it with --write",
                  file=sys.stderr)
            return 1
    elif args.write:
        README.write_text(block.replaced(readme, text), encoding="utf-8")
    else:
        print(text)
    return 0

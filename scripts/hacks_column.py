"""The "known hacks" column of the env table in docs/reference/env-table.md, from each env's docstring table.

Every env module's docstring table has a ``Known hacks`` row: what a policy
could farm under the default weights (and each reward preset), and what stops
it. This script copies that row into the last column of that page's env
table, row by row (the env of a row is the first id its first cell names;
a row whose text equals the row above reads "as above").

    python scripts/hacks_column.py            # print the table with the column filled
    python scripts/hacks_column.py --write    # write it into the page
    python scripts/hacks_column.py --check    # exit 1 when the page differs

``tests/core/test_reward_hacking.py`` runs ``--check``'s comparison in the default suite.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import gymnasium as gym

import agentenvs  # noqa: F401  (registers the ids)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # this folder: page_blocks
from page_blocks import Block, main  # noqa: E402

BLOCK = Block(
    "docs/reference/env-table.md",
    "<!-- env-table:start (scripts/hacks_column.py --write fills the last column) -->",
    "<!-- env-table:end -->",
)
HEADER = "known hacks (default weights, each preset)"
ROW_LABEL = "Known hacks"
_RULE = re.compile(r"=+ +=+")
_ENV_ID = re.compile(r"agentenvs/[A-Za-z0-9-]+-v\d+")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def docstring_row(doc: str, label: str) -> str | None:
    """The text of row ``label`` of the first two-column ``====`` table in ``doc``, on one line.

    A row starts where the first column holds text; its continuation lines
    leave the first column blank. Returns None when the table has no such row.
    """
    lines = doc.splitlines()
    rules = [i for i, line in enumerate(lines) if _RULE.fullmatch(line)]
    if len(rules) < 2:
        return None
    column = len(re.match(r"=+ +", lines[rules[0]]).group(0))
    found: list[str] | None = None
    for line in lines[rules[0] + 1 : rules[1]]:
        head, text = line[:column].strip(), line[column:].strip()
        if head:
            if found is not None:
                break
            if head == label:
                found = [text]
        elif found is not None and text:
            found.append(text)
    return None if found is None else " ".join(found)


def known_hacks(env_id: str) -> str:
    """The ``Known hacks`` row of the docstring of the module that defines ``env_id``'s env class."""
    module_name = gym.spec(env_id).entry_point.split(":")[0]
    doc = importlib.import_module(module_name).__doc__ or ""
    row = docstring_row(doc, ROW_LABEL)
    if row is None:
        raise LookupError(f"{module_name}'s docstring table has no {ROW_LABEL!r} row")
    return row


def as_markdown(text: str) -> str:
    """Docstring markup to a markdown table cell: ``code`` to `code`, pipes escaped."""
    return text.replace("``", "`").replace("|", "\\|")


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in _CELL_SPLIT.split(row.strip())[1:-1]]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table_with_column(table: str) -> str:
    """The env table (header, rule, rows) with its last column filled from the docstrings."""
    header, rule, *rows = table.strip("\n").splitlines()
    head_cells = _cells(header)
    if head_cells[-1] != HEADER:
        head_cells.append(HEADER)
        rule = rule.rstrip() + "---|"
    lines = [_row(head_cells), rule]
    previous = None
    for row in rows:
        cells = _cells(row)[: len(head_cells) - 1]
        env_id = _ENV_ID.search(cells[0])
        if env_id is None:
            raise ValueError(f"env table row names no env id: {row[:80]!r}")
        text = as_markdown(known_hacks(env_id.group(0)))
        lines.append(_row([*cells, "as above" if text == previous else text]))
        previous = text
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main(BLOCK, table_with_column, __doc__.splitlines()[0]))

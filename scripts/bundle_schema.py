"""The bundle schema as a table of fields, for docs/reference/leaderboard.md, from ``SUBMISSION_SCHEMA``.

One row per field of ``agentenvs.eval.bundle.SUBMISSION_SCHEMA`` (the JSON
schema every read of a bundle validates against), in the schema's order: its
path (``.`` between an object's fields, ``[]`` for an array's items, ``*`` for
a key of an object whose keys are free, such as env ids), whether it is
required, its type and its constraints.

    python scripts/bundle_schema.py            # print the table
    python scripts/bundle_schema.py --write    # replace the table in the page
    python scripts/bundle_schema.py --check    # exit 1 when the page differs

``tests/leaderboard/test_leaderboard_readme.py`` runs ``--check``'s comparison in the default suite.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agentenvs.eval.bundle import SUBMISSION_SCHEMA

sys.path.insert(0, str(Path(__file__).resolve().parent))  # this folder: page_blocks
from page_blocks import Block, main  # noqa: E402

BLOCK = Block(
    page="docs/reference/leaderboard.md",
    start="<!-- bundle-schema:start (scripts/bundle_schema.py --write) -->",
    end="<!-- bundle-schema:end -->",
)
# (schema keyword, how a row shows it); the keywords a row shows, in this order
CONSTRAINTS = (
    ("const", "= `{}`"),
    ("enum", "one of {}"),
    ("format", "format `{}`"),
    ("pattern", "matches `{}`"),
    ("minLength", "length ≥ {}"),
    ("maxLength", "length ≤ {}"),
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("minItems", "items ≥ {}"),
    ("maxItems", "items ≤ {}"),
    ("minProperties", "keys ≥ {}"),
    ("maxProperties", "keys ≤ {}"),
)


def type_of(node: Mapping[str, Any]) -> str:
    """The node's JSON type(s): ``integer or null``; ``string`` for a ``const`` or ``enum`` of strings."""
    kind = node.get("type")
    if kind is None:
        values = node.get("enum", [node.get("const")])
        kind = sorted({type(value).__name__.replace("str", "string") for value in values})
    return " or ".join(kind) if isinstance(kind, list) else kind


def constraints_of(node: Mapping[str, Any]) -> str:
    """The node's constraints, ``; ``-separated, each as :data:`CONSTRAINTS` shows it."""
    shown = []
    for keyword, template in CONSTRAINTS:
        if keyword in node:
            value = node[keyword]
            if isinstance(value, list):
                value = ", ".join(f"`{item}`" for item in value)
            elif isinstance(value, int) and not isinstance(value, bool):
                value = f"{value:,}"
            shown.append(template.format(value))
    if node.get("additionalProperties") is False and "properties" in node:
        shown.append("no other keys")
    return "; ".join(shown)


def fields(node: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, bool, Mapping[str, Any]]]:
    """(path, required, schema node) of every field under ``node``, depth first in the schema's order."""
    required = set(node.get("required", ()))
    for name, child in node.get("properties", {}).items():
        child_path = f"{path}.{name}" if path else name
        yield child_path, name in required, child
        yield from fields(child, child_path)
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        yield f"{path}.*", False, extra
        yield from fields(extra, f"{path}.*")
    items = node.get("items")
    if isinstance(items, Mapping):
        yield f"{path}[]", False, items
        yield from fields(items, f"{path}[]")


def schema_table(schema: Mapping[str, Any] = SUBMISSION_SCHEMA) -> str:
    """The markdown table (field, required, type, constraints), pipes in cells escaped."""
    lines = ["| field | required | type | constraints |", "|---|---|---|---|"]
    for path, required, node in fields(schema):
        cells = [f"`{path}`", "yes" if required else "", type_of(node), constraints_of(node)]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main(BLOCK, lambda _current: schema_table(), __doc__.splitlines()[0]))

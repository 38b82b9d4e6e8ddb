"""How typical model replies are read by each family: the table of docs/reference/reading-rule.md.

Plays each reply as the first turn of every family's default env and reports
what the env did with it, so the table shows behaviour, not intent.

    python scripts/reading_table.py            # print the table
    python scripts/reading_table.py --write    # replace the table in the page
    python scripts/reading_table.py --check    # exit 1 when the page differs

``tests/core/test_reading_rule.py`` runs ``--check``'s comparison in the default suite.
"""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym

import agentenvs  # noqa: F401  (registers the ids)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # this folder: page_blocks
from page_blocks import Block, main  # noqa: E402

LEGEND_WIDTH = 100  # the legend's lines, so that the page reads without side scrolling
BLOCK = Block(
    "docs/reference/reading-rule.md",
    "<!-- reading-table:start (scripts/reading_table.py --write) -->",
    "<!-- reading-table:end -->",
)


@dataclass(frozen=True)
class Family:
    name: str
    env_id: str
    action: str  # valid in the first state of every task
    capitalised: str  # the same action as a model might capitalise it


FAMILIES = (
    Family("Sokoban", "agentenvs/Sokoban-v0", "left", "Left"),
    Family("TextCraft", "agentenvs/TextCraft-v0", "inventory", "Inventory"),
    Family("BabyAI", "agentenvs/BabyAI-v0", "turn left", "Turn left"),
    Family("WebShop", "agentenvs/WebShop-v0", "search[dress]", "Search[dress]"),
    Family("ALFWorld", "agentenvs/ALFWorld-v0", "look", "Look"),
)

# (what the reply is, its template: {a} the family's action, {A} capitalised)
REPLIES = (
    ("tagged action", "<action>{a}</action>"),
    ("think, then action", "<think>I should act.</think>\n<action>{a}</action>"),
    ("bare action", "{a}"),
    ("trailing period", "<action>{a}.</action>"),
    ("capitalised", "<action>{A}</action>"),
    ("upper-case tags", "<ACTION>{a}</ACTION>"),
    ("extra whitespace", "\n <action>\n  {a}  \n</action> \n"),
    ("prose around the block", "I will {a}. <action>{a}</action>"),
    ("two action blocks", "<action>{a}</action><action>{a}</action>"),
    ("two actions in one block", "<action>{a} || {a}</action>"),
    ("label, no tags", "Action: {a}"),
    ("unclosed tag", "<action>{a}"),
)


def read_reply(env: gym.Env, reply: str) -> str:
    """One cell: the action(s) read, whether the env applied them, the format component."""
    protocol = env.unwrapped.protocol
    actions = protocol.parse(reply).actions
    env.reset(seed=0)
    _, _, _, _, info = env.step(reply)
    components = info["reward_components"]
    applied = "✗" if components["invalid_action"] else "✓"
    read = ", ".join(f"`{a}`" for a in actions) if actions else "—"
    return f"{read} {applied} f{components['format']:g}"


def _code(text: str) -> str:
    return "`" + text.replace("\n", "\\n").replace("|", "\\|") + "`"


def reading_table() -> str:
    """The markdown table (one row per reply, one column per family)."""
    envs = [gym.make(family.env_id).unwrapped for family in FAMILIES]
    lines = [
        "| reply | template | " + " | ".join(f.name for f in FAMILIES) + " |",
        "|---|---|" + "---|" * len(FAMILIES),
    ]
    for label, template in REPLIES:
        cells = [
            read_reply(env, template.format(a=family.action, A=family.capitalised)).replace("|", "\\|")
            for env, family in zip(envs, FAMILIES, strict=False)
        ]
        lines.append(f"| {label} | {_code(template)} | " + " | ".join(cells) + " |")
    actions = ", ".join(f"{f.name} `{f.action}` (`{f.capitalised}`)" for f in FAMILIES)
    legend = (
        f"`{{a}}` is each family's action, `{{A}}` the same capitalised: {actions}. A cell shows "
        "the action(s) read (— when none), ✓ when the turn applied them or ✗ when it was invalid "
        "(world unchanged, `invalid_action` = 1), and the `format` component."
    )
    return "\n".join([*textwrap.wrap(legend, width=LEGEND_WIDTH, break_on_hyphens=False), "", *lines])


if __name__ == "__main__":
    raise SystemExit(main(BLOCK, lambda _current: reading_table(), __doc__.splitlines()[0]))

"""How typical model replies are read by each family: the README's reading-rule table.

Plays each reply as the first turn of every family's default env and reports
what the env did with it, so the table shows behaviour, not intent.

    python scripts/reading_table.py            # print the table
    python scripts/reading_table.py --write    # replace the table in README.md
    python scripts/reading_table.py --check    # exit 1 when README.md differs

``tests/test_reading_rule.py`` runs ``--check``'s comparison in the default suite.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym

import agentenvs  # noqa: F401  (registers the ids)

README = Path(__file__).resolve().parents[1] / "README.md"
START = "<!-- reading-table:start (scripts/reading_table.py --write) -->"
END = "<!-- reading-table:end -->"


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
            for env, family in zip(envs, FAMILIES)
        ]
        lines.append(f"| {label} | {_code(template)} | " + " | ".join(cells) + " |")
    actions = ", ".join(f"{f.name} `{f.action}` (`{f.capitalised}`)" for f in FAMILIES)
    legend = (
        f"`{{a}}` is each family's action, `{{A}}` the same capitalised: {actions}. A cell shows "
        "the action(s) read (— when none), ✓ when the turn applied them or ✗ when it was invalid "
        "(world unchanged, `invalid_action` = 1), and the `format` component."
    )
    return "\n".join([legend, "", *lines])


def readme_table(readme: str) -> str:
    """The table as README.md holds it now."""
    start, end = readme.index(START) + len(START), readme.index(END)
    return readme[start:end].strip("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="replace the table in README.md")
    mode.add_argument("--check", action="store_true", help="exit 1 when README.md differs")
    args = parser.parse_args(argv)
    table = reading_table()
    if not (args.write or args.check):
        print(table)
        return 0
    readme = README.read_text(encoding="utf-8")
    if args.check:
        if readme_table(readme) != table:
            print("README.md's reading table differs from what the envs do; run --write", file=sys.stderr)
            return 1
        return 0
    start, end = readme.index(START) + len(START), readme.index(END)
    README.write_text(f"{readme[:start]}\n{table}\n{readme[end:]}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

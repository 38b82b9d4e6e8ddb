"""``agentenvs list``: prints every registered id, one line each.

Each line is the id, padded to the longest, then its one-line summary, then
``[reason]`` for an id that cannot run here (its extra is missing).
"""

from __future__ import annotations

import argparse

from agentenvs.cli.common import add_command
from agentenvs.core import registration
from agentenvs.core.registration import unavailable_reason


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    add_command(subparsers, "list", run, "list the registered env ids")


def run(args: argparse.Namespace) -> int:
    width = max((len(entry.env_id) for entry in registration.entries()), default=0)
    for entry in registration.entries():
        reason = unavailable_reason(entry.env_id)
        note = f"  [{reason.split(':')[0]}]" if reason else ""
        print(f"{entry.env_id:<{width}}  {entry.summary}{note}")
    return 0

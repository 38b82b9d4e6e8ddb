"""What a benchmark's output closes with, and its ``--out`` copy: the machine the run shared and its load."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console
from rich.table import Table


def run_conditions(load_before: float) -> str:
    """The closing line: the cores, and the 1-minute load average at the start and now."""
    load = f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    return f"One run on a shared {os.cpu_count()}-core machine ({load})"


def print_table(table: Table, load_before: float, out: str | None) -> None:
    """Print ``table`` and :func:`run_conditions`; also write both, as printed, to ``out`` when given."""
    console = Console(width=130, record=True)
    console.print(table)
    console.print(run_conditions(load_before))
    if out:
        Path(out).write_text(console.export_text(), encoding="utf-8")

"""``agentenvs replay FILE``: re-run the episodes of a results file and report mismatches.

Reads the episode records ``agentenvs run --out`` wrote, re-runs them with
:mod:`agentenvs.eval.replay` (in process, or over ``--workers`` subprocesses
or ray workers), notes each record that does not reproduce on stderr
(``FILE:LINE env agent task seed: problems``) and prints one line with the
verdict. Exits 1 on a mismatch; 2 for a file that is missing, empty, not
text, cut short or holds a line that is not an episode record.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from rich.console import Console

from agentenvs.cli.common import UsageError, add_command, note, progress, resolve_env_id
from agentenvs.core.registration import unavailable_reason
from agentenvs.core.untrusted import one_line
from agentenvs.eval.bundle import BundleError, parse_json
from agentenvs.eval.episodes import EpisodeRecord


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    sub = add_command(
        subparsers, "replay", run, "re-run the episodes of a results file and report mismatches"
    )
    sub.add_argument("results", metavar="FILE")
    sub.add_argument(
        "--backend",
        choices=["inprocess", "subprocess", "ray"],
        default="inprocess",
        help="where the env copies run "
        "(default inprocess; subprocess and ray spread a large file over cores)",
    )
    sub.add_argument("--workers", type=int, help="worker processes for subprocess or ray (default: cores)")


def run(args: argparse.Namespace) -> int:
    from agentenvs.eval.replay import Replayed, env_key, replay_records

    path = Path(args.results)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    numbered = _read_records(path)
    records = [dataclasses.replace(record, env_id=resolve_env_id(record.env_id)) for _, record in numbered]
    for env_id, _, _ in sorted({env_key(record) for record in records}):
        reason = unavailable_reason(env_id)
        if reason is not None:
            raise UsageError(f"{env_id} {reason}")
    mismatched = 0
    notes = Console(stderr=True)
    with progress(notes) as bar:
        task = bar.add_task("replay", total=len(records))

        def report(index: int, replayed: Replayed) -> None:
            nonlocal mismatched
            if not replayed.reproduced:
                mismatched += 1
                line_number, record = numbered[index]
                note(
                    bar.console,
                    f"{path.name}:{line_number} {record.env_id} {record.agent} task {record.task_id} "
                    f"seed {record.seed}: " + "; ".join(replayed.problems[:4]),
                )
            bar.advance(task)

        replay_records(records, backend=args.backend, num_workers=args.workers, on_replayed=report)
    verdict = "all match" if not mismatched else f"{mismatched} mismatched"
    print(f"replayed {len(records)} episodes from {path}: {verdict}")
    return 1 if mismatched else 0


def _read_records(path: Path) -> list[tuple[int, EpisodeRecord]]:
    """The records of a results file; a ``UsageError`` for an empty, binary or cut-short file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{path} is not a text file of episode records (byte {exc.start} is not UTF-8)"
        ) from None
    if "\x00" in text:
        raise UsageError(f"{path} is not a text file of episode records (it holds NUL bytes)")
    lines = text.split("\n")
    records = []
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = parse_json(line)
        except BundleError as exc:
            if line_number == len(lines):  # the last line, with no newline after it
                raise UsageError(
                    f"{path}:{line_number} is cut short: the file ends inside a record"
                ) from None
            raise UsageError(f"{path}:{line_number} is not an episode record: {one_line(exc)}") from None
        try:
            records.append((line_number, EpisodeRecord.from_json(data, kind="record")))
        except BundleError as exc:
            raise UsageError(f"{path}:{line_number} is not an episode record: {one_line(exc)}") from None
    if not records:
        raise UsageError(f"{path} holds no episode records")
    return records

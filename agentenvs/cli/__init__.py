"""The ``agentenvs`` command.

::

    agentenvs list
    agentenvs play ID [--seed S] [--split SPLIT] [--env-kwarg KEY=VALUE ...]
    agentenvs run ID|all|PATTERN --agent random --agent expert [--episodes 20] [--seed 0]
                  [--split test] [--out results.jsonl] [--env-kwarg KEY=VALUE ...]
    agentenvs replay results.jsonl [--backend inprocess|subprocess|ray] [--workers N]
    agentenvs check-data ID DATA_DIR [--episodes 10] [--env-kwarg KEY=VALUE ...]
    agentenvs diagnose grouping ID [--agent random|expert] [--episodes 64] [--group-size 8] [--out DIR]
    agentenvs eval ID|all|PATTERN ... --model NAME (--base-url URL [--api-key-env VAR] | --local-model PATH)
                   [--panel test] [--out DIR] [--concurrency 8] [--model-size 7B]
                   [--max-tokens N] [--temperature 0] [--top-p 1] [--seed S] [--history-window K]
                   [--max-model-len N]
    agentenvs serve ID [--port 8000] [--host 127.0.0.1] [--max-sessions 128] [--env-kwarg KEY=VALUE ...]

``run`` plays episode ``e`` of every (env, agent) pair from ``reset(seed=S + e)``
and prints one summary row per pair. ``all`` selects every main id (variants
such as the per-level ``BabyAI-<Level>`` ids are left to patterns), a shell
pattern such as ``'BabyAI-*'`` every id it matches; those whose extra is
missing are skipped with a note. ``--out`` writes one JSON line per episode
(see :class:`agentenvs.eval.episodes.EpisodeRecord`), which ``replay`` re-runs
and checks (:mod:`agentenvs.eval.replay`). ``eval`` plays a chat model on a
fixed panel and writes a submission bundle (see :mod:`agentenvs.eval.evaluate`);
rerun it to resume. ``serve`` exposes an id as an OpenEnv environment server,
one env per WebSocket session (:mod:`agentenvs.integrations.openenv`).
``--env-kwarg`` values are read as JSON when they parse
(``max_turns=5``, ``dim_room=[8,8]``) and as plain strings otherwise.

Exit status: 0 on success; 1 when ``replay`` finds a mismatch, or when
``run`` could run nothing or an agent or env raised (that pair's row is left
out, the others still run); 2 for bad arguments (unknown id or agent, bad kwarg,
missing file; a results file that is empty, not text, cut short or not
records), reported in one line on stderr. ``check-data`` exits 1 when a task
does not load, an episode crashes or the expert fails a task it was given, or
when the folder cannot be opened at all.

One module per command, each with ``add_parser(subparsers)`` (its arguments
and handler) and ``run(args) -> int``:

===============  ================================================================
module           command
===============  ================================================================
``listing``      ``list``
``play``         ``play``
``run``          ``run``
``replay``       ``replay``
``check_data``   ``check-data``
``evaluate``     ``eval``
``serve``        ``serve``
``diagnose``     ``diagnose grouping``
``common``       what several share: the usage error, id resolution, env
                 kwargs, the ``--split``/``--env-kwarg`` options, notes,
                 the progress bar
===============  ================================================================

May import: :mod:`agentenvs.agents`, ``agentenvs.core``, ``agentenvs.eval``,
``agentenvs.diagnostics`` and ``agentenvs.integrations`` (the command runs
them all); it never imports ``leaderboard`` or ``baselines``, and nothing in
the project imports it but the tests.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import agentenvs
from agentenvs.cli import check_data, diagnose, evaluate, listing, play, replay, run, serve
from agentenvs.cli.common import Parser, UsageError
from agentenvs.core.untrusted import one_line

# in the order ``agentenvs --help`` lists them
COMMANDS = (listing, play, run, replay, check_data, evaluate, serve, diagnose)

__all__ = ["COMMANDS", "UsageError", "build_parser", "main"]


def build_parser() -> Parser:
    """``agentenvs``'s parser: ``--version`` and one subcommand per module of :data:`COMMANDS`."""
    parser = Parser(prog="agentenvs", description="Multi-turn text environments for LLM agents.")
    parser.add_argument("--version", action="version", version=f"agentenvs {agentenvs.__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; bad arguments are reported in one line on stderr, exit status 2.

    A reader that closes the pipe early (``agentenvs list | head``) ends the
    command quietly, as ``cat`` does, with the status a SIGPIPE death gives.
    """
    try:
        args = build_parser().parse_args(argv)
        return args.handler(args)
    except UsageError as exc:
        print(f"agentenvs: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # stdout's buffer cannot be flushed any more: point it at /dev/null so that the interpreter's
        # own flush at exit does not report the closed pipe a second time
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141

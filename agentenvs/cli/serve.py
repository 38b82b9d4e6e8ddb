"""``agentenvs serve ID``: serve an id as an OpenEnv environment server until interrupted.

Checks that the id makes an env with the given kwargs, notes the HTTP and
WebSocket addresses on stderr, then serves one env per WebSocket session,
closed with the socket or after ``--session-idle-s`` seconds without a message
(:mod:`agentenvs.integrations.openenv`, the ``openenv`` extra). Bad
arguments, or a missing extra, exit 2 before any server starts.
"""

from __future__ import annotations

import argparse
import math

from rich.console import Console

from agentenvs.cli.common import (
    UsageError,
    add_command,
    add_env_options,
    make_env,
    note,
    parse_env_kwargs,
    resolve_env_id,
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    sub = add_command(
        subparsers, "serve", run, "serve an id as an OpenEnv environment server (HTTP and WebSocket)"
    )
    sub.add_argument("env_id", metavar="ID")
    sub.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    sub.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    sub.add_argument(
        "--max-sessions",
        type=int,
        default=128,
        help="concurrent WebSocket sessions, one env each (default 128)",
    )
    sub.add_argument(
        "--session-idle-s",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="close a session, and its env, after this many seconds without a message (default 600)",
    )
    add_env_options(sub)


def run(args: argparse.Namespace) -> int:
    """Serve one id as an OpenEnv environment server until interrupted."""
    if not 1 <= args.port <= 65535 or args.max_sessions < 1:
        raise UsageError(
            f"--port must be in [1, 65535] and --max-sessions >= 1, got {args.port}, {args.max_sessions}"
        )
    if not (math.isfinite(args.session_idle_s) and args.session_idle_s > 0):
        raise UsageError(f"--session-idle-s must be a number of seconds > 0, got {args.session_idle_s}")
    env_id = resolve_env_id(args.env_id)
    kwargs = parse_env_kwargs(args.env_kwarg, args.split)
    make_env(env_id, kwargs).close()
    try:
        from agentenvs.integrations import openenv
    except ImportError as exc:
        raise UsageError(f"serve needs the openenv extra (pip install 'agentenvs[openenv]'): {exc}") from None
    note(
        Console(stderr=True),
        f"serving {env_id} as an OpenEnv environment on http://{args.host}:{args.port} "
        f"(sessions on ws://{args.host}:{args.port}/ws, up to {args.max_sessions}, "
        f"each closed after {args.session_idle_s:g} s without a message)",
    )
    openenv.serve(
        env_id,
        host=args.host,
        port=args.port,
        env_kwargs=kwargs,
        max_sessions=args.max_sessions,
        session_idle_s=args.session_idle_s,
    )
    return 0

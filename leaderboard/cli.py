"""The ``leaderboard`` command.

::

    leaderboard seed   --db board.sqlite [--panel test] [--env ID ...]
    leaderboard serve  --db board.sqlite [--host 127.0.0.1] [--port 8080] [--tokens-env LEADERBOARD_TOKENS]
                       [--verify-backend subprocess --verify-workers 8] [--trusted-proxy 127.0.0.1 ...]
    leaderboard export --db board.sqlite --out site/
    leaderboard verify BUNDLE [--backend inprocess|subprocess|ray] [--workers N]
    leaderboard submit BUNDLE --url URL [--token-env LEADERBOARD_TOKEN] [--wait]

``seed`` plays the random and expert agents of every main env on the panel
and stores them (verified by replay like any upload). ``serve`` reads the
accepted upload tokens from a comma-separated environment variable; behind a
reverse proxy, ``--trusted-proxy`` (repeatable: an address or a network)
names the proxies whose ``X-Forwarded-For`` gives the client address the
failed-authentication throttle counts (none by default: the header is
ignored, uvicorn's own proxy-header rewriting included).
``verify`` re-checks a bundle locally, exactly as the board will. ``submit``
uploads a bundle folder written by ``agentenvs eval``; with ``--wait`` it
polls until the board has verified or rejected it.

Exit status: 0 on success (``verify``/``submit --wait``: verified), 1 when a
submission is rejected, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentenvs.core.registration import available_main_ids
from agentenvs.eval.bundle import BundleError, read_bundle
from agentenvs.eval.panel import PANELS, panel_spec
from leaderboard.pages import board_page, submission_page, submit_page
from leaderboard.seed import SCRIPTED_AGENTS, scripted_document
from leaderboard.store import Store
from leaderboard.verify import verify_submission


def seed(store: Store, env_ids: Sequence[str], panel: str) -> list[int]:
    """Store the scripted agents' submissions; their ids."""
    ids = []
    for agent in SCRIPTED_AGENTS:
        document = scripted_document(env_ids, agent, panel_spec(panel))
        submission_id = store.add_pending(document, submitter="seed")
        store.finish(submission_id, verify_submission(document))
        ids.append(submission_id)
    return ids


def export(store: Store, out: Path) -> int:
    """Write the board, the how-to-submit page and every verified submission as static HTML; how many
    submissions."""
    (out / "submissions").mkdir(parents=True, exist_ok=True)
    rows = store.board()
    board = board_page(rows, lambda i: f"submissions/{i}.html", "submit.html")
    (out / "index.html").write_text(board, encoding="utf-8")
    (out / "submit.html").write_text(submit_page(board_link="index.html"), encoding="utf-8")
    for row in rows:
        page = submission_page(row, store.episodes(row["id"]), board_link="../index.html")
        (out / "submissions" / f"{row['id']}.html").write_text(page, encoding="utf-8")
    return len(rows)


def _post(url: str, body: bytes, token: str) -> dict:
    request = urllib.request.Request(
        url.rstrip("/") + "/submissions",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


def _status(url: str, submission_id: int) -> dict:
    with urllib.request.urlopen(
        f"{url.rstrip('/')}/submissions/{submission_id}/status", timeout=60
    ) as response:
        return json.loads(response.read())


def cmd_submit(args: argparse.Namespace) -> int:
    token = os.environ.get(args.token_env, "")
    if not token:
        print(f"leaderboard: error: set {args.token_env} to your upload token", file=sys.stderr)
        return 2
    document = read_bundle(args.bundle)
    try:
        reply = _post(args.url, json.dumps(document).encode(), token)
    except urllib.error.HTTPError as exc:
        print(
            f"leaderboard: upload refused ({exc.code}): {exc.read().decode(errors='replace')}",
            file=sys.stderr,
        )
        return 1
    print(f"submitted as #{reply['id']} ({reply['status']})")
    if not args.wait:
        return 0
    while True:
        status = _status(args.url, reply["id"])
        if status["status"] != "pending":
            break
        time.sleep(args.poll_s)
    print(f"#{reply['id']} {status['status']}")
    for problem in status["problems"]:
        print(f"  {problem}")
    return 0 if status["status"] == "verified" else 1


def cmd_verify(args: argparse.Namespace) -> int:
    verdict = verify_submission(read_bundle(args.bundle), backend=args.backend, num_workers=args.workers)
    if verdict.verified:
        overall = verdict.verified_summary["overall"]
        print(
            f"verified: {len(verdict.transcripts)} episodes reproduce; "
            f"overall score {overall['score']['mean']:.3f}"
        )
        return 0
    print("rejected:")
    for problem in verdict.problems:
        print(f"  {problem}")
    return 1


def cmd_seed(args: argparse.Namespace) -> int:
    store = Store(args.db)
    ids = seed(store, args.env or available_main_ids(), args.panel)
    for submission_id in ids:
        row = _stored(store, submission_id)
        print(f"#{submission_id} {row['model']}: {row['status']} {'; '.join(row['problems'])}")
    return 0 if all(_stored(store, i)["status"] == "verified" for i in ids) else 1


def _stored(store: Store, submission_id: int) -> dict[str, Any]:
    """The row of a submission this command stored."""
    row = store.submission(submission_id)
    if row is None:
        raise RuntimeError(f"submission #{submission_id} is not in the board's database")
    return row


def cmd_export(args: argparse.Namespace) -> int:
    count = export(Store(args.db), Path(args.out))
    print(f"wrote the board and {count} submission pages to {args.out}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from leaderboard.app import Limits, create_app

    tokens = [token.strip() for token in os.environ.get(args.tokens_env, "").split(",") if token.strip()]
    if not tokens:
        print(
            f"leaderboard: error: set {args.tokens_env} to the comma-separated upload tokens", file=sys.stderr
        )
        return 2
    try:
        limits = Limits(trusted_proxies=tuple(args.trusted_proxy or ()))
    except ValueError as exc:
        print(f"leaderboard: error: {exc}", file=sys.stderr)
        return 2
    import uvicorn

    app = create_app(
        Store(args.db), tokens, limits, verify_backend=args.verify_backend, verify_workers=args.verify_workers
    )
    # uvicorn's own proxy headers would trust X-Forwarded-For from 127.0.0.1 by default: the app decides
    uvicorn.run(app, host=args.host, port=args.port, proxy_headers=False)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="leaderboard", description="The agentenvs leaderboard.")
    commands = parser.add_subparsers(dest="command", required=True)
    sub = commands.add_parser("seed", help="store the random and expert agents of every env")
    sub.add_argument("--db", required=True)
    sub.add_argument("--panel", default="test", choices=sorted(PANELS))
    sub.add_argument("--env", action="append", help="env id (repeatable; default: every main env available)")
    sub.set_defaults(handler=cmd_seed)
    sub = commands.add_parser("serve", help="run the web app")
    sub.add_argument("--db", required=True)
    sub.add_argument("--host", default="127.0.0.1")
    sub.add_argument("--port", type=int, default=8080)
    sub.add_argument("--tokens-env", default="LEADERBOARD_TOKENS")
    sub.add_argument("--verify-backend", default="inprocess", choices=["inprocess", "subprocess", "ray"])
    sub.add_argument("--verify-workers", type=int, help="replay processes (subprocess/ray)")
    sub.add_argument(
        "--trusted-proxy",
        action="append",
        metavar="ADDRESS",
        help="a reverse proxy (address or network) whose X-Forwarded-For names the client (repeatable)",
    )
    sub.set_defaults(handler=cmd_serve)
    sub = commands.add_parser("export", help="write the board as static HTML")
    sub.add_argument("--db", required=True)
    sub.add_argument("--out", required=True)
    sub.set_defaults(handler=cmd_export)
    sub = commands.add_parser("verify", help="re-check a bundle locally by replay")
    sub.add_argument("bundle")
    sub.add_argument("--backend", default="inprocess", choices=["inprocess", "subprocess", "ray"])
    sub.add_argument("--workers", type=int)
    sub.set_defaults(handler=cmd_verify)
    sub = commands.add_parser("submit", help="upload a bundle written by agentenvs eval")
    sub.add_argument("bundle")
    sub.add_argument("--url", required=True)
    sub.add_argument("--token-env", default="LEADERBOARD_TOKEN")
    sub.add_argument("--wait", action="store_true", help="wait for the verdict")
    sub.add_argument("--poll-s", type=float, default=2.0)
    sub.set_defaults(handler=cmd_submit)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except BundleError as exc:
        print(f"leaderboard: error: {exc}", file=sys.stderr)
        return 2

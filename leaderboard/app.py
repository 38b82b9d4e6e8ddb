"""The board's web app.

=====================================  ==========================================
route                                  what it does
=====================================  ==========================================
``POST /submissions``                  upload a submission document (JSON body;
                                       ``Authorization: Bearer TOKEN``); 202 with
                                       its id; verified later by the worker
``GET /submissions/{id}/status``       ``pending`` / ``verified`` / ``rejected``
                                       and the problems found
``GET /``                              the board (verified submissions)
``GET /submissions/{id}``              one submission with replayed transcripts
=====================================  ==========================================

Uploads are refused before any work: 401 without a token, 403 for a wrong
one, 429 past the per-token rate limit, 413 over the size limit (checked
while reading, whatever the ``Content-Length`` says), 400 for a body that is
not JSON, 422 for one that breaks the schema. Verification runs on a worker
thread, one submission at a time, so uploads and page views never wait for
it; submissions still pending when the app stops are verified after restart.
"""

from __future__ import annotations

import collections
import hmac
import json
import logging
import queue
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse

from agentenvs.agents.bundle import BundleError, validate
from leaderboard.pages import CONTENT_SECURITY_POLICY, board_page, submission_page
from leaderboard.store import Store
from leaderboard.verify import verify_submission

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """Upload limits: bytes per body; uploads per token per window."""

    max_bytes: int = 32 * 1024 * 1024
    uploads_per_window: int = 10
    window_s: float = 3600.0


class RateLimiter:
    """At most ``limit`` events per key in any sliding window of ``window_s`` seconds."""

    def __init__(self, limit: int, window_s: float) -> None:
        self.limit, self.window_s = limit, window_s
        self.events: dict[str, collections.deque[float]] = collections.defaultdict(collections.deque)
        self.lock = threading.Lock()

    def allow(self, key: str) -> bool:
        now = time.monotonic()
        with self.lock:
            events = self.events[key]
            while events and now - events[0] > self.window_s:
                events.popleft()
            if len(events) >= self.limit:
                return False
            events.append(now)
            return True


class VerificationWorker:
    """Verifies queued submissions one at a time on a daemon thread (replay on ``backend``)."""

    def __init__(self, store: Store, backend: str = "inprocess", num_workers: int | None = None) -> None:
        self.store = store
        self.backend, self.num_workers = backend, num_workers
        self.queue: queue.Queue[int] = queue.Queue()
        self.failures = 0
        self.thread = threading.Thread(target=self._run, name="leaderboard-verify", daemon=True)

    def start(self) -> None:
        for submission_id in self.store.pending_ids():
            self.queue.put(submission_id)
        self.thread.start()

    def submit(self, submission_id: int) -> None:
        self.queue.put(submission_id)

    def wait_idle(self) -> None:
        self.queue.join()

    def _run(self) -> None:
        while True:
            submission_id = self.queue.get()
            try:
                document = self.store.document(submission_id)
                verdict = verify_submission(document, backend=self.backend, num_workers=self.num_workers)
                self.store.finish(submission_id, verdict)
            except Exception:  # counted and logged; the submission stays pending for a restart
                self.failures += 1
                log.exception("verifying submission %s failed", submission_id)
            finally:
                self.queue.task_done()


def _html(text: str) -> HTMLResponse:
    return HTMLResponse(
        text,
        headers={"Content-Security-Policy": CONTENT_SECURITY_POLICY, "X-Content-Type-Options": "nosniff"},
    )


def create_app(
    store: Store,
    tokens: Iterable[str],
    limits: Limits = Limits(),
    *,
    verify_backend: str = "inprocess",
    verify_workers: int | None = None,
) -> FastAPI:
    """The app over ``store``; ``tokens`` are the upload tokens accepted.

    ``verify_backend`` (``inprocess``, ``subprocess``, ``ray``) and
    ``verify_workers`` say where replays run: worker processes keep large
    submissions from holding one core for long.
    """
    accepted = [token for token in tokens if token]
    if not accepted:
        raise ValueError("the board needs at least one upload token")
    limiter = RateLimiter(limits.uploads_per_window, limits.window_s)
    worker = VerificationWorker(store, verify_backend, verify_workers)
    app = FastAPI(title="agentenvs leaderboard", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store, app.state.worker = store, worker
    worker.start()

    def authenticate(request: Request) -> str:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise HTTPException(401, "an upload token is required (Authorization: Bearer TOKEN)")
        for known in accepted:
            if hmac.compare_digest(token.encode(), known.encode()):
                return known
        raise HTTPException(403, "unknown upload token")

    async def bounded_body(request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_bytes:
            raise HTTPException(413, f"uploads are limited to {limits.max_bytes} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limits.max_bytes:
                raise HTTPException(413, f"uploads are limited to {limits.max_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    @app.post("/submissions", status_code=202)
    async def submit(request: Request) -> JSONResponse:
        token = authenticate(request)
        if not limiter.allow(token):
            raise HTTPException(429, "too many uploads; try again later")
        body = await bounded_body(request)
        try:
            document = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise HTTPException(400, f"the body is not JSON: {exc}") from None
        try:
            validate("submission", document)
        except BundleError as exc:
            raise HTTPException(422, str(exc)) from None
        submitter = f"token-{accepted.index(token)}"
        submission_id = store.add_pending(document, submitter)
        worker.submit(submission_id)
        return JSONResponse({"id": submission_id, "status": "pending"}, status_code=202)

    @app.get("/submissions/{submission_id}/status")
    def status(submission_id: int) -> JSONResponse:
        row = store.submission(submission_id)
        if row is None:
            raise HTTPException(404, "no such submission")
        return JSONResponse({"id": submission_id, "status": row["status"], "problems": row["problems"]})

    @app.get("/", response_class=HTMLResponse)
    def board() -> HTMLResponse:
        return _html(board_page(store.board(), lambda submission_id: f"submissions/{submission_id}"))

    @app.get("/submissions/{submission_id}", response_class=HTMLResponse)
    def submission(submission_id: int) -> HTMLResponse:
        row = store.submission(submission_id)
        if row is None:
            raise HTTPException(404, "no such submission")
        return _html(submission_page(row, store.episodes(submission_id), board_link="../"))

    return app

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
``GET /submit``                        how to submit: the three commands
=====================================  ==========================================

Uploads are refused before any work: 401 without a token, 403 for a wrong
one, 429 once a client has failed to authenticate ``failed_auths_per_window``
times (checked before the token, so guessing is throttled per client
address) or a token has used its quota, 413 over the size limit (checked
while reading, whatever the ``Content-Length`` says), 400 for a body that is
not JSON (``NaN``, numbers out of a double's range and nesting past
Python's recursion limit included), 422 for one that breaks the schema or
claims a ``created`` time more than ``CLOCK_SKEW_S`` (an hour) ahead of the
board's clock. Only stored uploads use up a token's quota: refused bodies do
not. Ids outside ``1 … 2**53 - 1`` answer 422.

Verification runs on a worker thread, one submission at a time, so uploads
and page views never wait for it; submissions still pending when the app
stops are verified after restart. A verification that raises ends the
submission rejected with the error as its reason (counted in
``worker.failures`` and logged), so none stays pending.
"""

from __future__ import annotations

import collections
import hmac
import logging
import queue
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from fastapi import FastAPI, HTTPException, Path, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from agentenvs.eval.bundle import MAX_INTEGER, BundleError, parse_json, validate
from leaderboard.pages import CONTENT_SECURITY_POLICY, board_page, submission_page, submit_page
from leaderboard.store import Store, utc_now
from leaderboard.verify import verify_submission

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """Upload limits: bytes per body; stored uploads per token and failed authentications per client, per
    window."""

    max_bytes: int = 32 * 1024 * 1024
    uploads_per_window: int = 10
    failed_auths_per_window: int = 20
    window_s: float = 3600.0


class RateLimiter:
    """At most ``limit`` events per key in any sliding window of ``window_s`` seconds."""

    def __init__(self, limit: int, window_s: float) -> None:
        self.limit, self.window_s = limit, window_s
        self.events: dict[str, collections.deque[float]] = {}
        self.lock = threading.Lock()

    def _recent(self, key: str, now: float) -> int:
        """Events of ``key`` inside the window; a key with none is forgotten (memory stays bounded by
        activity)."""
        events = self.events.get(key)
        while events and now - events[0] > self.window_s:
            events.popleft()
        if events is not None and not events:
            del self.events[key]
        return len(events or ())

    def exhausted(self, key: str) -> bool:
        """Whether ``key`` has used up the window (records nothing)."""
        with self.lock:
            return self._recent(key, time.monotonic()) >= self.limit

    def allow(self, key: str) -> bool:
        """Record one event for ``key`` unless that would pass the limit; whether it was recorded."""
        now = time.monotonic()
        with self.lock:
            if self._recent(key, now) >= self.limit:
                return False
            self.events.setdefault(key, collections.deque()).append(now)
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
                self._verify(submission_id)
            except Exception:  # the store itself failed: counted and logged, the thread goes on
                self.failures += 1
                log.exception("recording the verdict of submission %s failed", submission_id)
            finally:
                self.queue.task_done()

    def _verify(self, submission_id: int) -> None:
        try:
            document = self.store.document(submission_id)
            verdict = verify_submission(document, backend=self.backend, num_workers=self.num_workers)
            self.store.finish(submission_id, verdict)
        except Exception as exc:  # counted, logged, and the submission's reason: it never stays pending
            self.failures += 1
            log.exception("verifying submission %s failed", submission_id)
            self.store.reject(submission_id, f"verification failed on the board: {type(exc).__name__}: {exc}")


# how far a submitter's clock may run ahead of the board's before ``created`` counts as the future
CLOCK_SKEW_S = 3600.0
SubmissionId = Path(ge=1, le=MAX_INTEGER, description="a submission id")


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
    uploads = RateLimiter(limits.uploads_per_window, limits.window_s)
    failed_auths = RateLimiter(limits.failed_auths_per_window, limits.window_s)
    worker = VerificationWorker(store, verify_backend, verify_workers)
    app = FastAPI(title="agentenvs leaderboard", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store, app.state.worker = store, worker
    worker.start()

    def authenticate(request: Request) -> str:
        client = request.client.host if request.client else "unknown"
        if failed_auths.exhausted(client):
            raise HTTPException(429, "too many failed authentications from this address; try again later")
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            failed_auths.allow(client)
            raise HTTPException(401, "an upload token is required (Authorization: Bearer TOKEN)")
        for known in accepted:
            if hmac.compare_digest(token.encode(), known.encode()):
                return known
        failed_auths.allow(client)
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
        if uploads.exhausted(token):
            raise HTTPException(429, "too many uploads; try again later")
        body = await bounded_body(request)
        try:
            document = parse_json(body)
        except BundleError as exc:
            raise HTTPException(400, f"the body is {exc}") from None
        try:
            validate("submission", document)
        except BundleError as exc:
            raise HTTPException(422, str(exc)) from None
        latest = utc_now(ahead_s=CLOCK_SKEW_S)
        if document["metadata"]["created"] > latest:
            raise HTTPException(
                422,
                f"metadata.created {document['metadata']['created']} is later than now ({latest}, with skew)",
            )
        if not uploads.allow(token):
            raise HTTPException(429, "too many uploads; try again later")
        submitter = f"token-{accepted.index(token)}"
        submission_id = store.add_pending(document, submitter)
        worker.submit(submission_id)
        return JSONResponse({"id": submission_id, "status": "pending"}, status_code=202)

    @app.get("/submissions/{submission_id}/status")
    def status(submission_id: int = SubmissionId) -> JSONResponse:
        row = store.submission(submission_id)
        if row is None:
            raise HTTPException(404, "no such submission")
        return JSONResponse({"id": submission_id, "status": row["status"], "problems": row["problems"]})

    @app.get("/", response_class=HTMLResponse)
    def board() -> HTMLResponse:
        return _html(
            board_page(store.board(), lambda submission_id: f"submissions/{submission_id}", "submit")
        )

    @app.get("/favicon.ico")
    def no_icon() -> Response:  # browsers ask for one; a 404 would be a console error on every page
        return Response(status_code=204)

    @app.get("/submit", response_class=HTMLResponse)
    def how_to_submit() -> HTMLResponse:
        return _html(submit_page(board_link="./"))

    @app.get("/submissions/{submission_id}", response_class=HTMLResponse)
    def submission(submission_id: int = SubmissionId) -> HTMLResponse:
        row = store.submission(submission_id)
        if row is None:
            raise HTTPException(404, "no such submission")
        return _html(submission_page(row, store.episodes(submission_id), board_link="../"))

    return app

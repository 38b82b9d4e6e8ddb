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
address: :func:`client_address`) or a token has used its quota, 413 over the size limit (checked
while reading, whatever the ``Content-Length`` says), 400 for a body that is
not JSON (``NaN``, numbers out of a double's range and nesting past
Python's recursion limit included), 422 for one that breaks the schema or
claims a ``created`` time more than ``CLOCK_SKEW_S`` (an hour) ahead of the
board's clock, or 422 for a model name that imitates one on the board (the
same skeleton, :func:`leaderboard.lookalikes.skeleton`, but another name:
the reason names the imitated one). Only stored uploads use up a token's
quota: refused bodies do not. Ids outside ``1 … 2**53 - 1`` answer 422.

Behind a reverse proxy every upload comes from the proxy's address, so
``Limits.trusted_proxies`` (``leaderboard serve --trusted-proxy ADDRESS``)
names the proxies whose ``X-Forwarded-For`` is believed: the client is the
right-most forwarded address that is not itself a trusted proxy. It is empty
by default, and a forwarded header from any other peer is ignored (a client
could write any address there).

Verification runs on a worker thread, one submission at a time, so uploads
and page views never wait for it; submissions still pending when the app
stops are verified after restart. A verification that raises ends the
submission rejected with the error as its reason (counted in
``worker.failures`` and logged), so none stays pending.
"""

from __future__ import annotations

import collections
import hmac
import ipaddress
import logging
import queue
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fastapi import FastAPI, HTTPException, Path, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from agentenvs.eval.bundle import MAX_INTEGER, BundleError, parse_json, validate
from leaderboard.lookalikes import imitated
from leaderboard.pages import CONTENT_SECURITY_POLICY, board_page, submission_page, submit_page
from leaderboard.store import Store, utc_now
from leaderboard.verify import verify_submission

log = logging.getLogger(__name__)


IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Limits:
    """Upload limits: bytes per body; stored uploads per token and failed authentications per client, per
    window.

    ``trusted_proxies``: addresses or networks (``127.0.0.1``, ``10.0.0.0/8``)
    of the reverse proxies whose ``X-Forwarded-For`` names the client
    (:func:`client_address`); none by default. ``ValueError`` for one that is
    no address.
    """

    max_bytes: int = 32 * 1024 * 1024
    uploads_per_window: int = 10
    failed_auths_per_window: int = 20
    window_s: float = 3600.0
    trusted_proxies: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.trusted_proxies, str):  # one address given bare, not a one-letter-string list
            object.__setattr__(self, "trusted_proxies", (self.trusted_proxies,))
        object.__setattr__(self, "trusted_proxies", tuple(self.trusted_proxies))
        self.proxy_networks()  # refuses a bad address when the limits are made, not on the first upload

    def proxy_networks(self) -> tuple[IPNetwork, ...]:
        """``trusted_proxies`` as networks."""
        networks = []
        for proxy in self.trusted_proxies:
            try:
                networks.append(ipaddress.ip_network(proxy.strip(), strict=False))
            except ValueError:
                raise ValueError(f"trusted proxy {proxy!r} is not an IP address or network") from None
        return tuple(networks)


def _ip(text: str) -> IPAddress | None:
    """``text`` as an address (an IPv4-mapped IPv6 address as its IPv4 one), or None."""
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def client_address(peer: str | None, forwarded: Sequence[str], proxies: Sequence[IPNetwork]) -> str:
    """The address a request is counted under: ``peer`` (the connection's), unless ``peer`` is a trusted
    proxy in ``proxies``.

    From a trusted proxy, the ``X-Forwarded-For`` values ``forwarded`` (every
    header, joined in order) are read right to left, each hop appended by the
    proxy in front of it: the first address that is not itself a trusted
    proxy is the client. Hops left of it were written by the client and are
    never read. Where every hop is a trusted proxy, or the walk meets a hop
    that is no address (a proxy that writes ``unknown``), the request counts
    as the proxy's own.
    """
    if peer is None:
        return "unknown"
    address = _ip(peer)
    if address is None or not any(address in network for network in proxies):
        return peer
    for hop in reversed([hop for value in forwarded for hop in value.split(",")]):
        forwarded_address = _ip(hop)
        if forwarded_address is None:
            return peer
        if not any(forwarded_address in network for network in proxies):
            return str(forwarded_address)
    return peer


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
    proxies = limits.proxy_networks()
    worker = VerificationWorker(store, verify_backend, verify_workers)
    app = FastAPI(title="agentenvs leaderboard", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store, app.state.worker = store, worker
    worker.start()

    def authenticate(request: Request) -> str:
        client = client_address(
            request.client.host if request.client else None,
            request.headers.getlist("x-forwarded-for"),
            proxies,
        )
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
        model = document["metadata"]["model"]
        original = imitated(model, store.model_names())
        if original is not None:
            raise HTTPException(
                422,
                f"metadata.model {model!r} looks like {original!r}, a name on the board (the same Unicode "
                "confusables skeleton); submit under that very name or one that does not imitate it",
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

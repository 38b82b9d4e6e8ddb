"""The retrieval server: Search-R1's ``POST /retrieve`` over any retriever, micro-batched and bounded.

Request (Search-R1's, plus verl-agent's single ``"query"`` form)::

    {"queries": ["who wrote hamlet", ...], "topk": 3, "return_scores": true}

Response: ``{"result": [[hit, ...], ...]}``, one list a query, best first;
a hit is ``{"document": row, "score": float}`` with ``return_scores`` and
the bare ``row`` without. The row is what Search-R1 returns for the same
index kind: for dense indexes the corpus row itself (``{"id", "contents"}``
and any other field the corpus file's row holds), for BM25
``{"title", "text", "contents"}``. ``topk`` null or absent means
the server default (3). A request may add ``"with_rows": true`` to get the
corpus row and passage id of each hit as ``"index"`` and ``"id"`` (our client does).

Concurrent requests queue for one retrieval thread, which takes everything
queued (up to ``max_batch_queries``) as one batch: under load the encoder
sees large batches, at rest a request waits for nobody. The queue is
bounded: past ``max_pending_queries`` a request gets ``503`` with
``Retry-After`` at once. Bad input gets a 4xx with a one-line ``detail``
and touches nothing else. ``GET /health`` answers outside the queue.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from retrieval_index.types import RetrievedPassage, Retriever

SEARCH_R1_DEFAULT_TOPK = 3
log = logging.getLogger("retrieval_index.server")


@dataclass(frozen=True)
class ServerLimits:
    default_topk: int = SEARCH_R1_DEFAULT_TOPK
    max_topk: int = 1000
    max_queries: int = 4096  # per request (Search-R1's own client sends batches of 512)
    max_query_chars: int = 8192
    max_body_bytes: int = 16 << 20
    max_pending_queries: int = 8192  # queued and running, all requests together
    max_batch_queries: int = 512
    retry_after_s: int = 1


class BadRequest(ValueError):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class RetrieveRequest:
    queries: list[str]
    topk: int
    return_scores: bool
    with_rows: bool


def parse_request(body: bytes, limits: ServerLimits) -> RetrieveRequest:
    """Validate a ``/retrieve`` body; :class:`BadRequest` carries the status and a one-line reason."""
    if len(body) > limits.max_body_bytes:
        raise BadRequest(413, f"body of {len(body)} bytes is over the limit of {limits.max_body_bytes}")
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(400, f"malformed JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise BadRequest(422, f"the body must be a JSON object, not {type(payload).__name__}")
    if "queries" in payload:
        queries = payload["queries"]
        if not isinstance(queries, list):
            raise BadRequest(422, f"queries must be a list of strings, not {type(queries).__name__}")
    elif "query" in payload:
        queries = [payload["query"]]
    else:
        raise BadRequest(422, 'missing "queries" (a list of strings)')
    if not queries:
        raise BadRequest(422, "queries is empty")
    if len(queries) > limits.max_queries:
        raise BadRequest(
            413, f"{len(queries)} queries in one request, over the limit of {limits.max_queries}"
        )
    for position, query in enumerate(queries):
        if not isinstance(query, str):
            raise BadRequest(422, f"queries[{position}] must be a string, not {type(query).__name__}")
        if not query.strip():
            raise BadRequest(422, f"queries[{position}] is empty")
        if len(query) > limits.max_query_chars:
            raise BadRequest(
                413,
                f"queries[{position}] has {len(query)} characters, over the limit of "
                f"{limits.max_query_chars}",
            )
    topk = payload.get("topk")
    if topk is None:
        topk = limits.default_topk
    elif isinstance(topk, bool) or not isinstance(topk, int):
        raise BadRequest(422, f"topk must be an integer, not {type(topk).__name__}")
    elif not 1 <= topk <= limits.max_topk:
        raise BadRequest(422, f"topk must be between 1 and {limits.max_topk}, got {topk}")
    flags = {}
    for name in ("return_scores", "with_rows"):
        value = payload.get(name, False)
        if not isinstance(value, bool):
            raise BadRequest(422, f"{name} must be true or false, not {type(value).__name__}")
        flags[name] = value
    return RetrieveRequest(queries=queries, topk=topk, **flags)


def document_row(hit: RetrievedPassage, kind: str) -> dict[str, Any]:
    """The document object Search-R1's server returns for a hit of this index kind: BM25 splits the
    stored contents into title and text; dense returns the corpus row itself, every field of it."""
    passage = hit.passage
    if kind == "bm25":
        return {"title": passage.title, "text": passage.text, "contents": passage.contents}
    return passage.row()


def format_result(
    hits: Sequence[Sequence[RetrievedPassage]], request: RetrieveRequest, kind: str
) -> dict[str, Any]:
    result = []
    for query_hits in hits:
        items = []
        for hit in query_hits:
            row = document_row(hit, kind)
            if not (request.return_scores or request.with_rows):
                items.append(row)
                continue
            item: dict[str, Any] = {"document": row}
            if request.return_scores:
                item["score"] = hit.score
            if request.with_rows:
                item["index"] = hit.index
                item["id"] = hit.passage.id
            items.append(item)
        result.append(items)
    return {"result": result}


class Overloaded(RuntimeError):
    pass


class RetrievalFailed(RuntimeError):
    """The retriever raised on a batch (counted in the stats and logged with its traceback)."""


@dataclass
class _Pending:
    queries: list[str]
    topk: int
    future: asyncio.Future[list[list[RetrievedPassage]]]


@dataclass
class ServerStats:
    requests: int = 0
    queries: int = 0
    batches: int = 0
    largest_batch: int = 0
    rejected_overload: int = 0
    rejected_bad_input: int = 0
    errors: int = 0
    last_error: str = ""
    pending_queries: int = 0


class Batcher:
    """One retrieval thread fed by a bounded queue; each turn takes everything queued as a batch."""

    def __init__(self, retriever: Retriever, limits: ServerLimits, stats: ServerStats) -> None:
        self.retriever = retriever
        self.limits = limits
        self.stats = stats
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="retrieve")
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self._executor.shutdown(wait=True)

    async def submit(self, queries: list[str], topk: int) -> list[list[RetrievedPassage]]:
        if self.stats.pending_queries + len(queries) > self.limits.max_pending_queries:
            self.stats.rejected_overload += 1
            raise Overloaded(f"{self.stats.pending_queries} queries already waiting")
        self.stats.pending_queries += len(queries)
        future: asyncio.Future[list[list[RetrievedPassage]]] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Pending(queries, topk, future))
        try:
            return await future
        finally:
            self.stats.pending_queries -= len(queries)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            size = len(batch[0].queries)
            while size < self.limits.max_batch_queries and not self._queue.empty():
                batch.append(self._queue.get_nowait())
                size += len(batch[-1].queries)
            self.stats.batches += 1
            self.stats.largest_batch = max(self.stats.largest_batch, size)
            try:
                results = await loop.run_in_executor(self._executor, self._retrieve, batch)
            except Exception as exc:  # the requests of this batch get a 500; the server keeps serving
                self.stats.errors += 1
                self.stats.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("retrieval failed for a batch of %d queries", size)
                failure = RetrievalFailed(self.stats.last_error)
                for pending in batch:
                    if not pending.future.done():
                        pending.future.set_exception(failure)
                continue
            for pending, hits in zip(batch, results, strict=False):
                if not pending.future.done():  # a client that went away leaves a cancelled future
                    pending.future.set_result(hits)

    def _retrieve(self, batch: list[_Pending]) -> list[list[list[RetrievedPassage]]]:
        """One retriever call per distinct topk in the batch, results handed back per request."""
        by_topk: dict[int, list[int]] = {}
        for position, pending in enumerate(batch):
            by_topk.setdefault(pending.topk, []).append(position)
        results: list[list[list[RetrievedPassage]]] = [[] for _ in batch]
        for topk, positions in by_topk.items():
            queries = [query for position in positions for query in batch[position].queries]
            hits = self.retriever.retrieve(queries, topk)
            start = 0
            for position in positions:
                count = len(batch[position].queries)
                results[position] = hits[start : start + count]
                start += count
        return results


def create_app(retriever: Retriever, *, kind: str, limits: ServerLimits | None = None) -> FastAPI:
    """The FastAPI app serving ``retriever`` (``kind`` picks Search-R1's row shape: "bm25" or "dense")."""
    limits = limits or ServerLimits()
    stats = ServerStats()
    batcher = Batcher(retriever, limits, stats)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):  # type: ignore[no-untyped-def]
        batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(title="retrieval_index", lifespan=lifespan)
    app.state.stats = stats

    def refuse(status: int, reason: str, headers: dict[str, str] | None = None) -> Response:
        return JSONResponse({"detail": reason.replace("\n", " ")}, status_code=status, headers=headers)

    @app.post("/retrieve")
    async def retrieve(request: Request) -> Response:
        stats.requests += 1
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
            stats.rejected_bad_input += 1
            return refuse(413, f"body of {declared} bytes is over the limit of {limits.max_body_bytes}")
        try:
            parsed = parse_request(await request.body(), limits)
        except BadRequest as exc:
            stats.rejected_bad_input += 1
            return refuse(exc.status, exc.reason)
        try:
            hits = await batcher.submit(parsed.queries, parsed.topk)
        except Overloaded as exc:
            return refuse(503, f"overloaded: {exc}; retry later", {"Retry-After": str(limits.retry_after_s)})
        except RetrievalFailed as exc:
            return refuse(500, f"retrieval failed: {exc}")
        stats.queries += len(parsed.queries)
        return Response(json.dumps(format_result(hits, parsed, kind)), media_type="application/json")

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "kind": kind, "retriever": repr(retriever), **stats.__dict__}

    return app


def app_from_environment() -> FastAPI:
    """App factory for ``uvicorn --factory`` (several workers): the index directory comes from the
    environment."""
    from retrieval_index.loading import open_retriever

    retriever, kind = open_retriever(os.environ["RETRIEVAL_INDEX_DIR"])
    limits = ServerLimits(**json.loads(os.environ.get("RETRIEVAL_INDEX_LIMITS", "{}")))
    return create_app(retriever, kind=kind, limits=limits)


class ServerThread:
    """Run an app with uvicorn on a background thread.

    A context manager for tests, benchmarks and notebooks::

        with ServerThread(create_app(retriever, kind="bm25")) as url:
            RemoteRetriever(url).retrieve(["query"], 3)
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        import socket
        import threading

        import uvicorn

        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # accepted sockets inherit it: without it every reply on a kept-alive connection waited ~40 ms
        # for the client's delayed ACK (Nagle's algorithm holding the body behind the headers)
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket.bind((host, port))
        self.url = f"http://{host}:{self._socket.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", backlog=4096, timeout_keep_alive=30)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    def __enter__(self) -> str:
        import time

        self._thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server at {self.url} did not start")
            time.sleep(0.01)
        return self.url

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=30)
        self._socket.close()

"""A client of the retrieval server (ours or Search-R1's) that is itself a :class:`Retriever`."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from retrieval_index.types import BM25_ROW_FIELDS, Passage, RetrievedPassage

log = logging.getLogger("retrieval_index.client")
RETRIABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# what a dropped, refused, timed-out or garbled connection raises; the request is worth another try
TRANSPORT_ERRORS = (OSError, http.client.HTTPException)
# what a kept-alive connection the server closed while idle raises on its next request
CLOSED_BY_SERVER = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


RETRIEVE_PATH = "/retrieve"


def server_root(url: str) -> str:
    """The server's root URL from either form users hold: the root, or Search-R1's ``…/retrieve``.

    ``http://HOST:8000``, ``http://HOST:8000/`` and Search-R1's configs'
    ``http://HOST:8000/retrieve`` (a trailing ``/`` allowed) all give
    ``http://HOST:8000``; any other path, a query or a fragment is refused
    with a ``ValueError`` saying why.
    """
    try:
        parts = urlsplit(url)
        port = parts.port  # parses the port: out of range or not a number raises
    except ValueError as exc:
        raise ValueError(f"{url!r} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an http(s) URL such as http://127.0.0.1:8000")
    if parts.query or parts.fragment or parts.path.rstrip("/") not in ("", RETRIEVE_PATH):
        raise ValueError(
            f"{url!r}: the retriever URL must be the server's root or its {RETRIEVE_PATH} "
            f"(http://HOST:PORT or http://HOST:PORT{RETRIEVE_PATH}), not the path {parts.path!r}"
            + (" with a query or fragment" if parts.query or parts.fragment else "")
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


class RemoteRetrieverError(RuntimeError):
    """The server refused the request (4xx) or kept failing after every retry."""


class RemoteRetriever:
    """``retrieve`` through ``POST {root}/retrieve``, with a timeout a request and retries.

    ``url`` is the server's root (``http://HOST:8000``) or Search-R1's
    ``http://HOST:8000/retrieve``; see :func:`server_root`.

    Connection errors, timeouts and 408/429/5xx answers are retried up to
    ``retries`` times with exponential backoff ``backoff * 2**attempt`` (or
    the server's ``Retry-After`` when longer); a 4xx is the caller's mistake
    and raises at once. ``retries_used`` counts the retries taken, for
    monitoring.

    Each thread keeps one kept-alive connection (the standard library's
    ``http.client``, Nagle's algorithm off): a query costs the server's work
    plus about half a millisecond, where a general-purpose HTTP client
    spends a few. A kept-alive connection the server has meanwhile closed
    is reopened at once, without counting as a retry. The object pickles as
    its settings.
    """

    def __init__(self, url: str, *, timeout: float = 30.0, retries: int = 5, backoff: float = 0.25) -> None:
        self.url = server_root(url)
        parts = urlsplit(self.url)
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._path = RETRIEVE_PATH
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.retries_used = 0
        self._local = threading.local()
        self._open: list[http.client.HTTPConnection] = []
        self._open_lock = threading.Lock()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        return (
            RemoteRetriever,
            (self.url,),
            {"timeout": self.timeout, "retries": self.retries, "backoff": self.backoff},
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection, and whether it has carried a request before."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            return connection, True
        kind = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        connection = kind(self._host, self._port, timeout=self.timeout)
        connection.connect()
        # the request goes out as headers then body: with Nagle's algorithm on, the body waits
        # for the server's delayed ACK of the headers (~40 ms)
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._local.connection = connection
        with self._open_lock:
            self._open.append(connection)
        return connection, False

    def _drop_connection(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
            with self._open_lock:
                self._open.remove(connection)

    def _exchange(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """One request on this thread's connection: status, headers (lower-cased names), body."""
        while True:
            connection, reused = self._connection()
            try:
                connection.request("POST", self._path, body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                payload = response.read()
            except TRANSPORT_ERRORS as exc:
                self._drop_connection()
                if reused and isinstance(exc, CLOSED_BY_SERVER):
                    continue  # the server closed it while idle: a fresh connection, same attempt
                raise
            headers = {name.lower(): value for name, value in response.getheaders()}
            if response.will_close:
                self._drop_connection()
            return response.status, headers, payload

    def post(self, payload: dict[str, Any]) -> dict[str, Any]:
        """POST ``payload`` to ``/retrieve`` with retries; the decoded JSON answer."""
        body = json.dumps(payload).encode()
        failure = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self.retries_used += 1
            wait = self.backoff * 2**attempt
            try:
                status, headers, answer = self._exchange(body)
            except TRANSPORT_ERRORS as exc:
                failure = f"{type(exc).__name__}: {exc}"
            else:
                if status == 200:
                    return json.loads(answer)
                detail = _detail(answer)
                if status not in RETRIABLE_STATUS:
                    raise RemoteRetrieverError(f"{self.url} refused the request ({status}): {detail}")
                failure = f"{status}: {detail}"
                retry_after = headers.get("retry-after", "")
                if retry_after.isdigit():
                    wait = max(wait, float(retry_after))
            log.warning(
                "retrieval request failed (%s), attempt %d of %d", failure, attempt + 1, self.retries + 1
            )
            if attempt < self.retries:
                time.sleep(wait)
        raise RemoteRetrieverError(
            f"{self.url}: no answer after {self.retries + 1} attempts, last: {failure}"
        )

    def retrieve(self, queries: Sequence[str], topk: int) -> list[list[RetrievedPassage]]:
        if not queries:
            return []
        answer = self.post({"queries": list(queries), "topk": topk, "return_scores": True, "with_rows": True})
        return [[_hit(item) for item in items] for items in answer["result"]]

    def close(self) -> None:
        """Close every thread's connection (a later request opens a new one)."""
        with self._open_lock:
            for connection in self._open:
                connection.close()
            self._open.clear()
        self._local = threading.local()


def _hit(item: dict[str, Any]) -> RetrievedPassage:
    """A hit from an answer item: a dense corpus row keeps its other fields; Search-R1's BM25 row
    (title and text split from contents) carries none."""
    row = item["document"]
    if set(row) == BM25_ROW_FIELDS:
        passage = Passage.from_contents(str(item.get("id", "")), row["contents"])
    else:
        passage = replace(Passage.from_row(row), id=str(item.get("id", row.get("id", ""))))
    return RetrievedPassage(
        passage=passage,
        score=float(item["score"]),
        index=int(item.get("index", -1)),
    )


def _detail(body: bytes) -> str:
    try:
        answer = json.loads(body)
    except ValueError:  # not JSON (a proxy's error page): its first characters say enough
        return body[:200].decode(errors="replace")
    return str(answer.get("detail", answer)) if isinstance(answer, dict) else str(answer)

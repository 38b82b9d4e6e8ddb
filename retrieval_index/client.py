"""A client of the retrieval server (ours or Search-R1's) that is itself a :class:`Retriever`."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from retrieval_index.types import Passage, RetrievedPassage

log = logging.getLogger("retrieval_index.client")
RETRIABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class RemoteRetrieverError(RuntimeError):
    """The server refused the request (4xx) or kept failing after every retry."""


class RemoteRetriever:
    """``retrieve`` through ``POST {url}/retrieve``, with a timeout a request and retries.

    Connection errors, timeouts and 408/429/5xx answers are retried up to
    ``retries`` times with exponential backoff (or the server's
    ``Retry-After``); a 4xx is the caller's mistake and raises at once. The
    HTTP connection pool is made on first use, so the object pickles as its
    settings. ``retries_used`` counts the retries taken, for monitoring.
    """

    def __init__(self, url: str, *, timeout: float = 30.0, retries: int = 5, backoff: float = 0.25) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.retries_used = 0
        self._client: Any = None

    def __reduce__(self) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        return (
            RemoteRetriever,
            (self.url,),
            {"timeout": self.timeout, "retries": self.retries, "backoff": self.backoff},
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _http(self) -> Any:
        if self._client is None:
            import socket

            import httpx

            # httpx writes a request's headers and body in two sends: TCP_NODELAY keeps Nagle's
            # algorithm from holding the second until the first is acknowledged
            transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
            self._client = httpx.Client(timeout=self.timeout, transport=transport)
        return self._client

    def post(self, payload: dict[str, Any]) -> dict[str, Any]:
        """POST ``payload`` to ``/retrieve`` with retries; the decoded JSON answer."""
        import httpx

        failure = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self.retries_used += 1
            wait = self.backoff * 2**attempt
            try:
                response = self._http().post(f"{self.url}/retrieve", json=payload)
            except httpx.TransportError as exc:
                failure = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code == 200:
                    return response.json()
                detail = _detail(response)
                if response.status_code not in RETRIABLE_STATUS:
                    raise RemoteRetrieverError(
                        f"{self.url} refused the request ({response.status_code}): {detail}"
                    )
                failure = f"{response.status_code}: {detail}"
                retry_after = response.headers.get("retry-after", "")
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
        if self._client is not None:
            self._client.close()
            self._client = None


def _hit(item: dict[str, Any]) -> RetrievedPassage:
    row = item["document"]
    return RetrievedPassage(
        passage=Passage.from_contents(str(item.get("id", row.get("id", ""))), row["contents"]),
        score=float(item["score"]),
        index=int(item.get("index", -1)),
    )


def _detail(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:  # not JSON (a proxy's error page): its first characters say enough
        return response.text[:200]
    return str(body.get("detail", body)) if isinstance(body, dict) else str(body)

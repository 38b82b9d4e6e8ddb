"""A client for any OpenAI-compatible chat endpoint (vLLM, hosted APIs, local servers).

Shared by everything that asks a model for text: LLM judges, simulated
collaborators and model-backed agents. Standard library only, so the core
install stays light; one client is safe to share between threads (the eval
harness runs many episodes concurrently through one client).

Request: ``POST {base_url}/chat/completions`` with
``{"model", "messages", "temperature", ["max_tokens"], **extra_body}``.

Failures, never silent:

- connection errors, time-outs, HTTP 408/429 and 5xx are retried up to
  ``max_retries`` times with exponential backoff
  (``backoff_s · 2^attempt``, or the server's ``Retry-After`` when larger);
- other 4xx answers and malformed bodies are not retried (asking again will
  not help); a 400 saying the prompt exceeds the model's context raises
  :class:`ContextLengthError`, so callers can tell it from other refusals;
- when no attempt succeeds, :class:`ChatError` is raised with the last cause.
  ``stats`` counts requests, retries, cache hits and failures.

What the server tells about its model: :meth:`ChatClient.context_length`
reads ``max_model_len`` from ``GET {base_url}/models`` (vLLM and
:mod:`agentenvs.agents.openai_server` report it), and
:meth:`ChatClient.count_prompt_tokens` asks ``POST {server root}/tokenize``
(vLLM's endpoint, with the chat template applied); both give None where the
server has no such answer (hosted APIs).

With ``cache_size > 0`` identical requests (same model, messages and
parameters) are answered from an in-memory LRU cache; use it with
``temperature=0`` only, where a repeated request is meant to give one answer.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentenvs.core.keys import stable_digest

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# how vLLM ("maximum context length is 4096 tokens") and OpenAI ("context_length_exceeded")
# refuse a prompt too long for the model
CONTEXT_REFUSAL = re.compile(r"maximum context length|context_length_exceeded|exceeds? the context", re.I)


class ChatError(RuntimeError):
    """The endpoint gave no usable answer after every allowed attempt."""


class ContextLengthError(ChatError):
    """The prompt (with the reply's token budget) does not fit the model's context."""


@dataclass(frozen=True)
class ChatReply:
    """One completion: its text, why it stopped, token usage, how it was obtained."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    attempts: int
    cached: bool = False
    stop_reason: str | None = None  # the stop string that ended the reply, where the server names it (vLLM)


@dataclass
class ChatStats:
    requests: int = 0
    retries: int = 0
    cache_hits: int = 0
    failures: int = 0


class _RetryableError(Exception):
    def __init__(self, message: str, retry_after_s: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ChatClient:
    """Synchronous, thread-safe client of an OpenAI-compatible ``/chat/completions``.

    Args:
        base_url: the API root, e.g. ``http://localhost:8000/v1``.
        model: the served model's name.
        api_key: sent as ``Authorization: Bearer ...`` when given.
        temperature: sampling temperature (0 for judges and collaborators).
        max_tokens: completion limit; the server's default when None.
        timeout_s: per-attempt socket time-out.
        max_retries: attempts after the first for retryable failures.
        backoff_s: first backoff; doubles each retry.
        cache_size: entries of the identical-request cache (0 disables it).
        extra_body: further request fields (``stop``, ``seed``, ``top_p``, …).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        cache_size: int = 0,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if max_retries < 0 or timeout_s <= 0 or backoff_s < 0 or cache_size < 0:
            raise ValueError("max_retries, backoff_s and cache_size must be >= 0 and timeout_s > 0")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.cache_size = int(cache_size)
        self.extra_body = dict(extra_body or {})
        self.stats = ChatStats()
        self._cache: OrderedDict[str, ChatReply] = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        state["_cache"] = OrderedDict()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def request_body(self, messages: Sequence[Mapping[str, str]], **overrides: Any) -> dict[str, Any]:
        """The JSON body sent for ``messages`` (``overrides`` replace any field)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(self.extra_body)
        body.update(overrides)
        return body

    def complete(self, messages: Sequence[Mapping[str, str]], **overrides: Any) -> ChatReply:
        """The model's reply to ``messages``; raises :class:`ChatError` when none can be had."""
        body = self.request_body(messages, **overrides)
        key = stable_digest(body) if self.cache_size else ""
        if key:
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    self.stats.cache_hits += 1
                    return replace(hit, cached=True)
        reply = self._post_with_retries(body)
        if key:
            with self._lock:
                self._cache[key] = reply
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return reply

    def _post_with_retries(self, body: dict[str, Any]) -> ChatReply:
        payload = json.dumps(body).encode("utf-8")
        last_error = ""
        for attempt in range(self.max_retries + 1):
            with self._lock:
                self.stats.requests += 1
                if attempt:
                    self.stats.retries += 1
            try:
                return replace(self._post(payload), attempts=attempt + 1)
            except _RetryableError as exc:
                last_error = str(exc)
                if attempt < self.max_retries:
                    time.sleep(max(self.backoff_s * 2**attempt, exc.retry_after_s))
            except ChatError:
                with self._lock:
                    self.stats.failures += 1
                raise
        with self._lock:
            self.stats.failures += 1
        raise ChatError(f"{self.url}: no answer after {self.max_retries + 1} attempts; last: {last_error}")

    def _post(self, payload: bytes) -> ChatReply:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            if exc.code in RETRYABLE_STATUS:
                raise _RetryableError(f"HTTP {exc.code}: {detail}", _retry_after(exc.headers)) from exc
            refused = ContextLengthError if exc.code == 400 and CONTEXT_REFUSAL.search(detail) else ChatError
            raise refused(f"{self.url}: HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _RetryableError(f"{type(exc).__name__}: {reason}") from exc
        return parse_completion(raw, self.url)

    def context_length(self) -> int | None:
        """The served model's ``max_model_len`` from ``GET /models``; None where the server does not say.

        Raises :class:`ChatError` when the server cannot be reached or its answer is not a model list.
        """
        data = self._get_json(self.url.removesuffix("/chat/completions") + "/models")
        if data is None:
            return None
        try:
            cards = [card for card in data["data"] if card.get("id") == self.model]
        except (KeyError, TypeError, AttributeError) as exc:
            raise ChatError(f"{self.url}: /models is not a model list") from exc
        length = cards[0].get("max_model_len") if cards else None
        return length if isinstance(length, int) and not isinstance(length, bool) and length > 0 else None

    def count_prompt_tokens(self, messages: Sequence[Mapping[str, str]]) -> int | None:
        """Tokens of ``messages`` under the server's chat template (vLLM's ``POST /tokenize``).

        None where the server has no ``/tokenize`` (404, 405, 501); other failures raise :class:`ChatError`.
        """
        root = self.url.removesuffix("/chat/completions").removesuffix("/v1")
        body = {"model": self.model, "messages": [dict(m) for m in messages], "add_generation_prompt": True}
        data = self._get_json(root + "/tokenize", body)
        if data is None:
            return None
        count = data.get("count") if isinstance(data, dict) else None
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ChatError(f"{root}/tokenize answered no token count: {str(data)[:200]}")
        return count

    def _get_json(self, url: str, body: Mapping[str, Any] | None = None) -> Any:
        """GET (or POST ``body`` to) ``url``; None for 404, 405, 501 (no such endpoint).

        Other failures raise :class:`ChatError`.
        """
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        payload = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=payload, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 405, 501):
                return None
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise ChatError(f"{url}: HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError, ValueError) as exc:
            raise ChatError(f"{url}: {type(exc).__name__}: {getattr(exc, 'reason', exc)}") from exc


def _retry_after(headers: Any) -> float:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else 0.0
    except ValueError:
        return 0.0


def parse_completion(raw: bytes, source: str = "endpoint") -> ChatReply:
    """Read an OpenAI chat-completion JSON body; :class:`ChatError` when it is not one."""
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        text = choice["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ChatError(f"{source}: not a chat completion: {raw[:200]!r}") from exc
    usage = data.get("usage") or {}
    stop_reason = choice.get("stop_reason")
    return ChatReply(
        text=text if isinstance(text, str) else "",
        finish_reason=str(choice.get("finish_reason") or ""),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        attempts=1,
        stop_reason=stop_reason if isinstance(stop_reason, str) else None,
    )

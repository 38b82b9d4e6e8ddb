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
:mod:`agentenvs.agents.openai_server` report it), else the context that
llama.cpp's ``GET /props`` (``default_generation_settings.n_ctx``) or TGI's
``GET /info`` (``max_total_tokens``) reports; None where nothing says.
:meth:`ChatClient.count_prompt_tokens` counts a chat prompt's tokens with
the server's own tokenizer and chat template, through whichever of these the
server answers (tried in this order on the first call, then kept):

``vllm``
    ``POST {root}/tokenize`` with ``{"model", "messages",
    "add_generation_prompt": true}`` answers ``{"count", "max_model_len",
    "tokens"}`` (vllm-project/vllm, vllm/entrypoints/openai/serving_tokenization.py;
    :mod:`agentenvs.agents.openai_server` answers the same).
``llama.cpp``
    its ``POST /tokenize`` reads only ``content`` (text, with ``add_special``,
    ``parse_special``, ``with_pieces``) and answers ``{"tokens": [ids]}`` (or
    ``[{"id", "piece"}]`` with pieces); to a body without ``content`` it answers
    ``{"tokens": []}``. ``POST /apply-template`` with ``{"messages"}`` answers
    ``{"prompt"}``, the chat template applied. So the prompt is rendered there and
    its text tokenized with ``add_special: true`` (a BOS the server adds is
    counted: one token too many at worst, never too few) (ggml-org/llama.cpp,
    tools/server/README.md and the server's handle_tokenize).
``tgi``
    text-generation-inference's ``POST /tokenize`` takes ``{"inputs": text,
    "parameters"}`` and answers a list of ``{"id", "text", "start", "stop"}``,
    text only; ``POST /chat_tokenize`` (TGI >= 2.3) takes the chat request and
    answers ``{"tokenize_response": [that list], "templated_text"}``. Both live
    at the server root while its OpenAI routes are ``/v1/chat/completions`` and
    ``/v1/models`` (a list without the context; ``GET /info`` has it)
    (huggingface/text-generation-inference, docs/openapi.json and
    router/src/server.rs).

SGLang's ``POST /tokenize`` takes only text (``{"model", "prompt",
"add_special_tokens"}`` → ``{"tokens", "count", "max_model_len"}``) and SGLang
documents no endpoint that applies the chat template
(sgl-project/sglang, docs/basic_usage/native_api.ipynb and
python/sglang/srt/entrypoints/openai/serving_tokenize.py): it refuses the
``messages`` request and gets no count, as do Ollama and hosted APIs (no
``/tokenize``). ``{root}`` is ``base_url`` without its ``/v1``.

Which one answered is :attr:`ChatClient.token_counter` (None: none did). On
the first call every failure — any HTTP status after the retries, a body of
another shape, invalid JSON, a count that is not a positive integer — only
moves on to the next way, and when none answers the call returns None (the eval
harness then estimates, and records that it did). Once a way has answered, a
later failure raises :class:`ChatError` (after the retries, for the statuses
retried above): the same server answered counts before, so the prompt being
fitted is not silently counted another way; the episode is a crash that a rerun
plays again.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard, TypeVar

from agentenvs.core.keys import stable_digest

_T = TypeVar("_T")
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# the ways of counting a chat prompt's tokens on the server, in the order tried (module docstring)
TOKEN_COUNTERS = ("vllm", "llama.cpp", "tgi")
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
        # how this server counts prompt tokens (TOKEN_COUNTERS), found on the first count; None: none found
        self.token_counter: str | None = None
        self._counter_probed = False

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

        def attempt(number: int) -> ChatReply:
            raw = self._post(self.url, payload, context_refusal=True)
            return replace(parse_completion(raw, self.url), attempts=number + 1)

        return self._retrying(self.url, attempt, counted=True)

    def _retrying(self, url: str, attempt: Callable[[int], _T], *, counted: bool) -> _T:
        """``attempt(n)`` until it answers, at most ``max_retries + 1`` times: a :class:`_RetryableError`
        waits (exponential backoff, or the server's Retry-After) and tries again, a :class:`ChatError`
        ends at once. ``counted``: the tries go into :attr:`stats` (completions only)."""
        last_error = ""
        for number in range(self.max_retries + 1):
            if counted:
                with self._lock:
                    self.stats.requests += 1
                    if number:
                        self.stats.retries += 1
            try:
                return attempt(number)
            except _RetryableError as exc:
                last_error = str(exc)
                if number < self.max_retries:
                    time.sleep(max(self.backoff_s * 2**number, exc.retry_after_s))
            except ChatError:
                if counted:
                    with self._lock:
                        self.stats.failures += 1
                raise
        if counted:
            with self._lock:
                self.stats.failures += 1
        raise ChatError(f"{url}: no answer after {self.max_retries + 1} attempts; last: {last_error}")

    def _post(self, url: str, payload: bytes, *, context_refusal: bool = False) -> bytes:
        """One POST of ``payload``; the raw answer. A status of :data:`RETRYABLE_STATUS` or a connection
        failure raises :class:`_RetryableError`; any other status :class:`ChatError`
        (:class:`ContextLengthError` for a refused long prompt, where ``context_refusal``)."""
        request = urllib.request.Request(url, data=payload, headers=self._headers(), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            if exc.code in RETRYABLE_STATUS:
                raise _RetryableError(f"HTTP {exc.code}: {detail}", _retry_after(exc.headers)) from exc
            refused = exc.code == 400 and context_refusal and CONTEXT_REFUSAL.search(detail)
            raise (ContextLengthError if refused else ChatError)(f"{url}: HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _RetryableError(f"{type(exc).__name__}: {reason}") from exc

    @property
    def root(self) -> str:
        """``base_url`` without its ``/v1``: where vLLM, llama.cpp and TGI serve their tokenizers."""
        return self.url.removesuffix("/chat/completions").removesuffix("/v1")

    def context_length(self) -> int | None:
        """The served model's context: ``max_model_len`` from ``GET /models``, else ``/props`` or ``/info``.

        None where the server does not say. Raises :class:`ChatError` when ``/models`` cannot be reached.
        """
        data = self._get_json(self.url.removesuffix("/chat/completions") + "/models")
        cards = data.get("data") if isinstance(data, dict) else None  # another shape: no context from it
        cards = cards if isinstance(cards, list) else []
        mine = [card for card in cards if isinstance(card, dict) and card.get("id") == self.model]
        length = mine[0].get("max_model_len") if mine else None
        return length if _positive_int(length) else self._reported_context()

    def _reported_context(self) -> int | None:
        """llama.cpp's ``GET /props`` ``default_generation_settings.n_ctx`` or TGI's ``GET /info``
        ``max_total_tokens``; None when neither answers so."""
        for path, keys in (
            ("/props", ("default_generation_settings", "n_ctx")),
            ("/info", ("max_total_tokens",)),
        ):
            try:
                value = self._get_json(self.root + path)
            except ChatError:
                continue
            for key in keys:
                value = value.get(key) if isinstance(value, dict) else None
            if _positive_int(value):
                return value
        return None

    def count_prompt_tokens(self, messages: Sequence[Mapping[str, str]]) -> int | None:
        """Tokens of ``messages`` under the server's chat template (ways and failures: module docstring).

        None where the server has no way of counting them; :class:`ChatError` when the way that answered
        before fails now.
        """
        with self._lock:
            probed, counter = self._counter_probed, self.token_counter
        if counter is not None:
            return self._count_with(counter, messages)
        if probed:
            return None
        for name in TOKEN_COUNTERS:
            try:
                count = self._count_with(name, messages)
            except ChatError:
                continue
            with self._lock:
                self.token_counter, self._counter_probed = name, True
            return count
        with self._lock:
            self._counter_probed = True
        return None

    def _count_with(self, counter: str, messages: Sequence[Mapping[str, str]]) -> int:
        """The count one way (``TOKEN_COUNTERS``) gives; :class:`ChatError` when it gives none."""
        chat = [dict(m) for m in messages]
        data: Any
        if counter == "vllm":
            body = {"model": self.model, "messages": chat, "add_generation_prompt": True}
            data = self._post_json(self.root + "/tokenize", body)
            count = data.get("count") if isinstance(data, dict) else None
        elif counter == "llama.cpp":
            rendered = self._post_json(self.root + "/apply-template", {"model": self.model, "messages": chat})
            prompt = rendered.get("prompt") if isinstance(rendered, dict) else None
            if not isinstance(prompt, str) or not prompt:
                raise ChatError(f"{self.root}/apply-template answered no prompt: {str(rendered)[:200]}")
            body = {"model": self.model, "content": prompt, "add_special": True, "parse_special": True}
            data = self._post_json(self.root + "/tokenize", {**body, "with_pieces": False})
            count = _token_list_length(data.get("tokens") if isinstance(data, dict) else None)
        elif counter == "tgi":
            data = self._post_json(self.root + "/chat_tokenize", {"model": self.model, "messages": chat})
            count = _token_list_length(data.get("tokenize_response") if isinstance(data, dict) else None)
        else:
            raise ValueError(f"no token counter {counter!r}; known: {', '.join(TOKEN_COUNTERS)}")
        if not _positive_int(count):
            raise ChatError(f"{self.root}: the {counter} way answered no token count: {str(data)[:200]}")
        return count

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _post_json(self, url: str, body: Mapping[str, Any]) -> Any:
        """POST ``body`` to ``url``; its JSON answer, retried like a completion (``RETRYABLE_STATUS``,
        connection errors). Any other status, or a body that is not JSON, raises :class:`ChatError`."""
        payload = json.dumps(body).encode("utf-8")

        def attempt(_: int) -> Any:
            raw = self._post(url, payload)
            try:
                return json.loads(raw)
            except ValueError as exc:
                raise ChatError(f"{url}: not JSON: {raw[:200]!r}") from exc

        return self._retrying(url, attempt, counted=False)

    def _get_json(self, url: str) -> Any:
        """GET ``url``; None for 404, 405, 501 (no such endpoint). Other failures raise :class:`ChatError`."""
        request = urllib.request.Request(url, headers=self._headers())
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


def _positive_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _token_list_length(tokens: Any) -> int | None:
    """The length of a token list: ids (llama.cpp), ``{"id", "piece"}`` (llama.cpp with pieces) or
    ``{"id", "text", "start", "stop"}`` (TGI); None for anything else."""
    if not isinstance(tokens, list):
        return None
    for token in tokens:
        ident = token.get("id") if isinstance(token, dict) else token
        if not isinstance(ident, int) or isinstance(ident, bool):
            return None
    return len(tokens)


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

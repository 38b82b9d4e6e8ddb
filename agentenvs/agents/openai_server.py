"""A local OpenAI-compatible chat server over a transformers model (for tests and CPU users).

::

    python -m agentenvs.agents.openai_server --model PATH [--name NAME] [--port 8000] [--max-model-len N]

It answers the requests the official ``openai`` client sends, as vLLM's
OpenAI server does, so ``agentenvs eval --base-url http://127.0.0.1:8000/v1``
meets here what it meets there:

===============================  ====================================================
``GET /v1/models``               the one served model, with ``max_model_len``
``POST /tokenize``               vLLM's: ``{"messages"}`` (chat template applied) or
                                 ``{"prompt"}`` → ``{"count", "max_model_len", "tokens"}``
``POST /v1/chat/completions``    ``messages`` (content a string or a list of
                                 ``{"type": "text"}`` parts), ``max_tokens`` or
                                 ``max_completion_tokens`` (default: the rest of the
                                 context), ``temperature``, ``top_p``, ``n``,
                                 ``seed``, ``stop`` (a string or up to 4; left out
                                 of the text, named in ``stop_reason``), ``stream``
                                 (server-sent events, ``stream_options.include_usage``)
refused with 400                 a prompt that leaves no room for the reply in the
                                 context (vLLM's wording); any other field unless it
                                 holds its neutral value (``frequency_penalty: 0``,
                                 ``logprobs: false``, …); image or audio parts
===============================  ====================================================

A request without ``seed`` samples with fresh randomness, so replies at
temperature > 0 vary; with ``seed`` they repeat, choice ``i`` of ``n`` using
``seed + i``.

A stream carries the reply as the model generates it: the same
``TransformersChat.complete`` runs in a thread (so context check, seeds,
``max_tokens``, stop strings and the final text are those of the
non-streaming path) with a streamer handed to ``generate``, and each new
token's text is sent as a chunk while later tokens are still being
generated. A chunk holds only text that cannot change: the newest token's
text waits for the next token (a token may change how the text before it
decodes), and the last ``len(longest stop string) - 1`` characters wait, since
they may begin a stop string that is cut off; the rest of the final text
follows when generation ends, so the chunks join to exactly the
non-streaming reply. Choices of ``n`` stream one after the other; the usage
chunk (``stream_options.include_usage``) comes last. A prompt too long for
the context is refused with a 400 before the stream opens. Needs the
``serve`` extra (FastAPI, uvicorn) and the ``train`` extra (torch,
transformers).
"""

from __future__ import annotations

import argparse
import itertools
import json
import queue
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from agentenvs.agents.local import TransformersChat
from agentenvs.core.chat import ChatReply, ContextLengthError

# fields of the chat-completions API this server does not implement, with the value that means "off":
# a request may carry them only at that value
NEUTRAL_VALUES: dict[str, Any] = {
    "frequency_penalty": 0,
    "presence_penalty": 0,
    "logprobs": False,
    "top_logprobs": None,
    "logit_bias": None,
    "tools": None,
    "tool_choice": None,
    "response_format": None,
    "parallel_tool_calls": None,
    "functions": None,
    "function_call": None,
    "modalities": None,
    "audio": None,
    "prediction": None,
    "service_tier": None,
    "store": None,
    "metadata": None,
    "reasoning_effort": None,
    "web_search_options": None,
    "user": None,
}
MAX_CHOICES = 16
MAX_STOP_STRINGS = 4


def _encodable(text: str) -> str:
    """JSON may carry a lone surrogate (``"\\ud800"``), which no tokenizer encodes: refused as bad input."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"the text holds a lone surrogate at position {exc.start}") from None
    return text


Text = Annotated[str, AfterValidator(_encodable)]


class TextPart(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["text"]
    text: Text


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")  # name, tool_call_id, ...: not read
    role: Literal["system", "developer", "user", "assistant"]
    content: Text | list[TextPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return self.content or ""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    include_usage: bool = False


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # checked against NEUTRAL_VALUES below
    model: str | None = None
    messages: list[Message] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    n: int = Field(default=1, ge=1, le=MAX_CHOICES)
    seed: int | None = Field(default=None, ge=0, lt=2**63)
    stop: Text | list[Text] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None

    @model_validator(mode="after")
    def only_supported_fields(self) -> ChatRequest:
        for name, value in (self.model_extra or {}).items():
            if name not in NEUTRAL_VALUES:
                raise ValueError(f"unknown field {name!r}")
            if value not in (NEUTRAL_VALUES[name], None):
                raise ValueError(f"{name}={value!r} is not supported by this server")
        stops = self.stop_strings()
        if len(stops) > MAX_STOP_STRINGS or not all(stops):
            raise ValueError(f"stop takes up to {MAX_STOP_STRINGS} non-empty strings")
        if None not in (self.max_tokens, self.max_completion_tokens) and (
            self.max_tokens != self.max_completion_tokens
        ):
            raise ValueError("max_tokens and max_completion_tokens disagree")
        if self.stream_options is not None and not self.stream:
            raise ValueError("stream_options is only allowed with stream=true")
        return self

    def stop_strings(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else list(self.stop or [])

    def reply_tokens(self) -> int | None:
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens


class TokenizeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str | None = None
    messages: list[Message] | None = None
    prompt: Text | None = None
    add_generation_prompt: bool = True
    add_special_tokens: bool = False

    @model_validator(mode="after")
    def one_input(self) -> TokenizeRequest:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("give exactly one of messages and prompt")
        if self.messages is not None and not self.add_generation_prompt:
            raise ValueError("add_generation_prompt=false is not supported by this server")
        return self


def _error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    """An error body as the OpenAI API shapes it (the official client reads ``error.message``)."""
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)


def create_app(chat: TransformersChat, name: str) -> FastAPI:
    """The app answering chat completions with ``chat`` under the model name ``name``."""
    app = FastAPI(title="agentenvs local OpenAI-compatible server")
    counter = itertools.count()

    @app.exception_handler(RequestValidationError)
    def refuse(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'][1:]) or 'body'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        return _error(400, problems)

    def wrong_model(requested: str | None) -> JSONResponse | None:
        if requested in (None, name):
            return None
        message = f"The model `{requested}` does not exist; this server has `{name}`"
        return _error(404, message, "NotFoundError")

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        card = {"id": name, "object": "model", "created": 0, "owned_by": "agentenvs", "root": name}
        return {"object": "list", "data": [{**card, "max_model_len": chat.context_length()}]}

    @app.post("/tokenize", response_model=None)
    def tokenize(request: TokenizeRequest) -> dict[str, Any] | JSONResponse:
        refusal = wrong_model(request.model)
        if refusal is not None:
            return refusal
        if request.messages is not None:
            tokens = chat.prompt_ids([{"role": m.role, "content": m.text()} for m in request.messages])
        else:
            tokens = list(
                chat.tokenizer(request.prompt, add_special_tokens=request.add_special_tokens)["input_ids"]
            )
        return {"count": len(tokens), "max_model_len": chat.context_length(), "tokens": tokens}

    @app.post("/v1/chat/completions", response_model=None)
    def completions(request: ChatRequest) -> dict[str, Any] | JSONResponse | StreamingResponse:
        refusal = wrong_model(request.model)
        if refusal is not None:
            return refusal
        messages = [{"role": m.role, "content": m.text()} for m in request.messages]
        # no seed: fresh randomness per request, as a server does; a seed makes choice i repeat with seed + i
        base_seed = request.seed if request.seed is not None else secrets.randbits(62)

        def settings(index: int) -> dict[str, Any]:
            return {
                "max_tokens": request.reply_tokens(),
                "temperature": request.temperature,
                "top_p": request.top_p,
                "seed": base_seed + index,
                "stop": request.stop_strings(),
            }

        identity = {"id": f"chatcmpl-{next(counter)}", "created": int(time.time()), "model": name}
        if request.stream:
            first = _Generation(chat, messages, settings(0))
            try:
                first.wait_started()
            except ContextLengthError as exc:
                return _error(400, str(exc), "BadRequestError")
            include_usage = request.stream_options is not None and request.stream_options.include_usage
            generations = itertools.chain(
                [first], (_Generation(chat, messages, settings(i)) for i in range(1, request.n))
            )
            events = _stream(identity, generations, request.stop_strings(), include_usage)
            return StreamingResponse(events, media_type="text/event-stream")
        try:
            replies = [chat.complete(messages, **settings(index)) for index in range(request.n)]
        except ContextLengthError as exc:
            return _error(400, str(exc), "BadRequestError")
        usage = _usage(replies)
        choices = [
            {
                "index": index,
                "message": {"role": "assistant", "content": reply.text},
                "finish_reason": reply.finish_reason,
                "stop_reason": reply.stop_reason,
                "logprobs": None,
            }
            for index, reply in enumerate(replies)
        ]
        return {**identity, "object": "chat.completion", "choices": choices, "usage": usage}

    return app


def _usage(replies: Sequence[ChatReply]) -> dict[str, int]:
    completion = sum(reply.completion_tokens for reply in replies)
    prompt = replies[0].prompt_tokens
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class _Generation:
    """One reply of ``chat.complete`` generated in a thread, its tokens handed over as the model makes them.

    ``complete`` gets this object as its streamer (one ``generate`` at a time, under the chat's lock):
    ``put`` gets the prompt first, then each new token; the thread ends with the finished
    :class:`ChatReply` (or the error).
    """

    def __init__(
        self, chat: TransformersChat, messages: list[dict[str, str]], request: dict[str, Any]
    ) -> None:
        self.tokenizer = chat.tokenizer
        self.events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self.reply: ChatReply | None = None
        self._prompt_seen = False
        self._waiting: tuple[str, Any] | None = None
        self._thread = threading.Thread(target=self._run, args=(chat, messages, request), daemon=True)
        self._thread.start()

    def _run(self, chat: TransformersChat, messages: list[dict[str, str]], request: dict[str, Any]) -> None:
        try:
            self.events.put(("done", chat.complete(messages, **request, streamer=self)))
        except BaseException as exc:  # handed to the reader, which raises it
            self.events.put(("error", exc))

    def put(self, value: Any) -> None:  # the streamer interface transformers' generate calls
        if not self._prompt_seen:
            self._prompt_seen = True
            self.events.put(("started", None))
            return
        for token in value.reshape(-1).tolist():
            self.events.put(("token", token))

    def end(self) -> None:
        pass  # the thread says "done" once complete() has made the reply

    def wait_started(self) -> None:
        """Until generation has started; raises what ``complete`` raised before (a prompt too long)."""
        kind, value = self.events.get()
        if kind == "error":
            raise value
        if kind != "started":
            self._waiting = (kind, value)

    def pieces(self, stop: Sequence[str]) -> Iterator[str]:
        """The reply's text in pieces as it is generated (module docstring); they join to ``reply.text``."""
        held = max((len(s) for s in stop if s), default=1) - 1
        generated: list[int] = []
        shown = ""
        while True:
            kind, value = self._waiting or self.events.get()
            self._waiting = None
            if kind == "error":
                raise value
            if kind == "done":
                self.reply = value
                break
            if kind != "token":
                continue
            generated.append(value)
            settled = self.tokenizer.decode(generated[:-1], skip_special_tokens=True)
            settled = settled[: max(0, len(settled) - held)].rstrip("\ufffd")
            if len(settled) > len(shown) and settled.startswith(shown):
                yield settled[len(shown) :]
                shown = settled
        text = self.reply.text
        if len(text) > len(shown) and text.startswith(shown):
            yield text[len(shown) :]


def _stream(
    identity: dict[str, Any],
    generations: Iterator[_Generation],
    stop: Sequence[str],
    include_usage: bool,
) -> Iterator[str]:
    """Server-sent events: per choice a role chunk, its text as generated, a finish chunk; then usage."""

    def event(choices: list[dict[str, Any]], **extra: Any) -> str:
        chunk = {**identity, "object": "chat.completion.chunk", "choices": choices, **extra}
        return f"data: {json.dumps(chunk)}\n\n"

    replies = []
    for index, generation in enumerate(generations):
        yield event([{"index": index, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        for piece in generation.pieces(stop):
            yield event([{"index": index, "delta": {"content": piece}, "finish_reason": None}])
        reply = generation.reply
        assert reply is not None
        replies.append(reply)
        finish = {"index": index, "delta": {}, "finish_reason": reply.finish_reason}
        yield event([{**finish, "stop_reason": reply.stop_reason}])
    if include_usage:
        yield event([], usage=_usage(replies))
    yield "data: [DONE]\n\n"


def main(argv: Sequence[str] | None = None) -> int:
    import uvicorn

    parser = argparse.ArgumentParser(prog="python -m agentenvs.agents.openai_server")
    parser.add_argument("--model", required=True, help="a local transformers model folder")
    parser.add_argument("--name", help="the model name clients send (default: the folder)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--max-model-len", type=int, help="context in tokens (default: the model's max_position_embeddings)"
    )
    args = parser.parse_args(argv)
    chat = TransformersChat.from_pretrained(args.model, max_model_len=args.max_model_len)
    uvicorn.run(create_app(chat, args.name or args.model), host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

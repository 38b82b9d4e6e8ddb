"""A local OpenAI-compatible chat server over a transformers model (for tests and CPU users).

::

    python -m agentenvs.agents.openai_server --model PATH [--name NAME] [--port 8000]

serves ``POST /v1/chat/completions`` (``messages``, ``max_tokens``,
``temperature``; one choice, no streaming) and ``GET /v1/models``, so
``agentenvs eval --base-url http://127.0.0.1:8000/v1`` runs against it as it
would against ``vllm serve`` on a GPU. Needs the ``serve`` extra (FastAPI,
uvicorn) and the ``train`` extra (torch, transformers).
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from agentenvs.agents.local import TransformersChat


class Message(BaseModel):
    role: str
    content: str


class ChatRequest(BaseModel):
    model: str | None = None
    messages: list[Message] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0)


def create_app(chat: TransformersChat, name: str) -> FastAPI:
    """The app answering chat completions with ``chat`` under the model name ``name``."""
    app = FastAPI(title="agentenvs local OpenAI-compatible server")
    counter = itertools.count()

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "local"}]}

    @app.post("/v1/chat/completions")
    def completions(request: ChatRequest) -> dict[str, Any]:
        if request.model not in (None, name):
            raise HTTPException(404, f"model {request.model!r} is not served here; this server has {name!r}")
        reply = chat.complete(
            [message.model_dump() for message in request.messages],
            max_tokens=request.max_tokens,
            temperature=request.temperature,
        )
        return {
            "id": f"chatcmpl-{next(counter)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }

    return app


def main(argv: Sequence[str] | None = None) -> int:
    import uvicorn

    parser = argparse.ArgumentParser(prog="python -m agentenvs.agents.openai_server")
    parser.add_argument("--model", required=True, help="a local transformers model folder")
    parser.add_argument("--name", help="the model name clients send (default: the folder)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args(argv)
    chat = TransformersChat.from_pretrained(args.model, max_tokens=args.max_tokens)
    uvicorn.run(create_app(chat, args.name or args.model), host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Any agentenvs id as an OpenEnv environment server: ``agentenvs serve ID --port N``.

The server is openenv-core's own (``create_fastapi_app``: its HTTP routes and its
WebSocket session protocol on ``/ws``), fed by :class:`AgentenvsEnvironment`,
and fronted by :class:`WireGuard`, which refuses hostile messages before
OpenEnv's handlers read them. Every WebSocket connection is one session with an
env of its own, built by ``gym.make`` in that session's thread; sessions share
nothing but the read-only task data of their family. Any OpenEnv client plays
it, e.g. openenv-core's::

    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=7)  # result.observation["text"], ["instructions"], ["info"]
        result = env.step({"response": "<action>up</action>"})  # result.reward, result.done

=================================  =========================================================
OpenEnv                            agentenvs (``gym.make(env_id, **env_kwargs)``)
=================================  =========================================================
session (one ``/ws`` socket)       one env, made when the socket opens, closed when it closes
``reset`` data                     ``seed`` (an integer in [0, 2**63)) → ``reset(seed=...)``;
                                   ``task_id`` → ``reset(options={"task_id": ...})``;
                                   ``episode_id`` is kept in the state; other fields refused
``step`` data                      ``{"response": text}``: the model's whole response for
                                   one turn → ``env.step(text)``
observation ``text``               the observation's text (``prompting.observation_text``)
observation ``instructions``       ``env.unwrapped.instructions`` (at reset; "" after)
observation ``info``               the step's ``info`` without ``privileged``:
                                   ``reward_components``, ``state_key``, ``obs_key``,
                                   ``transitions``, ``admissible_actions``, ``success``,
                                   ``score``, ``turn``, ``max_turns``, ``task_id``
``reward``                         the turn's scalar reward (``None`` at reset)
``done``                           ``terminated or truncated``; the observation's
                                   ``terminated`` and ``truncated`` tell which
``state``                          ``env_id``, ``task_id``, ``turn`` (= ``step_count``),
                                   ``state_key``, ``episode_id``
privileged info                    never sent: it stays in the server's env
``GET /metadata``                  name: the id; description: the instructions
HTTP ``POST /reset``, ``/step``    OpenEnv's one-shot routes: each builds a fresh env, so
                                   ``/step`` has no episode and is refused; episodes go
                                   over ``/ws``, as OpenEnv's clients do
=================================  =========================================================

Refusals (the session stays open, the server keeps serving): a message that is
not JSON, not a JSON object, nested deeper than :data:`MAX_DEPTH`, larger than
``max_message_bytes``, holding a lone surrogate, ``NaN``, ``Infinity`` or ``1e999``, a
binary frame, a seed that is not an integer in range, an unknown task id, a step
outside an episode. Over ``/ws`` each is an OpenEnv error frame
(``{"type": "error", "data": {"message", "code"}}``); over HTTP a 400 (413 for
size) with ``{"detail": message}``. Frames over 16 MiB close the socket (code 1009).
"""

from __future__ import annotations

import functools
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import (
    Action,
    EnvironmentMetadata,
    Observation,
    State,
    WSErrorCode,
    WSErrorResponse,
)
from pydantic import Field

import agentenvs
from agentenvs.core.prompting import observation_text
from agentenvs.core.tasks import UnknownTaskError
from agentenvs.core.untrusted import loads_json, short_repr

MAX_SEED = 2**63  # seeds are integers in [0, MAX_SEED): what a 64-bit signed integer holds
MAX_DEPTH = 32  # JSON nesting a message may have (reset and step need 3)
DEFAULT_MAX_MESSAGE_BYTES = 2**20
WS_FRAME_LIMIT = 2**24  # uvicorn closes the socket (1009) above this; the guard answers below it
MAX_ID_CHARS = 255

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class RefusedRequest(ValueError):
    """A request the server will not act on; its message says why (sent back to the client)."""


class AgentenvsAction(Action):
    """One turn: the model's whole response."""

    response: str = Field(description="the model's whole response for this turn, tags and all")


class AgentenvsObservation(Observation):
    """What the policy sees after a reset or a turn (never the privileged info)."""

    text: str = Field(description="the observation's text")
    instructions: str = Field(default="", description="the env's instructions (at reset; empty after)")
    info: dict[str, Any] = Field(default_factory=dict, description="the step's info without 'privileged'")
    terminated: bool = Field(default=False, description="the episode ended in the task's own terms")
    truncated: bool = Field(default=False, description="the episode reached max_turns")


class AgentenvsState(State):
    """Where the session's episode stands."""

    env_id: str
    task_id: str | None = None
    turn: int = 0
    state_key: str = ""


def _plain(value: Any) -> Any:
    """``value`` as JSON data (numpy scalars and arrays to Python, tuples to lists)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    raise TypeError(f"an info value of type {type(value).__name__} has no JSON form")


def check_seed(seed: Any) -> int | None:
    """``seed`` if it is None or an integer in [0, 2**63); :class:`RefusedRequest` otherwise."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < MAX_SEED:
        raise RefusedRequest(f"seed must be an integer in [0, 2**63), got {short_repr(seed)}")
    return seed


def _check_identifier(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= MAX_ID_CHARS:
        raise RefusedRequest(
            f"{name} must be a string of 1 to {MAX_ID_CHARS} characters, got {short_repr(value)}"
        )
    return value


class AgentenvsEnvironment(Environment):
    """One session's episode of ``env_id`` behind OpenEnv's ``reset``/``step``/``state``."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.env_id = env_id
        # without gymnasium's passive checker: after a reset that raised (an unknown task id), its
        # first-step check unpacks the reset it never saw and raises TypeError (gymnasium 1.4)
        self.env = gym.make(env_id, disable_env_checker=True, **dict(env_kwargs or {}))
        self.instructions: str = self.env.unwrapped.instructions
        self._episode_id: str | None = None
        self._info: dict[str, Any] = {}
        self._in_episode = False
        self._episodes = 0

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        **unknown: Any,
    ) -> AgentenvsObservation:
        """``env.reset(seed=seed)``, or the task ``task_id``; the observation carries the instructions."""
        if unknown:
            raise RefusedRequest(
                f"unknown reset field(s) {sorted(map(short_repr, unknown))}; "
                "a reset takes seed, task_id, episode_id"
            )
        seed = check_seed(seed)
        task_id = _check_identifier("task_id", task_id)
        episode_id = _check_identifier("episode_id", episode_id)
        options = None if task_id is None else {"task_id": task_id}
        try:
            observation, info = self.env.reset(seed=seed, options=options)
        except UnknownTaskError as exc:
            raise RefusedRequest(str(exc)) from None
        self._episode_id = episode_id
        self._info = info
        self._in_episode = True
        self._episodes += 1
        return self._observation(observation, info, reward=None, instructions=self.instructions)

    def step(
        self, action: AgentenvsAction, timeout_s: float | None = None, **kwargs: Any
    ) -> AgentenvsObservation:
        """``env.step(action.response)``: one turn."""
        if not self._in_episode:
            raise RefusedRequest(
                "the episode is over: send reset to start another"
                if self._episodes
                else "no episode in progress: send reset first (HTTP /step has no session; use /ws)"
            )
        observation, reward, terminated, truncated, info = self.env.step(action.response)
        self._info = info
        self._in_episode = not (terminated or truncated)
        return self._observation(
            observation, info, reward=float(reward), terminated=bool(terminated), truncated=bool(truncated)
        )

    def _observation(
        self,
        observation: Any,
        info: Mapping[str, Any],
        *,
        reward: float | None,
        instructions: str = "",
        terminated: bool = False,
        truncated: bool = False,
    ) -> AgentenvsObservation:
        return AgentenvsObservation(
            text=observation_text(observation),
            instructions=instructions,
            info={key: _plain(value) for key, value in info.items() if key != "privileged"},
            terminated=terminated,
            truncated=truncated,
            done=terminated or truncated,
            reward=reward,
        )

    @property
    def state(self) -> AgentenvsState:
        return AgentenvsState(
            episode_id=self._episode_id,
            step_count=int(self._info.get("turn", 0)),
            env_id=self.env_id,
            task_id=self._info.get("task_id"),
            turn=int(self._info.get("turn", 0)),
            state_key=str(self._info.get("state_key", "")),
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=self.env_id, description=self.instructions, version=agentenvs.__version__
        )

    def close(self) -> None:
        self.env.close()


def _first_unsafe_part(message: Any) -> str | None:
    """Why a parsed message is refused (nesting, lone surrogates), or None; iterative at any depth."""
    pending: list[tuple[Any, int]] = [(message, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > MAX_DEPTH:
            return f"the message is nested deeper than {MAX_DEPTH} levels"
        if isinstance(value, dict):
            pending.extend((key, depth) for key in value)
            pending.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            pending.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                return f"a string holds a lone surrogate (U+{ord(value[exc.start]):04X}); send valid Unicode"
    return None


class WireGuard:
    """ASGI middleware that refuses hostile messages before OpenEnv's server reads them.

    Over ``/ws`` a refused frame is answered with an OpenEnv error frame and the
    session reads the next one; over HTTP a refused body gets a 400 (413 when
    too large). ``refusals`` counts them by code. A close of a socket the
    client has already closed is done (``closed_by_client`` counts them):
    OpenEnv's session ends with that close and lets the error out to the log.
    """

    def __init__(
        self, app: Callable[[Scope, Receive, Send], Awaitable[None]], max_message_bytes: int
    ) -> None:
        self.app = app
        self.max_message_bytes = max_message_bytes
        self.refusals: Counter[str] = Counter()
        self.closed_by_client = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self.app(scope, self._guarded_frames(receive, send), self._closing_send(send))
        elif scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            await self._guarded_body(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _refusal(self, text: str) -> tuple[WSErrorCode, str] | None:
        """Why the message ``text`` is refused, as (code, reason), or None."""
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self.max_message_bytes:
            return WSErrorCode.VALIDATION_ERROR, (
                f"a message of {size} bytes exceeds the limit of {self.max_message_bytes} bytes"
            )
        try:
            message = loads_json(text)
        except RecursionError:
            return WSErrorCode.VALIDATION_ERROR, f"the message is nested deeper than {MAX_DEPTH} levels"
        except (
            ValueError
        ) as exc:  # json.JSONDecodeError, NaN/Infinity/1e999, integers over Python's digit limit
            return WSErrorCode.INVALID_JSON, f"Invalid JSON: {exc}"
        if not isinstance(message, dict):
            return (
                WSErrorCode.VALIDATION_ERROR,
                f"a message must be a JSON object, got {type(message).__name__}",
            )
        unsafe = _first_unsafe_part(message)
        return None if unsafe is None else (WSErrorCode.VALIDATION_ERROR, unsafe)

    def _count(self, code: WSErrorCode, reason: str) -> None:
        self.refusals[code.value] += 1
        logger.info("refused a message (%s): %s", code.value, reason)

    def _guarded_frames(self, receive: Receive, send: Send) -> Receive:
        async def guarded_receive() -> dict[str, Any]:
            while True:
                event = await receive()
                if event["type"] != "websocket.receive":
                    return event
                if event.get("bytes") is not None:
                    refusal = (
                        WSErrorCode.VALIDATION_ERROR,
                        "binary frames are refused: send JSON text frames",
                    )
                else:
                    refusal = self._refusal(event.get("text") or "")
                if refusal is None:
                    return event
                self._count(*refusal)
                # OpenEnv's session loop is waiting in receive(), so this reply cannot interleave with its own
                frame = WSErrorResponse(data={"message": refusal[1], "code": refusal[0]})
                await send({"type": "websocket.send", "text": frame.model_dump_json()})

        return guarded_receive

    def _closing_send(self, send: Send) -> Send:
        async def closing_send(event: dict[str, Any]) -> None:
            try:
                await send(event)
            except OSError:  # uvicorn's ClientDisconnected: the client went first
                if event["type"] != "websocket.close":
                    raise
                self.closed_by_client += 1

        return closing_send

    async def _guarded_body(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        refusal: tuple[int, WSErrorCode, str] | None = None
        declared = dict(scope.get("headers", [])).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_message_bytes:
            refusal = 413, WSErrorCode.VALIDATION_ERROR, f"a body of {int(declared)} bytes exceeds the limit"
        while refusal is None:
            event = await receive()
            if event["type"] == "http.disconnect":
                return
            body += event.get("body", b"")
            if len(body) > self.max_message_bytes:
                refusal = 413, WSErrorCode.VALIDATION_ERROR, f"a body over {self.max_message_bytes} bytes"
            elif not event.get("more_body", False):
                break
        if refusal is None and body:
            try:
                problem = self._refusal(body.decode("utf-8"))
            except UnicodeDecodeError as exc:
                problem = WSErrorCode.INVALID_JSON, f"the body is not UTF-8 (byte {exc.start})"
            refusal = None if problem is None else (400, *problem)
        if refusal is not None:
            status, code, reason = refusal
            self._count(code, reason)
            payload = json.dumps({"detail": reason}).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
            return
        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _refused_request(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(status_code=400, content={"detail": str(exc)})


def build_app(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    max_sessions: int = 128,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> WireGuard:
    """The ASGI app serving ``env_id``: OpenEnv's FastAPI app behind :class:`WireGuard`.

    One env is built here first, so that a bad id or kwarg fails now rather than per session.
    """
    if not 1 <= max_message_bytes <= WS_FRAME_LIMIT:
        raise ValueError(f"max_message_bytes must be in [1, {WS_FRAME_LIMIT}], got {max_message_bytes}")
    AgentenvsEnvironment(env_id, env_kwargs).close()
    factory = functools.partial(AgentenvsEnvironment, env_id, dict(env_kwargs or {}))
    app: FastAPI = create_fastapi_app(
        factory, AgentenvsAction, AgentenvsObservation, max_concurrent_envs=max_sessions
    )
    app.add_exception_handler(RefusedRequest, _refused_request)
    return WireGuard(app, max_message_bytes)


def serve(
    env_id: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    env_kwargs: Mapping[str, Any] | None = None,
    max_sessions: int = 128,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> None:
    """Serve ``env_id`` over OpenEnv's protocol until interrupted."""
    import uvicorn

    app = build_app(env_id, env_kwargs, max_sessions=max_sessions, max_message_bytes=max_message_bytes)
    uvicorn.run(app, host=host, port=port, ws_max_size=WS_FRAME_LIMIT, log_level="warning")

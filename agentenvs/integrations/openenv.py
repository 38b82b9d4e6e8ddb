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
session (one ``/ws`` socket)       one env, made when the socket opens, closed when it closes or
                                   after ``session_idle_s`` (default 600) without a message
``reset`` data                     ``seed`` (an integer in [0, 2**63)) → ``reset(seed=...)``;
                                   ``task_id`` → ``reset(options={"task_id": ...})``;
                                   ``episode_id`` is kept in the state; other fields refused
``step`` data                      ``{"response": text}``: the model's whole response for
                                   one turn → ``env.step(text)`` (OpenEnv's ``metadata`` object
                                   is allowed and ignored)
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
``GET /health``                    ``{"status": "healthy"}`` (what OpenEnv's providers poll)
HTTP ``POST /reset``, ``/step``    OpenEnv's one-shot routes: each builds a fresh env, so
                                   ``/step`` has no episode and is refused; episodes go
                                   over ``/ws``, as OpenEnv's clients do
=================================  =========================================================

Nothing else is served (:data:`SERVED_ROUTES`): OpenEnv's client needs ``/ws``
alone, so OpenEnv's ``/mcp`` (whose ``openenv/session/create`` let anonymous
HTTP calls hold every session slot), ``/schema``, ``/state`` and the API docs
(``/docs``, ``/redoc``, ``/openapi.json``) answer 404.

Refusals (the session stays open, the server keeps serving): a message that is
not JSON, not a JSON object, nested deeper than :data:`MAX_DEPTH`, larger than
``max_message_bytes``, holding a lone surrogate, ``NaN``, ``Infinity`` or ``1e999``, a
binary frame, a key outside OpenEnv's message (``type``, ``data``), a type other than
reset, step, state or close, reset or step data with other fields or values of the
wrong kind, a seed that is not an integer in range, an unknown task id, a step
outside an episode. Over ``/ws`` each is an OpenEnv error frame
(``{"type": "error", "data": {"message", "code"}}``) of at most
:data:`MAX_ERROR_FRAME_BYTES` bytes that names the rule and never carries the input
back; over HTTP a 400 (413 for size) with ``{"detail": reason}``. Frames over 16 MiB
close the socket (code 1009). A client that goes away mid-session is one warning
in the log.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
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
from starlette.exceptions import HTTPException as StarletteHTTPException

import agentenvs
from agentenvs.core.prompting import observation_text
from agentenvs.core.tasks import UnknownTaskError
from agentenvs.core.untrusted import loads_json, short_repr

MAX_SEED = 2**63  # seeds are integers in [0, MAX_SEED): what a 64-bit signed integer holds
MAX_DEPTH = 32  # JSON nesting a message may have (reset and step need 3)
DEFAULT_MAX_MESSAGE_BYTES = 2**20
WS_FRAME_LIMIT = 2**24  # uvicorn closes the socket (1009) above this; the guard answers below it
MAX_ID_CHARS = 255
DEFAULT_SESSION_IDLE_S = 600.0  # a /ws session with no message for this long is closed, its env with it
LOST_CODES = (1005, 1006)  # a socket that ended without a close frame (uvicorn says 1005, the RFC 1006)
IDLE_CLOSE_CODE = 1000  # the WebSocket close code of an idle session (its reason says why)
MAX_REASON_BYTES = 240  # a refusal's reason is cut to this many bytes of UTF-8
MAX_ERROR_FRAME_BYTES = 400  # every error frame the server sends fits in this
ERROR_FRAME_START = '{"type":"error"'  # how OpenEnv's error frames (WSErrorResponse) begin
WS_MESSAGE_TYPES = ("reset", "step", "state", "close")
RESET_FIELDS = ("seed", "task_id", "episode_id")
STEP_FIELDS = ("response", "metadata")  # OpenEnv's Action carries a metadata object
# what is served: OpenEnv's client needs /ws alone; /health is what OpenEnv's providers poll
SERVED_ROUTES = frozenset({"/ws", "/health", "/metadata", "/reset", "/step"})

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
            raise RefusedRequest(_extra_keys("a reset", unknown, RESET_FIELDS) or "unknown reset fields")
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


def _extra_keys(where: str, value: Mapping[str, Any], allowed: tuple[str, ...]) -> str | None:
    """Why ``value`` is refused for keys outside ``allowed`` (naming the first and counting the rest)."""
    extra = [key for key in value if key not in allowed]
    if not extra:
        return None
    more = f" and {len(extra) - 1} more" if len(extra) > 1 else ""
    return f"{where} takes only {', '.join(allowed)}; got {short_repr(extra[0], 40)}{more}"


def _reset_problem(data: Any) -> str | None:
    """Why reset data (the ``/ws`` message's ``data``, the HTTP ``/reset`` body) is refused, or None."""
    if not isinstance(data, dict):
        return f"reset data must be an object {{seed, task_id, episode_id}}, got {type(data).__name__}"
    problem = _extra_keys("reset data", data, RESET_FIELDS)
    if problem is None:
        try:
            check_seed(data.get("seed"))
            _check_identifier("task_id", data.get("task_id"))
            _check_identifier("episode_id", data.get("episode_id"))
        except RefusedRequest as exc:
            problem = str(exc)
    return problem


def _action_problem(data: Any) -> str | None:
    """Why step data (an OpenEnv action: ``{"response": text}``) is refused, or None."""
    if not isinstance(data, dict):
        return f'step data must be an object {{"response": text}}, got {type(data).__name__}'
    problem = _extra_keys("step data", data, STEP_FIELDS)
    if problem is not None:
        return problem
    if not isinstance(data.get("response"), str):
        got = "none" if "response" not in data else type(data["response"]).__name__
        return f"step data needs a string response, got {got}: the model's whole response for the turn"
    if not isinstance(data.get("metadata", {}), dict):
        return "step metadata must be an object"
    return None


def _ws_message_problem(message: dict[str, Any]) -> tuple[WSErrorCode, str] | None:
    """Why a ``/ws`` message (a JSON object) breaks OpenEnv's protocol as served here, or None."""
    problem = _extra_keys("a message", message, ("type", "data"))
    if problem is not None:
        return WSErrorCode.VALIDATION_ERROR, problem
    kind = message.get("type")
    if not isinstance(kind, str) or kind not in WS_MESSAGE_TYPES:
        return WSErrorCode.UNKNOWN_TYPE, (
            f"unknown message type {short_repr(kind, 40)}: a message's type is {', '.join(WS_MESSAGE_TYPES)}"
        )
    if kind in ("state", "close"):
        problem = None if "data" not in message else f"a {kind} message holds only its type"
    elif kind == "reset":
        problem = _reset_problem(message["data"]) if "data" in message else None
    else:
        problem = _action_problem(message["data"]) if "data" in message else "a step message needs data"
    return None if problem is None else (WSErrorCode.VALIDATION_ERROR, problem)


def _http_body_problem(path: str, message: dict[str, Any]) -> str | None:
    """Why the JSON body of an HTTP ``POST path`` is refused, or None (other paths: OpenEnv answers)."""
    if path == "/reset":
        return _reset_problem(message)
    if path == "/step":
        problem = _extra_keys("a step request", message, ("action", "timeout_s", "request_id"))
        return problem if problem is not None else _action_problem(message.get("action"))
    return None


def _bounded(reason: str) -> str:
    """``reason`` cut to :data:`MAX_REASON_BYTES` bytes of UTF-8 (saying so when cut)."""
    raw = reason.encode("utf-8", "replace")
    if len(raw) <= MAX_REASON_BYTES:
        return reason
    return raw[: MAX_REASON_BYTES - 20].decode("utf-8", "ignore") + "... (cut)"


def error_frame(code: WSErrorCode | str, reason: str, **counts: int) -> str:
    """An OpenEnv error frame of at most :data:`MAX_ERROR_FRAME_BYTES` bytes: a reason, a code, counts."""
    data: dict[str, Any] = {"message": _bounded(reason), "code": WSErrorCode(code).value}
    data.update({key: value for key, value in counts.items() if type(value) is int and abs(value) < 2**53})
    frame = WSErrorResponse(data=data).model_dump_json()
    while len(frame.encode("utf-8")) > MAX_ERROR_FRAME_BYTES:  # JSON escapes can lengthen a reason
        data["message"] = data["message"][: len(data["message"]) // 2] + "... (cut)"
        frame = WSErrorResponse(data=data).model_dump_json()
    return frame


def _validation_summary(errors: Any) -> str:
    """pydantic's errors as 'where: what' for the first one, never with the input they hold."""
    if not isinstance(errors, list) or not errors or not isinstance(errors[0], dict):
        return "Invalid message"
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"Invalid message: {short_repr(where, 60)}: {first.get('msg', 'invalid')}{more}"


def _sanitised_error_frame(text: str) -> str:
    """An error frame from OpenEnv's handlers rebuilt without what it echoes (pydantic's inputs)."""
    try:
        data = json.loads(text)["data"]
        reason = data.get("message", "")
        if "errors" in data:
            reason = _validation_summary(data["errors"])
        counts = {key: data[key] for key in ("active_sessions", "max_sessions") if key in data}
        return error_frame(data.get("code", WSErrorCode.SESSION_ERROR), str(reason), **counts)
    except (ValueError, KeyError, TypeError, AttributeError):
        return error_frame(WSErrorCode.SESSION_ERROR, "the server could not answer this message")


class _Socket:
    """One ``/ws`` connection as :class:`WireGuard` sees it: what it refuses, when it idles, how it ends."""

    def __init__(self, guard: WireGuard, scope: Scope, receive: Receive, send: Send) -> None:
        self.guard = guard
        self.receive_event = receive
        self.send_event = send
        client = scope.get("client") or ("?", 0)
        self.peer = f"{client[0]}:{client[1]}"
        self.gone = False  # the client went away without closing: noted once, later sends dropped
        self.closed_by_server = False  # the guard closed the socket (idle): OpenEnv's own close is dropped

    def _went_away(self, how: str) -> None:
        if not self.gone:
            self.gone = True
            self.guard.clients_gone += 1
            logger.warning("the OpenEnv client at %s went away %s; its session is closed", self.peer, how)

    async def receive(self) -> dict[str, Any]:
        while True:
            try:
                event = await asyncio.wait_for(self.receive_event(), self.guard.session_idle_s)
            except asyncio.TimeoutError:  # the wait is cancelled safely: uvicorn's receive reads a queue
                await self._close_idle()
                return {"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE}  # OpenEnv's session ends
            if event["type"] == "websocket.disconnect":
                if event.get("code") in LOST_CODES and not self.closed_by_server:
                    self._went_away("without closing the socket")
                return event
            if event["type"] != "websocket.receive":
                return event
            if event.get("bytes") is not None:
                refusal: tuple[WSErrorCode, str] | None = (
                    WSErrorCode.VALIDATION_ERROR,
                    "binary frames are refused: send JSON text frames",
                )
            else:
                refusal = self.guard.refusal(event.get("text") or "", path="/ws")
            if refusal is None:
                return event
            self.guard.count(*refusal)
            # OpenEnv's session loop is waiting in receive(), so this reply cannot interleave with its own
            await self.send({"type": "websocket.send", "text": error_frame(*refusal)})

    async def _close_idle(self) -> None:
        idle = self.guard.session_idle_s
        self.guard.idle_closed += 1
        logger.warning("closed the OpenEnv session of %s: no message for %g s", self.peer, idle)
        reason = f"session idle for more than {idle:g} s: its env is closed"
        await self.send({"type": "websocket.close", "code": IDLE_CLOSE_CODE, "reason": reason})
        self.closed_by_server = True

    async def send(self, event: dict[str, Any]) -> None:
        if self.gone or (self.closed_by_server and event["type"] == "websocket.close"):
            return
        text = event.get("text")
        if event["type"] == "websocket.send" and isinstance(text, str) and text.startswith(ERROR_FRAME_START):
            event = {**event, "text": _sanitised_error_frame(text)}
        try:
            await self.send_event(event)
        except OSError:  # uvicorn's ClientDisconnected: the client went first
            if event["type"] == "websocket.close":
                self.guard.closed_by_client += 1
            else:
                self._went_away("before its reply was sent")


class WireGuard:
    """ASGI middleware that refuses hostile messages before OpenEnv's server reads them.

    Over ``/ws`` a refused frame is answered with an OpenEnv error frame and the
    session reads the next one; over HTTP a refused body gets a 400 (413 when
    too large). Every error frame that leaves is at most
    :data:`MAX_ERROR_FRAME_BYTES` bytes and holds a reason and a code, never
    the input. A socket with no message for ``session_idle_s`` seconds is
    closed (code 1000), and its session with it. A client that goes away
    mid-session is one warning in the log. ``refusals`` counts refusals by
    code; ``idle_closed``, ``clients_gone`` and ``closed_by_client`` count
    idle closes, vanished clients and closes of sockets the client had closed.
    """

    def __init__(
        self,
        app: Callable[[Scope, Receive, Send], Awaitable[None]],
        max_message_bytes: int,
        session_idle_s: float = DEFAULT_SESSION_IDLE_S,
    ) -> None:
        self.app = app
        self.max_message_bytes = max_message_bytes
        self.session_idle_s = session_idle_s
        self.refusals: Counter[str] = Counter()
        self.idle_closed = 0
        self.clients_gone = 0
        self.closed_by_client = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            socket = _Socket(self, scope, receive, send)
            await self.app(scope, socket.receive, socket.send)
        elif scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            await self._guarded_body(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def refusal(self, text: str, path: str) -> tuple[WSErrorCode, str] | None:
        """Why the message ``text`` sent to ``path`` is refused, as (code, reason), or None."""
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self.max_message_bytes:
            return WSErrorCode.VALIDATION_ERROR, (
                f"a message of {size} bytes exceeds the limit of {self.max_message_bytes} bytes"
            )
        try:
            message = loads_json(text)
        except RecursionError:
            return WSErrorCode.VALIDATION_ERROR, f"the message is nested deeper than {MAX_DEPTH} levels"
        except ValueError as exc:  # json.JSONDecodeError, NaN/Infinity/1e999, integers over the digit limit
            return WSErrorCode.INVALID_JSON, f"Invalid JSON: {exc}"
        if not isinstance(message, dict):
            return (
                WSErrorCode.VALIDATION_ERROR,
                f"a message must be a JSON object, got {type(message).__name__}",
            )
        unsafe = _first_unsafe_part(message)
        if unsafe is not None:
            return WSErrorCode.VALIDATION_ERROR, unsafe
        if path == "/ws":
            return _ws_message_problem(message)
        problem = _http_body_problem(path, message)
        return None if problem is None else (WSErrorCode.VALIDATION_ERROR, problem)

    def count(self, code: WSErrorCode, reason: str) -> None:
        self.refusals[code.value] += 1
        logger.info("refused a message (%s): %s", code.value, reason)

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
                problem = self.refusal(body.decode("utf-8"), path=scope.get("path", ""))
            except UnicodeDecodeError as exc:
                problem = WSErrorCode.INVALID_JSON, f"the body is not UTF-8 (byte {exc.start})"
            refusal = None if problem is None else (400, *problem)
        if refusal is not None:
            status, code, reason = refusal
            self.count(code, reason)
            await _send_json(send, status, {"detail": _bounded(reason)})
            return
        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _send_json(send: Send, status: int, content: Any) -> None:
    payload = json.dumps(content).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def _refused_request(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(status_code=400, content={"detail": _bounded(str(exc))})


async def _invalid_request(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's validation errors as one short reason (its own handler sends each error's input back)."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else None
    return JSONResponse(status_code=400, content={"detail": _validation_summary(errors)})


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """HTTP errors with a string detail as they are; any other detail (pydantic's errors) summed up."""
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else _validation_summary(exc.detail)
    return JSONResponse(
        status_code=exc.status_code, content={"detail": _bounded(detail)}, headers=exc.headers
    )


def build_app(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    max_sessions: int = 128,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    session_idle_s: float = DEFAULT_SESSION_IDLE_S,
) -> WireGuard:
    """The ASGI app serving ``env_id``: OpenEnv's app, cut to :data:`SERVED_ROUTES`, behind the guard.

    One env is built here first, so that a bad id or kwarg fails now rather than per session.
    """
    if not 1 <= max_message_bytes <= WS_FRAME_LIMIT:
        raise ValueError(f"max_message_bytes must be in [1, {WS_FRAME_LIMIT}], got {max_message_bytes}")
    if not (math.isfinite(session_idle_s) and session_idle_s > 0):
        raise ValueError(f"session_idle_s must be a number of seconds > 0, got {session_idle_s}")
    AgentenvsEnvironment(env_id, env_kwargs).close()
    factory = functools.partial(AgentenvsEnvironment, env_id, dict(env_kwargs or {}))
    app: FastAPI = create_fastapi_app(
        factory, AgentenvsAction, AgentenvsObservation, max_concurrent_envs=max_sessions
    )
    # OpenEnv's client (GenericEnvClient) plays over /ws alone: /mcp (whose session/create holds a slot that
    # nothing frees), /schema, /state and the API docs are not served
    app.router.routes[:] = [
        route for route in app.router.routes if getattr(route, "path", None) in SERVED_ROUTES
    ]
    app.openapi_url = app.docs_url = app.redoc_url = None
    app.add_exception_handler(RefusedRequest, _refused_request)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    return WireGuard(app, max_message_bytes, session_idle_s)


def serve(
    env_id: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    env_kwargs: Mapping[str, Any] | None = None,
    max_sessions: int = 128,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    session_idle_s: float = DEFAULT_SESSION_IDLE_S,
) -> None:
    """Serve ``env_id`` over OpenEnv's protocol until interrupted; warnings go to stderr as uvicorn's do."""
    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    app = build_app(
        env_id,
        env_kwargs,
        max_sessions=max_sessions,
        max_message_bytes=max_message_bytes,
        session_idle_s=session_idle_s,
    )
    log_config = copy.deepcopy(LOGGING_CONFIG)
    log_config["loggers"][__name__] = {"handlers": ["default"], "level": "WARNING", "propagate": False}
    uvicorn.run(
        app,
        host=host,
        port=port,
        ws_max_size=WS_FRAME_LIMIT,
        log_level="warning",
        log_config=log_config,
    )

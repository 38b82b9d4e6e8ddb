"""The submission bundle: what ``agentenvs eval`` writes and the leaderboard re-checks.

A bundle is a folder of three files (and, for upload, one JSON document
``{"metadata": ..., "summary": ..., "episodes": [...]}`` holding the same):

``episodes.jsonl``
    one line per finished episode (:data:`EPISODE_SCHEMA`), the JSON form of
    an :class:`~agentenvs.eval.episodes.EpisodeRecord`: what replay needs
    (env id, split, task id, seed, every raw response) and what it must
    reproduce (per-turn rewards, obs and state keys, success, score), plus
    usage (prompt/completion tokens, seconds in the model and in the env), and
    ``end_reason``: ``terminated``, ``truncated`` or ``context_overflow`` (the
    prompt no longer fit the model's context: a failure, score 0), beside the
    env's own ``terminated`` and ``truncated`` flags on the last turn (the
    board requires all three, and the replay checks each). A results
    file of ``agentenvs run --out`` holds the same lines, which may also name
    env kwargs and, from older versions, lack the usage (:data:`RECORD_SCHEMA`).
``summary.json``
    per env: episodes, success (95% Wilson interval) and score (95% bootstrap
    interval), mean turns, token totals, context overflows; ``overall``: the
    unweighted mean over envs (:func:`~agentenvs.eval.statistics.summarize`).
    Written once every panel episode has finished.
``metadata.json``
    model, size, endpoint kind, package version, panel name and digests, and
    the generation settings (``settings``: temperature, top_p, seed, history
    window, context length, how tokens were counted, each env's max_tokens
    and stop strings) with their digest ``settings_digest``: submissions rank
    together only when it is equal (:data:`METADATA_SCHEMA`).

Every read parses strict JSON (:func:`parse_json`: no ``NaN``, ``Infinity``
or ``1e999``) and validates against the JSON schema (draft-07, :func:`validate`);
the schema is part of the public format (``SUBMISSION_SCHEMA``). Beyond the
schema, :func:`validate` enforces what JSON Schema cannot say:

* every string (and object key) is valid Unicode: no lone surrogates;
* an ``integer`` is an exact JSON integer (``0.0`` is refused, although
  draft-07 counts it as an integer) within ``0 … 2**53 - 1``, the range every
  JSON reader holds exactly;
* a display name (``format: agentenvs-name``: model, size, agent) follows
  the name rules of :mod:`agentenvs.eval.names` (no control, format, bidi or
  invisible character, single inner spaces, NFKC, no mixed look-alike
  scripts);
* ``package_version`` is a PEP 440 version (``created``, a UTC timestamp
  ``YYYY-MM-DDTHH:MM:SSZ`` of a real date, is the schema's ``date-time``).

The summary's numbers and the one rule by which a recorded number and its
recomputation agree (:func:`~agentenvs.eval.statistics.same_number`) live in
:mod:`agentenvs.eval.statistics`.
"""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import fastjsonschema

import agentenvs
from agentenvs.core.keys import stable_digest
from agentenvs.core.untrusted import loads_json
from agentenvs.eval.names import lone_surrogate, name_problem, version_problem
from agentenvs.eval.panel import PanelSpec, panel_digest

SCHEMA_VERSION = "agentenvs-submission/1"
END_REASONS = ("terminated", "truncated", "context_overflow")

# the largest integer an IEEE double (a JSON reader's number) holds exactly; SQLite's INTEGER holds it too
MAX_INTEGER = 2**53 - 1
NAME_FORMAT, VERSION_FORMAT = "agentenvs-name", "pep440-version"
TIMESTAMP_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"
_number = {"type": "number"}
_count = {"type": "integer", "minimum": 0, "maximum": MAX_INTEGER}
_name = {"type": "string", "format": NAME_FORMAT}
_keys = {"type": "array", "items": {"type": "string", "maxLength": 128}}

EPISODE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "env_id",
        "env_kwargs",
        "split",
        "task_id",
        "seed",
        "agent",
        "responses",
        "rewards",
        "obs_keys",
        "state_keys",
        "success",
        "score",
        "turns",
        "return",
        "component_sums",
        "prompt_tokens",
        "completion_tokens",
        "model_s",
        "env_s",
    ],
    "additionalProperties": False,
    "properties": {
        "env_id": {"type": "string", "maxLength": 200},
        "env_kwargs": {"type": "object", "maxProperties": 0},
        "split": {"type": "string", "maxLength": 32},
        "task_id": {"type": "string", "maxLength": 500},
        "seed": _count,
        "agent": {**_name, "maxLength": 200},
        "responses": {"type": "array", "items": {"type": "string"}},
        "rewards": {"type": "array", "items": _number},
        "obs_keys": _keys,
        "state_keys": _keys,
        "success": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "turns": _count,
        "return": _number,
        "component_sums": {"type": "object", "additionalProperties": _number},
        "prompt_tokens": _count,
        "completion_tokens": _count,
        "model_s": {"type": "number", "minimum": 0},
        "env_s": {"type": "number", "minimum": 0},
        "end_reason": {"enum": list(END_REASONS)},
        "terminated": {"type": "boolean"},
        "truncated": {"type": "boolean"},
    },
}
# what only a model's episodes measure; a scripted agent's record holds zeros
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "model_s", "env_s")
# a record of ``agentenvs run --out``: the episode's form for any env and kwargs (a bundle plays the
# panel's envs with their defaults), where an env without splits, task ids or outcomes writes null
NULLABLE_IN_RECORDS = ("split", "task_id", "success", "score")
RECORD_SCHEMA: dict[str, Any] = {
    **EPISODE_SCHEMA,
    "required": [name for name in EPISODE_SCHEMA["required"] if name not in USAGE_FIELDS],
    "properties": {
        **EPISODE_SCHEMA["properties"],
        "env_kwargs": {"type": "object"},
        **{
            name: {
                **EPISODE_SCHEMA["properties"][name],
                "type": [EPISODE_SCHEMA["properties"][name]["type"], "null"],
            }
            for name in NULLABLE_IN_RECORDS
        },
    },
}
_interval = {
    "type": "object",
    "required": ["mean", "low", "high"],
    "additionalProperties": False,
    "properties": {"mean": _number, "low": _number, "high": _number},
}
SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["envs", "overall"],
    "additionalProperties": False,
    "properties": {
        "envs": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["episodes", "success", "score", "turns", "prompt_tokens", "completion_tokens"],
                "additionalProperties": False,
                "properties": {
                    "episodes": _count,
                    "success": _interval,
                    "score": _interval,
                    "turns": _number,
                    "prompt_tokens": _count,
                    "completion_tokens": _count,
                    "context_overflows": _count,
                },
            },
        },
        "overall": {
            "type": "object",
            "required": ["envs", "success", "score"],
            "additionalProperties": False,
            "properties": {"envs": _count, "success": _interval, "score": _interval},
        },
    },
}
METADATA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "schema",
        "model",
        "model_size",
        "endpoint",
        "package_version",
        "panel",
        "panel_digest",
        "env_digests",
        "settings",
        "settings_digest",
        "created",
    ],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": SCHEMA_VERSION},
        "model": {**_name, "minLength": 1, "maxLength": 200},
        "model_size": {**_name, "maxLength": 40},
        "endpoint": {"enum": ["openai", "transformers", "scripted"]},
        "package_version": {"type": "string", "format": VERSION_FORMAT, "maxLength": 40},
        "panel": {"type": "string", "maxLength": 40},
        "panel_digest": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
        "env_digests": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
        },
        "settings": {
            "type": "object",
            "required": [
                "temperature",
                "top_p",
                "seed",
                "history_window",
                "context_length",
                "token_count",
                "envs",
            ],
            "additionalProperties": False,
            "properties": {
                "temperature": {"type": "number", "minimum": 0, "maximum": 2},
                "top_p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                "seed": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_INTEGER},
                "history_window": {"type": ["integer", "null"], "minimum": 0, "maximum": 10**6},
                "context_length": {"type": ["integer", "null"], "minimum": 1, "maximum": 10**9},
                "token_count": {"enum": ["server", "estimate", "none"]},
                "envs": {
                    "type": "object",
                    "minProperties": 1,
                    "additionalProperties": {
                        "type": "object",
                        "required": ["max_tokens", "stop"],
                        "additionalProperties": False,
                        "properties": {
                            "max_tokens": {"type": "integer", "minimum": 1, "maximum": 10**9},
                            "stop": {
                                "type": "array",
                                "maxItems": 8,
                                "items": {"type": "string", "minLength": 1, "maxLength": 64},
                            },
                        },
                    },
                },
            },
        },  # fmt: skip
        "settings_digest": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
        "created": {"type": "string", "format": "date-time", "pattern": TIMESTAMP_PATTERN},
    },
}
SUBMISSION_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": SCHEMA_VERSION,
    "type": "object",
    "required": ["metadata", "summary", "episodes"],
    "additionalProperties": False,
    "properties": {
        "metadata": METADATA_SCHEMA,
        "summary": SUMMARY_SCHEMA,
        "episodes": {"type": "array", "minItems": 1, "items": EPISODE_SCHEMA},
    },
}
EPISODES_FILE, SUMMARY_FILE, METADATA_FILE = "episodes.jsonl", "summary.json", "metadata.json"
SCHEMAS = {
    "episode": EPISODE_SCHEMA,
    "record": RECORD_SCHEMA,
    "summary": SUMMARY_SCHEMA,
    "metadata": METADATA_SCHEMA,
    "submission": SUBMISSION_SCHEMA,
}


@functools.cache
def _validator(kind: str) -> Callable[[Any], Any]:
    """``kind``'s schema compiled to Python code, on first use (a command that reads no bundle pays
    nothing); validating a large submission then costs milliseconds."""
    return fastjsonschema.compile(SCHEMAS[kind])


class BundleError(ValueError):
    """A bundle that does not follow the schema, or is incomplete."""


def parse_json(text: str | bytes) -> Any:
    """``text`` as JSON proper; ``BundleError`` ``not JSON: <reason>`` otherwise.

    Python's reader accepts what no JSON number means (``NaN``, ``Infinity``,
    ``1e999``, which parses as infinity): refused, as is nesting deeper than
    Python recurses (``[[[…]]]`` 200,000 deep) and text that is not UTF-8.
    """
    try:
        return loads_json(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise BundleError(f"not JSON: {type(exc).__name__}: {exc}") from None


def validate(kind: str, data: Any) -> None:
    """Check ``data`` against the ``kind`` schema and the rules beyond it (module docstring)."""
    try:
        _validator(kind)(data)
        problem = next(_value_problems(SCHEMAS[kind], data, "data"), None)
    except fastjsonschema.JsonSchemaValueException as exc:
        raise BundleError(f"{kind}: {exc.message[:300]}") from None
    except RecursionError:  # a free-form value (a record's env kwargs) nested deeper than Python recurses
        raise BundleError(f"{kind}: nested too deeply to check") from None
    if problem is not None:
        raise BundleError(f"{kind}: {problem[:300]}")


# the checks of the schema's own string formats (agentenvs.eval.names)
FORMAT_RULES = {NAME_FORMAT: name_problem, VERSION_FORMAT: version_problem}


def _value_problems(schema: Mapping[str, Any], data: Any, path: str) -> Iterator[str]:
    """The rules JSON Schema cannot state, checked along ``schema`` (which ``data`` already follows)."""
    if isinstance(data, str):
        if lone_surrogate(data):
            yield f"{path} is not valid Unicode (a lone surrogate)"
        elif (rule := FORMAT_RULES.get(schema.get("format", ""))) and (problem := rule(data)) is not None:
            yield f"{path} {data!r}: {problem}"
    elif schema.get("type") == "integer" and type(data) is not int:
        yield f"{path} {data!r} is not an exact integer"
    elif isinstance(data, dict):
        properties, others = schema.get("properties", {}), schema.get("additionalProperties")
        for key, value in data.items():
            if lone_surrogate(key):
                yield f"{path} has a key that is not valid Unicode (a lone surrogate)"
                continue
            inner = properties.get(key, others if isinstance(others, dict) else {})
            yield from _value_problems(inner, value, f"{path}.{key}")
    elif isinstance(data, list):
        items = schema.get("items", {})
        for index, item in enumerate(data):
            yield from _value_problems(items, item, f"{path}[{index}]")


def utc_now(ahead_s: float = 0.0) -> str:
    """Now (plus ``ahead_s`` seconds) as bundles and the board record times: ``YYYY-MM-DDTHH:MM:SSZ``."""
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=ahead_s)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def submission_metadata(
    spec: PanelSpec,
    env_digests: Mapping[str, str],
    *,
    model: str,
    model_size: str,
    endpoint: str,
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    """The metadata of a submission on ``spec`` over the envs of ``env_digests`` (created now)."""
    settings = dict(settings)
    return {
        "settings": settings,
        "settings_digest": stable_digest(settings),
        "schema": SCHEMA_VERSION,
        "model": model,
        "model_size": model_size,
        "endpoint": endpoint,
        "package_version": agentenvs.__version__,
        "panel": spec.name,
        "panel_digest": panel_digest(spec, dict(env_digests)),
        "env_digests": dict(env_digests),
        "created": utc_now(),
    }


# ------------------------------------------------------------------ files
def read_episode_lines(path: Path) -> list[dict[str, Any]]:
    """The validated episodes of an ``episodes.jsonl``; ``BundleError`` names the bad line."""
    episodes = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                episode = parse_json(line)
                validate("episode", episode)
            except BundleError as exc:
                raise BundleError(f"{path.name}:{number}: {exc}") from None
            episodes.append(episode)
    return episodes


def write_json(path: Path, data: Any) -> None:
    """Write through a temporary file, so a crash never leaves half a file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    partial.replace(path)


def read_json(path: Path, kind: str) -> dict[str, Any]:
    try:
        data = parse_json(path.read_bytes())
    except OSError as exc:
        raise BundleError(f"{path.name}: {exc}") from None
    except BundleError as exc:
        raise BundleError(f"{path.name}: {exc}") from None
    validate(kind, data)
    return data


def read_bundle(path: str | Path) -> dict[str, Any]:
    """A bundle folder (or a submission JSON file) as one validated submission document."""
    path = Path(path)
    if path.is_file():
        return read_json(path, "submission")
    missing = [name for name in (METADATA_FILE, SUMMARY_FILE, EPISODES_FILE) if not (path / name).is_file()]
    if missing:
        raise BundleError(f"{path} lacks {', '.join(missing)} (an unfinished evaluation has no summary)")
    document = {
        "metadata": read_json(path / METADATA_FILE, "metadata"),
        "summary": read_json(path / SUMMARY_FILE, "summary"),
        "episodes": read_episode_lines(path / EPISODES_FILE),
    }
    validate("submission", document)
    return document

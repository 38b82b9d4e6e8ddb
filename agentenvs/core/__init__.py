"""What every env family shares: the env contract, action protocol, keys, tasks.

Every family, agent, evaluator and trainer builds on this package: the env
contract (``env``), the action protocol (``protocol``), keys and derived
randomness (``keys``), task sources (``tasks``), spaces, chat clients, judges,
the prompt pieces every harness shares (``prompting``), the registry
(``registration``), the readers of outside input (``untrusted``: strict
JSON, hostile values shown short), the public env checker (``checker``:
``check_env``, loaded on first use so that importing core stays light) and
a client of Chromium's DevTools protocol over a pipe (``devtools``).

May import: nothing (third-party libraries only), so that anything may
import it without a cycle.
"""

from typing import TYPE_CHECKING, Any

from agentenvs.core.agent import Agent
from agentenvs.core.chat import ChatClient, ChatError, ChatReply
from agentenvs.core.env import (
    AgentEnv,
    EmptySplitError,
    EnvSnapshot,
    InvalidAction,
    MissingProgram,
    StepOutcome,
    resolve_weights,
)
from agentenvs.core.keys import (
    canonical_bytes,
    derive_rng,
    derive_seed,
    normalize_text,
    stable_digest,
    text_key,
)
from agentenvs.core.protocol import (
    ActionProtocol,
    AnswerFormat,
    ParsedResponse,
    ResponseProtocol,
    coerce_text,
    find_block,
    normalize_action,
)
from agentenvs.core.registration import NAMESPACE, EnvEntry
from agentenvs.core.spaces import UnicodeText, observation_text_space, response_text_space
from agentenvs.core.tasks import (
    SPLITS,
    IdListTaskSource,
    ListTaskSource,
    TaskSource,
    UnknownTaskError,
    split_of_content,
)

if TYPE_CHECKING:
    from agentenvs.core.checker import CheckReport, ContractViolation, check_env

# Loaded on first use (module __getattr__): the checker imports gymnasium's env checker and its own rules.
_CHECKER_NAMES = ("CheckReport", "ContractViolation", "check_env")


def __getattr__(name: str) -> Any:
    if name in _CHECKER_NAMES:
        from agentenvs.core import checker

        return getattr(checker, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "NAMESPACE",
    "SPLITS",
    "ActionProtocol",
    "Agent",
    "AgentEnv",
    "AnswerFormat",
    "ChatClient",
    "ChatError",
    "ChatReply",
    "CheckReport",
    "ContractViolation",
    "EnvEntry",
    "EnvSnapshot",
    "IdListTaskSource",
    "InvalidAction",
    "ListTaskSource",
    "EmptySplitError",
    "MissingProgram",
    "ParsedResponse",
    "ResponseProtocol",
    "StepOutcome",
    "TaskSource",
    "UnicodeText",
    "UnknownTaskError",
    "canonical_bytes",
    "check_env",
    "coerce_text",
    "derive_rng",
    "derive_seed",
    "find_block",
    "normalize_action",
    "normalize_text",
    "observation_text_space",
    "resolve_weights",
    "response_text_space",
    "split_of_content",
    "stable_digest",
    "text_key",
]

"""The registry: one :class:`EnvEntry` per ``agentenvs/<Name>-v<version>`` id, and every query about them.

``import agentenvs`` runs :func:`register_all`: each family package
(``agentenvs/envs/<family>/__init__.py``) lists its envs in a module-level ``ENVS``
tuple of entries, and every entry is registered with gymnasium. An entry names
the code behind its id by ``"module:attr"`` import strings only (the env
class, the expert, the random policy), so registering imports no env and never
fails for a missing extra; ``gym.make`` reports the extra to install instead.

Queries: :func:`entries`, :func:`entry_of`, :func:`resolve_id`, :func:`family_of`,
:func:`main_ids`, :func:`matching_ids`, :func:`unavailable_reason`,
:func:`available_main_ids`; :func:`make_expert` and :func:`make_random_policy`
build an env's policies from its entry, found through the env's spec.

Versions (Gymnasium's rule): a change to what an id's rewards, observations or
tasks are bumps the entry's ``version`` (``Sokoban-v0`` -> ``Sokoban-v1``); the
old entry stays registered beside the new one while its code can still build
it (a kwarg that restores the old behaviour), so recorded runs keep replaying.
The env module's docstring keeps a version history naming every version.

The rule every family package follows: its ``ENVS`` entries name its code by
import strings only; it imports ``agentenvs.core`` and itself (Search and
WebShop also ``retrieval_index``), never a sibling family,
``agentenvs.agents``/``eval``/``cli``, ``baselines`` or ``leaderboard``; its
env side (env, world, tasks) never imports its expert, which imports the env
side. ``tests/core/test_layout.py`` checks all of it on the import graph.

May import: the standard library and gymnasium. It finds the family packages
on its package's directory and imports them with :mod:`importlib`, so no
import statement points back at ``agentenvs`` (the package imports this module).
"""

from __future__ import annotations

import fnmatch
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import gymnasium as gym

from agentenvs.core.untrusted import short_repr

NAMESPACE = "agentenvs"
RANDOM_AGENT = "agentenvs.agents.scripted:RandomAgent"
# Every package under agentenvs/envs/ is a family; nothing else is scanned.
FAMILIES_DIR = Path(__file__).resolve().parent.parent / "envs"
FAMILIES_PACKAGE = __name__.rsplit(".", 2)[0] + ".envs"


@dataclass(frozen=True)
class EnvEntry:
    """One registered env id: ``agentenvs/{name}-v{version}``.

    ``family`` is the display name of the family the id belongs to (the eight
    Search ids are one family, ``"Search"``). ``expert`` and ``random_policy``
    are ``"module:attr"`` import strings: ``expert`` a callable
    ``(env) -> Agent`` (None: the env ships no expert), ``random_policy`` a
    callable ``(env, seed) -> Agent``, by default the uniform agent of
    :mod:`agentenvs.agents.scripted` (named, not imported: core imports
    nothing above it). ``variant_of`` names the main env a
    variant id specialises (one BabyAI level of the ``BabyAI`` mix);
    ``agentenvs run all`` covers main ids only. ``version`` is the id's
    version (bumped when its rewards, observations or tasks change); an older
    version of the same name may stay registered beside it, and is then
    neither a main id nor a variant (:func:`main_ids` takes the newest).
    """

    name: str
    entry_point: str
    summary: str
    family: str
    expert: str | None = None
    random_policy: str = RANDOM_AGENT
    kwargs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    extra: str | None = None
    variant_of: str | None = None
    version: int = 0

    @property
    def env_id(self) -> str:
        return f"{NAMESPACE}/{self.name}-v{self.version}"


class UnknownEnvError(ValueError):
    """An id (or an env's spec) that names no registered entry."""


class PolicyUnavailable(LookupError):
    """The entry names no policy of the kind asked for (an env without an expert)."""


# Every registered entry by id, in registration order: filled by register_all and register.
ENTRIES: dict[str, EnvEntry] = {}


def family_packages() -> list[str]:
    """The family packages, the subpackages of ``agentenvs.envs``, alphabetically."""
    return sorted(module.name for module in pkgutil.iter_modules([str(FAMILIES_DIR)]) if module.ispkg)


def discover() -> list[EnvEntry]:
    """Every family's entries, families in alphabetical order."""
    found: list[EnvEntry] = []
    for name in family_packages():
        found.extend(getattr(importlib.import_module(f"{FAMILIES_PACKAGE}.{name}"), "ENVS", ()))
    return found


def register(entry: EnvEntry) -> None:
    """Add one entry to the registry and to gymnasium's (idempotent; a second entry for an id is refused)."""
    known = ENTRIES.setdefault(entry.env_id, entry)
    if known != entry:
        raise ValueError(f"{entry.env_id} is already registered, by the entry {known}")
    if entry.env_id not in gym.registry:
        gym.register(id=entry.env_id, entry_point=entry.entry_point, kwargs=dict(entry.kwargs))


def register_all() -> list[EnvEntry]:
    """Register every discovered entry with gymnasium (idempotent)."""
    found = discover()
    for entry in found:
        register(entry)
    return found


# ------------------------------------------------------------------ queries
def entries() -> list[EnvEntry]:
    """Every registered entry, in registration order."""
    return list(ENTRIES.values())


def entry_of(env_id: str) -> EnvEntry:
    """The entry of a full id (``agentenvs/Sokoban-v0``); else UnknownEnvError, naming the ids."""
    try:
        return ENTRIES[env_id]
    except (KeyError, TypeError):
        variants = sum(entry.variant_of is not None for entry in ENTRIES.values())
        raise UnknownEnvError(
            f"unknown env id {short_repr(env_id)}; registered: {', '.join(main_ids())} "
            f"(and {variants} variants; `agentenvs list` shows them all)"
        ) from None


def resolve_id(name: str) -> str:
    """The registered id ``name`` names, accepting ``Sokoban-v0`` for ``agentenvs/Sokoban-v0``."""
    for candidate in (name, f"{NAMESPACE}/{name}"):
        if candidate in gym.registry:
            return candidate
    raise UnknownEnvError(f"unknown env id {short_repr(name)}; `agentenvs list` shows the ids")


def family_of(env_id: str) -> str:
    """The family of a registered id: its entry's ``family`` (``agentenvs/Search-NQ-v0`` -> ``Search``).

    An id this version does not register (a row an older leaderboard stored)
    is its name's first dash-separated part, so that row still has a family.
    """
    entry = ENTRIES.get(env_id)
    return entry.family if entry is not None else env_id.split("/")[-1].split("-")[0]


def newest_version(name: str) -> int | None:
    """The highest registered version of the env name ``name`` (``Sokoban``), or None."""
    versions = [entry.version for entry in ENTRIES.values() if entry.name == name]
    return max(versions) if versions else None


def main_ids() -> list[str]:
    """Every registered id that is not a variant of another, in its newest version (``run all``)."""
    return [
        entry.env_id
        for entry in ENTRIES.values()
        if entry.variant_of is None and entry.version == newest_version(entry.name)
    ]


def matching_ids(pattern: str) -> list[str]:
    """Registered ids matching a shell pattern, namespace optional (``Sokoban*``, ``agentenvs/Baby*``)."""
    return [
        env_id
        for env_id in ENTRIES
        if fnmatch.fnmatchcase(env_id, pattern) or fnmatch.fnmatchcase(env_id, f"{NAMESPACE}/{pattern}")
    ]


def unavailable_reason(env_id: str) -> str | None:
    """Why ``env_id``'s code cannot be imported here (a missing extra), or None."""
    entry_point = gym.spec(env_id).entry_point
    if not isinstance(entry_point, str):
        return None
    try:
        importlib.import_module(entry_point.split(":")[0])
    except ImportError as exc:
        entry = ENTRIES.get(env_id)
        extra = entry.extra if entry is not None else None
        hint = (
            f"needs the {extra} extra (pip install 'agentenvs[{extra}]')" if extra else "cannot be imported"
        )
        return f"{hint}: {exc}"
    except Exception as exc:
        return f"cannot be imported: {type(exc).__name__}: {exc}"
    return None


def available_main_ids() -> list[str]:
    """Main ids whose code imports here (their extras are installed)."""
    return [env_id for env_id in main_ids() if unavailable_reason(env_id) is None]


# ------------------------------------------------------------------ policies
def load_import_string(target: str) -> Any:
    """The object ``"package.module:attr"`` names (``attr`` may be dotted)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"an import string reads 'package.module:attr', got {target!r}")
    value: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        value = getattr(value, part)
    return value


def entry_of_env(env: gym.Env) -> EnvEntry:
    """The entry of the id ``env`` was made from (its spec, or its unwrapped env's).

    An env built from its class has no spec: the error names the ids made
    from that class, which ``gym.make`` builds with their registered policies.
    """
    spec = env.spec or env.unwrapped.spec
    if spec is None:
        cls = type(env.unwrapped)
        ids = [e.env_id for e in ENTRIES.values() if e.entry_point == f"{cls.__module__}:{cls.__qualname__}"]
        if ids:
            how = f"make it with gym.make({ids[0]!r})" + (
                f" (ids of {cls.__name__}: {', '.join(ids)})" if len(ids) > 1 else ""
            )
        else:
            how = "register an EnvEntry for it (registration.register) and make it with gym.make(id)"
        raise UnknownEnvError(
            f"this {cls.__name__} was built from its class, so no registry entry names its policies; {how}"
        )
    return entry_of(spec.id)


def make_expert(env: gym.Env) -> Any:
    """The expert agent the env's registry entry names, built on ``env.unwrapped``."""
    entry = entry_of_env(env)
    if entry.expert is None:
        raise PolicyUnavailable(f"{entry.env_id} ships no expert (its registry entry names none)")
    factory: Callable[[gym.Env], Any] = load_import_string(entry.expert)
    return factory(env.unwrapped)


def make_random_policy(env: gym.Env, seed: int) -> Any:
    """The random agent the env's entry names, seeded by ``seed``.

    An env with no registry entry (built from its class, or a gymnasium id
    registered by hand) gets the default, :data:`RANDOM_AGENT`: it needs
    nothing an entry would name.
    """
    spec = env.spec or env.unwrapped.spec
    entry = ENTRIES.get(spec.id) if spec is not None else None
    factory: Callable[[gym.Env, int], Any] = load_import_string(
        entry.random_policy if entry is not None else RANDOM_AGENT
    )
    return factory(env, seed)

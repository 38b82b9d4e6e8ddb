"""The registry's queries: ids, families, variants, import strings, registering a family from outside."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import gymnasium as gym
import pytest

import agentenvs
from agentenvs.core import EnvEntry, registration
from agentenvs.core.registration import (
    UnknownEnvError,
    entry_of,
    family_of,
    load_import_string,
    main_ids,
    matching_ids,
)


def test_entries_are_the_ids_import_agentenvs_registers():
    assert [entry.env_id for entry in registration.entries()] == agentenvs.ENV_IDS
    assert all(entry.env_id in gym.registry for entry in registration.entries())


def test_unknown_ids_name_the_registered_ones():
    variants = sum(entry.variant_of is not None for entry in registration.entries())
    for bad in (
        "agentenvs/Nope-v0",
        "Sokoban-v0",
        "",
        "agentenvs/Sokoban-v0\u200b",
        "agentenvs/\u202eSokoban-v0",
    ):
        with pytest.raises(
            UnknownEnvError, match=rf"registered: agentenvs/ALFWorld-v0, .* \(and {variants} variants"
        ):
            entry_of(bad)
    for not_a_string in (None, 10**30, 1.0, ["agentenvs/Sokoban-v0"]):
        with pytest.raises(UnknownEnvError, match="unknown env id"):
            entry_of(not_a_string)  # type: ignore[arg-type]


def test_short_ids_resolve_and_hostile_names_do_not():
    assert registration.resolve_id("Sokoban-v0") == registration.resolve_id("agentenvs/Sokoban-v0")
    hostile = (
        "Sokoban",
        "\ud800",
        "Sokoban-v0\u200b",
        "../Sokoban-v0",
        "/agentenvs/Sokoban-v0",
        "(" * 200_000,
    )
    for bad in hostile:
        with pytest.raises(UnknownEnvError, match="`agentenvs list` shows the ids") as error:
            registration.resolve_id(bad)
        assert len(str(error.value)) < 200  # a hostile name is cut, not echoed whole


def test_family_is_the_entrys_display_name():
    assert {family_of(env_id) for env_id in matching_ids("Search*")} == {"Search"}
    assert family_of("agentenvs/ColBench-Frontend-v0") == "ColBench"
    assert (
        family_of("agentenvs/BabyAI-GoToObj-v0") == "BabyAI"
        and family_of("agentenvs/Sokoban-Verl-v0") == "Sokoban"
    )
    assert sorted({entry.family for entry in registration.entries()}) == [
        "ALFWorld", "BabyAI", "ColBench", "Search", "Sokoban", "TextCraft", "WebShop",
    ]  # fmt: skip
    assert family_of("agentenvs/Retired-Variant-v0") == "Retired"  # a row an older leaderboard stored


def test_main_ids_leave_out_variants_and_patterns_match_with_or_without_the_namespace():
    assert "agentenvs/BabyAI-v0" in main_ids() and "agentenvs/Search-TriviaQA-2Turn-v0" not in main_ids()
    assert not any(entry_of(env_id).variant_of for env_id in main_ids())
    assert (
        matching_ids("Sokoban*")
        == matching_ids("agentenvs/Sokoban*")
        == [
            "agentenvs/Sokoban-v0",
            "agentenvs/Sokoban-Verl-v0",
        ]
    )
    assert matching_ids("BabyAI-GoTo[RO]*") and all("GoTo" in i for i in matching_ids("BabyAI-GoTo[RO]*"))
    assert matching_ids("") == [] and matching_ids("[") == []


def test_import_strings_resolve_dotted_attributes_and_refuse_malformed_ones():
    assert load_import_string("agentenvs.core.registration:EnvEntry.env_id") is EnvEntry.env_id
    for bad in ("agentenvs.core.registration", ":EnvEntry", "agentenvs.core.registration:", ""):
        with pytest.raises(ValueError, match="package.module:attr"):
            load_import_string(bad)
    with pytest.raises(AttributeError):
        load_import_string("agentenvs.core.registration:NoSuchThing")


def test_register_adds_an_outside_family_once(monkeypatch: pytest.MonkeyPatch):
    entry = EnvEntry(
        name="TestOutside",
        entry_point="fixtures.counter_env:CounterEnv",
        summary="count",
        family="TestOutside",
    )
    monkeypatch.setattr(registration, "ENTRIES", dict(registration.ENTRIES))
    monkeypatch.setitem(gym.registry, entry.env_id, None)  # removed again after the test
    del gym.registry[entry.env_id]
    registration.register(entry)
    registration.register(entry)
    assert registration.entries()[-1] is entry and len(registration.entries()) == len(agentenvs.ENV_IDS) + 1
    assert gym.spec(entry.env_id).entry_point == entry.entry_point and main_ids()[-1] == entry.env_id
    with pytest.raises(ValueError, match="TestOutside-v0 is already registered"):
        registration.register(replace(entry, summary="another"))


def test_registering_imports_no_env_no_expert_and_no_agent():
    """``import agentenvs`` reads the family packages only: an env's extra may be missing."""
    code = (
        "import sys, agentenvs\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('agentenvs.'))\n"
        "print('\\n'.join(loaded))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
        timeout=120,
    ).stdout.split()
    families = {f"{registration.FAMILIES_PACKAGE}.{name}" for name in registration.family_packages()}
    assert families <= set(out)
    heavy = [
        m for m in out if m.startswith(tuple(f"{family}." for family in families) + ("agentenvs.agents",))
    ]
    assert heavy == [], heavy

"""ColBench backend env: tasks, collaborator, scoring (both rule sets), official files, the
expert's 100%, rewards, state keys, snapshots."""

from __future__ import annotations

import copy
import importlib
import json
import pickle
import re
from pathlib import Path

import gymnasium as gym
import pytest

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.core import derive_rng
from agentenvs.envs.colbench.backend.env import ColBenchEnv
from agentenvs.envs.colbench.backend.families import FAMILIES, LATE_FEE
from agentenvs.envs.colbench.backend.sandbox import CallResult, Sandbox, SandboxLimits
from agentenvs.envs.colbench.backend.scoring import evaluate, strip_fences
from agentenvs.envs.colbench.backend.tasks import (
    BackendTask,
    GeneratedTasks,
    generate_task,
    run_trusted_reference,
)
from agentenvs.envs.colbench.collaborators import DONT_KNOW, RuleCollaborator, asked_facts
from agentenvs.envs.colbench.expert import AnswerAtOnce, ColBenchExpert

from fixtures.colbench_tasks import OFFICIAL_ROW, write_official

LIMITS = SandboxLimits(call_seconds=2.0)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(LIMITS)


def late_fee_task() -> BackendTask:
    params = {"grace": 2, "daily": 0.5, "flat": 1, "cap": 5}
    calls = ("late_fee(0)", "late_fee(2)", "late_fee(3)", "late_fee(10)", "late_fee(100)")
    source = LATE_FEE.source(params)
    return BackendTask(
        "hand",
        LATE_FEE.request,
        source,
        "late_fee",
        calls,
        LATE_FEE.facts(params),
        "late_fee",
        run_trusted_reference(source, calls),
    )


def play(env, agent_class, seed: int) -> dict:
    obs, info = env.reset(seed=seed)
    agent = agent_class(env.unwrapped)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        done = terminated or truncated
    return info


# ----------------------------------------------------------------- tasks and families
@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_every_fact_question_reaches_its_fact_and_answers_in_two_sentences(family):
    collaborator = RuleCollaborator()
    for draw in range(20):
        rng = derive_rng("test-facts", family.name, draw)
        params = family.sample(rng)
        facts = family.facts(params)
        task = BackendTask(
            "t", family.request, family.source(params), family.function, (), facts, family.name
        )
        assert 3 <= len(facts) <= 5
        for fact in facts:
            assert asked_facts(facts, fact.question) == (fact.key,)
            reply = collaborator.respond(task, (), fact.question)
            assert reply == fact.answer and len(re.split(r"(?<=[.!?])\s+", reply.strip())) <= 2
        assert collaborator.respond(task, (), "What is your favourite colour?") == DONT_KNOW


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_references_are_short_and_every_hidden_detail_matters(family):
    rng = derive_rng("test-details", family.name)
    for _ in range(10):
        params = family.sample(rng)
        source = family.source(params)
        assert len(source.splitlines()) <= 50 and "import" not in source
        calls = tuple(family.calls(params, rng))
        assert len(calls) == 10
        guess = family.source(family.default)
        if params != family.default:  # the usual guess differs from the spec somewhere, and the tests see it
            differs = run_trusted_reference(guess, calls) != run_trusted_reference(source, calls)
            assert differs or any(params[k] != family.default[k] for k in params)


def test_splits_hold_the_published_sizes_and_never_share_a_spec():
    tasks = GeneratedTasks()
    assert {s: tasks.size(s) for s in ("train", "valid", "test")} == {
        "train": 10_000,
        "valid": 1_000,
        "test": 1_000,
    }
    specs = {
        split: {tasks.load(tasks.task_id(split, i)).content_key for i in range(150)} for split in tasks.splits
    }
    assert not specs["train"] & specs["test"] and not specs["train"] & specs["valid"]
    assert not specs["valid"] & specs["test"]
    assert generate_task("test", 7) == generate_task("test", 7)


def test_every_reference_passes_its_own_tests_in_the_sandbox(sandbox):
    tasks = GeneratedTasks()
    seen = set()
    for index in range(60):
        task = tasks.load(tasks.task_id("test", index))
        if task.family in seen:
            continue
        seen.add(task.family)
        for scoring in ("sandbox", "reference"):
            assert evaluate(task.reference, task.calls, task.expected, sandbox, scoring).score == 1.0
    assert seen == {family.name for family in FAMILIES}


@pytest.mark.slow
def test_every_built_in_test_task_reference_passes_its_own_tests(sandbox):
    tasks = GeneratedTasks()
    for index in range(tasks.size("test")):
        task = tasks.load(tasks.task_id("test", index))
        assert evaluate(task.reference, task.calls, task.expected, sandbox).score == 1.0, task.task_id


# ----------------------------------------------------------------- scoring
def test_scoring_matches_hand_checked_answers(sandbox):
    task = late_fee_task()
    assert [r.value for r in task.expected] == [0, 0, 1.5, 5, 5]
    answers = {
        task.reference: 1.0,
        "def late_fee(days):\n    return 0 if days <= 0 else min(1 + days * 0.5, 5)\n": 0.6,
        "def late_fee(days):\n    return -1\n": 0.0,
        "def late_fee(days:\n    return 0\n": 0.0,
        f"Here it is:\n```python\n{task.reference}```\nDone.": 1.0,
    }
    for answer, score in answers.items():
        for scoring in ("sandbox", "reference"):
            assert evaluate(answer, task.calls, task.expected, sandbox, scoring).score == pytest.approx(score)


def test_reference_rules_reject_forbidden_substrings_and_hide_top_level_names(sandbox):
    task = late_fee_task()
    with_os = "import os\n" + task.reference
    assert evaluate(with_os, task.calls, task.expected, sandbox, "sandbox").score == 1.0
    rejected = evaluate(with_os, task.calls, task.expected, sandbox, "reference")
    assert rejected.score == 0.0 and "import os" in rejected.rejected
    # ColBench exec()s the answer inside a function: a top-level import is not a global of its functions
    helper = (
        "import math\ndef late_fee(days):\n"
        "    return math.floor(0) if days <= 2 else min(1 + (days - 2) * 0.5, 5)\n"
    )
    assert evaluate(helper, task.calls, task.expected, sandbox, "sandbox").score == 1.0
    parity = evaluate(helper, task.calls, task.expected, sandbox, "reference")
    assert parity.score == 0.6 and [r.error for r in parity.results[:2]] == ["NameError", "NameError"]


def test_reference_rules_skip_calls_whose_reference_returns_none(sandbox):
    calls = ("f(1)", "f(2)")
    expected = (CallResult(True, None), CallResult(True, 4))
    answer = "def f(x):\n    return None if x == 1 else 4\n"
    assert evaluate(answer, calls, expected, sandbox, "sandbox").score == 1.0
    assert evaluate(answer, calls, expected, sandbox, "reference").score == 0.5


def test_strip_fences_follows_colbench():
    assert strip_fences("```python\ndef f(): pass\n```") == "\ndef f(): pass\n"
    assert strip_fences("a ```\ncode\n``` b") == "\ncode\n"
    assert strip_fences("plain") == "plain"


# ----------------------------------------------------------------- episodes
def test_expert_scores_full_marks_and_answering_at_once_scores_well_below():
    env = gym.make("agentenvs/ColBench-v0", split="test")
    expert = [play(env, ColBenchExpert, seed) for seed in range(8)]
    hasty = [play(env, AnswerAtOnce, seed) for seed in range(8)]
    assert all(info["success"] and info["score"] == 1.0 for info in expert)
    assert max(info["turn"] for info in expert) <= 6
    assert sum(info["score"] for info in hasty) / len(hasty) <= 0.5
    assert all(info["turn"] == 1 for info in hasty)


def test_information_is_potential_based_and_asking_twice_earns_nothing():
    env = ColBenchEnv(split="test", reward_weights={"information": 1.0})
    env.reset(seed=3)
    facts = env.task.facts
    _, first, *_ = env.step(facts[0].question)
    _, again, *_ = env.step(facts[0].question)
    _, nothing, *_ = env.step("What is your favourite colour?")
    assert first == pytest.approx(1 / len(facts)) and again == 0.0 and nothing == 0.0


def test_state_key_covers_asked_facts_not_their_order_or_wording():
    env = ColBenchEnv(split="test")
    env.reset(seed=1)
    a, b = env.task.facts[:2]
    keys = []
    for order in ((a, b), (b, a)):
        _, info = env.reset(seed=1)
        start = info["state_key"]
        for fact in order:
            *_, info = env.step(fact.question)
        keys.append(info["state_key"])
    assert keys[0] == keys[1] != start
    *_, info = env.step("Something else entirely?")
    assert info["state_key"] == keys[0]
    _, info = env.reset(seed=2)
    assert info["state_key"] != start


def test_instructions_name_the_answer_marker_and_the_turn_limit():
    env = ColBenchEnv(split="test", max_turns=7)
    assert "I WANT TO ANSWER:" in env.instructions and "7 messages" in env.instructions


def test_invalid_message_changes_nothing_and_says_what_is_allowed():
    env = ColBenchEnv(split="test")
    _, info = env.reset(seed=0)
    obs, _, terminated, _, after = env.step("   ")
    assert after["reward_components"]["invalid_action"] == 1.0 and not terminated
    assert after["state_key"] == info["state_key"] and "I WANT TO ANSWER:" in obs


def test_last_turn_message_is_the_answer_and_privileged_holds_the_reference():
    env = ColBenchEnv(split="test", max_turns=2)
    _, info = env.reset(seed=4)
    assert info["privileged"]["reference"] == env.task.reference
    assert info["privileged"]["hidden_facts"] == [fact.answer for fact in env.task.facts]
    env.step("Anything I should know?")
    _, reward, terminated, _, info = env.step(env.task.reference)
    assert terminated and info["score"] == 1.0 and reward == 1.0 and info["success"] is True


def test_answer_marker_think_block_and_output_rules():
    env = ColBenchEnv(split="test")
    env.reset(seed=5)
    response = f"<think>plan</think>I WANT TO ANSWER:\n{env.task.reference}I WANT TO ANSWER: junk"
    *_, terminated, _, info = env.step(response)
    assert terminated and info["score"] == 1.0
    env.reset(seed=5)
    *_, info = env.step(f"ignored OUTPUT: I WANT TO ANSWER: {env.task.default_answer}")
    assert "score" in info


def test_snapshot_restores_the_exact_state_and_envs_pickle():
    env = ColBenchEnv(split="test")
    env.reset(seed=6)
    env.step(env.task.facts[0].question)
    snapshot = pickle.loads(pickle.dumps(env.snapshot()))
    cont = [env.step(fact.question)[0] for fact in env.task.facts[1:]]
    key = env.state_key
    other = copy.deepcopy(ColBenchEnv(split="test"))
    other.restore(snapshot)
    assert [other.step(fact.question)[0] for fact in other.task.facts[1:]] == cont
    assert other.state_key == key
    clone = pickle.loads(pickle.dumps(env))
    assert clone.state_key == env.state_key and clone.turn == env.turn


# ----------------------------------------------------------------- official files
def test_official_files_load_and_score_with_both_rule_sets(tmp_path):
    root = write_official(tmp_path, {"train": [OFFICIAL_ROW], "test": [OFFICIAL_ROW, OFFICIAL_ROW]})
    for scoring, full in (("sandbox", 1.0), ("reference", 2 / 3)):
        env = ColBenchEnv(split="test", data_dir=str(root), scoring=scoring)
        assert env.task_source.size("test") == 2 and env.task_source.size("train") == 1
        obs, info = env.reset(seed=1)
        assert (
            obs == OFFICIAL_ROW["problem_description"] and info["task_id"] == "colbench-official-test-00001"
        )
        reply, *_ = env.step("What rate for good service?")
        assert "0.2" in reply and len(reply) <= 400
        *_, info = env.step("I WANT TO ANSWER:" + OFFICIAL_ROW["ground_truth"])
        assert info["score"] == pytest.approx(full)


def test_answers_cannot_read_the_official_files(tmp_path):
    root = write_official(tmp_path, {"test": [OFFICIAL_ROW]})
    env = ColBenchEnv(split="test", data_dir=str(root))
    env.reset(seed=0)
    path = str(root / "backend_tasks" / "test.jsonl")
    cheat = (
        "def calculate_tip(bill, service):\n    try:\n"
        f"        open({path!r}).read()\n"
        "        return round(bill * {'good': 0.2, 'ok': 0.15}.get(service, 0), 2)\n"
        "    except OSError:\n        return -1\n"
    )
    *_, info = env.step("I WANT TO ANSWER:" + cheat)
    assert info["score"] == 0.0


def test_the_env_walks_the_official_folders_once_for_both_its_sandboxes(tmp_path, monkeypatch):
    import agentenvs.envs.colbench.backend.sandbox as sandbox_module

    root = write_official(tmp_path, {"test": [OFFICIAL_ROW]})
    walked = []
    real_walk = sandbox_module.os.walk
    monkeypatch.setattr(
        sandbox_module.os, "walk", lambda top, *a, **k: walked.append(top) or real_walk(top, *a, **k)
    )
    env = ColBenchEnv(split="test", data_dir=str(root))
    try:
        assert len(walked) == len(set(walked)) >= 1
        assert env.reference_sandbox.hide == env.sandbox.hide and str(root.resolve()) in " ".join(
            env.sandbox.hide
        )
        assert env.reference_sandbox.limits != env.sandbox.limits and not env.reference_sandbox.prewarm
    finally:
        env.close()


# ----------------------------------------------------------------- the LLM collaborator
def test_llm_collaborator_sends_colbench_prompt_and_reply_is_cut_to_400_characters():
    from agentenvs.core.chat import ChatClient
    from agentenvs.envs.colbench.collaborators import LLMCollaborator

    from fixtures.openai_server import FakeOpenAIServer

    with FakeOpenAIServer(reply=lambda body: "It costs ten dollars. " * 60) as server:
        env = ColBenchEnv(split="test", collaborator=LLMCollaborator(ChatClient(server.base_url, "sim")))
        obs, _ = env.reset(seed=0)
        reply, *_ = env.step("What does one item cost?")
        assert reply == ("It costs ten dollars. " * 60)[:400]
        [request] = server.requests
        system, user = request["messages"]
        assert system == {"role": "system", "content": "You are a helpful assistant."}
        prompt = user["content"]
        assert prompt.startswith("Your task is to simulate a human user")
        assert env.task.reference in prompt and obs in prompt
        assert prompt.endswith(
            "user:" + obs + "\n\n\n\nassistant:What does one item cost?\n\n\n\nagent:\n\n\n"
            "Now directly output your answer to the LLM agent IN TWO SENTENCES. DO NOT SAY ANYTHING ELSE."
        )
        assert request["temperature"] == 0.0


def test_llm_collaborator_failure_raises_instead_of_scoring():
    from agentenvs.core.chat import ChatClient, ChatError
    from agentenvs.envs.colbench.collaborators import LLMCollaborator

    from fixtures.openai_server import FakeOpenAIServer

    with FakeOpenAIServer(reply=lambda body: "x", fail_first=100, fail_status=500) as server:
        client = ChatClient(server.base_url, "sim", max_retries=1, backoff_s=0.01)
        env = ColBenchEnv(split="test", collaborator=LLMCollaborator(client))
        env.reset(seed=0)
        with pytest.raises(ChatError):
            env.step("What does one item cost?")


def _colbench_imports() -> dict[str, set[str]]:
    """Every agentenvs.envs.colbench module (dotted name) and the agentenvs.envs.colbench modules it
    imports."""
    import ast

    root = Path(__file__).resolve().parents[3]
    found = {}
    for path in sorted((root / "agentenvs" / "envs" / "colbench").rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
        found[module] = {name for name in imported if name.startswith("agentenvs.envs.colbench")}
    return found


def test_backend_and_frontend_never_import_each_other_and_the_shared_modules_import_neither():
    imports = _colbench_imports()
    backend, frontend = "agentenvs.envs.colbench.backend", "agentenvs.envs.colbench.frontend"
    assert {m for m in imports if m.startswith(backend + ".")} >= {
        f"{backend}.{name}" for name in ("env", "tasks", "families", "sandbox", "jail", "scoring")
    }
    assert {m for m in imports if m.startswith(frontend + ".")} >= {
        f"{frontend}.{name}" for name in ("env", "tasks", "render")
    }
    for module, imported in imports.items():
        if module.startswith(backend):
            assert not {n for n in imported if n.startswith(frontend)}, module
        elif module.startswith(frontend):
            assert not {n for n in imported if n.startswith(backend)}, module
        elif module != "agentenvs.envs.colbench":  # the registry names both envs' entry points as strings
            assert not {n for n in imported if n.startswith((backend, frontend))}, module


@pytest.mark.parametrize(
    "old", ["env", "tasks", "families", "sandbox", "jail", "scoring", "frontend_env", "pages", "render"]
)
def test_no_module_is_left_at_an_old_flat_path(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"agentenvs.envs.colbench.{old}")


@pytest.mark.parametrize(
    ("line", "a_page_task"),
    [
        ("{not json", False),
        ("[1, 2]", False),
        ('"a task"', False),
        ("null", False),
        ('{"problem_description": "p"}', False),
        ('{"problem_description": "p", "ground_truth": "g"}', True),  # a backend task needs test_cases
        (
            '{"problem_description": "p", "ground_truth": "g", "test_cases": ["f(1)"]}',
            True,
        ),  # not {name: call}
    ],
)
def test_an_official_line_that_is_not_a_task_is_refused_naming_file_and_line(tmp_path, line, a_page_task):
    from agentenvs.envs.colbench.backend.tasks import OfficialTasks
    from agentenvs.envs.colbench.frontend.tasks import OfficialPages

    for source, folder in ((OfficialTasks, "backend_tasks"), (OfficialPages, "frontend_tasks")):
        (tmp_path / folder).mkdir(exist_ok=True)
        path = tmp_path / folder / "test.jsonl"
        path.write_text(json.dumps(OFFICIAL_ROW) + "\n\n" + line + "\n", encoding="utf-8")
        if source is OfficialPages and a_page_task:
            assert len(source(tmp_path).task_ids("test")) == 2
            continue
        with pytest.raises(ValueError, match=re.escape(f"{path}:3: not a ColBench")):
            source(tmp_path)  # line 3: the blank line 2 counts

"""agentenvs eval against a server with a small context: reply budgets, stop strings, prompt fitting,
context overflow as a scored failure, settings recorded and checked, Wilson intervals."""

from __future__ import annotations

import re
import sys

import gymnasium as gym
import pytest

import agentenvs
from agentenvs.cli import main
from agentenvs.core.chat import ChatClient, ChatReply, ContextLengthError
from agentenvs.core.keys import stable_digest
from agentenvs.eval.bundle import BundleError, read_bundle
from agentenvs.eval.evaluate import (
    ContextOverflow,
    GenerationSettings,
    PromptFitter,
    restore_stop,
    run_eval,
)
from agentenvs.eval.panel import PANELS
from agentenvs.eval.statistics import wilson_interval
from leaderboard.verify import verify_submission

from fixtures import tokenizer_servers
from fixtures.openai_server import FakeOpenAIServer

SMOKE = PANELS["smoke"]
ENV_CLASSES = sorted(
    {gym.spec(entry.env_id).entry_point for entry in agentenvs.ENV_ENTRIES if entry.variant_of is None}
)
TEXTCRAFT, SEARCH, SOKOBAN = "agentenvs/TextCraft-v0", "agentenvs/Search-NQ-v0", "agentenvs/Sokoban-v0"


class SmallContextChat:
    """A backend with a context of ``context`` tokens, one token per character, refusing what overflows."""

    def __init__(self, context: int, reply: str = "<action>inventory</action>") -> None:
        self.context, self.reply = context, reply
        self.requests: list[tuple[list[dict[str, str]], dict]] = []

    def context_length(self) -> int:
        return self.context

    def count_prompt_tokens(self, messages) -> int:
        return sum(len(m["content"]) for m in messages)

    def complete(self, messages, **request):
        tokens = self.count_prompt_tokens(messages)
        if tokens + request["max_tokens"] > self.context:
            raise ContextLengthError("maximum context length exceeded")
        self.requests.append((messages, request))
        return ChatReply(self.reply, "stop", tokens, 5, 1)


def test_each_env_gets_its_papers_reply_budget_and_stop_strings_on_the_wire(tmp_path):
    with FakeOpenAIServer(reply=lambda body: "<think>x</think><answer>paris") as server:
        client = ChatClient(server.base_url, "m", max_retries=0)
        run_eval([SEARCH, SOKOBAN], client, tmp_path, spec=SMOKE, model="m", concurrency=2)
        bodies = list(server.requests)
    search = [b for b in bodies if "Question:" in b["messages"][1]["content"]]
    sokoban = [b for b in bodies if b not in search]
    assert search and all(b["max_tokens"] == 500 and b["stop"] == ["</search>", "</answer>"] for b in search)
    assert sokoban and all(b["max_tokens"] == 512 and "stop" not in b for b in sokoban)
    assert all(b["temperature"] == 0.0 and b["top_p"] == 1.0 and "seed" not in b for b in bodies)
    # the server dropped the stop string without naming it: the reply stopped inside <answer>, so it is closed
    episodes = read_bundle(tmp_path)["episodes"]
    first = {e["responses"][0] for e in episodes if e["env_id"] == SEARCH}
    assert first == {"<think>x</think><answer>paris</answer>"}
    metadata = read_bundle(tmp_path)["metadata"]
    assert metadata["settings"]["envs"][SEARCH] == {"max_tokens": 500, "stop": ["</search>", "</answer>"]}
    assert metadata["settings_digest"] == stable_digest(metadata["settings"])


def test_stop_strings_are_restored_from_stop_reason_and_applied_locally():
    stop = ["</search>", "</answer>"]
    named = ChatReply("<search>capital", "stop", 1, 1, 1, stop_reason="</search>")
    assert restore_stop(named, stop) == "<search>capital</search>"
    ignored = ChatReply("<search>a</search><information>b</information><answer>c</answer>", "length", 1, 1, 1)
    assert restore_stop(ignored, stop) == "<search>a</search>"
    by_eos = ChatReply("<answer>c", "stop", 1, 1, 1)  # ended inside an opened block: its closing tag
    assert restore_stop(by_eos, stop) == "<answer>c</answer>"
    assert restore_stop(ChatReply("plain", "stop", 1, 1, 1), []) == "plain"


def test_the_fitter_drops_the_oldest_turns_keeping_system_first_turn_and_current():
    messages = [{"role": "system", "content": "S" * 10}]
    for turn in range(6):
        messages.append({"role": "user", "content": f"o{turn}" * 5})
        messages.append({"role": "assistant", "content": f"a{turn}" * 5})
    messages.append({"role": "user", "content": "now"})
    backend = SmallContextChat(context=200)
    fitter = PromptFitter(backend, 200, max_tokens=100)  # budget 200 - 100 = 100 characters
    fitted, max_tokens = fitter.fit(messages)
    assert fitted[:3] == messages[:3] and fitted[-1] == messages[-1]
    assert fitted[3:-1] == messages[-7:-1]  # the three newest turns fit beside the first, not four
    count = backend.count_prompt_tokens
    assert count(fitted) <= 100 < count(messages[:3] + messages[-9:])
    assert max_tokens == 100
    whole, room = PromptFitter(backend, 10_000, max_tokens=100).fit(messages)
    assert whole == messages and room == 100
    with pytest.raises(ContextOverflow):
        PromptFitter(backend, 60, max_tokens=30).fit(messages)
    # without the server's count, UTF-8 bytes plus a template allowance per message stand in
    # (system 10+16, first turn 2 x 26, current 3+16 = 97; each further turn 52: two fit in 350 - 100)
    estimated, _ = PromptFitter(None, 350, max_tokens=100, token_count="estimate").fit(messages)
    assert estimated[:3] == messages[:3] and estimated[3:] == messages[-5:]

    # a reply budget larger than half the context leaves the prompt half of it; the reply gets the rest
    fitted, max_tokens = PromptFitter(backend, 200, max_tokens=4096).fit(messages)
    assert count(fitted) <= 100 and max_tokens == 200 - count(fitted)


def test_a_small_context_trims_textcraft_and_overflow_ends_episodes_as_verified_failures(tmp_path):
    goal_length = len(gym.make(TEXTCRAFT, split="test").reset(seed=0)[0])
    instructions = len(gym.make(TEXTCRAFT).unwrapped.instructions)
    backend = SmallContextChat(context=2 * (instructions + goal_length) + 400)
    report = run_eval([TEXTCRAFT], backend, tmp_path / "fits", spec=SMOKE, model="m", concurrency=1)
    assert not report.crashed
    assert any(len(messages) < 2 + 2 * len(history_turns) for messages, history_turns in _with_turns(backend))
    document = read_bundle(tmp_path / "fits")
    assert verify_submission(document).verified
    assert document["summary"]["envs"][TEXTCRAFT]["context_overflows"] == 0

    tiny = SmallContextChat(context=300)  # not even the first prompt fits
    report = run_eval([TEXTCRAFT], tiny, tmp_path / "overflow", spec=SMOKE, model="m", concurrency=1)
    assert report.played == 3 and not report.crashed and not tiny.requests
    document = read_bundle(tmp_path / "overflow")
    for episode in document["episodes"]:
        assert (episode["end_reason"], episode["turns"], episode["score"]) == ("context_overflow", 0, 0)
    assert document["summary"]["envs"][TEXTCRAFT]["context_overflows"] == 3
    verdict = verify_submission(document)
    assert verdict.verified, verdict.problems
    forged = {**document, "episodes": [{**document["episodes"][0], "score": 1.0}, *document["episodes"][1:]]}
    assert any("context overflow must fail" in p for p in verify_submission(forged).problems)


def _with_turns(backend):
    """Each request with the number of past turns the episode had then (count of earlier requests)."""
    turn = 0
    for messages, _ in backend.requests:
        if len(messages) == 2:
            turn = 0
        yield messages, range(turn)
        turn += 1


def test_a_server_refusing_the_prompt_as_too_long_ends_the_episode_not_the_run(tmp_path):
    class RefusesTheSecondTurn:  # no context_length: the harness cannot fit, the server's refusal decides
        def complete(self, messages, **request):
            if len(messages) > 2:
                raise ContextLengthError("HTTP 400: This model's maximum context length is 4096 tokens")
            return ChatReply("<action>inventory</action>", "stop", 10, 5, 1)

    backend = RefusesTheSecondTurn()
    report = run_eval([TEXTCRAFT], backend, tmp_path, spec=SMOKE, model="m", concurrency=1)
    assert report.played == 3 and not report.crashed
    document = read_bundle(tmp_path)
    assert all(e["turns"] == 1 and e["end_reason"] == "context_overflow" for e in document["episodes"])
    assert document["metadata"]["settings"]["context_length"] is None
    assert verify_submission(document).verified


def test_resume_with_other_settings_is_refused_in_one_line(tmp_path, capsys):
    backend = SmallContextChat(context=100_000, reply="<action>left</action>")
    run_eval([SOKOBAN], backend, tmp_path, spec=SMOKE, model="m", concurrency=1)
    for changed, name in (
        (GenerationSettings(history_window=2), "history_window"),
        (GenerationSettings(max_tokens=64), "envs"),
        (GenerationSettings(temperature=0.7), "temperature"),
        (GenerationSettings(max_model_len=4096), "context_length"),
    ):
        with pytest.raises(BundleError, match=f"setting {name} ") as caught:
            run_eval([SOKOBAN], backend, tmp_path, spec=SMOKE, model="m", concurrency=1, settings=changed)
        assert "\n" not in str(caught.value)
    assert run_eval([SOKOBAN], backend, tmp_path, spec=SMOKE, model="m").skipped == 3


@pytest.mark.parametrize(
    "bad",
    [
        {"max_tokens": 0},
        {"max_tokens": 2.5},
        {"max_tokens": 10**30},
        {"max_model_len": -1},
        {"history_window": -1},
        {"seed": -1},
        {"seed": True},
        {"top_p": 0.0},
        {"temperature": 3.0},
        {"temperature": float("nan")},
    ],  # fmt: skip
)
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError):
        GenerationSettings(**bad)


def test_wilson_intervals_stay_wide_for_tiny_panels():
    low, high = wilson_interval(0, 3)
    assert low == 0.0 and high == pytest.approx(0.5615, abs=1e-4)  # z²/(n + z²) for 0 of n
    low, high = wilson_interval(10, 10)
    assert low == pytest.approx(0.7225, abs=1e-4) and high == 1.0
    low, high = wilson_interval(50, 100)
    assert (low, high) == pytest.approx((0.4038, 0.5962), abs=1e-4)


def test_the_eval_table_says_when_an_env_has_fewer_than_30_episodes(tmp_path, capsys):
    with FakeOpenAIServer(reply=lambda body: "<action>left</action>") as server:
        command = ["eval", "Sokoban-v0", "--model", "m", "--base-url", server.base_url, "--panel", "smoke"]
        assert main([*command, "--out", str(tmp_path / "b"), "--max-tokens", "32", "--seed", "5"]) == 0
        assert all(b["max_tokens"] == 32 and b["seed"] == 5 for b in server.requests)
    printed = capsys.readouterr().out
    assert "fewer than 30 episodes for agentenvs/Sokoban-v0" in printed and "0% [0%, 56%]" in printed
    assert main([*command, "--out", str(tmp_path / "c"), "--max-tokens", "0"]) == 2


def test_the_board_ranks_like_with_like_and_shows_the_settings(tmp_path):
    from leaderboard.pages import board_page, ranking_group, submission_page

    rows = []
    for number, (window, reply) in enumerate([(None, "<action>left</action>"), (1, "<action>up</action>")]):
        out = tmp_path / str(number)
        settings = GenerationSettings(history_window=window)
        backend = SmallContextChat(10**5, reply)
        run_eval([SOKOBAN], backend, out, spec=SMOKE, model=f"m{number}", settings=settings)
        document = read_bundle(out)
        verdict = verify_submission(document)
        rows.append({
            "id": number, "model": f"m{number}", "model_size": "", "endpoint": "openai", "panel": "smoke",
            "created": "now", "received": "now", "submitter": "token-0", "status": "verified", "problems": [],
            "metadata": document["metadata"], "summary": verdict.summary, "families": verdict.families,
        })  # fmt: skip
    assert ranking_group(rows[0]) != ranking_group(rows[1])  # same panel and envs, other settings
    page = board_page(rows, lambda i: f"/s/{i}", "/submit")
    assert page.count('<table class="sortable board">') == 2  # one ranked table per settings
    assert "&quot;history_window&quot;: 1" in page and "&quot;history_window&quot;: null" in page
    shown = submission_page(rows[1], [], board_link="/")
    assert "&quot;history_window&quot;: 1" in shown and rows[1]["metadata"]["settings_digest"] in shown


@pytest.mark.parametrize("entry_point", ENV_CLASSES)
def test_every_env_table_states_the_reply_budget_the_harness_uses(entry_point):
    module_name, _, class_name = entry_point.partition(":")
    __import__(module_name)
    env_class = getattr(sys.modules[module_name], class_name)
    table = sys.modules[module_name].__doc__
    row = re.search(r"^max_tokens +([\d,]+) per turn(.*?)(?=^\S)", table, re.MULTILINE | re.DOTALL)
    assert row, f"{entry_point}: no max_tokens row"
    assert int(row.group(1).replace(",", "")) == env_class.reply_max_tokens
    assert all(f"``{stop}``" in row.group(2) for stop in env_class.reply_stop)
    assert ("no stop string" in row.group(2)) == (not env_class.reply_stop)


def test_how_tokens_were_counted_is_recorded_honestly(tmp_path):
    with FakeOpenAIServer(reply=lambda body: "<action>left</action>") as server:  # no /models, no /tokenize
        client = ChatClient(server.base_url, "m", max_retries=0)
        run_eval([SOKOBAN], client, tmp_path / "a", spec=SMOKE, model="m")
        given = GenerationSettings(max_model_len=100_000)
        run_eval([SOKOBAN], client, tmp_path / "b", spec=SMOKE, model="m", settings=given)
    unknown = read_bundle(tmp_path / "a")["metadata"]["settings"]
    assert (unknown["context_length"], unknown["token_count"]) == (None, "none")
    estimated = read_bundle(tmp_path / "b")["metadata"]["settings"]
    assert (estimated["context_length"], estimated["token_count"]) == (100_000, "estimate")


def test_the_eval_page_states_each_envs_reply_budget():
    from pathlib import Path

    page = " ".join(
        (Path(__file__).parents[2] / "docs" / "reference" / "evaluation.md")
        .read_text(encoding="utf-8")
        .split()
    )
    paragraph = page[page.index("## Replies and context") :][:700]
    stated = {
        "ALFWorld": 512, "WebShop": 512, "Sokoban": 512, "TextCraft": 150, "Search": 500, "BabyAI": 4096,
        "ColBench": 1024, "ColBench-Frontend": 2048,
    }  # fmt: skip
    for entry_point in ENV_CLASSES:
        module_name, _, class_name = entry_point.partition(":")
        __import__(module_name)
        env_class = getattr(sys.modules[module_name], class_name)
        longest_first = sorted(stated, key=len, reverse=True)
        family = next(name for name in longest_first if class_name.startswith(name.replace("-", "")))
        assert stated[family] == env_class.reply_max_tokens, family
    for family, tokens in stated.items():
        assert re.search(rf"{re.escape(family)}[^.;]*?\b{tokens}\b", paragraph), family


# each server's model-info and tokenizer endpoints, in its documented shapes (fixtures/tokenizer_servers.py):
# what it records, the route that counts, the special tokens its count adds
SERVERS = {
    "vllm": (lambda: tokenizer_servers.vllm("m", 100_000), "server", "POST /tokenize", 0),
    "llama.cpp": (lambda: tokenizer_servers.llama_cpp(100_000), "server", "POST /apply-template", 1),  # BOS
    "tgi": (lambda: tokenizer_servers.tgi(100_000), "server", "POST /chat_tokenize", 0),
    "sglang": (lambda: tokenizer_servers.sglang("m", 100_000), "estimate", None, 0),
}


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_each_servers_documented_tokenizer_counts_prompts_under_default_flags(name, tmp_path, capsys):
    routes, recorded, counting_route, special = SERVERS[name]
    with FakeOpenAIServer(reply=lambda body: "<action>left</action>", routes=routes()) as server:
        command = ["eval", "Sokoban-v0", "--model", "m", "--base-url", server.base_url, "--panel", "smoke"]
        assert main([*command, "--out", str(tmp_path)]) == 0, capsys.readouterr()
        calls = [route for route, _ in server.calls]
        client = ChatClient(server.base_url, "m", max_retries=0)
        prompt = [{"role": "system", "content": "push the box"}, {"role": "user", "content": "#P_O# now"}]
        counted = client.count_prompt_tokens(prompt)
    document = read_bundle(tmp_path)
    settings = document["metadata"]["settings"]
    assert (settings["context_length"], settings["token_count"]) == (100_000, recorded)
    verdict = verify_submission(document)
    assert verdict.verified, verdict.problems
    if recorded == "server":
        assert client.token_counter == name
        assert counted == tokenizer_servers.chat_tokens(prompt) + special
        assert calls.count(counting_route) > 1  # the probe, then the episodes' prompts
    else:  # SGLang's /tokenize takes text only and it renders no chat template: nothing more is asked
        assert counted is None and client.token_counter is None
        assert calls.count("POST /tokenize") == 1


BAD_ANSWERS = {
    "403": (403, {"error": "forbidden"}),
    "500 after retries": (500, {"error": "tokenizer crashed"}),
    "not JSON": (200, b"<html>tokenize</html>"),
    "count as a string": (200, {"count": "12"}),
    "count as a bool": (200, {"count": True}),
    "count zero": (200, {"count": 0}),
    "tokens not a list": (200, {"tokens": "12"}),
    "a bare list of numbers": (200, [1, 2, 3]),
    "tokens of another kind": (200, {"tokens": [{"piece": "x"}]}),
}


@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
def test_any_other_answer_falls_back_to_the_estimate_and_says_so(case, tmp_path):
    status, payload = BAD_ANSWERS[case]
    routes = {**tokenizer_servers.vllm("m", 100_000), "POST /tokenize": lambda body: (status, payload)}
    routes["POST /apply-template"] = routes["POST /chat_tokenize"] = lambda body: (status, payload)
    with FakeOpenAIServer(reply=lambda body: "<action>left</action>", routes=routes) as server:
        client = ChatClient(server.base_url, "m", max_retries=1, backoff_s=0.0)
        report = run_eval([SOKOBAN], client, tmp_path, spec=SMOKE, model="m")
        asked = len(server.calls)
    assert report.played == 3 and not report.crashed
    document = read_bundle(tmp_path)
    assert document["metadata"]["settings"]["token_count"] == "estimate"
    assert verify_submission(document).verified
    assert (
        client.token_counter is None
        and client.count_prompt_tokens([{"role": "user", "content": "x"}]) is None
    )
    # one probe (each way once, each retried once on a 5xx) and nothing after it
    assert asked == 1 + (2 if status >= 500 else 1) * 3


def test_an_older_llama_cpp_without_apply_template_gets_the_estimate(tmp_path):
    routes = tokenizer_servers.llama_cpp(100_000)
    del routes["POST /apply-template"]  # /tokenize alone cannot apply the chat template
    with FakeOpenAIServer(reply=lambda body: "<action>left</action>", routes=routes) as server:
        client = ChatClient(server.base_url, "m", max_retries=0)
        run_eval([SOKOBAN], client, tmp_path, spec=SMOKE, model="m")
        assert [route for route, _ in server.calls].count("POST /tokenize") == 1  # answered {"tokens": []}
    settings = read_bundle(tmp_path)["metadata"]["settings"]
    assert (settings["context_length"], settings["token_count"]) == (100_000, "estimate")


def test_a_server_that_stops_counting_mid_run_crashes_episodes_and_a_rerun_plays_them(tmp_path):
    broken = {"now": False}
    routes = tokenizer_servers.vllm("m", 100_000)
    counting = routes["POST /tokenize"]
    routes["POST /tokenize"] = lambda body: (503, {"error": "down"}) if broken["now"] else counting(body)
    with FakeOpenAIServer(reply=lambda body: "<action>left</action>", routes=routes) as server:
        client = ChatClient(server.base_url, "m", max_retries=1, backoff_s=0.0)
        report = run_eval(
            [SOKOBAN], client, tmp_path, spec=SMOKE, model="m", on_start=lambda n: broken.update(now=True)
        )
        assert report.played == 0 and len(report.crashed) == 3 and report.summary is None
        assert all("/tokenize" in error and "503" in error for _, error in report.crashed)
        broken["now"] = False  # the server is back: the rerun counts the same way and plays what crashed
        rerun = run_eval([SOKOBAN], ChatClient(server.base_url, "m"), tmp_path, spec=SMOKE, model="m")
    assert rerun.played == 3 and not rerun.crashed
    document = read_bundle(tmp_path)
    assert document["metadata"]["settings"]["token_count"] == "server"
    assert verify_submission(document).verified

"""ColBench frontend env: pages rendered in the system Chromium (no network, fixed viewport,
identical renders), the similarity score, the expert's 1.0, hidden design facts, official files."""

from __future__ import annotations

import json
import pickle
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from PIL import Image

if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)

from agentenvs.core import derive_rng
from agentenvs.envs.colbench.collaborators import asked_facts
from agentenvs.envs.colbench.expert import AnswerAtOnce, ColBenchExpert
from agentenvs.envs.colbench.frontend.env import ColBenchFrontendEnv
from agentenvs.envs.colbench.frontend.render import PageRenderer, html_of, page_similarity
from agentenvs.envs.colbench.frontend.tasks import DEFAULT_DESIGN, design_facts, render_page, sample_design


@pytest.fixture(scope="module")
def env():
    env = ColBenchFrontendEnv(split="test")
    yield env
    env.close()


def play(env, agent_class, seed: int) -> dict:
    obs, info = env.reset(seed=seed)
    agent = agent_class(env)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        done = terminated or truncated
    return info


def test_renders_of_the_same_page_are_identical_across_browsers():
    page = render_page({**DEFAULT_DESIGN, "business": 2})
    first, second = PageRenderer(), PageRenderer()
    try:
        a, b = first.render(page), first.render(page)
        c = second.render(page)
    finally:
        first.close()
        second.close()
    assert a.width == 800 and a.height >= 600
    assert np.array_equal(np.asarray(a), np.asarray(b)) and np.array_equal(np.asarray(a), np.asarray(c))


def test_renderers_work_from_any_thread_and_leave_its_event_loop_free():
    import asyncio

    page = render_page({**DEFAULT_DESIGN, "business": 1})
    renders: dict[str, Image.Image] = {}

    def render_in_thread(name: str) -> None:
        renderer = PageRenderer()
        try:
            renders[name] = renderer.render(page)
            # the caller's thread holds no Playwright loop: a fresh asyncio loop still runs here
            renders[name + "-loop"] = asyncio.run(asyncio.sleep(0, result=True))
        finally:
            renderer.close()

    threads = [threading.Thread(target=render_in_thread, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert renders["a-loop"] is True and renders["b-loop"] is True
    assert np.array_equal(np.asarray(renders["a"]), np.asarray(renders["b"]))


def test_a_batch_renders_on_the_pool_in_order_with_the_pixels_of_single_renders():
    pages = [render_page({**DEFAULT_DESIGN, "business": business}) for business in range(6)]
    single, pool = PageRenderer(pages=1), PageRenderer(pages=3)
    try:
        alone = [np.asarray(single.render(page)) for page in pages]
        batch = pool.render_many(pages + pages[:2])
        assert pool.open_pages == 3  # never more pages than the pool holds
        shared: dict[int, Image.Image] = {}
        threads = [
            threading.Thread(target=lambda i=i: shared.__setitem__(i, pool.render(pages[i % 6])))
            for i in range(9)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        single.close()
        pool.close()
    assert [np.array_equal(a, np.asarray(b)) for a, b in zip(alone + alone[:2], batch, strict=False)] == [
        True
    ] * 8
    assert all(np.array_equal(alone[i % 6], np.asarray(shared[i])) for i in range(9))
    assert len({a.tobytes() for a in alone}) == 6  # the pages differ, so order is checked
    assert pool.open_pages == 0
    with pytest.raises(ValueError, match="pages must be >= 1"):
        PageRenderer(pages=0)


def test_every_request_outside_the_page_is_blocked():
    hits = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    renderer = PageRenderer()
    try:
        renderer.render(
            f'<html><head><link rel="stylesheet" href="{base}/style.css"></head>'
            f'<body><img src="{base}/image.png"><iframe src="{base}/frame"></iframe></body></html>'
        )
    finally:
        renderer.close()
        server.shutdown()
    assert hits == [] and renderer.blocked_requests >= 2


def test_expert_scores_one_and_answering_at_once_stays_below_the_threshold(env):
    expert = [play(env, ColBenchExpert, seed) for seed in range(4)]
    hasty = [play(env, AnswerAtOnce, seed) for seed in range(4)]
    assert all(info["score"] == 1.0 and info["success"] for info in expert)
    assert all(info["score"] < env.success_threshold and not info["success"] for info in hasty)
    assert max(info["turn"] for info in expert) <= env.max_turns


def test_an_answer_without_a_page_scores_zero(env):
    env.reset(seed=1)
    *_, terminated, _, info = env.step("I WANT TO ANSWER: a blue page with a big title")
    assert terminated and info["score"] == 0.0
    # ColBench compared a black image instead, which would pay for answering nothing:
    black = Image.new("RGB", (224, 224), "black")
    assert page_similarity(black, env.reference_render()) > 0.05


def test_similarity_is_one_for_identical_images_and_drops_with_differences():
    base = Image.new("RGB", (800, 600), "white")
    changed = base.copy()
    changed.paste(Image.new("RGB", (800, 100), "red"), (0, 0))
    assert page_similarity(base, base.copy()) == 1.0
    assert 0.0 < page_similarity(base, changed) < 1.0
    assert page_similarity(base, Image.new("RGB", (800, 1200), "white")) == 1.0  # padded with white


def test_design_fact_questions_reach_their_facts():
    for draw in range(20):
        facts = design_facts(sample_design(derive_rng("test-design", draw)))
        for fact in facts:
            assert asked_facts(facts, fact.question) == (fact.key,)


def test_html_is_extracted_as_colbench_does():
    assert html_of("Sure! <html><body>x</body></html> hope it helps") == "<html><body>x</body></html>"
    assert html_of("<body class='a'>y</body>") == "<body class='a'>y</body>"
    assert html_of("no page here") is None


def test_env_pickles_without_its_browser_and_renders_again(env):
    env.reset(seed=2)
    env.reference_render()
    clone = pickle.loads(pickle.dumps(env))
    assert env.renderer.open_pages >= 1 and clone.renderer.open_pages == 0
    *_, info = clone.step("I WANT TO ANSWER:" + clone.task.reference)
    assert info["score"] == 1.0
    clone.close()


def test_official_frontend_files_load(tmp_path):
    folder = tmp_path / "frontend_tasks"
    folder.mkdir()
    row = {
        "problem_description": "A page for my bakery.",
        "ground_truth": render_page({**DEFAULT_DESIGN, "business": 4}),
    }
    (folder / "test.jsonl").write_text(json.dumps(row) + "\n")
    env = ColBenchFrontendEnv(split="test", data_dir=str(tmp_path))
    try:
        obs, info = env.reset(seed=0)
        assert obs == row["problem_description"] and info["task_id"] == "colbench-page-official-test-00000"
        *_, info = env.step("I WANT TO ANSWER:" + row["ground_truth"])
        assert info["score"] == 1.0
    finally:
        env.close()


def test_clip_similarity_from_a_local_checkpoint(tmp_path):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from agentenvs.envs.colbench.frontend.render import ClipSimilarity

    vision = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_attention_heads": 2,
        "num_hidden_layers": 1,
        "image_size": 32,
        "patch_size": 8,
    }
    text = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_attention_heads": 2,
        "num_hidden_layers": 1,
        "vocab_size": 100,
    }
    config = transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)
    transformers.CLIPModel(config).save_pretrained(tmp_path)
    transformers.CLIPImageProcessor(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    ).save_pretrained(tmp_path)
    similarity = ClipSimilarity(tmp_path)
    red, blue = Image.new("RGB", (64, 64), "red"), Image.new("RGB", (64, 64), "blue")
    assert similarity(red, red.copy()) == pytest.approx(1.0, abs=1e-5)
    assert similarity(red, blue) < 1.0 - 1e-4


def test_the_last_page_shown_in_any_turn_is_the_answer(env):
    env.reset(seed=3)
    *_, info = env.step("Something like this? " + env.task.reference)
    assert "score" not in info
    *_, info = env.step("I WANT TO ANSWER: the page above")
    assert info["score"] == 1.0


def test_llm_design_collaborator_sees_both_renders_as_colbench_sent_them():
    from agentenvs.core.chat import ChatClient
    from agentenvs.envs.colbench.collaborators import DESIGN_SIMULATOR_PROMPT, LLMDesignCollaborator

    from fixtures.openai_server import FakeOpenAIServer

    with FakeOpenAIServer(reply=lambda body: "Make the header red. " * 80) as server:
        env = ColBenchFrontendEnv(
            split="test", collaborator=LLMDesignCollaborator(ChatClient(server.base_url, "vlm"))
        )
        try:
            env.reset(seed=0)
            reply, *_ = env.step("Is this close? " + env.task.default_answer)
            assert reply == ("Make the header red. " * 80)[:1000]
            env.step("What colour do you want?")
        finally:
            env.close()
        shown, not_shown = server.requests
    [message] = shown["messages"]
    texts = [part.get("text") for part in message["content"]]
    assert texts[0] == DESIGN_SIMULATOR_PROMPT
    assert texts[1] == "Below is the design the agent is referring to." and texts[3].startswith(
        "Below is the ground"
    )
    assert message["content"][2]["image_url"]["url"].startswith("data:image;base64,")
    assert [part.get("text") for part in not_shown["messages"][0]["content"]][1] == (
        "The agent did not provide any visualization."
    )


@pytest.mark.parametrize("limit_ms", [1, 60])
def test_an_answer_page_too_slow_to_render_scores_zero_and_is_counted(env, monkeypatch, limit_ms):
    # a hostile answer (200k nested tags takes over 10 s to lay out) must not raise from step():
    # with the render limit cut, any answer page is such a page (whichever limit trips first, the
    # capture's or the page load's)
    from agentenvs.envs.colbench.frontend import render

    env.reset(seed=3)
    env.reference_png()  # the reference is rendered (and cached) under the normal limit
    before = env.unrenderable_answers
    monkeypatch.setattr(render, "RENDER_TIMEOUT_MS", limit_ms)
    big = "<html><body>" + "<div>" * 20_000 + "x" + "</div>" * 20_000 + "</body></html>"
    obs, reward, terminated, _, info = env.step(f"I WANT TO ANSWER: {big}")
    assert terminated and info["score"] == 0.0 and reward == 0.0
    assert obs.startswith("Your page could not be rendered (") and obs.endswith("similarity 0.000")
    assert env.unrenderable_answers == before + 1
    monkeypatch.undo()
    env.reset(seed=3)  # the pool replaced the page: the next answer renders as before
    page = "<html><body><h1>Hello</h1></body></html>"
    *_, info = env.step(f"I WANT TO ANSWER: {page}")
    assert 0.0 < info["score"] <= 1.0

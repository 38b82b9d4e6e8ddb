"""The official ``openai`` client (pinned in the test extra) against agentenvs.agents.openai_server.

Each test is one thing the client does against vLLM: stream, send content
parts, stop at a string, sample n choices, honour seed, top_p and the token
limits, list the model with its context, and get a 400 with a reason for
whatever the server does not do.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("torch")
from agentenvs.agents.local import TransformersChat  # noqa: E402
from agentenvs.agents.openai_server import create_app  # noqa: E402
from agentenvs.core.chat import ChatClient, ContextLengthError  # noqa: E402
from baselines.tiny import save_chat_model  # noqa: E402

from fixtures.app_server import serving  # noqa: E402

PROMPT = [{"role": "system", "content": "push the box"}, {"role": "user", "content": "#####\n#P_O#\n#####"}]
CONTEXT = 512


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-chat")
    save_chat_model(str(folder), ["#####\n#P_O#\n#####", "push the box up down left right"], vocab_size=200)
    return folder


@pytest.fixture(scope="module")
def server(model_folder):
    chat = TransformersChat.from_pretrained(str(model_folder), max_model_len=CONTEXT)
    with serving(create_app(chat, "tiny")) as url:
        yield url, openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)


def create(client, **kwargs):
    return client.chat.completions.create(model="tiny", messages=kwargs.pop("messages", PROMPT), **kwargs)


def test_streaming_sends_server_sent_events_that_join_to_the_reply(server):
    _, client = server
    whole = create(client, max_tokens=12, temperature=0)
    usage = {"include_usage": True}
    chunks = list(create(client, max_tokens=12, temperature=0, stream=True, stream_options=usage))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content and len(chunks) > 3
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason]
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert chunks[-1].usage.prompt_tokens == whole.usage.prompt_tokens


def streamed(client, **kwargs):
    """Per choice index: the joined text, the finish reason and the stop reason; and the usage."""
    texts, finishes, usage = {}, {}, None
    for chunk in create(client, stream=True, stream_options={"include_usage": True}, **kwargs):
        usage = chunk.usage or usage
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
            if choice.finish_reason:
                finishes[choice.index] = (choice.finish_reason, choice.model_extra.get("stop_reason"))
    return texts, finishes, usage


def test_a_stream_joins_to_the_same_reply_with_stop_strings_limits_and_n(server):
    _, client = server
    free = create(client, max_tokens=24, temperature=1.0, seed=11).choices[0].message.content
    cases = [
        {"max_tokens": 24, "temperature": 1.0, "seed": 11, "stop": [free[6:9], "never-there"]},
        {"max_tokens": 24, "temperature": 1.0, "seed": 11, "stop": "never-there"},
        {"max_tokens": 3, "temperature": 1.0, "seed": 11},
        {"max_tokens": 12, "temperature": 1.0, "seed": 5, "n": 2, "stop": [free[2:4]]},
    ]
    for case in cases:
        whole = create(client, **case)
        texts, finishes, usage = streamed(client, **case)
        assert texts == {c.index: c.message.content for c in whole.choices}, case
        assert finishes == {c.index: (c.finish_reason, c.model_extra["stop_reason"]) for c in whole.choices}
        assert (usage.prompt_tokens, usage.completion_tokens) == (
            whole.usage.prompt_tokens,
            whole.usage.completion_tokens,
        )
    stopped = create(client, **cases[0]).choices[0]
    assert stopped.finish_reason == "stop" and stopped.message.content == free[: free.index(free[6:9])]


class GatedModel:
    """The model, with a gate in generation: at its 6th new token ``generate`` waits (10 s at most) until
    the client has received a chunk of text; records when generation ended."""

    def __init__(self, model, client_has_text: threading.Event, events: list[str]) -> None:
        self.model, self.client_has_text, self.events = model, client_has_text, events

    def generate(self, *args, streamer=None, **kwargs):
        gate = self

        class Gate:  # transformers' streamer interface: put(prompt), put(token) per step, end()
            puts = 0

            def put(self, value):
                if streamer is not None:
                    streamer.put(value)
                Gate.puts += 1
                if Gate.puts == 7:  # the prompt, then the 6th new token
                    gate.client_has_text.wait(timeout=10)

            def end(self):
                if streamer is not None:
                    streamer.end()

        output = self.model.generate(*args, streamer=Gate(), **kwargs)
        self.events.append("generation ended")
        return output

    def __getattr__(self, name):
        return getattr(self.model, name)


def test_a_stream_sends_text_before_generation_ends(model_folder):
    chat = TransformersChat.from_pretrained(str(model_folder), max_model_len=CONTEXT)
    client_has_text, events = threading.Event(), []
    chat.model = GatedModel(chat.model, client_has_text, events)
    with serving(create_app(chat, "tiny")) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
        text = ""
        for chunk in create(client, max_tokens=16, temperature=1.0, seed=3, stream=True):
            piece = chunk.choices[0].delta.content if chunk.choices else None
            if piece and not client_has_text.is_set():
                events.append("client received text")
                client_has_text.set()
            text += piece or ""
        whole = create(client, max_tokens=16, temperature=1.0, seed=3)
    assert whole.usage.completion_tokens == 16  # long enough to pass the gate
    assert events[:2] == ["client received text", "generation ended"]
    assert text == whole.choices[0].message.content


def test_content_as_a_list_of_text_parts_reads_as_the_joined_string(server):
    _, client = server
    halves = [{"type": "text", "text": "#####\n"}, {"type": "text", "text": "#P_O#\n#####"}]
    parts = [PROMPT[0], {"role": "user", "content": halves}]
    as_parts = create(client, messages=parts, max_tokens=8, temperature=0)
    as_string = create(client, max_tokens=8, temperature=0)
    assert as_parts.choices[0].message.content == as_string.choices[0].message.content
    image = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]
    with pytest.raises(openai.BadRequestError, match="text"):
        create(client, messages=image, max_tokens=4)


def test_a_stop_string_ends_the_reply_and_is_named(server):
    _, client = server
    free = create(client, max_tokens=24, temperature=0).choices[0].message.content
    stop = free[5:8]
    assert len(stop) == 3
    stopped = create(client, max_tokens=24, temperature=0, stop=[stop, "never-there"]).choices[0]
    assert stopped.message.content == free[: free.index(stop)]
    assert stopped.finish_reason == "stop" and stopped.model_extra["stop_reason"] == stop
    one_string = create(client, max_tokens=24, temperature=0, stop=stop)
    assert one_string.choices[0].message.content == stopped.message.content


def test_n_seed_and_unseeded_sampling(server):
    _, client = server
    sampled = create(client, max_tokens=16, temperature=1.0, n=2, seed=7)
    texts = [choice.message.content for choice in sampled.choices]
    assert [choice.index for choice in sampled.choices] == [0, 1] and texts[0] != texts[1]
    again = create(client, max_tokens=16, temperature=1.0, n=2, seed=7)
    assert [choice.message.content for choice in again.choices] == texts
    assert sampled.usage.completion_tokens == sum(
        create(client, max_tokens=16, temperature=1.0, seed=seed).usage.completion_tokens for seed in (7, 8)
    )
    unseeded = {create(client, max_tokens=16, temperature=1.0).choices[0].message.content for _ in range(3)}
    assert len(unseeded) == 3


def test_top_p_and_the_token_limits_are_honoured(server):
    _, client = server
    greedy = create(client, max_tokens=10, temperature=0).choices[0].message.content
    nucleus_of_one = create(client, max_tokens=10, temperature=1.0, top_p=1e-6, seed=3)
    assert nucleus_of_one.choices[0].message.content == greedy
    for limit in ({"max_tokens": 3}, {"max_completion_tokens": 3}):
        reply = create(client, temperature=0, **limit)
        assert reply.usage.completion_tokens <= 3
        assert reply.choices[0].finish_reason == ("length" if reply.usage.completion_tokens == 3 else "stop")


def test_unsupported_fields_get_a_400_naming_them_neutral_values_pass(server):
    _, client = server
    for field, value in (("frequency_penalty", 0.5), ("presence_penalty", 1.0), ("logprobs", True)):
        with pytest.raises(openai.BadRequestError, match=field):
            create(client, max_tokens=4, **{field: value})
    assert create(client, max_tokens=4, frequency_penalty=0, presence_penalty=0, logprobs=False).choices
    with pytest.raises(openai.BadRequestError, match="disagree"):
        create(client, max_tokens=4, max_completion_tokens=5)
    with pytest.raises(openai.BadRequestError, match="unknown field 'best_of'"):
        create(client, max_tokens=4, extra_body={"best_of": 2})


def test_models_report_the_context_and_a_long_prompt_is_refused_as_vllm_does(server):
    url, client = server
    (card,) = client.models.list().data
    assert card.id == "tiny" and card.model_extra["max_model_len"] == CONTEXT
    with pytest.raises(openai.BadRequestError, match="maximum context length is 512 tokens"):
        create(client, max_tokens=CONTEXT)
    long = [{"role": "user", "content": "#P_O# " * 400}]
    with pytest.raises(openai.BadRequestError, match="maximum context length"):
        create(client, messages=long, max_tokens=1)
    body = json.dumps({"model": "tiny", "messages": PROMPT}).encode()
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(f"{url}/tokenize", data=body, headers=headers)
    counted = json.loads(urllib.request.urlopen(request).read())
    assert counted["count"] == create(client, max_tokens=1).usage.prompt_tokens == len(counted["tokens"])
    assert counted["max_model_len"] == CONTEXT
    ours = ChatClient(f"{url}/v1", "tiny", max_retries=0)
    with pytest.raises(ContextLengthError, match="maximum context length"):
        ours.complete(long, max_tokens=1)
    assert ours.context_length() == CONTEXT
    assert ours.count_prompt_tokens(PROMPT) == counted["count"] and ours.token_counter == "vllm"
    assert ChatClient(f"{url}/v1", "another", max_retries=0).context_length() is None
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="other", messages=PROMPT, max_tokens=1)


HOSTILE = [
    (
        "/v1/chat/completions",
        '{"messages": [{"role": "user", "content": "\\ud800 hi"}], "max_tokens": 2}',
        "surrogate",
    ),
    (
        "/v1/chat/completions",
        '{"messages": [{"role": "user", "content": [{"type": "text", "text": "\\udfff"}]}]}',
        "surrogate",
    ),
    (
        "/v1/chat/completions",
        '{"messages": [{"role": "user", "content": "x"}], "stop": "\\ud800"}',
        "surrogate",
    ),
    ("/tokenize", '{"prompt": "\\udfff x"}', "surrogate"),
    (
        "/v1/chat/completions",
        '{"messages": [{"role": "user", "content": "x"}], "max_tokens": 1' + "0" * 30 + "}",
        "context",
    ),
    (
        "/v1/chat/completions",
        '{"messages": [{"role": "user", "content": "x"}], "max_tokens": 2.5}',
        "integer",
    ),
    ("/v1/chat/completions", '{"messages": [{"role": "user", "content": "x"}], "n": 1' + "0" * 30 + "}", "n"),
    ("/v1/chat/completions", '{"messages": [{"role": "user", "content": "x"}], "stop": [["x"]]}', "stop"),
    (
        "/v1/chat/completions",
        '{"messages": [{"role": "user", "content": "x"}], "temperature": NaN}',
        "temperature",
    ),
    ("/v1/chat/completions", '{"messages": [{"role": "user", "content": "x"}], "seed": -1}', "seed"),
    ("/v1/chat/completions", '{"messages": [{"role": "tool", "content": "x"}]}', "role"),
    ("/v1/chat/completions", '{"messages": ' + "[" * 200_000 + "]" * 200_000 + "}", ""),
    ("/v1/chat/completions", "[1, 2]", "object"),
]


@pytest.mark.parametrize(("path", "raw", "reason"), HOSTILE)
def test_hostile_requests_get_a_400_with_a_reason_never_a_500(server, path, raw, reason):
    url, _ = server
    request = urllib.request.Request(
        url + path, data=raw.encode(), headers={"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)
    assert refused.value.code == 400
    assert reason in refused.value.read().decode()


def test_bidi_and_zero_width_characters_are_ordinary_text(server):
    _, client = server
    reply = create(client, messages=[{"role": "user", "content": "\u202e\u200b#P_O#\u2066"}], max_tokens=3)
    assert reply.usage.prompt_tokens > 0 and reply.choices[0].finish_reason in ("stop", "length")

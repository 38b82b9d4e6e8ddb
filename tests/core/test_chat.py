"""The OpenAI-compatible chat client against a real HTTP server on localhost."""

from __future__ import annotations

import pickle
import socket
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentenvs.core.chat import ChatClient, ChatError, parse_completion

from fixtures.openai_server import FakeOpenAIServer


def test_reply_text_usage_and_request_body():
    with FakeOpenAIServer(reply=lambda body: f"echo: {body['messages'][-1]['content']}") as server:
        client = ChatClient(server.base_url, "tiny", max_tokens=32, extra_body={"seed": 3})
        reply = client.complete(
            [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
        )
        assert reply.text == "echo: hi"
        assert reply.finish_reason == "stop"
        assert reply.prompt_tokens == 3 and reply.completion_tokens == 2
        assert reply.attempts == 1 and not reply.cached
        (body,) = server.requests
        assert body == {
            "model": "tiny",
            "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
            "temperature": 0.0,
            "max_tokens": 32,
            "seed": 3,
        }


def test_retries_retryable_failures_then_succeeds():
    with FakeOpenAIServer(reply=lambda body: "ok", fail_first=2, fail_status=503) as server:
        client = ChatClient(server.base_url, "m", max_retries=3, backoff_s=0.001)
        reply = client.complete([{"role": "user", "content": "q"}])
        assert reply.text == "ok" and reply.attempts == 3
        assert client.stats.retries == 2 and client.stats.failures == 0


def test_outage_is_a_clear_error_after_the_allowed_attempts():
    with FakeOpenAIServer(reply=lambda body: "never", fail_first=100, fail_status=500) as server:
        client = ChatClient(server.base_url, "m", max_retries=2, backoff_s=0.001)
        with pytest.raises(ChatError, match="no answer after 3 attempts"):
            client.complete([{"role": "user", "content": "q"}])
        assert len(server.requests) == 3 and client.stats.failures == 1


def test_client_errors_are_not_retried():
    with FakeOpenAIServer(api_key="secret") as server:
        client = ChatClient(server.base_url, "m", api_key="wrong", max_retries=3, backoff_s=0.001)
        with pytest.raises(ChatError, match="HTTP 401"):
            client.complete([{"role": "user", "content": "q"}])
        assert client.stats.requests == 1
        assert (
            ChatClient(server.base_url, "m", api_key="secret")
            .complete([{"role": "user", "content": "x"}])
            .text
            == "x"
        )


def test_unreachable_endpoint_raises_chat_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = ChatClient(f"http://127.0.0.1:{port}/v1", "m", max_retries=1, backoff_s=0.001, timeout_s=2)
    with pytest.raises(ChatError, match="ConnectionRefusedError|URLError"):
        client.complete([{"role": "user", "content": "q"}])


def test_cache_answers_identical_requests_once():
    with FakeOpenAIServer() as server:
        client = ChatClient(server.base_url, "m", cache_size=2)
        first = client.complete([{"role": "user", "content": "same"}])
        again = client.complete([{"role": "user", "content": "same"}])
        assert (first.cached, again.cached) == (False, True) and again.text == first.text
        client.complete([{"role": "user", "content": "b"}])
        client.complete([{"role": "user", "content": "c"}])  # evicts "same" (LRU of 2)
        client.complete([{"role": "user", "content": "same"}])
        assert len(server.requests) == 4 and client.stats.cache_hits == 1


def test_one_client_serves_many_threads_and_pickles():
    with FakeOpenAIServer() as server:
        client = ChatClient(server.base_url, "m")
        with ThreadPoolExecutor(8) as pool:
            texts = list(
                pool.map(lambda i: client.complete([{"role": "user", "content": str(i)}]).text, range(32))
            )
        assert texts == [str(i) for i in range(32)]
        copy = pickle.loads(pickle.dumps(client))
        assert copy.complete([{"role": "user", "content": "after"}]).text == "after"


@pytest.mark.parametrize("raw", [b"not json", b"{}", b'{"choices": []}', b'{"choices": [{"message": {}}]}'])
def test_malformed_bodies_are_chat_errors(raw):
    with pytest.raises(ChatError, match="not a chat completion"):
        parse_completion(raw)


def test_bad_arguments():
    with pytest.raises(ValueError, match="http"):
        ChatClient("localhost:8000", "m")
    with pytest.raises(ValueError):
        ChatClient("http://x", "m", timeout_s=0)

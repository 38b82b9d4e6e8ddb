"""The retrieval server: Search-R1's JSON, bad input, overload, batching, the client, a short load test."""

from __future__ import annotations

import asyncio
import json
import pickle
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest

from retrieval_index import BM25Retriever, Corpus, Passage
from retrieval_index.client import RemoteRetriever, RemoteRetrieverError
from retrieval_index.server import ServerLimits, ServerThread, create_app

from fixtures.app_server import free_port
from fixtures.search_r1_client import search_r1_information

TOPICS = ["river", "mountain", "piano", "violin", "rocket", "planet", "bread", "cheese", "chess", "tennis"]


def passages(count: int = 200) -> list[Passage]:
    rng = np.random.default_rng(0)
    out = []
    for row in range(count):
        words = rng.choice(TOPICS, size=12)
        out.append(Passage(id=str(row), title=f'The "{TOPICS[row % 10]}" page {row}', text=" ".join(words)))
    return out


@pytest.fixture(scope="module")
def bm25(tmp_path_factory):
    root = tmp_path_factory.mktemp("server")
    corpus = Corpus.from_passages(passages(), root / "corpus")
    return BM25Retriever.build(corpus, root / "bm25")


@pytest.fixture(scope="module")
def server(bm25):
    with ServerThread(create_app(bm25, kind="bm25")) as url:
        yield url


def search_r1_bm25_row(contents: str) -> dict[str, str]:
    """Search-R1's BM25Retriever row for a stored document (retrieval_server.py @a14dc3a)."""
    return {
        "title": contents.split("\n")[0].strip('"'),
        "text": "\n".join(contents.split("\n")[1:]),
        "contents": contents,
    }


def test_response_is_search_r1_json_field_by_field(server, bm25):
    queries = ["river piano", "rocket planet cheese"]
    body = httpx.post(
        f"{server}/retrieve", json={"queries": queries, "topk": 4, "return_scores": True}
    ).json()
    expected = bm25.retrieve(queries, 4)
    assert list(body) == ["result"]
    assert len(body["result"]) == len(queries)
    for items, hits in zip(body["result"], expected, strict=False):
        assert len(items) == 4
        for item, hit in zip(items, hits, strict=False):
            assert list(item) == ["document", "score"]
            assert isinstance(item["score"], float)
            assert item["score"] == pytest.approx(hit.score)
            contents = hit.passage.contents
            assert item["document"] == {
                "title": hit.passage.title,
                "text": hit.passage.text,
                "contents": contents,
            }
    # titles here hold no quotes at their ends, where Search-R1's strip('"') and the store's split agree
    first = body["result"][0][0]["document"]
    assert first == search_r1_bm25_row(first["contents"])


@pytest.mark.parametrize("return_scores", [True, False])
def test_search_r1s_client_reads_our_bm25_answers_unchanged(server, bm25, return_scores):
    """Search-R1's reading code, given our answer, builds the <information> text its own server's gives."""
    queries = ["river piano", "violin"]
    body = httpx.post(
        f"{server}/retrieve", json={"queries": queries, "topk": 3, "return_scores": True}
    ).json()
    expected = [
        "".join(f'Doc {n}(Title: "{h.passage.title}") {h.passage.text}\n' for n, h in enumerate(hits, 1))
        for hits in bm25.retrieve(queries, 3)
    ]
    assert search_r1_information(body) == expected
    if (
        not return_scores
    ):  # Search-R1's client always asks for scores; the bare rows read through "document" too
        bare = httpx.post(f"{server}/retrieve", json={"queries": queries, "topk": 3}).json()
        assert bare["result"] == [[item["document"] for item in items] for items in body["result"]]


def test_without_scores_each_hit_is_the_row_and_topk_defaults_to_three(server):
    body = httpx.post(f"{server}/retrieve", json={"queries": ["violin"], "topk": None}).json()
    assert len(body["result"][0]) == 3
    assert all(set(row) == {"title", "text", "contents"} for row in body["result"][0])
    assert httpx.post(f"{server}/retrieve", json={"queries": ["violin"]}).json() == body


def test_single_query_form_of_verl_agent(server):
    one = httpx.post(
        f"{server}/retrieve", json={"query": "chess tennis", "topk": 2, "return_scores": True}
    ).json()
    many = httpx.post(
        f"{server}/retrieve", json={"queries": ["chess tennis"], "topk": 2, "return_scores": True}
    )
    assert one == many.json()


BAD_INPUTS = {
    "malformed JSON": (b'{"queries": ["a"', 400),
    "not an object": (b'["river"]', 422),
    "no queries": (b'{"topk": 3}', 422),
    "queries a string": (b'{"queries": "river"}', 422),
    "query a number": (b'{"queries": ["river", 7]}', 422),
    "empty list": (b'{"queries": []}', 422),
    "empty query": (b'{"queries": ["  "]}', 422),
    "megabyte query": (json.dumps({"queries": ["river " * 200_000]}).encode(), 413),
    "too many queries": (json.dumps({"queries": ["river"] * 5000}).encode(), 413),
    "topk zero": (b'{"queries": ["river"], "topk": 0}', 422),
    "topk negative": (b'{"queries": ["river"], "topk": -2}', 422),
    "topk huge": (b'{"queries": ["river"], "topk": 1000000000}', 422),
    "topk string": (b'{"queries": ["river"], "topk": "3"}', 422),
    "topk float": (b'{"queries": ["river"], "topk": 2.5}', 422),
    "topk bool": (b'{"queries": ["river"], "topk": true}', 422),
    "return_scores string": (b'{"queries": ["river"], "return_scores": "yes"}', 422),
    "not UTF-8": (b'{"queries": ["\xff\xfe"]}', 400),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_gets_a_one_line_4xx_and_the_server_keeps_serving(server, case):
    body, status = BAD_INPUTS[case]
    response = httpx.post(f"{server}/retrieve", content=body, headers={"content-type": "application/json"})
    assert response.status_code == status
    detail = response.json()["detail"]
    assert isinstance(detail, str) and detail and "\n" not in detail and len(detail) < 300
    assert httpx.get(f"{server}/health").json()["status"] == "ok"
    assert httpx.post(f"{server}/retrieve", json={"queries": ["river"], "topk": 1}).status_code == 200


def test_oversized_body_is_refused_before_reading(bm25):
    with ServerThread(create_app(bm25, kind="bm25", limits=ServerLimits(max_body_bytes=1000))) as url:
        response = httpx.post(f"{url}/retrieve", json={"queries": ["river " * 500]})
        assert response.status_code == 413
        assert "over the limit of 1000" in response.json()["detail"]


class GatedRetriever:
    """Holds every batch until the gate opens; records batch sizes; fails on the query "explode"."""

    def __init__(self, inner: BM25Retriever) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.batches: list[int] = []

    def retrieve(self, queries, topk):
        self.gate.wait(timeout=30)
        self.batches.append(len(queries))
        if "explode" in queries:
            raise RuntimeError("index file vanished")
        return self.inner.retrieve(queries, topk)


def open_gate_when(gated: GatedRetriever, app, condition) -> None:
    """Open the gate from a helper thread once ``condition(stats)`` holds (or after 30 s)."""

    def watch() -> None:
        deadline = time.monotonic() + 30
        while not condition(app.state.stats) and time.monotonic() < deadline:
            time.sleep(0.01)
        gated.gate.set()

    threading.Thread(target=watch, daemon=True).start()


async def post_all(url: str, payloads: list[dict], concurrency: int) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        return await asyncio.gather(*(client.post(f"{url}/retrieve", json=p) for p in payloads))


def test_queued_requests_are_batched(bm25):
    gated = GatedRetriever(bm25)
    app = create_app(gated, kind="bm25")
    with ServerThread(app) as url:
        open_gate_when(gated, app, lambda stats: stats.pending_queries == 40)
        payloads = [{"queries": [f"river {TOPICS[i % 10]}"], "topk": 2} for i in range(40)]
        responses = asyncio.run(post_all(url, payloads, 40))
        assert [r.status_code for r in responses] == [200] * 40
        assert sum(gated.batches) == 40
        # the first batch holds what had arrived when the batcher woke (one query, or all 40 where every
        # request was queued by then); everything that queued behind it went as one more batch
        assert len(gated.batches) <= 2
        expected = bm25.retrieve([p["queries"][0] for p in payloads], 2)
        got = [[row["contents"] for row in r.json()["result"][0]] for r in responses]
        assert got == [[hit.passage.contents for hit in hits] for hits in expected]
        health = httpx.get(f"{url}/health").json()
        assert health["batches"] == len(gated.batches) and health["pending_queries"] == 0


def test_full_queue_answers_503_with_retry_after_then_recovers(bm25):
    gated = GatedRetriever(bm25)
    limits = ServerLimits(max_pending_queries=4, retry_after_s=2)
    app = create_app(gated, kind="bm25", limits=limits)
    with ServerThread(app) as url:
        open_gate_when(gated, app, lambda stats: stats.rejected_overload == 8)
        responses = asyncio.run(post_all(url, [{"queries": ["river"]} for _ in range(12)], 12))
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [200] * 4 + [503] * 8
        refused = next(r for r in responses if r.status_code == 503)
        assert refused.headers["retry-after"] == "2"
        assert "overloaded" in refused.json()["detail"]
        assert httpx.post(f"{url}/retrieve", json={"queries": ["river"]}).status_code == 200
        assert httpx.get(f"{url}/health").json()["rejected_overload"] == 8


def test_a_failing_batch_gets_500_and_the_server_keeps_serving(bm25):
    gated = GatedRetriever(bm25)
    gated.gate.set()
    with ServerThread(create_app(gated, kind="bm25")) as url:
        response = httpx.post(f"{url}/retrieve", json={"queries": ["explode"]})
        assert response.status_code == 500
        assert response.json()["detail"] == "retrieval failed: RuntimeError: index file vanished"
        assert httpx.post(f"{url}/retrieve", json={"queries": ["river"]}).status_code == 200
        health = httpx.get(f"{url}/health").json()
        assert health["errors"] == 1 and "index file vanished" in health["last_error"]


def test_remote_retriever_returns_what_the_index_returns(server, bm25):
    remote = RemoteRetriever(server)
    queries = ["river piano", "chess", "no such word"]
    assert remote.retrieve(queries, 5) == [
        [h.__class__(passage=h.passage, score=pytest.approx(h.score), index=h.index) for h in hits]
        for hits in bm25.retrieve(queries, 5)
    ]
    clone = pickle.loads(pickle.dumps(remote))
    assert clone.retrieve(["chess"], 2) == remote.retrieve(["chess"], 2)


def test_remote_retriever_raises_on_4xx_without_retrying(server):
    remote = RemoteRetriever(server, retries=3)
    with pytest.raises(RemoteRetrieverError, match="topk must be between"):
        remote.retrieve(["river"], 0)
    assert remote.retries_used == 0


def test_remote_retriever_retries_until_the_server_comes_up(bm25):
    thread = ServerThread(create_app(bm25, kind="bm25"))
    remote = RemoteRetriever(thread.url, retries=20, backoff=0.05, timeout=5)
    threading.Timer(0.4, thread.__enter__).start()
    try:
        hits = remote.retrieve(["river"], 1)
    finally:
        while not thread.server.started:
            time.sleep(0.01)
        thread.__exit__()
    assert len(hits[0]) == 1 and remote.retries_used >= 1


def test_remote_retriever_gives_up_with_the_last_failure():
    remote = RemoteRetriever("http://127.0.0.1:9", retries=2, backoff=0.01, timeout=1)
    with pytest.raises(RemoteRetrieverError, match="no answer after 3 attempts"):
        remote.retrieve(["river"], 1)


def test_remote_retriever_reopens_a_connection_the_server_closed_without_a_retry(bm25):
    thread = ServerThread(create_app(bm25, kind="bm25"))
    port = int(thread.url.rsplit(":", 1)[1])
    remote = RemoteRetriever(thread.url, retries=0, timeout=5)
    with thread:
        first = remote.retrieve(["river"], 2)
    # a new server on the same port: the client's kept-alive connection died with the old one
    with ServerThread(create_app(bm25, kind="bm25"), port=port):
        assert remote.retrieve(["river"], 2) == first
    assert remote.retries_used == 0


def test_remote_retriever_is_shared_by_threads_each_on_its_own_connection(server, bm25):
    remote = RemoteRetriever(server)
    queries = [f"{TOPICS[i % 10]} {TOPICS[i // 10 % 10]}" for i in range(40)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda query: remote.retrieve([query], 3), queries))
    assert [[hit.index for hit in hits[0]] for hits in answers] == [
        [hit.index for hit in hits] for hits in bm25.retrieve(queries, 3)
    ]
    assert 1 < len(remote._open) <= 8
    remote.close()
    assert remote._open == [] and remote.retrieve(["chess"], 1)[0][0].passage.text


def test_remote_retriever_refuses_a_url_that_is_not_http():
    with pytest.raises(ValueError, match="not an http"):
        RemoteRetriever("127.0.0.1:8000")


def test_remote_retriever_takes_the_root_or_search_r1s_retrieve_url(server, bm25):
    """Search-R1's configs pass ``http://HOST:8000/retrieve``; ours the root. Both reach the same endpoint."""
    expected = [[hit.index for hit in hits] for hits in bm25.retrieve(["violin river"], 3)]
    for url in (server, f"{server}/", f"{server}/retrieve", f"{server}/retrieve/"):
        remote = RemoteRetriever(url)
        assert remote.url == server
        assert [[hit.index for hit in hits] for hits in remote.retrieve(["violin river"], 3)] == expected
        remote.close()
        assert pickle.loads(pickle.dumps(remote)).url == server


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8000/retrieve/extra", "http://127.0.0.1:8000/api", "http://127.0.0.1:8000/retrieve?topk=3",
     "http://127.0.0.1:8000/#retrieve", "http://127.0.0.1:8000/\u202eeveirter", "http://127.0.0.1:99999",
     "http://127.0.0.1:port/retrieve"],
)  # fmt: skip
def test_remote_retriever_refuses_any_other_path_in_one_line(url):
    with pytest.raises(ValueError) as refused:
        RemoteRetriever(url)
    assert "\n" not in str(refused.value) and repr(url) in str(refused.value)


def test_cli_serves_with_several_workers_sharing_the_index(bm25):
    """``python -m retrieval_index serve --workers 2``: two processes answer, SIGTERM stops them all."""
    port = free_port()
    command = [sys.executable, "-m", "retrieval_index", "serve", "--index", str(bm25.directory)]
    process = subprocess.Popen([*command, "--workers", "2", "--port", str(port)], start_new_session=True)
    try:
        remote = RemoteRetriever(f"http://127.0.0.1:{port}", retries=60, backoff=0.25)
        queries = ["river piano", "chess tennis"]
        assert [[h.index for h in hits] for hits in remote.retrieve(queries, 3)] == [
            [h.index for h in hits] for hits in bm25.retrieve(queries, 3)
        ]
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        workers = [pid for pid in children if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]
        assert len(workers) == 2
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)


def test_two_hundred_concurrent_clients_get_no_errors(server, bm25):
    """The load test's bounded version (benchmarks/bench_retrieval_server.py is the full one)."""
    payloads = [{"queries": [f"{TOPICS[c % 10]} {TOPICS[c // 10 % 10]}"], "topk": 3} for c in range(200)]
    responses = asyncio.run(post_all(server, payloads, 200))
    assert [r.status_code for r in responses].count(200) == len(payloads)
    expected = bm25.retrieve([p["queries"][0] for p in payloads], 3)
    assert [[row["contents"] for row in r.json()["result"][0]] for r in responses] == [
        [hit.passage.contents for hit in hits] for hits in expected
    ]

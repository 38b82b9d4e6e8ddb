"""The index served as Ray Serve replicas: the same answers as our single-process server, spread, shut down
cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from test_retrieval_server import passages

from retrieval_index import BM25Retriever, Corpus
from retrieval_index.client import RemoteRetriever
from retrieval_index.loading import open_retriever
from retrieval_index.ray_serve import REPLICA_HEADER
from retrieval_index.server import ServerLimits, ServerThread, create_app

from fixtures.app_server import free_port

pytestmark = pytest.mark.slow  # starting Ray takes 10-30 s
ROOT = Path(__file__).resolve().parents[2]
MAX_PENDING = 2  # small, so that a three-query request meets the 503 path


def require_ray_serve() -> None:
    try:
        import ray.serve  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"Ray Serve is not importable ({exc}): pip install -e '.[retrieval-ray]'")


def process_tree(pid: int) -> set[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return {pid}.union(*(process_tree(int(child)) for child in children))


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan Ray worker is reaped by init, which may take a moment)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ray")
    BM25Retriever.build(Corpus.from_passages(passages(), root / "corpus"), root / "bm25")
    return root / "bm25"


# Serve's Python proxy, and Ray 2.60's experimental HAProxy ingress straight to the replicas
INGRESS = {"proxy": {"RAY_SERVE_ENABLE_HA_PROXY": "0"}, "haproxy": {"RAY_SERVE_ENABLE_HA_PROXY": "1"}}


@pytest.fixture(scope="module", params=INGRESS.values(), ids=INGRESS.keys())
def ray_server(request, index_dir):
    """``python -m retrieval_index serve --ray-replicas 2`` as a user runs it; yields (url, process, log)."""
    require_ray_serve()
    port = free_port()
    command = [
        sys.executable, "-m", "retrieval_index", "serve", "--index", str(index_dir), "--port", str(port),
        "--ray-replicas", "2", "--ray-num-cpus", "0.5", "--max-pending", str(MAX_PENDING),
    ]  # fmt: skip
    log = index_dir.parent / f"serve-{request.param_index}.log"
    with log.open("w") as out:  # a file, not a pipe: an unread pipe would fill and block the server
        process = subprocess.Popen(
            command,
            env=dict(os.environ, PYTHONPATH=str(ROOT), **request.param),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 180
    while "\nserving " not in "\n" + log.read_text():  # printed once every replica is up
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the Ray Serve server did not come up:\n{log.read_text()}")
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}", process, log
    if process.poll() is None:  # test_sigterm_stops_ray_and_leaves_no_process did not run
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)


@pytest.fixture(scope="module")
def plain_server(index_dir):
    retriever, kind = open_retriever(index_dir)
    with ServerThread(
        create_app(retriever, kind=kind, limits=ServerLimits(max_pending_queries=MAX_PENDING))
    ) as url:
        yield url


REQUESTS = [
    {"queries": ["river piano", "rocket planet cheese"], "topk": 4, "return_scores": True},
    {"queries": ["river piano", "rocket planet cheese"], "topk": 4},
    {"queries": ["violin"], "topk": None},
    {"query": "chess tennis", "topk": 2, "return_scores": True, "with_rows": True},
]
BAD_BODIES = {
    "malformed-json": b'{"queries": ["river"',
    "not-an-object": b'["river"]',
    "no-queries": b'{"queries": []}',
    "queries-not-a-list": b'{"queries": "river"}',
    "empty-query": b'{"queries": [""]}',
    "query-not-a-string": b'{"queries": [3]}',
    "topk-zero": b'{"queries": ["river"], "topk": 0}',
    "topk-huge": b'{"queries": ["river"], "topk": 1000000}',
    "topk-a-string": b'{"queries": ["river"], "topk": "3"}',
    "return-scores-a-string": b'{"queries": ["river"], "return_scores": "yes"}',
    "query-too-long": ('{"queries": ["' + "river " * 2000 + '"]}').encode(),
}


@pytest.mark.parametrize("payload", REQUESTS, ids=["scores", "rows", "default-topk", "query-with-rows"])
def test_answers_equal_the_single_process_server(ray_server, plain_server, payload):
    url, *_ = ray_server
    through_ray = httpx.post(f"{url}/retrieve", json=payload)
    direct = httpx.post(f"{plain_server}/retrieve", json=payload)
    assert through_ray.status_code == direct.status_code == 200
    assert through_ray.json() == direct.json()


@pytest.mark.parametrize("body", BAD_BODIES.values(), ids=BAD_BODIES.keys())
def test_bad_input_gets_the_same_status_and_reason(ray_server, plain_server, body):
    url, *_ = ray_server
    through_ray = httpx.post(f"{url}/retrieve", content=body)
    direct = httpx.post(f"{plain_server}/retrieve", content=body)
    assert 400 <= through_ray.status_code < 500
    assert (through_ray.status_code, through_ray.json()) == (direct.status_code, direct.json())


def test_overload_is_503_with_retry_after(ray_server, plain_server):
    url, *_ = ray_server
    payload = {"queries": ["river", "piano", "chess"]}
    through_ray = httpx.post(f"{url}/retrieve", json=payload)
    direct = httpx.post(f"{plain_server}/retrieve", json=payload)
    assert through_ray.status_code == direct.status_code == 503
    assert through_ray.headers["retry-after"] == direct.headers["retry-after"]
    assert through_ray.json() == direct.json()


def test_health_names_the_index(ray_server, index_dir):
    url, *_ = ray_server
    health = httpx.get(f"{url}/health").json()
    assert health["status"] == "ok"
    assert health["kind"] == "bm25"
    assert str(index_dir) in health["retriever"]


def test_remote_retriever_gets_the_in_process_hits(ray_server, index_dir):
    url, *_ = ray_server
    retriever, _ = open_retriever(index_dir)
    queries = ["river piano", "bread cheese"]
    remote = RemoteRetriever(url, retries=0).retrieve(queries, 5)
    local = retriever.retrieve(queries, 5)
    assert [[(hit.index, hit.passage, hit.score) for hit in hits] for hits in remote] == [
        [(hit.index, hit.passage, pytest.approx(hit.score)) for hit in hits] for hits in local
    ]


def test_both_replicas_answer(ray_server):
    url, *_ = ray_server
    with httpx.Client() as client:
        replicas = {
            client.post(f"{url}/retrieve", json={"queries": ["river"]}).headers[REPLICA_HEADER.decode()]
            for _ in range(40)
        }
    assert len(replicas) == 2


def test_sigterm_stops_ray_and_leaves_no_process(ray_server):
    url, process, log = ray_server
    tree = process_tree(process.pid)
    assert len(tree) > 4  # the server, Ray's GCS and raylet, Serve's controller and proxy, the replicas
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 0, log.read_text()
    assert "Ray Serve stopped" in log.read_text()
    deadline = time.monotonic() + 30
    while {pid for pid in tree if running(pid)} and time.monotonic() < deadline:
        time.sleep(0.2)
    assert {pid for pid in tree if running(pid)} == set()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/health", timeout=2)

"""Load test of the retrieval server: N concurrent clients, our server against a naive one.

    python benchmarks/bench_retrieval_server.py                      # 200 clients x 20 requests, BM25 on 100k
    python benchmarks/bench_retrieval_server.py --clients 200 --requests 50 --passages 100000 --workers 2

Both servers run as their own processes on the same BM25 index over generated
passages (see bench_retrieval.py). Every client sends its requests one after
another (Search-R1's request: one query, topk 3, return_scores); all clients
run at once. Printed per server: requests, errors (any non-200 or transport
failure), p50 / p99 latency, queries/s over the whole run.

- ``retrieval_index``: ``python -m retrieval_index serve`` (micro-batched,
  bounded queue; ``--workers`` uvicorn processes sharing the mapped index).
- ``naive``: the structure of Search-R1's retrieval_server.py: a FastAPI
  endpoint with a pydantic request model that calls the retriever for each
  request on its own, one at a time.

Also printed: the same index queried in-process, one query at a time, and
through the server by one client, so the server's own cost per query shows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_retrieval import generated_passages, generated_queries

NAIVE_SERVER = r"""
import sys
import threading
from typing import List, Optional

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

from retrieval_index import BM25Retriever
from retrieval_index.server import document_row

retriever = BM25Retriever.load(sys.argv[1])
lock = threading.Lock()
app = FastAPI()


class QueryRequest(BaseModel):
    queries: List[str]
    topk: Optional[int] = None
    return_scores: bool = False


@app.post("/retrieve")
def retrieve(request: QueryRequest):
    with lock:
        hits = retriever.retrieve(request.queries, request.topk or 3)
    if request.return_scores:
        return {"result": [[{"document": document_row(h, "bm25"), "score": h.score} for h in q] for q in hits]}
    return {"result": [[document_row(h, "bm25") for h in q] for q in hits]}


@app.get("/health")
def health():
    return {"status": "ok"}


uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[3]), log_level="warning")
"""


def process_tree(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [pid] + [p for child in children for p in process_tree(int(child))]


def memory_mib(pid: int) -> tuple[float, float]:
    """RSS and PSS (shared pages split between the processes mapping them) of a process and its children."""
    rss = pss = 0.0
    for member in process_tree(pid):
        for line in Path(f"/proc/{member}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss += int(line.split()[1]) / 1024
            elif line.startswith("Pss:"):
                pss += int(line.split()[1]) / 1024
    return rss, pss


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(command: list[str], port: int) -> subprocess.Popen:
    import httpx

    process = subprocess.Popen(command, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"server {command} did not come up")


async def load(url: str, queries: list[str], clients: int, requests: int) -> dict[str, float]:
    import httpx

    latencies: list[float] = []
    errors: list[str] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:

        async def client(number: int) -> None:
            for r in range(requests):
                query = queries[(number * requests + r) % len(queries)]
                start = time.perf_counter()
                try:
                    response = await http.post(
                        f"{url}/retrieve", json={"queries": [query], "topk": 3, "return_scores": True}
                    )
                    if response.status_code != 200:
                        errors.append(str(response.status_code))
                except httpx.HTTPError as exc:
                    errors.append(type(exc).__name__)
                latencies.append((time.perf_counter() - start) * 1000)

        start = time.perf_counter()
        await asyncio.gather(*(client(n) for n in range(clients)))
        wall = time.perf_counter() - start
    return {
        "requests": len(latencies),
        "errors": len(errors),
        "error_kinds": sorted(set(errors)),
        "p50_ms": float(np.percentile(latencies, 50)),
        "p99_ms": float(np.percentile(latencies, 99)),
        "qps": len(latencies) / wall,
    }


def single_client_ms(url: str, queries: list[str]) -> float:
    import httpx

    with httpx.Client() as http:
        times = []
        for query in queries:
            start = time.perf_counter()
            http.post(
                f"{url}/retrieve", json={"queries": [query], "topk": 3, "return_scores": True}
            ).raise_for_status()
            times.append((time.perf_counter() - start) * 1000)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--requests", type=int, default=20, help="requests per client")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="uvicorn worker counts to run")
    args = parser.parse_args()

    from retrieval_index import BM25Retriever, Corpus

    queries = generated_queries(2000)
    with tempfile.TemporaryDirectory(prefix="bench_server_") as tmp:
        corpus = Corpus.from_passages(generated_passages(args.passages), Path(tmp) / "corpus")
        index = BM25Retriever.build(corpus, Path(tmp) / "bm25")
        for query in queries[:20]:
            index.retrieve([query], 3)
        times = []
        for query in queries[:200]:
            start = time.perf_counter()
            index.retrieve([query], 3)
            times.append((time.perf_counter() - start) * 1000)
        in_process = float(np.median(times))

        rows = []
        index_dir = str(Path(tmp) / "bm25")
        servers = {
            f"retrieval_index, {workers} worker{'s' if workers > 1 else ''}": [
                sys.executable,
                "-m",
                "retrieval_index",
                "serve",
                "--index",
                index_dir,
                "--workers",
                str(workers),
            ]
            for workers in args.workers
        }
        servers["naive (Search-R1's structure)"] = [sys.executable, "-c", NAIVE_SERVER, index_dir]  # fmt: skip
        for name, command in servers.items():
            port = free_port()
            process = start_server([*command, "--port", str(port)], port)
            try:
                url = f"http://127.0.0.1:{port}"
                single = single_client_ms(url, queries[:200])
                result = asyncio.run(load(url, queries, args.clients, args.requests))
                result["rss_mib"], result["pss_mib"] = memory_mib(process.pid)
            finally:
                process.terminate()
                process.wait()
            rows.append({"server": name, "single_ms": single, **result})

    print(
        f"BM25 over {args.passages:,} generated passages; {args.clients} concurrent clients x {args.requests} requests"
    )
    print(f"in-process retrieve, one query: p50 {in_process:.2f} ms")
    for r in rows:
        if r["error_kinds"]:
            print(f"{r['server']} errors: {r['error_kinds']}")
    print("| server | requests | errors | p50 ms | p99 ms | q/s | one client p50 ms | RSS / PSS MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['server']} | {r['requests']} | {r['errors']} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
              f"{r['qps']:.0f} | {r['single_ms']:.2f} | {r['rss_mib']:.0f} / {r['pss_mib']:.0f} |")  # fmt: skip
    naive = rows[-1]
    for row in rows[:-1]:
        print(f"q/s ratio {row['server']} / naive: {row['qps'] / naive['qps']:.2f}")


if __name__ == "__main__":
    main()

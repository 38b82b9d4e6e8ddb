"""Serve an index as Ray Serve replicas: the same ``/retrieve`` and ``/health`` API, on one machine or many.

Each replica opens the same index directory memory-mapped and runs our
server's app (:func:`retrieval_index.server.create_app`: its JSON, its
micro-batching, its 503 with ``Retry-After`` and its 4xx reasons) behind
Ray Serve's HTTP proxy, which spreads requests over the replicas. On one
node the replicas share the index's pages through the OS page cache; on a
cluster every node that holds a replica reads the index from the same path
(a shared filesystem, or a copy at the same place on each node) and runs a
proxy on the same port.

From the command line::

    python -m retrieval_index serve --index DIR --ray-replicas 4 --port 8000
    # on an existing cluster (`ray start --head` on one node, `ray start --address HEAD:6379` on the others):
    python -m retrieval_index serve --index DIR --ray-replicas 16 --ray-address auto --host 0.0.0.0

Without ``--ray-address`` a local Ray instance is started and shut down with
the server (SIGTERM or SIGINT; a SIGKILL leaves some of Ray's agents
running). With it, stopping the server deletes only its own Serve
application and leaves the cluster, and Serve itself, running; Serve's
proxies then keep the port they were first started with.

Every response carries the answering replica's id in ``x-retrieval-replica``;
``/health`` reports the counters of the replica that answers it. Ray adds
its own processes (GCS, raylet, agents, Serve's controller and proxy) and a
hop from the proxy to a replica on every request: on one machine, uvicorn
workers (``--workers``) are lighter and faster; Ray is for more replicas than
one machine holds. ``RAY_SERVE_ENABLE_HA_PROXY=1`` in the environment of the
server (or of ``ray start`` on a cluster) switches on Ray 2.60's experimental
HAProxy ingress, which forwards HTTP straight to the replicas, skipping
Serve's Python proxy: much less latency a request, but the replicas then
listen on every interface, and stopping takes about half a minute more.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import socket
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrieval_index.server import ServerLimits

APP_NAME = "retrieval_index"
REPLICA_HEADER = b"x-retrieval-replica"


@dataclass(frozen=True)
class RayServeOptions:
    """How the replicas are placed and fed (Ray Serve's deployment options a user needs)."""

    replicas: int = 2
    # Ray's default of 5 would starve the micro-batcher; our own queue bound (max_pending_queries)
    # answers 503 before a replica is swamped
    max_ongoing_requests: int = 256
    # requests the proxy holds back when every replica is at max_ongoing_requests; past it, Ray's own
    # 503 (plain text, with Retry-After when Ray sets one)
    max_queued_requests: int = 4096
    num_cpus: float = 1.0  # each replica runs one retrieval thread
    address: str | None = None  # an existing Ray cluster ("auto", "HOST:6379")

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ValueError(f"replicas must be at least 1, got {self.replicas}")
        if self.max_ongoing_requests < 1:
            raise ValueError(f"max_ongoing_requests must be at least 1, got {self.max_ongoing_requests}")
        if self.num_cpus < 0:
            raise ValueError(f"num_cpus must not be negative, got {self.num_cpus}")


class ReplicaHeader:
    """ASGI middleware naming the replica that answered, so a client can see the load spread."""

    def __init__(self, app: Any, replica: str) -> None:
        self.app = app
        self.replica = replica.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_named(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [*message.get("headers", ()), (REPLICA_HEADER, self.replica)],
                }
            await send(message)

        await self.app(scope, receive, send_named)


class RetrievalReplica:
    """One replica: the index opened memory-mapped and our server's app built around it.

    Ray Serve runs the app's lifespan when the replica starts, which starts
    the micro-batcher.
    """

    def __init__(self, index_dir: str, limits: dict[str, Any]) -> None:
        from retrieval_index.server import ServerLimits

        self.index_dir = index_dir
        self.limits = ServerLimits(**limits)

    def __serve_build_asgi_app__(self) -> Any:
        from ray import serve

        from retrieval_index.loading import open_retriever
        from retrieval_index.server import create_app

        retriever, kind = open_retriever(self.index_dir)
        app = create_app(retriever, kind=kind, limits=self.limits)
        app.add_middleware(ReplicaHeader, replica=serve.get_replica_context().replica_tag)
        return app


def application(index_dir: str, limits: ServerLimits, options: RayServeOptions) -> Any:
    """The Ray Serve application (not yet running) serving ``index_dir`` with ``options.replicas``
    replicas."""
    from ray import serve

    deployment = serve.deployment(
        serve.ingress()(RetrievalReplica),
        name="retrieval",
        num_replicas=options.replicas,
        max_ongoing_requests=options.max_ongoing_requests,
        max_queued_requests=options.max_queued_requests,
        ray_actor_options={"num_cpus": options.num_cpus},
        # a log line a request costs the replica more than a BM25 search; failures are still logged
        logging_config={"log_level": "WARNING", "enable_access_log": False},
    )
    return deployment.bind(os.path.abspath(index_dir), dataclasses.asdict(limits))


class RayServer:
    """Ray (local or an existing cluster), Serve's proxy on ``host:port``, and the replicas.

    A context manager::

        with RayServer(index_dir, port=8000, options=RayServeOptions(replicas=4)) as url:
            RemoteRetriever(url).retrieve(["query"], 3)
    """

    def __init__(
        self,
        index_dir: str,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        limits: ServerLimits | None = None,
        options: RayServeOptions | None = None,
    ) -> None:
        from retrieval_index.index_dir import index_kind
        from retrieval_index.server import ServerLimits

        index_kind(index_dir)  # a bad directory fails here, before Ray's ~20 s start, not in every replica
        self.index_dir = index_dir
        self.host = host
        self.port = port
        self.limits = limits or ServerLimits()
        self.options = options or RayServeOptions()
        self.url = f"http://{host}:{port}"
        self._owns_ray = False

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> str:
        """Start (or join) Ray, Serve's proxy and the replicas; the URL once every replica answers."""
        import ray
        from ray import serve

        self._owns_ray = self.options.address is None and not ray.is_initialized()
        if self._owns_ray:
            ensure_port_free(self.host, self.port)  # else Serve's proxy fails only after Ray's ~20 s start
            ray.init(include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
            needed = self.options.replicas * self.options.num_cpus
            available = ray.cluster_resources().get("CPU", 0)
            if needed > available:
                self.stop()
                raise ValueError(
                    f"{self.options.replicas} replicas of {self.options.num_cpus} CPUs need {needed:g} CPUs, "
                    f"this machine has {available:g}: "
                    "lower --ray-num-cpus (fractions are fine) or the replicas"
                )
        elif not ray.is_initialized():
            ray.init(address=self.options.address, logging_level=logging.WARNING, log_to_driver=False)
        try:
            serve.start(
                http_options={"host": self.host, "port": self.port}, logging_config={"log_level": "WARNING"}
            )
            serve.run(application(self.index_dir, self.limits, self.options), name=APP_NAME, route_prefix="/")
        except BaseException:
            self.stop()
            raise
        return self.url

    def stop(self) -> None:
        """Delete the application; for a Ray started here, shut Serve and Ray down."""
        import ray
        from ray import serve

        if not ray.is_initialized():
            return
        if self._owns_ray:
            serve.shutdown()
            ray.shutdown()
        else:
            serve.delete(APP_NAME)


def ensure_port_free(host: str, port: int) -> None:
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ValueError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` command's Ray options."""
    defaults = RayServeOptions()
    group = parser.add_argument_group("Ray Serve (pip install 'agentenvs[retrieval-ray]')")
    group.add_argument(
        "--ray-replicas",
        type=int,
        default=0,
        help="serve through Ray Serve with this many replicas, each mapping the same index (0: no Ray)",
    )
    group.add_argument(
        "--ray-address",
        help='an existing Ray cluster to deploy on ("auto", HOST:6379); default: start Ray on this machine',
    )
    group.add_argument(
        "--ray-max-ongoing",
        type=int,
        default=defaults.max_ongoing_requests,
        help="concurrent requests a replica takes (they are micro-batched); beyond, the proxy queues",
    )
    group.add_argument(
        "--ray-max-queued",
        type=int,
        default=defaults.max_queued_requests,
        help="requests the proxy queues when every replica is full; beyond, 503 (-1: no bound)",
    )
    group.add_argument(
        "--ray-num-cpus", type=float, default=defaults.num_cpus, help="CPUs Ray reserves for each replica"
    )


def serve_forever(args: argparse.Namespace, limits: ServerLimits) -> None:
    """Run the ``serve --ray-replicas N`` command until SIGTERM or SIGINT, then shut down cleanly."""
    stop = threading.Event()

    def stop_on_signals() -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())

    stop_on_signals()
    try:
        if args.workers > 1:
            raise ValueError("--workers and --ray-replicas exclude each other (replicas are Ray's workers)")
        options = RayServeOptions(
            replicas=args.ray_replicas,
            max_ongoing_requests=args.ray_max_ongoing,
            max_queued_requests=args.ray_max_queued,
            num_cpus=args.ray_num_cpus,
            address=args.ray_address,
        )
        server = RayServer(args.index, host=args.host, port=args.port, limits=limits, options=options)
        url = server.start()
    except (FileNotFoundError, ValueError) as exc:  # the user's arguments: one line, no traceback
        sys.exit(f"retrieval_index serve: {exc}")
    try:
        stop_on_signals()  # ray.init replaced the SIGTERM handler with one that ends the process at once
        print(f"serving {args.index} at {url} with {options.replicas} Ray Serve replicas", flush=True)
        # a signal may land on one of Ray's threads, which wakes no blocked wait: look now and then
        while not stop.wait(timeout=0.2):
            pass
    finally:
        server.stop()
    print("Ray Serve stopped", flush=True)

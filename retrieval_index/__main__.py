"""``python -m retrieval_index build|serve|relink``: build an index from a FlashRAG jsonl corpus, serve one,
or record where a moved index's corpus store, FAISS file or encoder now is."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path


def corpus_for(source: str, out_dir: Path):  # type: ignore[no-untyped-def]
    """A corpus store: ``source`` itself when it is one, else built (once) from the jsonl into
    ``out/corpus``."""
    from retrieval_index.corpus import Corpus, is_store

    if is_store(source):
        return Corpus.open(source)
    store = out_dir / "corpus"
    if is_store(store):
        print(f"corpus store {store} already built", file=sys.stderr)
        return Corpus.open(store)
    print(f"copying {source} into the passage store {store}", file=sys.stderr)
    return Corpus.build(source, store)


def build(args: argparse.Namespace) -> None:
    out = Path(args.out)
    started = time.perf_counter()
    corpus = corpus_for(args.corpus, out)
    if args.kind == "bm25":
        from retrieval_index.bm25 import BM25Retriever

        retriever = BM25Retriever.build(corpus, out, k1=args.k1, b=args.b, show_progress=True)
    else:
        from retrieval_index.dense import DenseRetriever
        from retrieval_index.encoder import Encoder

        if not args.encoder:
            sys.exit("--kind e5 needs --encoder DIR (a local encoder directory, e.g. e5-base-v2)")
        encoder = Encoder(args.encoder, batch_size=args.batch_size, max_length=args.max_length)
        if args.faiss_index:
            retriever = DenseRetriever.from_faiss(
                args.faiss_index, corpus, encoder, out, search_params=args.search_params or ""
            )
        else:
            retriever = DenseRetriever.build(
                corpus,
                encoder,
                out,
                factory=args.factory,
                search_params=args.search_params,
                shard_size=args.shard_size,
                show_progress=True,
            )
    print(f"built {retriever!r} over {len(corpus)} passages in {time.perf_counter() - started:.1f} s")


def serve(args: argparse.Namespace) -> None:
    import uvicorn

    from retrieval_index.server import ServerLimits

    limits = {
        "default_topk": args.topk,
        "max_pending_queries": args.max_pending,
        "max_batch_queries": args.max_batch,
    }
    ServerLimits(**limits)  # refuse bad values before starting any worker
    if args.ray_replicas:
        from retrieval_index.ray_serve import serve_forever

        serve_forever(args, ServerLimits(**limits))
        return
    if args.workers > 1:
        # each worker process opens the same memory-mapped index: the OS shares its pages
        os.environ["RETRIEVAL_INDEX_DIR"] = str(Path(args.index).resolve())
        os.environ["RETRIEVAL_INDEX_LIMITS"] = json.dumps(limits)
        from uvicorn.supervisors import Multiprocess

        config = uvicorn.Config(
            "retrieval_index.server:app_from_environment",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_level=args.log_level,
            timeout_keep_alive=args.keep_alive,
        )
        # what uvicorn.run does for several workers, plus TCP_NODELAY on the shared listening socket
        # (accepted connections inherit it): without it the workers' replies on a kept-alive
        # connection waited ~40 ms for the client's delayed ACK
        listener = config.bind_socket()
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        Multiprocess(config, sockets=[listener]).run()
        return
    from retrieval_index.loading import open_retriever
    from retrieval_index.server import create_app

    retriever, kind = open_retriever(args.index)
    app = create_app(retriever, kind=kind, limits=ServerLimits(**limits))
    uvicorn.run(
        app, host=args.host, port=args.port, log_level=args.log_level, timeout_keep_alive=args.keep_alive
    )


def relink(args: argparse.Namespace) -> None:
    from retrieval_index.index_dir import relink as record_places

    try:
        meta = record_places(
            args.index, corpus=args.corpus, faiss_index=args.faiss_index, encoder=args.encoder
        )
    except (OSError, ValueError) as exc:
        sys.exit(f"relink: {exc}")
    paths = {name: meta[name] for name in ("corpus", "faiss_index") if name in meta}
    if "encoder" in meta:
        paths["encoder"] = meta["encoder"]["model_dir"]
    print(f"{args.index}: " + ", ".join(f"{name} -> {path}" for name, path in paths.items()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m retrieval_index", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    b = commands.add_parser("build", help="build a BM25 or dense index from a FlashRAG jsonl corpus")
    b.add_argument(
        "--corpus", required=True, help="FlashRAG jsonl corpus (.jsonl or .jsonl.gz) or a corpus store"
    )
    b.add_argument("--kind", choices=("bm25", "e5"), required=True)
    b.add_argument("--out", required=True, help="index directory (the corpus store goes into OUT/corpus)")
    b.add_argument("--encoder", help="local encoder directory (e5-base-v2 for Search-R1's index)")
    b.add_argument(
        "--factory", default="Flat", help='FAISS index_factory string: "Flat", "HNSW64", "IVF4096,PQ64", ...'
    )
    b.add_argument("--search-params", help='FAISS search parameters, e.g. "nprobe=64" or "efSearch=256"')
    b.add_argument(
        "--faiss-index", help="serve this existing FAISS file (e.g. Search-R1's e5_Flat.index) as it is"
    )
    b.add_argument(
        "--shard-size", type=int, default=100_000, help="passages per encoded shard (the resume unit)"
    )
    b.add_argument("--batch-size", type=int, default=256, help="encoder batch size")
    b.add_argument("--max-length", type=int, default=256, help="encoder max tokens (Search-R1: 256)")
    b.add_argument("--k1", type=float, default=0.9)
    b.add_argument("--b", type=float, default=0.4)
    b.set_defaults(handler=build)

    s = commands.add_parser("serve", help="serve an index over HTTP with Search-R1's /retrieve API")
    s.add_argument("--index", required=True, help="an index directory written by build")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--workers", type=int, default=1, help="uvicorn worker processes sharing the mapped index")
    s.add_argument("--topk", type=int, default=3, help="topk when a request gives none (Search-R1: 3)")
    s.add_argument("--max-pending", type=int, default=8192, help="queued queries before answering 503")
    s.add_argument("--max-batch", type=int, default=512, help="most queries retrieved in one batch")
    s.add_argument(
        "--keep-alive",
        type=float,
        default=75,
        help=(
            "seconds an idle client connection stays open; uvicorn's 5 s default races busy clients that "
            "reuse it"
        ),
    )
    s.add_argument("--log-level", default="warning")
    from retrieval_index.ray_serve import add_arguments as add_ray_arguments

    add_ray_arguments(s)
    s.set_defaults(handler=serve)

    r = commands.add_parser(
        "relink",
        help="record new places (relative to the index) for a moved index's corpus, FAISS file or encoder",
    )
    r.add_argument("index", help="an index directory written by build")
    r.add_argument("--corpus", help="the corpus store the index was built from")
    r.add_argument("--faiss-index", help="dense indexes: the FAISS file")
    r.add_argument("--encoder", help="dense indexes: the encoder directory")
    r.set_defaults(handler=relink)

    args = parser.parse_args(argv)
    args.handler(args)


if __name__ == "__main__":
    main()

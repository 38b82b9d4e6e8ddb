"""Corpora, BM25 and dense (E5 + FAISS) indexes, and a Search-R1-compatible retrieval server.

In-process retrieval over a FlashRAG jsonl corpus::

    corpus = Corpus.build("wiki.jsonl", "store/")
    bm25 = BM25Retriever.build(corpus, "bm25/")
    bm25.retrieve(["who wrote hamlet"], topk=3)

``python -m retrieval_index build|serve`` builds indexes and serves them over
HTTP (``retrieval_index.server``); :class:`RemoteRetriever` is the client.

What lives where, each layer importing only from the layers above it:

===============================  ===========================================
``types``, ``analysis``          passages and the retriever protocol;
``ranking``                      Lucene's English analysis; ``topk`` checks,
                                 top-k order, Search-R1's BM25 parameters
``corpus``, ``encoder``          the passage store; the E5 query/passage
                                 encoder
``index_dir``                    an index directory: ``retriever.json`` read,
                                 checked and written, the paths it records
                                 (relative, relinked)
``bm25``, ``dense``, ``lucene``  the backends; none imports another, and
                                 only ``index_dir`` touches ``retriever.json``
``loading``                      opens a directory by the kind it records
``server``, ``ray_serve``,       the HTTP service, its Ray Serve replicas,
``client``, ``__main__``         its client (``types`` only), the CLI
===============================  ===========================================

May import: nothing from agentenvs: the index and server stand alone, and
the Search and WebShop families import them.
"""

from retrieval_index.bm25 import BM25Retriever
from retrieval_index.client import RemoteRetriever
from retrieval_index.corpus import Corpus, read_corpus_jsonl, write_corpus_jsonl
from retrieval_index.dense import DenseRetriever
from retrieval_index.encoder import Encoder
from retrieval_index.loading import open_retriever
from retrieval_index.lucene import PyseriniRetriever
from retrieval_index.types import Passage, RetrievedPassage, Retriever

__all__ = [
    "BM25Retriever",
    "Corpus",
    "DenseRetriever",
    "Encoder",
    "Passage",
    "PyseriniRetriever",
    "RemoteRetriever",
    "RetrievedPassage",
    "Retriever",
    "open_retriever",
    "read_corpus_jsonl",
    "write_corpus_jsonl",
]

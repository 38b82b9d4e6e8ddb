"""Corpora, BM25 and dense (E5 + FAISS) indexes, and a Search-R1-compatible retrieval server.

In-process retrieval over a FlashRAG jsonl corpus::

    corpus = Corpus.build("wiki.jsonl", "store/")
    bm25 = BM25Retriever.build(corpus, "bm25/")
    bm25.retrieve(["who wrote hamlet"], topk=3)
"""

from retrieval_index.bm25 import BM25Retriever
from retrieval_index.corpus import Corpus, read_corpus_jsonl, write_corpus_jsonl
from retrieval_index.types import Passage, RetrievedPassage, Retriever

__all__ = [
    "BM25Retriever",
    "Corpus",
    "Passage",
    "RetrievedPassage",
    "Retriever",
    "read_corpus_jsonl",
    "write_corpus_jsonl",
]

"""Sparse retrieval: BM25 with ``bm25s`` over Lucene's English analysis, memory-mapped on disk.

The defaults are Search-R1's: pyserini's Lucene BM25 with k1 = 0.9, b = 0.4
over each passage's ``contents`` (``'"title"\\ntext'``). Scores follow
Lucene's formula (``bm25s`` method ``"lucene"``): idf = ln(1 + (N − df + 0.5)
/ (df + 0.5)), term part tf / (tf + k1 · (1 − b + b · len / avg len)); a
query word repeated counts again, as in Anserini's bag-of-words queries.
Only passages sharing a word with the query are hits.

An index directory holds ``bm25s``'s files, the block bounds of its
posting lists (:class:`BlockBounds`: ``block_max.npy`` and
``block_max.json``) and ``retriever.json`` (kind, version, parameters, the
corpus store it was built from, as a path relative to the index directory:
see :mod:`retrieval_index.index_dir`); :meth:`BM25Retriever.load` maps the
score matrix and the bounds read-only, so processes share their pages.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_index.analysis import ANALYZER_VERSION, analyze_words, stemmer
from retrieval_index.corpus import Corpus
from retrieval_index.index_dir import begin_build, open_corpus_of, read_meta, relative_to_index, write_meta
from retrieval_index.ranking import SEARCH_R1_B, SEARCH_R1_K1, top_k, validate_topk
from retrieval_index.types import RetrievedPassage

# 2: block bounds saved beside the score matrix (version 1 indexes get them computed on load)
INDEX_VERSION = 2
READABLE_VERSIONS = (1, 2)
REBUILD_COMMAND = "python -m retrieval_index build --corpus CORPUS --kind bm25 --out INDEX_DIR"
# the block bounds' files in an index directory, and their format
BOUNDS_FILE = "block_max.npy"
BOUNDS_META = "block_max.json"
BOUNDS_VERSION = 1
# postings per block of the block bounds
BLOCK_SIZE = 128
MAX_BLOCK_SIZE = 2**31 - 1  # a block longer than every list is one block per list
# a later list whose smallest block bound is at least this share of its largest bounds blocks by its largest
BLOCK_GAIN = 0.9
# a query whose corpus size plus posting list lengths is at most this is scored exhaustively:
# a few numpy passes over so little cost less than MaxScore's steps per list
EXHAUSTIVE_WORK = 100_000
# before θ is known, a list longer than this first ranks only its rows that score best in it
SEED_ROWS = 65536
# a list is looked up through an array of every document when it is at most this many times as long as
# the rows looked up (else by binary search)
DENSE_LOOKUP = 4


def block_offsets(indptr: np.ndarray, size: int) -> np.ndarray:
    """Where each term's blocks of ``size`` postings start among every term's (⌈length / size⌉ per term)."""
    offsets = np.zeros(len(indptr), dtype=np.int64)
    np.cumsum((np.diff(indptr).astype(np.int64) + size - 1) // size, out=offsets[1:])
    return offsets


def digest(array: np.ndarray) -> str:
    """A digest of an array's values (as little-endian bytes of its dtype's kind and size)."""
    little_endian = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return hashlib.blake2b(little_endian.tobytes(), digest_size=16).hexdigest()


class BlockBounds:
    """The largest score in each block of ``size`` consecutive postings of every term's posting list.

    Term ``t``'s list (postings ``indptr[t]`` up to ``indptr[t + 1]``) has
    ⌈length / size⌉ blocks; block ``j`` holds its postings ``j · size`` up to
    ``(j + 1) · size``, and ``largest[offsets[t] + j]`` is their largest
    score. A row from the block's first row up to the next block's first
    row scores at most that in ``t`` (0 where ``t``'s list does not hold it).

    Saved beside the score matrix as :data:`BOUNDS_FILE` (the float32 maxima)
    and :data:`BOUNDS_META` (format version, block size, the matrix's term
    and posting counts, digests of its ``indptr`` and of the maxima), and
    checked against all of them on load: bounds that are short, corrupt or
    from another matrix are refused, never used.
    """

    def __init__(self, size: int, indptr: np.ndarray, largest: np.ndarray) -> None:
        self.size = validate_block_size(size)
        self.offsets = block_offsets(indptr, self.size)
        if largest.dtype != np.float32 or largest.shape != (int(self.offsets[-1]),):
            raise ValueError(
                f"block bounds must be {int(self.offsets[-1])} float32 values (blocks of {self.size} "
                f"postings), got {largest.shape[0] if largest.ndim == 1 else largest.shape} {largest.dtype}"
            )
        self.largest = largest
        self.terms = len(indptr) - 1
        self.postings = int(indptr[-1])

    @classmethod
    def compute(cls, data: np.ndarray, indptr: np.ndarray, size: int = BLOCK_SIZE) -> BlockBounds:
        """The bounds of a CSC score matrix (its ``data`` and ``indptr``), in one pass over ``data``."""
        size = validate_block_size(size)
        offsets = block_offsets(indptr, size)
        term_of_block = np.repeat(np.arange(len(indptr) - 1), np.diff(offsets))
        # block j of a term starts j · size postings after the term's first posting
        block_in_list = np.arange(offsets[-1]) - offsets[term_of_block]
        firsts = indptr[term_of_block].astype(np.int64) + block_in_list * size
        largest = np.maximum.reduceat(data, firsts) if len(firsts) else np.empty(0, dtype=np.float32)
        return cls(size, indptr, largest.astype(np.float32, copy=False))

    def of(self, term: int) -> np.ndarray:
        """The maxima of ``term``'s blocks, in list order."""
        return self.largest[self.offsets[term] : self.offsets[term + 1]]

    def save(self, directory: str | os.PathLike, indptr: np.ndarray) -> None:
        """Write :data:`BOUNDS_FILE`, then :data:`BOUNDS_META` (which makes them count), into
        ``directory``."""
        directory = Path(directory)
        np.save(directory / BOUNDS_FILE, self.largest)
        meta = {
            "version": BOUNDS_VERSION,
            "block_size": self.size,
            "terms": self.terms,
            "postings": self.postings,
            "indptr_digest": digest(indptr),
            "bounds_digest": digest(self.largest),
        }
        partial = directory / f"{BOUNDS_META}.partial"
        partial.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        os.replace(partial, directory / BOUNDS_META)

    @classmethod
    def load(cls, directory: str | os.PathLike, indptr: np.ndarray) -> BlockBounds | None:
        """The bounds saved in ``directory`` for the matrix whose ``indptr`` is given, memory-mapped; None
        when the directory has none (an index saved before they were stored). Raises ``ValueError``
        when they do not check out."""
        directory = Path(directory)
        meta_path, bounds_path = directory / BOUNDS_META, directory / BOUNDS_FILE
        if not meta_path.exists():
            return None
        fix = f"rebuild the index, or delete {meta_path} to have the bounds computed from the scores on load"
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{meta_path} is not JSON ({exc}); {fix}") from exc
        if not isinstance(meta, dict) or meta.get("version") != BOUNDS_VERSION:
            found = meta.get("version") if isinstance(meta, dict) else meta
            raise ValueError(f"{meta_path}: block bounds format {found!r}, not {BOUNDS_VERSION}; {fix}")
        expected = {"terms": len(indptr) - 1, "postings": int(indptr[-1]), "indptr_digest": digest(indptr)}
        differing = [name for name, value in expected.items() if meta.get(name) != value]
        if differing:
            raise ValueError(
                f"{meta_path} describes another score matrix ({', '.join(differing)} differ); {fix}"
            )
        try:
            size = validate_block_size(meta.get("block_size"))
            largest = np.load(bounds_path, mmap_mode="r", allow_pickle=False)
            bounds = cls(size, indptr, np.asarray(largest).view(np.ndarray))
        except (OSError, ValueError, EOFError) as exc:
            raise ValueError(f"{bounds_path}: unusable block bounds ({exc}); {fix}") from exc
        if digest(bounds.largest) != meta.get("bounds_digest"):
            raise ValueError(f"{bounds_path}: block bounds do not match their digest (corrupt); {fix}")
        return bounds


def validate_block_size(size: object) -> int:
    """``size`` as a block size: an int from 1 to :data:`MAX_BLOCK_SIZE` (a bool, float or string is not)."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 1 <= size <= MAX_BLOCK_SIZE:
        raise ValueError(f"block size must be a positive integer of at most {MAX_BLOCK_SIZE}, got {size!r}")
    return int(size)


def float32_floors(values: np.ndarray) -> np.ndarray:
    """Each value's :func:`float32_below`: the largest float32 not above it."""
    rounded = values.astype(np.float32)
    return np.where(rounded > values, np.nextafter(rounded, np.float32(-np.inf)), rounded)


def float32_below(value: float) -> np.float32:
    """The largest float32 not above ``value``: comparing float32 scores with it keeps every score ≥ value."""
    rounded = np.float32(value)
    return np.nextafter(rounded, np.float32(-np.inf)) if rounded > value else rounded


class BM25Scorer:
    """Scores queries against a ``bm25s`` model's term-major (CSC) score matrix, with a query cache.

    :meth:`search` returns exactly the top k of exhaustive scoring (the same
    rows, float32 scores and order as :meth:`scores` ranked by
    :func:`~retrieval_index.ranking.top_k`) without scoring every document,
    by MaxScore (Turtle & Flood, 1995). Posting lists are taken rarest first;
    the rows of each list not met before are scored exactly, and the k-th
    best score found so far, θ, bounds the true k-th score from below. A row
    first met in a list scores at most its score there plus the largest
    entries of the lists after it: rows that cannot reach θ are skipped, and
    the rest look up the later lists largest entry first, each row dropped as
    soon as what it has plus what the lists left can add falls below θ (its
    partial sums also raise θ). Once the lists not yet taken can add less
    than θ together, no row they alone hold can enter the top k and the
    search stops. Nothing scans or partitions an array of every document,
    except for small corpora, where scoring every list exhaustively is cheaper.

    Block-Max MaxScore (Ding & Suel, 2011; Chakrabarti et al., 2011): once θ
    is known, a list's blocks of postings (:class:`BlockBounds`) whose bound
    plus the overlapping blocks' bounds of the later lists cannot reach θ are
    skipped without reading their postings, and in the other blocks a row
    must reach that block's floor. A list's largest entry is its largest
    block bound.

    Exact scores: a document's score is its term scores added in float32 in
    query order, as the exhaustive scatter adds them, so the scores match bit
    for bit. ``bounds`` default to those computed from the matrix. Posting
    lists must hold their rows in increasing order, as ``bm25s`` writes them;
    the first use of a list checks it.

    Results of the last ``cache_size`` distinct ``(query, topk)`` pairs are
    kept: the copies of a GRPO group send the same queries again and again.
    Searching from several threads at once is safe for the scoring (each
    thread looks up through its own array); the cache is meant for one thread.
    """

    def __init__(self, model: Any, *, cache_size: int = 4096, bounds: BlockBounds | None = None) -> None:
        matrix = model.scores
        # plain ndarray views of the memory maps: slicing a np.memmap costs a Python-level hook
        self.data, self.indices, self.indptr = (
            np.asarray(matrix[name]).view(np.ndarray) for name in ("data", "indices", "indptr")
        )
        self.num_docs = int(matrix["num_docs"])
        if bounds is None:
            bounds = BlockBounds.compute(self.data, self.indptr)
        elif (bounds.terms, bounds.postings) != (len(self.indptr) - 1, len(self.data)):
            raise ValueError(
                f"block bounds for {bounds.terms} terms and {bounds.postings} postings do not fit a matrix "
                f"of {len(self.indptr) - 1} terms and {len(self.data)} postings"
            )
        self.bounds = bounds
        self.vocab: dict[str, int] = model.vocab_dict
        self.cache_size = cache_size
        self.cache_hits = 0
        self.cache_misses = 0
        # how often each way of ranking ran: "exhaustive" (small corpus), "pruned" (MaxScore stopped
        # early), "all lists" (every list taken); and within them how often a list was "seeded",
        # "trimmed", had rows "dropped" or was looked up through an array ("array lookups")
        self.path_counts: Counter[str] = Counter()
        self._cache: OrderedDict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._stem = stemmer()
        self._largest = np.full(len(self.indptr) - 1, np.nan)
        self._smallest = np.full(len(self.indptr) - 1, np.nan)
        self._block_ends: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._threads = threading.local()  # each thread's lookup array

    def term_ids(self, query: str) -> list[int]:
        """The index's term ids of a query's words (words the corpus never uses drop out)."""
        ids = []
        for word in analyze_words(query):
            found = self.vocab.get(self._stem(word))
            if found is not None:
                ids.append(found)
        return ids

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """A term's posting list: the rows holding it (increasing) and its score in each."""
        start, end = self.indptr[term], self.indptr[term + 1]
        return self.indices[start:end], self.data[start:end]

    def scores(self, query: str) -> tuple[np.ndarray, list[np.ndarray]]:
        """The BM25 score of every document for ``query``, and the posting lists it read."""
        scores = np.zeros(self.num_docs, dtype=np.float32)
        return scores, self._scatter(self.term_ids(query), scores)

    def _scatter(self, terms: list[int], scores: np.ndarray) -> list[np.ndarray]:
        postings = []
        for term in terms:
            rows, term_scores = self.postings(term)
            # a document appears once in a term's posting list, so the fancy-indexed add is exact
            scores[rows] += term_scores
            postings.append(rows)
        return postings

    def largest(self, term: int) -> float:
        """The largest score in a term's posting list: its largest block bound (remembered after first use,
        which also checks that the list is in increasing row order)."""
        found = self._largest[term]
        if np.isnan(found):
            rows = self.postings(term)[0]
            if len(rows) > 1 and not np.all(rows[1:] > rows[:-1]):
                raise ValueError(f"posting list of term {term} is not in increasing row order")
            blocks = self.bounds.of(term)
            found = self._largest[term] = float(blocks.max()) if len(blocks) else 0.0
        return float(found)

    def clear_cache(self) -> None:
        """Forget every cached answer (the hit and miss counts stay)."""
        self._cache.clear()

    def search(self, query: str, topk: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows and scores of the ``topk`` best documents for ``query`` (positive scores only), best first."""
        key = (query, topk)
        cached = self._cache.get(key)
        if cached is not None:
            self.cache_hits += 1
            self._cache.move_to_end(key)
            return cached
        self.cache_misses += 1
        found = self._top_k(self.term_ids(query), topk)
        for array in found:
            array.setflags(write=False)  # shared by every caller of the cache
        if self.cache_size:
            self._cache[key] = found
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return found

    def _top_k(self, terms: list[int], topk: int) -> tuple[np.ndarray, np.ndarray]:
        if not terms:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        if (
            self.num_docs + sum(int(self.indptr[term + 1] - self.indptr[term]) for term in terms)
            <= EXHAUSTIVE_WORK
        ):
            self.path_counts["exhaustive"] += 1
            scores = np.zeros(self.num_docs, dtype=np.float32)
            self._scatter(terms, scores)
            hits = np.flatnonzero(scores > 0)
            return top_k(hits, scores[hits], topk)
        query = Query(terms, {term: self.largest(term) for term in set(terms)})
        rarest_first = sorted(
            query.repeats, key=lambda term: (self.indptr[term + 1] - self.indptr[term], term)
        )
        ranked = Ranked(topk)
        for taken, term in enumerate(rarest_first):
            if query.bound(rarest_first[taken:]) < ranked.theta:
                self.path_counts["pruned"] += 1
                return ranked.top_k()
            rows, term_scores = self.postings(term)
            earlier, later = rarest_first[:taken], rarest_first[taken + 1 :]
            seeded = np.zeros(len(rows), dtype=bool)
            if ranked.theta == 0 and len(rows) > SEED_ROWS:
                # no θ yet and a long list: the rows scoring best in it are ranked first, to set one
                self.path_counts["seeded"] += 1
                seeded[np.argpartition(term_scores, -topk)[-topk:] if len(rows) > topk else slice(None)] = (
                    True
                )
                ranked.add(
                    *self._new_rows_scored(
                        query, term, rows[seeded], term_scores[seeded], earlier, later, 0.0, topk
                    )
                )
            if ranked.theta > 0:
                rows, term_scores = self._may_reach(query, term, later, ranked.theta, seeded)
            else:
                rows, term_scores = rows[~seeded], term_scores[~seeded]
            ranked.add(
                *self._new_rows_scored(query, term, rows, term_scores, earlier, later, ranked.theta, topk)
            )
        self.path_counts["all lists"] += 1
        return ranked.top_k()

    def _new_rows_scored(
        self,
        query: Query,
        term: int,
        rows: np.ndarray,
        term_scores: np.ndarray,
        earlier: list[int],
        later: list[int],
        theta: float,
        topk: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``rows`` of ``term``'s list (increasing) that no ``earlier`` list holds and that may score θ
        or more, with their exact scores.

        A row first met here gets nothing from the earlier lists, so it scores at most its score here
        plus the bounds of the ``later`` lists. Those are looked up largest bound first; what a row
        has so far bounds its score from below (the k-th best of these partial sums raises θ) and,
        with the bounds of the lists not yet looked up, from above: a row is dropped as soon as that
        falls below θ.
        """
        repeats, slack = query.repeats, query.slack
        largest_first = sorted(later, key=query.bounds.__getitem__, reverse=True)
        # each list's score in each row (this list's first, then the later lists' as they are looked up),
        # by the row's place in the list; rows still in the running are the places in ``alive``
        found_scores = np.zeros((1 + len(later), len(rows)), dtype=np.float32)
        found_scores[0] = term_scores
        alive = np.arange(len(rows))
        partial = term_scores * np.float64(repeats[term])
        for looked_up, other in enumerate(largest_first, start=1):
            other_scores = self._scores_in(other, rows)
            found_scores[looked_up, alive] = other_scores
            partial += other_scores * np.float64(repeats[other])
            if len(partial) >= topk:
                # float32 sums of nonnegative scores: a partial sum over slack is below the exact score
                theta = max(theta, np.partition(partial, len(partial) - topk)[len(partial) - topk] / slack)
            if theta > 0:
                kept = partial + query.bound(largest_first[looked_up:]) >= theta / slack
                if not kept.all():
                    self.path_counts["dropped rows"] += 1
                    rows, partial, alive = rows[kept], partial[kept], alive[kept]
        for other in earlier:
            unseen = ~self._holds(other, rows)  # the others were scored when that list was taken
            rows, alive = rows[unseen], alive[unseen]
        found_scores = found_scores[:, alive]
        # the earlier lists add nothing to these rows (and adding 0.0 changes no float)
        position = {other: at for at, other in enumerate([term, *largest_first])}
        scores = np.zeros(len(rows), dtype=np.float32)
        for each in query.terms:  # float32, in query order: the exhaustive scatter's sum
            if each in position:
                scores += found_scores[position[each]]
        return rows, scores

    def _may_reach(
        self, query: Query, term: int, later: list[int], theta: float, seeded: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``term``'s list not ``seeded`` (a mask over the list, of rows ranked already), with
        their scores there, that may score θ or more if no earlier list holds them (Block-Max
        MaxScore's block skipping).

        Such a row of ``term``'s block B scores at most repeats · its score here plus, for each
        ``later`` list, repeats · the largest bound of that list's blocks that overlap B's rows (from
        B's first row to its last). Blocks whose own bound cannot reach θ with that are skipped whole;
        in the rest, each row must reach the block's floor.
        """
        rows, term_scores = self.postings(term)
        least_later = sum(self._smallest_block(other) * query.repeats[other] for other in later) * query.slack
        if theta / query.slack <= least_later:
            # no row can fall short of θ, even where every later list's bound is its smallest block's
            return rows[~seeded], term_scores[~seeded]
        size = self.bounds.size
        firsts, lasts = self._block_rows(term)
        later_bound = np.zeros(len(firsts))
        for other in later:
            other_firsts, other_bounds = self._block_rows(other)[0], self.bounds.of(other)
            if self._smallest_block(other) >= BLOCK_GAIN * query.bounds[other] / query.repeats[other]:
                # every block of that list is near its largest: its largest does as well, for less
                later_bound += query.bounds[other]
                continue
            # the other list's blocks holding B's first and last rows (block 0 for rows before its first);
            # reduceat's maximum runs from the first of them up to the next block's first one, which is
            # at or after the last one: with the last one's own bound, that covers every overlapping block
            first_block = np.maximum(np.searchsorted(other_firsts, firsts, side="right") - 1, 0)
            last_block = np.maximum(np.searchsorted(other_firsts, lasts, side="right") - 1, 0)
            overlapping = np.maximum(np.maximum.reduceat(other_bounds, first_block), other_bounds[last_block])
            later_bound += overlapping * np.float64(query.repeats[other])
        floors = float32_floors((theta / query.slack - later_bound * query.slack) / query.repeats[term])
        if floors.max() <= 0:  # every row may reach θ (scores are positive)
            return rows[~seeded], term_scores[~seeded]
        self.path_counts["trimmed lists"] += 1
        open_blocks = self.bounds.of(term) >= floors
        if not open_blocks.all():
            self.path_counts["skipped blocks"] += 1
        if open_blocks.sum() * 2 < len(open_blocks):
            # few blocks left: only their postings are read
            at = (np.flatnonzero(open_blocks)[:, None] * size + np.arange(size)).ravel()
            at = at[at < len(rows)]
            at = at[term_scores[at] >= floors[at // size]]
        else:
            at = np.flatnonzero(term_scores >= np.repeat(floors, size)[: len(rows)])
        at = at[~seeded[at]]
        return rows[at], term_scores[at]

    def _block_rows(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """The first and the last row of each block of ``term``'s list (remembered after first use)."""
        found = self._block_ends.get(term)
        if found is None:
            start, end = int(self.indptr[term]), int(self.indptr[term + 1])
            size = self.bounds.size
            firsts = np.ascontiguousarray(self.indices[start:end:size])
            lasts = self.indices[np.minimum(np.arange(start + size, end + size, size), end) - 1]
            found = self._block_ends[term] = (firsts, lasts)
        return found

    def _smallest_block(self, term: int) -> float:
        """The smallest block bound of ``term``'s list (remembered after first use)."""
        found = self._smallest[term]
        if np.isnan(found):
            blocks = self.bounds.of(term)
            found = self._smallest[term] = float(blocks.min()) if len(blocks) else 0.0
        return float(found)

    def _scores_in(self, term: int, rows: np.ndarray) -> np.ndarray:
        """``term``'s score in each of ``rows`` (0 where its list does not hold the row)."""
        term_rows, term_scores = self.postings(term)
        if len(term_rows) > DENSE_LOOKUP * len(rows):
            at = self._positions(term_rows, rows)
            return np.where(term_rows[at] == rows, term_scores[at], np.float32(0))
        # many rows against a list not much longer: spreading the list over an array of every
        # document and reading the rows costs less than a binary search per row
        self.path_counts["array lookups"] += 1
        spread = getattr(self._threads, "spread", None)
        if spread is None:
            spread = self._threads.spread = np.zeros(self.num_docs, dtype=np.float32)
        try:
            spread[term_rows] = term_scores
            return spread[rows]
        finally:
            spread[term_rows] = 0  # the array stays zero between lookups

    def _holds(self, term: int, rows: np.ndarray) -> np.ndarray:
        """Which of ``rows`` ``term``'s posting list holds."""
        term_rows = self.postings(term)[0]
        if len(term_rows) == 0:
            return np.zeros(len(rows), dtype=bool)
        return term_rows[self._positions(term_rows, rows)] == rows

    @staticmethod
    def _positions(term_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Where each of ``rows`` is or would go in ``term_rows`` (increasing), kept inside it."""
        at = np.searchsorted(term_rows, rows)
        return np.minimum(at, len(term_rows) - 1, out=at)


class Query:
    """A query's terms, how often each is repeated, and bounds on what its lists add to a score."""

    def __init__(self, terms: list[int], largest: dict[int, float]) -> None:
        self.terms = terms
        self.repeats = Counter(terms)
        self.bounds = {term: largest[term] * self.repeats[term] for term in self.repeats}
        # float32 addition of n terms may round the sum up by a relative n·2⁻²⁴; bounds allow 4 times that
        self.slack = 1 + len(terms) * 2.0**-22

    def bound(self, lists: list[int]) -> float:
        """The most the posting lists of ``lists`` can add to one document's float32 score."""
        return sum(self.bounds[term] for term in lists) * self.slack


class Ranked:
    """Exactly scored rows, keeping only those that may still make the top k, and θ: their k-th best score."""

    def __init__(self, topk: int) -> None:
        self.topk = topk
        self.rows = np.empty(0, dtype=np.int64)
        self.scores = np.empty(0, dtype=np.float32)
        self.theta = 0.0

    def add(self, rows: np.ndarray, scores: np.ndarray) -> None:
        """Add rows not added before, with their exact scores."""
        self.rows = np.concatenate([self.rows, rows])
        self.scores = np.concatenate([self.scores, scores])
        if len(self.scores) >= self.topk:
            cut = len(self.scores) - self.topk
            self.theta = float(np.partition(self.scores, cut)[cut])
            kept = self.scores >= self.theta  # rows below θ can never make the top k: θ only rises
            self.rows, self.scores = self.rows[kept], self.scores[kept]

    def top_k(self) -> tuple[np.ndarray, np.ndarray]:
        return top_k(self.rows, self.scores, self.topk)


def index_texts(
    texts: Iterable[str], *, k1: float, b: float, total: int | None = None, show_progress: bool = False
) -> Any:
    """A ``bm25s`` model (method "lucene") over texts analysed like Lucene's English analyzer."""
    import bm25s
    from bm25s.tokenization import Tokenized

    stem = stemmer()
    word_to_id: dict[str, int] = {}
    stem_to_id: dict[str, int] = {}

    def term_id(word: str) -> int:
        found = word_to_id.get(word)
        if found is None:
            found = word_to_id[word] = stem_to_id.setdefault(stem(word), len(stem_to_id))
        return found

    if show_progress:
        from tqdm.auto import tqdm

        texts = tqdm(texts, total=total, desc="BM25 tokenize", unit="passage")
    documents = [[term_id(word) for word in analyze_words(text)] for text in texts]
    model = bm25s.BM25(k1=k1, b=b, method="lucene")
    model.index(Tokenized(ids=documents, vocab=stem_to_id), show_progress=show_progress)
    return model


def save_model(model: Any, directory: str | os.PathLike) -> None:
    """Save a ``bm25s`` model into ``directory`` with its block bounds (:class:`BlockBounds`)."""
    model.save(str(directory), show_progress=False)
    indptr = np.asarray(model.scores["indptr"])
    BlockBounds.compute(np.asarray(model.scores["data"]), indptr).save(directory, indptr)


def load_model(directory: str | os.PathLike) -> tuple[Any, BlockBounds | None]:
    """A saved ``bm25s`` model, memory-mapped, and its checked block bounds (None when it was saved
    without them: :class:`BM25Scorer` then computes them)."""
    import bm25s

    model = bm25s.BM25.load(str(directory), mmap=True, show_progress=False)
    return model, BlockBounds.load(directory, np.asarray(model.scores["indptr"]).view(np.ndarray))


class BM25Retriever:
    """BM25 over a :class:`Corpus`; ``retrieve`` returns the top-k passages a query.

    Pickles as the paths of its index and corpus when it was saved (the usual
    case), so envs holding one travel to worker processes cheaply.
    """

    def __init__(
        self, model: Any, corpus: Corpus, directory: Path | None = None, bounds: BlockBounds | None = None
    ) -> None:
        self.model = model
        self.corpus = corpus
        self.directory = directory
        self.scorer = BM25Scorer(model, bounds=bounds)
        self.k1 = float(model.k1)
        self.b = float(model.b)

    @classmethod
    def build(
        cls,
        corpus: Corpus,
        out_dir: str | os.PathLike | None = None,
        *,
        k1: float = SEARCH_R1_K1,
        b: float = SEARCH_R1_B,
        show_progress: bool = False,
    ) -> BM25Retriever:
        """Index every passage of ``corpus``; saved to ``out_dir`` (and reloaded memory-mapped) when given."""
        model = index_texts(
            (passage.contents for passage in corpus),
            k1=k1,
            b=b,
            total=len(corpus),
            show_progress=show_progress,
        )
        if out_dir is None:
            return cls(model, corpus)
        directory = begin_build(out_dir)
        save_model(model, directory)
        meta = {
            "kind": "bm25",
            "version": INDEX_VERSION,
            "analyzer": ANALYZER_VERSION,
            "k1": k1,
            "b": b,
            "passages": len(corpus),
            "corpus": relative_to_index(directory, corpus.directory),
        }
        write_meta(directory, meta)
        return cls.load(directory, corpus)

    @classmethod
    def load(cls, index_dir: str | os.PathLike, corpus: Corpus | None = None) -> BM25Retriever:
        """Open a saved index memory-mapped; ``corpus`` defaults to the store it was built from.

        A version 1 index (saved before block bounds were) opens with its bounds computed from the
        scores; from version 2 on they must be there, and check out (:meth:`BlockBounds.load`)."""
        meta = read_meta(index_dir, "bm25")
        rebuild = f"rebuild it: {REBUILD_COMMAND}"
        if meta.get("version") not in READABLE_VERSIONS or meta.get("analyzer") != ANALYZER_VERSION:
            raise ValueError(f"{index_dir} was built by another version; {rebuild}")
        model, bounds = load_model(index_dir)
        if bounds is None and meta["version"] >= 2:
            raise ValueError(f"{index_dir} lacks its block bounds ({BOUNDS_META}); {rebuild}")
        directory = Path(index_dir).resolve()
        return cls(model, open_corpus_of(directory, meta, corpus, int(meta["passages"])), directory, bounds)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if self.directory is not None:
            return (BM25Retriever.load, (str(self.directory), self.corpus))
        return (BM25Retriever, (self.model, self.corpus))

    def retrieve(self, queries: Sequence[str], topk: int) -> list[list[RetrievedPassage]]:
        topk = validate_topk(topk)
        results = []
        for query in queries:
            rows, scores = self.scorer.search(query, topk)
            results.append(
                [
                    RetrievedPassage(passage=self.corpus[row], score=score, index=row)
                    for row, score in zip(rows.tolist(), scores.tolist(), strict=False)
                ]
            )
        return results

    def __repr__(self) -> str:
        directory = str(self.directory) if self.directory else "<in memory>"
        return f"BM25Retriever({directory}, k1={self.k1}, b={self.b})"

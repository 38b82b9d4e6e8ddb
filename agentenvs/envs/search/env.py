"""``agentenvs/Search-*-v0``: answer a question with a search engine, Search-R1's protocol and texts.

The agent sees Search-R1's prompt with the question, searches a corpus with
``<search> query </search>`` and answers with ``<answer> text </answer>``.
Default corpus: the built-in encyclopedia (about 100k passages, BM25 in
process, see :mod:`agentenvs.envs.search.world`); with ``data_dir`` FlashRAG's
question files and a wiki-18 index or retrieval server (:mod:`agentenvs.envs.search.tasks`).

=================  =============================================================
observation        reset: Search-R1's prompt ending ``Question: {question}\\n``
                   (question stripped, ``?`` appended when missing); after a
                   search: ``\\n\\n<information>Doc 1(Title: "…") text\\nDoc
                   2(…) …</information>\\n\\n`` (``topk`` passages, default 3);
                   after an answer: the empty string; after an invalid turn:
                   Search-R1's fixed text ``\\nMy previous action is invalid. If
                   I want to search, …Let me try again.\\n``
action             one response; Search-R1 cuts it after the first
                   ``</search>`` (else ``</answer>``) and takes its first
                   ``<search>``/``<answer>`` block (see :mod:`agentenvs.envs.search.protocol`);
                   ``search[q]`` / ``answer[a]`` bare are accepted (not well formed);
                   a query is cut to its first ``QUERY_MAX_WORDS`` (256)
                   whitespace-separated words and ``QUERY_MAX_CHARS`` (2,048)
                   characters, our bound in place of Search-R1's retriever
                   truncating the encoded query to 256 tokens (e5,
                   ``retrieval_query_max_length``)
reward             weighted sum of (unweighted values in ``reward_components``),
                   weights by ``reward_preset`` (columns: agentenvs default,
                   search-r1, mt-grpo, mt-ppo):
  outcome          answer turn: exact match with SQuAD normalisation (default,
                   mt-grpo); Search-R1's ``qa_em_format`` score — 1 correct and
                   well-formed sequence, 0.8 correct but malformed, 0.2 wrong
                   but well-formed (+0 retrieval bonus, v0.3 scripts), 0.1
                   wrong and malformed (search-r1); 1 correct, 0.2 wrong but
                   well formatted, −1 malformed (mt-ppo; −1 too when the last
                   turn is a search, so the episode ends unanswered). Weights
                   1 / 1 / 1 / 1
  retrieval        default: Φ(s') − Φ(s), **potential-based**, Φ = share of
                   the gold evidence passages retrieved so far (official data
                   without evidence: 1 once a retrieved passage contains a
                   golden answer), weight 0.2 — the same good query five times
                   earns it once; paper presets: 1 when this search's passages
                   contain a golden answer (a judge, **not** potential-based:
                   repeating a good query earns it every time, which the
                   search penalty only partly offsets). Weights 0.2 / 0 / 0.5 / 0.3
  tool_execution   1 when a search ran and returned passages (MT-GRPO's
                   0.2 × success share, one call per turn); not potential-based.
                   Weights 0 / 0 / 0.2 / 0
  format           default, search-r1: 1 when the turn is well formed; mt-grpo:
                   on the answer turn, the share of well-formed turns (XML
                   format reward, 0 on other turns); mt-ppo: +1 well formed,
                   −2 malformed (× 0.1 = +0.1 / −0.2). Not potential-based: a
                   per-turn format reward pays for stalling. Weights 0 / 0 / 0.2 / 0.1
  search_penalty   searches so far, on a search turn (MT-PPO's −0.1 × searches
                   so far); under mt-ppo an invalid turn is charged as the
                   search it did not make (searches so far + 1) and, on the
                   last turn, outcome −1, as a last-turn search is (ours: the
                   paper names no invalid-turn rule; without it stalling
                   would cost less than searching). Weights 0 / 0 / 0 / −0.1
  invalid_action   1 when no action could be read (state unchanged).
                   Weights −0.01 (verl-agent's) / 0 / −0.01 / −0.01: the
                   paper presets that pay intermediate turns get verl-agent's
                   penalty too (ours), so an invalid turn never ties a
                   search that found nothing; search-r1 pays no intermediate
                   turn, so there both pay 0
termination        an answer
truncation         ``max_turns`` turns (default 4, Search-R1's evaluation; note
                   that Search-R1 adds one answer-only generation after its
                   ``max_turns`` search rounds: ``max_turns=5`` matches it)
max_tokens         500 per turn (Search-R1's ``max_response_length``);
                   generation stops at ``</search>`` and ``</answer>``, the
                   points where Search-R1 cuts a response
state key          question id (question and hidden answers) + the set of
                   passages retrieved so far + the number of searches made: the
                   agent's information state, which fixes what it can still
                   learn and what the retrieval potential and search penalty
                   pay next. Turns left is a counter and excluded; under the
                   search-r1 and mt-grpo presets the key also holds the
                   sequence-format state their final reward reads.
Known hacks        agentenvs (default): none; ``retrieval`` is potential-based,
                   and an invalid turn pays −0.01, below every search.
                   search-r1: turns before the answer pay 0, invalid ones too (a
                   tie at 0); an invalid turn lowers the final score (0.8
                   instead of 1, 0.1 instead of 0.2). mt-grpo farms: a search
                   whose passages hold a golden answer pays 0.7 (retrieval 0.5 +
                   tool_execution 0.2); the counterweight is the turn limit
                   (``Search-TriviaQA-2Turn``: at most 1.4 from two searches,
                   below the 1.9 of a search and a correct answer). mt-ppo: the
                   k-th identical good search pays 0.4 − 0.1 k; an episode that
                   only searches ends with outcome −1; an invalid turn costs a
                   search and −0.01
=================  =============================================================

``score`` is exact match (0/1); ``info["f1"]`` holds token F1 at the end.
``info["privileged"]``: golden answers, gold evidence passage ids and hops.

.. rubric:: Version history

=======  ====================================================================
Version  Change
=======  ====================================================================
``v0``   initial release: ``Search`` (the seven QA sets mixed), one id per QA set
         (``Search-NQ`` ... ``Search-Bamboogle``) and ``Search-TriviaQA-2Turn``. Changed
         under v0 on 2026-12-01 (commit 723e745), before the version rule existed: an
         invalid turn under the ``mt-grpo`` and ``mt-ppo`` presets pays ``invalid_action``
         −0.01 (it paid 0), and under ``mt-ppo`` it is charged the search it did not make
         (outcome −1 on the last turn). ``Search-TriviaQA-2Turn`` (``mt-grpo``) changed with
         them; the default preset did not. Bundles recorded before it that hold such an
         invalid turn no longer replay.
=======  ====================================================================
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np

from agentenvs.core.env import AgentEnv, InvalidAction, StepOutcome, resolve_weights
from agentenvs.core.judges import normalize_answer, token_f1
from agentenvs.core.keys import bytes_digest, canonical_bytes, int_list_bytes, text_digest, text_key
from agentenvs.envs.search.protocol import BARE_PATTERN, SearchParse, SearchProtocol, SequenceChecker
from agentenvs.envs.search.questions import STYLES, Question
from agentenvs.envs.search.tasks import (
    DEFAULT_PASSAGES,
    QuestionSource,
    builtin_questions,
    builtin_retriever,
    official_questions,
    open_retriever,
    style_splits,
)
from retrieval_index.corpus import is_collapsed

INSTRUCTIONS = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you "
    "get new information. After reasoning, if you find you lack some knowledge, you can call a search engine "
    "by <search> query </search> and it will return the top searched results between <information> and "
    "</information>. You can search as many times as your want. If you find no further external knowledge "
    "needed, you can directly provide the answer inside <answer> and </answer>, without detailed "
    "illustrations. For example, <answer> Beijing </answer>. "
)
INVALID_TEXT = (
    "\nMy previous action is invalid. If I want to search, I should put the query between <search> and "
    "</search>. If I want to give the final answer, I should put the answer between <answer> and </answer>. "
    "Let me try again.\n"
)
PRESETS: dict[str, dict[str, float]] = {
    "agentenvs": {
        "outcome": 1.0,
        "retrieval": 0.2,
        "tool_execution": 0.0,
        "format": 0.0,
        "search_penalty": 0.0,
        "invalid_action": -0.01,
    },
    "search-r1": {
        "outcome": 1.0,
        "retrieval": 0.0,
        "tool_execution": 0.0,
        "format": 0.0,
        "search_penalty": 0.0,
        "invalid_action": 0.0,
    },
    "mt-grpo": {
        "outcome": 1.0,
        "retrieval": 0.5,
        "tool_execution": 0.2,
        "format": 0.2,
        "search_penalty": 0.0,
        "invalid_action": -0.01,
    },
    "mt-ppo": {
        "outcome": 1.0,
        "retrieval": 0.3,
        "tool_execution": 0.0,
        "format": 0.1,
        "search_penalty": -0.1,
        "invalid_action": -0.01,
    },
}
# Search-R1's qa_em_format scores (v0.3 scripts: structure 0.2, final 0.1, retrieval 0).
SEARCH_R1_SCORES = {"score": 1.0, "structure_format": 0.2, "final_format": 0.1, "retrieval": 0.0}
SEARCH_R1_TRAIN = ("nq", "hotpotqa")
EMPTY_TEXT_KEY = text_key("")


def prompt_for(question: str) -> str:
    """Search-R1's user message for ``question`` (stripped, ``?`` appended when missing)."""
    question = question.strip()
    if not question.endswith("?"):
        question += "?"
    return f"{INSTRUCTIONS}Question: {question}\n"


QUERY_MAX_WORDS, QUERY_MAX_CHARS = 256, 2048


def bounded_query(query: str) -> str:
    """The first :data:`QUERY_MAX_WORDS` words of ``query``, then at most :data:`QUERY_MAX_CHARS` characters.

    Search-R1's retriever truncates a query to 256 tokens; BM25 reads words, so
    the bound is in words (runs of whitespace read as one space, as BM25's
    analyser reads them), with a character cap for text without spaces.
    """
    return " ".join(query.split(maxsplit=QUERY_MAX_WORDS)[:QUERY_MAX_WORDS])[:QUERY_MAX_CHARS]


def passage_body(contents: str) -> str:
    """A passage's Search-R1 line after its ``Doc {i}`` label: ``(Title: {title}) {text}`` and a newline
    (:func:`line_parts`)."""
    title, text = line_parts(contents)
    return f"(Title: {title}) {text}\n"


def format_passages(hits: Sequence[Any]) -> str:
    """Search-R1's ``Doc {i}(Title: {title}) {text}`` lines, from each passage's ``contents``."""
    return "".join(f"Doc {i + 1}{passage_body(hit.passage.contents)}" for i, hit in enumerate(hits))


def line_parts(contents: str) -> tuple[str, str]:
    """The title and text a passage's Search-R1 line shows: ``contents`` split at its first newline."""
    title, _, text = contents.partition("\n")
    return title, text


# How a search turn reads what a row's line shows, given the row: its title and text, and whether the
# line is known to be whitespace-collapsed. The passage is read only for a row whose line is not kept,
# so a search whose rows are all kept reads no text at all.
LineReader = Callable[[int], tuple[str, str, bool]]


def corpus_line_parts(corpus: Any, row: int) -> tuple[str, str, bool]:
    """:func:`line_parts` of a corpus row's ``contents``, from its title and text alone (``contents`` is
    ``'"title"\\ntext'``, so its first line is the quoted title unless the title holds a newline), and
    whether its line ``(Title: "title") text`` is whitespace-collapsed, from the store's flag: it is
    when the title and the text are and the text is not empty (False where the store has no flags)."""
    title, text = corpus.title_and_text(row)
    if "\n" in title:
        return (*line_parts(f'"{title}"\n{text}'), False)
    flags = corpus.collapsed
    return f'"{title}"', text, flags is not None and flags[row] == 1 and text != ""


def hit_rows(hits: Sequence[Any]) -> tuple[list[int], LineReader]:
    """The rows of search hits that carry their passages (``retrieve``'s), and the reader of their lines
    (not known to be collapsed: the information text is then checked)."""
    passages = {hit.index: hit.passage for hit in hits}
    return [hit.index for hit in hits], lambda row: (*line_parts(passages[row].contents), False)


class PassageLines:
    """What a search turn derives from the retrieved passages, kept for the last ``capacity`` corpus rows
    and the last ``capacity`` results; one store per retriever per process (:func:`passage_lines_for`),
    shared by every env over that retriever.

    The rollouts of one question retrieve the same passages again and again,
    in one env or in the group's several envs; each row's Search-R1 line
    (:func:`passage_body` without its newline) and its SQuAD-normalised form
    are made once, and each result's information text and ``obs_key`` once
    per sequence of rows. What is kept depends on the rows alone, never on an
    episode, so sharing it changes no observation, reward or key. Memory: at
    most ``capacity`` rows of two strings of about a passage's length, and
    ``capacity`` results of ``topk`` passages each (about 17 MB for 4,096 of
    600-character passages at ``topk`` 3), once per retriever and process
    however many envs use it. A lock makes each call atomic (about 0.1 µs), so
    envs stepped on threads may share the store.

    - The information text is ``\\n\\n<information>`` + the ``Doc {i}`` lines
      (stripped) + ``</information>\\n\\n``; its ``obs_key`` hashes the
      whitespace-collapsed text. When the lines, their newlines read as
      spaces, are collapsed already, that is ``<information>`` + those lines +
      ``</information>``; otherwise the text is collapsed by the general
      rule. The lines are collapsed when each is (the corpus store's flag,
      :func:`corpus_line_parts`: a line starts with ``Doc`` and ends with
      its text), else when :func:`~retrieval_index.corpus.is_collapsed` finds
      them so. Both depend on the rows and their order alone.
    - Search-R1's retrieval check, ``contains_answer(lines, golden)``:
      SQuAD normalisation works character by character apart from the
      article rule and whitespace, so the normalised lines are
      ``" ".join(f"doc {i}" + normalised body)`` (a body starts with
      ``(Title:``, which becomes the word ``title`` glued to the label's
      number, never an article); the test on the joined text is the
      original's substring test, so an answer spanning two passages counts
      as it does there. The caller normalises the golden answers once per question.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._rows: OrderedDict[int, list[Any]] = OrderedDict()
        self._results: OrderedDict[tuple[int, ...], tuple[str, str]] = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # a copy starts empty: passages travel as corpus rows, not as text
        return {"capacity": self.capacity}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["capacity"])

    def __len__(self) -> int:
        """Rows kept."""
        return len(self._rows)

    def clear(self) -> None:
        """Forget every row and result kept."""
        with self._lock:
            self._rows.clear()
            self._results.clear()

    def _entry(self, row: int, read: LineReader) -> list[Any]:
        """The row's ``[line, normalised line or None, whether the line is known to be collapsed]``, made
        when not kept (the line is :func:`passage_body` without its closing newline); the lock is held."""
        rows = self._rows
        entry = rows.get(row)
        if entry is None:
            title, text, collapsed = read(row)
            entry = rows[row] = [f"(Title: {title}) {text}", None, collapsed]
            if len(rows) > self.capacity:
                rows.popitem(last=False)
        else:
            rows.move_to_end(row)
        return entry

    def information(self, rows: Sequence[int], read: LineReader) -> tuple[str, str]:
        """The observation after a search that found ``rows`` and its ``obs_key``."""
        found = tuple(rows)
        with self._lock:
            results = self._results
            result = results.get(found)
            if result is not None:
                results.move_to_end(found)
                return result
            entries = [self._entry(row, read) for row in found]
            lines = "\n".join([f"Doc {i}{entry[0]}" for i, entry in enumerate(entries, 1)])
            # when the lines with their newlines read as spaces are collapsed, so is the text, to just that;
            # unless the store's flags say so, the joined lines are checked at once (a few long lines)
            spaced = lines.replace("\n", " ")
            if all([entry[2] for entry in entries]) or is_collapsed(spaced):
                text = f"\n\n<information>{lines}</information>\n\n"
                key = text_digest(f"<information>{spaced}</information>")
            else:
                text = f"\n\n<information>{lines.strip()}</information>\n\n"
                key = text_key(text)
            result = results[found] = (text, key)
            if len(results) > self.capacity:
                results.popitem(last=False)
            return result

    def answer_found(self, rows: Sequence[int], read: LineReader, answers: Iterable[str]) -> bool:
        """Whether a normalised golden answer of ``answers`` occurs in the normalised information lines
        of ``rows``."""
        parts = []
        with self._lock:
            for i, row in enumerate(rows, 1):
                entry = self._entry(row, read)
                if entry[1] is None:
                    entry[1] = normalize_answer(entry[0])
                parts.append(f"doc {i}{entry[1]}")
        text = " ".join(parts)
        return any(answer in text for answer in answers)


# one store per retriever object; the retrievers are themselves made once per process and spec
_SHARED_LINES: weakref.WeakKeyDictionary[Any, PassageLines] = weakref.WeakKeyDictionary()
_SHARED_LINES_LOCK = threading.Lock()


def passage_lines_for(retriever: Any) -> PassageLines:
    """The :class:`PassageLines` every env of this process over ``retriever`` shares."""
    with _SHARED_LINES_LOCK:
        lines = _SHARED_LINES.get(retriever)
        if lines is None:
            lines = _SHARED_LINES[retriever] = PassageLines()
        return lines


def search_r1_score(correct: bool, valid_sequence: bool, retrieval_correct: bool) -> float:
    """Search-R1's ``compute_score_em`` for an episode that gave an answer."""
    s = SEARCH_R1_SCORES
    if correct:
        return s["score"] if valid_sequence else s["score"] - s["structure_format"]
    if valid_sequence:
        return s["structure_format"] + (s["retrieval"] if retrieval_correct else 0.0)
    return s["final_format"]


class SearchAction(NamedTuple):
    """One primitive: a search for ``content`` or an answer ``content`` (a named tuple: made every turn)."""

    kind: str  # "search" or "answer"
    content: str


class SearchEnv(AgentEnv[Question, SearchAction]):
    """Search QA with Search-R1's protocol; see the module docstring.

    Args:
        dataset: ``"nq"``, ``"triviaqa"``, ``"popqa"``, ``"hotpotqa"``, ``"2wiki"``,
            ``"musique"``, ``"bamboogle"``, or ``"mix"`` (Search-R1: train and
            valid on NQ + HotpotQA, test on all seven).
        split: ``"train"``, ``"valid"`` or ``"test"``.
        max_turns: turns before truncation (4).
        topk: passages per search (3, Search-R1's).
        reward_preset: ``"agentenvs"`` (default), ``"search-r1"``, ``"mt-grpo"`` or ``"mt-ppo"``.
        reward_weights: overrides of the preset's weights.
        corpus_passages: size of the built-in encyclopedia (100k).
        world_seed: seed of the built-in encyclopedia.
        data_dir: FlashRAG datasets folder (``{dataset}/{train,dev,test}.jsonl``);
            ``$AGENTENVS_DATA/search`` when that folder exists.
        retriever: with ``data_dir``: a retrieval_index index folder or a
            retrieval server URL (default ``{data_dir}/index``).
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = PRESETS["agentenvs"]
    default_max_turns = 4
    reply_max_tokens: ClassVar[int] = 500
    goal_in_first_observation: ClassVar[bool] = True
    reply_stop: ClassVar[tuple[str, ...]] = ("</search>", "</answer>")
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        dataset: str = "mix",
        split: str = "train",
        *,
        max_turns: int | None = None,
        topk: int = 3,
        reward_preset: str = "agentenvs",
        reward_weights: Mapping[str, float] | None = None,
        corpus_passages: int = DEFAULT_PASSAGES,
        world_seed: int = 0,
        data_dir: str | None = None,
        retriever: str | None = None,
        render_mode: str | None = None,
    ) -> None:
        if dataset not in (*STYLES, "mix"):
            raise ValueError(f"unknown dataset {dataset!r}; choose one of {[*STYLES, 'mix']}")
        if reward_preset not in PRESETS:
            raise ValueError(f"unknown reward_preset {reward_preset!r}; choose one of {sorted(PRESETS)}")
        if topk < 1:
            raise ValueError(f"topk must be >= 1, got {topk}")
        if data_dir is None and os.environ.get("AGENTENVS_DATA"):
            candidate = Path(os.environ["AGENTENVS_DATA"]) / "search"
            data_dir = str(candidate) if candidate.is_dir() else None
        if data_dir is not None and retriever is None:
            retriever = str(Path(data_dir) / "index")
        self.dataset = dataset
        self.topk = int(topk)
        self.reward_preset = reward_preset
        self.corpus_passages = int(corpus_passages)
        self.world_seed = int(world_seed)
        self.data_dir = data_dir
        self.retriever_spec = retriever
        super().__init__(
            self._open_questions(),
            split=split,
            max_turns=max_turns,
            reward_weights=resolve_weights(PRESETS[reward_preset], reward_weights),
            protocol=SearchProtocol(),
            render_mode=render_mode,
        )
        self._attach_retriever()
        # Search-R1's sequence rule is read by its preset alone; the answer-in-results check by the
        # paper presets and by the retrieval potential of questions without gold evidence.
        self._tracks_sequence = reward_preset == "search-r1"
        self._matches_answers = False
        self._evidence_ids: tuple[str, ...] = ()  # the question's (a property that builds them)
        self._evidence_rows: tuple[int, ...] = ()
        self._normalized_golden: frozenset[str] = frozenset()
        self._task_id_bytes: tuple[str | None, bytes] = (None, b"")  # the task id and its canonical bytes
        self._information: tuple[str, str] | None = None  # the last search's observation and its obs_key
        self.question: Question | None = None
        self._prompt = ""
        self._clear_episode()

    @property
    def instructions(self) -> str:
        """Search-R1's instruction text (the question follows it in the first observation)."""
        return INSTRUCTIONS

    # ----------------------------------------------------------- data handles
    def _open_questions(self) -> QuestionSource:
        def rows_of(style: str, split: str):
            if self.data_dir is not None:
                return official_questions(str(self.data_dir), style, split)
            return builtin_questions(style, split, self.corpus_passages, self.world_seed)

        if self.dataset == "mix":
            return QuestionSource(style_splits(rows_of, STYLES, SEARCH_R1_TRAIN))
        return QuestionSource(style_splits(rows_of, (self.dataset,), (self.dataset,)))

    def _open_retriever(self):
        if self.retriever_spec is not None:
            return open_retriever(str(self.retriever_spec))
        return builtin_retriever(self.corpus_passages, self.world_seed)

    def _attach_retriever(self) -> None:
        """Open the retriever (made once per process and spec), and take what goes with it: whether it
        searches rows in process, and the passage lines every env over it shares."""
        self.retriever = self._open_retriever()
        self._rows_in_process = self._searches_rows(self.retriever)
        self._passages = passage_lines_for(self.retriever)

    @staticmethod
    def _searches_rows(retriever: Any) -> bool:
        """Whether ``retriever`` is retrieval_index's in-process BM25, whose scorer gives rows alone."""
        from retrieval_index import BM25Retriever

        return type(retriever) is BM25Retriever

    def _search(self, query: str) -> tuple[list[int], LineReader]:
        """The rows of ``query``'s top ``topk`` passages (``retrieve``'s), and the reader of their lines."""
        retriever = self.retriever
        if self._rows_in_process:
            rows, _ = retriever.scorer.search(query, self.topk)  # what retrieve() ranks, without reading
            return rows.tolist(), self._read_corpus_line
        return hit_rows(retriever.retrieve([query], self.topk)[0])

    def _read_corpus_line(self, row: int) -> tuple[str, str, bool]:
        return corpus_line_parts(self.retriever.corpus, row)

    def __getstate__(self) -> dict[str, Any]:
        # the question lists, the index and its shared lines travel as their handles (dataset, sizes, paths)
        state = dict(self.__dict__)
        state.pop("task_source")
        state.pop("retriever")
        state.pop("_passages")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.task_source = self._open_questions()
        self._attach_retriever()

    # ------------------------------------------------------------ world hooks
    def _clear_episode(self) -> None:
        # the last state key and what it was made from besides the retrieved rows (see _compute_state_key)
        self._keyed: tuple[tuple[Any, ...], str] | None = None
        self._retrieved: set[int] = set()
        self._searches = 0
        self._answer_seen = False
        self._sequence = SequenceChecker()
        self._formats: list[bool] = []
        self._answered = False
        self._correct = False
        self._f1 = 0.0

    def _start(self, task: Question) -> None:
        self.question = task
        self._prompt = prompt_for(task.question)
        self._evidence_ids = task.evidence
        self._evidence_rows = tuple(int(passage) for passage in self._evidence_ids)
        self._matches_answers = self.reward_preset != "agentenvs" or not self._evidence_rows
        self._normalized_golden = frozenset(normalize_answer(answer) for answer in task.golden_answers)
        self._clear_episode()

    def _parse_action(self, action: str) -> SearchAction:
        # what the protocol makes of a tagged action, read as BARE_PATTERN reads it: ``kind[`` first,
        # ``]`` last, nothing around them
        for kind in ("search", "answer"):
            if action.startswith(kind) and action.startswith("[", 6) and action.endswith("]"):
                return SearchAction(kind, action[7:-1].strip())
        bare = BARE_PATTERN.match(action)
        if bare is None:
            raise InvalidAction(f"not a search or answer action: {action[:100]!r}")
        return SearchAction(bare.group(1), bare.group(2).strip())

    def _format_value(self, parsed: SearchParse) -> float:
        # also records the response for the episode-level format rules (search-r1, mt-grpo)
        if self._tracks_sequence:
            self._sequence.feed(parsed.text)
        self._formats.append(parsed.well_formed)
        if self.reward_preset == "mt-ppo":
            return 1.0 if parsed.well_formed else -2.0
        if self.reward_preset == "mt-grpo":
            answering = parsed.error is None and parsed.actions[0].startswith("answer[")
            return sum(self._formats) / len(self._formats) if answering else 0.0
        return 1.0 if parsed.well_formed else 0.0

    def _apply(self, action: SearchAction) -> StepOutcome:
        golden = self.question.golden_answers
        if action.kind == "answer":
            self._answered = True
            self._correct, self._f1 = self.answer_scores(action.content, golden, self._normalized_golden)
            return StepOutcome("", {"outcome": self._outcome()}, terminated=True)
        rows, read = self._search(bounded_query(action.content))
        self._searches += 1
        self._retrieved.update(rows)
        found = self._matches_answers and self._passages.answer_found(rows, read, self._normalized_golden)
        self._answer_seen = self._answer_seen or found
        components = {"tool_execution": 1.0 if rows else 0.0, "search_penalty": float(self._searches)}
        if self.reward_preset != "agentenvs":
            components["retrieval"] = 1.0 if found else 0.0
        if self.reward_preset == "mt-ppo" and self.turn + 1 >= self.max_turns:
            components["outcome"] = -1.0  # the last turn passed without an answer
        self._information = self._passages.information(rows, read)
        return StepOutcome(self._information[0], components)

    @staticmethod
    def answer_scores(
        prediction: str, golden: Sequence[str], normalized_golden: frozenset[str]
    ) -> tuple[bool, float]:
        """Exact match and token F1 of ``prediction`` (:mod:`agentenvs.core.judges`' rules).

        ``normalized_golden`` holds the golden answers normalised once per episode; a non-empty
        exact match shares every token with its answer, so its F1 is 1.0 without counting.
        """
        normalized = normalize_answer(prediction)
        correct = normalized in normalized_golden
        return correct, 1.0 if correct and normalized else token_f1(prediction, golden)

    def _invalid_turn_components(self, parsed: SearchParse) -> Mapping[str, float]:
        if self.reward_preset != "mt-ppo":
            return {}
        # an invalid turn costs what the search it did not make would have cost, and on the last
        # turn it ends the episode unanswered (-1), as a last-turn search does
        charged = {"search_penalty": float(self._searches + 1)}
        if self.turn + 1 >= self.max_turns:
            charged["outcome"] = -1.0
        return charged

    def _outcome(self) -> float:
        if self.reward_preset == "search-r1":
            return search_r1_score(self._correct, self._sequence.complete, self._answer_seen)
        if self.reward_preset == "mt-ppo":
            return 1.0 if self._correct else (0.2 if self._formats[-1] else -1.0)
        return float(self._correct)

    def _turn_observation(self, outcomes: list[StepOutcome]) -> str:
        text = "".join([outcome.feedback for outcome in outcomes])
        if self._tracks_sequence:
            self._sequence.feed(text)
        return text

    def _observation_key(self, text: str) -> str:
        if not text:
            return EMPTY_TEXT_KEY  # an answer turn's
        if self._information is not None and text == self._information[0]:
            return self._information[1]
        return text_key(text)

    def _invalid_observation(self, error: str) -> str:
        if self._tracks_sequence:
            self._sequence.feed(INVALID_TEXT)
        return INVALID_TEXT

    def _reset_observation(self) -> str:
        return self._prompt

    def _observation_text(self) -> str:
        return self._prompt

    def _potentials(self) -> Mapping[str, float]:
        if self.reward_preset != "agentenvs":
            return {}
        evidence = self._evidence_rows
        if not evidence:
            return {"retrieval": 1.0 if self._answer_seen else 0.0}
        return {"retrieval": sum(map(self._retrieved.__contains__, evidence)) / len(evidence)}

    def _preset_key_part(self) -> tuple[Any, ...]:
        """The sequence-format state the search-r1 and mt-grpo presets' final rewards read (else none)."""
        if self.reward_preset == "search-r1":
            return ((self._sequence.state, self._sequence.valid, self._answer_seen),)
        if self.reward_preset == "mt-grpo":
            return ((sum(self._formats), len(self._formats)),)
        return ()

    def _state_key_data(self) -> Any:
        return [self.task_id, sorted(self._retrieved), self._searches, *self._preset_key_part()]

    def _compute_state_key(self) -> str:
        """``stable_digest(self._state_key_data())``, its canonical bytes assembled here: the list head
        and the task id, the sorted rows, the search count, then the preset's part (encoded in general).

        Within an episode the retrieved rows change only with a search, which counts one more: the key is
        made again only when the task, the search count or the preset's part differ from the last key's
        (a new episode and a restore forget it). An answer turn thus leaves the key as it was unhashed.
        """
        extra = self._preset_key_part()
        made_of = (self.task_id, self._searches, extra)
        if self._keyed is not None and self._keyed[0] == made_of:
            return self._keyed[1]
        if self._task_id_bytes[0] != self.task_id:
            self._task_id_bytes = (self.task_id, canonical_bytes(self.task_id))
        encoded = b"".join((
            b"l%d:" % (3 + len(extra)), self._task_id_bytes[1], int_list_bytes(sorted(self._retrieved)),
            b"i%d;" % self._searches, canonical_bytes(extra[0]) if extra else b"",
        ))  # fmt: skip
        self._keyed = (made_of, bytes_digest(encoded))
        return self._keyed[1]

    def _is_success(self) -> bool:
        return self._correct

    def _info(self, text, components, transitions, *, terminated, truncated) -> dict[str, Any]:
        info = super()._info(text, components, transitions, terminated=terminated, truncated=truncated)
        if terminated or truncated:
            info["f1"] = float(self._f1)
        return info

    def _privileged(self) -> Mapping[str, Any] | None:
        if self.question is None:
            return None
        return {
            "golden_answers": list(self.question.golden_answers),
            "evidence": list(self._evidence_ids),
            "hops": [list(hop) for hop in self.question.hops],
        }

    def action_help(self) -> str:
        return "Search with <search> query </search> or answer with <answer> text </answer>."

    def clear_passage_lines(self) -> None:
        """Forget the passage lines and results kept across episodes, for every env of this process over
        this env's retriever, which share them (the retriever keeps its query cache)."""
        self._passages.clear()

    @property
    def searches(self) -> int:
        """Searches made this episode."""
        return self._searches

    @property
    def retrieved(self) -> frozenset[int]:
        """Corpus rows of every passage retrieved this episode."""
        return frozenset(self._retrieved)

    # ----------------------------------------------------- snapshot / restore
    def _world_state(self) -> Any:
        return (
            tuple(sorted(self._retrieved)), self._searches, self._answer_seen,
            (self._sequence.state, self._sequence.valid), tuple(self._formats),
            self._answered, self._correct, self._f1,
        )  # fmt: skip

    def _restore_world(self, state: Any, *, started: bool) -> None:
        retrieved, self._searches, self._answer_seen, sequence, formats, *outcome = state
        self._keyed = None
        self._retrieved = set(retrieved)
        self._sequence = SequenceChecker(*sequence)
        self._formats = list(formats)
        self._answered, self._correct, self._f1 = outcome

    # ---------------------------------------------------------------- agents
    def sample_action(self, rng: np.random.Generator) -> str:
        """A random action: a search for a few words of the question, or an answer naming a title seen."""
        words = self.question.question.replace("?", "").split()
        if rng.random() < 0.6 or not words:
            count = int(rng.integers(1, 5))
            picks = [words[int(i)] for i in rng.integers(0, len(words), size=count)] if words else ["the"]
            return f"search[{' '.join(picks)}]"
        if self._retrieved and hasattr(self.retriever, "corpus"):  # a server client holds no corpus
            rows = sorted(self._retrieved)
            return f"answer[{self.retriever.corpus[rows[int(rng.integers(len(rows)))]].title}]"
        return f"answer[{words[int(rng.integers(len(words)))]}]"

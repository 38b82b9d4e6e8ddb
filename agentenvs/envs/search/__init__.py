"""Search QA: answer questions with a search engine, Search-R1's protocol, seven QA styles.

Registers ``agentenvs/Search-v0`` (Search-R1's mix: train NQ + HotpotQA, test
all seven), one id per QA set, and ``Search-TriviaQA-2Turn-v0`` (MT-GRPO's
setting: two turns, one search then the answer, MT-GRPO's rewards). See
:mod:`agentenvs.envs.search.env` for the table. The expert is
:class:`agentenvs.envs.search.expert.SearchExpert`. Needs the ``search`` extra
(retrieval_index's BM25: bm25s, PyStemmer).

Lives here: ``env`` (the env), ``protocol`` (Search-R1's reading of a
response), ``world`` (the built-in encyclopedia), ``questions`` (the question generator), ``tasks``
(task sources), ``expert`` (the gold evidence path as an agent).

May import: ``agentenvs.core`` and this package and ``retrieval_index``, by the rule every
family follows (see :mod:`agentenvs.core.registration`).
"""

from agentenvs.core.registration import EnvEntry

FAMILY = "Search"
ENTRY_POINT = "agentenvs.envs.search.env:SearchEnv"
EXPERT = "agentenvs.envs.search.expert:SearchExpert"
SETS = (
    ("NQ", "nq", "single-hop factoid questions (Natural Questions style)"),
    ("TriviaQA", "triviaqa", "trivia questions with answer aliases (TriviaQA style)"),
    ("PopQA", "popqa", "subject-relation questions about long-tail entities (PopQA style)"),
    ("HotpotQA", "hotpotqa", "2-hop bridge and comparison questions (HotpotQA style)"),
    ("2Wiki", "2wiki", "compositional, comparison and inference questions (2WikiMultiHopQA style)"),
    ("MuSiQue", "musique", "2-4-hop chains (MuSiQue style)"),
    ("Bamboogle", "bamboogle", "hard 2-hop questions, 125 for test (Bamboogle style)"),
)

ENVS = (
    EnvEntry(
        name="Search",
        entry_point=ENTRY_POINT,
        family=FAMILY,
        expert=EXPERT,
        summary=(
            "Answer questions with <search>/<answer> (Search-R1): train NQ + HotpotQA, "
            f"test all seven sets; expert {EXPERT}"
        ),
        kwargs={"dataset": "mix"},
        extra="search",
    ),
    *(
        EnvEntry(
            name=f"Search-{name}",
            entry_point=ENTRY_POINT,
            family=FAMILY,
            expert=EXPERT,
            summary=f"Search QA over the built-in encyclopedia: {what}; expert {EXPERT}",
            kwargs={"dataset": dataset},
            extra="search",
        )
        for name, dataset, what in SETS
    ),
    EnvEntry(
        name="Search-TriviaQA-2Turn",
        entry_point=ENTRY_POINT,
        family=FAMILY,
        expert=EXPERT,
        summary=(
            "MT-GRPO's setting: TriviaQA style, one search then the answer, MT-GRPO's rewards; "
            f"expert {EXPERT}"
        ),
        kwargs={"dataset": "triviaqa", "max_turns": 2, "reward_preset": "mt-grpo"},
        extra="search",
        variant_of="Search-TriviaQA",
    ),
)

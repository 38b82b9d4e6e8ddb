"""Questions over the built-in encyclopedia in the style of seven QA sets, and FlashRAG's file format.

Every question keeps its golden answers (the answer entity's title, name and
aliases) and its *path*: the hops ``(subject title, relation)`` a reader must
look up, each with its gold evidence passage. Styles:

=============  ==============================================================
``nq``         single-hop factoid about a popular entity, NQ's lowercase
               query phrasing without a question mark
``triviaqa``   trivia phrasing with a clue about the answer (its occupation);
               answers are people, with their aliases (``V. Kolby``, ``Kolby``)
``popqa``      PopQA's subject–relation templates over the long tail (the
               least popular two thirds of the entities)
``hotpotqa``   2-hop bridge questions (80 %) and comparisons (20 %)
``2wiki``      compositional, comparison, inference (grandfather,
               father-in-law) and bridge-comparison questions
``musique``    2–4-hop chains of relations
``bamboogle``  hard 2-hop: long-tail subjects, relative-clause phrasing
=============  ==============================================================

The test split of each style has the size of the original's evaluation set
(:data:`TEST_SIZES`, FlashRAG's files as Search-R1 evaluates them) when the
world is large enough. A question appears in one split only, and so does the
set of facts it asks about (``A or B`` and ``B or A`` count as one question).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agentenvs.core.keys import derive_rng
from agentenvs.envs.search.world import RELATIONS, RELATIONS_OF, Encyclopedia, Entity

STYLES = ("nq", "triviaqa", "popqa", "hotpotqa", "2wiki", "musique", "bamboogle")
# Evaluation-set sizes of the originals (FlashRAG: nq test, triviaqa test, popqa test,
# hotpotqa dev, 2wikimultihopqa dev, musique dev, bamboogle test).
TEST_SIZES = {
    "nq": 3610,
    "triviaqa": 11313,
    "popqa": 14267,
    "hotpotqa": 7405,
    "2wiki": 12576,
    "musique": 2417,
    "bamboogle": 125,
}
VALID_SIZE = 500
TRAIN_SIZE = 20_000
# FlashRAG's file names per style, and the split each evaluation file stands for.
FLASHRAG_NAMES = {
    "nq": "nq",
    "triviaqa": "triviaqa",
    "popqa": "popqa",
    "hotpotqa": "hotpotqa",
    "2wiki": "2wikimultihopqa",
    "musique": "musique",
    "bamboogle": "bamboogle",
}

# Question forms over a noun phrase ``{x}``; NQ's are lowercase queries.
NQ_FORMS = {
    "occupation": "what was the profession of {x}",
    "birth_year": "when was {x} born",
    "birthplace": "where was {x} born",
    "father": "who was the father of {x}",
    "spouse": "who was {x} married to",
    "educated_at": "where did {x} go to school",
    "country": "what country is {x} in",
    "founded_year": "when was {x} founded",
    "capital": "what is the capital of {x}",
    "currency": "what is the currency of {x}",
    "founder": "who founded {x}",
    "headquarters": "where is {x} headquartered",
    "inception": "when was {x} established",
    "creator": "who created {x}",
    "genre": "what genre is {x}",
    "release_year": "when did {x} come out",
    "location": "where did {x} take place",
    "year": "when did {x} happen",
}
FORMS = {
    "occupation": "What was the profession of {x}?",
    "birth_year": "In what year was {x} born?",
    "birthplace": "In which city was {x} born?",
    "father": "Who was the father of {x}?",
    "spouse": "Who was the spouse of {x}?",
    "educated_at": "Where was {x} educated?",
    "country": "In which country is {x}?",
    "founded_year": "In what year was {x} founded?",
    "capital": "What is the capital of {x}?",
    "currency": "What is the currency of {x}?",
    "founder": "Who founded {x}?",
    "headquarters": "In which city is {x} headquartered?",
    "inception": "In what year was {x} established?",
    "creator": "Who created {x}?",
    "genre": "What genre is {x}?",
    "release_year": "In what year was {x} released?",
    "location": "Where did {x} take place?",
    "year": "In what year did {x} happen?",
}
POPQA_FORMS = {
    "occupation": "What is {x}'s occupation?",
    "birthplace": "In what city was {x} born?",
    "father": "Who is the father of {x}?",
    "genre": "What genre is {x}?",
    "country": "In what country is {x}?",
    "capital": "What is the capital of {x}?",
    "creator": "Who was the {role} of {x}?",
}
CREATOR_ROLES = {
    "novel": "author",
    "poem": "author",
    "film": "director",
    "album": "producer",
    "opera": "composer",
}
RELATIVE = {  # Bamboogle: "the person who founded X"
    "founder": "the person who founded {x}",
    "creator": "the person who created {x}",
    "spouse": "the person who married {x}",
    "father": "the father of {x}",
    "birthplace": "the city where {x} was born",
    "headquarters": "the city where {x} has its seat",
    "educated_at": "the institution where {x} studied",
    "location": "the city where {x} took place",
    "capital": "the capital of {x}",
    "country": "the country where {x} lies",
}
# TriviaQA style: "Which {occupation of the answer} {verb} {subject}?", the answer a person with aliases.
TRIVIA_KINDS = ("organisation", "work", "person", "person", "person")
TRIVIA_RELATIONS = {
    "organisation": (("founder", "founded"),),
    "work": (("creator", "created"),),
    "person": (("spouse", "married"), ("father", "was the father of")),
}
ORDERED = ("birth_year", "founded_year", "inception", "release_year", "year")
EARLIER = {
    "birth_year": "was born first",
    "founded_year": "was founded first",
    "inception": "was established first",
    "release_year": "came out first",
    "year": "happened first",
}


@dataclass(frozen=True)
class Question:
    """One QA task: its text, golden answers, and (built-in sets) the evidence path.

    ``hops`` holds ``(subject title, relation, evidence passage id)`` per fact
    looked up, in reading order; official questions have none.
    """

    id: str
    question: str
    golden_answers: tuple[str, ...]
    hops: tuple[tuple[str, str, str], ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def evidence(self) -> tuple[str, ...]:
        """Gold evidence passage ids, without repeats, in reading order."""
        return tuple(dict.fromkeys(hop[2] for hop in self.hops))

    def to_flashrag(self) -> dict[str, Any]:
        metadata = dict(self.metadata)
        if self.hops:
            metadata["hops"] = [list(hop) for hop in self.hops]
        return {
            "id": self.id,
            "question": self.question,
            "golden_answers": list(self.golden_answers),
            "metadata": metadata,
        }

    @classmethod
    def from_flashrag(cls, row: dict[str, Any], default_id: str = "") -> Question:
        """A question from a FlashRAG row, as published files hold them.

        ``golden_answers`` may be a list or one value; numbers in it (years,
        counts) become their text (``1984``, ``1984.0`` → ``"1984"``, ``2.5`` →
        ``"2.5"``, ``true`` → ``"yes"``) and nulls and empty strings are dropped;
        a row with no answer left raises
        ``ValueError``. A row without an ``id`` (or with an empty one) takes
        ``default_id``.
        """
        metadata = row.get("metadata")
        metadata = dict(metadata) if isinstance(metadata, dict) else {}
        hops = tuple(tuple(str(part) for part in hop) for hop in metadata.pop("hops", ()))
        answers = row.get("golden_answers")
        if not isinstance(answers, list):
            answers = [answers]
        texts = tuple(text for text in (answer_text(a) for a in answers if a is not None) if text.strip())
        if not texts:
            raise ValueError(f"question {row.get('id', default_id)!r} has no golden answer: {answers!r}")
        question = row.get("question")
        if not isinstance(question, (str, int, float)) or not str(question).strip():
            raise ValueError(f"question {row.get('id', default_id)!r} has no question text")
        return cls(flashrag_id(row.get("id"), default_id), str(question), texts, hops, metadata)


def answer_text(answer: Any) -> str:
    """A golden answer as text: numbers as written, a float that is a whole number without its ".0"."""
    if isinstance(answer, bool):
        return "yes" if answer else "no"
    if isinstance(answer, float) and answer.is_integer():
        return str(int(answer))
    return str(answer)


def flashrag_id(raw_id: Any, default_id: str) -> str:
    """A row's ``id`` as text; ``default_id`` when it has none (absent, null or empty)."""
    if raw_id is None or raw_id == "":
        return default_id
    if isinstance(raw_id, float) and raw_id.is_integer():
        return str(int(raw_id))
    return str(raw_id)


def write_questions(questions: Iterable[Question], path: str | Path) -> None:
    """Write questions as FlashRAG jsonl (``id``, ``question``, ``golden_answers``, ``metadata``)."""
    with open(path, "w", encoding="utf-8") as out:
        for question in questions:
            out.write(json.dumps(question.to_flashrag(), ensure_ascii=False) + "\n")


def read_questions(path: str | Path) -> list[Question]:
    """Read a FlashRAG jsonl question file."""
    with open(path, encoding="utf-8") as lines:
        return [Question.from_flashrag(json.loads(line)) for line in lines if line.strip()]


class QuestionMaker:
    """Draws questions of every style from one encyclopedia."""

    def __init__(self, world: Encyclopedia) -> None:
        self.world = world
        by_pop = sorted(range(len(world.entities)), key=lambda i: world.rank_of[i])
        self.head = by_pop[: max(10, len(by_pop) // 3)]
        self.tail = by_pop[len(by_pop) // 3 :]
        self.by_kind: dict[str, list[int]] = {}
        for entity in world.entities:
            self.by_kind.setdefault(entity.kind, []).append(entity.index)

    # ----------------------------------------------------------------- pieces
    def answers(self, entity: Entity, relation: str) -> tuple[str, ...]:
        value = entity.facts[relation]
        if isinstance(value, str):
            return (value,)
        target = self.world.entities[value]
        return tuple(dict.fromkeys((target.title, target.name, *target.aliases)))

    def hop(self, entity: Entity, relation: str) -> tuple[str, str, str]:
        return entity.title, relation, str(self.world.evidence[(entity.index, relation)])

    def walk(self, start: Entity, relations: Sequence[str]) -> list[Entity]:
        """The entities a chain of relations visits from ``start`` (the subjects of each hop)."""
        subjects = [start]
        for relation in relations[:-1]:
            subjects.append(self.world.entities[subjects[-1].facts[relation]])
        return subjects

    def random_chain(self, start: Entity, hops: int, rng: np.random.Generator) -> list[str] | None:
        """Relations for a ``hops``-long chain from ``start``: entity-valued ones, then any."""
        relations: list[str] = []
        entity = start
        for step in range(hops):
            choices = [r for r in RELATIONS_OF[entity.kind] if step == hops - 1 or RELATIONS[r].target]
            if not choices:
                return None
            relation = choices[int(rng.integers(len(choices)))]
            relations.append(relation)
            if step < hops - 1:
                entity = self.world.entities[entity.facts[relation]]
        subjects = self.walk(start, relations)
        if len({s.index for s in subjects}) < len(subjects):
            return None  # a loop back makes the phrasing ambiguous
        return relations

    def chain_question(self, start: Entity, relations: Sequence[str], forms, phrase_of) -> tuple[str, list]:
        phrase = start.title
        for relation in relations[:-1]:
            phrase = phrase_of(relation).format(s=phrase, x=phrase)
        subjects = self.walk(start, relations)
        hops = [self.hop(subject, relation) for subject, relation in zip(subjects, relations, strict=False)]
        return forms[relations[-1]].format(x=phrase), hops

    # ----------------------------------------------------------------- styles
    def draw(self, style: str, rng: np.random.Generator) -> tuple[str, tuple[str, ...], list] | None:
        """One candidate (question, golden answers, hops), or None when the draw does not fit."""
        draw = {
            "nq": self._nq,
            "triviaqa": self._triviaqa,
            "popqa": self._popqa,
            "hotpotqa": self._hotpotqa,
            "2wiki": self._two_wiki,
            "musique": self._musique,
            "bamboogle": self._bamboogle,
        }[style]
        return draw(rng)

    def _pick(self, pool: Sequence[int], rng) -> Entity:
        return self.world.entities[pool[int(rng.integers(len(pool)))]]

    def _nq(self, rng):
        subject = self._pick(self.head, rng)
        relations = RELATIONS_OF[subject.kind]
        relation = relations[int(rng.integers(len(relations)))]
        text = NQ_FORMS[relation].format(x=subject.title).lower()
        return text, self.answers(subject, relation), [self.hop(subject, relation)]

    def _triviaqa(self, rng):
        subject = self._pick(self.by_kind[TRIVIA_KINDS[int(rng.integers(len(TRIVIA_KINDS)))]], rng)
        choices = TRIVIA_RELATIONS[subject.kind]
        relation, verb = choices[int(rng.integers(len(choices)))]
        person = self.world.entities[subject.facts[relation]]
        text = f"Which {person.facts['occupation']} {verb} {subject.title}?"
        return text, self.answers(subject, relation), [self.hop(subject, relation)]

    def _popqa(self, rng):
        subject = self._pick(self.tail, rng)
        relations = [r for r in RELATIONS_OF[subject.kind] if r in POPQA_FORMS]
        if not relations:
            return None
        relation = relations[int(rng.integers(len(relations)))]
        role = CREATOR_ROLES.get(subject.detail, "creator")
        text = POPQA_FORMS[relation].format(x=subject.title, role=role)
        return text, self.answers(subject, relation), [self.hop(subject, relation)]

    def _comparison(self, kind_pool: Sequence[int], rng, relation: str | None = None):
        first, second = self._pick(kind_pool, rng), self._pick(kind_pool, rng)
        ordered = [r for r in RELATIONS_OF[first.kind] if r in ORDERED]
        if first.index == second.index or not ordered:
            return None
        relation = relation or ordered[0]
        a, b = int(first.facts[relation]), int(second.facts[relation])
        if a == b:
            return None
        winner = first if a < b else second
        text = f"Which {EARLIER[relation]}, {first.title} or {second.title}?"
        answers = tuple(dict.fromkeys((winner.title, winner.name, *winner.aliases)))
        return text, answers, [self.hop(first, relation), self.hop(second, relation)]

    def _bridge(self, rng, hops: int, forms=FORMS, pool=None, phrase_of=None):
        start = self._pick(pool or range(len(self.world.entities)), rng)
        relations = self.random_chain(start, hops, rng)
        if relations is None:
            return None
        phrase_of = phrase_of or (lambda r: RELATIONS[r].phrase)
        if any(phrase_of(r) is None for r in relations[:-1]):
            return None
        text, path = self.chain_question(start, relations, forms, phrase_of)
        subjects = self.walk(start, relations)
        return text, self.answers(subjects[-1], relations[-1]), path

    def _hotpotqa(self, rng):
        if rng.random() < 0.2:
            kind = ("person", "organisation", "work", "event", "city")[int(rng.integers(5))]
            return self._comparison(self.by_kind[kind], rng)
        return self._bridge(rng, 2)

    def _two_wiki(self, rng):
        kind = int(rng.integers(4))
        if kind == 0:
            return self._bridge(rng, 2)
        if kind == 1:
            return self._comparison(self.by_kind["work"], rng, "release_year")
        if kind == 2:
            person = self._pick(self.by_kind["person"], rng)
            relations, name = (
                (("father", "father"), "paternal grandfather")
                if rng.random() < 0.5
                else (("spouse", "father"), "father-in-law")
            )
            subjects = self.walk(person, relations)
            if len({s.index for s in subjects}) < len(subjects):
                return None
            hops = [self.hop(s, r) for s, r in zip(subjects, relations, strict=False)]
            return f"Who is the {name} of {person.title}?", self.answers(subjects[-1], relations[-1]), hops
        first, second = self._pick(self.by_kind["work"], rng), self._pick(self.by_kind["work"], rng)
        if first.index == second.index:
            return None
        creators = [self.world.entities[w.facts["creator"]] for w in (first, second)]
        years = [int(c.facts["birth_year"]) for c in creators]
        if years[0] == years[1] or creators[0].index == creators[1].index:
            return None
        winner = first if years[0] < years[1] else second
        hops = [
            self.hop(first, "creator"),
            self.hop(creators[0], "birth_year"),
            self.hop(second, "creator"),
            self.hop(creators[1], "birth_year"),
        ]
        text = f"Which work has the creator who was born first, {first.title} or {second.title}?"
        return text, tuple(dict.fromkeys((winner.title, winner.name, *winner.aliases))), hops

    def _musique(self, rng):
        return self._bridge(rng, int(rng.integers(2, 5)))

    def _bamboogle(self, rng):
        return self._bridge(rng, 2, pool=self.tail, phrase_of=RELATIVE.get)


def make_questions(world: Encyclopedia, style: str, count: int, seed: int = 0) -> Iterator[Question]:
    """Up to ``count`` distinct questions of ``style`` (fewer when the world runs out)."""
    maker = QuestionMaker(world)
    rng = derive_rng("search.questions", style, seed)
    seen: set[str] = set()
    facts_seen: set[tuple] = set()  # one question per set of facts: "A or B" and "B or A" are one question
    misses = 0
    while len(seen) < count and misses < 2 * count + 1000:
        drawn = maker.draw(style, rng)
        if drawn is None:
            misses += 1
            continue
        text, answers, hops = drawn
        facts = tuple(sorted(hops))
        if text in seen or facts in facts_seen:
            misses += 1
            continue
        seen.add(text)
        facts_seen.add(facts)
        yield Question(f"{style}-{len(seen) - 1:06d}", text, answers, tuple(hops), {"style": style})


def split_sizes(style: str, available: int) -> dict[str, int]:
    """Test as the original's evaluation set, valid 500, train the rest (up to 20k); a small
    world keeps a quarter of its questions for train and a tenth for valid."""
    valid = min(VALID_SIZE, max(1, available // 10))
    test = min(TEST_SIZES[style], max(1, available - valid - available // 4))
    return {"train": max(0, min(TRAIN_SIZE, available - test - valid)), "valid": valid, "test": test}

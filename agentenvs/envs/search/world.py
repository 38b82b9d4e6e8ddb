"""The built-in encyclopedia: a deterministic world of entities, facts and passages.

Entities come in six kinds (person, city, country, organisation, work, event).
Each has a name, aliases, a long-tail popularity (Zipf over a shuffled rank)
and facts: attributes (a year, an occupation, a genre) and relations to other
entities (born in, founded by, capital of, ...). Every relation is functional
(one object per subject), so a question built from a chain of relations has
exactly one answer.

The world is rendered as Wikipedia-style passages of about 100 words, titled
by the entity's article title, in the corpus format of ``retrieval_index``
(``contents = '"Title"\\nText'``). Each fact is stated in exactly one passage
of its subject's article: that passage is the fact's *gold evidence*. The
rest of an article (popular entities get longer ones) is filler that mentions
related entities and reuses the relation words ("born", "founded", "capital"),
and names are shared on purpose: people share surnames, cities and companies
are named after people, two entities of different kinds may carry the same
name (the titles then disambiguate, ``Kolby (film)``). So a query must name
the right entity and the right relation to reach the gold passage.

Everything is drawn from private ``random.Random`` instances seeded by
:func:`~agentenvs.core.keys.derive_seed` of ``(purpose, seed, index)`` (numpy's
scalar draws cost ten times more, and a world draws millions), so the world is
identical on every machine and process.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from agentenvs.core.keys import derive_seed

GENERATOR_VERSION = "1"

KINDS = ("person", "city", "country", "organisation", "work", "event")
# Share of entities of each kind (countries are capped, see _kind_counts).
KIND_SHARES = {
    "person": 0.42,
    "city": 0.16,
    "country": 0.01,
    "organisation": 0.14,
    "work": 0.19,
    "event": 0.08,
}

OCCUPATIONS = (
    "painter",
    "novelist",
    "physicist",
    "architect",
    "composer",
    "botanist",
    "cartographer",
    "sculptor",
    "chemist",
    "poet",
    "engineer",
    "historian",
    "astronomer",
    "economist",
    "photographer",
    "diplomat",
    "mathematician",
    "playwright",
    "linguist",
    "surgeon",
)
GENRES = (
    "science fiction",
    "historical drama",
    "comedy",
    "mystery",
    "documentary",
    "fantasy",
    "thriller",
    "romance",
    "satire",
    "western",
)
WORK_TYPES = ("novel", "film", "album", "opera", "poem")
ORG_TYPES = ("university", "company", "museum", "orchestra", "observatory", "publishing house")
EVENT_TYPES = ("battle", "treaty", "festival", "expedition", "congress")
CURRENCIES = ("florin", "mark", "crown", "dinar", "thaler", "ducat", "lira", "real", "peso", "rand")
REGIONS = (
    "the northern archipelago",
    "the central plateau",
    "the western coast",
    "the eastern steppe",
    "the southern highlands",
)
WORK_NOUNS = (
    "Affair",
    "Orchard",
    "Letters",
    "Tide",
    "Crown",
    "Winter",
    "Harbour",
    "Garden",
    "Signal",
    "Mirror",
)
EVENT_ADJECTIVES = ("Great", "First", "Second", "Last", "Northern", "Golden")
ONSETS = (
    "b",
    "br",
    "c",
    "d",
    "dr",
    "f",
    "g",
    "gr",
    "h",
    "k",
    "kl",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "st",
    "t",
    "tr",
    "v",
    "z",
    "al",
    "el",
    "or",
)
VOWELS = ("a", "e", "i", "o", "u", "ae", "ia", "ou", "ei")
CODAS = ("", "n", "r", "l", "s", "th", "nd", "rk", "m", "x", "ck", "ld")


@dataclass(frozen=True)
class Relation:
    """A functional fact type: subject kind, object kind (``None`` for a literal) and its texts.

    ``sentences`` are the ways a passage states the fact (``{s}`` subject
    title, ``{o}`` object); ``phrase`` names the object in a question chain
    (``the founder of {s}``); ``keywords`` are the words a query for it uses.
    """

    name: str
    subject: str
    target: str | None
    sentences: tuple[str, ...]
    phrase: str
    keywords: str


RELATIONS: dict[str, Relation] = {
    r.name: r
    for r in (
        Relation(
            "occupation",
            "person",
            None,
            ("{s} worked in the profession of {o}.", "By profession {s} was one of the {o}s of the period."),
            "the occupation of {s}",
            "occupation profession",
        ),
        Relation(
            "birth_year",
            "person",
            None,
            ("{s} was born in the year {o}.", "Records show that {s} was born in the year {o}."),
            "the birth year of {s}",
            "born year",
        ),
        Relation(
            "birthplace",
            "person",
            "city",
            ("{s} was born in the city of {o}.", "{s} was born and raised in the city of {o}."),
            "the birthplace of {s}",
            "born city",
        ),
        Relation(
            "father",
            "person",
            "person",
            ("{s} was the child of {o}.", "The father of {s} was {o}."),
            "the father of {s}",
            "father child parent",
        ),
        Relation(
            "spouse",
            "person",
            "person",
            ("{s} married {o}.", "{s} was married to {o}."),
            "the spouse of {s}",
            "married spouse",
        ),
        Relation(
            "educated_at",
            "person",
            "organisation",
            ("{s} studied at {o}.", "{s} was educated at {o}."),
            "the institution where {s} studied",
            "studied educated at",
        ),
        Relation(
            "country",
            "city",
            "country",
            (
                "{s} is a city that lies in the country of {o}.",
                "{s} lies within the borders of the country {o}.",
            ),
            "the country of {s}",
            "lies country",
        ),
        Relation(
            "founded_year",
            "city",
            None,
            ("{s} was founded in {o}.", "The settlement of {s} was founded in {o}."),
            "the founding year of {s}",
            "founded in",
        ),
        Relation(
            "capital",
            "country",
            "city",
            ("The capital of {s} is {o}.", "{o} serves as the capital of {s}."),
            "the capital of {s}",
            "capital",
        ),
        Relation(
            "currency",
            "country",
            None,
            ("The currency of {s} is the {o}.", "{s} uses the {o} as its currency."),
            "the currency of {s}",
            "currency",
        ),
        Relation(
            "founder",
            "organisation",
            "person",
            ("{s} was founded by {o}.", "{o} established {s}."),
            "the founder of {s}",
            "founded by established",
        ),
        Relation(
            "headquarters",
            "organisation",
            "city",
            ("{s} is headquartered in {o}.", "The seat of {s} is in {o}."),
            "the headquarters city of {s}",
            "headquartered seat",
        ),
        Relation(
            "inception",
            "organisation",
            None,
            ("{s} was established in {o}.", "{s} opened its doors in {o}."),
            "the founding year of {s}",
            "established year opened",
        ),
        Relation(
            "creator",
            "work",
            "person",
            ("{s} was created by {o}.", "{s} is a work by {o}."),
            "the creator of {s}",
            "created work author director",
        ),
        Relation(
            "genre",
            "work",
            None,
            ("{s} belongs to the {o} genre.", "Critics classify {s} as {o}."),
            "the genre of {s}",
            "genre",
        ),
        Relation(
            "release_year",
            "work",
            None,
            ("{s} was released in {o}.", "{s} first appeared in {o}."),
            "the release year of {s}",
            "released year appeared",
        ),
        Relation(
            "location",
            "event",
            "city",
            ("{s} took place in {o}.", "{s} was held in {o}."),
            "the place of {s}",
            "took place held location",
        ),
        Relation(
            "year",
            "event",
            None,
            ("{s} happened in {o}.", "{s} is dated to {o}."),
            "the year of {s}",
            "happened year dated",
        ),
    )
}
RELATIONS_OF: dict[str, tuple[str, ...]] = {
    kind: tuple(name for name, r in RELATIONS.items() if r.subject == kind) for kind in KINDS
}
FILLER = (
    "Historians have compared {s} with {m}, though the two are often confused.",
    "Little is known about the early years of {s}, and several accounts disagree.",
    "A later study of {m} mentions {s} only in passing.",
    "Visitors who came to know {m} often heard about {s} as well.",
    "The archive devoted to {s} holds letters, maps and photographs from the period.",
    "Some sources place {m} in the same region as {s}, a claim others reject.",
    "Writers in {region} have described {s} in travel guides and almanacs.",
    "Its reputation grew steadily, and by the end of the century {s} was widely known.",
    "Commentators have noted that the name {s} is shared by several unrelated subjects.",
    "An exhibition about {m} and {s} toured several cities and drew large crowds.",
)


@dataclass(frozen=True)
class Entity:
    """One subject of the encyclopedia; ``facts`` maps relation name to an entity index or a literal."""

    index: int
    kind: str
    detail: str  # the sub-kind: "university", "film", "battle", ... (the kind itself otherwise)
    name: str
    title: str
    aliases: tuple[str, ...]
    popularity: int
    facts: dict[str, int | str] = field(hash=False)


@dataclass(frozen=True)
class WorldPassage:
    """One rendered passage: its title, text, subject entity and the facts it states."""

    title: str
    text: str
    entity: int
    facts: tuple[str, ...]


def _kind_counts(num_entities: int) -> dict[str, int]:
    counts = {kind: max(2, math.ceil(num_entities * share)) for kind, share in KIND_SHARES.items()}
    counts["country"] = min(max(4, counts["country"]), 200)
    return counts


def passages_per_entity(rank: int) -> int:
    """Article length by popularity rank: the head gets long articles, the tail one or two passages."""
    return 3 + max(0, 6 - int(math.log2(rank + 1) / 1.8))


def entities_for(num_passages: int) -> int:
    """How many entities give at least ``num_passages`` passages (articles by rank)."""
    total, count = 0, 0
    while total < num_passages:
        total += passages_per_entity(count)
        count += 1
    return max(count + count // 20, 40)  # slack: kind counts round and the country count is capped


class NameMaker:
    """Pronounceable unique names; surnames are reused on purpose (shared-name distractors)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def word(self, syllables: int) -> str:
        parts = [
            self.rng.choice(ONSETS) + self.rng.choice(VOWELS) + self.rng.choice(CODAS)
            for _ in range(syllables)
        ]
        return "".join(parts).capitalize()

    def unique(self, make) -> str:
        for _ in range(1000):
            name = make()
            if name not in self.used:
                self.used.add(name)
                return name
        raise RuntimeError("name space exhausted")


class Encyclopedia:
    """Entities and their rendered passages, generated from ``(num_passages, seed)``."""

    def __init__(self, num_passages: int, seed: int = 0) -> None:
        self.num_passages = num_passages
        self.seed = seed
        self.entities = self._make_entities(entities_for(num_passages))
        self.rank_of: list[int]
        self.passages: list[WorldPassage] = []
        self.evidence: dict[tuple[int, str], int] = {}  # (entity, relation) -> passage row
        for entity in self.entities:
            self._render(entity)

    # -------------------------------------------------------------- entities
    def _make_entities(self, count: int) -> list[Entity]:
        rng = random.Random(derive_seed("search.world.names", self.seed, count))
        words = NameMaker(rng)
        counts = _kind_counts(count)
        surnames = [words.unique(lambda: words.word(2)) for _ in range(max(20, count // 12))]
        given = [words.unique(lambda: words.word(rng.randrange(1, 3))) for _ in range(max(20, count // 40))]
        kinds = [kind for kind in KINDS for _ in range(counts[kind])]
        used: dict[str, set[str]] = {kind: set() for kind in KINDS}  # names are unique within a kind only
        cities: list[str] = []
        raw: list[tuple[str, str, tuple[str, ...]]] = []
        for kind in kinds:
            name, detail, aliases = self._name(kind, rng, words, surnames, given, cities)
            for _ in range(100):
                if name not in used[kind]:
                    break
                name, detail, aliases = self._name(kind, rng, words, surnames, given, cities)
            else:
                raise RuntimeError(f"cannot find a new {kind} name")
            used[kind].add(name)
            if kind == "city":
                cities.append(name)
            raw.append((name, detail, aliases))
        # a name shared by entities of different kinds: every such title says its kind
        holders: dict[str, int] = {}
        for name, _, _ in raw:
            holders[name] = holders.get(name, 0) + 1
        by_kind: dict[str, list[int]] = {kind: [] for kind in KINDS}
        for i, kind in enumerate(kinds):
            by_kind[kind].append(i)
        self.rank_of = list(range(len(kinds)))  # popularity rank per entity
        rng.shuffle(self.rank_of)
        entities: list[Entity] = []
        for i, (kind, (name, detail, aliases)) in enumerate(zip(kinds, raw, strict=False)):
            title = f"{name} ({detail})" if holders[name] > 1 else name
            popularity = int(2_000_000 / (self.rank_of[i] + 1) ** 1.1) + 3
            entities.append(Entity(i, kind, detail, name, title, aliases, popularity, {}))
        self.entities = entities
        frng = random.Random(derive_seed("search.world.facts", self.seed, count))
        for entity in entities:
            entity.facts.update(self._facts(entity, frng, by_kind))
        return entities

    @staticmethod
    def _name(kind, rng, words: NameMaker, surnames, given, cities) -> tuple[str, str, tuple[str, ...]]:
        def pick(seq):
            return str(seq[rng.randrange(len(seq))])

        if kind == "person":
            first, last = pick(given), pick(surnames)
            aliases = (f"{first[0]}. {last}", last) if rng.random() < 0.5 else (f"{first[0]}. {last}",)
            return f"{first} {last}", "person", aliases
        if kind == "city":
            name = pick(surnames) if rng.random() < 0.3 else words.word(2)
            return name, "city", (f"{name} City",) if rng.random() < 0.3 else ()
        if kind == "country":
            name = words.word(2) + "ia"
            return name, "country", (f"Republic of {name}",)
        if kind == "organisation":
            org = pick(ORG_TYPES)
            name = f"{pick(surnames)} {org.title()}"
            return name, org, ("".join(w[0] for w in name.split()).upper(),)
        if kind == "work":
            wtype = pick(WORK_TYPES)
            if cities and rng.random() < 0.15:
                return pick(cities), wtype, ()
            stem = pick(surnames) if rng.random() < 0.5 else words.word(2)
            name = f"The {stem} {pick(WORK_NOUNS)}"
            return name, wtype, (name.removeprefix("The "),)
        etype = pick(EVENT_TYPES)
        return f"{pick(EVENT_ADJECTIVES)} {words.word(2)} {etype.title()}", etype, ()

    def _facts(self, entity: Entity, rng, by_kind) -> dict[str, int | str]:
        facts: dict[str, int | str] = {}
        for relation_name in RELATIONS_OF[entity.kind]:
            relation = RELATIONS[relation_name]
            if relation.target is not None:
                pool = by_kind[relation.target]
                target = int(pool[rng.randrange(len(pool))])
                if target == entity.index:
                    target = int(pool[(pool.index(target) + 1) % len(pool)])
                facts[relation_name] = target
            else:
                facts[relation_name] = self._literal(relation_name, entity, rng)
        return facts

    def _literal(self, relation: str, entity: Entity, rng) -> str:
        if relation == "occupation":
            return str(OCCUPATIONS[rng.randrange(len(OCCUPATIONS))])
        if relation == "genre":
            return str(GENRES[rng.randrange(len(GENRES))])
        if relation == "currency":
            return f"{entity.name.lower()[:4]}ian {CURRENCIES[rng.randrange(len(CURRENCIES))]}"
        low, high = {
            "birth_year": (1700, 1990),
            "founded_year": (900, 1900),
            "inception": (1600, 2000),
            "release_year": (1880, 2015),
            "year": (1500, 2010),
        }[relation]
        return str(rng.randrange(low, high))

    # -------------------------------------------------------------- passages
    def object_text(self, entity: Entity, relation: str) -> str:
        value = entity.facts[relation]
        return self.entities[value].title if isinstance(value, int) else value

    def _render(self, entity: Entity) -> None:
        rng = random.Random(derive_seed("search.world.text", self.seed, entity.index))
        relations = list(RELATIONS_OF[entity.kind])
        count = passages_per_entity(self.rank_of[entity.index])
        # facts spread over the first passages; later ones are filler only
        chunks: list[list[str]] = [[] for _ in range(count)]
        fact_slots = max(1, min(count, len(relations)))
        for i, relation in enumerate(relations):
            chunks[i % fact_slots].append(relation)
        related = [v for v in entity.facts.values() if isinstance(v, int)] or [entity.index]
        for part, facts in enumerate(chunks):
            sentences: list[str] = []
            if part == 0:
                sentences.append(self._intro(entity))
            for relation in facts:
                template = RELATIONS[relation].sentences[rng.randrange(2)]
                sentences.append(template.format(s=entity.title, o=self.object_text(entity, relation)))
            # each filler sentence at most once per passage, so no passage repeats itself
            fillers = iter(rng.sample(FILLER, len(FILLER)))
            while sum(len(s.split()) for s in sentences) < 90:
                mention = self.entities[related[rng.randrange(len(related))]]
                if rng.random() < 0.5:
                    mention = self.entities[rng.randrange(len(self.entities))]
                filler = next(fillers)
                sentences.append(
                    filler.format(
                        s=entity.title, m=mention.title, region=REGIONS[rng.randrange(len(REGIONS))]
                    )
                )
            row = len(self.passages)
            for relation in facts:
                self.evidence[(entity.index, relation)] = row
            self.passages.append(WorldPassage(entity.title, " ".join(sentences), entity.index, tuple(facts)))

    def _intro(self, entity: Entity) -> str:
        also = f" (also known as {', '.join(entity.aliases)})" if entity.aliases else ""
        article = "an" if entity.detail[0] in "aeiou" else "a"
        return f"{entity.title}{also} is {article} {entity.detail} described in this encyclopedia."

    def iter_passages(self) -> Iterator[WorldPassage]:
        return iter(self.passages)

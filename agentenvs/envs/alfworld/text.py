"""What ALFWorld says: entity names and the sentences of ``alfred.twl2``.

The reference engine renders every observation from the grammar
``alfworld/data/alfred.twl2`` over its fact set; this module holds the same
sentences as functions of our world. Lists follow the grammar's list rule
(", " between items, ", and " before the last, "nothing" when empty) and its
order (facts sorted by the PDDL ids of their arguments). Every indefinite
article is "a", as the reference engine sets it for every entity.

Names follow ALFWorld's demangler: ``Cabinet|+00.68|...`` (mangled
``cabinet_bar__plus_00_dot_68...``) becomes ``cabinet N``, where the ids of
one kind are numbered in *descending* sorted-id order (the first id in sorted
order gets the highest number); ``Sink|...|SinkBasin`` becomes ``sinkbasin``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

INTRO_HEADER = "-= Welcome to TextWorld, ALFRED! =-"
NOTHING_HAPPENS = "Nothing happens."
HELP_TEXT = (
    "Available commands:\n"
    "  look:                             look around your current location\n"
    "  inventory:                        check your current inventory\n"
    "  go to (receptacle):               move to a receptacle\n"
    "  open (receptacle):                open a receptacle\n"
    "  close (receptacle):               close a receptacle\n"
    "  take (object) from (receptacle):  take an object from a receptacle\n"
    "  move (object) to (receptacle):  place an object in or on a receptacle\n"
    "  examine (something):              examine a receptacle or an object\n"
    "  use (object):                     use an object\n"
    "  heat (object) with (receptacle):  heat an object using a receptacle\n"
    "  clean (object) with (receptacle): clean an object using a receptacle\n"
    "  cool (object) with (receptacle):  cool an object using a receptacle\n"
    "  slice (object) with (object):     slice an object using a sharp object\n"
)


@dataclass(frozen=True)
class FileVersion:
    """The sentences that differ between ALFWorld's two published game-file versions.

    The raw ``json_2.1.1`` files have no ``help`` action, place with
    ``put O in/on R`` and, by a typo in their grammar (``{lend.name}``), name the
    arrival *location* ("You arrive at loc 24."). ALFWorld's patch script turns
    them into 2.1.2: it adds ``help``, renames the placing command to
    ``move O to R`` and names the receptacle ("You arrive at desk 2.").
    ``{o}`` and ``{r}`` stand for the object's and the receptacle's names.
    """

    name: str
    put_command: str
    put_feedback: str
    arrival_names_location: bool
    has_help: bool


RAW_2_1_1 = FileVersion("2.1.1", "put {o} in/on {r}", "You put the {o} in/on the {r}.", True, False)
PATCHED_2_1_2 = FileVersion("2.1.2", "move {o} to {r}", "You move the {o} to the {r}.", False, True)


def demangled_names(ids: Iterable[str]) -> dict[str, str]:
    """Display name of every PDDL id, numbered as ALFWorld's demangler numbers them."""
    ordered = sorted(set(ids))
    kind_of: dict[str, str] = {}
    for entity in ordered:
        head, sep, _ = entity.partition("_bar_")
        if sep:
            kind_of[entity] = head + ("basin" if "basin" in entity else "")
    remaining = Counter(kind_of.values())
    names: dict[str, str] = {}
    for entity in ordered:
        kind = kind_of.get(entity)
        if kind is None:
            names[entity] = f"{_unmangle(entity)} "
            continue
        names[entity] = f"{kind} {remaining[kind]}"
        remaining[kind] -= 1
    return names


def _unmangle(entity: str) -> str:
    for code, char in (("_bar_", "|"), ("_minus_", "-"), ("_plus_", "+"), ("_dot_", "."), ("_comma_", ",")):
        entity = entity.replace(code, char)
    return entity


def mangle(alfred_id: str) -> str:
    """An ALFRED object id (``Apple|-01.75|+00.97|-00.73``) as a PDDL name."""
    for char, code in (("|", "_bar_"), ("+", "_plus_"), ("-", "_minus_"), (".", "_dot_"), (",", "_comma_")):
        alfred_id = alfred_id.replace(char, code)
    return alfred_id


def listing(items: list[str]) -> str:
    """The grammar's list: ``a, b, and c``; ``nothing`` when empty."""
    if not items:
        return "nothing"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + ", and " + items[-1]


def articled(names: Iterable[str]) -> list[str]:
    return [f"a {name}" for name in names]


def receptacle_contents(name: str, openable: bool, opened: bool, contents: list[str]) -> str:
    """``examineReceptacle.feedback``: what the agent sees at or in a receptacle."""
    if openable and opened:
        return f"The {name} is open. In it, you see {listing(articled(contents))}."
    if openable:
        return f"The {name} is closed."
    return f"On the {name}, you see {listing(articled(contents))}."


def room_overview(receptacles: list[str]) -> str:
    """``look.feedback`` away from every receptacle (the start of every game)."""
    return (
        "You are in the middle of a room. Looking quickly around you, you see "
        f"{listing(articled(receptacles))}."
    )


def facing(receptacles: list[str], floor_objects: list[str]) -> str:
    """``look.feedback`` at a receptacle's location."""
    return (
        f"You are facing the {listing(receptacles)}. Next to it, you see {listing(articled(floor_objects))}."
    )


def intro(look: str, task: str) -> str:
    """The first observation: banner, look, task sentence."""
    return f"{INTRO_HEADER}\n\n{look}\n\n{task}"


def task_sentence(goal_text: str) -> str:
    return f"Your task is to: {goal_text}."


def inventory(held: list[str]) -> str:
    if not held:
        return "You are not carrying anything."
    return f"You are carrying: {listing(articled(held))}."


def examine_object(name: str, states: Mapping[str, bool], inner: list[str]) -> str:
    """``examineObject.feedback``: the first rule of the grammar whose condition holds."""
    if states["receptacle_object"]:
        return f"This is a normal {name}. In it, you see {listing(articled(inner))}."
    clean, hot, cool, sliced = states["clean"], states["hot"], states["cool"], states["sliced"]
    for condition, text in (
        (clean and hot and sliced, f"This is a hot and clean sliced {name}."),
        (clean and cool and sliced, f"This is a cool and clean sliced {name}."),
        (clean and sliced, f"This is a clean sliced {name}."),
        (hot and sliced, f"This is a hot sliced {name}."),
        (cool and sliced, f"This is a cool sliced {name}."),
        (clean and hot, f"This is a hot and clean {name}."),
        (clean and cool, f"This is a cool and clean {name}."),
        (hot, f"This is a hot {name}."),
        (clean, f"This is a clean {name}."),
        (cool, f"This is a cold {name}."),
        (states["toggleable"] and states["toggled"], f"This {name} is on."),
        (states["toggleable"] and states["marked_untoggled"], f"This {name} is off."),
        (states["sliceable"] and sliced, f"This is a sliced {name}."),
    ):
        if condition:
            return text
    return f"There's nothing special about {name}."


def toggled(name: str, toggleable: bool, is_toggled: bool) -> str:
    if toggleable and is_toggled:
        return f"You turn on the {name}."
    if toggleable:
        return f"You turn off the {name}."
    return f"You don't see any switch on the {name}."

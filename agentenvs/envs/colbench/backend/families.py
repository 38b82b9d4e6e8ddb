"""Families of backend tasks with hidden parameters, for the built-in ColBench tasks.

A family is a kind of function a person asks for (an order total with bulk
discounts, a username check, a game score, ...). Its hidden *parameters*
(prices, thresholds, rules, rounding, edge-case answers) are drawn per task;
the request names only the function and its purpose. Each family turns its
parameters into:

- ``request``: the short, vague request the agent sees;
- ``facts``: one :class:`~agentenvs.envs.colbench.sources.Fact` per independent hidden detail, each with the
  words a question about it would use and the collaborator's answer;
- ``source``: the reference function (plain Python, no imports, ≤ 50 lines);
- ``calls``: ~10 call expressions that exercise every hidden detail.

``default`` is the guess a programmer makes without asking (the family's
most common parameters): what an agent that answers at once writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentenvs.envs.colbench.sources import Fact, pick


@dataclass(frozen=True)
class Family:
    """A kind of task; see the module docstring."""

    name: str
    function: str
    sample: Callable[[np.random.Generator], dict[str, Any]]
    request: str
    facts: Callable[[dict[str, Any]], tuple[Fact, ...]]
    source: Callable[[dict[str, Any]], str]
    calls: Callable[[dict[str, Any], np.random.Generator], list[str]]
    default: dict[str, Any]


def money(value: float) -> str:
    return f"${value:.2f}"


# ---------------------------------------------------------------- order total (pricing tiers)
def _order_sample(rng: np.random.Generator) -> dict[str, Any]:
    first = pick(rng, (5, 10, 12, 20, 25, 50))
    small = pick(rng, (5, 10, 15))
    return {
        "price": pick(rng, [x / 2 for x in range(4, 61)]),
        "tier1": first,
        "off1": small,
        "tier2": first * pick(rng, (2, 3, 4, 5)),
        "off2": small + pick(rng, (5, 10, 15)),
        "rounding": pick(rng, ("cents", "down", "up")),
        "invalid": pick(rng, (0, -1)),
    }


_ROUNDING_TEXT = {
    "cents": "Round the total to the cent.",
    "down": "Round the total down to whole dollars.",
    "up": "Round the total up to whole dollars.",
}
_ROUNDING_CODE = {
    "cents": "round(total, 2)",
    "down": "int(total // 1)",
    "up": "int(-(-total // 1))",
}


def _order_facts(p: dict[str, Any]) -> tuple[Fact, ...]:
    return (
        Fact(
            "price",
            ("price", "cost", "unit", "each", "per", "item"),
            "What does one item cost?",
            f"One item costs {money(p['price'])}.",
        ),
        Fact(
            "discounts",
            ("discount", "discounts", "bulk", "tier", "tiers", "off", "large", "bigger"),
            "What discounts apply to bigger orders?",
            f"Orders of {p['tier1']} or more items get {p['off1']}% off. "
            f"Orders of {p['tier2']} or more get {p['off2']}% off instead.",
        ),
        Fact(
            "rounding",
            ("round", "rounding", "rounded", "cents", "decimal", "decimals"),
            "How should the total be rounded?",
            _ROUNDING_TEXT[p["rounding"]],
        ),
        Fact(
            "invalid",
            ("zero", "negative", "invalid", "empty", "nothing", "fewer"),
            "What should it return for zero or negative quantities?",
            f"For zero or a negative quantity return {p['invalid']}.",
        ),
    )


def _order_source(p: dict[str, Any]) -> str:
    return (
        "def order_total(quantity):\n"
        "    if quantity <= 0:\n"
        f"        return {p['invalid']}\n"
        f"    total = quantity * {p['price']}\n"
        f"    if quantity >= {p['tier2']}:\n"
        f"        total = total * (100 - {p['off2']}) / 100\n"
        f"    elif quantity >= {p['tier1']}:\n"
        f"        total = total * (100 - {p['off1']}) / 100\n"
        f"    return {_ROUNDING_CODE[p['rounding']]}\n"
    )


def _order_calls(p: dict[str, Any], rng: np.random.Generator) -> list[str]:
    quantities = [
        0,
        -int(rng.integers(1, 5)),
        1,
        p["tier1"] - 1,
        p["tier1"],
        p["tier1"] + 1,
        p["tier2"] - 1,
        p["tier2"],
        p["tier2"] + int(rng.integers(1, 40)),
        int(rng.integers(2, p["tier1"])),
    ]
    return [f"order_total({q})" for q in quantities]


ORDER_TOTAL = Family(
    name="order_total",
    function="order_total",
    sample=_order_sample,
    request="I need a Python function `order_total(quantity)` that returns what a customer pays for "
    "an order of that many items from my shop. Bigger orders get a better deal.",
    facts=_order_facts,
    source=_order_source,
    calls=_order_calls,
    default={
        "price": 10.0,
        "tier1": 10,
        "off1": 10,
        "tier2": 50,
        "off2": 20,
        "rounding": "cents",
        "invalid": 0,
    },
)


# ---------------------------------------------------------------- username check (validation rules)
def _username_sample(rng: np.random.Generator) -> dict[str, Any]:
    return {
        "min_len": int(rng.integers(2, 9)),
        "max_len": int(rng.integers(10, 25)),
        "symbols": pick(rng, ("_", "_.", "-", "", "_-", ".")),
        "letter_first": pick(rng, (True, False)),
        "lowercase": pick(rng, (True, False)),
        "needs_digit": pick(rng, (True, False)),
    }


def _symbols_text(symbols: str) -> str:
    if not symbols:
        return "Only letters and digits are allowed, no symbols at all."
    names = {"_": "underscores", ".": "dots", "-": "hyphens"}
    return "Letters and digits are allowed, plus " + " and ".join(names[s] for s in symbols) + "."


def _username_facts(p: dict[str, Any]) -> tuple[Fact, ...]:
    return (
        Fact(
            "length",
            ("long", "length", "short", "characters", "minimum", "maximum", "many"),
            "How long may a username be?",
            f"A username needs between {p['min_len']} and {p['max_len']} characters.",
        ),
        Fact(
            "symbols",
            ("symbols", "symbol", "underscore", "special", "punctuation", "allowed", "dots"),
            "Which symbols are allowed besides letters and digits?",
            _symbols_text(p["symbols"]),
        ),
        Fact(
            "first",
            ("start", "first", "begin", "begins", "starts"),
            "Are there rules for the first character?",
            "It must start with a letter." if p["letter_first"] else "Any allowed character may come first.",
        ),
        Fact(
            "case",
            ("case", "uppercase", "capital", "capitals", "lowercase", "upper"),
            "Does letter case matter, are capital letters ok?",
            "Only lowercase letters are allowed."
            if p["lowercase"]
            else "Upper and lower case are both fine.",
        ),
        Fact(
            "digit",
            ("digit", "digits", "number", "numbers", "contain", "require", "required"),
            "Must a username contain a digit?",
            "It must contain at least one digit." if p["needs_digit"] else "Digits are optional.",
        ),
    )


def _username_source(p: dict[str, Any]) -> str:
    lines = [
        "def is_valid_username(name):",
        f"    if not isinstance(name, str) or not {p['min_len']} <= len(name) <= {p['max_len']}:",
        "        return False",
        "    for ch in name:",
        f"        if not (ch.isascii() and ch.isalnum()) and ch not in {p['symbols']!r}:",
        "            return False",
    ]
    if p["letter_first"]:
        lines += ["    if not name[0].isalpha():", "        return False"]
    if p["lowercase"]:
        lines += ["    if name != name.lower():", "        return False"]
    if p["needs_digit"]:
        lines += ["    if not any(ch.isdigit() for ch in name):", "        return False"]
    lines.append("    return True")
    return "\n".join(lines) + "\n"


def _username_calls(p: dict[str, Any], rng: np.random.Generator) -> list[str]:
    body = "".join(pick(rng, list("abcdefghkmnpqrstuvwxyz")) for _ in range(p["max_len"]))
    fit = max(p["min_len"], 6)
    names = [
        body[: fit - 1] + "7",
        body[: p["min_len"] - 2] + "1",
        body[: p["max_len"] - 1] + "2",
        body[: p["max_len"]] + "34",
        body[: fit - 2] + "_9",
        body[: fit - 2] + ".9",
        body[: fit - 2] + "-9",
        "4" + body[: fit - 1],
        body[:2].upper() + body[2:fit] + "5",
        body[:fit],
    ]
    return [f"is_valid_username({name!r})" for name in names]


USERNAME = Family(
    name="username",
    function="is_valid_username",
    sample=_username_sample,
    request="Can you write `is_valid_username(name)` for my sign-up form? It should return True when "
    "the username follows our rules and False otherwise.",
    facts=_username_facts,
    source=_username_source,
    calls=_username_calls,
    default={
        "min_len": 3,
        "max_len": 16,
        "symbols": "_",
        "letter_first": True,
        "lowercase": False,
        "needs_digit": False,
    },
)


# ---------------------------------------------------------------- game score (scoring formula)
def _score_sample(rng: np.random.Generator) -> dict[str, Any]:
    return {
        "kill": int(rng.integers(1, 11)),
        "death": int(rng.integers(0, 6)),
        "assist": int(rng.integers(0, 5)),
        "floor": pick(rng, (True, False)),
        "flawless": pick(rng, (0, 5, 10, 20)),
    }


def _score_facts(p: dict[str, Any]) -> tuple[Fact, ...]:
    return (
        Fact(
            "kill",
            ("kill", "kills", "eliminate", "eliminations"),
            "How many points is a kill worth?",
            f"Each kill is worth {p['kill']} points.",
        ),
        Fact(
            "death",
            ("death", "deaths", "die", "dies", "penalty", "lose"),
            "What does a death cost?",
            f"Each death costs {p['death']} points." if p["death"] else "Deaths cost nothing.",
        ),
        Fact(
            "assist",
            ("assist", "assists", "help", "helps"),
            "How many points is an assist worth?",
            f"Each assist is worth {p['assist']} points." if p["assist"] else "Assists are worth nothing.",
        ),
        Fact(
            "floor",
            ("below", "zero", "negative", "minimum", "floor"),
            "Can the score go below zero?",
            "The score never goes below zero." if p["floor"] else "Yes, the score can be negative.",
        ),
        Fact(
            "flawless",
            ("bonus", "flawless", "extra", "without", "perfect", "no"),
            "Is there a bonus for a game without deaths?",
            f"A game with no deaths earns a {p['flawless']} point bonus."
            if p["flawless"]
            else "There is no bonus for that.",
        ),
    )


def _score_source(p: dict[str, Any]) -> str:
    lines = [
        "def player_score(kills, deaths, assists):",
        f"    score = {p['kill']} * kills - {p['death']} * deaths + {p['assist']} * assists",
    ]
    if p["flawless"]:
        lines += ["    if deaths == 0:", f"        score += {p['flawless']}"]
    if p["floor"]:
        lines += ["    score = max(score, 0)"]
    lines.append("    return score")
    return "\n".join(lines) + "\n"


def _score_calls(p: dict[str, Any], rng: np.random.Generator) -> list[str]:
    triples = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 8, 0), (3, 2, 1)]
    triples += [tuple(int(v) for v in rng.integers(0, 12, size=3)) for _ in range(4)]
    return [f"player_score({k}, {d}, {a})" for k, d, a in triples]


PLAYER_SCORE = Family(
    name="player_score",
    function="player_score",
    sample=_score_sample,
    request="Write me `player_score(kills, deaths, assists)` that computes a player's score after a "
    "match in my game, the way my league scores it.",
    facts=_score_facts,
    source=_score_source,
    calls=_score_calls,
    default={"kill": 2, "death": 1, "assist": 1, "floor": False, "flawless": 0},
)


# ---------------------------------------------------------------- name formatting (text formatting)
def _name_sample(rng: np.random.Generator) -> dict[str, Any]:
    return {
        "order": pick(rng, ("first last", "last, first", "last first")),
        "case": pick(rng, ("title", "upper", "lower", "as given")),
        "middle": pick(rng, ("initial", "full", "omit")),
        "limit": pick(rng, (0, 10, 12, 15, 20)),
    }


_ORDER_TEXT = {
    "first last": "First name, then last name, separated by a space.",
    "last, first": "Last name first, then a comma and a space, then the first name.",
    "last first": "Last name first, then a space, then the first name.",
}
_CASE_TEXT = {
    "title": "Capitalize each name, like Title Case.",
    "upper": "Everything in capital letters.",
    "lower": "Everything in lowercase.",
    "as given": "Keep the letters exactly as they were typed.",
}
_MIDDLE_TEXT = {
    "initial": "Put the middle name's initial with a dot after the first name.",
    "full": "Put the full middle name after the first name.",
    "omit": "Leave the middle name out.",
}
_CASE_CODE = {"title": ".title()", "upper": ".upper()", "lower": ".lower()", "as given": ""}


def _name_facts(p: dict[str, Any]) -> tuple[Fact, ...]:
    limit = (
        f"Cut the result to its first {p['limit']} characters." if p["limit"] else "There is no length limit."
    )
    return (
        Fact(
            "order",
            ("order", "first", "comma", "before", "come"),
            "In which order do the names go?",
            _ORDER_TEXT[p["order"]],
        ),
        Fact(
            "case",
            ("case", "capitalize", "capitalized", "capital", "uppercase", "lowercase", "letters"),
            "How should letters be capitalized?",
            _CASE_TEXT[p["case"]],
        ),
        Fact("middle", ("middle", "initial"), "What do I do with a middle name?", _MIDDLE_TEXT[p["middle"]]),
        Fact(
            "limit",
            ("length", "long", "limit", "maximum", "truncate", "cut"),
            "Is there a length limit?",
            limit,
        ),
    )


def _name_source(p: dict[str, Any]) -> str:
    given = {
        "initial": "(first + ' ' + middle[0] + '.') if middle else first",
        "full": "(first + ' ' + middle) if middle else first",
        "omit": "first",
    }[p["middle"]]
    joined = {
        "first last": "given + ' ' + last",
        "last, first": "last + ', ' + given",
        "last first": "last + ' ' + given",
    }[p["order"]]
    lines = [
        "def format_name(first, last, middle=''):",
        "    first, last, middle = first.strip(), last.strip(), middle.strip()",
        f"    given = {given}",
        f"    result = ({joined}){_CASE_CODE[p['case']]}",
    ]
    if p["limit"]:
        lines.append(f"    result = result[:{p['limit']}]")
    lines.append("    return result")
    return "\n".join(lines) + "\n"


_FIRST = ("anna", "Bjorn", "carla", "DEV", "emil", "Fatima", "george", "Hana", "ines", "Jon")
_LAST = ("smith", "Okafor", "van der berg", "LI", "garcia", "Novak", "o'neil", "Tanaka")
_MIDDLE = ("marie", "J", "louise", "Kwame", "", "")


def _name_calls(p: dict[str, Any], rng: np.random.Generator) -> list[str]:
    calls = []
    for i in range(10):
        first, last, middle = pick(rng, _FIRST), pick(rng, _LAST), pick(rng, _MIDDLE)
        if i == 0:
            first = "  " + first + " "
        if i < 3 or not middle:
            calls.append(
                f"format_name({first!r}, {last!r})"
                if i % 2
                else f"format_name({first!r}, {last!r}, {'rose'!r})"
            )
        else:
            calls.append(f"format_name({first!r}, {last!r}, {middle!r})")
    return calls


FORMAT_NAME = Family(
    name="format_name",
    function="format_name",
    sample=_name_sample,
    request="I need `format_name(first, last, middle='')` to print people's names on our badges. "
    "Can you write it so the names come out the way we like them?",
    facts=_name_facts,
    source=_name_source,
    calls=_name_calls,
    default={"order": "first last", "case": "title", "middle": "initial", "limit": 0},
)


# ---------------------------------------------------------------- review schedule (scheduling)
def _review_sample(rng: np.random.Generator) -> dict[str, Any]:
    return {
        "first": int(rng.integers(1, 5)),
        "growth": pick(rng, (2, 3, 4)),
        "cap": pick(rng, (7, 10, 14, 21, 30, 60)),
        "start": pick(rng, (0, 1)),
    }


def _review_facts(p: dict[str, Any]) -> tuple[Fact, ...]:
    return (
        Fact(
            "first",
            ("first", "gap", "initial", "soon", "after"),
            "How many days until the first review?",
            f"The first review comes {p['first']} day{'s' if p['first'] > 1 else ''} after the start day.",
        ),
        Fact(
            "growth",
            ("grow", "grows", "growth", "multiply", "longer", "increase", "factor"),
            "How much longer does each gap grow?",
            f"Each gap is {p['growth']} times the previous one.",
        ),
        Fact(
            "cap",
            ("cap", "maximum", "most", "longest", "limit"),
            "What is the longest or maximum gap?",
            f"No gap is ever longer than {p['cap']} days.",
        ),
        Fact(
            "start",
            ("start", "day", "numbered", "count", "zero", "one"),
            "Which number is the start day?",
            f"The start day is day {p['start']}.",
        ),
    )


def _review_source(p: dict[str, Any]) -> str:
    return (
        "def review_days(count):\n"
        f"    day, gap, days = {p['start']}, {p['first']}, []\n"
        "    for _ in range(count):\n"
        "        day += gap\n"
        "        days.append(day)\n"
        f"        gap = min(gap * {p['growth']}, {p['cap']})\n"
        "    return days\n"
    )


def _review_calls(p: dict[str, Any], rng: np.random.Generator) -> list[str]:
    counts = [0, 1, 2, 3, 4, 5, 6, 8, 10, int(rng.integers(11, 20))]
    return [f"review_days({n})" for n in counts]


REVIEW_DAYS = Family(
    name="review_days",
    function="review_days",
    sample=_review_sample,
    request="For my flashcard app I need `review_days(count)`: the list of days on which a card is "
    "reviewed, for its first `count` reviews, spaced out more and more.",
    facts=_review_facts,
    source=_review_source,
    calls=_review_calls,
    default={"first": 1, "growth": 2, "cap": 30, "start": 0},
)


# ---------------------------------------------------------------- late fee (pricing + calendar)
def _fee_sample(rng: np.random.Generator) -> dict[str, Any]:
    return {
        "grace": pick(rng, (0, 1, 2, 3, 5, 7)),
        "daily": pick(rng, (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)),
        "flat": pick(rng, (0, 1, 2, 5)),
        "cap": pick(rng, (5, 10, 15, 20, 25)),
    }


def _fee_facts(p: dict[str, Any]) -> tuple[Fact, ...]:
    return (
        Fact(
            "grace",
            ("grace", "free", "before", "start", "starts", "period"),
            "Is there a grace period?",
            f"The first {p['grace']} late days are free." if p["grace"] else "There is no grace period.",
        ),
        Fact(
            "daily",
            ("daily", "day", "per", "rate", "each"),
            "How much is charged per day?",
            f"Each charged day costs {money(p['daily'])}.",
        ),
        Fact(
            "flat",
            ("flat", "fixed", "once", "time", "one", "initial"),
            "Is there a one-time fee as well?",
            f"Any fee at all starts with a flat {money(p['flat'])}."
            if p["flat"]
            else "There is no flat fee.",
        ),
        Fact(
            "cap",
            ("cap", "maximum", "most", "limit", "capped"),
            "Is the fee capped?",
            f"The fee never goes above {money(p['cap'])}.",
        ),
    )


def _fee_source(p: dict[str, Any]) -> str:
    return (
        "def late_fee(days_late):\n"
        f"    charged = days_late - {p['grace']}\n"
        "    if charged <= 0:\n"
        "        return 0\n"
        f"    fee = {p['flat']} + charged * {p['daily']}\n"
        f"    return min(fee, {p['cap']})\n"
    )


def _fee_calls(p: dict[str, Any], rng: np.random.Generator) -> list[str]:
    days = [0, 1, 2, 3, 4, 6, 8, 12, 30, int(rng.integers(40, 100))]
    return [f"late_fee({d})" for d in days]


LATE_FEE = Family(
    name="late_fee",
    function="late_fee",
    sample=_fee_sample,
    request="Our library needs `late_fee(days_late)` that returns the fee in dollars for a book "
    "returned that many days late.",
    facts=_fee_facts,
    source=_fee_source,
    calls=_fee_calls,
    default={"grace": 0, "daily": 0.25, "flat": 0, "cap": 10},
)


# ---------------------------------------------------------------- letter grade (thresholds)
def _grade_sample(rng: np.random.Generator) -> dict[str, Any]:
    a = pick(rng, (85, 88, 90, 92, 93, 95))
    step = pick(rng, (5, 7, 10))
    return {
        "cutoffs": [a, a - step, a - 2 * step, a - 3 * step],
        "rounding": pick(rng, ("round", "none")),
        "invalid": pick(rng, ("Invalid", "F", "?")),
    }


def _grade_facts(p: dict[str, Any]) -> tuple[Fact, ...]:
    a, b, c, d = p["cutoffs"]
    return (
        Fact(
            "cutoffs",
            ("cutoff", "cutoffs", "threshold", "thresholds", "boundaries", "need", "letter"),
            "What score does each letter need?",
            f"An A needs {a}, a B {b}, a C {c} and a D {d}. Anything lower is an F.",
        ),
        Fact(
            "rounding",
            ("round", "rounding", "rounded", "decimal", "fractional"),
            "Are scores rounded before grading?",
            "Round the score to the nearest whole number first."
            if p["rounding"] == "round"
            else "No rounding, compare the exact score.",
        ),
        Fact(
            "invalid",
            ("invalid", "above", "outside", "range", "negative", "over"),
            "What if the score is below 0 or above 100?",
            f"Return {p['invalid']!r} for scores outside 0 to 100.",
        ),
    )


def _grade_source(p: dict[str, Any]) -> str:
    a, b, c, d = p["cutoffs"]
    lines = [
        "def letter_grade(score):",
        "    if score < 0 or score > 100:",
        f"        return {p['invalid']!r}",
    ]
    if p["rounding"] == "round":
        lines.append("    score = round(score)")
    for letter, cutoff in zip("ABCD", (a, b, c, d), strict=False):
        lines += [f"    if score >= {cutoff}:", f"        return {letter!r}"]
    lines.append("    return 'F'")
    return "\n".join(lines) + "\n"


def _grade_calls(p: dict[str, Any], rng: np.random.Generator) -> list[str]:
    a, b, c, d = p["cutoffs"]
    scores = [a, a - 0.4, b, b - 1, c - 0.6, d, d - 1, -5, 101, round(float(rng.uniform(0, 100)), 1)]
    return [f"letter_grade({s})" for s in scores]


LETTER_GRADE = Family(
    name="letter_grade",
    function="letter_grade",
    sample=_grade_sample,
    request="Please write `letter_grade(score)` that turns a test score into the letter grade my "
    "course gives.",
    facts=_grade_facts,
    source=_grade_source,
    calls=_grade_calls,
    default={"cutoffs": [90, 80, 70, 60], "rounding": "none", "invalid": "Invalid"},
)


FAMILIES: tuple[Family, ...] = (
    ORDER_TOTAL,
    USERNAME,
    PLAYER_SCORE,
    FORMAT_NAME,
    REVIEW_DAYS,
    LATE_FEE,
    LETTER_GRADE,
)

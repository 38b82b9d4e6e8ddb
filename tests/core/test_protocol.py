"""The action protocol: extraction rules, format check, and that it never raises."""

import pytest

from agentenvs.core import ActionProtocol, AnswerFormat, derive_rng, find_block, normalize_action

SOKOBAN_STYLE = ActionProtocol(separator="||", max_actions=3)


@pytest.mark.parametrize(
    ("response", "actions", "well_formed"),
    [
        ("<think>go</think><action>up</action>", ("up",), True),
        ("  <think>go</think>\n<action> up || left </action>\n", ("up", "left"), True),
        ("<action>up||left||down</action>", ("up", "left", "down"), True),
        ("up", ("up",), False),
        ("I push <action>up</action>", ("up",), False),
        ("<action>up</action> and more", ("up",), False),
        ("<action>up</action><action>left</action>", ("up",), False),
        ("<action>up</action><think>late</think>", ("up",), False),
        # the reading rule: tag names in any case, whitespace and one trailing period stripped
        ("<ACTION>up</ACTION>", ("up",), True),
        ("<Think>go</THINK><Action>up</aCtIoN>", ("up",), True),
        ("<action>\n up .\n</action>", ("up",), True),
        ("<action>up. || Left.</action>", ("up", "Left"), True),
        ("<action>up..</action>", ("up.",), True),
        ("up.", ("up",), False),
        ("<ACTION>up</action> extra", ("up",), False),
        ("<action>up</action><ACTION>left</ACTION>", ("up",), False),
    ],
)
def test_extracts_actions_and_checks_format(response, actions, well_formed):
    parsed = SOKOBAN_STYLE.parse(response)
    assert parsed.actions == actions
    assert parsed.well_formed is well_formed
    assert parsed.error is None


@pytest.mark.parametrize(
    ("response", "error"),
    [
        ("<action>up", "unclosed <action> tag"),
        ("<think>only thinking</think>", "no <action>...</action> block"),
        ("</action>", "no <action>...</action> block"),
        ("<action>   </action>", "empty action"),
        ("<action> || </action>", "empty action"),
        ("", "empty action"),
        ("<action>a||b||c||d</action>", "at most 3 actions per turn, got 4"),
        ("<ACTION>up", "unclosed <action> tag"),
        ("<THINK>only thinking</THINK>", "no <action>...</action> block"),
        ("</Action>", "no <action>...</action> block"),
        ("<action>.</action>", "empty action"),
        ("<action> . || . </action>", "empty action"),
    ],
)
def test_reports_why_no_action_was_read(response, error):
    parsed = SOKOBAN_STYLE.parse(response)
    assert parsed.error == error
    assert not parsed.well_formed


def test_case_is_folded_only_when_asked():
    assert ActionProtocol().parse("<action>Go To Fridge 1</action>").actions == ("Go To Fridge 1",)
    assert ActionProtocol(fold_case=True).parse("<action>Go To Fridge 1.</action>").actions == (
        "go to fridge 1",
    )


def test_normalize_action_is_the_rule_for_one_action():
    assert normalize_action("  Left. \n") == "Left"
    assert normalize_action("  Left. \n", fold_case=True) == "left"
    assert normalize_action("left...") == "left.."
    assert normalize_action("search[red dress.]") == "search[red dress.]"
    assert normalize_action(" . ") == ""


def test_find_block_matches_tag_names_in_any_case():
    text = "x <Answer> Paris </ANSWER> y"
    begin, start, end = find_block(text, "answer")
    assert text[begin:end] == "<Answer> Paris </ANSWER>" and text[start : end - len("</answer>")] == " Paris "
    assert find_block("<answer>open", "answer") is None


def test_think_is_required_when_configured():
    protocol = ActionProtocol(require_think=True)
    assert not protocol.parse("<action>look</action>").well_formed
    assert protocol.parse("<think>why</think><action>look</action>").well_formed


def test_custom_tags_and_bare_actions_can_be_refused():
    protocol = ActionProtocol("answer", "reason", allow_bare=False)
    assert protocol.parse("<reason>r</reason><answer>Paris</answer>").actions == ("Paris",)
    assert protocol.parse("Paris").error == "no <answer>...</answer> block"


def test_format_builds_well_formed_responses():
    response = SOKOBAN_STYLE.format(["up", "left"], think="plan")
    parsed = SOKOBAN_STYLE.parse(response)
    assert parsed.actions == ("up", "left") and parsed.well_formed and parsed.think == "plan"
    with pytest.raises(ValueError):
        ActionProtocol().format(["a", "b"])


def test_over_long_action_is_rejected():
    parsed = ActionProtocol(max_action_chars=10).parse("<action>" + "x" * 11 + "</action>")
    assert parsed.actions == () and "longer than 10" in parsed.error


class Hostile:
    def __str__(self):
        raise RuntimeError("no")


def fuzz_responses(count: int) -> list[object]:
    """Deterministic hostile inputs: tag soup, control chars, binary, huge, non-str."""
    rng = derive_rng("protocol-fuzz")
    pieces = ["<action>", "</action>", "<think>", "</think>", "||", "up", "\x00", "\n", "é", "<", ">", "/"]
    pieces += ["<ACTION>", "</Action>", ".", " ", "İ", "ß"]
    responses: list[object] = [None, b"\xff\xfe<action>x</action>", 3.5, Hostile(), ["<action>"]]
    responses.append("<action>" * 200_000)
    responses.append("x" * 3_000_000 + "<action>up</action>")
    while len(responses) < count:
        n = int(rng.integers(0, 12))
        picks = rng.integers(0, len(pieces), size=n)
        text = "".join(pieces[i] for i in picks)
        if rng.random() < 0.2:
            text += "".join(chr(int(c)) for c in rng.integers(1, 0x2FFF, size=int(rng.integers(1, 40))))
        responses.append(text)
    return responses


def test_never_raises_on_hostile_input():
    for protocol in (SOKOBAN_STYLE, ActionProtocol(require_think=True, allow_bare=False)):
        for response in fuzz_responses(10_000):
            parsed = protocol.parse(response)
            assert isinstance(parsed.actions, tuple)
            assert all(isinstance(a, str) and a for a in parsed.actions)
            assert parsed.error is None or isinstance(parsed.error, str)
            if parsed.well_formed:
                assert parsed.error is None and 1 <= len(parsed.actions) <= protocol.max_actions


def test_megabyte_response_still_yields_its_action():
    parsed = SOKOBAN_STYLE.parse("x" * 3_000_000 + "<action>up</action>")
    assert parsed.actions == ("up",) and not parsed.well_formed


def test_answer_format_declares_what_the_protocol_reads():
    assert SOKOBAN_STYLE.answer_format == AnswerFormat(("action",), "think", 3, "||")
    custom = ActionProtocol("move", "plan", separator=";", max_actions=2)
    assert custom.answer_format == AnswerFormat(("move",), "plan", 2, ";")
    assert custom.parse("<plan>p</plan><move>a ; b</move>").actions == ("a", "b")
    # without a separator one block holds one action, whatever max_actions says
    unsplit = ActionProtocol(max_actions=3)
    assert unsplit.answer_format.max_actions == 1
    assert unsplit.parse("<action>a || b</action>").actions == ("a || b",)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ((("",), "think", 1, None), "tags"),
        ((["action"], "think", 1, None), "tags"),
        ((("action",), "think", 0, None), "max_actions"),
        ((("action",), "think", 2.0, "||"), "max_actions"),
        ((("action",), "think", True, None), "max_actions"),
        ((("action",), "think", 1, " "), "separator"),
        ((("action",), "think", 3, None), "need a separator"),
    ],
)
def test_answer_format_rejects_declarations_no_protocol_can_read(fields, message):
    with pytest.raises(ValueError, match=message):
        AnswerFormat(*fields)

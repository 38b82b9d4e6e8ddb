"""agentenvs.core.untrusted: the strict JSON reader and the one-line views of hostile values and errors."""

from __future__ import annotations

import pytest

from agentenvs.core.untrusted import loads_json, one_line, short_repr


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}', "1e999", "[-1e400]"])
def test_loads_json_refuses_what_no_json_number_means(text):
    with pytest.raises(ValueError):
        loads_json(text)


def test_loads_json_reads_json_proper_and_lets_deep_nesting_raise_recursion():
    assert loads_json('{"a": [1, 2.5, "x"], "b": null}') == {"a": [1, 2.5, "x"], "b": None}
    with pytest.raises(RecursionError):
        loads_json("[" * 200_000 + "]" * 200_000)


def test_short_repr_cuts_and_says_how_long_the_value_was():
    assert short_repr("ok") == "'ok'"
    shown = short_repr("x" * 200_000)
    assert len(shown) < 120 and shown.endswith("(200002 characters)")


def test_one_line_joins_every_whitespace_run_and_cuts_only_when_asked():
    exc = ValueError("bad\n\tvalue\r\n  here\u2028" + "y" * 500)
    assert one_line(exc).startswith("bad value here ")
    assert "\n" not in one_line(exc) and "\u2028" not in one_line(exc)
    assert len(one_line(exc)) > 500
    assert len(one_line(exc, 40)) == 40

"""Backend scoring: the share of hidden test calls on which the answer's output equals the reference's.

Two rule sets, both run the code in the :class:`~agentenvs.envs.colbench.backend.sandbox.Sandbox`:

- ``"sandbox"`` (default): code fences stripped, the code and the calls run
  as one module, a call passes when both the reference and the answer return
  a value and the values are equal.
- ``"reference"``: ColBench's own rules (sweet_rl ``check_correctness``), for
  parity: an answer containing any of :data:`FORBIDDEN_SUBSTRINGS` scores 0;
  fences stripped the same way; the code is ``exec``'d as the original did,
  inside a function and afresh for every call, so its top-level names are
  locals that its functions do not see and no module-level state carries from
  one call to the next; a call passes only when the reference output is not
  ``None`` and equals the answer's (an exception counts as ``None``; a
  ``ValueError`` raised by ``==``, numpy's ambiguous truth value, fails the
  call as in the original).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentenvs.envs.colbench.backend.sandbox import CallResult, Sandbox

FORBIDDEN_SUBSTRINGS = (
    "import os",
    "from os",
    "import sys",
    "from sys",
    "sudo",
    "transformers",
    "exit(",
    "quit(",
    "argparse",
)
SCORINGS = ("sandbox", "reference")
COMPILE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)


@dataclass(frozen=True)
class Evaluation:
    """One scored answer."""

    score: float
    passed: int
    total: int
    results: tuple[CallResult, ...]
    rejected: str = ""
    errors: int = 0  # jail lines that could not be decoded + comparisons that raised (each a failed call)


def strip_fences(answer: str) -> str:
    """The code inside a markdown fence, as ColBench extracts it."""
    if "```python" in answer:
        answer = answer.split("```python")[1].split("```")[0]
    if "```" in answer:
        answer = answer.split("```")[1].split("```")[0]
    return answer


def compile_error(code: str) -> str:
    """The name of the error compiling ``code`` raises, or "" (compiling runs none of it)."""
    try:
        compile(code, "<answer>", "exec")
    except COMPILE_ERRORS as exc:
        return type(exc).__name__
    return ""


def passes(expected: CallResult, got: CallResult, scoring: str) -> bool | None:
    """Whether ``got`` matches ``expected`` (``==`` on the decoded values, as ColBench compares,
    a ``ValueError`` of the comparison a failed test as in ColBench); None when the comparison
    raised anything else (e.g. ``decimal.InvalidOperation`` on a signalling NaN): a failed call."""
    if not (expected.ok and got.ok):
        return False
    if scoring == "reference" and expected.value is None:
        return False
    try:
        return bool(expected.value == got.value)
    except ValueError:  # numpy's ambiguous truth value: ColBench's scorer counts the test as failed
        return False
    except Exception:  # noqa: BLE001 (counted by the caller as an error of this call)
        return None


def evaluate(
    answer: str,
    calls: Sequence[str],
    expected: Sequence[CallResult],
    sandbox: Sandbox,
    scoring: str = "sandbox",
) -> Evaluation:
    """Score ``answer`` against the reference outputs ``expected`` of ``calls``."""
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r}")
    total = len(calls)
    if scoring == "reference":
        forbidden = [s for s in FORBIDDEN_SUBSTRINGS if s in answer]
        if forbidden:
            failed = tuple(CallResult(False, error="forbidden") for _ in calls)
            return Evaluation(0.0, 0, total, failed, rejected=f"contains {forbidden[0]!r}")
    code = strip_fences(answer)
    error = compile_error(code)
    if error:
        return Evaluation(0.0, 0, total, tuple(CallResult(False, error=error) for _ in calls), rejected=error)
    run = sandbox.run(code, calls, split_namespace=scoring == "reference")
    verdicts = [passes(e, g, scoring) for e, g in zip(expected, run.results, strict=False)]
    passed = sum(verdict is True for verdict in verdicts)
    errors = run.malformed + sum(verdict is None for verdict in verdicts)
    return Evaluation(passed / total if total else 0.0, passed, total, run.results, errors=errors)

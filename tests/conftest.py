"""Suite-wide hooks.

A test that needs a program outside Python (Debian's chromium) skips, naming the program and how to
install it, where that program is not on ``PATH``: the env raises
:class:`~agentenvs.core.env.MissingProgram` and the report says why. Where the program is on ``PATH``
the same error fails the test as any other.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Generator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def private_search_cache(tmp_path_factory: pytest.TempPathFactory) -> Generator[None, None, None]:
    """Search's built-in worlds built into a cache of the module's own, with no data folder set."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTENVS_CACHE", str(tmp_path_factory.mktemp("search-cache")))
        patch.delenv("AGENTENVS_DATA", raising=False)
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    # Looked up, not imported: the vLLM and Lucene venvs run single test files without gymnasium,
    # and a MissingProgram can only have been raised where its module was loaded.
    missing_program = getattr(sys.modules.get("agentenvs.core.env"), "MissingProgram", None)
    error = call.excinfo.value if call.excinfo is not None else None
    if (
        missing_program is not None
        and isinstance(error, missing_program)
        and shutil.which(error.program) is None
    ):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {error}")
    return report

"""The board in a real browser: Debian's chromium driven by playwright (no browser download).

Skipped where ``/usr/bin/chromium`` is missing (CI installs the ``chromium`` package).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from fixtures.app_server import serving

from agentenvs.agents.panel import PANELS
from leaderboard.app import create_app
from leaderboard.seed import scripted_document
from leaderboard.store import Store
from leaderboard.verify import verify_submission

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs the Debian chromium package")
HOSTILE_NAME = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 1">'


@pytest.fixture(scope="module")
def board_url(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("board") / "board.sqlite")
    documents = [
        scripted_document(["agentenvs/Sokoban-v0"], agent, PANELS["smoke"]) for agent in ("random", "expert")
    ]
    hostile = copy.deepcopy(documents[0])
    hostile["metadata"]["model"] = HOSTILE_NAME
    for episode in hostile["episodes"]:
        episode["agent"] = HOSTILE_NAME
    for document in [*documents, hostile]:
        store.finish(store.add_pending(document, "test"), verify_submission(document))
    with serving(create_app(store, ["t"])) as url:
        yield f"{url}/"


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    page = browser.new_page()
    page.dialogs = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    yield page
    page.close()


def model_column(page) -> list[str]:
    return page.locator("#board tbody tr td:first-child").all_inner_texts()


def test_board_loads_sorts_and_opens_a_transcript(page, board_url):
    page.goto(board_url)
    assert page.title() == "agentenvs leaderboard"
    assert model_column(page)[0] == "expert"  # best overall score first
    page.click("th:has-text('model')")
    descending = model_column(page)
    page.click("th:has-text('model')")
    assert model_column(page) == list(reversed(descending))
    page.click("th:has-text('overall score')")
    page.click("th:has-text('overall score')")  # ascending: the floor first
    assert model_column(page)[-1] == "expert"
    page.click("a:text-is('expert')")
    page.wait_for_url("**/submissions/*")
    assert page.locator("h1").inner_text() == "expert"
    first = page.locator("details.episode").first
    first.locator("summary").click()
    assert first.locator("pre.response").first.is_visible()
    assert "<action>" in first.locator("pre.response").first.inner_text()


def test_a_script_in_a_model_name_does_not_run(page, board_url):
    page.goto(board_url)
    assert HOSTILE_NAME in model_column(page)  # shown as text
    page.click(f"a:text-is('{HOSTILE_NAME}')")
    page.wait_for_url("**/submissions/*")
    assert page.locator("h1").inner_text() == HOSTILE_NAME
    assert page.evaluate("window.__pwned") is None and page.dialogs == []


def test_board_screenshot(page, board_url, tmp_path):
    page.set_viewport_size({"width": 1200, "height": 600})
    page.goto(board_url)
    shot = tmp_path / "board.png"
    page.screenshot(path=str(shot), full_page=True)
    import numpy as np
    from PIL import Image

    image = Image.open(shot).convert("L")
    assert image.width == 1200 and image.height >= 200
    # the table drew: dark text pixels on the light page, in the board's rows
    rows_box = page.locator("#board").bounding_box()
    left, top = int(rows_box["x"]), int(rows_box["y"])
    crop = image.crop((left, top, left + int(rows_box["width"]), top + int(rows_box["height"])))
    assert int((np.asarray(crop) < 100).sum()) > 500

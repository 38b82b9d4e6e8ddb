"""The board in a real browser: Debian's chromium driven by playwright (no browser download).

Skipped where ``chromium`` is not on PATH (CI installs the ``chromium`` package). The board holds the
random and expert agents of the first main env of every family and a second Search id (the wide
case: seven family columns, one of two envs), a partial panel and a hostile name; pages are drawn
1,280 px wide and screenshotted.
"""

from __future__ import annotations

import copy
import shutil

import numpy as np
import pytest
from PIL import Image

from agentenvs.core.registration import available_main_ids, family_of
from agentenvs.eval.panel import PANELS
from leaderboard.app import create_app
from leaderboard.seed import scripted_document
from leaderboard.store import Store
from leaderboard.verify import verify_submission

from fixtures.app_server import serving

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs chromium on PATH (Debian's chromium package)")
HOSTILE_NAME = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 1">'
WIDTH = 1280


def one_env_per_family() -> list[str]:
    """The first available main env of each family, and a second Search id."""
    chosen: dict[str, list[str]] = {}
    for env_id in available_main_ids():
        family = chosen.setdefault(family_of(env_id), [])
        if len(family) < (2 if family_of(env_id) == "Search" else 1):
            family.append(env_id)
    return [env_id for ids in chosen.values() for env_id in ids]


@pytest.fixture(scope="module")
def board_url(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("board") / "board.sqlite")
    env_ids = one_env_per_family()
    documents = [scripted_document(env_ids, agent, PANELS["smoke"]) for agent in ("random", "expert")]
    partial = scripted_document(["agentenvs/Sokoban-v0"], "random", PANELS["smoke"])
    hostile = copy.deepcopy(partial)
    hostile["metadata"]["model"] = HOSTILE_NAME
    hostile["metadata"]["model_size"] = "7B"
    for episode in hostile["episodes"]:
        episode["agent"] = HOSTILE_NAME
    for document in [*documents, partial, hostile]:
        store.finish(store.add_pending(document, "seed"), verify_submission(document))
    with serving(create_app(store, ["t"])) as url:
        yield f"{url}/"


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


def open_page(browser, javascript: bool = True):
    context = browser.new_context(viewport={"width": WIDTH, "height": 800}, java_script_enabled=javascript)
    page = context.new_page()
    page.problems = []
    page.on("console", lambda message: message.type == "error" and page.problems.append(message.text))
    page.on("pageerror", lambda error: page.problems.append(str(error)))
    page.on("dialog", lambda dialog: (page.problems.append(dialog.message), dialog.dismiss()))
    return context, page


@pytest.fixture
def page(browser):
    context, page = open_page(browser)
    yield page
    context.close()


@pytest.fixture
def static_page(browser):
    context, page = open_page(browser, javascript=False)
    yield page
    context.close()


def model_column(page, table: int = 0) -> list[str]:
    rows = page.locator("table.board").nth(table).locator("tbody tr td.model a")
    return rows.all_inner_texts()


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def screenshot(page, path) -> np.ndarray:
    page.screenshot(path=str(path), full_page=True)
    image = Image.open(path).convert("L")
    assert image.width == WIDTH
    return np.asarray(image)


def test_board_fits_1280_px_ranks_within_groups_and_sorts(page, board_url, tmp_path):
    page.goto(board_url)
    assert page.title() == "agentenvs leaderboard"
    assert page.locator("section[data-panel]").count() == 2  # every main env, and the one-env panel
    assert model_column(page, 0) == ["expert", "random"]  # ranked by overall score within the group
    headers = page.locator("table.board").nth(0).locator("th").all_inner_texts()
    assert headers[-7:] == ["ALFWorld", "BabyAI", "ColBench", "Search", "Sokoban", "TextCraft", "WebShop"]
    assert no_horizontal_scroll(page), "the board scrolls sideways at 1,280 px"
    pixels = screenshot(page, tmp_path / "board.png")
    box = page.locator("table.board").first.bounding_box()
    left, top = int(box["x"]), int(box["y"])
    assert left + box["width"] <= WIDTH
    assert int((pixels[top : top + int(box["height"]), left : left + int(box["width"])] < 100).sum()) > 2000
    first = page.locator("table.board").first
    first.locator("th:has-text('model')").click()
    descending = model_column(page, 0)
    first.locator("th:has-text('model')").click()
    assert model_column(page, 0) == list(reversed(descending))
    assert page.problems == []


def test_submission_page_draws_the_family_chart_without_scrolling(page, board_url, tmp_path):
    page.goto(board_url)
    page.click("a:text-is('expert')")
    page.wait_for_url("**/submissions/*")
    assert page.locator("h1").inner_text() == "expert"
    bars = page.locator("svg.chart rect.bar")
    assert bars.count() == 7
    widths = [bars.nth(i).bounding_box()["width"] for i in range(7)]
    assert all(width > 100 for width in widths)  # the expert scores well on every family
    chart = page.locator("svg.chart").bounding_box()
    pixels = screenshot(page, tmp_path / "submission.png")
    top, left = int(chart["y"]), int(chart["x"])
    drawn = pixels[top : top + int(chart["height"]), left : left + int(chart["width"])]
    assert int((drawn < 200).sum()) > 5000  # bars, whiskers and labels are on the screenshot
    assert no_horizontal_scroll(page)
    first = page.locator("details.episode").first
    first.locator("summary").click()
    assert first.locator("pre.response").first.is_visible()
    assert page.problems == []


def test_the_board_works_without_javascript_except_sorting(static_page, board_url):
    page = static_page
    page.goto(board_url)
    rows = page.locator("table.board tbody tr")
    assert rows.count() == 4
    page.click("label[for='size-3to10b']")
    assert [rows.nth(i).is_visible() for i in range(4)].count(True) == 1  # only the 7B row is left
    page.click("label[for='size-all']")
    page.click("label[for='kind-reported']")
    assert not any(rows.nth(i).is_visible() for i in range(4))
    assert page.locator("section.reported tbody tr").first.is_visible()
    page.click("label[for='kind-all']")
    page.click("label[for='panel-test']")
    assert not page.locator("section[data-panel='smoke']").first.is_visible()
    page.click("label[for='panel-all']")
    before = model_column(page, 0)
    page.locator("table.board").first.locator("th:has-text('model')").click()
    assert model_column(page, 0) == before  # sorting is the one thing that needs the script
    page.click("a:text-is('How to submit')")
    page.wait_for_url("**/submit")
    assert page.locator("pre").count() == 3
    page.go_back()
    page.click("a:text-is('expert')")
    page.wait_for_url("**/submissions/*")
    assert page.locator("svg.chart rect.bar").count() == 7  # the chart needs no script
    page.locator("details.episode summary").first.click()
    assert page.locator("details.episode pre.response").first.is_visible()
    assert page.problems == []


def test_a_script_in_a_model_name_does_not_run(page, board_url):
    page.goto(board_url)
    assert HOSTILE_NAME in model_column(page, 1)  # shown as text
    page.click(f"a:text-is('{HOSTILE_NAME}')")
    page.wait_for_url("**/submissions/*")
    assert page.locator("h1").inner_text() == HOSTILE_NAME
    assert page.evaluate("window.__pwned") is None and page.problems == []

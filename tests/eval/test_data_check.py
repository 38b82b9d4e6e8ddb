"""``agentenvs check-data``: each family with a ``data_dir=`` checked on files in its published format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import agentenvs
from agentenvs.cli import main
from agentenvs.eval.data_check import check_data, spread, takes_data_dir

FIXTURES = Path(__file__).parents[1] / "fixtures"


def webshop_folder(root: Path) -> Path:
    """WebShop's items_shuffle_1000.json and items_ins_v2_1000.json, from the two-product fixture."""
    files = json.loads((FIXTURES / "webshop" / "two_products.json").read_text())
    (root / "items_shuffle_1000.json").write_text(json.dumps(files["items_shuffle"] + [{"asin": "nan"}]))
    (root / "items_ins_v2_1000.json").write_text(json.dumps(files["items_ins_v2"]))
    return root


def alfworld_folder(root: Path) -> Path:
    from fixtures.alfworld_published import write_published_tree

    write_published_tree(root)
    return root


def search_folder(root: Path) -> Path:
    """FlashRAG's nq/test.jsonl and a BM25 index folder over a wiki-18 style corpus at {data_dir}/index."""
    from retrieval_index import BM25Retriever, Corpus, Passage

    corpus = Corpus.from_passages(
        [
            Passage("0", "Hamlet", "Hamlet is a tragedy written by William Shakespeare."),
            Passage("1", "Paris", "Paris is the capital and largest city of France."),
        ],
        root / "index" / "corpus",
    )
    BM25Retriever.build(corpus, root / "index")
    (root / "nq").mkdir()
    rows = [
        {"id": "test_0", "question": "who wrote hamlet", "golden_answers": ["William Shakespeare"]},
        {"question": "what is the capital of france", "golden_answers": ["Paris"]},
    ]
    (root / "nq" / "test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return root


def colbench_folder(root: Path) -> Path:
    from fixtures.colbench_tasks import OFFICIAL_ROW, write_official

    return write_official(root, {"test": [OFFICIAL_ROW, OFFICIAL_ROW]})


def colbench_frontend_folder(root: Path) -> Path:
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not installed")
    from agentenvs.envs.colbench.frontend.tasks import DEFAULT_DESIGN, render_page

    (root / "frontend_tasks").mkdir()
    page = render_page({**DEFAULT_DESIGN, "business": 4})
    row = {"problem_description": "A page for my bakery.", "ground_truth": page}
    (root / "frontend_tasks" / "test.jsonl").write_text(json.dumps(row) + "\n")
    return root


# env id -> (folder writer, what the folder holds: loaded per split, skipped by reason)
FOLDERS = {
    "agentenvs/WebShop-v0": (webshop_folder, {"test": 5}, {'asin is "nan"': 1}),
    "agentenvs/ALFWorld-v0": (
        alfworld_folder,
        {"valid": 1, "test": 1},
        {
            "marked unsolvable": 1,
            "no 'solvable' key in game.tw-pddl": 1,
            "movable receptacle or sliced object (ALFWorld leaves these out)": 1,
        },
    ),
    "agentenvs/Search-NQ-v0": (search_folder, {"test": 2}, {}),
    "agentenvs/ColBench-v0": (colbench_folder, {"test": 2}, {}),
    "agentenvs/ColBench-Frontend-v0": (colbench_frontend_folder, {"test": 1}, {}),
}


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTENVS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("AGENTENVS_DATA", raising=False)


def test_every_family_with_a_data_dir_is_checked_here():
    with_data_dir = set()
    for entry in agentenvs.ENV_ENTRIES:
        if entry.variant_of is None and takes_data_dir(entry.env_id):
            with_data_dir.add(entry.entry_point)
    checked = {next(e.entry_point for e in agentenvs.ENV_ENTRIES if e.env_id == env_id) for env_id in FOLDERS}
    assert checked == with_data_dir


@pytest.mark.parametrize("env_id", list(FOLDERS))
def test_check_data_on_each_familys_published_format(env_id, tmp_path, capsys):
    write, tasks, skipped = FOLDERS[env_id]
    (tmp_path / "data").mkdir()
    folder = write(tmp_path / "data")
    report = check_data(env_id, str(folder), episodes=3)
    assert report.tasks == tasks and report.skipped == skipped
    assert not report.unreadable and not report.crashes, (report.unreadable, report.crashes)
    expert = report.agents["expert"]
    assert expert.played == min(3, sum(tasks.values())) and expert.solved == expert.played
    assert report.passed

    assert main(["check-data", env_id, str(folder), "--episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert f"tasks loaded ({', '.join(f'{s} {n}' for s, n in tasks.items())})" in out
    for reason in skipped:
        assert f"skipped: {reason}" in out
    assert "expert success" in out and "random success" in out and "check-data passed" in out


def test_human_goals_through_an_env_kwarg_and_a_task_that_does_not_load(tmp_path, capsys):
    (tmp_path / "webshop").mkdir()
    (tmp_path / "search").mkdir()
    folder = webshop_folder(tmp_path / "webshop")
    (folder / "items_human_ins.json").write_text(json.dumps({
        "B000000001": [{"instruction": "lightweight black running shoes in size 9",
                        "instruction_attributes": ["lightweight"],
                        "instruction_options": ["black | white", "9"]},
                       {"instruction": "skipped", "instruction_attributes": [], "instruction_options": []}],
    }))  # fmt: skip
    code = main(["check-data", "WebShop-v0", str(folder), "--env-kwarg", "human_goals=true"])
    out = capsys.readouterr().out
    assert code == 0 and "tasks loaded (test 1)" in out
    assert "skipped: human instruction without instruction_attributes" in out

    search = search_folder(tmp_path / "search")
    with open(search / "nq" / "test.jsonl", "a") as rows:
        rows.write(json.dumps({"id": "test_9", "question": "no answer", "golden_answers": []}) + "\n")
    assert main(["check-data", "Search-NQ-v0", str(search)]) == 1
    out = capsys.readouterr().out
    assert "failed to load: task nq:test_9: ValueError: question 'test_9' has no golden answer" in out
    assert "check-data FAILED" in out


def test_bad_arguments_are_refused_in_one_line(tmp_path, capsys):
    assert main(["check-data", "TextCraft-v0", str(tmp_path)]) == 2
    assert "reads no data folder" in capsys.readouterr().err
    assert main(["check-data", "WebShop-v0", str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["check-data", "WebShop-v0", str(tmp_path), "--env-kwarg", "split=test"]) == 2
    capsys.readouterr()
    assert main(["check-data", "WebShop-v0", str(tmp_path)]) == 1  # an empty folder: no WebShop files
    assert "cannot open" in capsys.readouterr().err
    full = tmp_path / "full"
    full.mkdir()
    for name in ("items_shuffle", "items_ins_v2"):
        shutil.copy(webshop_folder(tmp_path) / f"{name}_1000.json", full / f"{name}.json")
    assert main(["check-data", "WebShop-v0", str(full)]) == 1
    assert "pass data_size='full'" in " ".join(capsys.readouterr().err.split())
    assert main(["check-data", "WebShop-v0", str(full), "--env-kwarg", "data_size=full"]) == 0


def test_spread_takes_tasks_evenly_in_order():
    assert spread(list("abcdefghij"), 3) == ["a", "d", "g"]
    assert spread(list("ab"), 5) == ["a", "b"]

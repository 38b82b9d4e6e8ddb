"""The "Why agentenvs" page: its figures are the results files', and every peer cell names its source.

The figures table is written at build time by ``docs/_ext/why_figures.py``; these tests call its
functions directly (the site build of ``test_site.py`` runs it as an extension) and read the results
files here with a parser of their own, so a figure is checked by two readings of the file.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGE = DOCS / "reference" / "why-agentenvs.md"
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(DOCS / "_ext"))

import why_figures  # noqa: E402  (docs/_ext is not a package)

# a printed number, with or without thousands separators
NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
PEERS = {
    "verl-agent": "langfengQ/verl-agent",
    "GEM": "axon-rl/gem",
    "AgentGym": "WooooDyy/AgentGym",
    "RAGEN": "RAGEN-AI/RAGEN",
    "BALROG": "balrog-ai/BALROG",
}
FEATURES = (
    "env families",
    "Gymnasium API",
    "true state keys",
    "snapshots (save/restore env state)",
    "per-turn reward components",
    "reward-hack tests",
    "experts (scripted solvers)",
    "official-data loaders",
    "sandboxed code execution (ColBench)",
    "replay-verified leaderboard",
    "trainers",
    "offline by default",
)
# a footnote: its first line, then any continuation lines indented by four spaces
FOOTNOTE = re.compile(r"^\[\^([\w-]+)\]: (.+(?:\n    .+)*)$", re.MULTILINE)
REFERENCE = re.compile(r"\[\^([\w-]+)\]")


# ------------------------------------------------------------------ the results files, read here
def box_table(text: str, title_phrase: str) -> list[dict[str, str]]:
    """The rows (header → cell) of the rich table in ``text`` titled with ``title_phrase``.

    rich wraps a long header or cell over several lines and draws no line between rows; figures never
    wrap and sit on a row's first line, so a line holding nothing but its first cell continues the row.
    """
    lines = text.splitlines()
    (start,) = [
        i for i, line in enumerate(lines[:-1]) if title_phrase in line and lines[i + 1].startswith("┏")
    ]
    header_at = next(i for i in range(start, len(lines)) if lines[i].startswith("┃"))
    header_end = next(i for i in range(header_at, len(lines)) if not lines[i].startswith("┃"))
    header_lines = [[cell.strip() for cell in line.split("┃")[1:-1]] for line in lines[header_at:header_end]]
    header = [" ".join(word for word in column if word) for column in zip(*header_lines, strict=True)]
    rows: list[list[str]] = []
    for line in lines[header_end:]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            cells = [cell.strip() for cell in line.split("│")[1:-1]]
            if rows and not any(cells[1:]):
                rows[-1][0] = f"{rows[-1][0]} {cells[0]}".strip()
            else:
                rows.append(cells)
    return [dict(zip(header, row, strict=True)) for row in rows]


def pipe_table(text: str, heading_phrase: str) -> list[dict[str, str]]:
    """The rows of the Markdown table under the ``## `` heading of ``text`` that holds ``heading_phrase``."""
    (section,) = [part for part in text.split("## ")[1:] if heading_phrase in part.splitlines()[0]]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [
        dict(zip(header, (c.strip() for c in row.strip("|").split("|")), strict=True)) for row in lines[2:]
    ]


def results(name: str) -> str:
    return (RESULTS / name).read_text(encoding="utf-8")


def numeric(figure: str) -> float:
    return float(figure.replace(",", "").strip("+%x"))


def one(rows: list[dict[str, str]], column: str, value: str) -> dict[str, str]:
    (row,) = [row for row in rows if row[column].startswith(value)]
    return row


def span(rows: list[dict[str, str]], column: str) -> str:
    cells = [row[column] for row in rows]
    return f"{min(cells, key=numeric)}–{max(cells, key=numeric)}"


def either(row: dict[str, str], *columns: str) -> str:
    """The first of ``columns`` the table has (a benchmark that renamed a column is read in both layouts)."""
    return next(column for column in columns if column in row)


def expected_rows() -> list[tuple[str, str, str, str]]:
    """(agentenvs, reference, ratio, results file) of each row of the page's table, in its order."""
    search = box_table(results("bench_search.txt"), "agentenvs ÷ GEM, ")
    sokoban = box_table(results("bench_sokoban.txt"), "vs gym-sokoban")
    steps = pipe_table(results("bench_alfworld.txt"), "steps/s")
    resets = pipe_table(results("bench_alfworld.txt"), "reset latency")
    textcraft = box_table(results("bench_textcraft.txt"), "TextCraft:")
    babyai = box_table(results("bench_babyai.txt"), "vs raw minigrid")
    if "agentenvs turns/s" in search[0]:  # the layout that printed our turns/s and one ratio
        ours, gem = span(search, "agentenvs turns/s"), span(search, "GEM turns/s")
        ratio = f"{span(search, 'ratio median')}× GEM's turns/s"
    else:  # the layout with a ratio per clock
        ours, gem = "—", span(search, "GEM turns/s, process CPU")
        ratio = (
            f"{span(search, 'process CPU kept')}× GEM's turns/s with passage lines kept, "
            f"{span(search, 'process CPU cold')}× with every passage new"
        )
    ours_tc = one(textcraft, "engine", "agentenvs, first visit of each task")
    theirs_tc = one(textcraft, "engine", "textcraft package, recipe lists restored")
    tc_steps = either(ours_tc, "steps/s CPU", "steps/s")
    tc_ratio = either(ours_tc, "steps/s × package CPU", "steps/s × package")
    gym_random = one(sokoban, "case", "random push")["primitive steps/s"]
    gym_reset = one(sokoban, "case", "reset (room generation)")["reset ms"]
    gym_env = one(steps, "engine", "agentenvs gym env")
    (random_agent,) = [row for row in sokoban if row["case"] == "Sokoban-v0 random"]  # not its image-obs row
    return [
        (
            ours,
            f"GEM: {gem}",
            f"{ratio} (median of passes, per set)",
            "bench_search.txt",
        ),
        (span(search, "agentenvs reset µs"), f"GEM: {span(search, 'GEM reset µs')}", "—", "bench_search.txt"),
        (
            random_agent["primitive steps/s"],
            f"gym-sokoban: {gym_random}",
            f"{random_agent['× gym-sokoban']}× its steps/s",
            "bench_sokoban.txt",
        ),
        *(
            (
                one(sokoban, "case", f"reset, {split} split, uncached")["reset ms"],
                f"gym-sokoban: {gym_reset}",
                f"{one(sokoban, 'case', f'reset, {split} split, uncached')['× gym-sokoban']}× its resets/s",
                "bench_sokoban.txt",
            )
            for split in ("train", "test")
        ),
        (
            gym_env["steps/s"],
            f"TextWorld: {one(steps, 'engine', 'TextWorld')['steps/s']}",
            f"{gym_env['vs TextWorld'].rstrip('x')}× its steps/s",
            "bench_alfworld.txt",
        ),
        (
            one(resets, "what", "generate game + reset")["mean ms"],
            f"TextWorld: {one(resets, 'what', 'load game.tw-pddl + reset')['mean ms']}",
            "—",
            "bench_alfworld.txt",
        ),
        (
            ours_tc[tc_steps],
            f"textcraft package: {theirs_tc[tc_steps]}",
            f"{ours_tc[tc_ratio]}× its steps/s",
            "bench_textcraft.txt",
        ),
        (
            ours_tc["reset ms"],
            f"textcraft package: {theirs_tc['reset ms']}",
            f"{ours_tc['resets/s × package']}× its resets/s",
            "bench_textcraft.txt",
        ),
        (
            span(babyai, "agentenvs turns/s"),
            f"raw minigrid: {span(babyai, 'minigrid steps/s')}",
            f"{span(babyai, 'overhead')} time per turn",
            "bench_babyai.txt",
        ),
        (
            span(babyai, "agentenvs reset ms"),
            f"raw minigrid: {span(babyai, 'minigrid reset ms')}",
            "—",
            "bench_babyai.txt",
        ),
    ]


def markdown_rows(text: str) -> list[list[str]]:
    """The body rows of the one Markdown table in ``text`` (header and separator dropped)."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in lines[1:]]


# ------------------------------------------------------------------ the page's table, from the real files
def test_every_figure_of_the_table_equals_the_one_in_its_results_file() -> None:
    generated = markdown_rows(why_figures.markdown(why_figures.figure_rows(RESULTS)))
    assert [tuple(row[1:4]) + (row[4].strip("`"),) for row in generated] == [
        (ours, reference, ratio, f"benchmarks/results/{name}")
        for ours, reference, ratio, name in expected_rows()
    ]


def test_every_number_in_a_row_is_printed_in_the_results_file_it_names() -> None:
    """Labels included: the counts of sets and levels are the tables' row counts, everything else printed."""
    counts = {
        "bench_search.txt": len(box_table(results("bench_search.txt"), "agentenvs ÷ GEM, ")),
        "bench_babyai.txt": len(box_table(results("bench_babyai.txt"), "vs raw minigrid")),
    }
    for row in markdown_rows(why_figures.markdown(why_figures.figure_rows(RESULTS))):
        name = row[-1].strip("`").removeprefix("benchmarks/results/")
        printed = {number.replace(",", "") for number in NUMBER.findall(results(name))}
        quoted = {number.replace(",", "") for number in NUMBER.findall(" ".join(row[:-1]))}
        allowed = printed | ({str(counts[name])} if name in counts else set())
        assert quoted <= allowed, f"{row[0]!r} quotes {sorted(quoted - allowed)}, not in {name}"


def test_the_page_includes_the_generated_table_and_types_no_figure() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert "```{include} why-figures.inc\n```" in page
    assert DOCS / why_figures.OUTPUT == PAGE.parent / "why-figures.inc"
    for row in why_figures.figure_rows(RESULTS):
        for figure in NUMBER.findall(f"{row.agentenvs} {row.reference} {row.ratio}"):
            if "," in figure or "." in figure:
                assert figure not in page, f"the page types {figure} by hand; the table reads it"


# ------------------------------------------------------------------ small results files in the real formats
def rich_text(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], width: int = 130) -> str:
    """A table as the benchmark scripts record it: rich, at ``width`` columns (``run_record.py``: 130)."""
    table = Table(title=title)
    for number, column in enumerate(columns):
        table.add_column(column, justify="left" if number == 0 else "right")
    for row in rows:
        table.add_row(*row)
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(table)
    return console.export_text()


# bench_search.py's layout with a ratio per clock, at its console's 170 columns (the header wraps)
SEARCH = rich_text(
    "agentenvs ÷ GEM, 100,000 passages, median of 9 passes alternating every 10 episodes",
    ("set", "episodes", "turns", "GEM turns/s, process CPU", "thread CPU kept", "thread CPU cold",
     "process CPU kept", "process CPU cold", "wall kept", "wall cold", "agentenvs reset µs", "GEM reset µs"),
    [("nq", "100", "200", "6,518", "1.03", "0.79", "0.98", "0.77", "0.99", "0.78", "148", "140"),
     ("bamboogle", "100", "300", "10,374", "1.04", "0.80", "0.95", "0.76", "0.97", "0.79", "96", "110")],
    width=170,
)  # fmt: skip
SOKOBAN = rich_text(
    "Sokoban 6x6, 1 box: agentenvs vs gym-sokoban (best of rounds)",
    ("engine", "case", "primitive steps/s", "turns/s", "reset ms", "× gym-sokoban"),
    [("agentenvs", "Sokoban-v0 random", "100,000", "33,000", "", "5.0"),
     ("agentenvs", "Sokoban-v0 random, image obs", "40,000", "13,000", "", "2.0"),
     ("agentenvs", "reset, train split, uncached", "", "", "1.50", "2.4"),
     ("agentenvs", "reset, train split, cached", "", "", "0.015", ""),
     ("agentenvs", "reset, test split, uncached", "", "", "4.80", "0.8"),
     ("gym-sokoban", "random push, tiny_rgb_array obs", "20,000", "20,000", "", "1.0"),
     ("gym-sokoban", "reset (room generation)", "", "", "3.60", "1.0")],
)  # fmt: skip
ALFWORLD = """\
## steps/s (5 test games, 200 commands of random admissible walks)

| engine | steps | seconds | steps/s | ms/step | vs TextWorld |
|---|---|---|---|---|---|
| TextWorld (alfworld 0.4.2) | 200 | 8.00 | 25 | 40.00 | 1.0x |
| agentenvs engine | 200 | 0.02 | 10000 | 0.10 | 400x |
| agentenvs gym env | 200 | 0.03 | 6000 | 0.17 | 240x |

## reset latency (ms)

| engine | what | mean ms |
|---|---|---|
| TextWorld | load game.tw-pddl + reset | 1400 |
| agentenvs | generate game + reset | 4.0 |
"""
# bench_textcraft.py's layout with CPU and wall columns: at 130 columns the engine names wrap
TEXTCRAFT = rich_text(
    "TextCraft: ADaPT seeds 0-99, planner's commands (1214 steps), steps: median of 5 alternating rounds",
    ("engine", "reset ms", "steps/s CPU", "steps/s wall", "resets/s × package", "steps/s × package CPU",
     "steps/s × package wall"),
    [("textcraft package, new env per episode", "40.000", "", "", "0.25", "", ""),
     ("textcraft package, recipe lists restored", "10.000", "40,000", "38,000", "1.00", "1.00", "1.00"),
     ("agentenvs engine alone (CraftingWorld)", "", "120,000", "110,000", "", "3.00", "2.89"),
     ("agentenvs, first visit of each task", "0.400", "24,000", "23,000", "25.00", "0.60", "0.61"),
     ("agentenvs, listings cached", "0.050", "", "", "200.00", "", ""),
     ("(agentenvs env construction: 71 ms, once per process)", "", "", "", "", "", "")],
)  # fmt: skip
BABYAI = rich_text(
    "BabyAI: agentenvs text layer vs raw minigrid (3000 random actions per level)",
    ("level", "minigrid steps/s", "agentenvs turns/s", "overhead", "minigrid reset ms", "agentenvs reset ms"),
    [("GoToLocal", "9,772", "7,757", "+26%", "0.70", "0.98"),
     ("BossLevel", "12,650", "10,020", "+35%", "2.66", "3.44"),
     ("PickupLoc", "6,581", "5,225", "+9%", "0.86", "0.90")],
)  # fmt: skip
SAMPLES = {
    "bench_search.txt": SEARCH,
    "bench_sokoban.txt": SOKOBAN,
    "bench_alfworld.txt": ALFWORLD,
    "bench_textcraft.txt": TEXTCRAFT,
    "bench_babyai.txt": BABYAI,
}


def test_the_samples_wrap_as_the_scripts_output_does() -> None:
    """The samples exercise what the reader must undo: a header and row names over several lines."""
    assert SEARCH.count("\n┃") == 2 and "┃  GEM turns/s, ┃" in SEARCH
    assert "│ textcraft package,   │" in TEXTCRAFT and "│ recipe lists         │" in TEXTCRAFT


def test_wrapped_headers_and_rows_are_put_back_together() -> None:
    (search,) = why_figures.read_tables(SEARCH, "bench_search.txt")
    assert search.header[3:5] == ("GEM turns/s, process CPU", "thread CPU kept")
    assert search.header[-2:] == ("agentenvs reset µs", "GEM reset µs")
    (textcraft,) = why_figures.read_tables(TEXTCRAFT, "bench_textcraft.txt")
    assert [row[0] for row in textcraft.rows] == [
        "textcraft package, new env per episode",
        "textcraft package, recipe lists restored",
        "agentenvs engine alone (CraftingWorld)",
        "agentenvs, first visit of each task",
        # a row with no figure joins the one above; the lookup by its first words still finds that one
        "agentenvs, listings cached (agentenvs env construction: 71 ms, once per process)",
    ]
    assert textcraft.figure("agentenvs, listings cached", "reset ms") == "0.050"


def test_a_title_rich_wrapped_is_read_whole_and_a_line_above_it_left_out() -> None:
    """At 40 columns rich wraps the title over two lines padded to the table's width, 24 characters; the
    line above them holds 15, so it is not part of the title."""
    text = "a preamble line\n" + rich_text(
        "BabyAI: agentenvs text layer vs raw minigrid",
        ("level", "overhead"),
        [("GoToLocal", "+26%")],
        width=40,
    )
    (table,) = why_figures.read_tables(text, "bench_babyai.txt")
    assert table.title == "BabyAI: agentenvs text layer vs raw minigrid"
    assert text.splitlines()[1] != table.title  # it was wrapped


def sample_tree(tmp_path: Path) -> Path:
    """A tree laid out as the repository's: ``docs/`` beside ``benchmarks/results/`` holding SAMPLES."""
    folder = tmp_path / "benchmarks" / "results"
    folder.mkdir(parents=True)
    for name, text in SAMPLES.items():
        (folder / name).write_text(text, encoding="utf-8")
    (tmp_path / "docs").mkdir()
    return folder


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_generate_writes_the_whole_table_from_the_files(tmp_path: Path) -> None:
    """Every row of the samples, worked by hand.

    Ranges run from the lowest to the highest value, not in text order: GEM 6,518 / 10,374 →
    6,518–10,374; the process CPU ratio with lines kept 0.98 / 0.95 → 0.95–0.98, cold 0.77 / 0.76 →
    0.76–0.77; resets 148 / 96 →
    96–148 and GEM's 140 / 110 → 110–140; BabyAI turns/s 7,757 / 10,020 / 5,225 → 5,225–10,020,
    minigrid 9,772 / 12,650 / 6,581 → 6,581–12,650, overhead +26% / +35% / +9% → +9%–+35%, resets
    0.98 / 3.44 / 0.90 → 0.90–3.44 and 0.70 / 2.66 / 0.86 → 0.70–2.66. Ratios as printed (240x → 240×);
    Search prints no turns/s of ours in this layout ("—"); TextCraft's steps/s by CPU.
    """
    sample_tree(tmp_path)
    path = why_figures.generate(tmp_path / "docs")
    assert path == tmp_path / "docs" / "reference" / "why-figures.inc"
    text = path.read_text(encoding="utf-8")
    assert text.startswith(why_figures.GENERATED_MARK + "\n\n| measured |")
    search, sokoban, alfworld, textcraft, babyai = (f"`benchmarks/results/{name}`" for name in SAMPLES)
    assert markdown_rows(text) == [
        ["Search QA turns/s by process CPU, same responses and BM25 index, 2 QA sets", "—",
         "GEM: 6,518–10,374",
         "0.95–0.98× GEM's turns/s with passage lines kept, 0.76–0.77× with every passage new "
         "(median of passes, per set)", search],
        ["Search QA reset, µs, 2 QA sets", "96–148", "GEM: 110–140", "—", search],
        ["Sokoban 6x6, 1 box, random agent, primitive steps/s", "100,000", "gym-sokoban: 20,000",
         "5.0× its steps/s", sokoban],
        ["Sokoban reset, ms (train split, room generation)", "1.50", "gym-sokoban: 3.60",
         "2.4× its resets/s", sokoban],
        ["Sokoban reset, ms (test split, room generation)", "4.80", "gym-sokoban: 3.60",
         "0.8× its resets/s", sokoban],
        ["ALFWorld steps/s, random admissible commands", "6000", "TextWorld: 25", "240× its steps/s",
         alfworld],
        ["ALFWorld reset, ms (a game not yet loaded)", "4.0", "TextWorld: 1400", "—", alfworld],
        ["TextCraft steps/s CPU, the planner's commands", "24,000", "textcraft package: 40,000",
         "0.60× its steps/s", textcraft],
        ["TextCraft reset, ms (first visit of a task)", "0.400", "textcraft package: 10.000",
         "25.00× its resets/s", textcraft],
        ["BabyAI turns/s, text layer over minigrid, 3 levels", "5,225–10,020", "raw minigrid: 6,581–12,650",
         "+9%–+35% time per turn", babyai],
        ["BabyAI reset, ms, 3 levels", "0.90–3.44", "raw minigrid: 0.70–2.66", "—", babyai],
    ]  # fmt: skip


def test_generate_rewrites_the_table_only_when_a_results_file_changes(tmp_path: Path) -> None:
    folder = sample_tree(tmp_path)
    path = why_figures.generate(tmp_path / "docs")
    written = path.stat().st_mtime_ns
    why_figures.generate(tmp_path / "docs")
    assert path.stat().st_mtime_ns == written
    # TextCraft's steps/s regenerated as 26,000: the page follows the file
    edit(folder / "bench_textcraft.txt", "│      24,000 │", "│      26,000 │")
    why_figures.generate(tmp_path / "docs")
    assert "| 26,000 | textcraft package: 40,000 |" in path.read_text(encoding="utf-8")


# ------------------------------------------------------------------ a figure missing fails the build
@pytest.mark.parametrize(
    ("name", "old", "new", "message"),
    [
        # an emptied cell: the TextCraft row keeps its place, its steps/s is gone
        (
            "bench_textcraft.txt",
            "│      24,000 │",
            "│             │",
            "row 'agentenvs, first visit of each task', column 'steps/s CPU' holds '', not a figure",
        ),
        # a cell holding text where a figure belongs
        (
            "bench_sokoban.txt",
            "│     4.80 │",
            "│      n/a │",
            "row 'reset, test split, uncached', column 'reset ms' holds 'n/a', not a figure",
        ),
        # a row gone from a rich table
        (
            "bench_sokoban.txt",
            "reset, test split, uncached",
            "reset, test split, later   ",
            "0 rows match 'reset, test split, uncached' in column 'case', not one",
        ),
        # a row gone from a Markdown table
        (
            "bench_alfworld.txt",
            "| agentenvs gym env |",
            "| agentenvs wrapper |",
            "bench_alfworld.txt, table 'steps/s (5 test games, 200 commands of random admissible walks)': "
            "0 rows match 'agentenvs gym env' in column 'engine', not one",
        ),
        # a column renamed
        ("bench_babyai.txt", "┃ overhead ┃", "┃ slowdown ┃", "no column 'overhead'"),
        # neither name of a renamed column
        ("bench_textcraft.txt", "steps/s CPU", "steps/s sys",
         "none of the columns 'steps/s CPU', 'steps/s'"),
        # a table gone: its title no longer names GEM
        ("bench_search.txt", "agentenvs ÷ GEM, ", "agentenvs ÷ peer, ",
         "0 tables titled with 'agentenvs ÷ GEM'"),
    ],
    ids=["empty-cell", "text-cell", "rich-row", "markdown-row", "column", "renamed-column", "table"],
)  # fmt: skip
def test_a_results_file_missing_a_figure_fails_loudly(
    tmp_path: Path, name: str, old: str, new: str, message: str
) -> None:
    folder = sample_tree(tmp_path)
    edit(folder / name, old, new)
    with pytest.raises(why_figures.MissingFigure) as raised:
        why_figures.generate(tmp_path / "docs")
    assert message in str(raised.value)
    assert name in str(raised.value)
    assert not (tmp_path / "docs" / why_figures.OUTPUT).exists()


def test_a_missing_results_file_fails_loudly(tmp_path: Path) -> None:
    folder = sample_tree(tmp_path)
    (folder / "bench_babyai.txt").unlink()
    with pytest.raises(why_figures.MissingFigure, match=r"bench_babyai\.txt: no such results file"):
        why_figures.generate(tmp_path / "docs")


# ------------------------------------------------------------------ the feature table
def feature_table() -> tuple[list[str], dict[str, list[str]]]:
    """The header (suites) and the rows (feature → cells) of the table under "Features side by side"."""
    section = PAGE.read_text(encoding="utf-8").split("\n## Features side by side\n")[1].split("\n## ")[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip().strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        assert len(cells) == len(header), line
        rows[cells[0]] = cells[1:]
    return header[1:], rows


def footnotes() -> dict[str, str]:
    found = FOOTNOTE.findall(PAGE.read_text(encoding="utf-8"))
    labels = [label for label, _ in found]
    assert len(labels) == len(set(labels)), "a footnote is defined twice"
    return {label: " ".join(text.split()) for label, text in found}


def test_the_table_has_one_column_per_suite_and_every_feature_of_the_issue() -> None:
    suites, rows = feature_table()
    assert suites == ["agentenvs", *PEERS]
    assert tuple(rows) == FEATURES


@pytest.mark.parametrize("peer", list(PEERS))
def test_every_peer_cell_names_its_source(peer: str) -> None:
    """Each cell cites a footnote naming a file of that peer's repository (or its site); a "not found" cell
    cites one that says what was searched."""
    suites, rows = feature_table()
    notes = footnotes()
    column = suites.index(peer)
    for feature, cells in rows.items():
        cell = cells[column]
        cited = REFERENCE.findall(cell)
        assert cited, f"{peer} / {feature}: no source"
        for label in cited:
            note = notes[label]
            assert note.startswith(f"{PEERS[peer]}: "), f"{label} is not {PEERS[peer]}'s"
            assert re.search(r"`[^`]*[/.][^`]*`|<https://", note), f"{label} names no file or page"
        if cell.startswith("not found"):
            assert any("searched" in notes[label] for label in cited), f"{peer} / {feature}: no search named"


def test_every_agentenvs_cell_names_where_the_feature_lives_and_the_path_exists() -> None:
    suites, rows = feature_table()
    notes = footnotes()
    for feature, cells in rows.items():
        cited = REFERENCE.findall(cells[suites.index("agentenvs")])
        assert cited, f"agentenvs / {feature}: no source"
        for label in cited:
            assert notes[label].startswith("agentenvs: ")
            paths = [p for p in re.findall(r"`([^`\s]+)`", notes[label]) if "/" in p]
            assert paths, f"{label} names no module or folder"
            for path in paths:
                assert (ROOT / path).exists(), f"{label} names {path}, which is not in the repository"


def test_every_footnote_is_cited_and_every_citation_defined() -> None:
    page = PAGE.read_text(encoding="utf-8")
    body = FOOTNOTE.sub("", page)
    assert set(REFERENCE.findall(body)) == set(footnotes())


def test_every_peer_names_the_commit_it_was_read_at() -> None:
    section = PAGE.read_text(encoding="utf-8").split("\n## How the peers were read\n")[1]
    for peer, repository in PEERS.items():
        (row,) = [line for line in section.splitlines() if line.startswith(f"| {peer} |")]
        assert repository in row and re.search(r"`[0-9a-f]{7}` \(\d{4}-\d{2}-\d{2}\)", row), row


def test_no_paragraph_or_footnote_runs_over_120_words() -> None:
    blocks = PAGE.read_text(encoding="utf-8").split("\n\n")
    prose = [block for block in blocks if not block.lstrip().startswith(("|", "```", "#"))]
    prose += list(footnotes().values())
    for text in prose:
        for paragraph in text.split("\n[^"):
            assert len(paragraph.split()) <= 120, paragraph[:80]

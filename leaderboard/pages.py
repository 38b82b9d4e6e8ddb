"""The board's HTML: the same pages served by the app and written by ``leaderboard export``.

The board ranks a submission only against submissions of the same
:func:`ranking_group` (the panel, the env set and the generation settings):
one table per group, one column per env family (a family's score is the mean of its envs', see
:func:`leaderboard.verify.family_summaries`), and the numbers the papers
report in a table of their own, marked as reported and never ranked.
Filters (model size, kind, panel) are radio buttons that hide rows with CSS
alone, so the board works without JavaScript; only sorting by a column
needs it. Each submission page draws its per-family scores with their 95%
intervals as an inline SVG.

Every value from a submission (model names, task ids, responses,
observations) is escaped with :func:`html.escape`, and a transcript's
control, zero-width and bidi characters are written as visible code points
(:data:`INVISIBLE`; names cannot hold them at all); the only script is the
fixed sorting script below, allowed by its hash in the Content-Security-
Policy, so even markup that slipped through escaping could not run a script.
The sorting script reads cells' ``data-sort`` values and moves rows; it never
writes HTML.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

import agentenvs
from agentenvs.core.registration import family_of
from agentenvs.eval.bundle import METADATA_SCHEMA
from agentenvs.eval.panel import PANELS
from leaderboard.reported import REPORTED

SORT_SCRIPT = """
document.querySelectorAll("table.sortable th[data-column]").forEach(function (header) {
  header.addEventListener("click", function () {
    var table = header.closest("table"), body = table.tBodies[0];
    var column = Number(header.dataset.column);
    var descending = header.dataset.order !== "desc";
    table.querySelectorAll("th").forEach(function (h) { delete h.dataset.order; });
    header.dataset.order = descending ? "desc" : "asc";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[column].dataset.sort, y = b.cells[column].dataset.sort;
      var nx = Number(x), ny = Number(y);
      var order = (isNaN(nx) || isNaN(ny)) ? String(x).localeCompare(String(y)) : nx - ny;
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
});
"""
SCRIPT_HASH = base64.b64encode(hashlib.sha256(SORT_SCRIPT.encode()).digest()).decode()
# the policy a page states in its <meta> element; the app also sends it as a header, with
# frame-ancestors, which browsers honour only in a header (and report as an error in a <meta>)
DOCUMENT_POLICY = (
    f"default-src 'none'; script-src 'sha256-{SCRIPT_HASH}'; style-src 'unsafe-inline'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'"
)
CONTENT_SECURITY_POLICY = f"{DOCUMENT_POLICY}; frame-ancestors 'none'"
SIZE_BUCKETS: tuple[tuple[str, str, float], ...] = (
    # (key, label, upper bound in billions of parameters, exclusive)
    ("under3b", "< 3B", 3.0),
    ("3to10b", "3–10B", 10.0),
    ("10to40b", "10–40B", 40.0),
    ("over40b", "≥ 40B", float("inf")),
)
UNKNOWN_SIZE = ("unknown", "not given")
SIZE_PATTERN = re.compile(r"^(\d+(?:\.\d+)?)\s*([BM])$", re.IGNORECASE)
KINDS = (*METADATA_SCHEMA["properties"]["endpoint"]["enum"], "reported")
FILTERS: dict[str, tuple[tuple[str, str], ...]] = {
    "size": (*((key, label) for key, label, _ in SIZE_BUCKETS), UNKNOWN_SIZE),
    "kind": tuple((kind, kind) for kind in KINDS),
    "panel": tuple((name, name) for name in PANELS),
}


def size_bucket(model_size: str) -> str:
    """The filter bucket of a model size such as ``7B``, ``0.5b`` or ``350M`` (``unknown`` when not of that
    form)."""
    match = SIZE_PATTERN.match(model_size.strip())
    if match is None:
        return UNKNOWN_SIZE[0]
    billions = float(match.group(1)) / (1000.0 if match.group(2).upper() == "M" else 1.0)
    return next(key for key, _, upper in SIZE_BUCKETS if billions < upper)


def _filter_css() -> str:
    """Per filter value, the rule hiding what does not match while its radio button is checked."""
    rules = []
    for name, options in FILTERS.items():
        target = "section[data-panel]" if name == "panel" else f"tr[data-{name}]"
        rules += [
            f'#{name}-{value}:checked ~ .boards {target}:not([data-{name}="{value}"]) {{ display: none; }}'
            for value, _ in options
        ]
    return "\n".join(rules)


STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; font-size: 14px;
  max-width: 1400px; }
table { border-collapse: collapse; }
th, td { padding: 3px 6px; border-bottom: 1px solid #ddd; vertical-align: top; }
th { text-align: left; white-space: nowrap; } td.date { white-space: nowrap; }
th[data-column] { cursor: pointer; }
th[data-order="desc"]::after { content: " ▼"; } th[data-order="asc"]::after { content: " ▲"; }
td.num { text-align: right; white-space: nowrap; } td.best { font-weight: bold; }
td.model { max-width: 18em; overflow-wrap: anywhere; }
table.board { width: 100%; } .ci { color: #777; font-size: 85%; display: block; }
.tag { color: #555; background: #eee; border-radius: 3px; padding: 0 4px; font-size: 80%;
  white-space: nowrap; }
.verified { color: #080; } .turn { margin: 0.5em 0; } .filters { line-height: 2; }
.filters b { display: inline-block; min-width: 3.5em; } .filters label { margin-right: 0.8em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: 6px; margin: 2px 0; }
svg.chart text { font: 12px system-ui, sans-serif; fill: #222; }
""" + _filter_css()

Link = Callable[[int], str]
# characters a transcript shows as a visible ⟨U+XXXX⟩ mark instead of acting silently: C0 and C1
# controls but tab, newline and carriage return (ANSI escapes start with U+001B), the soft hyphen,
# zero-width characters, bidi marks, embeddings, overrides and isolates, word joiners, the BOM
INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u2069\ufeff]"
)


def _shown(text: str) -> str:
    """``text`` as HTML: escaped, each :data:`INVISIBLE` character written as its code point."""
    return escape(INVISIBLE.sub(lambda match: f"⟨U+{ord(match.group()):04X}⟩", text))


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(DOCUMENT_POLICY)}">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n"
        f"<script>{SORT_SCRIPT}</script>\n</body></html>\n"
    )


def _interval_cell(interval: Mapping[str, float] | None, as_percent: bool, best: bool = False) -> str:
    """A mean with its 95% interval below it (``–`` and sorted last when there is none); ``best`` in bold."""
    if interval is None:
        return '<td class="num" data-sort="-1">–</td>'
    scale, unit = (100.0, "%") if as_percent else (1.0, "")
    digits = 1 if as_percent else 3
    mean, low, high = (interval[k] * scale for k in ("mean", "low", "high"))
    return (
        f'<td class="num{" best" * best}" data-sort="{interval["mean"]:.6f}">{mean:.{digits}f}{unit}'
        f'<span class="ci">{low:.{digits}f}–{high:.{digits}f}</span></td>'
    )


def ranking_group(row: Mapping[str, Any]) -> tuple[str, tuple[str, ...], str]:
    """What a row is ranked against: rows of the same panel over the same env ids and settings.

    Scores of other panels or env sets are not comparable (a mean over one
    easy env beats a mean over sixteen), nor are scores under other
    generation settings (reply budgets, context, sampling: ``settings_digest``),
    so each group is its own table.
    """
    return (row["panel"], tuple(sorted(row["summary"]["envs"])), row["metadata"]["settings_digest"])


def _rank_key(row: Mapping[str, Any]) -> tuple[float, float, int]:
    overall = row["summary"]["overall"]
    return (-overall["score"]["mean"], -overall["success"]["mean"], row["id"])


def _families(env_ids: Sequence[str]) -> dict[str, list[str]]:
    families: dict[str, list[str]] = {}
    for env_id in env_ids:
        families.setdefault(family_of(env_id), []).append(env_id)
    return dict(sorted(families.items()))


def _counted(count: int, singular: str, plural: str) -> str:
    return f"{count} {singular if count == 1 else plural}"


def _short(env_id: str) -> str:
    return env_id.removeprefix("agentenvs/").removesuffix("-v0")


def _model_cell(row: Mapping[str, Any], link: Link) -> str:
    tag = "board baseline" if row["submitter"] == "seed" else f"#{row['id']}"
    return (
        f'<td class="model" data-sort="{escape(row["model"])}"><a href="{escape(link(row["id"]))}">'
        f'{escape(row["model"])}</a> <span class="tag">{tag}</span></td>'
    )


def _family_cell(summary: Mapping[str, Any] | None, leader: float) -> str:
    """A family's score cell, bold where it equals the group's best (``leader``) score for that family."""
    if summary is None:
        return _interval_cell(None, as_percent=False)
    return _interval_cell(summary["score"], as_percent=False, best=summary["score"]["mean"] == leader)


def _group_table(panel: str, env_ids: Sequence[str], rows: Sequence[Mapping[str, Any]], link: Link) -> str:
    families = _families(env_ids)
    headers = ["rank", "model", "size", "kind", "received", "overall", "success"]
    head = "".join(f'<th data-column="{i}">{escape(name)}</th>' for i, name in enumerate(headers))
    head += "".join(
        f'<th data-column="{len(headers) + i}" title="{escape(", ".join(ids))}">{escape(family)}</th>'
        for i, (family, ids) in enumerate(families.items())
    )
    leaders = {  # per family column, the best mean score of the group: who leads there shows in bold
        family: max(
            (row["families"] or {}).get(family, {}).get("score", {}).get("mean", -1.0) for row in rows
        )
        for family in families
    }
    lines = []
    for rank, row in enumerate(sorted(rows, key=_rank_key), start=1):
        overall = row["summary"]["overall"]
        row_families = row["families"] or {}
        cells = [
            f'<td class="num" data-sort="{rank}">{rank}</td>',
            _model_cell(row, link),
            f'<td data-sort="{escape(row["model_size"])}">{escape(row["model_size"]) or "–"}</td>',
            f'<td data-sort="{escape(row["endpoint"])}">{escape(row["endpoint"])}</td>',
            f'<td class="date" data-sort="{escape(row["received"])}">{escape(row["received"][:10])}</td>',
            _interval_cell(overall["score"], as_percent=False, best=rank == 1),
            _interval_cell(overall["success"], as_percent=True),
            *(_family_cell(row_families.get(family), leaders[family]) for family in families),
        ]
        lines.append(
            f'<tr data-size="{size_bucket(row["model_size"])}" data-kind="{escape(row["endpoint"])}">'
            f"{''.join(cells)}</tr>"
        )
    envs = ", ".join(_short(env_id) for env_id in env_ids)
    envs += f" · settings {json.dumps(rows[0]['metadata']['settings'], sort_keys=True)}"
    return (
        f'<section data-panel="{escape(panel)}"><h2>Panel {escape(panel)} · '
        f"{_counted(len(families), 'family', 'families')}, {_counted(len(env_ids), 'env', 'envs')}</h2>"
        f'<p class="ci">{escape(envs)}</p>'
        f'<table class="sortable board"><thead><tr>{head}</tr></thead>'
        f"<tbody>\n{chr(10).join(lines)}\n</tbody></table></section>"
    )


def _reported_table() -> str:
    lines = [
        f'<tr data-size="{size_bucket(result.model_size)}" data-kind="reported">'
        f"<td>{escape(result.method)}</td><td>{escape(result.model_size) or '–'}</td>"
        f"<td>{escape(result.family)}</td><td>{escape(result.env)}</td><td>{escape(result.metric)}</td>"
        f'<td class="num">{escape(result.value)}</td><td>{escape(result.source)}</td>'
        '<td><span class="tag">reported, not replayed</span></td></tr>'
        for result in REPORTED
    ]
    return (
        '<section class="reported"><h2>Reported in the papers</h2><p>Quoted from each paper, in its own '
        "setting (its policies, prompts and data); the board has no episodes to replay, so these rows are "
        "not verified and not ranked with the rows above.</p><table><thead><tr><th>method</th><th>size</th>"
        "<th>family</th><th>env</th><th>metric</th><th>value</th><th>source</th><th>status</th></tr></thead>"
        f"<tbody>{''.join(lines)}</tbody></table></section>"
    )


def _filters() -> str:
    """The filter radio buttons: siblings before ``.boards``, which the filter CSS reaches with ``~``."""
    parts = []
    for name, options in FILTERS.items():
        parts.append(
            f'<b>{name}</b> <input type="radio" name="{name}" id="{name}-all" checked>'
            f'<label for="{name}-all">all</label>'
        )
        parts += [
            f'<input type="radio" name="{name}" id="{name}-{value}"><label for="{name}-{value}">'
            f"{escape(label)}</label>"
            for value, label in options
        ]
        parts.append("<br>")
    return "".join(parts)


def board_page(rows: Sequence[dict[str, Any]], link: Link, submit_link: str) -> str:
    """The board: per ranking group a ranked table of verified rows, then the papers' reported numbers."""
    groups: dict[tuple[str, tuple[str, ...], str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(ranking_group(row), []).append(row)
    panel_order = list(PANELS)
    ordered = sorted(groups, key=lambda key: (panel_order.index(key[0]), -len(key[1]), key[1], key[2]))
    tables = [_group_table(key[0], key[1], groups[key], link) for key in ordered]
    intro = (
        "<h1>agentenvs leaderboard</h1><p>Every ranked row was re-checked by replay: each submitted episode "
        "was re-run in the environments with its recorded responses and reproduced its rewards, success and "
        "score; summaries are recomputed. Rows are ranked by overall score only against rows of the same "
        "panel, env set and generation settings. Means with 95% intervals below them (Wilson for success, "
        "bootstrap for scores); overall = unweighted mean over "
        "the envs, a family = the mean over its envs. Dates are when the board received the submission. "
        f'Click a header to sort. <a href="{escape(submit_link)}">How to submit</a>.</p>'
    )
    boards = "".join(tables) if tables else "<p>No verified submissions yet.</p>"
    return _page(
        "agentenvs leaderboard",
        f'{intro}<div class="filters">{_filters()}'
        f'<div class="boards">{boards}{_reported_table()}</div></div>',
    )


def score_chart(families: Mapping[str, Mapping[str, Any]]) -> str:
    """Per family, the mean score as a bar and its 95% interval as a whisker, on a 0–1 axis (inline SVG)."""
    label_width, bar_width, row_height, text_width = 100, 420, 26, 190
    width, height = label_width + bar_width + text_width, row_height * len(families) + 24

    def x(value: float) -> float:
        return label_width + bar_width * min(max(value, 0.0), 1.0)

    parts = [
        (
            f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="score per family with 95% intervals">'
        )
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="0" y2="{height - 18}" stroke="#ddd"/>'
            f'<text x="{x(tick):.1f}" y="{height - 4}" text-anchor="middle">{tick:g}</text>'
        )
    for index, (family, entry) in enumerate(sorted(families.items())):
        score = entry["score"]
        top, middle = index * row_height + 4, index * row_height + 13
        parts.append(
            f'<text x="{label_width - 8}" y="{middle + 4}" text-anchor="end">{escape(family)}</text>'
            f'<rect class="bar" x="{label_width}" y="{top}" width="{x(score["mean"]) - label_width:.1f}" '
            f'height="18" fill="#7fa7d9"/>'
            f'<path class="interval" d="M{x(score["low"]):.1f} {middle}H{x(score["high"]):.1f}'
            f"M{x(score['low']):.1f} {middle - 5}V{middle + 5}"
            f'M{x(score["high"]):.1f} {middle - 5}V{middle + 5}" '
            f'stroke="#222" stroke-width="1.5" fill="none"/>'
            f'<text x="{label_width + bar_width + 8}" y="{middle + 4}">{score["mean"]:.3f} '
            f"[{score['low']:.3f}, {score['high']:.3f}], {_counted(entry['envs'], 'env', 'envs')}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def submission_page(row: dict[str, Any], episodes: Sequence[dict[str, Any]], board_link: str) -> str:
    """One submission: facts (claims marked), the family chart, per-env summary, every replayed transcript."""
    meta = row["metadata"]
    baseline = row["submitter"] == "seed"
    facts = [
        ("model", row["model"]),
        ("size", row["model_size"] or "–"),
        ("endpoint kind", row["endpoint"]),
        ("submitted by", "the board (scripted baseline)" if baseline else f"an upload token (#{row['id']})"),
        ("panel", f"{row['panel']} ({meta['panel_digest']})"),
        ("package version", f"{meta['package_version']} (checked: the panel digests are this board's)"),
        ("settings", f"{json.dumps(meta['settings'], sort_keys=True)} ({meta['settings_digest']})"),
        ("evaluated", f"{row['created']} (claimed by the submitter, not checked)"),
        ("received", f"{row['received']} (the board's clock)"),
        ("status", row["status"]),
    ]
    parts = [
        f'<p><a href="{escape(board_link)}">← board</a></p>',
        f"<h1>{escape(row['model'])}</h1>",
        "<table>"
        + "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in facts)
        + "</table>",
    ]
    if row["problems"]:
        parts.append(
            "<h2>Problems</h2><ul>" + "".join(f"<li>{escape(p)}</li>" for p in row["problems"]) + "</ul>"
        )
    if row["families"]:
        parts.append(f"<h2>Score per family</h2>{score_chart(row['families'])}")
    if row["summary"]:
        lines = []
        for env_id, entry in sorted(row["summary"]["envs"].items()):
            lines.append(
                f"<tr><td>{escape(family_of(env_id))}</td><td>{escape(env_id)}</td>"
                f'<td class="num">{entry["episodes"]}</td>'
                f"{_interval_cell(entry['success'], True)}{_interval_cell(entry['score'], False)}"
                f'<td class="num">{entry["turns"]:.2f}</td>'
                f'<td class="num">{entry["prompt_tokens"]} / {entry["completion_tokens"]}</td></tr>'
            )
        parts.append(
            "<h2>Per env</h2><table><thead><tr><th>family</th><th>env</th><th>episodes</th>"
            "<th>success</th><th>score</th><th>turns</th>"
            "<th>tokens (prompt / completion, as reported)</th></tr></thead><tbody>"
            + "".join(lines)
            + "</tbody></table>"
        )
    parts.append("<h2>Episodes</h2>")
    for episode in episodes:
        mark = "success" if episode["success"] else "failure"
        turns = []
        for number, turn in enumerate(episode["transcript"], start=1):
            observation = f'<pre class="observation">{_shown(turn["observation"])}</pre>'
            if "response" in turn:
                turns.append(
                    f'<div class="turn"><b>turn {number}</b> (reward {turn["reward"]:+.3f}){observation}'
                    f'<pre class="response">{_shown(turn["response"])}</pre></div>'
                )
            else:
                turns.append(f'<div class="turn"><b>final observation</b>{observation}</div>')
        parts.append(
            f'<details class="episode"><summary>{escape(episode["env_id"])} · '
            f"task {escape(episode['task_id'])} · "
            f"seed {episode['seed']} · {mark} · score {episode['score']:.3f}</summary>"
            f"{''.join(turns)}</details>"
        )
    return _page(f"{row['model']} · agentenvs leaderboard", "\n".join(parts))


SUBMIT_COMMANDS = (
    "vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000",
    (
        "agentenvs eval all --model Qwen/Qwen2.5-7B-Instruct --model-size 7B "
        "--base-url http://127.0.0.1:8000/v1 --out runs/qwen7b"
    ),
    "LEADERBOARD_TOKEN=... leaderboard submit runs/qwen7b --url https://BOARD --wait",
)


def submit_page(board_link: str) -> str:
    """How to submit: serve the model, evaluate it on the panel, upload the bundle."""
    steps = (
        (
            "Serve the model behind an OpenAI-compatible endpoint (on a CPU: "
            "<code>python -m agentenvs.agents.openai_server --model PATH --name NAME --port 8000</code>)."
        ),
        "Play the test panel and write the bundle (rerun the same command to resume).",
        (
            "Upload it with your token; <code>--wait</code> prints the verdict. <code>leaderboard verify "
            "runs/qwen7b</code> re-checks the bundle locally first, exactly as the board will."
        ),
    )
    items = "".join(
        f"<li>{step}<pre>{escape(command)}</pre></li>"
        for step, command in zip(steps, SUBMIT_COMMANDS, strict=False)
    )
    body = (
        f'<p><a href="{escape(board_link)}">← board</a></p><h1>How to submit</h1>'
        f"<p>Three commands, from a model to a verified row (agentenvs {escape(agentenvs.__version__)}):</p>"
        f"<ol>{items}</ol><p>The board replays every episode with its recorded responses; a row appears once "
        "every episode reproduces. Names must be plain text: control, zero-width and bidi characters are "
        "refused.</p>"
    )
    return _page("How to submit · agentenvs leaderboard", body)

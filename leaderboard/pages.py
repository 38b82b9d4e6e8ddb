"""The board's HTML: the same pages served by the app and written by ``leaderboard export``.

Every value from a submission (model names, task ids, responses,
observations) is escaped with :func:`html.escape`; the only script is the
fixed sorting script below, allowed by its hash in the Content-Security-
Policy, so even markup that slipped through escaping could not run a script.
The sorting script reads cells' ``data-sort`` values and moves rows; it never
writes HTML.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Sequence
from html import escape
from typing import Any

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
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; script-src 'sha256-{SCRIPT_HASH}'; style-src 'unsafe-inline'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; } th, td { padding: 4px 10px; border-bottom: 1px solid #ddd; }
th[data-column] { cursor: pointer; } th[data-order="desc"]::after { content: " ▼"; }
th[data-order="asc"]::after { content: " ▲"; } td.num { text-align: right; white-space: nowrap; }
.ci { color: #777; font-size: 85%; } .verified { color: #080; } .turn { margin: 0.5em 0; }
pre { white-space: pre-wrap; background: #f6f6f6; padding: 6px; margin: 2px 0; }
"""

Link = Callable[[int], str]


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(CONTENT_SECURITY_POLICY)}">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n"
        f"<script>{SORT_SCRIPT}</script>\n</body></html>\n"
    )


def _interval_cell(interval: dict[str, float] | None, as_percent: bool) -> str:
    if interval is None:
        return '<td class="num" data-sort="-1">–</td>'
    scale, unit = (100.0, "%") if as_percent else (1.0, "")
    digits = 1 if as_percent else 3
    mean, low, high = (interval[k] * scale for k in ("mean", "low", "high"))
    return (
        f'<td class="num" data-sort="{interval["mean"]:.6f}">{mean:.{digits}f}{unit} '
        f'<span class="ci">[{low:.{digits}f}, {high:.{digits}f}]</span></td>'
    )


def board_page(rows: Sequence[dict[str, Any]], link: Link) -> str:
    """The board: one row per verified submission, overall and per-env score and success."""
    env_ids = sorted({env_id for row in rows for env_id in row["summary"]["envs"]})
    headers = ["model", "size", "kind", "date", "verified", "envs", "overall score", "overall success"]
    headers += [f"{env_id.split('/')[-1]} score" for env_id in env_ids] + ["settings"]
    head = "".join(f'<th data-column="{i}">{escape(name)}</th>' for i, name in enumerate(headers))
    body = []
    # rows rank only among submissions of the same panel and generation settings (settings_digest)
    ordered = sorted(
        rows,
        key=lambda row: (
            row["panel"], row["metadata"]["settings_digest"], -row["summary"]["overall"]["score"]["mean"]
        ),
    )
    for row in ordered:
        summary = row["summary"]
        cells = [
            f'<td data-sort="{escape(row["model"])}"><a href="{escape(link(row["id"]))}">{escape(row["model"])}</a></td>',
            f'<td data-sort="{escape(row["model_size"])}">{escape(row["model_size"]) or "–"}</td>',
            f'<td data-sort="{escape(row["endpoint"])}">{escape(row["endpoint"])}</td>',
            f'<td data-sort="{escape(row["created"])}">{escape(row["created"][:10])}</td>',
            '<td data-sort="1" class="verified" title="every episode re-run and reproduced">✔ replayed</td>',
            f'<td class="num" data-sort="{summary["overall"]["envs"]}">{summary["overall"]["envs"]}</td>',
            _interval_cell(summary["overall"]["score"], as_percent=False),
            _interval_cell(summary["overall"]["success"], as_percent=True),
        ]
        cells += [
            _interval_cell(summary["envs"].get(env_id, {}).get("score"), as_percent=False)
            for env_id in env_ids
        ]
        settings = json.dumps(row["metadata"]["settings"], sort_keys=True)
        digest = row["metadata"]["settings_digest"]
        cells.append(f'<td data-sort="{digest}" title="{escape(settings)}">{digest[:8]}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    table = (
        f'<table class="sortable" id="board"><thead><tr>{head}</tr></thead>'
        f"<tbody>\n{chr(10).join(body)}\n</tbody></table>"
    )
    intro = (
        "<h1>agentenvs leaderboard</h1><p>Every row was re-checked by replay: each submitted episode was "
        "re-run in the environments with its recorded responses and reproduced its rewards, success and "
        "score; summaries are recomputed. Success with 95% Wilson intervals, score with 95% bootstrap "
        "intervals; rows are grouped by panel and generation settings; overall = unweighted mean "
        "over the submission's envs. Click a header to sort.</p>"
    )
    return _page("agentenvs leaderboard", intro + table)


def submission_page(row: dict[str, Any], episodes: Sequence[dict[str, Any]], board_link: str) -> str:
    """One submission: metadata, per-env summary, then every episode's replayed transcript."""
    meta = row["metadata"]
    facts = [
        ("model", row["model"]),
        ("size", row["model_size"] or "–"),
        ("endpoint kind", row["endpoint"]),
        ("panel", f"{row['panel']} ({meta['panel_digest']})"),
        ("package version", meta["package_version"]),
        ("settings", f"{json.dumps(meta['settings'], sort_keys=True)} ({meta['settings_digest']})"),
        ("evaluated", row["created"]),
        ("received", row["received"]),
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
    if row["summary"]:
        lines = []
        for env_id, entry in sorted(row["summary"]["envs"].items()):
            lines.append(
                f'<tr><td>{escape(env_id)}</td><td class="num">{entry["episodes"]}</td>'
                f"{_interval_cell(entry['success'], True)}{_interval_cell(entry['score'], False)}"
                f'<td class="num">{entry["turns"]:.2f}</td>'
                f'<td class="num">{entry["prompt_tokens"]} / {entry["completion_tokens"]}</td></tr>'
            )
        parts.append(
            "<h2>Per env</h2><table><thead><tr><th>env</th><th>episodes</th><th>success</th><th>score</th>"
            "<th>turns</th><th>tokens (prompt / completion, as reported)</th></tr></thead><tbody>"
            + "".join(lines)
            + "</tbody></table>"
        )
    parts.append("<h2>Episodes</h2>")
    for episode in episodes:
        mark = "success" if episode["success"] else "failure"
        turns = []
        for number, turn in enumerate(episode["transcript"], start=1):
            observation = f'<pre class="observation">{escape(turn["observation"])}</pre>'
            if "response" in turn:
                turns.append(
                    f'<div class="turn"><b>turn {number}</b> (reward {turn["reward"]:+.3f}){observation}'
                    f'<pre class="response">{escape(turn["response"])}</pre></div>'
                )
            else:
                turns.append(f'<div class="turn"><b>final observation</b>{observation}</div>')
        parts.append(
            f'<details class="episode"><summary>{escape(episode["env_id"])} · task {escape(episode["task_id"])} · '
            f"seed {episode['seed']} · {mark} · score {episode['score']:.3f}</summary>{''.join(turns)}</details>"
        )
    return _page(f"{row['model']} · agentenvs leaderboard", "\n".join(parts))

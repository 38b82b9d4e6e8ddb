"""ColBench frontend tasks: generated landing pages with hidden design choices, and the official files.

Built in: :class:`GeneratedPages` draws a business and hidden design
parameters per task (colours, font, alignment, feature layout, button
shape, title size, number of features); the request names the business and
the page's sections, not the design. The reference page is self-contained
HTML with inline CSS (no external resource), ≤ 60 lines. Splits train
10,000 / valid 1,000 / test 1,000, disjoint by content as for the backend
tasks.

Official: ``OfficialPages(data_dir)`` reads ColBench's
``frontend_tasks/{train,test}.jsonl`` (``problem_description``,
``ground_truth`` = the page's HTML; built by sweet_rl from WebSight v0.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from agentenvs.envs.colbench.sources import Fact, GeneratedSource, OfficialSource, draw_in_split, pick

PREFIX = "colbench-page"

BUSINESSES = (
    (
        "Bloom & Petal",
        "a flower shop",
        ("Fresh bouquets", "Same-day delivery", "Wedding flowers", "Plant care"),
    ),
    ("Northwind Bikes", "a bicycle repair shop", ("Tune-ups", "Flat fixes", "Custom builds", "Rentals")),
    ("Quiet Pages", "a used bookstore", ("Rare editions", "Reading nook", "Book club", "Trade-ins")),
    ("Summit Yoga", "a yoga studio", ("Morning flow", "Beginner classes", "Private sessions", "Meditation")),
    ("Harbor Bakery", "a neighbourhood bakery", ("Sourdough", "Pastries", "Custom cakes", "Coffee")),
    ("Pixel Forge", "a web design agency", ("Branding", "Websites", "Hosting", "Support")),
    ("Green Paws", "a pet grooming salon", ("Baths", "Haircuts", "Nail trims", "Pickup service")),
    ("Lumen Dental", "a dental clinic", ("Check-ups", "Whitening", "Braces", "Emergency care")),
)
COLOURS = {
    "navy": "#1f3a93",
    "crimson": "#c0392b",
    "forest green": "#1e8449",
    "orange": "#e67e22",
    "purple": "#7d3c98",
    "teal": "#138d75",
    "charcoal": "#34495e",
    "pink": "#d63384",
}
BACKGROUNDS = {"white": "#ffffff", "light grey": "#f2f2f2", "cream": "#fdf6e3", "pale blue": "#eaf2fb"}
FONTS = {
    "a serif font": "Georgia, serif",
    "a sans-serif font": "Arial, sans-serif",
    "a monospace font": "'Courier New', monospace",
}


@dataclass(frozen=True)
class PageTask:
    """One frontend task: the request, the hidden reference page, the hidden facts."""

    task_id: str
    request: str
    reference: str
    facts: tuple[Fact, ...]
    default_answer: str = ""


def sample_design(rng: np.random.Generator) -> dict[str, Any]:
    return {
        "business": int(rng.integers(len(BUSINESSES))),
        "colour": pick(rng, tuple(COLOURS)),
        "background": pick(rng, tuple(BACKGROUNDS)),
        "font": pick(rng, tuple(FONTS)),
        "align": pick(rng, ("left", "center")),
        "layout": pick(rng, ("row", "column")),
        "button": pick(rng, ("rounded", "square", "pill")),
        "title_px": pick(rng, (32, 40, 48, 56)),
        "features": int(rng.integers(2, 5)),
    }


DEFAULT_DESIGN = {
    "colour": "navy",
    "background": "white",
    "font": "a sans-serif font",
    "align": "center",
    "layout": "row",
    "button": "rounded",
    "title_px": 40,
    "features": 3,
}


def design_facts(d: dict[str, Any]) -> tuple[Fact, ...]:
    return (
        Fact(
            "colour",
            ("colour", "color", "colours", "colors", "brand", "main", "accent"),
            "What is the main brand colour?",
            f"The main colour is {d['colour']}, used for the header and button.",
        ),
        Fact(
            "background",
            ("background", "backdrop", "behind"),
            "What should the background behind everything be?",
            f"The page background is {d['background']}.",
        ),
        Fact(
            "font",
            ("font", "fonts", "typeface", "typography"),
            "Which font should it use?",
            f"Use {d['font']} everywhere.",
        ),
        Fact(
            "align",
            ("align", "aligned", "alignment", "centered", "centred", "left"),
            "Should the text be centered or left aligned?",
            f"The header and hero text are {d['align']} aligned.",
        ),
        Fact(
            "layout",
            ("layout", "arranged", "arrange", "side", "stacked", "grid", "cards"),
            "How should the feature cards be arranged?",
            "Put the feature cards side by side in a row."
            if d["layout"] == "row"
            else "Stack the feature cards on top of each other.",
        ),
        Fact(
            "button",
            ("button", "buttons", "corners", "shape"),
            "What shape is the button?",
            {
                "rounded": "The button has slightly rounded corners.",
                "square": "The button has square corners.",
                "pill": "The button is pill shaped, fully rounded.",
            }[d["button"]],
        ),
        Fact(
            "title",
            ("title", "heading", "headline", "big", "size", "large"),
            "How big is the main title?",
            f"The main title is {d['title_px']} pixels tall.",
        ),
        Fact(
            "features",
            ("features", "feature", "many", "services", "number"),
            "How many features should be shown?",
            f"Show {d['features']} features.",
        ),
    )


def render_page(d: dict[str, Any]) -> str:
    """The page for design ``d`` (business included): HTML with inline CSS only."""
    name, kind, features = BUSINESSES[d["business"]]
    colour, background, font = COLOURS[d["colour"]], BACKGROUNDS[d["background"]], FONTS[d["font"]]
    radius = {"rounded": "6px", "square": "0", "pill": "999px"}[d["button"]]
    cards = "\n".join(
        f'    <div class="card"><h3>{title}</h3><p>{name} offers {title.lower()}.</p></div>'
        for title in features[: d["features"]]
    )
    return f"""<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{name}</title>
<style>
  body {{ margin: 0; background: {background}; font-family: {font}; color: #222; }}
  header {{ background: {colour}; color: #fff; padding: 16px 32px; text-align: {d["align"]}; }}
  .hero {{ padding: 48px 32px; text-align: {d["align"]}; }}
  .hero h1 {{ font-size: {d["title_px"]}px; margin: 0 0 16px; }}
  .button {{ display: inline-block; background: {colour}; color: #fff; padding: 12px 24px;
            border-radius: {radius}; text-decoration: none; }}
  .features {{ display: flex; flex-direction: {d["layout"]}; gap: 16px; padding: 0 32px 32px; }}
  .card {{ flex: 1; background: #fff; border: 1px solid #ddd; padding: 16px; }}
  footer {{ background: #222; color: #ccc; padding: 16px 32px; }}
</style>
</head>
<body>
  <header><strong>{name}</strong></header>
  <section class="hero">
    <h1>Welcome to {name}</h1>
    <p>Your favourite {kind.split(" ", 1)[1]} in town.</p>
    <a class="button" href="#contact">Contact us</a>
  </section>
  <section class="features">
{cards}
  </section>
  <footer>&copy; {name}</footer>
</body>
</html>
"""


def page_request(d: dict[str, Any]) -> str:
    name, kind, _ = BUSINESSES[d["business"]]
    return (
        f"I need a one-page website for {name}, {kind}: a header with the name, a welcome section "
        "with a contact button, a few feature cards and a footer. Please write it in HTML and CSS."
    )


def generate_page(split: str, index: int) -> PageTask:
    """The built-in page task at ``index`` of ``split`` (deterministic)."""
    _, design = draw_in_split(PREFIX, split, index, sample_design)
    default = {**DEFAULT_DESIGN, "business": design["business"]}
    return PageTask(
        task_id=f"{PREFIX}-{split}-{index:05d}",
        request=page_request(design),
        reference=render_page(design),
        facts=design_facts(design),
        default_answer=render_page(default),
    )


class GeneratedPages(GeneratedSource[PageTask]):
    """The built-in frontend tasks (see the module docstring)."""

    prefix = PREFIX

    def generate(self, split: str, index: int) -> PageTask:
        return generate_page(split, index)


class OfficialPages(OfficialSource[PageTask]):
    """ColBench's published frontend tasks, from ``data_dir/frontend_tasks/{train,test}.jsonl``."""

    prefix = PREFIX
    folder = "frontend_tasks"
    kind = "frontend"

    def parse(self, record: dict, task_id: str) -> PageTask:
        return PageTask(task_id, str(record["problem_description"]), str(record["ground_truth"]), ())

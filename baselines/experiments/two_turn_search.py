"""Two-turn search in miniature (MT-GRPO, Wei/Zeng et al. 2025): GRPO-OR vs GRPO-MR vs MT-GRPO, several seeds.

The paper's claim and setting: Qwen2.5-7B on TriviaQA, one search turn then
one answer turn, rewards tool execution 0.2, answer in the search results
0.5, XML format 0.2 and exact match 1 (``baselines/configs/mt_grpo_search.yaml``
on ``agentenvs/Search-TriviaQA-2Turn-v0``). GRPO on the outcome reward alone
(GRPO-OR) collapses: tool execution 0, exact match 0, XML format 0.04. GRPO
on the merged (summed) reward (GRPO-MR) reaches tool execution 0.2 (the
maximum) and exact match 0.3346; MT-GRPO's turn-level advantages reach 0.2
and 0.5010 (:data:`PAPER`).

The miniature (``baselines/configs/paper_two_turn_search.yaml``): the same
env id, protocol, turn limit and reward preset (``mt-grpo``), over a
generated world instead of TriviaQA and wiki-18 (:func:`build_world` writes
it under ``--out``/``data`` in FlashRAG's layout, and the env reads it through
its ``data_dir`` kwarg): :data:`ENTITIES` made-up names, each with one colour
of :data:`COLOURS` (two entities per colour), a passage ``"{entity} is
{colour}."`` titled with the entity, and a question ``"what color is
{entity}?"`` whose golden answer is the colour. A search of the entity
returns its passage (BM25, ``topk`` 1), so the answer is in the results;
the question alone does not hold it. The policy is a tiny causal LM (2
layers, hidden 32) trained from scratch, sampling 2 tokens per turn from
13 whole-tag tokens only: the empty think block ``<think></think>``, one
``<search>{entity}</search>`` per entity and one ``<answer>{colour}</answer>``
per colour. A turn is well formed when it is the think block then a search
or answer (``<think></think><search>zorb</search>``); a bare block, or one
followed by anything, is a valid action but not well formed; two think
blocks are no action at all. The prompt is the current observation alone
(the question, then the search results).

What it simplifies: the policy never writes free text, so a query or an
answer is one choice among 8 or 4 and the tags are never misspelt; the
think block is empty; 8 questions in a fixed pool, so the policy sees each
question about 400 times and can memorise its answer without searching
(TriviaQA's questions are not repeated); 64 episodes (8 questions × 8) per
iteration instead of 21 per question, no KL (as the paper), lr 3e-3 instead
of 1e-6, 2 PPO epochs of 32-sequence minibatches, 50 iterations. The env
pays tool execution and answer-in-results on every search turn, so a
second search instead of the answer pays again (1.4 in all, below the 1.9
of a search and a correct well-formed answer); the paper's tool-execution
reward is a share of the calls, so it pays 0.2 at most.

Arms: the ``critic_free`` algorithm with ``estimator`` ``grpo_or`` (GRPO
over the last turn's reward: exact match and XML format on an answer
turn, the search rewards when a second search ends the episode), ``grpo``
(GRPO over the episode's summed reward, GRPO-MR) and
``mt_grpo`` (MT-GRPO, alpha 1: the search turn's advantage is its own
normalised reward plus the outcome's); nothing else differs.

Metrics, per iteration, mean over its episodes, in the paper's units (the
env's component value times its ``mt-grpo`` weight, read from the env):
``exact_match`` (outcome: 1 for a correct answer), ``tool_execution`` (0.2
per search that returned passages: 0.2 for one search, 0.4 for two),
``xml_format`` (0.2 × the share of well-formed turns, paid on the answer
turn), ``answer_in_results`` (0.5 per search whose results hold the
answer), and ``turns``. A run's final value of a metric is its mean over
the last ``--window`` iterations; per arm: mean ± population std, range,
over the seeds.

Verdict rule (:func:`verdict`): the direction **holds** when the arms' mean
final exact match orders MT-GRPO > GRPO-MR > GRPO-OR, both gaps strictly
positive; otherwise it **does not hold**, and the reason names each pair
out of order with its two means, then the pair in order, if one is.

The runs (metrics, checkpoints, cost) go to ``--out``; a run whose metrics
are complete there is read back, not retrained. ``<results>/two_turn_search.json``
holds the command, the numerics, the world, the config and each arm's
overrides, every run's per-iteration curves, the summary, each run's cost
(CPU and wall seconds, env steps, generations) and the verdict;
``two_turn_search.png`` the curves (mean ± std over seeds)::

    python -m baselines.experiments.two_turn_search --seeds 0 1 2 3 4 5 6 7
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from baselines.experiments.common import (
    PINNED_TORCH_THREADS,
    environment_is_pinned,
    experiment_parser,
    pin_numerics,
    run_pinned,
    save_figure,
    seed_count,
    train_or_read,
)
from baselines.trainers.config import ConfigError, TrainConfig, load_config

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "paper_two_turn_search.yaml"
RESULTS_NAME = "two_turn_search"
DEFAULT_OUT = "runs/paper_two_turn_search"
ENTITIES = ("zorb", "quil", "maxo", "tepi", "runa", "velk", "dabe", "wisk")
COLOURS = ("red", "blue", "green", "gold")
DATASET = "triviaqa"  # the FlashRAG folder the env's dataset reads
THINK_BLOCK = "<think></think>"
# metric -> the env's reward component it weighs (exact match is the outcome, weight 1)
METRIC_COMPONENTS = {
    "exact_match": "outcome",
    "tool_execution": "tool_execution",
    "xml_format": "format",
    "answer_in_results": "retrieval",
}
METRICS = (*METRIC_COMPONENTS, "turns")
TABLE_METRICS = ("exact_match", "tool_execution", "xml_format")
# the paper's Table (Qwen2.5-7B, TriviaQA), in its units
PAPER = {
    "grpo_or": {"tool_execution": 0.0, "exact_match": 0.0, "xml_format": 0.04},
    "grpo": {"tool_execution": 0.2, "exact_match": 0.3346},
    "mt_grpo": {"tool_execution": 0.2, "exact_match": 0.5010},
}


@dataclass(frozen=True)
class Arm:
    """One arm: the overrides that select its estimator, its paper name."""

    overrides: tuple[str, ...]
    label: str


ARMS = {
    "grpo_or": Arm(("algorithm.estimator=grpo_or",), "GRPO-OR"),
    "grpo": Arm(("algorithm.estimator=grpo",), "GRPO-MR"),
    "mt_grpo": Arm(("algorithm.estimator=mt_grpo",), "MT-GRPO"),
}
# the paper's order, best last: the verdict wants each arm's exact match above the one before it
PAPER_ORDER = ("grpo_or", "grpo", "mt_grpo")
# arm -> seed -> metric -> per-iteration values
Curves = Mapping[str, Mapping[str, Mapping[str, Sequence[float]]]]


def world_facts() -> list[tuple[str, str]]:
    """(entity, colour) of every entity: colours in turn, so each colour belongs to two entities."""
    return [(entity, COLOURS[i % len(COLOURS)]) for i, entity in enumerate(ENTITIES)]


def action_words() -> list[str]:
    """The policy's whole vocabulary: the think block, a search of each entity, an answer of each colour."""
    return [
        THINK_BLOCK,
        *(f"<search>{entity}</search>" for entity in ENTITIES),
        *(f"<answer>{colour}</answer>" for colour in COLOURS),
    ]


def question_rows() -> list[dict[str, Any]]:
    """FlashRAG question rows: id ``q{i}``, ``what color is {entity}``, the colour as the golden answer."""
    return [
        {"id": f"q{i}", "question": f"what color is {entity}", "golden_answers": [colour]}
        for i, (entity, colour) in enumerate(world_facts())
    ]


def task_ids() -> list[str]:
    """The env's ids of the questions (``{dataset}:{row id}``)."""
    return [f"{DATASET}:{row['id']}" for row in question_rows()]


def build_world(folder: Path) -> Path:
    """Write the world under ``folder`` (once; rebuilt when its facts change); ``folder``.

    FlashRAG's layout, as the Search env's ``data_dir`` reads it: the
    questions in ``triviaqa/train.jsonl``, the corpus store in ``corpus/``
    (passage ``i`` titled with entity ``i``: ``"{entity} is {colour}."``),
    its BM25 index in ``index/``, and ``world.json`` recording the facts.
    """
    from retrieval_index import BM25Retriever, Corpus, Passage

    record = {"facts": world_facts(), "questions": question_rows()}
    marker = folder / "world.json"
    if marker.exists() and json.loads(marker.read_text(encoding="utf-8")) == json.loads(json.dumps(record)):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    (folder / DATASET).mkdir(parents=True)
    passages = [
        Passage(str(i), entity, f"{entity} is {colour}.") for i, (entity, colour) in enumerate(world_facts())
    ]
    BM25Retriever.build(Corpus.from_passages(passages, folder / "corpus"), folder / "index")
    lines = "".join(json.dumps(row) + "\n" for row in question_rows())
    (folder / DATASET / "train.jsonl").write_text(lines, encoding="utf-8")
    marker.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return folder


def arm_config(
    arm: str, seed: int, run_dir: Path, data_dir: Path, iterations: int | None = None
) -> TrainConfig:
    """One run's config: :data:`CONFIG` with the arm's overrides, the seed and the world's folder."""
    if arm not in ARMS:
        raise ConfigError(f"unknown arm {arm!r}; arms: {sorted(ARMS)}")
    kwargs = {**load_config(CONFIG).env.kwargs, "data_dir": str(data_dir)}
    overrides = [*ARMS[arm].overrides, f"env.kwargs={json.dumps(kwargs)}"]
    overrides += [f"run.seed={seed}", f"run.out_dir={run_dir}", f"policy.num_threads={PINNED_TORCH_THREADS}"]
    if iterations is not None:
        overrides.append(f"run.iterations={iterations}")
    return load_config(CONFIG, overrides)


def reward_weights(config: TrainConfig) -> dict[str, float]:
    """The component weights of the env the config trains on (its preset and overrides)."""
    import gymnasium as gym

    import agentenvs  # noqa: F401  (registers the ids)

    env = gym.make(config.env.id, disable_env_checker=True, **config.env.kwargs)
    try:
        return dict(env.unwrapped.reward_weights)
    finally:
        env.close()


def metric_curves(
    records: Sequence[Mapping[str, Any]], weights: Mapping[str, float]
) -> dict[str, list[float]]:
    """Per iteration, each of :data:`METRICS`: ``weight × component/<name>`` (mean per episode), and turns."""
    curves = {
        metric: [weights[component] * float(r.get(f"component/{component}", 0.0)) for r in records]
        for metric, component in METRIC_COMPONENTS.items()
    }
    curves["turns"] = [float(r["turns"]) for r in records]
    return curves


def run_cost(records: Sequence[Mapping[str, Any]], times: Mapping[str, Any] | None) -> dict[str, Any]:
    """One run's cost: env steps = Σ episodes × mean turns; generations = sampled responses, one per
    turn, so equal to the env steps; CPU and wall seconds (None: read back untimed)."""
    steps = sum(round(r["episodes"] * r["turns"]) for r in records)
    return {
        "env_steps": steps,
        "generations": steps,
        "cpu_s": times["cpu_s"] if times else None,
        "wall_s": times["wall_s"] if times else None,
    }


def summarise(curves: Curves, window: int) -> dict[str, Any]:
    """Per arm and seed, each metric's final value (mean of its last ``window`` points); per arm and
    metric, the mean, population std, min and max of those over the seeds."""
    summary: dict[str, Any] = {}
    for arm, by_seed in curves.items():
        finals = {
            seed: {metric: float(np.mean(curve[-window:])) for metric, curve in metrics.items()}
            for seed, metrics in by_seed.items()
        }
        block: dict[str, Any] = {"seeds": finals}
        for metric in next(iter(finals.values())):
            values = [final[metric] for final in finals.values()]
            block[metric] = {
                "mean": float(np.mean(values)),
                "std": float(np.std(values)),
                "min": float(min(values)),
                "max": float(max(values)),
            }
        summary[arm] = block
    return summary


def verdict(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The direction's verdict from the mean final exact match (rule in the module docstring).

    ``not testable here`` when an arm of the paper's order is missing from ``summary``.
    """
    missing = [arm for arm in PAPER_ORDER if arm not in summary]
    if missing:
        names = ", ".join(ARMS[arm].label for arm in missing)
        return {"verdict": "not testable here", "reason": f"{names} not run"}
    means = {arm: summary[arm]["exact_match"]["mean"] for arm in PAPER_ORDER}
    pairs = list(zip(PAPER_ORDER, PAPER_ORDER[1:], strict=False))  # (lower, higher) in the paper

    def compared(low: str, high: str, sign: str) -> str:
        return f"{ARMS[high].label} {means[high]:.3f} {sign} {ARMS[low].label} {means[low]:.3f}"

    out_of_order = [compared(low, high, "≤") for low, high in pairs if not means[high] > means[low]]
    if not out_of_order:
        chain = " > ".join(f"{ARMS[arm].label} {means[arm]:.3f}" for arm in reversed(PAPER_ORDER))
        return {"verdict": "holds", "reason": f"final exact match {chain}"}
    in_order = [compared(low, high, ">") for low, high in pairs if means[high] > means[low]]
    reason = "final exact match " + "; ".join(out_of_order)
    if in_order:
        reason += f" (in order: {'; '.join(in_order)})"
    return {"verdict": "does not hold", "reason": reason}


def docs_row(results: Mapping[str, Any]) -> str:
    """The row of "The papers' results and ours": title, paper, miniature, ours, verdict, CPU cost."""
    paper = "<br>".join(
        f"{ARMS[arm].label}: EM {figures['exact_match']:g}, tool {figures['tool_execution']:g}"
        + (f", format {figures['xml_format']:g}" if "xml_format" in figures else "")
        for arm, figures in PAPER.items()
    )
    world = results["world"]
    settings = results["settings"]
    miniature = (
        f"tiny LM from scratch, {len(world['facts'])} entities × 1 of {len(world['colours'])} colours, "
        f"2 turns, mt-grpo rewards, {settings['iterations']} iterations × "
        f"{settings['episodes_per_iteration']} episodes, "
        f"2 tokens per turn from {len(settings['action_words'])}"
    )

    def spread(block: Mapping[str, float]) -> str:
        return f"{block['mean']:.3f} ± {block['std']:.3f} ({block['min']:.3f}–{block['max']:.3f})"

    summary = results["summary"]
    ours = "<br>".join(
        f"{ARMS[arm].label} ({seed_count(len(block['seeds']))}): EM {spread(block['exact_match'])}, "
        f"tool {block['tool_execution']['mean']:.3f}, format {block['xml_format']['mean']:.3f}"
        for arm, block in summary.items()
    )
    decided = results["verdict"]
    runs = [cost for by_seed in results["cost"].values() for cost in by_seed.values()]
    timed = [cost["cpu_s"] for cost in runs if cost["cpu_s"] is not None]
    cpu = f"{sum(timed):,.0f} CPU s"
    if len(timed) < len(runs):
        cpu += f" ({len(timed)} of {len(runs)} runs timed)"
    steps = sum(cost["env_steps"] for cost in runs)
    cells = [
        "Two-turn search (MT-GRPO)",
        f"Qwen2.5-7B, TriviaQA, search then answer:<br>{paper}",
        miniature,
        ours,
        f"{decided['verdict']}: {decided['reason']}",
        f"{cpu}, {steps:,} env steps, {len(runs)} runs",
    ]
    return "| " + " | ".join(cell.replace("|", "/") for cell in cells) + " |"


def plot(curves: Curves, out: Path) -> Path | None:
    """Exact match, tool execution and XML format per iteration: mean over seeds, band ± std."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(TABLE_METRICS), figsize=(15, 4.2))
    for arm, by_seed in curves.items():
        for axis, metric in zip(axes, TABLE_METRICS, strict=True):
            values = np.array([metrics[metric] for metrics in by_seed.values()])
            mean, std = values.mean(0), values.std(0)
            iterations = np.arange(1, values.shape[1] + 1)
            (line,) = axis.plot(iterations, mean, label=f"{ARMS[arm].label} ({seed_count(len(by_seed))})")
            axis.fill_between(iterations, mean - std, mean + std, alpha=0.2, color=line.get_color())
    for axis, metric in zip(axes, TABLE_METRICS, strict=True):
        axis.set_xlabel("iteration")
        axis.set_ylabel(metric.replace("_", " ") + " (per episode, paper's units)")
        axis.grid(alpha=0.3)
        axis.legend()
    return save_figure(figure, out / f"{RESULTS_NAME}.png")


def main(argv: Sequence[str] | None = None) -> int:
    parser = experiment_parser(
        __doc__.splitlines()[0], DEFAULT_OUT, "the world, and the runs' metrics and cost"
    )
    parser.add_argument("--arms", nargs="+", choices=sorted(ARMS), default=list(ARMS))
    parser.add_argument("--iterations", type=int, default=None, help="override the config's iterations")
    parser.add_argument("--window", type=int, default=5, help="iterations a final value averages")
    args = parser.parse_args(argv)
    if not environment_is_pinned():
        return run_pinned(f"baselines.experiments.{RESULTS_NAME}", argv)
    numerics = pin_numerics()

    out = Path(args.out)
    data_dir = build_world(out / "data")
    curves: dict[str, dict[str, dict[str, list[float]]]] = {}
    cost: dict[str, dict[str, dict[str, Any]]] = {}
    overrides: dict[str, list[str]] = {}
    weights: dict[str, float] = {}
    config: TrainConfig | None = None
    for arm in args.arms:
        for seed in args.seeds:
            config = arm_config(arm, seed, out / f"{arm}-s{seed}", data_dir, args.iterations)
            weights = weights or reward_weights(config)
            records, times = train_or_read(config)
            curves.setdefault(arm, {})[str(seed)] = metric_curves(records, weights)
            cost.setdefault(arm, {})[str(seed)] = run_cost(records, times)
            final = curves[arm][str(seed)]["exact_match"][-args.window :]
            print(f"{ARMS[arm].label:8s} seed {seed}: final exact match {np.mean(final):.3f}", flush=True)
        overrides[arm] = list(ARMS[arm].overrides)
    assert config is not None  # argparse gives at least one arm and one seed
    settings = config.to_dict()
    settings["run"].pop("seed")
    settings["run"].pop("out_dir")
    settings["env"]["kwargs"].pop("data_dir")
    summary = summarise(curves, args.window)
    command = ["--arms", *args.arms, "--seeds", *map(str, args.seeds), "--window", str(args.window)]
    command += ["--iterations", str(args.iterations)] if args.iterations is not None else []
    results = {
        "command": "python -m baselines.experiments.two_turn_search " + " ".join(command),
        "numerics": numerics,
        "world": {"facts": world_facts(), "colours": list(COLOURS), "questions": question_rows()},
        "settings": {
            "config": CONFIG.name,
            "config_values": settings,
            "arm_overrides": overrides,
            "reward_weights": weights,
            "iterations": config.run.iterations,
            "episodes_per_iteration": config.env.num_groups * config.env.group_size,
            "action_words": list(config.policy.action_words),
            "window": args.window,
        },
        "paper": PAPER,
        "curves": curves,
        "summary": summary,
        "cost": cost,
        "verdict": verdict(summary),
    }
    results_dir = Path(args.results)
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{RESULTS_NAME}.json"
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    figure = plot(curves, results_dir)
    for arm, block in summary.items():
        cells = "  ".join(f"{m} {block[m]['mean']:.3f} ± {block[m]['std']:.3f}" for m in TABLE_METRICS)
        print(f"{ARMS[arm].label:8s} {cells}")
    print(f"verdict: {results['verdict']['verdict']} ({results['verdict']['reason']})")
    print(f"results: {path}" + (f", curves: {figure}" if figure else ""))
    print(docs_row(json.loads(path.read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Replay verification throughput: episodes re-checked per second, per env and vector backend.

Builds one submission per env with a scripted agent on a panel of
``--episodes`` episodes (the random agent plays long episodes, up to the
turn limit; the expert short ones, like a model that solves its tasks), then times
:func:`leaderboard.verify.verify_submission` on it: schema, panel digests,
coverage, replay of every turn, summary recomputation. The in-process backend
uses one core; ``subprocess`` spreads each env's replay batches over
``--workers`` processes (their start-up is inside the clock). The panel's
digests are computed once per process (cached, as on a running board) and
stay outside the clock.

    python benchmarks/bench_leaderboard.py [--episodes 1000] [--agent random|expert] [--workers 2]
        [--env agentenvs/Sokoban-v0 ...] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import time

import agentenvs
from agentenvs.core.registration import available_main_ids
from agentenvs.eval.panel import PanelSpec, env_panel
from leaderboard.seed import scripted_document
from leaderboard.verify import verify_submission


def scripted_submission(env_id: str, agent: str, episodes: int) -> tuple[PanelSpec, dict]:
    spec = PanelSpec(f"bench-{episodes}", "test", episodes)
    return spec, scripted_document([env_id], agent, spec)


def measure(spec: PanelSpec, document: dict, backend: str, workers: int) -> dict[str, float]:
    turns = sum(episode["turns"] for episode in document["episodes"])
    started = time.perf_counter()
    verdict = verify_submission(document, backend=backend, num_workers=workers, panels={spec.name: spec})
    seconds = time.perf_counter() - started
    if not verdict.verified:
        raise RuntimeError(f"the benchmark's own submission did not verify: {verdict.problems[:3]}")
    episodes = len(document["episodes"])
    return {
        "episodes": episodes,
        "turns": turns,
        "seconds": seconds,
        "episodes_per_s": episodes / seconds,
        "turns_per_s": turns / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument(
        "--agent", default="random", choices=["random", "expert"], help="who played the episodes"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--env", action="append", help="env id (repeatable; default every main env available)"
    )
    parser.add_argument(
        "--backend", action="append", choices=["inprocess", "subprocess"], help="default both"
    )
    parser.add_argument("--out", help="write the rows as JSON")
    args = parser.parse_args()
    rows = []
    print(
        f"agentenvs {agentenvs.__version__}: replay verification of {args.episodes} {args.agent}-agent "
        "episodes per env"
    )
    print(
        f"{'env':<28} {'backend':<16} {'episodes':>8} {'turns':>7} {'seconds':>8} {'episodes/s':>11} "
        f"{'turns/s':>8}"
    )
    for env_id in args.env or available_main_ids():
        spec, document = scripted_submission(env_id, args.agent, args.episodes)
        env_panel(env_id, spec)  # the panel digest is computed once per process, outside the clock
        for backend in args.backend or ["inprocess", "subprocess"]:
            row = {"env": env_id, "agent": args.agent, "backend": backend}
            row.update(measure(spec, document, backend, args.workers))
            label = backend if backend == "inprocess" else f"{backend} x{args.workers}"
            print(
                f"{env_id:<28} {label:<16} {row['episodes']:>8} {row['turns']:>7} {row['seconds']:>8.2f} "
                f"{row['episodes_per_s']:>11.0f} {row['turns_per_s']:>8.0f}",
                flush=True,
            )
            rows.append(row)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as sink:
            json.dump(rows, sink, indent=1)


if __name__ == "__main__":
    main()

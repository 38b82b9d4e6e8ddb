"""The env's share of a batched rollout: env seconds per batch turn at 16 groups × 8,
beside generation seconds.

Per main env id: ``--groups`` × ``--group-size`` envs (default 16 × 8, the
papers' GRPO/GiGPO batch), the 8 envs of a group on the same task, played
by the expert in one process on one core. A *batch turn* is one ``step``
of every env of the batch; an env whose episode ended resets at its next
batch turn (its group's next task), and that reset is charged to that
batch turn. The clock holds ``reset`` and ``step`` alone (not the expert's
choice of action). Env seconds per batch turn = env seconds ÷ batch turns.

Beside it, the seconds the model would take to generate the same batch
turn: all the batch's sequences decode together, one token each per decode
step, so a batch turn of R response tokens takes R ÷ (tokens/s of one
sequence). Prefill is left out, and the per-sequence speed is the
light-load figure, which a batch of 128 only lowers: both make the
generation time short and the env's share large, so the share printed is an
upper bound. Env share = env s ÷ (env s + generation s); the aim is ≤ 1 %.

Decode speeds (tokens/s of one sequence, one H200), unless ``--decode``
gives measured ones:

- 7B: the vLLM team's published figure for Llama 3 8B on one H100, one
  token every 13 ms under light load (vLLM blog, "vLLM v0.6.0: 2.7x
  Throughput Improvement and 5x Latency Reduction", 2024-09-05), scaled to
  the H200 by memory bandwidth (decode is bandwidth-bound: 4.8 ÷ 3.35 TB/s):
  13 ms × 3.35 / 4.8 = 9.07 ms, 110 tokens/s.
- 1.5B: vLLM publishes no 1.5B figure; the 7B one scaled by weight bytes
  (1.5 ÷ 8): 1.70 ms, 588 tokens/s, faster than vLLM's per-step overhead
  allows, so again an upper bound on the env's share.

R (``--response-tokens``): 512, the per-turn response cap of verl-agent's
GiGPO runs, and 64, a terse reply without reasoning.

Wall time on this machine in this run (a shared 2-core machine: repeat and
compare runs, not single figures). ``--out`` writes the printed table.

    python benchmarks/bench_rollout_share.py [--groups 16] [--group-size 8] [--batch-turns 20]
        [--env agentenvs/Sokoban-v0 ...] [--decode 7B=110 --decode 1.5B=588] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

import agentenvs
from agentenvs.core.env import MissingProgram
from agentenvs.core.registration import available_main_ids, make_expert


@dataclass(frozen=True)
class DecodeSpeed:
    model: str
    tokens_per_s: float
    source: str


PUBLISHED = (
    DecodeSpeed(
        "1.5B", 588.0, "vLLM blog 2024-09-05 (8B, 1×H100, 13 ms/token) × bandwidth 3.35/4.8 × weights 1.5/8"
    ),
    DecodeSpeed("7B", 110.0, "vLLM blog 2024-09-05 (8B, 1×H100, 13 ms/token) × bandwidth 3.35/4.8"),
)
RESPONSE_TOKENS = (512, 64)


@dataclass
class BatchResult:
    env_id: str
    envs: int
    batch_turns: int
    resets: int
    episodes_ended: int
    env_seconds: float

    @property
    def seconds_per_batch_turn(self) -> float:
        return self.env_seconds / self.batch_turns


def play_batch(env_id: str, groups: int, group_size: int, batch_turns: int) -> BatchResult:
    """Step ``groups × group_size`` envs of ``env_id`` for ``batch_turns`` batch turns; see the module
    docstring."""
    size = groups * group_size
    envs = [gym.make(env_id) for _ in range(size)]
    experts: list[Any] = [None] * size
    observations: list[Any] = [None] * size
    infos: list[dict[str, Any]] = [{} for _ in range(size)]
    episodes_of_group = [0] * groups
    needs_reset = [True] * size
    resets = ended = 0
    env_seconds = 0.0
    clock = time.perf_counter
    for _ in range(batch_turns):
        for i, env in enumerate(envs):
            group = i // group_size
            if needs_reset[i]:
                # the group's k-th task: seed k·groups + group, the same for its group_size envs
                seed = episodes_of_group[group] * groups + group
                start = clock()
                observations[i], infos[i] = env.reset(seed=seed)
                env_seconds += clock() - start
                experts[i] = make_expert(env)
                needs_reset[i] = False
                resets += 1
                if i % group_size == group_size - 1:
                    episodes_of_group[group] += 1
            action = experts[i].act(observations[i], infos[i])
            start = clock()
            observations[i], _, terminated, truncated, infos[i] = env.step(action)
            env_seconds += clock() - start
            if terminated or truncated:
                needs_reset[i] = True
                ended += 1
    for env in envs:
        env.close()
    return BatchResult(env_id, size, batch_turns, resets, ended, env_seconds)


def parse_decode(values: list[str] | None) -> tuple[DecodeSpeed, ...]:
    if not values:
        return PUBLISHED
    speeds = []
    for value in values:
        model, sep, rate = value.partition("=")
        try:
            tokens_per_s = float(rate)
        except ValueError:
            tokens_per_s = -1.0
        if not sep or not model or not tokens_per_s > 0:
            raise SystemExit(f"--decode takes MODEL=TOKENS_PER_S (a positive number), got {value!r}")
        speeds.append(DecodeSpeed(model, tokens_per_s, "given with --decode (a measurement)"))
    return tuple(speeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=16)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--batch-turns", type=int, default=20)
    parser.add_argument(
        "--env", action="append", help="env id (repeatable; default every main env available)"
    )
    parser.add_argument("--decode", action="append", help="MODEL=TOKENS_PER_S of one sequence, measured")
    parser.add_argument("--out", help="also write the printed lines to this file")
    args = parser.parse_args()
    if args.groups < 1 or args.group_size < 1 or args.batch_turns < 1:
        raise SystemExit("--groups, --group-size and --batch-turns must be >= 1")
    speeds = parse_decode(args.decode)
    lines = [
        f"agentenvs {agentenvs.__version__}: env share of a batched rollout, {args.groups} groups × "
        f"{args.group_size} envs, {args.batch_turns} batch turns, expert play, one process on one core",
        f"shared 2-core machine (load average at the start: {os.getloadavg()[0]:.1f}); "
        "generation = R tokens ÷ one sequence's decode speed (upper bound on the share)",
    ]
    lines += [f"decode {s.model}: {s.tokens_per_s:g} tokens/s per sequence ({s.source})" for s in speeds]
    header = f"{'env':<28} {'envs':>4} {'resets':>6} {'ended':>5} {'env s/turn':>10}"
    for speed in speeds:
        for tokens in RESPONSE_TOKENS:
            header += f" {f'{speed.model}@{tokens} gen s':>14} {'share':>7}"
    lines.append(header)
    for line in lines:
        print(line, flush=True)
    for env_id in args.env or available_main_ids():
        try:
            result = play_batch(env_id, args.groups, args.group_size, args.batch_turns)
        except MissingProgram as exc:
            line = f"{env_id:<28} not run: {exc}"
        else:
            seconds = result.seconds_per_batch_turn
            line = (
                f"{env_id:<28} {result.envs:>4} {result.resets:>6} {result.episodes_ended:>5} "
                f"{seconds:>10.4f}"
            )
            for speed in speeds:
                for tokens in RESPONSE_TOKENS:
                    generation = tokens / speed.tokens_per_s
                    line += f" {generation:>14.3f} {100 * seconds / (seconds + generation):>6.2f}%"
        lines.append(line)
        print(line, flush=True)
    lines.append(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print(lines[-1])
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

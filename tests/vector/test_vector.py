"""GroupedVectorEnv: group layout, identical group starts, finished envs, backends, crash survival,
branching from snapshots."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.agents import make_agent
from agentenvs.core import UnknownTaskError
from agentenvs.vector import GroupedVectorEnv

from fixtures.counter_env import CounterEnv

SOKOBAN = "agentenvs/Sokoban-v0"
SOKOBAN_LONG = "agentenvs/Sokoban-Verl-v0"  # 15 one-move turns: long enough histories to replay


def rollout(
    vec: GroupedVectorEnv,
    env_id: str,
    seed: int,
    *,
    before_step: Any = None,
    override: Any = None,
) -> list[tuple]:
    """Random-agent episode of every env (one agent per env, seeded by its index); the full trace.

    ``before_step(turn)`` runs before each batch; ``override(turn, responses)``
    may change the responses sent.
    """
    env = gym.make(env_id) if isinstance(env_id, str) else env_id()
    agents = [make_agent("random", env, seed * 1000 + index) for index in range(vec.num_envs)]
    observations, infos = vec.reset(seed=seed)
    trace: list[tuple] = [(observations, [_stable(info) for info in infos])]
    turn = 0
    while not vec.done.all():
        done = vec.done
        responses = [
            None if done[i] else agents[i].act(observations[i], infos[i]) for i in range(vec.num_envs)
        ]
        if override is not None:
            override(turn, responses)
        if before_step is not None:
            before_step(turn)
        observations, rewards, terminated, truncated, infos = vec.step(responses)
        trace.append(
            (
                observations,
                rewards.tolist(),
                terminated.tolist(),
                truncated.tolist(),
                [_stable(i) for i in infos],
            )
        )
        turn += 1
    return trace


def _stable(info: dict[str, Any]) -> dict[str, Any]:
    """An info without the free-text error (its traceback names files)."""
    return {key: value for key, value in info.items() if key != "error"}


def kill_worker(vec: GroupedVectorEnv, rank: int) -> None:
    os.kill(vec._backend.workers[rank].pid(), signal.SIGKILL)


@pytest.fixture(scope="module")
def sokoban_reference() -> list[tuple]:
    with GroupedVectorEnv(SOKOBAN_LONG, num_groups=3, group_size=2) as vec:
        return rollout(vec, SOKOBAN_LONG, seed=11)


def test_layout_and_identical_group_starts() -> None:
    with GroupedVectorEnv(SOKOBAN, num_groups=4, group_size=3) as vec:
        observations, infos = vec.reset(seed=100)
        assert vec.num_envs == 12 and len(observations) == len(infos) == 12
        assert [(info["group"], info["copy"]) for info in infos] == [
            (g, c) for g in range(4) for c in range(3)
        ]
        for group in range(4):
            members = range(group * 3, group * 3 + 3)
            assert len({observations[i] for i in members}) == 1
            assert len({infos[i]["state_key"] for i in members}) == 1
            assert len({infos[i]["task_id"] for i in members}) == 1
        single = gym.make(SOKOBAN)
        for group in range(4):
            obs, info = single.reset(seed=100 + group)
            assert (observations[group * 3], infos[group * 3]["task_id"]) == (obs, info["task_id"])
        assert len({infos[g * 3]["task_id"] for g in range(4)}) == 4


def test_reset_by_task_ids_and_seedless_resets_continue() -> None:
    with GroupedVectorEnv(SOKOBAN, num_groups=2, group_size=2, env_kwargs={"split": "test"}) as vec:
        single = gym.make(SOKOBAN, split="test")
        wanted = [single.reset(seed=seed)[1]["task_id"] for seed in (40, 7)]
        _, infos = vec.reset(task_ids=wanted)
        assert [info["task_id"] for info in infos] == [wanted[0], wanted[0], wanted[1], wanted[1]]
        _, infos = vec.reset(seed=5)
        _, infos_next = vec.reset()
        expected = [single.reset(seed=seed)[1]["task_id"] for seed in (7, 8)]
        assert [infos_next[0]["task_id"], infos_next[2]["task_id"]] == expected
        with pytest.raises(ValueError, match="one task per group"):
            vec.reset(task_ids=wanted[:1])


def test_finished_envs_are_not_stepped() -> None:
    expert_env = gym.make(SOKOBAN_LONG)
    stall = "<action>wait</action>"  # an invalid turn: the state does not change
    with GroupedVectorEnv(SOKOBAN_LONG, num_groups=1, group_size=2) as vec:
        with pytest.raises(RuntimeError, match="reset"):
            vec.step([None, None])
        observations, infos = vec.reset(seed=3)
        expert_env.reset(seed=3)
        expert = make_agent("expert", expert_env)
        while not vec.done[0]:
            response = expert.act(observations[0], infos[0])
            expert_env.step(response)
            observations, rewards, terminated, truncated, infos = vec.step([response, stall])
        assert terminated[0] and infos[0]["success"] and not infos[0]["finished"] and not vec.done[1]
        last_observation, last_info = observations[0], infos[0]

        observations, rewards, terminated, truncated, infos = vec.step([None, stall])
        assert infos[0]["finished"] and not infos[1]["finished"]
        assert (
            observations[0] == last_observation and rewards[0] == 0.0 and terminated[0] and not truncated[0]
        )
        assert infos[0]["turn"] == last_info["turn"] and infos[0]["state_key"] == last_info["state_key"]
        assert set(infos[0]["reward_components"].values()) == {0.0} and infos[0]["transitions"] == []
        assert "crashed" not in infos[0]  # stepping an ended AgentEnv raises, which would show as a crash
        assert infos[1]["turn"] == last_info["turn"] + 1


def test_step_checks_the_batch_size() -> None:
    with GroupedVectorEnv(SOKOBAN, num_groups=1, group_size=2) as vec:
        vec.reset(seed=0)
        with pytest.raises(ValueError, match="expected 2 responses"):
            vec.step(["up"])


def test_subprocess_matches_inprocess(sokoban_reference: list[tuple]) -> None:
    with GroupedVectorEnv(
        SOKOBAN_LONG, num_groups=3, group_size=2, backend="subprocess", num_workers=2
    ) as vec:
        assert rollout(vec, SOKOBAN_LONG, seed=11) == sokoban_reference


def test_sigkill_between_steps_loses_nothing(sokoban_reference: list[tuple]) -> None:
    with GroupedVectorEnv(
        SOKOBAN_LONG, num_groups=3, group_size=2, backend="subprocess", num_workers=2
    ) as vec:
        pids = [worker.pid() for worker in vec._backend.workers]

        def kill(turn: int) -> None:
            if turn in (2, 6):
                kill_worker(vec, turn // 6)  # worker 0 at turn 2, worker 1 at turn 6

        assert rollout(vec, SOKOBAN_LONG, seed=11, before_step=kill) == sokoban_reference
        assert all(worker.pid() != pid for worker, pid in zip(vec._backend.workers, pids, strict=False))
        # the recovered workers run the next episodes as if nothing happened
        assert rollout(vec, SOKOBAN_LONG, seed=11) == sokoban_reference


def crash_env_three(turn: int, responses: list[Any]) -> None:
    if turn == 2:
        responses[3] = "crash"


def test_a_crashing_action_ends_only_its_episode() -> None:
    with GroupedVectorEnv(CounterEnv, num_groups=3, group_size=2) as vec:
        reference = rollout(vec, CounterEnv, seed=4)
    with GroupedVectorEnv(CounterEnv, num_groups=3, group_size=2, backend="subprocess", num_workers=2) as vec:
        crashed = rollout(vec, CounterEnv, seed=4, override=crash_env_three)
        assert not (reference[2][2][3] or reference[2][3][3])  # env 3 still runs when it gets "crash"
        _, rewards, terminated, truncated, infos = crashed[3]  # the batch after turn index 2
        assert infos[3]["crashed"] and truncated[3] and not terminated[3] and rewards[3] == 0.0
        assert infos[3]["success"] is False and infos[3]["score"] == 0.0
        for later in crashed[4:]:
            assert later[4][3]["finished"]
        for index in (0, 1, 2, 4, 5):
            assert [step[0][index] for step in crashed] == [step[0][index] for step in reference]
            assert [step[-1][index]["state_key"] for step in crashed] == [
                step[-1][index]["state_key"] for step in reference
            ]
        assert rollout(vec, CounterEnv, seed=4) == reference  # the next reset works


def test_an_exception_in_step_ends_only_its_episode_in_every_backend() -> None:
    def raise_in_env_one(turn: int, responses: list[Any]) -> None:
        if turn == 0:
            responses[1] = "raise"

    traces = []
    for backend in ("inprocess", "subprocess"):
        with GroupedVectorEnv(CounterEnv, num_groups=1, group_size=3, backend=backend, num_workers=2) as vec:
            vec.reset(seed=1)
            _, _, _, truncated, infos = vec.step(["inc", "raise", "dec"])
            assert infos[1]["crashed"] and truncated[1] and "the counter broke" in infos[1]["error"]
            assert not infos[0].get("crashed") and not infos[2].get("crashed")
            traces.append(rollout(vec, CounterEnv, seed=2, override=raise_in_env_one))
    assert traces[0] == traces[1]


@pytest.mark.parametrize("backend", ["inprocess", "subprocess"])
def test_a_failed_reset_raises_and_leaves_the_env_usable(
    backend: str, sokoban_reference: list[tuple]
) -> None:
    with GroupedVectorEnv(SOKOBAN_LONG, num_groups=3, group_size=2, backend=backend, num_workers=2) as vec:
        with pytest.raises(UnknownTaskError):
            vec.reset(task_ids=["no-such-task"] * 3)
        with pytest.raises(RuntimeError, match="reset"):
            vec.step([None] * 6)
        assert rollout(vec, SOKOBAN_LONG, seed=11) == sokoban_reference


def test_unknown_backend_and_bad_sizes() -> None:
    with pytest.raises(ValueError, match="unknown backend"):
        GroupedVectorEnv(SOKOBAN, 1, 1, backend="threads")
    with pytest.raises(ValueError, match=">= 1"):
        GroupedVectorEnv(SOKOBAN, 0, 2)


def test_a_worker_that_cannot_build_its_envs_fails_the_constructor() -> None:
    with pytest.raises(TypeError, match="no_such_kwarg"):
        GroupedVectorEnv(
            CounterEnv, 1, 2, backend="subprocess", num_workers=1, env_kwargs={"no_such_kwarg": 1}
        )


@pytest.mark.slow
def test_ray_backend_matches_and_survives() -> None:
    ray = pytest.importorskip("ray")
    tests_dir = str(Path(__file__).resolve().parents[1])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        runtime_env={
            "env_vars": {"PYTHONPATH": os.pathsep.join([tests_dir, os.environ.get("PYTHONPATH", "")])}
        },
    )
    try:
        with GroupedVectorEnv(SOKOBAN_LONG, num_groups=3, group_size=2) as vec:
            reference = rollout(vec, SOKOBAN_LONG, seed=11)
        with GroupedVectorEnv(SOKOBAN_LONG, num_groups=3, group_size=2, backend="ray", num_workers=2) as vec:
            assert rollout(vec, SOKOBAN_LONG, seed=11) == reference

            def kill(turn: int) -> None:
                if turn == 3:
                    kill_worker(vec, 1)

            assert rollout(vec, SOKOBAN_LONG, seed=11, before_step=kill) == reference

        with GroupedVectorEnv(CounterEnv, num_groups=3, group_size=2) as vec:
            counter_reference = rollout(vec, CounterEnv, seed=4)
        with GroupedVectorEnv(CounterEnv, num_groups=3, group_size=2, backend="ray", num_workers=2) as vec:
            crashed = rollout(vec, CounterEnv, seed=4, override=crash_env_three)
            assert crashed[3][4][3]["crashed"] and crashed[3][3][3]
            for index in (0, 1, 2, 4, 5):
                assert [step[0][index] for step in crashed] == [step[0][index] for step in counter_reference]
            assert rollout(vec, CounterEnv, seed=4) == counter_reference
    finally:
        ray.shutdown()


def test_rewards_are_float_arrays_and_flags_bool_arrays() -> None:
    with GroupedVectorEnv(SOKOBAN, num_groups=1, group_size=2) as vec:
        vec.reset(seed=0)
        _, rewards, terminated, truncated, _ = vec.step(["up", "<action>down</action>"])
        assert rewards.dtype == np.float64 and terminated.dtype == bool and truncated.dtype == bool
        assert vec.done.dtype == bool and vec.done.shape == (2,)


@pytest.mark.parametrize("backend", ["inprocess", "subprocess"])
def test_branch_continues_every_copy_exactly_as_the_snapshotted_env(backend: str) -> None:
    """VinePPO-style branching: N copies of a mid-episode state, each given its own responses."""
    snapshots = []
    for seed in (5, 9):
        env = gym.make(SOKOBAN_LONG)
        observation, info = env.reset(seed=seed)
        agent = make_agent("random", env, seed)
        for _ in range(3):
            observation, *_, info = env.step(agent.act(observation, info))
        snapshots.append(env.unwrapped.snapshot())
    moves = ["up", "down", "left", "right"]
    with GroupedVectorEnv(SOKOBAN_LONG, 2, 3, backend=backend, num_workers=2) as vec:
        observations, infos = vec.branch(snapshots)
        references = []
        for index in range(vec.num_envs):
            reference = gym.make(SOKOBAN_LONG)
            expected, expected_info = reference.reset(options={"snapshot": snapshots[vec.group_of(index)]})
            assert observations[index] == expected
            assert infos[index]["state_key"] == expected_info["state_key"] == snapshots[index // 3].state_key
            assert infos[index]["turn"] == 3
            references.append(reference)
        for turn in range(5):
            if backend == "subprocess" and turn == 2:
                kill_worker(vec, 1)  # a restarted worker rebuilds branched episodes from their snapshot
            done = vec.done
            responses = [
                None if done[i] else f"<action>{moves[(i + turn) % 4]}</action>" for i in range(vec.num_envs)
            ]
            observations, rewards, terminated, truncated, infos = vec.step(responses)
            for index, reference in enumerate(references):
                if responses[index] is None:
                    continue
                expected, reward, *flags, info = reference.step(responses[index])
                assert observations[index] == expected
                assert (rewards[index], terminated[index], truncated[index]) == (reward, *flags)
                assert infos[index]["state_key"] == info["state_key"]
        assert vec.snapshot(4).state_key == references[4].unwrapped.snapshot().state_key
        several = vec.snapshots([5, 0, 4])  # one message per worker
        assert sorted(several) == [0, 4, 5]
        for index, snapshot in several.items():
            assert snapshot.state_key == references[index].unwrapped.snapshot().state_key
        for bad in (True, 1.5, -1, vec.num_envs):
            with pytest.raises(IndexError, match="outside"):
                vec.snapshots([0, bad])
        with pytest.raises(ValueError, match="one snapshot per group"):
            vec.branch(snapshots[:1])


def test_a_worker_start_failure_reports_its_cause(tmp_path: Path) -> None:
    """A script without a ``__main__`` guard: the workers re-import it and die; the error says why."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from agentenvs.vector import GroupedVectorEnv\n"
        "vec = GroupedVectorEnv('agentenvs/Sokoban-v0', 1, 2, backend='subprocess', num_workers=1)\n"
        "vec.close()\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    result = subprocess.run(
        [sys.executable, str(script)], check=False, capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert "__main__" in last_line and "exit code" in last_line

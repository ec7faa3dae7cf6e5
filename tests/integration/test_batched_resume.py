"""A batched group resumes from its checkpoint to exactly the records and final models of an uninterrupted group:
after a SIGKILL of its worker (the process engine's test of the same is in tests/integration/test_study_runs.py),
after a failure of the whole group, and it starts over from an unusable checkpoint."""

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch as th

from sb3_ablation import AblatableTD3
from sb3_ablation.batched import BatchedTD3
from sb3_ablation.cli.study import study_main
from sb3_ablation.study.plan.config import StudyConfig, make_tasks, resolve_hyperparams
from sb3_ablation.study.run.batched import RunGroup, execute_group, group_checkpoints, make_groups
from sb3_ablation.study.store.runs import model_path, read_run, run_path

COMMITTED_RECORD = Path(__file__).resolve().parents[2] / "docs/studies/pendulum-factorial/runs/Pendulum-v1/td3/seed_0.json.gz"
# Ornstein-Uhlenbeck noise (it carries its last value) and two seeds: the state a resumed group has to get back is
# not only the networks'. (The network and batch of test_batched_compiled.py's: compiled, a group of two td3 runs is
# the same graph as its lone run's, which torch's compile caches then share.)
HYPERPARAMS = {
    "learning_starts": 100,
    "policy_kwargs": "dict(net_arch=[8])",
    "batch_size": 16,
    "buffer_size": 1000,
    "noise_type": "ornstein-uhlenbeck",
    "noise_std": 0.3,
}
# checkpoints every 150 steps of each agent: 150 steps into a 200-step episode, so the first checkpoint is mid-episode
# and the resumed group has to replay each agent's episode
SETTINGS = dict(
    envs=["Pendulum-v1"], seeds=[0, 1], n_timesteps=400, eval_freq=200, eval_episodes=2, eval_max_episode_steps=50,
    checkpoint_freq=150, hyperparams=HYPERPARAMS,
)  # fmt: skip


# a mixed group: three variants in one BatchedTD3 (--group-size), the third with a Gaussian actor (the group's actor
# then is Gaussian, the others' their mean, with their action noise) and without delayed updates (its own Adam count)
MIXED = ["td3", "no_clipped_double_q", "no_deterministic_policy+no_target_networks+no_delayed_policy_update"]


def _study_command(out, variants: list[str] | None = None) -> list[str]:
    """The study of SETTINGS (variant td3, or ``variants`` in one mixed group) on the command line, one worker."""
    mixed = [*variants, "--group-size", str(2 * len(variants))] if variants else ["td3"]
    return [
        sys.executable, "-m", "sb3_ablation", "study", "--env", "Pendulum-v1", "--variants", *mixed, "--seeds", "2",
        "--engine", "batched", "--n-timesteps", "400", "--eval-freq", "200", "--eval-episodes", "2",
        "--eval-max-episode-steps", "50", "--checkpoint-freq", "150", "--workers", "1", "--no-progress",
        "--keep-models", "--out", str(out), "--hyperparams", *[f"{key}:{value!r}" for key, value in HYPERPARAMS.items()],
    ]  # fmt: skip


def rerun_study(command: list[str]) -> int:
    """
    The study command ``command`` (of :func:`_study_command`) run again, in this process: the resume is the worker's
    (a fresh process, which the study starts), not the command's; this saves starting a second command.
    """
    assert command[1:4] == ["-m", "sb3_ablation", "study"]
    return study_main(command[4:])


def _group(out, variant: str, **hyperparams) -> RunGroup:
    """The group of SETTINGS for ``variant``, recording into ``out``, as the study hands it to a worker."""
    settings = {**SETTINGS, "hyperparams": {**HYPERPARAMS, **hyperparams}}
    config = StudyConfig(**settings, variants=[variant], out=str(out), engine="batched", keep_models=True)
    variants = config.variant_objects
    tasks = make_tasks(config, variants, resolve_hyperparams(config, variants))
    for task in tasks:
        task.record = str(run_path(out, task.env, task.variant, task.seed).resolve())
    (group,) = make_groups(tasks)
    return group


def _mixed_group(out) -> RunGroup:
    """The group of SETTINGS for the MIXED variants, as the study with --group-size hands it to a worker."""
    config = StudyConfig(**SETTINGS, variants=MIXED, out=str(out), engine="batched", keep_models=True)
    config.group_size = 2 * len(MIXED)
    variants = config.variant_objects
    tasks = make_tasks(config, variants, resolve_hyperparams(config, variants))
    for task in tasks:
        task.record = str(run_path(out, task.env, task.variant, task.seed).resolve())
    (group,) = make_groups(tasks)
    return group


def assert_same_group(out, reference, variant: str, resumed_from: int):
    for seed in SETTINGS["seeds"]:
        path = run_path(out, "Pendulum-v1", variant, seed)
        resumed = read_run(path)
        expected = read_run(run_path(reference, "Pendulum-v1", variant, seed))
        assert resumed["status"] == "ok", resumed["traceback"]
        assert resumed["resumed_from"] == resumed_from and resumed["warnings"] == expected["warnings"]
        assert resumed["evaluations"]["timesteps"] == [0, 200, 400]
        # the entries, in order, of a committed record of format 3 from the batched engine, and the random streams'
        committed = read_run(COMMITTED_RECORD)
        # (and the source digest, which records carry since 26018d7)
        added = ("random_streams", "source_digest")
        assert committed["format"] == 3 and [key for key in expected if key not in added] == list(committed)
        assert expected["random_streams"] == "per_agent"
        assert list(expected).index("random_streams") == list(expected).index("group_size") + 1
        # exact equality of every evaluation (returns, Q-values, per-episode returns) and diagnostic
        assert resumed["evaluations"] == expected["evaluations"]
        assert resumed["diagnostics"] == expected["diagnostics"]
        state_a, state_b = (
            AblatableTD3.load(model_path(run_path(folder, "Pendulum-v1", variant, seed))).policy.state_dict()
            for folder in (out, reference)
        )
        assert state_a.keys() == state_b.keys()
        for key in state_a:
            assert th.equal(state_a[key], state_b[key]), (seed, key)
    # the two seeds of the group are different agents
    first, second = (read_run(run_path(out, "Pendulum-v1", variant, seed)) for seed in SETTINGS["seeds"])
    assert first["evaluations"]["mean_return"] != second["evaluations"]["mean_return"]


@pytest.mark.parametrize("mixed", [False, True], ids=["one-variant", "mixed"])
def test_killed_batched_group_resumes_to_exactly_the_uninterrupted_result(tmp_path, capsys, mixed):
    # the uninterrupted group: what the study's worker runs, here in this process
    reference = tmp_path / "whole"
    group = _mixed_group(reference) if mixed else _group(reference, "td3")
    assert [record["status"] for record in execute_group(group)] == ["ok"] * len(group.runs)
    assert not group_checkpoints(group.runs).folder.exists()  # removed once done

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "killed"
    command = _study_command(out, MIXED if mixed else None)
    driver = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    checkpoints = group_checkpoints((_mixed_group(out) if mixed else _group(out, "td3")).runs)
    assert checkpoints is not None
    deadline = time.time() + 300  # (a mixed group builds six runs first: slow on a loaded machine)
    while checkpoints.latest() is None and driver.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    pointer = json.loads(checkpoints.pointer.read_text())
    os.kill(pointer["pid"], signal.SIGKILL)  # the worker process, mid-group
    assert 150 <= pointer["timesteps"] < 400 and pointer["timesteps"] % 200 != 0  # per agent, mid-episode
    _, stderr = driver.communicate(timeout=300)
    assert driver.returncode == 1, stderr
    variants = MIXED if mixed else ["td3"]
    for variant in variants:
        for seed in SETTINGS["seeds"]:
            killed = read_run(run_path(out, "Pendulum-v1", variant, seed))
            assert killed["status"] == "failed" and "died" in killed["error"]
    assert checkpoints.latest() is not None

    capsys.readouterr()
    assert rerun_study(command) == 0, capsys.readouterr().err
    assert f"{2 * len(variants)} runs to do in 1 batched groups" in capsys.readouterr().out
    assert not checkpoints.folder.exists()  # removed once the group is done
    for variant in variants:
        assert_same_group(out, reference, variant, resumed_from=pointer["timesteps"])


@pytest.fixture
def crash_at_step_250(monkeypatch):
    """BatchedTD3's training fails (the whole group) once its agents pass step 250, after the checkpoint at 150."""
    train = BatchedTD3.train

    def crashing_train(self, *args, **kwargs):
        if self.agent_timesteps > 250:
            raise MemoryError("simulated failure of the group")
        return train(self, *args, **kwargs)

    monkeypatch.setattr(BatchedTD3, "train", crashing_train)
    return monkeypatch


def test_failed_group_resumes_exactly_and_an_unusable_checkpoint_starts_over(tmp_path, crash_at_step_250):
    # a Gaussian actor: its actor_std is logged by every third train() call only (policy_delay 3), so the diagnostics
    # an evaluator reads next depend on what its agent's logger holds at the checkpoint (learning_starts 101: the
    # checkpoint at step 150 follows update 49, and neither it nor update 50 moves the actor)
    variant, delay = "no_deterministic_policy", {"policy_delay": 3, "learning_starts": 101}
    out, reference = tmp_path / "resumed", tmp_path / "whole"
    failed = execute_group(_group(out, variant, **delay))
    assert [record["status"] for record in failed] == ["failed", "failed"]
    assert failed[0]["error"] == "MemoryError: simulated failure of the group"
    checkpoints = group_checkpoints(_group(out, variant, **delay).runs)
    assert json.loads(checkpoints.pointer.read_text())["timesteps"] == 150  # kept for the retry
    saved = checkpoints.latest()

    crash_at_step_250.undo()
    assert [record["status"] for record in execute_group(_group(reference, variant, **delay))] == ["ok", "ok"]
    assert "actor_std" in read_run(run_path(reference, "Pendulum-v1", variant, 0))["diagnostics"]
    # a copy of the checkpoint whose envs cannot come back to its observations: the group starts over, with a warning
    broken_out = tmp_path / "broken"
    broken = group_checkpoints(_group(broken_out, variant, **delay).runs)
    shutil.copytree(saved, broken.folder / saved.name)
    broken.pointer.write_text(checkpoints.pointer.read_text())
    with open(saved / "state.pkl", "rb") as file:
        state = pickle.load(file)
    state["episodes"][1]["last_obs"] = state["episodes"][1]["last_obs"] + 1.0  # not where agent 1's replay ends
    with open(broken.latest() / "state.pkl", "wb") as file:
        pickle.dump(state, file)

    assert [record["status"] for record in execute_group(_group(out, variant, **delay))] == ["ok", "ok"]
    assert not checkpoints.folder.exists()
    assert_same_group(out, reference, variant, resumed_from=150)

    started_over = execute_group(_group(broken_out, variant, **delay))
    assert [record["status"] for record in started_over] == ["ok", "ok"]
    assert "resumed_from" not in started_over[0]
    assert any("not resumed" in warning and "starts over" in warning for warning in started_over[0]["warnings"])
    for seed in SETTINGS["seeds"]:
        assert started_over[seed]["evaluations"] == read_run(run_path(reference, "Pendulum-v1", variant, seed))["evaluations"]

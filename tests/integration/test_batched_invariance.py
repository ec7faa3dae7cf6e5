"""Group invariance of the batched engine: a run's record and final weights are a function of its configuration and
seed, whatever group it was trained in (on one device and thread count)."""

import pytest
import torch as th

from sb3_ablation import AblatableTD3
from sb3_ablation.study.plan.config import StudyConfig, make_tasks, resolve_hyperparams
from sb3_ablation.study.plan.records import RunTask
from sb3_ablation.study.run.batched import RunGroup, execute_group
from sb3_ablation.study.store.runs import model_path, read_run, run_path

# Gaussian exploration noise, target policy smoothing, a warm-up of random actions and the actor's delayed updates:
# every random stream of a run is drawn from
HYPERPARAMS = {
    "learning_starts": 50,
    "policy_kwargs": "dict(net_arch=[32, 32])",
    "batch_size": 32,
    "noise_type": "normal",
    "noise_std": 0.1,
}
SETTINGS = dict(
    envs=["Pendulum-v1"], n_timesteps=300, eval_freq=150, eval_episodes=2, eval_max_episode_steps=50,
    hyperparams=HYPERPARAMS,
)  # fmt: skip


def _tasks(out, variant: str, seeds: list[int]) -> list[RunTask]:
    config = StudyConfig(**SETTINGS, seeds=max(seeds) + 1, variants=[variant], out=str(out), engine="batched")
    config.keep_models = True
    variants = config.variant_objects
    by_seed = {task.seed: task for task in make_tasks(config, variants, resolve_hyperparams(config, variants))}
    tasks = [by_seed[seed] for seed in seeds]
    for task in tasks:
        task.record = str(run_path(out, task.env, task.variant, task.seed).resolve())
    return tasks


def _run(out, groups: list[tuple[str, list[int]]]) -> None:
    """Train, in one group, the runs of (variant, seeds) pairs."""
    tasks = [task for variant, seeds in groups for task in _tasks(out, variant, seeds)]
    records = execute_group(RunGroup("Pendulum-v1", tasks[0].variant, tasks))
    assert all(record["status"] == "ok" for record in records), [record.get("traceback") for record in records]


def assert_same_run(folder_a, folder_b, variant: str, seed: int) -> None:
    """Equal evaluations, diagnostics and final weights (exactly) of one run recorded in two folders."""
    record_a, record_b = (read_run(run_path(folder, "Pendulum-v1", variant, seed)) for folder in (folder_a, folder_b))
    assert record_a["evaluations"]["timesteps"] == [0, 150, 300]
    assert record_a["evaluations"] == record_b["evaluations"]
    assert record_a["diagnostics"] == record_b["diagnostics"]
    state_a, state_b = (
        AblatableTD3.load(model_path(run_path(folder, "Pendulum-v1", variant, seed))).policy.state_dict()
        for folder in (folder_a, folder_b)
    )
    assert state_a.keys() == state_b.keys()
    for key in state_a:
        assert th.equal(state_a[key], state_b[key]), key


@pytest.mark.parametrize("variant", ["td3", "no_deterministic_policy"])
def test_a_runs_record_is_the_same_alone_and_in_a_group(tmp_path, variant):
    th.set_num_threads(1)
    alone, grouped = tmp_path / "alone", tmp_path / "grouped"
    _run(alone, [(variant, [0])])
    _run(grouped, [(variant, [1, 0, 2])])  # seed 0 in the middle of a group of three
    assert_same_run(alone, grouped, variant, 0)
    # and the other agents of the group are runs of their own seeds
    first, second = (read_run(run_path(grouped, "Pendulum-v1", variant, seed)) for seed in (1, 2))
    assert first["evaluations"]["mean_return"] != second["evaluations"]["mean_return"]

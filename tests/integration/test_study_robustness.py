"""The study under failure: a killed driver, a killed worker, a diverging run; the report's aggregate and study files."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from sb3_ablation.cli.study import study_main
from sb3_ablation.common.io import write_json_atomic
from sb3_ablation.study import write_report
from sb3_ablation.study.analyse.results import load_study
from sb3_ablation.study.plan.analysis_plan import published_reference
from sb3_ablation.study.plan.config import StudyConfig, load_config_file, make_tasks, resolve_hyperparams
from sb3_ablation.study.plan.records import RUN_FILE_FORMAT
from sb3_ablation.study.store.runs import iter_runs, read_run, record_paths, run_path, write_run

ROOT = Path(__file__).resolve().parents[2]
TINY_ARGS = [
    "--n-timesteps", "300", "--eval-freq", "150", "--eval-episodes", "1", "--eval-max-episode-steps", "50",
    "--hyperparams", "learning_starts:100", "policy_kwargs:dict(net_arch=[16, 16])", "batch_size:32", "--no-progress",
]  # fmt: skip


class _NaNReward(gym.Wrapper):
    def step(self, action):
        obs, _, terminated, truncated, info = self.env.step(action)
        return obs, float("nan"), terminated, truncated, info


class _KillProcess(gym.Wrapper):
    """Kills its own process on the 20th step, as the OOM killer or a segfault would."""

    def __init__(self, env):
        super().__init__(env)
        self.steps = 0

    def step(self, action):
        self.steps += 1
        if self.steps == 20:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.env.step(action)


# registered on import: workers import this module through the "module:EnvId" form of the env id
gym.register("StudyTestNaNReward-v0", entry_point=lambda **kwargs: _NaNReward(gym.make("Pendulum-v1", **kwargs)))
gym.register("StudyTestKilled-v0", entry_point=lambda **kwargs: _KillProcess(gym.make("Pendulum-v1", **kwargs)))
NAN_ENV, KILLED_ENV = f"{__name__}:StudyTestNaNReward-v0", f"{__name__}:StudyTestKilled-v0"


def test_killed_worker_and_diverging_run_are_recorded_while_the_others_finish(tmp_path):
    # one worker: the killed run breaks the pool, a fresh pool runs the other two
    argv = ["--env", KILLED_ENV, NAN_ENV, "Pendulum-v1", "--variants", "td3", "--seeds", "1", "--workers", "1"]
    assert study_main([*argv, *TINY_ARGS, "--out", str(tmp_path)]) == 1  # 1: some runs failed
    records = {record["env"]: record for record in iter_runs(tmp_path)}
    assert records["Pendulum-v1"]["status"] == "ok"
    assert records[KILLED_ENV]["status"] == "failed" and "worker process died" in records[KILLED_ENV]["error"]
    assert records[NAN_ENV]["status"] == "failed" and "TrainingDivergedError" in records[NAN_ENV]["error"]
    assert "nan" in records[NAN_ENV]["error"].lower()
    report = write_report(tmp_path, reps=200).read_text()
    assert "## Failed and missing runs" in report and "worker process died" in report


def test_a_killed_study_rerun_redoes_no_finished_run(tmp_path):
    argv = ["--env", "Pendulum-v1", "--variants", "td3", "--seeds", "4", "--workers", "1", *TINY_ARGS, "--out", str(tmp_path)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen(
        [sys.executable, "-m", "sb3_ablation", "study", *argv],
        start_new_session=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.time() + 120
        while not record_paths(tmp_path) and time.time() < deadline and driver.poll() is None:
            time.sleep(0.2)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and its worker, mid-study
        driver.wait()
    finished = {path: path.read_bytes() for path in record_paths(tmp_path)}
    assert 1 <= len(finished) < 4, "the study should have been killed after its first run and before its last"
    assert all(read_run(path)["status"] == "ok" for path in finished)

    assert study_main(argv) == 0
    assert {record["seed"] for record in iter_runs(tmp_path) if record["status"] == "ok"} == {0, 1, 2, 3}
    assert all(path.read_bytes() == content for path, content in finished.items())  # not redone


def test_diverged_weights_fail_the_evaluation():
    from stable_baselines3.common.env_util import make_vec_env

    from sb3_ablation import AblatableTD3
    from sb3_ablation.study.run.evaluation import OverestimationEvalCallback, TrainingDivergedError

    model = AblatableTD3("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}, learning_starts=10, device="cpu")
    eval_env = make_vec_env("Pendulum-v1", n_envs=1, env_kwargs={"max_episode_steps": 10})
    callback = OverestimationEvalCallback(eval_env, eval_freq=10, n_eval_episodes=1)
    callback.init_callback(model)
    result = callback.evaluate()
    # (episodes cut at 10 steps, far fewer than the tail k the returns need: no state is measured)
    assert np.isfinite(result["mean_return"]) and result["value_states"] == 0 and np.isnan(result["overestimation"])
    with np.errstate(all="ignore"):
        next(model.critic.parameters()).data.fill_(float("nan"))
    with pytest.raises(TrainingDivergedError, match="critic weights"):
        callback.evaluate()


def _manifest(envs: list[str], variants: list[str], seeds: list[int]) -> dict:
    """A study manifest planning every variant and seed on every env."""
    grid = {"envs": envs, "variants": variants, "seeds": seeds}
    return {**grid, "grids": [grid], "settings": {}}


def _synthetic_run(out, env, variant, seed, final, status="ok"):
    record = {
        "format": RUN_FILE_FORMAT, "env": env, "variant": variant, "seed": seed, "status": status,
        "error": None if status == "ok" else "boom",
        "evaluations": {"timesteps": [0, 100], "mean_return": [final - 10.0, final], "overestimation": [1.0, 2.0]},
    }  # fmt: skip
    write_run(run_path(out, env, variant, seed), record)


def test_aggregate_normalizes_with_reference_scores_and_lists_failures(tmp_path):
    envs, variants = ["Pendulum-v1", "MountainCarContinuous-v0"], ["td3", "no_clipped_double_q"]
    write_json_atomic(tmp_path / "study.json", _manifest(envs, variants, [0, 1, 2]))
    finals = {("Pendulum-v1", "td3"): [-150.0, -160.0], ("Pendulum-v1", "no_clipped_double_q"): [-300.0, -200.0]}
    finals |= {
        ("MountainCarContinuous-v0", "td3"): [90.0, 93.0],
        ("MountainCarContinuous-v0", "no_clipped_double_q"): [-1.0, 50.0],
    }
    for (env, variant), values in finals.items():
        for seed, final in enumerate(values):
            _synthetic_run(tmp_path, env, variant, seed, final)
    _synthetic_run(tmp_path, "Pendulum-v1", "td3", 2, -150.0, status="failed")

    data = load_study(tmp_path)
    assert published_reference("MountainCarContinuous-v0") == (-33.1, 93.5)  # references.yml: random policy, rl-zoo's TD3
    assert {(m[0], m[1], m[2]) for m in data.missing} == {(env, v, 2) for env in envs for v in variants} - {
        ("Pendulum-v1", "td3", 2)
    }

    text = write_report(tmp_path, reps=200).read_text()
    assert "## Across tasks" in text
    assert (tmp_path / "figures" / "aggregate_normalized_score.png").is_file()
    assert "| Pendulum-v1 | td3 | 2 | boom |" in text
    # every variant of MountainCar misses seed 2; on Pendulum only one variant does (td3's seed 2 failed)
    missing = "MountainCarContinuous-v0 every variant (seed 2); Pendulum-v1 no_clipped_double_q (seed 2)"
    assert f"Missing (never finished): {missing}." in text


def test_aggregate_of_a_study_in_progress_covers_the_envs_every_variant_has_runs_on(tmp_path):
    envs, variants = ["Pendulum-v1", "MountainCarContinuous-v0", "Hopper-v5"], ["td3", "no_clipped_double_q"]
    write_json_atomic(tmp_path / "study.json", _manifest(envs, variants, [0, 1]))
    for env in envs[:2]:
        for variant in variants:
            for seed in (0, 1):
                _synthetic_run(tmp_path, env, variant, seed, 10.0 * seed + (variant == "td3"))
    _synthetic_run(tmp_path, "Hopper-v5", "td3", 0, 500.0)  # the third task has begun: one variant only

    text = write_report(tmp_path, reps=200).read_text()
    aggregate = text[text.index("## Across tasks") :]
    assert "**Over Pendulum-v1, MountainCarContinuous-v0 only:** Hopper-v5 not yet" in aggregate
    assert "No variant has finished runs" not in aggregate and "| no_clipped_double_q |" in aggregate


def test_shipped_study_files_resolve():
    for name, runs in (("pendulum", 70), ("td3_paper_mujoco", 4 * 13 * 10)):
        config = StudyConfig(**load_config_file(name))  # shipped with the package, found by name
        variants = config.variant_objects
        tasks = make_tasks(config, variants, resolve_hyperparams(config, variants))
        assert len(tasks) == runs
        assert all(task.hyperparams["n_timesteps"] == config.n_timesteps for task in tasks)


def test_env_flag_runs_one_task_of_a_multi_task_config(tmp_path, capsys):
    # A long multi-task study is worked off task by task: --env picks tasks of the config, the file's per-env
    # settings of the others do not apply, and the folder accepts the runs as part of the same study.
    config = tmp_path / "study.yml"
    config.write_text(
        "envs: [Pendulum-v1, MountainCarContinuous-v0]\nvariants: [td3]\nseeds: 1\n"
        f"out: {tmp_path / 'out'}\n"
        "env_hyperparams:\n  Pendulum-v1: {gamma: 0.9}\n  MountainCarContinuous-v0: {gamma: 0.95}\n"
    )
    assert study_main(["--config", str(config), "--env", "MountainCarContinuous-v0", *TINY_ARGS]) == 0
    assert {record["env"] for record in iter_runs(tmp_path / "out")} == {"MountainCarContinuous-v0"}
    assert study_main(["--config", str(config), *TINY_ARGS]) == 0
    records = {record["env"]: record for record in iter_runs(tmp_path / "out")}
    assert records["Pendulum-v1"]["hyperparams"]["gamma"] == 0.9
    assert records["MountainCarContinuous-v0"]["hyperparams"]["gamma"] == 0.95
    manifest = json.loads((tmp_path / "out" / "study.json").read_text())
    assert manifest["settings"]["env_hyperparams"] == {
        "Pendulum-v1": {"gamma": 0.9},
        "MountainCarContinuous-v0": {"gamma": 0.95},
    }
    # per-env settings still pin their env: another gamma for a task already run is refused
    config.write_text(config.read_text().replace("gamma: 0.95", "gamma: 0.99"))
    assert study_main(["--config", str(config), "--env", "MountainCarContinuous-v0", *TINY_ARGS]) == 2
    assert "env_hyperparams.MountainCarContinuous-v0" in capsys.readouterr().err

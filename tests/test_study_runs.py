"""A study run is the run `train` makes, it survives a kill (checkpoints), and its record carries format 2."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch as th

from sb3_ablation import AblatableTD3
from sb3_ablation.study.config import StudyConfig
from sb3_ablation.study.execute import execute_run
from sb3_ablation.study.runner import make_tasks, resolve_hyperparams
from sb3_ablation.study.store import RunCheckpoints, run_path

# VecNormalize and Ornstein-Uhlenbeck noise: the state a resumed run has to get back is not only the networks'
OVERRIDES = {
    "learning_starts": 100,
    "policy_kwargs": "dict(net_arch=[32])",
    "batch_size": 32,
    "normalize": True,
    "noise_type": "ornstein-uhlenbeck",
}


def one_task(out, n_timesteps=500, **settings) -> dict:
    config = StudyConfig(
        envs=["Pendulum-v1"], variants=["td3"], seeds=[3, 4], out=str(out), n_timesteps=n_timesteps,
        eval_freq=250, eval_episodes=2, hyperparams=OVERRIDES, progress=False, **settings,
    )  # fmt: skip
    variants = config.variant_objects
    return make_tasks(config, variants, resolve_hyperparams(config, variants))[0]


def assert_same_weights(path_a, path_b):
    model_a, model_b = AblatableTD3.load(path_a), AblatableTD3.load(path_b)
    state_a, state_b = model_a.policy.state_dict(), model_b.policy.state_dict()
    assert state_a.keys() == state_b.keys()
    for key in state_a:
        assert th.equal(state_a[key], state_b[key]), key


def test_study_run_is_the_run_train_makes(tmp_path):
    from sb3_ablation.zoo.train import main as train_main

    task = one_task(tmp_path / "study")
    record = execute_run(task)
    assert record["status"] == "ok", record["traceback"]
    record_path = Path(task["record"])
    assert record["model"] == "seed_3.zip" and record["vecnormalize"] == "seed_3_vecnormalize.pkl"
    assert (record_path.parent / record["vecnormalize"]).is_file()

    hyperparams = [f"{key}:{value!r}" for key, value in OVERRIDES.items()]
    args = ["--algo", "ablatable_td3", "--env", "Pendulum-v1", "--seed", "3", "-n", "500", "--eval-freq", "-1"]
    assert train_main([*args, "-f", str(tmp_path / "logs"), "--verbose", "0", "--hyperparams", *hyperparams]) == 0
    (trained,) = (tmp_path / "logs" / "ablatable_td3").glob("Pendulum-v1_*/Pendulum-v1.zip")
    assert_same_weights(record_path.with_suffix(".zip"), trained)
    # the VecNormalize statistics too
    import pickle

    with (
        open(record_path.parent / record["vecnormalize"], "rb") as a,
        open(trained.parent / "Pendulum-v1" / "vecnormalize.pkl", "rb") as b,
    ):
        stats_a, stats_b = pickle.load(a), pickle.load(b)
    assert np.array_equal(stats_a.obs_rms.mean, stats_b.obs_rms.mean) and np.array_equal(
        stats_a.ret_rms.var, stats_b.ret_rms.var
    )


def _study_command(out) -> list[str]:
    return [
        sys.executable, "-m", "sb3_ablation", "study", "--env", "Pendulum-v1", "--variants", "td3", "--seeds", "1",
        "--n-timesteps", "1200", "--eval-freq", "400", "--eval-episodes", "2", "--checkpoint-freq", "200",
        "--workers", "1", "--no-progress", "--out", str(out),
        "--hyperparams", *[f"{key}:{value!r}" for key, value in OVERRIDES.items()],
    ]  # fmt: skip


def test_killed_run_resumes_to_exactly_the_uninterrupted_result(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    whole = subprocess.run(_study_command(tmp_path / "whole"), env=env, capture_output=True, text=True)
    assert whole.returncode == 0, whole.stderr

    killed_out = tmp_path / "killed"
    driver = subprocess.Popen(_study_command(killed_out), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    checkpoints = RunCheckpoints(run_path(killed_out, "Pendulum-v1", "td3", 0))
    deadline = time.time() + 120
    while checkpoints.latest() is None and driver.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    pointer = json.loads(checkpoints.pointer.read_text())
    assert 200 <= pointer["timesteps"] < 1200
    os.kill(pointer["pid"], signal.SIGKILL)  # the worker process, mid-run
    _, stderr = driver.communicate(timeout=120)
    assert driver.returncode == 1, stderr
    killed = json.loads(run_path(killed_out, "Pendulum-v1", "td3", 0).read_text())
    assert killed["status"] == "failed" and "died" in killed["error"]
    assert checkpoints.latest() is not None

    rerun = subprocess.run(_study_command(killed_out), env=env, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert not checkpoints.folder.exists()  # removed once the run is done
    for seed in (0,):
        resumed = json.loads(run_path(killed_out, "Pendulum-v1", "td3", seed).read_text())
        reference = json.loads(run_path(tmp_path / "whole", "Pendulum-v1", "td3", seed).read_text())
        assert resumed["status"] == "ok" and resumed["warnings"] == reference["warnings"]
        assert resumed["resumed_from"] == pointer["timesteps"]
        assert resumed["evaluations"] == reference["evaluations"] and resumed["diagnostics"] == reference["diagnostics"]
        assert resumed["evaluations"]["timesteps"] == [0, 400, 800, 1200]
        folder = run_path(killed_out, "Pendulum-v1", "td3", seed).parent
        assert_same_weights(
            folder / f"seed_{seed}.zip", run_path(tmp_path / "whole", "Pendulum-v1", "td3", seed).with_suffix(".zip")
        )

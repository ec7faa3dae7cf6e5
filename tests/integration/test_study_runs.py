"""A study run is the run `train` makes, it survives a kill (checkpoints), and its record is of the current format."""

import copy
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch as th

from sb3_ablation import AblatableTD3
from sb3_ablation.study.plan.config import StudyConfig, make_tasks, resolve_hyperparams
from sb3_ablation.study.plan.records import RunTask
from sb3_ablation.study.run.execute import execute_run
from sb3_ablation.study.run.recording import source_digest
from sb3_ablation.study.store.checkpoints import RunCheckpoints
from sb3_ablation.study.store.runs import finite_or_none, model_path, read_run, run_path

ROOT = Path(__file__).resolve().parents[2]
# VecNormalize and Ornstein-Uhlenbeck noise: the state a resumed run has to get back is not only the networks'
OVERRIDES = {
    "learning_starts": 100,
    "policy_kwargs": "dict(net_arch=[32])",
    "batch_size": 32,
    "normalize": True,
    "noise_type": "ornstein-uhlenbeck",
}


def one_task(out, n_timesteps=500, **settings) -> RunTask:
    config = StudyConfig(
        envs=["Pendulum-v1"], variants=["td3"], seeds=[3, 4], out=str(out), n_timesteps=n_timesteps,
        eval_freq=250, eval_episodes=2, hyperparams=OVERRIDES, progress=False, keep_models=True, **settings,
    )  # fmt: skip
    variants = config.variant_objects
    task = make_tasks(config, variants, resolve_hyperparams(config, variants))[0]
    return replace(task, record=str(run_path(out, "Pendulum-v1", "td3", 3)))


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
    record_path = Path(task.record)
    assert record["model"] == "seed_3.zip" and record["vecnormalize"] == "seed_3_vecnormalize.pkl"
    assert (record_path.parent / record["vecnormalize"]).is_file()

    hyperparams = [f"{key}:{value!r}" for key, value in OVERRIDES.items()]
    args = ["--algo", "ablatable_td3", "--env", "Pendulum-v1", "--seed", "3", "-n", "500", "--eval-freq", "-1"]
    assert train_main([*args, "-f", str(tmp_path / "logs"), "--verbose", "0", "--hyperparams", *hyperparams]) == 0
    (trained,) = (tmp_path / "logs" / "ablatable_td3").glob("Pendulum-v1_*/Pendulum-v1.zip")
    assert_same_weights(model_path(record_path), trained)
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


def _study_argv(out) -> list[str]:
    # two training envs, checkpoints every 150 steps: 75 steps into a 200-step episode, so every checkpoint is
    # mid-episode and the resumed run has to replay both envs' episodes
    hyperparams = {**OVERRIDES, "n_envs": 2}
    return [
        "--env", "Pendulum-v1", "--variants", "td3", "--seeds", "1", "--n-timesteps", "800", "--eval-freq", "400",
        "--eval-episodes", "2", "--checkpoint-freq", "150", "--workers", "1", "--no-progress", "--keep-models",
        "--out", str(out), "--hyperparams", *[f"{key}:{value!r}" for key, value in hyperparams.items()],
    ]  # fmt: skip


def test_killed_run_resumes_to_exactly_the_uninterrupted_result(tmp_path):
    from sb3_ablation.cli.study import _study_parser, config_from_args, study_main

    # the uninterrupted run: the run the study command makes, here in this process (the killed run and its resumption
    # run in a study's worker processes)
    config = config_from_args(_study_parser().parse_args(_study_argv(tmp_path / "whole")))
    (whole,) = make_tasks(config, config.variant_objects, resolve_hyperparams(config, config.variant_objects))
    whole.record = str(run_path(tmp_path / "whole", "Pendulum-v1", "td3", 0).resolve())
    record = execute_run(whole)
    assert record["status"] == "ok", record["traceback"]

    killed_out = tmp_path / "killed"
    command = [sys.executable, "-m", "sb3_ablation", "study", *_study_argv(killed_out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    driver = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    checkpoints = RunCheckpoints(run_path(killed_out, "Pendulum-v1", "td3", 0))
    deadline = time.time() + 120
    while checkpoints.latest() is None and driver.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    pointer = json.loads(checkpoints.pointer.read_text())
    assert 150 <= pointer["timesteps"] < 800 and pointer["timesteps"] % 400 != 0  # mid-episode
    os.kill(pointer["pid"], signal.SIGKILL)  # the worker process, mid-run
    _, stderr = driver.communicate(timeout=120)
    assert driver.returncode == 1, stderr
    killed = read_run(run_path(killed_out, "Pendulum-v1", "td3", 0))
    assert killed["status"] == "failed" and "died" in killed["error"]
    assert checkpoints.latest() is not None

    assert study_main(_study_argv(killed_out)) == 0  # the same command again (its run resumes in a worker process)
    assert not checkpoints.folder.exists()  # removed once the run is done
    for seed in (0,):
        resumed = read_run(run_path(killed_out, "Pendulum-v1", "td3", seed))
        reference = read_run(run_path(tmp_path / "whole", "Pendulum-v1", "td3", seed))
        assert resumed["status"] == "ok" and resumed["warnings"] == reference["warnings"]
        assert resumed["resumed_from"] == pointer["timesteps"]
        assert resumed["evaluations"] == reference["evaluations"] and resumed["diagnostics"] == reference["diagnostics"]
        assert resumed["value_episodes"] == reference["value_episodes"]
        assert resumed["evaluations"]["timesteps"] == [0, 400, 800]
        resumed_model = model_path(run_path(killed_out, "Pendulum-v1", "td3", seed))
        assert_same_weights(resumed_model, model_path(run_path(tmp_path / "whole", "Pendulum-v1", "td3", seed)))


def test_evaluation_episodes_side_by_side_are_the_seeded_episodes_one_by_one(tmp_path):
    from stable_baselines3.common.evaluation import evaluate_policy

    from sb3_ablation.study.run.episodes import evaluation_seed
    from sb3_ablation.study.run.evaluation import OverestimationEvalCallback
    from sb3_ablation.study.run.manager import make_manager

    task = replace(one_task(tmp_path), hyperparams={**one_task(tmp_path).hyperparams, "normalize": False})
    manager = make_manager(task)
    model, _ = manager.setup_experiment()
    manager.eval_env_kwargs = {"max_episode_steps": 30}
    evaluator = OverestimationEvalCallback(manager.create_envs(3, eval_env=True), eval_freq=10, n_eval_episodes=3, seed=3)
    evaluator.init_callback(model)
    first, second = evaluator.evaluate(), evaluator.evaluate()
    assert len(first["episode_returns"]) == 3 and first["episode_returns"] != second["episode_returns"]

    # episode j of evaluation i starts from seed evaluation_seed(seed, i) + j: the same start states as one by one
    single = manager.create_envs(1, eval_env=True)
    for index, result in enumerate((first, second)):
        evaluator.eval_env.seed(evaluation_seed(3, index))
        starts = evaluator.eval_env.reset()
        one_by_one = []
        for episode in range(3):
            single.seed(evaluation_seed(3, index) + episode)
            assert np.array_equal(single.reset()[0], starts[episode])
            single.seed(evaluation_seed(3, index) + episode)
            returns, _ = evaluate_policy(model, single, n_eval_episodes=1, deterministic=True, return_episode_rewards=True)
            one_by_one += returns
        # the same episodes; the actor's batched forward pass may round the last bit of an action differently
        assert result["episode_returns"] == pytest.approx(one_by_one, rel=1e-5)

    # an evaluation depends on its index only: a fresh callback gives the same first evaluation (a resumed run too)
    again = OverestimationEvalCallback(manager.create_envs(3, eval_env=True), eval_freq=10, n_eval_episodes=3, seed=3)
    again.init_callback(model)
    # (episodes cut at 30 steps leave no state with a known return: the measure is NaN, null in the record)
    assert finite_or_none(again.evaluate()) == finite_or_none(first) and np.isnan(first["overestimation"])


def test_record_has_diagnostics_per_evaluation_window_and_the_run_warnings(tmp_path, monkeypatch, capsys):
    # the model's training_diagnostics of each train() call are averaged per window between evaluations
    original_train = AblatableTD3.train

    def train(self, gradient_steps, batch_size=100):
        original_train(self, gradient_steps, batch_size)
        self.training_diagnostics["q1_mean"] = float(self._n_updates)  # 1, 2, 3, ... one per train() call

    monkeypatch.setattr(AblatableTD3, "train", train)
    task = one_task(tmp_path, n_timesteps=300, checkpoint_freq=0)
    task = replace(task, eval_freq=100, variant="no_deterministic_policy",
            hyperparams={**task.hyperparams, "deterministic_policy": False, "normalize": False})  # fmt: skip
    record = execute_run(task)
    assert record["status"] == "ok", record["traceback"]
    diagnostics = record["diagnostics"]
    assert diagnostics["timesteps"] == record["evaluations"]["timesteps"] == [0, 100, 200, 300]
    # training starts after step 101; the evaluation at step t comes before the update of step t
    assert diagnostics["q1_mean"] == [None, None, np.mean(np.arange(1, 100)), np.mean(np.arange(100, 200))]
    contract = {"timesteps", "q1_mean", "q2_mean", "twin_q_gap", "target_q_mean", "td_error", "actor_std"}
    assert set(diagnostics) <= contract
    assert all(len(values) == 4 for values in diagnostics.values())
    assert [len(returns) for returns in record["evaluations"]["episode_returns"]] == [2, 2, 2, 2]

    # the warning is in the record, once, and was not printed
    assert len([w for w in record["warnings"] if "action_noise" in w]) == 1
    assert "action_noise" not in capsys.readouterr().err
    saved = read_run(task.record)
    assert saved["format"] == 3 and saved["warnings"] == record["warnings"] and saved["model"] == "seed_3.zip"
    # the entries, in order, of a committed record of format 3 from the same engine, and the digest of the source that
    # made it, which records made before it existed lack
    committed = read_run(ROOT / "docs/studies/pendulum/runs/Pendulum-v1/td3/seed_5.json.gz")
    assert committed["format"] == 3 and [key for key in saved if key != "source_digest"] == list(committed)
    assert list(saved).index("source_digest") == list(saved).index("versions") + 1
    assert saved["source_digest"] == source_digest() and len(saved["source_digest"]) == 64


def test_a_study_folder_of_another_record_format_is_not_extended(tmp_path):
    from sb3_ablation.study.plan.config import StudyError
    from sb3_ablation.study.store.manifest import MANIFEST_NAME, open_manifest

    config = StudyConfig(envs=["Pendulum-v1"], variants=["td3"], seeds=1, out=str(tmp_path), progress=False)
    manifest = open_manifest(config, {}, {})
    assert manifest["settings"]["run_format"] == 3
    manifest["settings"]["run_format"] = 2  # a folder of an earlier record format
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(StudyError, match="run_format"):
        open_manifest(config, {}, {})


def test_episode_replay_brings_fresh_envs_to_the_same_states_and_notices_a_mismatch():
    from stable_baselines3.common.env_util import make_vec_env

    from sb3_ablation.study.run.checkpointing import EpisodeRecorder, EpisodeReplay

    def recorded(seed=None):
        return make_vec_env("Pendulum-v1", n_envs=2, seed=seed, wrapper_class=EpisodeRecorder)

    def stepped(n_steps):
        venv = recorded(seed=5)
        episodes = EpisodeReplay(venv)
        venv.reset()
        for step in range(n_steps):
            venv.step(np.full((2, 1), np.sin(step), dtype=np.float32))
        return venv, episodes

    venv, episodes = stepped(230)  # one auto-reset (200-step episodes), then 30 steps into the second episode
    saved = copy.deepcopy(episodes.episodes)
    assert [len(episode["actions"]) for episode in saved] == [30, 30] and saved[0]["reset_kwargs"] == {}
    fresh = recorded(seed=99)  # other seeds: only the saved generator states count
    EpisodeReplay(fresh).replay(saved)
    for env, reference in zip(fresh.envs, venv.envs, strict=True):
        assert np.array_equal(env.unwrapped.state, reference.unwrapped.state)
        assert env.unwrapped.np_random.bit_generator.state == reference.unwrapped.np_random.bit_generator.state

    saved[1]["actions"][-1] = saved[1]["actions"][-1] + 0.5
    with pytest.raises(RuntimeError, match="training env 1 did not come back"):
        EpisodeReplay(recorded()).replay(saved)
    with pytest.raises(TypeError, match="EpisodeRecorder"):
        EpisodeReplay(make_vec_env("Pendulum-v1", n_envs=2))


def test_failed_run_resumes_to_the_uninterrupted_record_diagnostics_included(tmp_path, monkeypatch):
    # a Gaussian actor updated by every third train() call only (policy_delay 3): its actor_std is in the diagnostics
    # of those calls only, which a resumed run (fresh logger, fresh model) must count exactly as the uninterrupted one
    settings = dict(n_timesteps=400, checkpoint_freq=150)
    gaussian = {"deterministic_policy": False, "policy_delay": 3, "learning_starts": 101}

    def task_in(out):
        task = one_task(out, **settings)
        hyperparams = {**task.hyperparams, **gaussian}
        return replace(task, eval_freq=200, variant="no_deterministic_policy", hyperparams=hyperparams)

    train = AblatableTD3.train

    def crashing_train(self, *args, **kwargs):
        if self.num_timesteps > 250:
            raise MemoryError("simulated failure of the run")
        return train(self, *args, **kwargs)

    monkeypatch.setattr(AblatableTD3, "train", crashing_train)
    failed = execute_run(task_in(tmp_path / "resumed"))
    assert failed["status"] == "failed" and failed["error"] == "MemoryError: simulated failure of the run"
    monkeypatch.undo()
    resumed, whole = execute_run(task_in(tmp_path / "resumed")), execute_run(task_in(tmp_path / "whole"))
    assert resumed["status"] == whole["status"] == "ok" and resumed["resumed_from"] == 150
    assert "actor_std" in whole["diagnostics"] and whole["diagnostics"]["timesteps"] == [0, 200, 400]
    assert resumed["diagnostics"] == whole["diagnostics"]
    assert resumed["evaluations"] == whole["evaluations"] and resumed["value_episodes"] == whole["value_episodes"]


def test_a_study_keeps_no_models_unless_asked(tmp_path, tiny_study):
    from sb3_ablation.study.run.runner import run_study

    config = tiny_study(tmp_path / "records", variants=["td3"], seeds=1, keep_models=False)
    assert run_study(config).ok == 1
    assert not list((tmp_path / "records").glob("runs/*/*/*.zip"))
    record = read_run(run_path(tmp_path / "records", "Pendulum-v1", "td3", 0))
    assert record["status"] == "ok" and not record.get("model")
    assert run_study(tiny_study(tmp_path / "models", variants=["td3"], seeds=1)).ok == 1  # keep_models=True
    assert model_path(run_path(tmp_path / "models", "Pendulum-v1", "td3", 0)).is_file()

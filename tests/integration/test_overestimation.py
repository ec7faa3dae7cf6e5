"""The overestimation measure with returns past the time limit: exact where the truth is known, scores unchanged."""

import json
import zipfile
from dataclasses import replace
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import TimeLimit
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_ablation import AblatableTD3
from sb3_ablation.study.plan.config import StudyConfig, make_tasks, resolve_hyperparams
from sb3_ablation.study.plan.records import RUN_FILE_FORMAT, RunRecord, RunTask
from sb3_ablation.study.run.episodes import evaluation_seed
from sb3_ablation.study.run.evaluation import HISTORY_KEYS, OverestimationEvalCallback
from sb3_ablation.study.run.execute import execute_run
from sb3_ablation.study.run.learning import RunSchedule
from sb3_ablation.study.run.manager import make_manager
from sb3_ablation.study.run.overestimation import (
    ReturnPastTimeLimit,
    discounted_returns,
    measure_from_episodes,
    tail_steps,
)
from sb3_ablation.study.store.manifest import MANIFEST_NAME, open_manifest
from sb3_ablation.study.store.runs import model_path, read_run, record_paths, run_path

ROOT = Path(__file__).resolve().parents[2]
#: the committed studies (tools/migrate_studies.py converted them to the current formats)
COMMITTED = ("pendulum", "pendulum-batched", "pendulum-factorial", "hopper-factorial", "multitask")
#: the measure of record format 2 (returns cut at the time limit), in no record now
OLD_MEASURE = {"mean_q", "mean_discounted_return", "bias"}

GAMMA, REWARD, T = 0.9, 1.0, 30
K = tail_steps(GAMMA)  # 44


class CountingEnv(gym.Env):
    """Reward ``REWARD`` every step; the observation is the step count; terminates after ``terminate_at`` steps."""

    observation_space = gym.spaces.Box(0.0, 1e4, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, terminate_at: int | None = None):
        self.terminate_at = terminate_at
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        terminated = self.terminate_at is not None and self.t >= self.terminate_at
        return np.array([self.t], np.float32), REWARD, terminated, False, {}


def evaluate_with_exact_critic(terminate_at: int | None, value_of_step) -> dict:
    """One evaluation (2 envs, 3 episodes) with the env limited at T + K, scored at T, and a critic given by a formula."""
    env = make_vec_env(
        lambda: TimeLimit(CountingEnv(terminate_at), T + K), n_envs=2,
        wrapper_class=ReturnPastTimeLimit, wrapper_kwargs={"time_limit": T},
    )  # fmt: skip
    model = AblatableTD3("MlpPolicy", env, gamma=GAMMA, policy_kwargs={"net_arch": [4]}, device="cpu")
    callback = OverestimationEvalCallback(env, eval_freq=10, n_eval_episodes=3)
    callback.init_callback(model)
    # the critic that knows the true (untruncated) value, from the step count in the observation
    callback._critic_1 = lambda observations, _actions: np.array([value_of_step(int(obs[0])) for obs in observations])
    result = callback.evaluate()
    return {**result, "value_episodes": callback.value_episodes[-1]}


def test_tail_steps_are_the_fewest_with_gamma_to_the_k_below_one_percent():
    assert (tail_steps(0.98), tail_steps(0.99), K) == (228, 459, 44)
    for gamma in (0.5, 0.9, 0.98, 0.99, 0.995):
        k = tail_steps(gamma)
        assert gamma**k <= 0.01 < gamma ** (k - 1)
    assert tail_steps(1.0) is None and tail_steps(0.0) == 0


def test_exact_critic_has_no_overestimation_past_the_time_limit_and_far_less_than_the_artifact_of_a_cut():
    value = REWARD / (1 - GAMMA)  # the untruncated value of every state
    result = evaluate_with_exact_critic(None, lambda _t: value)

    # scores: the first T steps only
    assert result["episode_returns"] == [REWARD * T] * 3
    for episode in result["value_episodes"]:
        assert episode["steps"] == T + K and not episode["terminated"]
        assert episode["states"] == T
    # new measure: G_t misses gamma^(T+K-t) V, the tail bound, so the mean is V gamma^(K+1) (1 - gamma^T) / (T (1-gamma))
    tail = value * GAMMA ** (K + 1) * (1 - GAMMA**T) / (T * (1 - GAMMA))
    assert result["overestimation"] == pytest.approx(tail, rel=1e-9)
    assert 0 < result["overestimation"] < 0.01 * value * GAMMA
    mean_return = np.mean(discounted_returns(np.full(T + K, REWARD), GAMMA)[:T])
    assert result["relative_overestimation"] == pytest.approx(tail / mean_return, rel=1e-9)
    assert result["value_states"] == 3 * T
    # returns cut at T would show the time-limit artifact V gamma (1 - gamma^T) / (T (1 - gamma)), 29% of V here
    artifact = value * GAMMA * (1 - GAMMA**T) / (T * (1 - GAMMA))
    assert artifact > 0.28 * value > 25 * result["overestimation"]
    assert set(result) - {"value_episodes"} == set(HISTORY_KEYS)  # (the measure cut at T is gone)


@pytest.mark.parametrize("terminate_at", [12, T + 10])  # before the time limit, and in the steps past it
def test_terminated_episodes_are_measured_exactly(terminate_at):
    # the exact value at step t of an episode that terminates after n steps: r (1 - gamma^(n - t)) / (1 - gamma)
    result = evaluate_with_exact_critic(terminate_at, lambda t: REWARD * (1 - GAMMA ** (terminate_at - t)) / (1 - GAMMA))
    for episode in result["value_episodes"]:
        assert episode["terminated"] and episode["steps"] == terminate_at
        assert episode["states"] == min(terminate_at, T)
    assert result["overestimation"] == pytest.approx(0.0, abs=1e-12)
    assert result["episode_returns"] == [REWARD * min(terminate_at, T)] * 3


def test_episodes_cut_without_running_past_the_limit_measure_only_states_k_steps_before_the_cut():
    steps = K + 5  # a plain TimeLimit, no ReturnPastTimeLimit: states t <= steps - K have a known return
    env = make_vec_env(lambda: TimeLimit(CountingEnv(), steps), n_envs=1)
    model = AblatableTD3("MlpPolicy", env, gamma=GAMMA, policy_kwargs={"net_arch": [4]}, device="cpu")
    callback = OverestimationEvalCallback(env, eval_freq=10, n_eval_episodes=1)
    callback.init_callback(model)
    callback.evaluate()
    (episode,) = callback.value_episodes[-1]
    assert (episode["steps"], episode["states"]) == (steps, 6)


def todays_returns(model, eval_env, n_episodes: int, seed: int) -> list[float]:
    """The scores of an evaluation cut at T: evaluate_policy's episode returns on an env cut at T (in env order)."""
    by_env: list[list[float]] = [[] for _ in range(eval_env.num_envs)]

    def collect(locals_, _globals):
        if locals_["done"] and "episode" in locals_["info"]:
            by_env[locals_["i"]].append(float(locals_["info"]["episode"]["r"]))

    eval_env.seed(seed)
    evaluate_policy(model, eval_env, n_episodes, deterministic=True, return_episode_rewards=True, callback=collect)
    return [r for per_env in by_env for r in per_env]


def pendulum_task(out, **settings) -> RunTask:
    config = StudyConfig(
        envs=["Pendulum-v1"], variants=["td3"], seeds=[3], out=str(out), n_timesteps=300, eval_freq=150,
        eval_episodes=2, hyperparams={"learning_starts": 100, "policy_kwargs": "dict(net_arch=[16])"}, progress=False,
        keep_models=True, **settings,
    )  # fmt: skip
    variants = config.variant_objects
    return make_tasks(config, variants, resolve_hyperparams(config, variants))[0]


@pytest.mark.parametrize(
    ("env_id", "time_limit", "n_envs", "n_episodes"),
    [
        ("Pendulum-v1", 30, 3, 3),  # equal episodes, one per env: Q batches in the same order
        # the policy crashes within ~100 steps: cut at 20, the lander flies on past it and its steps draw random
        # numbers, so the next episode on the same env starts as after a cut only if its generator is restored
        ("LunarLanderContinuous-v3", 20, 2, 5),
    ],
)
def test_scores_are_those_of_an_evaluation_cut_at_the_time_limit(tmp_path, env_id, time_limit, n_envs, n_episodes):
    task = replace(pendulum_task(tmp_path), env=env_id, eval_max_episode_steps=time_limit)
    task = replace(task, eval_envs=n_envs, eval_episodes=n_episodes)
    manager = make_manager(task)
    model, _ = manager.setup_experiment()
    model.learn(200)  # a policy that is not the initial one
    schedule = RunSchedule.of(task, manager, model.gamma)
    record = RunRecord.of(task)
    schedule.note_in(record)
    evaluator = schedule.make_evaluator(manager, task.seed)
    evaluator.init_callback(model)
    assert record.overestimation_method["time_limit"] == schedule.time_limit == time_limit
    results = [evaluator.evaluate() for _ in range(2)]

    manager.eval_time_limit = None
    manager.eval_env_kwargs = {"max_episode_steps": time_limit}
    today_env = manager.create_envs(n_envs, eval_env=True)
    for index, result in enumerate(results):
        today = todays_returns(model, today_env, n_episodes, evaluation_seed(task.seed, index))
        assert result["episode_returns"] == today  # exact, Monitor's rounding included
        assert result["mean_return"] == float(np.mean(today))
        assert any(episode["steps"] > time_limit for episode in evaluator.value_episodes[index])


def test_run_record_has_the_measure_recomputable_from_its_episodes_and_a_small_loadable_model(tmp_path):
    task = replace(pendulum_task(tmp_path, eval_max_episode_steps=25), record=str(run_path(tmp_path, "Pendulum-v1", "td3", 3)))
    record = execute_run(task)
    assert record["status"] == "ok", record["traceback"]
    saved = read_run(task.record)
    assert saved["format"] == RUN_FILE_FORMAT == 3 and saved["model"] == model_path(task.record).name
    k = tail_steps(0.98)  # the zoo's Pendulum gamma
    assert saved["overestimation_method"] == {
        **saved["overestimation_method"], "gamma": 0.98, "time_limit": 25, "tail_steps": k, "tail_tolerance": 0.01
    }  # fmt: skip
    evaluations = saved["evaluations"]
    assert list(evaluations) == list(HISTORY_KEYS)
    new_keys = {"overestimation", "relative_overestimation", "value_states"}
    assert all(len(evaluations[key]) == 3 for key in new_keys) and len(saved["value_episodes"]) == 3
    assert evaluations["timesteps"] == [0, 150, 300]
    for index in range(3):
        episodes = saved["value_episodes"][index]
        assert [episode["steps"] for episode in episodes] == [25 + k] * 2
        recomputed = measure_from_episodes(episodes)
        for key, value in recomputed.items():
            assert evaluations[key][index] == value
        assert evaluations["relative_overestimation"][index] == pytest.approx(
            evaluations["overestimation"][index] / (sum(e["abs_return_sum"] for e in episodes) / 50), rel=1e-12
        )

    # the final model: no replay buffer, loads, predicts as the trained one
    model_file = model_path(task.record)
    assert not any("replay" in name for name in zipfile.ZipFile(model_file).namelist())
    loaded = AblatableTD3.load(model_file, device="cpu")
    assert loaded.policy is not None and model_file.stat().st_size < 100_000


@pytest.mark.parametrize("study", COMMITTED)
def test_committed_studies_are_of_the_current_formats_and_take_new_seeds(tmp_path, study):
    folder = ROOT / "docs" / "studies" / study
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert manifest["settings"]["run_format"] == RUN_FILE_FORMAT and "engine" not in manifest["settings"]
    assert manifest["grids"]
    records = [read_run(path) for path in record_paths(folder)]
    assert records and all(record is not None for record in records)  # every record of the current format
    assert not any(OLD_MEASURE & set(record["evaluations"]) for record in records)
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(manifest))
    config = StudyConfig(**{**manifest["config"], "out": str(tmp_path), "seeds": [20, 21], "progress": False})
    extended = open_manifest(config, resolve_hyperparams(config, config.variant_objects), {})
    assert extended["seeds"] == sorted({*manifest["seeds"], 20, 21})
    assert extended["settings"] == manifest["settings"]


def test_a_checkpoint_of_another_record_format_is_not_resumed():
    env = make_vec_env(lambda: TimeLimit(CountingEnv(), 5), n_envs=1)
    callback = OverestimationEvalCallback(env, eval_freq=10, n_eval_episodes=1)
    state = callback.state()
    callback.set_state(state)  # its own format: restored
    history_of_format_2 = {key: [] for key in state["history"] if key not in ("overestimation", "value_states")}
    with pytest.raises(ValueError, match="another record format"):
        callback.set_state({**state, "history": history_of_format_2})
    with_the_old_measure = {**state["history"], "bias": []}
    with pytest.raises(ValueError, match="another record format"):
        callback.set_state({**state, "history": with_the_old_measure})
    without_summaries = {key: value for key, value in state.items() if key != "value_episodes"}
    with pytest.raises(ValueError, match="another record format"):
        callback.set_state(without_summaries)

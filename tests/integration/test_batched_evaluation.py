"""Vectorised evaluation of a batched group: every agent's evaluation episodes run in lockstep, their actions computed
by one call of the group's actor (``RunGroup(vectorised_evaluation=True)``, the default on CUDA)."""

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv
from test_batched_invariance import CUDA, _tasks, assert_same_run

from sb3_ablation import AblatableTD3
from sb3_ablation.batched import BatchedTD3
from sb3_ablation.study.run.batched import (
    AgentEvaluations,
    RunGroup,
    agent_deterministic_actions,
    execute_group,
    make_groups,
)
from sb3_ablation.study.run.episodes import EpisodeLoop, run_episodes
from sb3_ablation.study.run.evaluation import OverestimationEvalCallback
from sb3_ablation.study.store.runs import model_path, run_path

GAUSSIAN = "no_deterministic_policy"


def _run(out, groups: list[tuple[str, list[int]]], device: str = "cpu", vectorised: bool = True) -> list[dict]:
    """Train, in one group, the runs of (variant, seeds) pairs, evaluated in lockstep or each agent on its own."""
    tasks = [task for variant, seeds in groups for task in _tasks(out, variant, seeds, device)]
    group = RunGroup("Pendulum-v1", "+".join(variant for variant, _ in groups), tasks, vectorised_evaluation=vectorised)
    records = execute_group(group)
    assert all(record["status"] == "ok" for record in records), [record.get("traceback") for record in records]
    return records


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA)])
def test_a_runs_record_with_vectorised_evaluation_is_the_same_alone_in_a_group_and_in_a_mixed_group(tmp_path, device):
    th.set_num_threads(1)
    alone, grouped, mixed = tmp_path / "alone", tmp_path / "grouped", tmp_path / "mixed"
    records = _run(alone, [("td3", [0])], device)
    _run(grouped, [("td3", [1, 0, 2])], device)  # seed 0 in the middle of a group of three
    # a Gaussian actor first (the group's actor is Gaussian: TD3's action is the tanh of its mean layer's output)
    records += _run(mixed, [(GAUSSIAN, [0]), ("no_clipped_double_q", [1]), ("td3", [0])], device)
    for variant, seed in ((GAUSSIAN, 0), ("no_clipped_double_q", 1)):
        records += _run(alone, [(variant, [seed])], device)
    for folder in (grouped, mixed):
        assert_same_run(alone, folder, "td3", 0)
    for variant, seed in ((GAUSSIAN, 0), ("no_clipped_double_q", 1)):
        assert_same_run(alone, mixed, variant, seed)
    assert all(record["evaluation"] == "vectorised" for record in records)


def test_vectorised_and_per_agent_evaluation_run_the_same_episodes_of_the_same_training(tmp_path):
    # The group's actor rounds its last layer (one output) otherwise than a plain model's, so the actions differ in
    # the last bits, and the returns after them (benchmarks/evaluation_scaling.py measures how far). Exactly the same:
    # the training (an evaluation draws no random number and changes no weight), the episodes (seeds, counts,
    # lengths, the states measured).
    th.set_num_threads(1)
    groups = [(GAUSSIAN, [0]), ("td3", [1, 2])]
    per_agent = _run(tmp_path / "per_agent", groups, vectorised=False)
    vectorised = _run(tmp_path / "vectorised", groups)
    for alone, lockstep in zip(per_agent, vectorised, strict=True):
        assert "evaluation" not in alone and lockstep["evaluation"] == "vectorised"
        assert alone["diagnostics"] == lockstep["diagnostics"]
        assert alone["evaluations"]["timesteps"] == lockstep["evaluations"]["timesteps"] == [0, 100, 200]
        assert [len(returns) for returns in alone["evaluations"]["episode_returns"]] == [2, 2, 2]
        assert [len(returns) for returns in lockstep["evaluations"]["episode_returns"]] == [2, 2, 2]
        for key in ("steps", "terminated", "states"):
            assert [[episode[key] for episode in evaluation] for evaluation in alone["value_episodes"]] == [
                [episode[key] for episode in evaluation] for evaluation in lockstep["value_episodes"]
            ]
    for variant, seeds in groups:
        for seed in seeds:
            state_a, state_b = (
                AblatableTD3.load(model_path(run_path(tmp_path / mode, "Pendulum-v1", variant, seed))).policy.state_dict()
                for mode in ("per_agent", "vectorised")
            )
            assert all(th.equal(state_a[key], state_b[key]) for key in state_a)


SMALL = dict(learning_starts=50, batch_size=16, policy_kwargs=dict(net_arch=[16, 16]))


def _agents() -> list[AblatableTD3]:
    """A Gaussian actor and two deterministic ones, of seeds 0, 1, 2."""
    return [AblatableTD3("MlpPolicy", "Pendulum-v1", seed=seed, deterministic_policy=seed != 0, **SMALL) for seed in range(3)]


def _eval_env(seed: int) -> VecEnv:
    return make_vec_env("Pendulum-v1", n_envs=2, seed=seed)


def test_an_agents_actions_are_its_deterministic_predict_of_the_groups_actor_and_its_own_alone():
    # agent k's actions in a mixed group == those of a group of agent k alone (its own networks: a deterministic
    # actor's forward, a Gaussian actor's squashed mean) == the unscaled deterministic _predict of that group's policy
    th.set_num_threads(1)
    agents = _agents()
    group = BatchedTD3.from_agents(agents, dict(policy="MlpPolicy", **SMALL))
    observations = np.stack([_eval_env(seed).reset() for seed in range(3)])  # (K, n, obs)
    actions = agent_deterministic_actions(group, observations)
    assert actions.shape == (3, 2, 1) and actions.dtype == np.float32
    for index, agent in enumerate(_agents()):
        alone = BatchedTD3.from_agents([agent], dict(policy="MlpPolicy", **SMALL))
        own = agent_deterministic_actions(alone, observations[index : index + 1])
        assert np.array_equal(actions[index], own[0])
        with th.no_grad():
            predicted = alone.policy._predict(th.as_tensor(observations[index : index + 1]), deterministic=True)
        assert np.array_equal(own, alone.policy.unscale_action(predicted.numpy()))
    # (a Gaussian actor's sample would differ: the deterministic action is no sample)
    with th.no_grad():
        sample = group.policy._predict(th.as_tensor(observations), deterministic=False).numpy()
    assert not np.array_equal(group.policy.unscale_action(sample)[0], actions[0])


def test_the_episode_loop_driven_by_predict_is_run_episodes():
    th.set_num_threads(1)
    model = _agents()[1]
    expected = run_episodes(model, _eval_env(0), 3, seed=7, time_limit=20)
    loop = EpisodeLoop(_eval_env(0), 3, seed=7, time_limit=20)
    steps = 0
    while loop.running:
        loop.step(model.predict(loop.observations, deterministic=True)[0])
        steps += 1
    assert steps == 400  # two episodes on env 0 (3 split over 2 envs): 2 x 200 steps
    assert [len(episode.rewards) for episode in loop.episodes] == [200, 200, 200]
    for mine, theirs in zip(loop.episodes, expected, strict=True):
        assert mine.score == theirs.score and mine.rewards == theirs.rewards
        assert all(np.array_equal(a, b) for a, b in zip(mine.observations, theirs.observations, strict=True))
        assert len(mine.observations) == 20


def test_an_agent_whose_actor_diverges_fails_as_it_does_per_agent_while_the_others_go_on(tmp_path, monkeypatch):
    # agent 1's actor weights become NaN after step 100: it is evaluated on its own (the group's actor would give NaN
    # actions) and fails with the per-agent path's error; an agent whose episodes raise in the lockstep fails too
    th.set_num_threads(1)
    sync = AgentEvaluations._sync

    def poison_agent_1(self, evaluating):
        if self.batched.agent_timesteps >= 100:
            with th.no_grad():
                for parameter in self.batched.actor.parameters():
                    parameter[1].fill_(float("nan"))
        sync(self, evaluating)

    monkeypatch.setattr(AgentEvaluations, "_sync", poison_agent_1)
    records = {mode: _run_failing(tmp_path / str(mode), mode) for mode in (False, True)}
    for mode, (first, second, third) in records.items():
        assert first["status"] == "ok" and first["evaluations"]["timesteps"] == [0, 100, 200], mode
        assert second["status"] == "failed" and second["evaluations"]["timesteps"] == [0]
        assert third["status"] == "failed" and third["evaluations"]["timesteps"] == [0]
        assert third["error"] == "RuntimeError: the episodes of seed 2 broke"
    assert records[True][1]["error"] == records[False][1]["error"]
    assert records[True][1]["error"].startswith("TrainingDivergedError: evaluation return is nan at step 100")
    assert records[True][0]["evaluation"] == "vectorised"


def _run_failing(out, vectorised: bool) -> list[dict]:
    tasks = _tasks(out, "td3", [0, 1, 2])
    (group,) = make_groups(tasks)
    group.vectorised_evaluation = vectorised
    episode_loop, evaluate = OverestimationEvalCallback.episode_loop, OverestimationEvalCallback.evaluate

    def breaking_loop(self):
        loop = episode_loop(self)
        if self.seed == 2 and self.model.num_timesteps >= 100:  # (the hook sets the callback's count after this)
            loop.step = _raise
        return loop

    def breaking_evaluate(self):
        if self.seed == 2 and self.num_timesteps >= 100 and not vectorised:
            _raise()
        return evaluate(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(OverestimationEvalCallback, "episode_loop", breaking_loop)
        patch.setattr(OverestimationEvalCallback, "evaluate", breaking_evaluate)
        return execute_group(group)


def _raise(*_args):
    raise RuntimeError("the episodes of seed 2 broke")


def test_vectorised_evaluation_is_on_by_default_on_cuda_only(tmp_path):
    tasks = _tasks(tmp_path, "td3", [0])
    assert not RunGroup("Pendulum-v1", "td3", tasks).evaluates_vectorised()
    assert RunGroup("Pendulum-v1", "td3", tasks, vectorised_evaluation=True).evaluates_vectorised()
    for task in tasks:
        task.device = "cuda"
    assert RunGroup("Pendulum-v1", "td3", tasks).evaluates_vectorised() == th.cuda.is_available()
    assert not RunGroup("Pendulum-v1", "td3", tasks, vectorised_evaluation=False).evaluates_vectorised()


def test_lockstep_episodes_are_each_agents_own_episodes_of_its_seeds():
    # the same episodes as each agent's run_episodes (counts, lengths, start states: the seeds), the actions those of
    # the group's actor (equal to the plain model's up to the rounding of its products)
    th.set_num_threads(1)
    group = BatchedTD3.from_agents(_agents(), dict(policy="MlpPolicy", **SMALL))
    seeds = [11, 22, 33]
    loops = [EpisodeLoop(_eval_env(0), 3, seed=seed, time_limit=20) for seed in seeds]
    while any(loop.running for loop in loops):
        actions = agent_deterministic_actions(group, np.stack([loop.observations for loop in loops]))
        for loop, agent_actions in zip(loops, actions, strict=True):
            if loop.running:
                loop.step(agent_actions)
    for loop, agent, seed in zip(loops, _agents(), seeds, strict=True):
        expected = run_episodes(agent, _eval_env(0), 3, seed=seed, time_limit=20)
        assert [len(episode.rewards) for episode in loop.episodes] == [len(episode.rewards) for episode in expected]
        assert [len(episode.observations) for episode in loop.episodes] == [20, 20, 20]
        for mine, theirs in zip(loop.episodes, expected, strict=True):
            assert np.array_equal(mine.observations[0], theirs.observations[0])
            assert mine.terminated == theirs.terminated

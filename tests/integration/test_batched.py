"""The batched engine: K AblatableTD3 agents in one process (BatchedTD3) are K separate agents, and the study's
``--engine batched`` writes the records the process engine writes."""

import json

import numpy as np
import pytest
import torch as th
from scipy import stats
from stable_baselines3 import TD3
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import VecNormalize
from torch import nn

from sb3_ablation import AblatableTD3
from sb3_ablation.batched import AgentReplayBuffer, BatchedTD3
from sb3_ablation.cli.study import study_main
from sb3_ablation.study.plan.config import StudyConfig, StudyError, make_tasks, resolve_hyperparams
from sb3_ablation.study.store.runs import model_path, read_run, run_path

SMALL = dict(learning_starts=50, batch_size=16, policy_kwargs=dict(net_arch=[16, 16]))


def batched_model(n_agents=3, **kwargs) -> BatchedTD3:
    env = make_vec_env("Pendulum-v1", n_envs=n_agents, seed=0)
    return BatchedTD3("MlpPolicy", env, seed=0, **{**SMALL, **kwargs})


def linear_pairs(ensemble: nn.Module, network: nn.Module):
    """(stacked layer, agent's plain layer) for every Linear layer of a plain network."""
    return [(ensemble.get_submodule(name), layer) for name, layer in network.named_modules() if isinstance(layer, nn.Linear)]


# switch settings whose train() draws no random number (each agent's own draws are compared in
# tests/integration/test_batched_invariance.py)
SAMPLE_FIELDS = ("observations", "actions", "next_observations", "dones", "rewards")
NO_DRAWS = {
    "td3": dict(target_policy_smoothing=False),
    "no_clipped_double_q": dict(target_policy_smoothing=False, clipped_double_q=False),
    "no_target_networks": dict(target_policy_smoothing=False, target_networks=False),
}


@pytest.mark.parametrize("switches", list(NO_DRAWS.values()), ids=list(NO_DRAWS))
def test_each_agents_gradients_are_those_of_a_separate_model_on_its_batch(switches):
    th.set_num_threads(1)
    model = batched_model(**switches)
    model.learn(100)  # trained weights and a filled buffer
    batch = model.replay_buffer.sample(16)
    agents = [AblatableTD3("MlpPolicy", "Pendulum-v1", seed=1, **SMALL, **switches) for _ in range(model.n_agents)]
    for index, agent in enumerate(agents):
        model.copy_agent_to(index, agent)
        for ensemble, network in ((model.actor, agent.actor), (model.critic, agent.critic)):
            for stacked, layer in linear_pairs(ensemble, network):
                assert th.equal(stacked.weight[index], layer.weight.t()) and th.equal(stacked.bias[index, 0], layer.bias)
        agent_batch = batch._replace(**{name: getattr(batch, name)[index] for name in SAMPLE_FIELDS})
        agent.replay_buffer.sample = lambda *_args, _batch=agent_batch, **_kwargs: _batch
        agent._n_updates = 1  # the next update moves the actor too (policy_delay=2)
        agent.set_logger(Logger(folder=None, output_formats=[]))
        agent.lr_schedule = lambda _progress: 0.0  # the actor's gradient is taken through the critic as it was
        agent.train(gradient_steps=1, batch_size=16)
    model.replay_buffer.sample = lambda *_args, **_kwargs: batch
    model._n_updates = 1
    model.lr_schedule = lambda _progress: 0.0
    model.train(gradient_steps=1, batch_size=16)
    # Equal up to float rounding, not bitwise: a batched product sums in another order than a single one (measured
    # on this CPU: baddbmm and addmm differ in the last bits for one-row inputs and one-column outputs). (A learning
    # rate of 0 keeps the critic the same for the actor's gradient: Adam's first step is about lr * sign(g), and
    # rounding flips the sign of gradients near zero, which would move the critic by up to 2 * lr in places.)
    for index, agent in enumerate(agents):
        for ensemble, network in ((model.critic, agent.critic), (model.actor, agent.actor)):
            for stacked, layer in linear_pairs(ensemble, network):
                scale = layer.weight.grad.abs().max()
                assert scale > 0
                th.testing.assert_close(stacked.weight.grad[index], layer.weight.grad.t(), rtol=1e-4, atol=1e-5 * scale)
                th.testing.assert_close(stacked.bias.grad[index, 0], layer.bias.grad, rtol=1e-4, atol=1e-5 * scale)


def test_agents_start_from_and_return_plain_models_exactly():
    th.set_num_threads(1)
    model = batched_model(n_agents=2, deterministic_policy=False)
    agents = [AblatableTD3("MlpPolicy", "Pendulum-v1", seed=seed, deterministic_policy=False, **SMALL) for seed in (5, 6)]
    for index, agent in enumerate(agents):
        model.policy.copy_agent_from(index, agent.policy)
    copies = [AblatableTD3("MlpPolicy", "Pendulum-v1", seed=9, deterministic_policy=False, **SMALL) for _ in range(2)]
    for index, (agent, copy) in enumerate(zip(agents, copies, strict=True)):
        model.copy_agent_to(index, copy)
        state, copied = agent.policy.state_dict(), copy.policy.state_dict()
        assert state.keys() == copied.keys()
        assert all(th.equal(state[key], copied[key]) for key in state)
    # and the batched actor acts as the agents' actors (float rounding of batched products aside)
    obs = th.randn(2, 5, 3)
    with th.no_grad():
        mean, log_std = model.actor.get_action_dist_params(obs)
        for index, agent in enumerate(agents):
            agent_mean, agent_log_std = agent.actor.get_action_dist_params(obs[index])
            th.testing.assert_close(mean[index], agent_mean)
            th.testing.assert_close(log_std[index], agent_log_std)


@pytest.mark.parametrize("settings", [{}, {"gradient_steps": -1}, {"replay_buffer": False}], ids=str)
def test_each_agent_follows_the_schedule_of_a_single_run(settings):
    th.set_num_threads(1)
    model = batched_model(n_agents=3, **settings)
    model.learn(120)
    single = AblatableTD3("MlpPolicy", "Pendulum-v1", seed=0, **SMALL, **settings)
    single.learn(120)
    assert model.agent_timesteps == single.num_timesteps == 120
    assert model.num_timesteps == 360  # SB3's count: all agents' steps
    assert model._n_updates == single._n_updates == 70  # one update per agent step after learning_starts
    buffer = model.replay_buffer
    assert isinstance(buffer, AgentReplayBuffer) and buffer.n_envs == 3
    assert (buffer.buffer_size, buffer.pos) == (single.replay_buffer.buffer_size, single.replay_buffer.pos)
    assert model.batch_size == single.batch_size


def test_agents_sample_only_their_own_transitions():
    env = make_vec_env("Pendulum-v1")
    buffer = AgentReplayBuffer(50, env.observation_space, env.action_space, n_envs=5)
    for step in range(8):
        agents = np.arange(5, dtype=np.float32)
        obs = np.stack([agents, np.full(5, step), agents]).T
        buffer.add(obs, obs + 100, agents[:, None], agents, np.zeros(5), [{} for _ in range(5)])
    batch = buffer.sample(32)
    assert batch.observations.shape == (5, 32, 3) and batch.rewards.shape == (5, 32, 1) and batch.dones.shape == (5, 32, 1)
    for agent in range(5):
        assert bool((batch.observations[agent, :, 0] == agent).all())
        assert bool((batch.next_observations[agent, :, 0] == agent + 100).all())
        assert bool((batch.actions[agent] == agent).all()) and bool((batch.rewards[agent] == agent).all())
    assert len(th.unique(batch.observations[..., 1])) > 1  # different transitions of the column


def test_settings_without_a_per_agent_form_are_refused_in_one_line():
    env = make_vec_env("Pendulum-v1", n_envs=2)
    for kwargs, message in (
        (dict(speed_mode=True), "speed_mode"),
        (dict(train_freq=(1, "episode")), "train_freq in steps"),
        (dict(optimize_memory_usage=True, replay_buffer_kwargs=dict(handle_timeout_termination=False)), "plain ReplayBuffer"),
    ):
        with pytest.raises(ValueError, match=message) as error:
            BatchedTD3("MlpPolicy", env, **kwargs)
        assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="VecNormalize"):
        BatchedTD3("MlpPolicy", VecNormalize(env))
    with pytest.raises(TypeError, match="did you mean 'clipped_double_q'"):
        BatchedTD3("MlpPolicy", env, clipped_dobule_q=False)


def test_group_checkpoint_loads_as_the_group_and_is_refused_by_single_agent_classes(tmp_path):
    model = batched_model(n_agents=2)
    model.learn(60)
    model.save(tmp_path / "group")
    loaded = BatchedTD3.load(tmp_path / "group", env=make_vec_env("Pendulum-v1", n_envs=2))
    state, loaded_state = model.policy.state_dict(), loaded.policy.state_dict()
    assert all(th.equal(state[key], loaded_state[key]) for key in state) and loaded.num_timesteps == model.num_timesteps
    for algorithm in (AblatableTD3, TD3):
        with pytest.raises((ValueError, RuntimeError)) as error:
            algorithm.load(tmp_path / "group")
        if algorithm is AblatableTD3:  # ours names the policy and says what to do, in one line
            assert "BatchedTD3Policy" in str(error.value) and "\n" not in str(error.value)


def test_from_agents_seeds_env_k_with_agent_ks_seed_as_a_single_run_does():
    agents = [AblatableTD3("MlpPolicy", "Pendulum-v1", seed=seed, **SMALL) for seed in (3, 8)]
    singles = [AblatableTD3("MlpPolicy", "Pendulum-v1", seed=seed, **SMALL) for seed in (3, 8)]
    model = BatchedTD3.from_agents(agents, dict(policy="MlpPolicy", **SMALL))
    observations = model.get_env().reset()
    for index, single in enumerate(singles):
        assert np.array_equal(observations[index], single.get_env().reset()[0])


# 100 steps, learning from step 25 (so that the evaluation at step 50 follows updates), batches of 16
STUDY = [
    "--env", "Pendulum-v1", "--variants", "leave-one-out", "--seeds", "2", "--n-timesteps", "100", "--eval-freq", "50",
    "--eval-episodes", "2", "--eval-max-episode-steps", "20", "--workers", "2", "--no-progress", "--keep-models",
    "--hyperparams", "learning_starts:25", "batch_size:16", "policy_kwargs:dict(net_arch=[16, 16])",
]  # fmt: skip


def test_batched_study_runs_every_leave_one_out_variant_into_records_the_report_reads(tmp_path, capsys):
    from sb3_ablation.cli.study import report_main
    from sb3_ablation.study.analyse.results import load_study

    out = tmp_path / "study"
    assert study_main([*STUDY, "--engine", "batched", "--out", str(out)]) == 0
    assert "14 runs to do in 7 batched groups" in capsys.readouterr().out
    variants = StudyConfig(envs=["Pendulum-v1"], variants=["leave-one-out"], seeds=2, out=str(out)).variant_objects
    for variant in variants:
        for seed in (0, 1):
            record = read_run(run_path(out, "Pendulum-v1", variant.name, seed))
            assert record["status"] == "ok", record["traceback"]
            assert record["engine"] == "batched" and record["group_size"] == 2 and record["format"] == 3
            assert record["random_streams"] == "per_agent"
            assert record["switches"] == variant.switches and record["seed"] == seed
            assert record["evaluations"]["timesteps"] == [0, 50, 100]
            assert len(record["evaluations"]["episode_returns"][-1]) == 2
            assert record["diagnostics"]["timesteps"] == [0, 50, 100] and record["diagnostics"]["q1_mean"][0] is None
            assert all(value is not None for value in record["diagnostics"]["td_error"][1:])
            assert ("actor_std" in record["diagnostics"]) == (not variant.switches["deterministic_policy"])
            model = AblatableTD3.load(model_path(run_path(out, "Pendulum-v1", variant.name, seed)))
            assert model.switches == variant.switches and model.num_timesteps == 100
    # the two seeds of a variant are different agents
    first, second = (read_run(run_path(out, "Pendulum-v1", "td3", seed)) for seed in (0, 1))
    assert first["evaluations"]["mean_return"] != second["evaluations"]["mean_return"]
    assert report_main([str(out), "--reps", "100"]) == 0
    assert "Engine of every run: batched." in (out / "report.md").read_text()
    data = load_study(out)
    assert not data.failed and not data.missing
    assert sum(len(runs) for runs in data.runs["Pendulum-v1"].values()) == 14
    # rerun: nothing redone, whichever engine is named
    for engine in ("batched", "process"):
        assert study_main([*STUDY, "--engine", engine, "--out", str(out)]) == 0
        assert "14 already done, 0 finished now" in capsys.readouterr().out


def test_a_seed_is_trained_by_one_engine_and_a_mixed_study_checks_the_engines_agree(tmp_path, capsys):
    from sb3_ablation.cli.study import report_main
    from sb3_ablation.study.analyse.results import load_study
    from sb3_ablation.study.render.report import status_markdown

    out = tmp_path / "study"
    # one worker process: which engine trained a seed is the point here, not workers side by side
    two_variants = [*STUDY, "--variants", "td3", "no_replay_buffer", "--workers", "1", "--out", str(out)]
    assert study_main([*two_variants, "--engine", "batched"]) == 0  # seeds 0 and 1
    manifest = (out / "study.json").read_text()
    # a new variant of seed 0 by the process engine would pair it with a batched td3 run: refused, nothing written
    assert study_main([*two_variants, "--variants", "no_clipped_double_q", "--seeds", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("sb3-ablation study: Pendulum-v1 seed 0 has runs of the batched engine (")
        and len(err.splitlines()) == 1
    )
    assert err.endswith("train it with --engine batched, or use other seeds for --engine process")
    assert (out / "study.json").read_text() == manifest
    assert not (out / "runs" / "Pendulum-v1" / "no_clipped_double_q").exists()
    # other seeds by the process engine: accepted, and the report names each engine's runs and compares the effects
    assert study_main([*two_variants, "--seeds", "2", "3", "--engine", "process"]) == 0
    assert report_main([str(out), "--reps", "100"]) == 0
    report = (out / "report.md").read_text()
    assert "- batched: 4 runs, Pendulum-v1 every variant (seeds 0, 1)" in report
    assert "- process: 4 runs, Pendulum-v1 every variant (seeds 2, 3)" in report
    check = json.loads((out / "report.json").read_text())["sections"]["Engines"]
    assert check["reference_engine"] == "batched"
    (row,) = check["envs"]["Pendulum-v1"]["comparisons"]
    differences = {}
    for seed in range(4):
        td3, ablated = (read_run(run_path(out, "Pendulum-v1", v, seed)) for v in ("td3", "no_replay_buffer"))
        assert td3.get("engine", "process") == ablated.get("engine", "process") == ("batched" if seed < 2 else "process")
        final = [np.mean(r["evaluations"]["mean_return"][-1:]) for r in (td3, ablated)]
        differences[seed] = final[1] - final[0]
    assert row["variant"] == "no_replay_buffer" and row["engine"] == "process" and row["n"] == row["reference_n"] == 2
    assert row["reference_effect"] == pytest.approx(np.mean([differences[0], differences[1]]))
    assert row["difference"] == pytest.approx(np.mean([differences[2], differences[3]]) - row["reference_effect"])
    welch = stats.ttest_ind([differences[2], differences[3]], [differences[0], differences[1]], equal_var=False)
    assert row["p"] == row["p_holm"] == pytest.approx(welch.pvalue)  # one comparison: Holm changes nothing
    assert row["ci"] == pytest.approx(list(welch.confidence_interval(0.95)))
    assert "## Engines" in report and "| no_replay_buffer | " in report.split("## Engines")[1]
    assert status_markdown(load_study(out)) == (
        "**Status: 8 of 8 runs finished** (seeds 0-3; 4 runs of seeds 0-1 by the batched engine; 4 runs of seeds 2-3 "
        "by the process engine).\n"
    )


def test_unknown_engine_is_a_one_line_error(tmp_path, capsys):
    assert study_main([*STUDY, "--engine", "threads", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "sb3-ablation study: unknown engine 'threads'; expected one of process, batched, batched-compiled"
    with pytest.raises(StudyError, match="AblatableTD3 variants only, not ref_sb3_td3"):
        StudyConfig(envs=["Pendulum-v1"], variants=["td3", "ref_sb3_td3"], seeds=2, out=str(tmp_path), engine="batched")


def test_a_failing_agent_is_recorded_while_the_others_finish(tmp_path, monkeypatch):
    from sb3_ablation.study.run.batched import execute_group, make_groups
    from sb3_ablation.study.run.evaluation import OverestimationEvalCallback, TrainingDivergedError

    config = StudyConfig(
        envs=["Pendulum-v1"], variants=["td3"], seeds=[0, 1], out=str(tmp_path), n_timesteps=200, eval_freq=100,
        eval_episodes=1, eval_max_episode_steps=20, hyperparams={"learning_starts": 50, "policy_kwargs": "dict(net_arch=[8])"},
        keep_models=True,
    )  # fmt: skip
    variants = config.variant_objects
    tasks = make_tasks(config, variants, resolve_hyperparams(config, variants))
    for task in tasks:
        task.record = str(run_path(tmp_path, task.env, task.variant, task.seed))
    evaluate = OverestimationEvalCallback.evaluate

    def diverge_seed_1(self):
        if self.seed == 1 and self.num_timesteps >= 100:
            raise TrainingDivergedError("critic Q-values are NaN/inf at step 100")
        return evaluate(self)

    monkeypatch.setattr(OverestimationEvalCallback, "evaluate", diverge_seed_1)
    (group,) = make_groups(tasks)
    first, second = execute_group(group)
    assert first["status"] == "ok" and first["evaluations"]["timesteps"] == [0, 100, 200]
    assert second["status"] == "failed" and second["error"].startswith("TrainingDivergedError")
    assert second["evaluations"]["timesteps"] == [0]
    assert model_path(run_path(tmp_path, "Pendulum-v1", "td3", 0)).is_file()
    assert not model_path(run_path(tmp_path, "Pendulum-v1", "td3", 1)).exists()
    assert read_run(run_path(tmp_path, "Pendulum-v1", "td3", 1))["status"] == "failed"


@pytest.mark.skipif(not th.cuda.is_available(), reason="needs a CUDA device")
def test_batched_model_trains_on_cuda():
    model = batched_model(n_agents=2, device="cuda", deterministic_policy=False)
    model.learn(80)
    assert all(parameter.device.type == "cuda" for parameter in model.policy.parameters())
    agent = AblatableTD3("MlpPolicy", "Pendulum-v1", device="cuda", deterministic_policy=False, **SMALL)
    model.copy_agent_to(1, agent)
    assert th.equal(agent.actor.mu.weight, model.actor.mu.weight[1].t())


def test_agent_diagnostics_are_each_agents_and_follow_new_steps():
    from sb3_ablation.common.training_stats import TrainingStats

    rng = th.Generator().manual_seed(0)
    stats, logger = TrainingStats(), Logger(folder=None, output_formats=[])

    def step():
        q1, q2, y = (th.randn(3, 8, 1, generator=rng) for _ in range(3))  # 3 agents, batch of 8
        stats.critic_step(th.tensor(1.0), [q1, q2], y)
        stats.actor_step(th.tensor(2.0))
        return q1, q2, y

    steps = [step()]
    for _ in range(2):  # the second round sees a step added after the first round's transfer
        stats.record(logger, len(steps))
        diagnostics = stats.agent_diagnostics(3)
        q1, q2, y = (th.cat(column, dim=1).double().numpy() for column in zip(*steps, strict=True))
        for agent in range(3):
            assert diagnostics[agent]["q1_mean"] == pytest.approx(q1[agent].mean())
            assert diagnostics[agent]["twin_q_gap"] == pytest.approx(np.abs(q1[agent] - q2[agent]).mean())
            assert diagnostics[agent]["td_error"] == pytest.approx(np.abs(q1[agent] - y[agent]).mean())
        assert logger.name_to_value["train/target_q_mean"] == pytest.approx(y.mean())
        steps.append(step())

"""``model.learn()`` without arguments: the env's budget from the shipped zoo config, or one clear error."""

import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.noise import NormalActionNoise

from sb3_ablation import DDPG, AblatableTD3
from sb3_ablation.batched import BatchedTD3
from sb3_ablation.common import off_policy, zoo_budget

TINY = {"learning_starts": 50, "policy_kwargs": {"net_arch": [8]}, "batch_size": 16}


@pytest.mark.parametrize(("algo", "config"), [(AblatableTD3, "ablatable_td3"), (DDPG, "ddpg_scratch")])
def test_the_budget_is_the_envs_n_timesteps_in_the_shipped_zoo_config(algo, config):
    model = algo("MlpPolicy", "Pendulum-v1", **TINY)
    assert algo.zoo_config == config
    assert zoo_budget.default_budget(config, model.env) == (20_000, "Pendulum-v1")  # rl-zoo's Pendulum budget


@pytest.mark.parametrize("algo", [AblatableTD3, DDPG])
def test_learn_without_arguments_trains_the_zoo_budget(algo, monkeypatch, capsys):
    monkeypatch.setattr(zoo_budget, "_entries", lambda config: {"Pendulum-v1": {"n_timesteps": 120}})
    model = algo("MlpPolicy", "Pendulum-v1", verbose=1, **TINY)
    assert model.learn() is model and model.num_timesteps == 120
    said = capsys.readouterr().out
    assert "learn(): total_timesteps=120, the n_timesteps of Pendulum-v1 in zoo_configs/" in said
    # one line, which also says that the constructor's settings are not the entry's, and names from_zoo
    assert f"the other settings are this constructor's ({algo.__name__}.from_zoo('Pendulum-v1') takes the entry's)" in said


@pytest.mark.parametrize("algo", [AblatableTD3, DDPG])
@pytest.mark.parametrize("budget", [0, -5])
def test_a_budget_of_zero_or_below_is_refused(algo, budget):
    model = algo("MlpPolicy", "Pendulum-v1", **TINY)
    with pytest.raises(ValueError, match=rf"^learn\(total_timesteps={budget}\): expected a positive number of timesteps$"):
        model.learn(budget)
    assert model.num_timesteps == 0


@pytest.mark.parametrize(("given", "shown"), [(None, True), (False, False), (True, True)])
def test_without_a_budget_the_progress_bar_shows_unless_turned_off(given, shown, monkeypatch):
    monkeypatch.setattr(zoo_budget, "_entries", lambda config: {"Pendulum-v1": {"n_timesteps": 60}})
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", **TINY)
    assert model._learn_arguments(None, None, given)[2] is shown
    # with a budget, SB3's default: no bar unless asked for
    assert model._learn_arguments(60, None, None if given is None else given)[2] is bool(given)


def test_batched_learn_without_arguments_gives_each_agent_the_budget(monkeypatch):
    monkeypatch.setattr(zoo_budget, "_entries", lambda config: {"Pendulum-v1": {"n_timesteps": 100}})
    model = BatchedTD3("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=2, seed=0), seed=0, **TINY)
    model.learn()
    assert model.num_timesteps == 200  # 100 steps of each of the two agents


def test_an_env_without_a_zoo_entry_names_total_timesteps():
    model = AblatableTD3("MlpPolicy", "InvertedPendulum-v5", **TINY)
    with pytest.raises(TypeError, match=r"^learn\(\) needs total_timesteps: InvertedPendulum-v5 has no n_timesteps in "):
        model.learn()
    assert model.num_timesteps == 0
    model.learn(total_timesteps=60)  # SB3's signature otherwise
    assert model.num_timesteps == 60


@pytest.mark.parametrize("algo", [AblatableTD3, DDPG])
def test_a_budget_within_the_warm_up_warns_once_in_one_line_that_nothing_is_trained(algo):
    model = algo("MlpPolicy", "Pendulum-v1", **TINY)  # learning_starts 50
    with pytest.warns(UserWarning) as caught:
        for _ in range(2):  # said once per model
            model.learn(total_timesteps=50)
    said = [str(warning.message) for warning in caught if "trains nothing" in str(warning.message)]
    assert said == [
        "learn(total_timesteps=50) trains nothing: it ends at or before learning_starts (50), the warm-up of random "
        "actions, so no gradient update is made; give a budget above 50 or a lower learning_starts (e.g. "
        "from_zoo(env_id, learning_starts=...))"
    ]
    assert caught[0].filename == __file__  # pointed at the caller's line
    assert model._n_updates == 0  # SB3's learn, run as SB3 runs it (SB3's own tests collect warm-up data this way)


@pytest.mark.parametrize(("budget", "reset", "warned"), [(51, True, False), (30, False, True), (30, True, True)])
def test_the_warning_counts_the_steps_already_taken_when_training_continues(budget, reset, warned, recwarn):
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", **TINY)
    model.learn(total_timesteps=10)  # 10 steps taken: continuing with 30 more ends at 40, still within 50
    assert [str(w.message)[:44] for w in recwarn.list] == ["learn(total_timesteps=10) trains nothing: it"]
    off_policy.WARNED_NOTHING_TRAINED.discard(model)  # (said once per model: forgotten here, to be said again)
    recwarn.clear()
    model.learn(total_timesteps=budget, reset_num_timesteps=reset)
    assert any("trains nothing" in str(w.message) for w in recwarn.list) is warned


def test_batched_learn_warns_on_each_agents_budget(recwarn):
    model = BatchedTD3("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=2, seed=0), seed=0, **TINY)
    model.learn(total_timesteps=51)  # 51 steps of each agent: past each agent's 50 steps of warm-up
    assert not [w for w in recwarn.list if "trains nothing" in str(w.message)]
    with pytest.warns(UserWarning, match=r"^learn\(total_timesteps=40\) trains nothing: .*learning_starts \(50\)"):
        BatchedTD3("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=2, seed=0), seed=0, **TINY).learn(40)


NO_NOISE_LINE = (
    "{name}: no action_noise: after the warm-up of random actions it acts on the actor's output alone, with no "
    "exploration noise (SB3's default; the TD3 paper and the zoo entries add Gaussian noise of std 0.1: "
    "action_noise=NormalActionNoise(...), or {name}.from_zoo(env_id))\n"
)


@pytest.mark.parametrize("algo", [AblatableTD3, DDPG])
def test_the_constructor_says_at_verbose_1_that_it_explores_without_noise(algo, capsys):
    algo("MlpPolicy", "Pendulum-v1", verbose=1, **TINY)
    assert NO_NOISE_LINE.format(name=algo.__name__) in capsys.readouterr().out
    algo("MlpPolicy", "Pendulum-v1", verbose=0, **TINY)
    noise = NormalActionNoise(np.zeros(1), 0.1 * np.ones(1))
    algo("MlpPolicy", "Pendulum-v1", verbose=1, action_noise=noise, **TINY)
    if algo is AblatableTD3:  # the Gaussian actor explores by sampling itself
        AblatableTD3("MlpPolicy", "Pendulum-v1", verbose=1, deterministic_policy=False, **TINY)
    assert "no action_noise" not in capsys.readouterr().out

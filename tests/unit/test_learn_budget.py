"""``model.learn()`` without arguments: the env's budget from the shipped zoo config, or one clear error."""

import pytest
from stable_baselines3.common.env_util import make_vec_env

from sb3_ablation import DDPG, AblatableTD3
from sb3_ablation.batched import BatchedTD3
from sb3_ablation.common import zoo_budget

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

"""``from_zoo``: the Python line builds and trains what ``sb3-ablation train`` builds and trains."""

import pytest
import torch as th

from sb3_ablation import DDPG, AblatableTD3
from sb3_ablation.batched import BatchedTD3
from sb3_ablation.zoo import train
from sb3_ablation.zoo.hyperparams import ZooConfigError

ENV = "Pendulum-v1"
# A short try of the shipped entry: 300 steps, updates from step 100, a small network (the rest is the entry's)
CHANGES = {"n_timesteps": 300, "learning_starts": 100, "policy_kwargs": "dict(net_arch=[16])"}


def same_weights(first, second) -> bool:
    first, second = first.policy.state_dict(), second.policy.state_dict()
    return first.keys() == second.keys() and all(th.equal(first[key], second[key]) for key in first)


@pytest.mark.parametrize(("algo_class", "algo"), [(AblatableTD3, "ablatable_td3"), (DDPG, "ddpg_scratch")])
def test_from_zoo_learn_trains_the_model_that_train_trains(tmp_path, capsys, algo_class, algo):
    items = [f"{key}:{value!r}" if isinstance(value, str) else f"{key}:{value}" for key, value in CHANGES.items()]
    argv = ["--algo", algo, "--env", ENV, "--seed", "0", "-f", str(tmp_path), "--hyperparams", *items]
    assert train.main(argv) == 0
    trained = algo_class.load(tmp_path / algo / f"{ENV}_1" / f"{ENV}.zip")

    model = algo_class.from_zoo(ENV, seed=0, **CHANGES)
    # the entry's settings, not the constructor's defaults
    assert (model.gamma, model.learning_starts) == (0.98, 100)
    assert model.action_noise is not None and model.policy.net_arch == [16]
    capsys.readouterr()
    model.learn()
    said = capsys.readouterr().out
    assert "learn(): total_timesteps=300, given to from_zoo; the other settings are those of Pendulum-v1's entry in " in said
    assert model.num_timesteps == trained.num_timesteps == 300
    assert same_weights(model, trained)
    assert not any(tmp_path.glob(f"{algo}/{ENV}_2"))  # from_zoo writes no run folder


def test_from_zoo_takes_the_entrys_budget_and_says_so(capsys):
    model = AblatableTD3.from_zoo(ENV, seed=0, learning_starts=50, policy_kwargs={"net_arch": [8]})
    # Pendulum-v1's n_timesteps in the entry, and what learn() without a budget will say of it
    assert model._zoo_budget == (
        20_000,
        "the n_timesteps of Pendulum-v1's entry in zoo_configs/ablatable_td3.yml; the other settings are that entry's "
        "too (from_zoo)",
    )
    assert model.buffer_size == 200_000 and model.policy.net_arch == [8]
    assert capsys.readouterr().out == ""  # verbose 0: rl_zoo3's printout of the entry is not shown
    model.learn(60)  # an explicit budget is SB3's learn
    assert model.num_timesteps == 60


def test_from_zoo_refuses_bad_input_in_one_line():
    with pytest.raises(ZooConfigError, match=r"unknown hyperparameter 'clipped_double'.*did you mean 'clipped_double_q'"):
        AblatableTD3.from_zoo(ENV, clipped_double=False)
    with pytest.raises(ZooConfigError, match=r"unknown environment 'Pendulum-v0'"):
        AblatableTD3.from_zoo("Pendulum-v0")
    with pytest.raises(TypeError, match=r"BatchedTD3.from_zoo: the zoo configs build AblatableTD3 and DDPG only"):
        BatchedTD3.from_zoo(ENV)


def test_from_zoo_refuses_an_env_without_its_own_entry_unless_given_a_budget(capsys):
    with pytest.raises(
        ZooConfigError,
        match=r"^InvertedPendulum-v5 has no entry in zoo_configs/ablatable_td3.yml, only its 'default' template: pass "
        r"n_timesteps=\.\.\. to train with the template's settings \(AblatableTD3.from_zoo\('InvertedPendulum-v5', "
        r"n_timesteps=100000\)\), or build the model with the constructor$",
    ):
        AblatableTD3.from_zoo("InvertedPendulum-v5")
    model = AblatableTD3.from_zoo("InvertedPendulum-v5", n_timesteps=300, learning_starts=100)
    assert model._zoo_budget == (
        300,
        "given to from_zoo; the other settings are those of the 'default' entry of zoo_configs/ablatable_td3.yml, "
        "with from_zoo's changes",
    )


def test_from_zoo_learn_within_the_entrys_warm_up_says_it_trains_nothing():
    model = AblatableTD3.from_zoo(ENV, seed=0, policy_kwargs={"net_arch": [8]})
    with pytest.warns(UserWarning, match=r"^learn\(total_timesteps=500\) trains nothing: .*learning_starts \(10000\)"):
        model.learn(total_timesteps=500)
    assert model._n_updates == 0

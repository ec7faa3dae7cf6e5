"""``learn()`` without ``total_timesteps``: the budget read from the shipped zoo configs (without rl_zoo3), the env id
found through wrappers, and the errors (tests/unit/test_learn_budget.py has the shipped values and the batched case)."""

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from sb3_ablation import DDPG, AblatableTD3
from sb3_ablation.common import zoo_budget
from sb3_ablation.common.zoo_budget import env_id_of
from sb3_ablation.zoo import hyperparams

TINY = {"learning_starts": 20, "policy_kwargs": {"net_arch": [8]}, "batch_size": 8, "buffer_size": 500}


@pytest.fixture
def zoo_configs(tmp_path, monkeypatch):
    """A zoo_configs folder of our own, found where the zoo looks for the shipped one."""
    (tmp_path / "ablatable_td3.yml").write_text(
        "default:\n  n_timesteps: 1000\n  policy: MlpPolicy\nPendulum-v1:\n  n_timesteps: !!float 6e1\n"
        "MountainCarContinuous-v0:\n  policy: MlpPolicy\n"
    )
    (tmp_path / "ddpg_scratch.yml").write_text("Pendulum-v1:\n  n_timesteps: 40\n")
    monkeypatch.setattr(zoo_budget, "config_dir", lambda: tmp_path)  # where learn() looks
    monkeypatch.setattr(hyperparams, "config_dir", lambda: tmp_path)  # where the zoo's commands look
    return tmp_path


class NoSpecEnv(gym.Env):
    metadata = {"render_modes": ["rgb_array"]}  # noqa: RUF012  (SB3 makes envs with render_mode="rgb_array")
    observation_space = gym.spaces.Box(-1, 1, (2,), dtype=np.float32)
    action_space = gym.spaces.Box(-1, 1, (1,), dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        return np.zeros(2, dtype=np.float32), 0.0, False, False, {}


@pytest.mark.parametrize(("algo", "steps"), [(AblatableTD3, 60), (DDPG, 40)])
def test_learn_reads_its_algorithms_zoo_config(zoo_configs, algo, steps, capsys):
    model = algo("MlpPolicy", "Pendulum-v1", verbose=1, **TINY).learn()
    assert model.num_timesteps == steps
    config = "ablatable_td3" if algo is AblatableTD3 else "ddpg_scratch"
    line = f"learn(): total_timesteps={steps}, the n_timesteps of Pendulum-v1 in zoo_configs/{config}.yml"
    said = [said for said in capsys.readouterr().out.splitlines() if said.startswith("learn(): ")]
    assert said == [
        f"{line}; the other settings are this constructor's ({algo.__name__}.from_zoo('Pendulum-v1') takes the entry's)"
    ]


def test_quiet_models_say_nothing(zoo_configs, capsys):
    AblatableTD3("MlpPolicy", "Pendulum-v1", verbose=0, **TINY).learn(progress_bar=False)
    assert "learn()" not in capsys.readouterr().out


def test_a_quiet_model_with_its_progress_bar_says_where_its_budget_came_from(zoo_configs, capsys):
    AblatableTD3("MlpPolicy", "Pendulum-v1", verbose=0, **TINY).learn()
    assert "learn(): total_timesteps=60, the n_timesteps of Pendulum-v1" in capsys.readouterr().out


def test_the_env_id_is_found_through_wrappers(zoo_configs):
    env = VecNormalize(make_vec_env("Pendulum-v1", n_envs=2, seed=0))
    assert env_id_of(env) == "Pendulum-v1" and env_id_of(gym.make("Pendulum-v1")) == "Pendulum-v1"
    model = AblatableTD3("MlpPolicy", env, **TINY).learn()
    assert model.num_timesteps == 60


def test_an_entry_without_n_timesteps_and_the_default_entry_are_no_budget(zoo_configs):
    # MountainCarContinuous-v0 has an entry, without n_timesteps; LunarLander has only the `default` template
    for env_id in ("MountainCarContinuous-v0", "LunarLanderContinuous-v3"):
        model = AblatableTD3("MlpPolicy", env_id, **TINY)
        with pytest.raises(TypeError, match=rf"^learn\(\) needs total_timesteps: {env_id} has no n_timesteps in "):
            model.learn()
        assert model.num_timesteps == 0


def test_an_env_without_a_registered_id_names_total_timesteps():
    model = AblatableTD3("MlpPolicy", NoSpecEnv(), **TINY)
    assert env_id_of(model.env) is None
    with pytest.raises(TypeError, match=r"learn\(\) needs total_timesteps: the env has no registered id .*learn\(total_"):
        model.learn()
    assert model.learn(30).num_timesteps == 30


def test_a_registered_env_without_an_entry_names_total_timesteps_and_the_config():
    gym.register("NewcomerNoSpec-v0", entry_point=NoSpecEnv, max_episode_steps=20)
    try:
        model = DDPG("MlpPolicy", "NewcomerNoSpec-v0", **TINY)
        message = r"^learn\(\) needs total_timesteps: NewcomerNoSpec-v0 has no n_timesteps in zoo_configs/ddpg_scratch\.yml; "
        with pytest.raises(TypeError, match=message + r"pass learn\(total_timesteps=\.\.\.\)$"):
            model.learn()
    finally:
        del gym.envs.registry["NewcomerNoSpec-v0"]


def test_the_budget_is_read_without_rl_zoo3_and_as_the_zoo_reads_it(zoo_configs):
    # the algorithms sit below the zoo integration: their default budget must not need it (nor rl_zoo3)
    code = (
        "import sys, gymnasium as gym; from sb3_ablation.common.zoo_budget import default_budget; "
        "print(default_budget('ablatable_td3', gym.make('Pendulum-v1'))); "
        "print(sorted(m for m in sys.modules if m.startswith(('rl_zoo3', 'sb3_ablation.zoo'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["(20000, 'Pendulum-v1')", "[]"]
    for algo in ("ablatable_td3", "ddpg_scratch"):
        assert hyperparams.zoo_budget(algo, "Pendulum-v1") == zoo_budget.default_budget(algo, gym.make("Pendulum-v1"))[0]

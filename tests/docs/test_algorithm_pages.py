"""The algorithm pages' "can I use?" claims hold: each space of a page's table (action and observation) and its HER and
gSDE lines are what the class accepts (✔️: a model is built; ❌: it is refused at construction)."""

import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.vec_env import DummyVecEnv
from stable_baselines3.her import HerReplayBuffer

from sb3_ablation import DDPG, AblatableTD3
from sb3_ablation.batched import BatchedTD3

PAGES = Path(__file__).resolve().parents[2] / "docs" / "algorithms"
CLASSES = {"ablatable_td3.md": AblatableTD3, "ddpg.md": DDPG, "batched_td3.md": BatchedTD3}
BOX = spaces.Box(-1, 1, (3,))
SPACES = {
    "Discrete": spaces.Discrete(3),
    "Box": BOX,
    "MultiDiscrete": spaces.MultiDiscrete([2, 3]),
    "MultiBinary": spaces.MultiBinary(3),
    "Dict": spaces.Dict({"a": BOX, "b": spaces.Discrete(2)}),
}
SMALL = dict(learning_starts=10, batch_size=8, buffer_size=100, policy_kwargs=dict(net_arch=[8]), seed=0)


class SpacesEnv(gym.Env):
    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space):
        self.observation_space, self.action_space = observation_space, action_space

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


def _builds(build) -> bool:
    try:
        build()
    except (ValueError, TypeError, AssertionError):
        return False
    return True


def _space_claims():
    for page, cls in CLASSES.items():
        table = re.findall(r"^\| (\w+) \| (\S+) \| (\S+)", (PAGES / page).read_text(), re.MULTILINE)
        claims = {name: (action, observation) for name, action, observation in table if name in SPACES}
        assert set(claims) == set(SPACES), f"{page}: the table names {sorted(claims)}"
        for name, (action, observation) in claims.items():
            yield pytest.param(cls, "action", name, action == "✔️", id=f"{page}-action-{name}")
            yield pytest.param(cls, "observation", name, observation == "✔️", id=f"{page}-observation-{name}")


@pytest.mark.parametrize("cls, side, name, claimed", list(_space_claims()))
def test_the_space_table_is_what_the_class_accepts(cls, side, name, claimed):
    space = SPACES[name]
    env = SpacesEnv(BOX, space) if side == "action" else SpacesEnv(space, spaces.Box(-1, 1, (2,)))
    policy = "MultiInputPolicy" if isinstance(env.observation_space, spaces.Dict) else "MlpPolicy"
    assert _builds(lambda: cls(policy, DummyVecEnv([lambda: env]), **SMALL)) == claimed


def _line_claim(page: str, feature: str) -> bool:
    (line,) = [line for line in (PAGES / page).read_text().splitlines() if line.startswith(f"- {feature}")]
    return line.split(":", 1)[1].strip().startswith("✔️")


@pytest.mark.parametrize("page", CLASSES)
def test_the_her_and_gsde_lines_are_what_the_class_accepts(page):
    cls = CLASSES[page]
    goal_env = BitFlippingEnv(n_bits=4, continuous=True, max_steps=4)
    her = dict(replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs=dict(n_sampled_goal=2))
    assert _builds(lambda: cls("MultiInputPolicy", goal_env, **her, **SMALL)) == _line_claim(page, "HER")
    assert _builds(lambda: cls("MlpPolicy", "Pendulum-v1", use_sde=True, **SMALL)) == _line_claim(page, "gSDE")


def test_her_is_refused_without_a_replay_buffer_as_the_page_says():
    assert "except with `replay_buffer=False`" in (PAGES / "ablatable_td3.md").read_text()
    goal_env = BitFlippingEnv(n_bits=4, continuous=True, max_steps=4)
    with pytest.raises(ValueError, match="replay_buffer=False cannot use HerReplayBuffer"):
        AblatableTD3("MultiInputPolicy", goal_env, replay_buffer_class=HerReplayBuffer, replay_buffer=False, **SMALL)


def test_an_image_observation_needs_a_cnn_policy_only_where_the_page_lists_one():
    images = SpacesEnv(spaces.Box(0, 255, (36, 36, 3), np.uint8), spaces.Box(-1, 1, (2,)))
    for page, cls in CLASSES.items():
        listed = "`CnnPolicy`" in (PAGES / page).read_text().split("## Notes")[0]
        small = {**SMALL, "policy_kwargs": dict(net_arch=[8], features_extractor_kwargs=dict(features_dim=8))}
        assert _builds(lambda cls=cls, small=small: cls("CnnPolicy", DummyVecEnv([lambda: images]), **small)) == listed, page


@pytest.mark.parametrize("page", CLASSES)
def test_the_pages_example_runs(page, tmp_path, monkeypatch):
    """Each page's Python example, as printed, with its 10,000-step budget cut to 300 (a few seconds)."""
    (example,) = re.findall(r"```python\n(.*?)```", (PAGES / page).read_text(), re.DOTALL)
    assert example.count("total_timesteps=10_000") == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(example.replace("total_timesteps=10_000", "total_timesteps=300"), page, "exec"), {})
    assert list(tmp_path.glob("*.zip"))  # each example saves a model

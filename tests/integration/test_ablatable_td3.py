"""Behaviour of the switches, policies, spaces, save/load and bad input (short runs, small nets)."""

import inspect
import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import FakeImageEnv
from stable_baselines3.common.logger import KVWriter, Logger
from stable_baselines3.common.noise import NormalActionNoise

from sb3_ablation import DDPG, SWITCHES, AblatableTD3
from sb3_ablation.batched import BatchedTD3
from sb3_ablation.batched import update as batched_update
from sb3_ablation.common.training_stats import DIAGNOSTIC_NAME
from sb3_ablation.switches import TABLE
from sb3_ablation.td3.policies import GaussianActor

SMALL = dict(learning_starts=50, batch_size=16, buffer_size=1_000, policy_kwargs=dict(net_arch=[16, 16]), seed=0)
ALL_OFF = {name: False for name in SWITCHES}


class DictObsPendulum(gym.ObservationWrapper):
    """Pendulum with its observation split into a Dict of two Boxes."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.observation_space = spaces.Dict(
            {
                "angle": spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32),
                "velocity": spaces.Box(-8.0, 8.0, shape=(1,), dtype=np.float32),
            }
        )

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        return {"angle": observation[:2], "velocity": observation[2:]}


def test_every_switch_off_at_once_trains():
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", **ALL_OFF, **{**SMALL, "batch_size": 1, "buffer_size": 1})
    before = [p.clone() for p in model.actor.parameters()]
    model.learn(150)
    assert model.switches == ALL_OFF
    assert isinstance(model.actor, GaussianActor)
    assert model.actor_target is None and model.critic_target is None
    assert model.critic.n_critics == 1
    assert model.replay_buffer.buffer_size == 1
    assert model._n_updates == 100
    assert not any(th.equal(b, p) for b, p in zip(before, model.actor.parameters(), strict=True))


def test_switches_are_attributes_saved_and_loaded(tmp_path):
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", clipped_double_q=False, target_networks=False, **SMALL)
    assert model.clipped_double_q is False and model.target_networks is False and model.delayed_policy_update is True
    model.learn(80)
    model.save(tmp_path / "model")
    loaded = AblatableTD3.load(tmp_path / "model")
    assert loaded.switches == model.switches
    assert loaded.clipped_double_q is False and loaded.target_networks is False
    assert loaded.critic.n_critics == 1 and loaded.actor_target is None
    for ours, theirs in zip(model.policy.parameters(), loaded.policy.parameters(), strict=True):
        assert th.equal(ours, theirs)
    obs = np.zeros((3,), dtype=np.float32)
    assert np.array_equal(model.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0])


def test_delayed_policy_update_sets_actor_update_rate():
    delayed = AblatableTD3("MlpPolicy", "Pendulum-v1", policy_delay=3, **SMALL)
    every_step = AblatableTD3("MlpPolicy", "Pendulum-v1", delayed_policy_update=False, **SMALL)
    for model in (delayed, every_step):
        model.learn(50 + 30)
    # The actor's Adam counts its own steps
    actor_steps = [next(iter(m.actor.optimizer.state.values()))["step"].item() for m in (delayed, every_step)]
    assert actor_steps == [10, 30]


def test_stochastic_actor_bounds_gradients_and_determinism():
    with pytest.warns(UserWarning, match="action_noise"):
        model = AblatableTD3(
            "MlpPolicy",
            "Pendulum-v1",
            deterministic_policy=False,
            action_noise=NormalActionNoise(np.zeros(1), np.ones(1)),
            **SMALL,
        )
    assert model.action_noise is None
    obs = th.as_tensor(np.random.default_rng(0).uniform(-1, 1, size=(64, 3)), dtype=th.float32)
    sampled = model.actor(obs)
    assert sampled.shape == (64, 1) and bool((sampled.abs() <= 1).all())
    assert not th.equal(sampled, model.actor(obs)), "sampling twice gives the same actions"
    # The actor loss reaches every actor parameter through the reparameterized sample
    model.actor.optimizer.zero_grad()
    (-model.critic.q1_forward(obs, model.actor(obs)).mean()).backward()
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in model.actor.parameters())
    single = obs[0].numpy()
    first = model.predict(single, deterministic=True)[0]
    assert np.array_equal(first, model.predict(single, deterministic=True)[0])
    assert model.action_space.contains(first)
    assert not np.array_equal(first, model.predict(single, deterministic=False)[0])


def test_vec_env_with_several_envs():
    env = make_vec_env("Pendulum-v1", n_envs=3, seed=0)
    model = AblatableTD3("MlpPolicy", env, **SMALL).learn(120)
    assert model.n_envs == 3 and model.num_timesteps == 120
    no_replay = AblatableTD3("MlpPolicy", env, replay_buffer=False, **{**SMALL, "buffer_size": 3, "batch_size": 1})
    no_replay.learn(90)
    assert no_replay.replay_buffer.buffer_size == 1 and no_replay.replay_buffer.n_envs == 3


@pytest.mark.parametrize("algo_class", [AblatableTD3, DDPG])
def test_dict_observations(algo_class):
    env = DictObsPendulum(gym.make("Pendulum-v1"))
    model = algo_class("MultiInputPolicy", env, **SMALL)
    critic_before = [p.clone() for p in model.critic.parameters()]
    model.learn(70)
    assert model._n_updates == 20
    assert not th.equal(critic_before[0], next(model.critic.parameters()))


def test_image_observations():
    env = FakeImageEnv(screen_height=40, screen_width=40, n_channels=1, discrete=False)
    model = AblatableTD3(
        "CnnPolicy",
        env,
        **{**SMALL, "buffer_size": 200, "policy_kwargs": dict(features_extractor_kwargs=dict(features_dim=16))},
    )
    model.learn(60)
    assert model._n_updates == 10
    assert model.predict(env.observation_space.sample(), deterministic=True)[0].shape == env.action_space.shape


def test_ignored_hyperparameters_warn():
    with pytest.warns(UserWarning, match="policy_delay=3 is ignored because delayed_policy_update=False"):
        AblatableTD3("MlpPolicy", "Pendulum-v1", delayed_policy_update=False, policy_delay=3)
    with pytest.warns(UserWarning, match="target_policy_noise=0.3 is ignored"):
        AblatableTD3("MlpPolicy", "Pendulum-v1", target_policy_smoothing=False, target_policy_noise=0.3)
    with pytest.warns(UserWarning, match="n_critics=3 is ignored"):
        AblatableTD3("MlpPolicy", "Pendulum-v1", clipped_double_q=False, policy_kwargs=dict(n_critics=3))


@pytest.mark.parametrize("env_id, space_name", [("CartPole-v1", "Discrete"), ("MultiDiscreteEnv", "MultiDiscrete")])
@pytest.mark.parametrize("algo_class", [AblatableTD3, DDPG])
def test_discrete_action_space_is_refused(algo_class, env_id, space_name):
    if env_id == "MultiDiscreteEnv":
        from stable_baselines3.common.envs import IdentityEnvMultiDiscrete

        env = IdentityEnvMultiDiscrete(dim=2)
    else:
        env = gym.make(env_id)
    with pytest.raises(ValueError, match=rf"needs a continuous action space \(gymnasium.spaces.Box\).*{space_name}"):
        algo_class("MlpPolicy", env)


def test_misspelt_switch_names_the_closest():
    with pytest.raises(TypeError, match="unknown keyword argument 'clipped_dobule_q'; did you mean 'clipped_double_q'"):
        AblatableTD3("MlpPolicy", "Pendulum-v1", clipped_dobule_q=False)


@pytest.mark.parametrize("value", ["False", 0, None])
def test_non_bool_switch_is_refused(value):
    with pytest.raises(TypeError, match=f"switch target_networks must be True or False, got {value!r}"):
        AblatableTD3("MlpPolicy", "Pendulum-v1", target_networks=value)


@pytest.mark.parametrize(
    "action_noise, expected_std",
    [(None, 0.1), (NormalActionNoise(np.zeros(1), np.full(1, 0.3)), 0.3)],
    ids=["default", "from_action_noise"],
)
def test_gaussian_actor_starts_with_the_exploration_std(action_noise, expected_std):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # action_noise is not added with deterministic_policy=False
        model = AblatableTD3("MlpPolicy", "Pendulum-v1", deterministic_policy=False, action_noise=action_noise, **SMALL)
    obs = th.as_tensor(np.random.default_rng(0).uniform(-8, 8, size=(256, 3)), dtype=th.float32)
    for actor in (model.actor, model.actor_target):
        _, log_std = actor.get_action_dist_params(obs)
        # The same std in every state, as the docstring says
        assert th.allclose(log_std.exp(), th.full((256, 1), expected_std))
    # The samples spread like TD3's noise around the actor's mean (tanh is nearly linear near 0)
    spread = (model.actor(obs) - model.actor(obs, deterministic=True)).std().item()
    assert 0.5 * expected_std < spread < 1.5 * expected_std


def test_gaussian_actor_rejects_a_non_positive_std():
    with pytest.raises(ValueError, match=r"initial_std of the Gaussian actor must be positive, got 0\.0"):
        AblatableTD3("MlpPolicy", "Pendulum-v1", deterministic_policy=False, policy_kwargs=dict(actor_initial_std=0.0))


class KeepTrainValues(KVWriter):
    """A logger output that keeps every value logged under train/, one list per key."""

    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}

    def write(self, key_values, key_excluded, step=0) -> None:
        for key, value in key_values.items():
            if key.startswith("train/"):
                self.values.setdefault(key, []).append(value)


@pytest.mark.parametrize("algo_class", [AblatableTD3, DDPG])
def test_training_diagnostics_are_logged(algo_class):
    model = algo_class("MlpPolicy", "Pendulum-v1", **SMALL)
    output = KeepTrainValues()
    model.set_logger(Logger(folder=None, output_formats=[output]))
    model.learn(120)
    model.logger.dump()
    n_critics = model.critic.n_critics
    keys = {f"train/q{i + 1}_mean" for i in range(n_critics)} | {"train/target_q_mean", "train/td_error"}
    if n_critics >= 2:
        keys.add("train/twin_q_gap")
    assert keys <= output.values.keys() and "train/actor_std" not in output.values
    assert all(np.isfinite(output.values[key]).all() for key in keys)


def test_training_diagnostics_are_the_batch_means():
    # One train() call of one gradient step: the logged values are those of its batch, recomputed here
    switches = dict(
        deterministic_policy=False,
        target_policy_smoothing=False,  # a target without random noise, to recompute it
        delayed_policy_update=False,
    )
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", **switches, **SMALL).learn(60)
    output = KeepTrainValues()
    model.set_logger(Logger(folder=None, output_formats=[output]))
    before = AblatableTD3("MlpPolicy", "Pendulum-v1", **switches, **SMALL)
    before.policy.load_state_dict(model.policy.state_dict())
    actor, critic, actor_target, critic_target = before.actor, before.critic, before.actor_target, before.critic_target
    np.random.seed(1)
    batch = model.replay_buffer.sample(16)
    np.random.seed(1)
    th.manual_seed(2)  # the same sample of the Gaussian target actor
    model.train(gradient_steps=1, batch_size=16)
    model.logger.dump()
    logged = {key: values[-1] for key, values in output.values.items()}
    with th.no_grad():
        q1, q2 = critic(batch.observations, batch.actions)
        th.manual_seed(2)
        next_actions = actor_target(batch.next_observations)
        next_q = th.min(*critic_target(batch.next_observations, next_actions))
        target = batch.rewards + (1 - batch.dones) * model.gamma * next_q
        _, log_std = actor.get_action_dist_params(batch.observations)
    expected = {
        "train/q1_mean": q1.mean(),
        "train/q2_mean": q2.mean(),
        "train/twin_q_gap": (q1 - q2).abs().mean(),
        "train/target_q_mean": target.mean(),
        "train/td_error": (q1 - target).abs().mean(),
        "train/actor_std": log_std.exp().mean(),
    }
    for key, value in expected.items():
        assert logged[key] == pytest.approx(value.item(), rel=1e-5), key
    # the model keeps them as data: exactly the values logged, each name a diagnostic's
    assert model.training_diagnostics == {key.removeprefix("train/"): logged[key] for key in expected}
    assert all(DIAGNOSTIC_NAME.match(key) for key in model.training_diagnostics)


def test_load_refusals_and_warnings_come_from_the_switch_table(tmp_path):
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", **SMALL)
    model.save(tmp_path / "model")
    for switch in TABLE:
        if switch.changeable_on_load:
            assert AblatableTD3.load(tmp_path / "model", **{switch.name: False}).switches[switch.name] is False
        else:
            with pytest.raises(ValueError, match=re.escape(switch.load_refusal)):
                AblatableTD3.load(tmp_path / "model", **{switch.name: False})
    with pytest.raises(AttributeError, match="clipped_double_q is set by"):
        model.clipped_double_q = False


def test_every_switch_of_the_table_is_a_documented_keyword_with_its_default():
    # a seventh switch is a table row, this keyword (SB3's explicit signature) and its branch in train()
    parameters = inspect.signature(AblatableTD3.__init__).parameters
    switch_keywords = [name for name in parameters if isinstance(parameters[name].default, bool) and name in SWITCHES]
    assert switch_keywords == [switch.name for switch in TABLE]
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", **SMALL)
    for switch in TABLE:
        assert parameters[switch.name].default is switch.default
        assert f":param {switch.name}: ({switch.component})" in AblatableTD3.__doc__
        assert model.switches[switch.name] is switch.default
    source = inspect.getsource(AblatableTD3.train)
    # each component is one marked branch of train()
    assert sorted(int(n) for n in re.findall(r"Component (\d)", source)) == [switch.component for switch in TABLE]


def test_the_batched_engine_implements_every_switch_of_the_table(monkeypatch):
    # a seventh switch fails here until BatchedTD3 (the default engine on CUDA) declares it and its train() handles it
    assert BatchedTD3.implemented_switches == SWITCHES
    source = inspect.getsource(BatchedTD3.train) + inspect.getsource(batched_update.UpdateStep)
    assert sorted({int(n) for n in re.findall(r"Component (\d)", source)}) == [switch.component for switch in TABLE]
    # a switch it does not implement is refused when off, in one line
    monkeypatch.setattr(BatchedTD3, "implemented_switches", SWITCHES[1:])
    with pytest.raises(ValueError, match=f"BatchedTD3 does not implement the switch {SWITCHES[0]}: leave it at its"):
        BatchedTD3("MlpPolicy", "Pendulum-v1", **{SWITCHES[0]: False}, **SMALL)

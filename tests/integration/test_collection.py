"""The lean collection step is bit-exact with SB3's: same actions, same buffer, same random draws, same weights."""

import numpy as np
import stable_baselines3 as sb3
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.noise import NormalActionNoise

from sb3_ablation import AblatableTD3
from sb3_ablation.ddpg.policies import DDPGPolicy


class RecordActions(BaseCallback):
    """Keeps the actions sent to the env at each step (callbacks see collect_rollouts' locals)."""

    def __init__(self):
        super().__init__()
        self.actions = []

    def _on_step(self) -> bool:
        self.actions.append(self.locals["actions"].copy())
        return True


def learn(algo_class: type):
    """Two envs, so that episodes end (200 steps) while learning and terminal observations are stored."""
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    model = algo_class(
        "MlpPolicy",
        env,
        learning_starts=60,
        batch_size=32,
        buffer_size=300,  # wraps around during the run
        policy_kwargs=dict(net_arch=[32]),
        action_noise=NormalActionNoise(np.zeros(1), 0.1 * np.ones(1)),
        seed=0,
    )
    callback = RecordActions()
    model.learn(500, callback=callback)
    return model, callback.actions, np.random.get_state(), th.get_rng_state()


def test_lean_collection_equals_sb3_collection():
    ours, our_actions, our_numpy_state, our_torch_state = learn(AblatableTD3)
    reference, reference_actions, reference_numpy_state, reference_torch_state = learn(sb3.TD3)
    # the lean path was taken
    assert ours._lean_observations and ours.policy._training_flag_modules is not None
    assert len(our_actions) == len(reference_actions) == 250
    assert all(np.array_equal(a, b) for a, b in zip(our_actions, reference_actions, strict=True))
    assert ours.replay_buffer.full and np.array_equal(ours.replay_buffer.timeouts, reference.replay_buffer.timeouts)
    assert ours.replay_buffer.timeouts.any()  # episode ends were stored
    for field in ("observations", "next_observations", "actions", "rewards", "dones"):
        assert np.array_equal(getattr(ours.replay_buffer, field), getattr(reference.replay_buffer, field)), field
    # the same random draws: NumPy's global generator (noise, sampling) and torch's end in the same state
    assert all(np.array_equal(a, b) for a, b in zip(our_numpy_state, reference_numpy_state, strict=True))
    assert th.equal(our_torch_state, reference_torch_state)
    for ours_param, reference_param in zip(ours.policy.parameters(), reference.policy.parameters(), strict=True):
        assert th.equal(ours_param, reference_param)
    assert ours._episode_num == reference._episode_num == 2


def test_training_mode_switch_sets_every_online_module():
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(net_arch=[8]))
    assert type(model.policy).set_training_mode is DDPGPolicy.set_training_mode  # the class's method, not patched
    assert model.policy._training_flag_modules is not None  # the direct path is taken
    for mode in (True, False, True):
        model.policy.set_training_mode(mode)
        assert model.policy.training is mode
        assert all(module.training is mode for module in [*model.actor.modules(), *model.critic.modules()])
    # target networks are never trained: they stay in evaluation mode
    assert not any(module.training for module in [*model.actor_target.modules(), *model.critic_target.modules()])


def test_training_mode_walks_modules_that_override_train():
    class CountingReLU(th.nn.ReLU):
        calls = 0

        def train(self, mode: bool = True):
            CountingReLU.calls += 1
            return super().train(mode)

    model = AblatableTD3("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(net_arch=[8], activation_fn=CountingReLU))
    assert model.policy._training_flag_modules is None
    CountingReLU.calls = 0
    model.policy.set_training_mode(False)
    n_relus = sum(isinstance(module, CountingReLU) for network in (model.actor, model.critic) for module in network.modules())
    assert n_relus == 3 and CountingReLU.calls == n_relus  # the actor's, then each critic's: nn.Module.train's walk
    assert not model.actor.training and not model.critic.training

"""Exact parity with SB3: same seed and hyperparameters give bit-identical networks after training (500 steps: two
and a half episodes, 400 updates, every branch of collection and update; SB3's default TD3 and DDPG trained once each
and shared by the tests that compare with them)."""

import functools

import numpy as np
import pytest
import stable_baselines3 as sb3
import torch as th
from stable_baselines3.common.noise import NormalActionNoise

from sb3_ablation import DDPG, AblatableTD3

N_TIMESTEPS = 500
COMMON = dict(learning_starts=100, batch_size=32, seed=0, buffer_size=5_000)


def train(algo_class: type, **kwargs) -> sb3.common.off_policy_algorithm.OffPolicyAlgorithm:
    """Build and train one model; each model is seeded and trained on its own (NumPy's global RNG is shared)."""
    policy_kwargs = dict(net_arch=[32, 32], **kwargs.pop("policy_kwargs", {}))
    model = algo_class(
        "MlpPolicy",
        "Pendulum-v1",
        action_noise=NormalActionNoise(np.zeros(1), 0.1 * np.ones(1)),
        policy_kwargs=policy_kwargs,
        **{**COMMON, **kwargs},
    )
    return model.learn(N_TIMESTEPS)


@functools.cache
def sb3_default(algo_class: type) -> sb3.common.off_policy_algorithm.OffPolicyAlgorithm:
    """SB3's ``algo_class`` with the default settings of :func:`train`, trained once (the tests only read it)."""
    return train(algo_class)


def assert_same_training(ours, reference) -> None:
    """Same transitions collected, same number of updates, and bit-identical networks (targets too, where kept)."""
    assert ours._n_updates == reference._n_updates
    for name in ("observations", "actions", "rewards", "next_observations", "dones"):
        assert np.array_equal(getattr(ours.replay_buffer, name), getattr(reference.replay_buffer, name)), name
    networks = ["actor", "critic"]
    if ours.actor_target is not None:
        networks += ["actor_target", "critic_target"]
    for network in networks:
        ours_params = dict(getattr(ours, network).named_parameters())
        reference_params = dict(getattr(reference, network).named_parameters())
        assert ours_params.keys() == reference_params.keys(), network
        for name, param in ours_params.items():
            assert th.equal(param, reference_params[name]), f"{network}.{name}"


def test_parity_catches_a_difference():
    # The comparison itself must be able to fail: a different tau gives different targets
    with pytest.raises(AssertionError):
        assert_same_training(train(AblatableTD3, tau=0.01), sb3_default(sb3.TD3))


def test_td3_equals_sb3_td3():
    assert_same_training(train(AblatableTD3), sb3_default(sb3.TD3))


def test_ddpg_equals_sb3_ddpg():
    assert_same_training(train(DDPG), sb3_default(sb3.DDPG))


def test_td3_without_its_three_tricks_equals_sb3_ddpg():
    ours = train(AblatableTD3, clipped_double_q=False, target_policy_smoothing=False, delayed_policy_update=False)
    assert_same_training(ours, sb3_default(sb3.DDPG))


@pytest.mark.parametrize(
    "switches, sb3_kwargs",
    [
        (dict(replay_buffer=False), dict(buffer_size=1, batch_size=1)),
        (dict(target_policy_smoothing=False), dict(target_policy_noise=0.0)),
        (dict(delayed_policy_update=False), dict(policy_delay=1)),
        (dict(clipped_double_q=False), dict(policy_kwargs=dict(n_critics=1))),
        (dict(target_networks=False, delayed_policy_update=False), dict(tau=1.0, policy_delay=1)),
    ],
    ids=["replay_buffer", "target_policy_smoothing", "delayed_policy_update", "clipped_double_q", "target_networks"],
)
def test_switch_off_equals_sb3_td3_setting(switches, sb3_kwargs):
    ours = train(AblatableTD3, **switches)
    reference = train(sb3.TD3, **sb3_kwargs)
    if switches.get("target_networks") is False:
        # SB3 keeps exact copies (tau=1): compare our online networks with them too
        assert ours.actor_target is None and ours.critic_target is None
        for ours_param, copy_param in zip(ours.critic.parameters(), reference.critic_target.parameters(), strict=True):
            assert th.equal(ours_param, copy_param)
    assert_same_training(ours, reference)

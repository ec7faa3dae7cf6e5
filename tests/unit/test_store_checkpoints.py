"""A checkpoint's replay buffer: its filled rows only, restored bit for bit into a fresh preallocated buffer."""

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer

from sb3_ablation.batched.batched_td3 import AgentReplayBuffer
from sb3_ablation.batched.device_buffer import DeviceAgentReplayBuffer
from sb3_ablation.common.buffers import FastReplayBuffer
from sb3_ablation.study.store.checkpoints import filled_rows, restore_replay_buffer, save_replay_buffer

BOX = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACTIONS = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def filled(buffer, steps: int, seed: int = 0):
    """``buffer`` after ``steps`` random transitions of its envs."""
    rng = np.random.default_rng(seed)
    n = buffer.n_envs

    def obs():
        if isinstance(buffer.observation_space, gym.spaces.Dict):
            return {
                key: rng.normal(size=(n, *space.shape)).astype(np.float32) for key, space in buffer.observation_space.items()
            }
        return rng.normal(size=(n, *buffer.observation_space.shape)).astype(np.float32)

    for _ in range(steps):
        done = rng.random(n) < 0.05
        infos = [{"TimeLimit.truncated": bool(rng.random() < 0.5)} for _ in range(n)]
        buffer.add(obs(), obs(), rng.normal(size=(n, 2)).astype(np.float32), rng.normal(size=n), done, infos)
    return buffer


def assert_same_buffer(a, b):
    assert (a.pos, a.full) == (b.pos, b.full)
    for name in ("observations", "next_observations", "actions", "rewards", "dones", "timeouts"):
        if not hasattr(a, name):  # (the memory-efficient buffer keeps no next observations)
            continue
        x, y = getattr(a, name), getattr(b, name)
        for key in x if isinstance(x, dict) else [None]:
            left, right = (x, y) if key is None else (x[key], y[key])
            assert left.dtype == right.dtype and np.array_equal(left, right), (name, key)


@pytest.mark.parametrize(
    ("make", "steps"),
    [
        (lambda: ReplayBuffer(1000, BOX, ACTIONS), 37),
        (lambda: FastReplayBuffer(1000, BOX, ACTIONS, n_envs=2), 1),
        (lambda: ReplayBuffer(100, BOX, ACTIONS), 130),  # full: it wrapped around
        (lambda: ReplayBuffer(100, BOX, ACTIONS), 99),  # one short of full
        # the memory-efficient buffer: the last next observation in the row at the write position
        (lambda: ReplayBuffer(1000, BOX, ACTIONS, optimize_memory_usage=True, handle_timeout_termination=False), 37),
        (lambda: DictReplayBuffer(1000, gym.spaces.Dict({"a": BOX, "b": ACTIONS}), ACTIONS, n_envs=2), 21),
        (lambda: AgentReplayBuffer(3000, BOX, ACTIONS, n_envs=3), 50),  # a batched group: one column per agent
        (lambda: DeviceAgentReplayBuffer(3000, BOX, ACTIONS, n_envs=3), 50),  # (its mirror: test_device_buffer.py)
    ],
)
def test_a_restored_buffer_is_the_saved_one_bit_for_bit(tmp_path, make, steps):
    saved = filled(make(), steps)
    save_replay_buffer(saved, tmp_path / "buffer.pkl.gz")
    restored = make()
    restore_replay_buffer(restored, tmp_path / "buffer.pkl.gz")
    assert_same_buffer(restored, saved)
    assert type(restored) is type(saved)
    # the restored buffer goes on exactly as the saved one
    assert_same_buffer(filled(restored, 10, seed=1), filled(saved, 10, seed=1))


def test_a_buffer_is_saved_as_its_filled_rows():
    buffer = filled(ReplayBuffer(1000, BOX, ACTIONS), 37)
    assert filled_rows(buffer) == 38  # the rows written and the one at the write position
    assert filled_rows(filled(ReplayBuffer(100, BOX, ACTIONS), 130)) == 100


def test_a_large_preallocated_buffer_is_saved_small(tmp_path):
    big = gym.spaces.Box(-1.0, 1.0, (100,), np.float32)
    buffer = ReplayBuffer(200_000, big, ACTIONS, n_envs=2)
    for index in range(50):
        obs = np.full((2, 100), index, np.float32)
        buffer.add(obs, obs, np.zeros((2, 2), np.float32), np.ones(2), np.zeros(2), [{}, {}])
    path = tmp_path / "buffer.pkl.gz"
    save_replay_buffer(buffer, path)
    # the whole buffer would take 2 x 200,000 x 2 x 100 float32 = 320 MB
    assert path.stat().st_size < 100_000


def test_a_buffer_is_restored_into_a_fresh_one_of_the_same_settings_only(tmp_path):
    path = tmp_path / "buffer.pkl.gz"
    save_replay_buffer(filled(ReplayBuffer(1000, BOX, ACTIONS), 10), path)
    with pytest.raises(ValueError, match="fresh"):
        restore_replay_buffer(filled(ReplayBuffer(1000, BOX, ACTIONS), 1), path)
    with pytest.raises(ValueError, match="other settings: buffer_size"):
        restore_replay_buffer(ReplayBuffer(500, BOX, ACTIONS), path)
    with pytest.raises(ValueError, match="other settings"):
        restore_replay_buffer(ReplayBuffer(1000, gym.spaces.Box(-1.0, 1.0, (4,), np.float32), ACTIONS), path)
    untouched = ReplayBuffer(2000, BOX, ACTIONS, n_envs=2)  # (the constructor divides the size by n_envs)
    with pytest.raises(ValueError, match="other settings: n_envs"):
        restore_replay_buffer(untouched, path)
    assert untouched.pos == 0 and not untouched.observations.any()  # restored whole or not at all

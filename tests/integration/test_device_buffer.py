"""The agents' replay buffer gathered on the model's device (DeviceAgentReplayBuffer): the same batches, records and
weights as the host buffer's, through adds that wrap around, checkpoints and SB3's save and load."""

import gzip
import pickle
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.noise import NormalActionNoise

from sb3_ablation.batched import AgentReplayBuffer, BatchedTD3, DeviceAgentReplayBuffer
from sb3_ablation.study.store.checkpoints import restore_replay_buffer, save_replay_buffer

SMALL = dict(learning_starts=50, batch_size=16, policy_kwargs=dict(net_arch=[8, 8]))
SAMPLE_FIELDS = ("observations", "actions", "next_observations", "dones", "rewards")
# agents that differ in every mixable switch: twin and single critics, with and without target networks, smoothing and
# delays, deterministic and Gaussian actors
MIXED = [
    {},
    {"clipped_double_q": False},
    {"target_networks": False},
    {"deterministic_policy": False},
    {"delayed_policy_update": False, "target_policy_smoothing": False},
]
CUDA = pytest.mark.skipif(not th.cuda.is_available(), reason="needs a CUDA device")


def mixed_group(replay_on_device: bool | None, device: str = "cpu", replay_buffer: bool = True) -> BatchedTD3:
    env = make_vec_env("Pendulum-v1", n_envs=len(MIXED), seed=0)
    noise = NormalActionNoise(np.zeros(1), 0.1 * np.ones(1))
    switches = [{**agent, "replay_buffer": replay_buffer} for agent in MIXED]  # (it shapes the whole group)
    settings = SMALL if replay_buffer else {key: value for key, value in SMALL.items() if key != "batch_size"}
    return BatchedTD3(
        "MlpPolicy", env, agent_switches=switches, seed=0, device=device, action_noise=noise,
        replay_on_device=replay_on_device, replay_buffer=replay_buffer, **settings,
    )  # fmt: skip


def assert_same_training(host: BatchedTD3, device: BatchedTD3) -> None:
    """Equal weights, Adam states, diagnostics and random streams (exactly)."""
    host_state, device_state = host.policy.state_dict(), device.policy.state_dict()
    assert host_state.keys() == device_state.keys()
    for key in host_state:
        assert th.equal(host_state[key], device_state[key]), key
    for network in ("actor", "critic"):
        host_adam, device_adam = (getattr(model, network).optimizer.state_dict()["state"] for model in (host, device))
        for index, tensors in host_adam.items():
            for name, value in tensors.items():
                assert th.equal(value.cpu(), device_adam[index][name].cpu()), (network, name)
    assert host.agent_diagnostics == device.agent_diagnostics
    assert all(diagnostics for diagnostics in host.agent_diagnostics)
    for host_stream, device_stream in zip(host.agent_streams, device.agent_streams, strict=True):
        assert th.equal(host_stream.torch.get_state(), device_stream.torch.get_state())
        assert np.array_equal(host_stream.numpy.get_state()[1], device_stream.numpy.get_state()[1])


@pytest.mark.parametrize("replay_buffer", [True, False])
def test_a_mixed_group_trains_the_same_with_its_batches_gathered_on_the_device(replay_buffer):
    # (without a replay buffer: one transition per agent, overwritten at every step, and batches of one)
    th.set_num_threads(1)
    host, device = (mixed_group(on, replay_buffer=replay_buffer) for on in (False, True))
    assert type(host.replay_buffer) is AgentReplayBuffer and type(device.replay_buffer) is DeviceAgentReplayBuffer
    assert host.stochastic_agents == device.stochastic_agents == [False, False, False, True, False]
    host.learn(150)  # (100 updates of every agent, the delayed ones' actors 50)
    device.learn(150)
    assert_same_training(host, device)
    assert device.replay_buffer._mirror is not None  # (the batches were gathered from the mirror)


@CUDA
def test_a_mixed_group_trains_the_same_with_its_batches_gathered_on_cuda_or_on_the_host():
    host, device = (mixed_group(on, device="cuda") for on in (False, None))
    assert type(device.replay_buffer) is DeviceAgentReplayBuffer  # (the default on a GPU)
    host.learn(300)
    device.learn(300)
    assert_same_training(host, device)
    assert device.replay_buffer._mirror["observations"].device.type == "cuda"


N_AGENTS, BUFFER_SIZE = 3, 7  # (per agent)
OBSERVATIONS, ACTIONS = spaces.Box(-1, 1, (2,), np.float32), spaces.Box(-1, 1, (1,), np.float32)


def agent_buffer(cls: type[AgentReplayBuffer]) -> AgentReplayBuffer:
    return cls(BUFFER_SIZE * N_AGENTS, OBSERVATIONS, ACTIONS, device="cpu", n_envs=N_AGENTS)


def add_transitions(buffers: list[AgentReplayBuffer], steps: int, seed: int = 0):
    """Add the same ``steps`` random transitions (with dones, some due to timeouts) to each buffer, yielding each step."""
    rng = np.random.default_rng(seed)
    for step in range(steps):
        transition = (
            rng.normal(size=(N_AGENTS, 2)).astype(np.float32),
            rng.normal(size=(N_AGENTS, 2)).astype(np.float32),
            rng.uniform(-1, 1, size=(N_AGENTS, 1)).astype(np.float32),
            rng.normal(size=N_AGENTS).astype(np.float32),
            rng.uniform(size=N_AGENTS) < 0.3,
            [{"TimeLimit.truncated": bool(flag)} for flag in rng.uniform(size=N_AGENTS) < 0.5],
        )
        for buffer in buffers:
            buffer.add(*transition)
        yield step


def filled_buffers(steps: int) -> tuple[AgentReplayBuffer, DeviceAgentReplayBuffer]:
    """A host buffer and a device buffer (on the CPU), given the same ``steps`` adds."""
    host, device = agent_buffer(AgentReplayBuffer), agent_buffer(DeviceAgentReplayBuffer)
    for _ in add_transitions([host, device], steps):
        pass
    return host, cast(DeviceAgentReplayBuffer, device)


def assert_same_samples(host: AgentReplayBuffer, device: AgentReplayBuffer, seed: int, batch_size: int = 8) -> None:
    """The same batches, field by field (values, dtypes, shapes), from the same agents' generators."""
    generators = [[np.random.RandomState(seed + agent) for agent in range(host.n_envs)] for _ in range(2)]
    host_batch, device_batch = (
        buffer.sample(batch_size, generators=own) for buffer, own in zip((host, device), generators, strict=True)
    )
    for name in SAMPLE_FIELDS:
        expected, actual = getattr(host_batch, name), getattr(device_batch, name)
        assert expected.dtype == actual.dtype and expected.shape == actual.shape == (
            host.n_envs,
            batch_size,
            *expected.shape[2:],
        )
        assert th.equal(expected, actual), name
    # (and the generators moved alike)
    assert all(np.array_equal(a.get_state()[1], b.get_state()[1]) for a, b in zip(*generators, strict=True))


def test_the_device_buffer_samples_the_host_buffers_batches_through_adds_that_wrap_around():
    host, device = agent_buffer(AgentReplayBuffer), agent_buffer(DeviceAgentReplayBuffer)
    sampled_after_wrap = False
    for step in add_transitions([host, device], steps=25):
        if step % 3 == 1:  # the mirror built at the first sample, then followed add by add (and across the wrap)
            assert_same_samples(host, device, seed=step)
            sampled_after_wrap |= host.full
    assert sampled_after_wrap and cast(DeviceAgentReplayBuffer, device)._mirrored_position == (device.pos, device.full)
    assert (device.dones * device.timeouts).any() and (device.dones * (1 - device.timeouts)).any()  # (both dones)
    # reset: the position moves without the mirror (the storage stays); the mirror is rebuilt at the next sample
    for buffer in (host, device):
        buffer.reset()
    for _ in add_transitions([host, device], steps=4, seed=1):
        pass
    assert_same_samples(host, device, seed=100)


def test_a_checkpoint_restored_into_a_fresh_device_buffer_samples_the_batches_of_the_buffer_saved(tmp_path):
    host, device = filled_buffers(steps=11)
    assert_same_samples(host, device, seed=0)  # (the mirror built: it is not saved)
    for saved, name in ((device, "device"), (host, "host")):
        save_replay_buffer(saved, tmp_path / f"{name}.pkl.gz")
    with gzip.open(tmp_path / "device.pkl.gz", "rb") as file:
        saved_device = pickle.load(file)
    with gzip.open(tmp_path / "host.pkl.gz", "rb") as file:
        saved_host = pickle.load(file)
    # the file of a device buffer is that of a host buffer: the same storage and attributes, no mirror
    assert saved_device["attributes"].keys() == saved_host["attributes"].keys()
    assert saved_device["storage"].keys() == saved_host["storage"].keys()
    for name in ("device", "host"):  # (either file restores into a device buffer)
        fresh = agent_buffer(DeviceAgentReplayBuffer)
        restore_replay_buffer(fresh, tmp_path / f"{name}.pkl.gz")
        assert (fresh.pos, fresh.full) == (device.pos, device.full)
        assert_same_samples(device, fresh, seed=1)
        assert_same_samples(host, fresh, seed=2)


def test_sb3_saves_and_loads_a_group_with_its_device_buffer(tmp_path):
    th.set_num_threads(1)
    model = mixed_group(replay_on_device=True)
    model.learn(60)
    model.save(tmp_path / "group.zip")
    model.save_replay_buffer(tmp_path / "buffer.pkl")
    env = make_vec_env("Pendulum-v1", n_envs=len(MIXED), seed=0)
    loaded = BatchedTD3.load(tmp_path / "group.zip", env=env)
    assert loaded.replay_on_device is True and type(loaded.replay_buffer) is DeviceAgentReplayBuffer
    assert loaded.stochastic_agents == model.stochastic_agents and loaded.agent_switches == model.agent_switches
    for key, value in model.policy.state_dict().items():
        assert th.equal(value, loaded.policy.state_dict()[key]), key
    loaded.load_replay_buffer(tmp_path / "buffer.pkl")
    assert type(loaded.replay_buffer) is DeviceAgentReplayBuffer and loaded.replay_buffer._mirror is None  # not pickled
    assert_same_samples(model.replay_buffer, loaded.replay_buffer, seed=3)
    # the setting is the model's: loaded with the host buffer, the same file gathers on the host
    on_host = BatchedTD3.load(tmp_path / "group.zip", env=env, replay_on_device=None)
    assert on_host.replay_on_device is None and type(on_host.replay_buffer) is AgentReplayBuffer
    on_host.load_replay_buffer(tmp_path / "buffer.pkl")
    assert type(on_host.replay_buffer) is AgentReplayBuffer
    assert_same_samples(model.replay_buffer, on_host.replay_buffer, seed=4)
    on_host.learn(20)  # (and it trains)


def test_a_bad_replay_on_device_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"replay_on_device is True, False or None .*got 'yes'$") as error:
        mixed_group(replay_on_device="yes")
    assert "\n" not in str(error.value)


def test_a_group_whose_random_streams_are_on_another_device_type_is_refused_training_in_one_line():
    # (a group saved on a GPU and loaded on the CPU: its generators' states are CUDA's, which a CPU generator cannot
    # continue; a stand-in generator with a CUDA device here, without a GPU)
    model = mixed_group(replay_on_device=None)
    model.agent_streams[2].torch = SimpleNamespace(device=th.device("cuda", 0))
    with pytest.raises(ValueError, match=r"random streams are on cuda:0, the model on cpu: .*device='cuda'$") as error:
        model.learn(10)
    assert "\n" not in str(error.value) and model.num_timesteps == 0

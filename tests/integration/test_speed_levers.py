"""The bit-exact speed levers of the default mode, each checked against the PyTorch/SB3 code it replaces."""

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.logger import configure
from stable_baselines3.common.utils import polyak_update

from sb3_ablation import AblatableTD3
from sb3_ablation.common.batched_critic import BatchedContinuousCritic
from sb3_ablation.common.buffers import FastReplayBuffer
from sb3_ablation.common.optim import FlatAdam, FlatParameters
from sb3_ablation.common.utils import foreach_polyak_update

SHAPES = [(64, 4), (64,), (64, 64), (64,), (1, 64), (1,), (7, 3)]


def make_params(seed: int) -> list[th.nn.Parameter]:
    generator = th.Generator().manual_seed(seed)
    return [th.nn.Parameter(th.randn(shape, generator=generator)) for shape in SHAPES]


def test_flat_parameters_are_aligned_views_with_gradients():
    params = make_params(0)
    values = [p.detach().clone() for p in params]
    flat = FlatParameters(params)
    for param, value in zip(params, values, strict=True):
        assert th.equal(param, value)
        assert param.data_ptr() % 64 == 0
        assert param.grad is not None and param.grad.data_ptr() % 64 == 0
    params[2].data.add_(1.0)  # a write through the view reaches the buffer
    assert th.isclose(flat.flat.data.sum(), sum(value.sum() for value in values) + params[2].numel())
    params[0].grad = None
    flat.zero_grad()
    assert params[0].grad is not None and not params[0].grad.any()


@pytest.mark.parametrize("fused", [False, True], ids=["exact", "fused"])
def test_flat_adam_equals_torch_adam_per_tensor(fused, monkeypatch):
    """
    Exactly PyTorch's Adam over the separate tensors; with ``fused=True`` (the speed mode), PyTorch's fused Adam up to
    rounding (its vectorized loop and scalar tail split the flat buffer and the separate tensors differently).
    """

    def assert_same(ours: th.Tensor, theirs: th.Tensor, name: object) -> None:
        if fused:
            th.testing.assert_close(ours, theirs, msg=str(name))
        else:
            assert th.equal(ours, theirs), name

    options = {"fused": True} if fused else {}
    fused_kernel, fused_steps = th._fused_adam_, []
    monkeypatch.setattr(th, "_fused_adam_", lambda *args, **kwargs: fused_steps.append(1) or fused_kernel(*args, **kwargs))
    reference, ours = make_params(1), make_params(1)
    reference_optimizer = th.optim.Adam(reference, lr=1e-3, **options)
    optimizer = FlatAdam(ours, lr=1e-3, **options)
    generator = th.Generator().manual_seed(2)
    for _ in range(20):
        grads = [
            th.randn(shape, generator=generator) * 10.0 ** int(th.randint(-6, 3, (), generator=generator)) for shape in SHAPES
        ]
        reference_optimizer.zero_grad()
        optimizer.zero_grad()
        for ref_param, our_param, grad in zip(reference, ours, grads, strict=True):
            ref_param.grad = grad.clone()
            our_param.grad.add_(grad)
        reference_optimizer.step()
        optimizer.step()
    for index, (ref_param, our_param) in enumerate(zip(reference, ours, strict=True)):
        assert_same(our_param, ref_param, index)
    assert not th.equal(reference[0], make_params(1)[0])  # the parameters did move
    assert len(fused_steps) == (40 if fused else 0)  # both optimizers took the fused kernel, or neither
    # The state is PyTorch's per-parameter one, moments and step equal
    reference_state, our_state = reference_optimizer.state_dict(), optimizer.state_dict()
    assert our_state["param_groups"] == reference_state["param_groups"]
    assert our_state["param_groups"][0]["fused"] is (True if fused else None)
    assert our_state["state"].keys() == reference_state["state"].keys()
    for index, state in reference_state["state"].items():
        assert state.keys() == our_state["state"][index].keys()
        for key, value in state.items():
            assert_same(our_state["state"][index][key], value, (index, key))


def test_flat_adam_loads_torch_adams_state_and_continues_identically():
    reference, ours = make_params(1), make_params(1)
    reference_optimizer, optimizer = th.optim.Adam(reference, lr=1e-3), FlatAdam(ours, lr=1e-3)
    generator = th.Generator().manual_seed(5)

    def step(params, optimizer_, grads):
        optimizer_.zero_grad()
        for param, grad in zip(params, grads, strict=True):
            if param.grad is None:
                param.grad = grad.clone()
            else:
                param.grad.copy_(grad)
        optimizer_.step()

    for _ in range(3):
        step(reference, reference_optimizer, [th.randn(shape, generator=generator) for shape in SHAPES])
    optimizer.load_state_dict(reference_optimizer.state_dict())
    with th.no_grad():
        for ref_param, our_param in zip(reference, ours, strict=True):
            our_param.copy_(ref_param)
    for _ in range(3):
        grads = [th.randn(shape, generator=generator) for shape in SHAPES]
        step(reference, reference_optimizer, grads)
        step(ours, optimizer, grads)
    for ref_param, our_param in zip(reference, ours, strict=True):
        assert th.equal(ref_param, our_param)
    # And back: torch's Adam takes our state
    back = th.optim.Adam(make_params(9), lr=1e-3)
    back.load_state_dict(optimizer.state_dict())
    assert th.equal(back.state_dict()["state"][2]["exp_avg"], reference_optimizer.state_dict()["state"][2]["exp_avg"])


def test_flat_adam_refuses_what_it_does_not_implement():
    for options in (dict(weight_decay=0.1), dict(amsgrad=True), dict(maximize=True)):
        with pytest.raises(ValueError, match="FlatAdam implements plain Adam only"):
            FlatAdam(make_params(0), **options)
    optimizer = FlatAdam(make_params(0))
    state = th.optim.Adam(make_params(0)[:3]).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optimizer.load_state_dict(state)


def test_foreach_polyak_equals_sb3_polyak():
    params, reference_targets, targets = make_params(3), make_params(4), make_params(4)
    polyak_update(params, reference_targets, 0.005)
    foreach_polyak_update(params, targets, 0.005)
    for reference, ours in zip(reference_targets, targets, strict=True):
        assert th.equal(reference, ours)


def test_saved_model_resumes_training_identically(tmp_path):
    """Optimizer state and flat buffers survive save/load: training on from a save equals training on in memory."""
    kwargs = dict(learning_starts=50, batch_size=16, policy_kwargs=dict(net_arch=[16, 16]), seed=0)
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", **kwargs).learn(100)
    model.save(tmp_path / "model")
    model.save_replay_buffer(tmp_path / "buffer")
    loaded = AblatableTD3.load(tmp_path / "model", env=model.get_env())
    loaded.load_replay_buffer(tmp_path / "buffer")
    for algo in (model, loaded):
        algo.set_logger(configure(None, [""]))
        np.random.seed(1)
        th.manual_seed(1)
        algo.train(gradient_steps=20, batch_size=16)
    for ours, theirs in zip(model.policy.parameters(), loaded.policy.parameters(), strict=True):
        assert th.equal(ours, theirs)


def test_fast_replay_buffer_samples_what_sb3_samples():
    observation_space = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)
    action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
    buffers = [cls(50, observation_space, action_space, device="cpu", n_envs=2) for cls in (ReplayBuffer, FastReplayBuffer)]
    rng = np.random.default_rng(0)
    for _ in range(40):
        transition = (
            rng.uniform(-1, 1, (2, 3)).astype(np.float32),
            rng.uniform(-1, 1, (2, 3)).astype(np.float32),
            rng.uniform(-1, 1, (2, 2)).astype(np.float32),
            rng.standard_normal(2).astype(np.float32),
            rng.integers(0, 2, 2).astype(np.float32),
            [{"TimeLimit.truncated": bool(flag)} for flag in rng.integers(0, 2, 2)],
        )
        for buffer in buffers:
            buffer.add(*transition)
    samples = []
    for buffer in buffers:
        np.random.seed(3)
        samples.append(buffer.sample(64))
    for field in ("observations", "actions", "next_observations", "dones", "rewards"):
        reference, ours = getattr(samples[0], field), getattr(samples[1], field)
        assert reference.dtype == ours.dtype and th.equal(reference, ours), field
    assert samples[1].dones.shape == (64, 1) and bool(samples[1].dones.any())


def test_speed_mode_batches_the_critics_and_learns():
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", speed_mode=True, learning_starts=50, batch_size=16, seed=0)
    assert isinstance(model.critic, BatchedContinuousCritic) and model.critic.n_critics == 2
    obs, actions = th.zeros(5, 3), th.zeros(5, 1)
    q_values = model.critic(obs, actions)
    assert len(q_values) == 2 and q_values[0].shape == (5, 1)
    # A plain product for critic 1 and a batched one for both: the same values up to rounding (speed mode is not exact)
    th.testing.assert_close(model.critic.q1_forward(obs, actions), q_values[0])
    before = [p.clone() for p in model.critic.parameters()]
    model.learn(80)
    assert all(not th.equal(b, p) for b, p in zip(before, model.critic.parameters(), strict=True))

"""Speed mode: what it chooses and says, that its bfloat16 path keeps float32 weights and state, and that it learns."""

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.logger import configure
from torch.nn import functional as F

from sb3_ablation import DDPG, AblatableTD3
from sb3_ablation.bench.models import collect_random_transitions, fill_replay_buffer
from sb3_ablation.common import mixed_precision
from sb3_ablation.common.batched_critic import BatchedContinuousCritic
from sb3_ablation.common.mixed_precision import Bfloat16Linear, Float32Linear, SpeedModeInfo, choose_speed_mode
from sb3_ablation.common.off_policy import read_saved_data
from sb3_ablation.common.optim import FlatAdam

# [128, 128] at batch 256 is the smallest network whose hidden product is large enough for bfloat16
BFLOAT16_ARCH = [128, 128]
needs_bfloat16_cpu = pytest.mark.skipif(
    not mixed_precision.cpu_has_bfloat16_instructions(), reason="this CPU has no native bfloat16 products"
)


def make_model(speed_mode, net_arch, algo_class=AblatableTD3, **kwargs):
    model = algo_class(
        "MlpPolicy", "Pendulum-v1", speed_mode=speed_mode, policy_kwargs=dict(net_arch=net_arch), seed=0, **kwargs
    )
    model.set_logger(configure(None, [""]))
    return model


def test_choice_follows_hardware_measurement_and_size(monkeypatch):
    monkeypatch.setattr(mixed_precision, "device_has_bfloat16_instructions", lambda device: True)
    monkeypatch.setattr(mixed_precision, "bfloat16_speedup", lambda *shape: 2.0)
    faster = choose_speed_mode("cpu", [400, 300], 256)
    assert (faster.precision, faster.batched_critics) == ("bfloat16", False)
    assert "2.00x float32 speed" in faster.reason and "256x400x300" in faster.reason
    small = choose_speed_mode("cpu", [64, 64], 256)
    assert (small.precision, small.batched_critics) == ("float32", True)
    assert "too small" in small.reason

    monkeypatch.setattr(mixed_precision, "bfloat16_speedup", lambda *shape: 0.6)
    slower = choose_speed_mode("cpu", [400, 300], 256)
    assert slower.precision == "float32" and "0.60x float32 speed" in slower.reason

    monkeypatch.setattr(mixed_precision, "device_has_bfloat16_instructions", lambda device: False)
    without = choose_speed_mode("cpu", [400, 300], 256)
    assert without.precision == "float32" and "no native bfloat16" in without.reason
    assert choose_speed_mode("cpu", [400, 300], 256, precision="bfloat16").precision == "bfloat16"


def test_cuda_choice_asks_cuda_for_bfloat16(monkeypatch):
    # No GPU here: the decision logic alone (the bfloat16 layers are the same code on both devices)
    monkeypatch.setattr(th.cuda, "is_bf16_supported", lambda including_emulation=True: not including_emulation)
    monkeypatch.setattr(mixed_precision, "bfloat16_speedup", lambda device, *shape: 3.0 if device.type == "cuda" else 0.5)
    assert choose_speed_mode("cuda", [400, 300], 256).precision == "bfloat16"
    monkeypatch.setattr(th.cuda, "is_bf16_supported", lambda including_emulation=True: False)
    assert "cuda has no native bfloat16" in choose_speed_mode("cuda", [400, 300], 256).reason


def test_speed_mode_reports_its_choice(capsys):
    model = make_model(True, [32, 32], verbose=1)
    info = model.speed_mode_info
    assert isinstance(info, SpeedModeInfo) and info.precision == "float32" and info.batched_critics
    assert isinstance(model.critic, BatchedContinuousCritic)
    assert str(info) in capsys.readouterr().out
    assert "float32 hidden-layer products, critics batched in one network" in str(info)
    # PyTorch's fused Adam, stepping each network's flat buffer; the default mode keeps the exact step
    for optimizer in (model.critic.optimizer, model.actor.optimizer):
        assert isinstance(optimizer, FlatAdam) and optimizer.param_groups[0]["fused"]
    # what the speed mode implies is passed to the policy, not written into the user's policy_kwargs
    assert model.policy.batched_critics and model.policy.fused_adam and model.policy_kwargs == dict(net_arch=[32, 32])
    default = make_model(False, [32, 32])
    assert default.speed_mode_info is None and not default.critic.optimizer.param_groups[0]["fused"]


def test_bad_speed_mode_is_refused():
    with pytest.raises(ValueError, match="speed_mode must be True, False, 'bfloat16' or 'float32', got 'fast'"):
        make_model("fast", [32, 32])


def test_bfloat16_layers_keep_float32_inputs_outputs_and_parameters():
    model = make_model("bfloat16", [128, 128, 128], learning_starts=0)
    layers = [type(layer) for layer in model.actor.mu if isinstance(layer, th.nn.Linear)]
    # first layer float32 (observations not rounded), hidden products bfloat16, output layer back to float32
    assert layers == [th.nn.Linear, Bfloat16Linear, Bfloat16Linear, Float32Linear]
    obs = th.randn(256, 3)
    assert model.actor.mu[2](th.randn(256, 128)).dtype == th.bfloat16
    assert model.actor(obs).dtype == th.float32
    assert all(q.dtype == th.float32 for q in model.critic(obs, model.actor(obs)))
    # chosen as the networks are built, holding the parameters they replace: the same initial weights (no extra random
    # draw) as the float32 model, and the optimizer steps those parameters
    float32 = make_model("float32", [128, 128, 128], learning_starts=0)
    for (name, param), float32_param in zip(model.policy.named_parameters(), float32.policy.parameters(), strict=True):
        assert th.equal(param, float32_param), name
    assert model.actor.mu[2].weight.data_ptr() in {view.data_ptr() for view in model.actor.optimizer.flat_params.params}


def bfloat16_path_trains(model, transitions):
    """Train on a fixed buffer; return the critic loss on a fixed batch before and after."""
    fill_replay_buffer(model.replay_buffer, transitions)
    np.random.seed(0)
    batch = model.replay_buffer.sample(256)

    def critic_loss() -> float:
        with th.no_grad():
            next_q = th.cat(model.critic_target(batch.next_observations, model.actor_target(batch.next_observations)), 1)
            target = batch.rewards + (1 - batch.dones) * model.gamma * next_q.min(dim=1, keepdim=True)[0]
            return sum(F.mse_loss(q, target).item() for q in model.critic(batch.observations, batch.actions))

    before = critic_loss()
    model.train(gradient_steps=300, batch_size=256)
    return before, critic_loss()


@needs_bfloat16_cpu
def test_bfloat16_path_runs_with_float32_master_weights_and_learns():
    model = make_model("bfloat16", BFLOAT16_ARCH, buffer_size=3_000, learning_starts=0, learning_rate=3e-4)
    assert model.speed_mode_info.precision == "bfloat16"
    assert type(model.critic.q_networks[0][2]) is Bfloat16Linear
    initial = [param.detach().clone() for param in model.critic.parameters()]
    before, after = bfloat16_path_trains(model, collect_random_transitions("Pendulum-v1", 3_000))
    # the TD error of the critic on a fixed batch falls: it learns (quality is the learning benchmark's job)
    assert after < 0.5 * before
    for network in (model.actor, model.critic, model.actor_target, model.critic_target):
        assert all(param.dtype == th.float32 for param in network.parameters())
    assert all(not th.equal(a, b) for a, b in zip(initial, model.critic.parameters(), strict=True))
    for optimizer in (model.actor.optimizer, model.critic.optimizer):
        state = optimizer.state[optimizer.param_groups[0]["params"][0]]
        assert state["exp_avg"].dtype == state["exp_avg_sq"].dtype == th.float32
    assert all(param.grad.dtype == th.float32 for param in model.critic.parameters())


@needs_bfloat16_cpu
def test_chosen_bfloat16_survives_save_and_load(tmp_path, monkeypatch):
    monkeypatch.setattr(mixed_precision, "bfloat16_speedup", lambda *shape: 2.0)
    model = make_model(True, BFLOAT16_ARCH, algo_class=DDPG)
    assert model.speed_mode_info.precision == "bfloat16"
    model.save(tmp_path / "model")
    loaded = DDPG.load(tmp_path / "model")
    assert loaded.speed_mode_info == model.speed_mode_info
    assert type(loaded.actor.mu[2]) is Bfloat16Linear
    obs = th.randn(4, 3)
    assert th.equal(loaded.actor(obs), model.actor(obs))


def test_float32_speed_mode_learns_in_learn():
    model = make_model(True, [32, 32], learning_starts=50, batch_size=32)
    before = [param.detach().clone() for param in model.critic.parameters()]
    model.learn(150)
    assert model._n_updates == 100
    assert all(not th.equal(b, p) for b, p in zip(before, model.critic.parameters(), strict=True))


@pytest.mark.parametrize("algo_class", [AblatableTD3, DDPG])
def test_loaded_speed_mode_model_keeps_its_critic_layout(tmp_path, algo_class):
    # Batched at batch size 16; at 256 (given at load) the size rule would choose separate critics
    model = make_model(True, BFLOAT16_ARCH, algo_class=algo_class, batch_size=16, learning_starts=50)
    model.learn(60)
    assert isinstance(model.critic, BatchedContinuousCritic)
    model.save(tmp_path / "model.zip")
    data = read_saved_data(tmp_path / "model.zip")
    assert "speed_mode_info" not in data and not {"batched_critics", "fused_adam"} & set(data["policy_kwargs"])
    loaded = algo_class.load(tmp_path / "model.zip", batch_size=256)
    assert isinstance(loaded.critic, BatchedContinuousCritic) and loaded.speed_mode_info.batched_critics
    assert loaded.critic.optimizer.param_groups[0]["fused"]
    for name, value in model.policy.state_dict().items():
        assert th.equal(loaded.policy.state_dict()[name], value), name
    state = loaded.critic.optimizer.state_dict()["state"]
    assert state[0]["step"] == model.critic.optimizer.state_dict()["state"][0]["step"] > 0


def test_load_refuses_to_switch_speed_mode_and_takes_another_precision(tmp_path):
    model = make_model(True, [32, 32], algo_class=DDPG)
    model.save(tmp_path / "model")
    with pytest.raises(ValueError, match=r"speed_mode=False differs from the saved model's \(True\)"):
        DDPG.load(tmp_path / "model", speed_mode=False)
    assert DDPG.load(tmp_path / "model", speed_mode="float32").speed_mode_info.reason == "precision set by speed_mode"

"""A drop-in for SB3's TD3 and DDPG: one file format both ways, load() with SB3's keywords, SB3's conventions."""

import io
import re
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
import stable_baselines3 as sb3
import torch as th
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import BitFlippingEnv, FakeImageEnv
from stable_baselines3.common.logger import configure
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.vec_env import VecNormalize
from stable_baselines3.her import HerReplayBuffer

from sb3_ablation import DDPG, SWITCHES, AblatableTD3
from sb3_ablation.common.buffers import FastReplayBuffer
from sb3_ablation.common.off_policy import read_saved_data
from sb3_ablation.common.optim import FlatAdam


def small() -> dict:
    """Short-run settings, a fresh dict each time (SB3's DDPG writes n_critics into the policy_kwargs it is given)."""
    return dict(learning_starts=50, batch_size=16, buffer_size=1_000, policy_kwargs=dict(net_arch=[16, 16]), seed=0)


PAIRS = [(AblatableTD3, sb3.TD3), (DDPG, sb3.DDPG)]
PAIR_IDS = ["td3", "ddpg"]


def noise() -> NormalActionNoise:
    return NormalActionNoise(np.zeros(1), np.full(1, 0.1))


def assert_same_weights_and_moments(ours, theirs) -> None:
    """Every network weight (targets too) and every Adam moment and step count equal."""
    ours_state, theirs_state = ours.policy.state_dict(), theirs.policy.state_dict()
    assert ours_state.keys() == theirs_state.keys()
    for name, value in ours_state.items():
        assert th.equal(value, theirs_state[name]), name
    for network in ("actor", "critic"):
        ours_optimizer = getattr(ours, network).optimizer.state_dict()["state"]
        theirs_optimizer = getattr(theirs, network).optimizer.state_dict()["state"]
        assert ours_optimizer.keys() == theirs_optimizer.keys() and ours_optimizer
        for index, state in theirs_optimizer.items():
            for key, value in state.items():
                assert th.equal(ours_optimizer[index][key], value), (network, index, key)


def continue_training(algo_class, path, buffer_path, n_timesteps: int = 60):
    """Load a checkpoint and its replay buffer with a fresh env and a fixed seed, and train on."""
    model = algo_class.load(path, env=make_vec_env("Pendulum-v1", n_envs=1), seed=1)
    model.load_replay_buffer(buffer_path)
    return model.learn(n_timesteps, reset_num_timesteps=False)


@pytest.mark.parametrize("ours_class, sb3_class", PAIRS, ids=PAIR_IDS)
def test_sb3_checkpoint_trains_on_in_ours_exactly_as_in_sb3(tmp_path, ours_class, sb3_class):
    reference = sb3_class("MlpPolicy", "Pendulum-v1", action_noise=noise(), **small()).learn(100)
    reference.save(tmp_path / "sb3")
    reference.save_replay_buffer(tmp_path / "buffer")
    theirs = continue_training(sb3_class, tmp_path / "sb3", tmp_path / "buffer")
    ours = continue_training(ours_class, tmp_path / "sb3", tmp_path / "buffer")
    assert type(ours) is ours_class and isinstance(ours.actor.optimizer, FlatAdam)
    assert type(ours.replay_buffer) is FastReplayBuffer
    assert ours._n_updates == theirs._n_updates > 100
    assert_same_weights_and_moments(ours, theirs)


@pytest.mark.parametrize("ours_class, sb3_class", PAIRS, ids=PAIR_IDS)
def test_our_checkpoint_loads_in_sb3_and_trains_on_identically(tmp_path, ours_class, sb3_class):
    model = ours_class("MlpPolicy", "Pendulum-v1", action_noise=noise(), **small()).learn(100)
    model.save(tmp_path / "ours")
    model.save_replay_buffer(tmp_path / "buffer")
    theirs = sb3_class.load(tmp_path / "ours")
    assert type(theirs.policy) is sb3.td3.policies.TD3Policy
    assert_same_weights_and_moments(model, theirs)
    observations = np.random.default_rng(0).uniform(-1, 1, size=(20, 3)).astype(np.float32)
    assert np.array_equal(model.predict(observations)[0], theirs.predict(observations)[0])
    # Trained on from the same checkpoint, SB3 and ours agree; and SB3's own save reads back into ours
    theirs = continue_training(sb3_class, tmp_path / "ours", tmp_path / "buffer")
    ours = continue_training(ours_class, tmp_path / "ours", tmp_path / "buffer")
    assert_same_weights_and_moments(ours, theirs)
    theirs.save(tmp_path / "back")
    assert_same_weights_and_moments(ours_class.load(tmp_path / "back"), theirs)


def test_our_files_need_only_sb3(tmp_path):
    """A checkpoint and a replay buffer written by AblatableTD3 load in SB3's TD3 where this package cannot be imported."""
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", **small()).learn(60)
    model.save(tmp_path / "model.zip")
    model.save_replay_buffer(tmp_path / "buffer.pkl")
    # the files name SB3's classes; the model keeps its own (SB3's buffer class is sampled by ours)
    assert model.policy_class is AblatableTD3.policy_aliases["MlpPolicy"] and model.replay_buffer_class is ReplayBuffer
    assert type(model.replay_buffer) is FastReplayBuffer
    script = (
        "import sys; sys.modules['sb3_ablation'] = None\n"
        "from stable_baselines3 import TD3\n"
        f"model = TD3.load({str(tmp_path / 'model.zip')!r})\n"
        f"model.load_replay_buffer({str(tmp_path / 'buffer.pkl')!r})\n"
        "print(type(model.replay_buffer).__name__, model.replay_buffer.size())"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["ReplayBuffer", "60"]


def test_checkpoint_with_a_switch_off_is_our_own(tmp_path):
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", target_policy_smoothing=False, **small())
    model.save(tmp_path / "model")
    assert read_saved_data(tmp_path / "model")["policy_class"] is type(model.policy)
    assert AblatableTD3.load(tmp_path / "model").switches["target_policy_smoothing"] is False


@pytest.fixture(scope="module")
def saved_td3(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "td3.zip"
    AblatableTD3("MlpPolicy", "Pendulum-v1", **small()).learn(60).save(path)
    return path


def test_load_with_every_switch_equal_to_the_saved_one_changes_nothing(saved_td3):
    # What rl_zoo3's --trained-agent does: every hyperparameter of the entry is passed to load
    loaded = AblatableTD3.load(saved_td3, env=gym.make("Pendulum-v1"), **dict.fromkeys(SWITCHES, True))
    assert loaded.switches == dict.fromkeys(SWITCHES, True)
    assert loaded.replay_buffer.buffer_size == 1_000  # `replay_buffer=True` did not replace the buffer object
    loaded.learn(20)


def test_load_applies_a_change_of_the_switches_that_act_on_updates_only(saved_td3):
    loaded = AblatableTD3.load(
        saved_td3, env=gym.make("Pendulum-v1"), target_policy_smoothing=False, delayed_policy_update=False
    )
    assert loaded.switches == {
        **dict.fromkeys(SWITCHES, True),
        "target_policy_smoothing": False,
        "delayed_policy_update": False,
    }
    assert loaded.target_policy_smoothing is False and loaded.delayed_policy_update is False
    critic_steps = loaded.critic.optimizer.state_dict()["state"][0]["step"].item()
    actor_steps = loaded.actor.optimizer.state_dict()["state"][0]["step"].item()
    loaded.learn(10, reset_num_timesteps=False)
    # Without delay, the actor now moves at every critic update
    assert loaded.actor.optimizer.state_dict()["state"][0]["step"].item() - actor_steps == 10
    assert loaded.critic.optimizer.state_dict()["state"][0]["step"].item() - critic_steps == 10


@pytest.mark.parametrize("switch", ["deterministic_policy", "replay_buffer", "target_networks", "clipped_double_q"])
def test_load_refuses_a_change_of_the_switches_that_shape_the_model(saved_td3, switch):
    with pytest.raises(ValueError, match=rf"^{switch}=False cannot be applied to a model saved with {switch}=True: "):
        AblatableTD3.load(saved_td3, **{switch: False})


def test_load_refuses_a_switch_that_is_not_a_bool(saved_td3):
    with pytest.raises(TypeError, match="switch clipped_double_q must be True or False, got 'no'"):
        AblatableTD3.load(saved_td3, clipped_double_q="no")


def test_load_accepts_the_policy_kwargs_of_creation_and_refuses_others(saved_td3, tmp_path):
    AblatableTD3.load(saved_td3, policy_kwargs=dict(net_arch=[16, 16]))
    with pytest.raises(ValueError, match=r"policy_kwargs=\{'net_arch': \[32\]\} build another policy"):
        AblatableTD3.load(saved_td3, policy_kwargs=dict(net_arch=[32]))
    # With switches that add policy arguments of their own, and for DDPG (which adds n_critics=1 as SB3's does)
    kwargs = {**small(), "policy_kwargs": dict(net_arch=[8], n_critics=3)}
    with pytest.warns(UserWarning, match="n_critics=3 is ignored"):
        model = AblatableTD3("MlpPolicy", "Pendulum-v1", clipped_double_q=False, deterministic_policy=False, **kwargs)
    model.save(tmp_path / "switched")
    AblatableTD3.load(tmp_path / "switched", policy_kwargs=dict(net_arch=[8], n_critics=3))
    DDPG("MlpPolicy", "Pendulum-v1", **small()).save(tmp_path / "ddpg")
    DDPG.load(tmp_path / "ddpg", policy_kwargs=dict(net_arch=[16, 16]))


def test_load_takes_sb3s_keywords(saved_td3):
    schedule_values = []

    def schedule(progress: float) -> float:
        schedule_values.append(progress)
        return 5e-4

    with open(saved_td3, "rb") as file:  # a file object, as SB3 allows
        loaded = AblatableTD3.load(
            file,
            env=make_vec_env("Pendulum-v1", n_envs=2),
            device="cpu",
            custom_objects={"learning_rate": schedule},
            print_system_info=False,
            force_reset=True,
            buffer_size=500,
            batch_size=8,
            learning_starts=0,
            seed=3,
            tensorboard_log=None,
        )
    assert loaded.n_envs == 2 and loaded.replay_buffer.buffer_size == 250 and loaded.batch_size == 8
    assert loaded.seed == 3 and loaded.device.type == "cpu"
    loaded.learn(10)
    assert schedule_values and loaded.actor.optimizer.param_groups[0]["lr"] == 5e-4


def test_refused_loads_leave_nothing_changed(tmp_path):
    full = AblatableTD3("MlpPolicy", "Pendulum-v1", **small()).learn(60)
    full.save(tmp_path / "td3")
    full.save_replay_buffer(tmp_path / "buffer")
    with pytest.raises(
        ValueError, match=r"holds an AblatableTD3 model .* which DDPG does not load: load it with AblatableTD3\.load"
    ):
        DDPG.load(tmp_path / "td3")
    online = AblatableTD3("MlpPolicy", "Pendulum-v1", replay_buffer=False, **{**small(), "buffer_size": 1, "batch_size": 1})
    buffer = online.replay_buffer
    with pytest.raises(ValueError, match="holds 1000 transitions per env, but with replay_buffer=False the model keeps 1"):
        online.load_replay_buffer(tmp_path / "buffer")
    assert online.replay_buffer is buffer


def test_load_of_a_file_that_is_not_a_model_is_one_line(tmp_path):
    (tmp_path / "junk.zip").write_text("not a zip")
    with pytest.raises(ValueError, match="is not a saved model"):
        AblatableTD3.load(tmp_path / "junk.zip")


@pytest.fixture(scope="module")
def other_algorithms_models(tmp_path_factory):
    """Files of other algorithms (saved untrained)."""
    from sb3_ablation.batched import BatchedTD3

    folder = tmp_path_factory.mktemp("other_algorithms")
    sb3.PPO("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64).save(folder / "ppo.zip")
    sb3.SAC("MlpPolicy", "Pendulum-v1", **small()).save(folder / "sac.zip")
    sb3.TD3("MlpPolicy", "Pendulum-v1", **small()).save(folder / "td3.zip")
    sb3.DDPG("MlpPolicy", "Pendulum-v1", **small()).save(folder / "ddpg.zip")
    BatchedTD3("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=2), **small()).save(folder / "batched.zip")
    return folder


OTHER_ALGORITHMS = {
    "PPO into AblatableTD3": (
        AblatableTD3,
        "ppo",
        r"a PPO model \(policy stable_baselines3\.common\.policies\.ActorCriticPolicy\)",
        r"stable_baselines3\.PPO\.load",
    ),
    "SAC into DDPG": (
        DDPG,
        "sac",
        r"a SAC model \(policy stable_baselines3\.sac\.policies\.SACPolicy\)",
        r"stable_baselines3\.SAC\.load",
    ),
    "SB3's TD3 into DDPG": (
        DDPG,
        "td3",
        r"a TD3 model \(policy stable_baselines3\.td3\.policies\.TD3Policy, policy_delay=2, 2 critics\)",
        r"AblatableTD3\.load or stable_baselines3\.TD3\.load",
    ),
    "SB3's DDPG into AblatableTD3": (
        AblatableTD3,
        "ddpg",
        r"a DDPG model \(policy stable_baselines3\.td3\.policies\.TD3Policy, policy_delay=1, 1 critic\)",
        r"DDPG\.load",
    ),
    "BatchedTD3 into AblatableTD3": (
        AblatableTD3,
        "batched",
        r"a BatchedTD3 model \(policy sb3_ablation\.batched\.policies\.BatchedTD3Policy\)",
        r"sb3_ablation\.batched\.BatchedTD3\.load",
    ),
}


@pytest.mark.parametrize("case", OTHER_ALGORITHMS)
def test_load_of_another_algorithms_model_says_what_the_file_holds_and_what_loads_it(other_algorithms_models, case):
    from sb3_ablation.common.saved_models import IncompatibleModelError

    algo_class, name, holds, loader = OTHER_ALGORITHMS[case]
    path = other_algorithms_models / f"{name}.zip"
    message = rf"^{re.escape(str(path))} holds {holds}, which {algo_class.__name__} does not load: load it with {loader}"
    with pytest.raises(IncompatibleModelError, match=message):
        algo_class.load(path)
    with pytest.raises(IncompatibleModelError, match=message):
        algo_class.check_saved_model(path)  # the same check, without loading


def test_sb3s_own_pairs_still_load(other_algorithms_models):
    assert type(AblatableTD3.load(other_algorithms_models / "td3.zip")) is AblatableTD3
    assert type(DDPG.load(other_algorithms_models / "ddpg.zip")) is DDPG


def test_load_of_a_missing_file_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=rf"^no saved model at {re.escape(str(tmp_path))}/missing\.zip: no such file$"):
        AblatableTD3.load(tmp_path / "missing.zip")
    # SB3 tries the name with .zip added too
    with pytest.raises(FileNotFoundError, match=r"missing: no such file \(nor .*missing\.zip\)$"):
        DDPG.load(tmp_path / "missing")


def test_zoo_hyperparameters_passed_to_load_keep_the_switched_off_setting(tmp_path):
    model = AblatableTD3("MlpPolicy", "Pendulum-v1", replay_buffer=False, **{**small(), "buffer_size": 1, "batch_size": 1})
    model.save(tmp_path / "online")
    with pytest.warns(UserWarning, match="buffer_size=200000 is ignored because replay_buffer=False"):
        loaded = AblatableTD3.load(tmp_path / "online", env=gym.make("Pendulum-v1"), buffer_size=200_000, batch_size=256)
    assert loaded.replay_buffer.buffer_size == 1 and loaded.batch_size == 1


@pytest.mark.parametrize("algo_class", [AblatableTD3, DDPG])
def test_unsupported_action_space_raises_sb3s_exception_type(algo_class):
    with pytest.raises(AssertionError, match=r"needs a continuous action space \(gymnasium.spaces.Box\)"):
        algo_class("MlpPolicy", "CartPole-v1")


@pytest.mark.parametrize("ours_class, sb3_class", PAIRS, ids=PAIR_IDS)
def test_get_and_set_parameters_in_sb3s_layout(ours_class, sb3_class):
    model = ours_class("MlpPolicy", "Pendulum-v1", **small()).learn(70)
    reference = sb3_class("MlpPolicy", "Pendulum-v1", **{**small(), "seed": 1}).learn(70)
    model.set_parameters(reference.get_parameters())
    assert_same_weights_and_moments(model, reference)
    # exact_match=False with a subset; an unknown key is refused and leaves the model as it was
    model.set_parameters({"policy": reference.get_parameters()["policy"]}, exact_match=False)
    before = [param.clone() for param in model.policy.parameters()]
    broken = {**reference.get_parameters(), "critic.optimizer": {"state": {}, "param_groups": []}}
    with pytest.raises(ValueError):
        model.set_parameters(broken)
    assert all(th.equal(b, p) for b, p in zip(before, model.policy.parameters(), strict=True))


def test_policy_moved_to_new_storage_keeps_flat_buffers_and_adam_state():
    """policy.to() gives parameters new storage (here a float64 round trip, exact): training continues identically."""
    moved, still = (AblatableTD3("MlpPolicy", "Pendulum-v1", **small()).learn(70) for _ in range(2))
    moved.policy.double()
    moved.policy.float()
    assert moved.actor.optimizer.flat_params.intact() and moved.critic.optimizer.flat_params.intact()
    for model in (moved, still):
        model.set_logger(configure(None, [""]))
        np.random.seed(2)
        th.manual_seed(2)
        model.train(gradient_steps=10, batch_size=16)
    assert_same_weights_and_moments(moved, still)


@pytest.mark.skipif(not th.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("algo_class", [AblatableTD3, DDPG])
def test_cuda_training_and_moving_between_devices(tmp_path, algo_class):
    model = algo_class("MlpPolicy", "Pendulum-v1", device="cuda", **small()).learn(100)
    assert model.actor.optimizer.flat_params.flat.is_cuda and model.actor.optimizer.flat_params.intact()
    assert all(param.is_cuda for param in model.policy.parameters())
    model.save(tmp_path / "model")
    on_cpu = algo_class.load(tmp_path / "model", device="cpu")
    model.policy.to("cpu")
    assert model.actor.optimizer.flat_params.intact() and not model.actor.optimizer.flat_params.flat.is_cuda
    assert_same_weights_and_moments(on_cpu, model)
    model.policy.to("cuda")
    model.learn(20, reset_num_timesteps=False)
    assert all(param.is_cuda for param in model.policy.parameters())


def test_learning_rate_schedule_equals_sb3s():
    def schedule(progress: float) -> float:
        return 1e-3 * progress

    models = [cls("MlpPolicy", "Pendulum-v1", learning_rate=schedule, **small()).learn(120) for cls in (AblatableTD3, sb3.TD3)]
    assert models[0].actor.optimizer.param_groups[0]["lr"] == models[1].actor.optimizer.param_groups[0]["lr"] < 1e-3
    assert_same_weights_and_moments(*models)


# SB3 features, each checked against SB3's TD3 with the same seed (every switch on: exactly SB3's TD3)
def her_env():
    return BitFlippingEnv(n_bits=4, continuous=True, max_steps=4)


SB3_FEATURES = {
    "n_steps": dict(n_steps=3),
    "train_freq_episode": dict(train_freq=(1, "episode"), gradient_steps=-1),
    "two_envs": dict(env=lambda: make_vec_env("Pendulum-v1", n_envs=2, seed=0)),
    "vec_normalize": dict(env=lambda: VecNormalize(make_vec_env("Pendulum-v1", n_envs=1, seed=0))),
    "her": dict(
        env=her_env,
        policy="MultiInputPolicy",
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs=dict(n_sampled_goal=2, goal_selection_strategy="future"),
        learning_starts=20,
    ),
}


@pytest.mark.parametrize("feature", SB3_FEATURES)
def test_sb3_features_train_exactly_as_in_sb3_td3(feature):
    settings = dict(SB3_FEATURES[feature])
    make_env = settings.pop("env", lambda: gym.make("Pendulum-v1"))
    policy = settings.pop("policy", "MlpPolicy")
    models = [cls(policy, make_env(), **{**small(), **settings}).learn(120) for cls in (AblatableTD3, sb3.TD3)]
    assert models[0]._n_updates == models[1]._n_updates > 0
    assert_same_weights_and_moments(*models)


def test_cnn_checkpoint_is_sb3s():
    """Image observations: the same initial networks as SB3's TD3 for a seed, and checkpoints SB3 reads (SB3's own
    convolutions are not bit-reproducible from run to run on this CPU, so training is not compared)."""
    settings = dict(buffer_size=200, policy_kwargs=dict(net_arch=[16], features_extractor_kwargs=dict(features_dim=8)))

    def make_env():
        return FakeImageEnv(screen_height=36, screen_width=36, n_channels=1, discrete=False)

    ours, theirs = (cls("CnnPolicy", make_env(), **{**small(), **settings}) for cls in (AblatableTD3, sb3.TD3))
    ours_state, theirs_state = ours.policy.state_dict(), theirs.policy.state_dict()
    assert ours_state.keys() == theirs_state.keys()
    assert all(th.equal(value, theirs_state[name]) for name, value in ours_state.items())
    ours.learn(60)
    buffer = io.BytesIO()
    ours.save(buffer)
    buffer.seek(0)
    loaded = sb3.TD3.load(buffer)
    assert_same_weights_and_moments(ours, loaded)
    observations = np.stack([make_env().observation_space.sample() for _ in range(4)])
    assert np.array_equal(ours.predict(observations)[0], loaded.predict(observations)[0])


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(replay_buffer_class=HerReplayBuffer), "replay_buffer=False cannot use HerReplayBuffer"),
        (dict(n_steps=3), r"replay_buffer=False needs n_steps=1 \(got 3\)"),
        (dict(train_freq=4), r"replay_buffer=False needs train_freq=1 \(got 4\)"),
        (dict(train_freq=(1, "episode")), r"replay_buffer=False needs train_freq=1 \(got \(1, 'episode'\)\)"),
    ],
    ids=["her", "n_steps", "train_freq", "train_freq_episode"],
)
def test_online_updates_refuse_what_they_cannot_honour(settings, message):
    env = her_env() if "replay_buffer_class" in settings else "Pendulum-v1"
    policy = "MultiInputPolicy" if "replay_buffer_class" in settings else "MlpPolicy"
    with pytest.raises(ValueError, match=message):
        AblatableTD3(policy, env, replay_buffer=False, **settings)


def test_online_updates_with_vec_normalize_learn_from_normalized_newest_transition():
    env = VecNormalize(make_vec_env("Pendulum-v1", n_envs=1, seed=0), norm_reward=False)
    model = AblatableTD3("MlpPolicy", env, replay_buffer=False, **{**small(), "buffer_size": 1, "batch_size": 1})
    model.learn(80)
    newest = model.replay_buffer.sample(1, env=model._vec_normalize_env)
    raw = model.replay_buffer.observations[0]
    assert np.allclose(newest.observations.numpy(), env.normalize_obs(raw), atol=1e-6)
    assert model.replay_buffer.size() == 1 and model._n_updates == 30


@pytest.mark.parametrize("algo_class", [AblatableTD3, DDPG])
def test_sb3_usage_save_load_predict_callbacks(tmp_path, algo_class):
    """The everyday SB3 paths: callbacks, predict shapes, save/load with and without env, VecNormalize statistics."""
    env = VecNormalize(make_vec_env("Pendulum-v1", n_envs=2, seed=0))
    callbacks = [
        EvalCallback(VecNormalize(make_vec_env("Pendulum-v1", n_envs=1)), eval_freq=40, n_eval_episodes=1),
        CheckpointCallback(save_freq=40, save_path=str(tmp_path / "checkpoints"), save_replay_buffer=True),
    ]
    model = algo_class("MlpPolicy", env, **small()).learn(100, callback=callbacks)
    assert sorted(path.name for path in (tmp_path / "checkpoints").iterdir())[:2] == [
        "rl_model_80_steps.zip",
        "rl_model_replay_buffer_80_steps.pkl",
    ]
    single = np.zeros(3, dtype=np.float32)
    assert model.predict(single)[0].shape == (1,)
    assert model.predict(np.zeros((5, 3), dtype=np.float32))[0].shape == (5, 1)
    model.save(tmp_path / "model")
    env.save(tmp_path / "vecnormalize.pkl")
    without_env = algo_class.load(tmp_path / "model")
    assert without_env.get_env() is None
    assert np.array_equal(without_env.predict(single, deterministic=True)[0], model.predict(single, deterministic=True)[0])
    new_env = VecNormalize.load(tmp_path / "vecnormalize.pkl", make_vec_env("Pendulum-v1", n_envs=2))
    with_env = algo_class.load(tmp_path / "model", env=new_env)
    assert with_env.get_env() is new_env and with_env._vec_normalize_env is new_env
    assert np.array_equal(new_env.obs_rms.mean, env.obs_rms.mean)
    with_env.load_replay_buffer(tmp_path / "checkpoints" / "rl_model_replay_buffer_80_steps.pkl")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no stray warnings on a plain continued run
        with_env.learn(20, reset_num_timesteps=False)


class BoxEnv(gym.Env):
    """Two-dimensional actions with uneven bounds, float64 spaces: the action and observation handling SB3 tests."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float64)
        self.action_space = gym.spaces.Box(np.array([-2.0, 0.0]), np.array([3.0, 1.0]), dtype=np.float64)
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.steps += 1
        return self.observation_space.sample(), -float(np.sum(action**2)), False, self.steps >= 20, {}


@pytest.mark.parametrize("algo_class", [AblatableTD3, DDPG])
def test_action_bounds_and_float64_spaces(tmp_path, algo_class):
    model = algo_class("MlpPolicy", BoxEnv(), action_noise=NormalActionNoise(np.zeros(2), np.full(2, 0.5)), **small())
    model.learn(80)
    observations = np.stack([model.observation_space.sample() for _ in range(50)])
    actions = model.predict(observations)[0]
    assert actions.shape == (50, 2) and all(model.action_space.contains(action) for action in actions)
    model.save(tmp_path / "model")
    loaded = sb3.TD3.load(tmp_path / "model") if algo_class is AblatableTD3 else sb3.DDPG.load(tmp_path / "model")
    assert np.array_equal(loaded.predict(observations)[0], actions)

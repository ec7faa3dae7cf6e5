"""DDPG written from scratch on SB3's off-policy machinery."""

import copy
import inspect
import io
import pathlib
import zipfile
from collections.abc import Iterable
from typing import Any, ClassVar, TypeVar

import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.policies import BasePolicy, ContinuousCritic
from stable_baselines3.common.save_util import json_to_data, open_path, save_to_pkl
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, ReplayBufferSamples, Schedule
from stable_baselines3.td3 import policies as sb3_td3_policies
from torch.nn import functional as F

from sb3_ablation.common.buffers import FastReplayBuffer
from sb3_ablation.common.collection import LeanCollectionMixin
from sb3_ablation.common.mixed_precision import SpeedModeMixin
from sb3_ablation.common.training_stats import TrainingStats
from sb3_ablation.common.utils import UnsupportedActionSpaceError, check_keyword_arguments, foreach_polyak_update
from sb3_ablation.ddpg.policies import Actor, CnnPolicy, DDPGPolicy, MlpPolicy, MultiInputPolicy

SelfDDPG = TypeVar("SelfDDPG", bound="DDPG")

# SB3's TD3 policies (SB3's DDPG uses them too), by alias: our policies have the same modules and parameters
SB3_TD3_POLICIES: dict[str, type[BasePolicy]] = {
    "MlpPolicy": sb3_td3_policies.MlpPolicy,
    "CnnPolicy": sb3_td3_policies.CnnPolicy,
    "MultiInputPolicy": sb3_td3_policies.MultiInputPolicy,
}
SB3_POLICY_ARGUMENTS = set(inspect.signature(sb3_td3_policies.TD3Policy.__init__).parameters) - {"self"}


class DDPG(SpeedModeMixin, LeanCollectionMixin, OffPolicyAlgorithm):
    """
    Deep Deterministic Policy Gradient (DDPG).

    Paper: https://arxiv.org/abs/1509.02971 (Lillicrap et al., 2016). Same defaults and results as SB3's DDPG.

    :param policy: The policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy)
    :param env: The environment to learn from (if registered in Gym, can be str)
    :param learning_rate: learning rate for Adam, the same for actor and critic;
        it can be a function of the current progress remaining (from 1 to 0)
    :param buffer_size: size of the replay buffer
    :param learning_starts: how many steps of the model to collect transitions for before learning starts
    :param batch_size: Minibatch size for each gradient update
    :param tau: the soft update coefficient ("Polyak update", between 0 and 1)
    :param gamma: the discount factor
    :param train_freq: Update the model every ``train_freq`` steps, or a tuple like ``(5, "step")``, ``(2, "episode")``.
    :param gradient_steps: How many gradient steps to do after each rollout (-1: as many as environment steps)
    :param action_noise: the action noise of the behaviour policy (None by default)
    :param replay_buffer_class: Replay buffer class to use (for instance ``HerReplayBuffer``), automatic if None
    :param replay_buffer_kwargs: Keyword arguments to pass to the replay buffer on creation.
    :param optimize_memory_usage: Enable a memory efficient variant of the replay buffer
    :param n_steps: n-step returns for the critic target when > 1 (SB3's NStepReplayBuffer)
    :param speed_mode: Train faster at the cost of bit-exactness with SB3, the same algorithm: bfloat16 products in
        large hidden layers where the hardware is faster in bfloat16, float32 elsewhere, PyTorch's fused Adam, critics
        batched in one network for small networks (``model.speed_mode_info`` says what was chosen;
        ``"bfloat16"``/``"float32"`` force the precision)
    :param stats_window_size: Window size for the rollout logging
    :param tensorboard_log: the log location for tensorboard (if None, no logging)
    :param policy_kwargs: additional arguments to be passed to the policy on creation
    :param verbose: Verbosity level: 0 for no output, 1 for info messages, 2 for debug messages
    :param seed: Seed for the pseudo random generators
    :param device: Device (cpu, cuda, ...) on which the code should be run ("auto": the GPU if possible)
    :param _init_setup_model: Whether or not to build the network at the creation of the instance
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }
    # Written into policy_kwargs unless given, as SB3's DDPG does (its policy is TD3's, with two critics by default)
    policy_kwargs_defaults: ClassVar[dict[str, Any]] = {"n_critics": 1}
    switch_names: ClassVar[tuple[str, ...]] = ()  # the component switches (AblatableTD3's)
    # Policy arguments set by the algorithm's own arguments (see `_implied_policy_kwargs`), not by policy_kwargs
    implied_policy_arguments: ClassVar[tuple[str, ...]] = ("batched_critics", "fused_adam")
    policy: DDPGPolicy
    actor: Actor
    actor_target: Actor | None
    critic: ContinuousCritic
    critic_target: ContinuousCritic | None

    def __new__(cls, *args: Any, **kwargs: Any):
        # A misspelt keyword gets a message naming the closest valid one (before Python's bare TypeError)
        check_keyword_arguments(cls, kwargs, highlighted=cls.switch_names)
        return super().__new__(cls)

    def __init__(
        self,
        policy: str | type[DDPGPolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 1e-3,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 256,
        tau: float = 0.005,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        action_noise: ActionNoise | None = None,
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        n_steps: int = 1,
        speed_mode: bool | str = False,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
    ):
        super().__init__(
            policy,
            env,
            learning_rate,
            buffer_size,
            learning_starts,
            batch_size,
            tau,
            gamma,
            train_freq,
            gradient_steps,
            action_noise=action_noise,
            replay_buffer_class=replay_buffer_class,
            replay_buffer_kwargs=replay_buffer_kwargs,
            optimize_memory_usage=optimize_memory_usage,
            n_steps=n_steps,
            # As SB3's DDPG: a single critic unless told otherwise, written into policy_kwargs (and the checkpoint)
            policy_kwargs={**self.policy_kwargs_defaults, **(policy_kwargs or {})},
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            device=device,
            seed=seed,
            sde_support=False,
            supported_action_spaces=None,  # checked below, with a clearer message than SB3's assertion
            support_multi_env=True,
        )
        if getattr(self, "action_space", None) is not None and not isinstance(self.action_space, spaces.Box):
            raise UnsupportedActionSpaceError(
                f"{type(self).__name__} needs a continuous action space (gymnasium.spaces.Box), "
                f"but the environment's action space is {self.action_space}"
            )
        self.speed_mode = speed_mode
        if _init_setup_model:
            self._setup_model()

    def _implied_policy_kwargs(self) -> dict[str, Any]:
        """
        Policy arguments implied by the algorithm's own arguments. They are added when the policy is built and kept
        out of ``policy_kwargs``, which stays what the user gave (and what SB3 saves and compares on load).
        """
        if self.speed_mode_info is None:
            return {}
        # speed_mode: the critic layout it chose (batched: fewer, larger kernels; other random draws than SB3) and
        # PyTorch's fused Adam (one kernel per step; other rounding than SB3)
        return {"batched_critics": self.speed_mode_info.batched_critics, "fused_adam": True}

    def _setup_model(self) -> None:
        # A checkpoint written by SB3 names SB3's policy class: build ours, which has the same modules
        for name, sb3_policy_class in SB3_TD3_POLICIES.items():
            if self.policy_class is sb3_policy_class:
                self.policy_class = self.policy_aliases[name]
        self._configure_speed_mode()
        # SB3's ReplayBuffer, sampled faster (same storage, same draws)
        plain_buffer = self.replay_buffer_class in (None, ReplayBuffer) and not isinstance(self.observation_space, spaces.Dict)
        if plain_buffer and self.n_steps == 1:
            self.replay_buffer_class = FastReplayBuffer
        # SB3 builds the policy from `policy_kwargs`: for that moment only, with the implied arguments added.
        # Those are owned by the algorithm's arguments (files of version 0.1 have them in policy_kwargs)
        user_policy_kwargs = {
            key: value for key, value in self.policy_kwargs.items() if key not in self.implied_policy_arguments
        }
        self.policy_kwargs = {**user_policy_kwargs, **self._implied_policy_kwargs()}
        try:
            super()._setup_model()
        finally:
            self.policy_kwargs = user_policy_kwargs
        self._create_aliases()
        self._apply_speed_mode()
        self._install_lean_collection()

    def _create_aliases(self) -> None:
        self.actor = self.policy.actor
        self.actor_target = self.policy.actor_target
        self.critic = self.policy.critic
        self.critic_target = self.policy.critic_target
        # the leaves of the actor update's backward pass, listed once (a module traversal per train() call costs more
        # than a small network's kernels); the parameters keep their identity through load, set_parameters and .to()
        self._actor_parameters = list(self.actor.parameters())

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
        stats = TrainingStats()
        for _ in range(gradient_steps):
            self._n_updates += 1
            replay_data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)  # type: ignore[union-attr]
            with th.no_grad():
                next_actions = self.actor_target(replay_data.next_observations)
                next_q_values = self.critic_target.q1_forward(replay_data.next_observations, next_actions)
                target_q_values = self._td_target(replay_data, next_q_values)

            # Critic: regress Q(s, a) on the TD target
            current_q_values = self.critic(replay_data.observations, replay_data.actions)
            critic_loss = sum(F.mse_loss(current_q, target_q_values) for current_q in current_q_values)
            self._gradient_step(self.critic.optimizer, critic_loss)  # type: ignore[arg-type]
            stats.critic_step(critic_loss, current_q_values, target_q_values)  # type: ignore[arg-type]

            # Actor: the deterministic policy gradient, maximising the critic's value of the actor's action
            actions = self.actor(replay_data.observations)
            actor_loss = -self.critic.q1_forward(replay_data.observations, actions).mean()
            self._gradient_step(self.actor.optimizer, actor_loss, inputs=self._actor_parameters)
            stats.actor_step(actor_loss)

            self._update_target_networks()
        self._record_training_stats(stats)

    def _record_training_stats(self, stats: TrainingStats) -> None:
        """Log the losses and diagnostics of one ``train()`` call."""
        stats.record(self.logger, self._n_updates)

    def _td_target(self, replay_data: ReplayBufferSamples, next_q_values: th.Tensor) -> th.Tensor:
        """The one-step (or n-step) bootstrapped target ``r + gamma * (1 - done) * Q'(s', a')``."""
        # n-step replay gives gamma**n per sample (less where the episode ended early)
        discounts = replay_data.discounts if replay_data.discounts is not None else self.gamma
        return replay_data.rewards + (1 - replay_data.dones) * discounts * next_q_values

    @staticmethod
    def _gradient_step(optimizer: th.optim.Optimizer, loss: th.Tensor, inputs: list[th.Tensor] | None = None) -> None:
        """
        One optimizer step on ``loss``.

        :param inputs: the only leaves to compute gradients for (the actor update skips the critic's weight gradients)
        """
        optimizer.zero_grad()
        loss.backward(inputs=inputs)
        optimizer.step()

    def _update_target_networks(self) -> None:
        """Move the target networks towards the online ones (Polyak averaging with ``tau``)."""
        params, target_params, running_stats, target_running_stats = self.policy.polyak_tensors()
        foreach_polyak_update(params, target_params, self.tau)
        foreach_polyak_update(running_stats, target_running_stats, 1.0)

    def learn(
        self: SelfDDPG,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 4,
        tb_log_name: str = "DDPG",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfDDPG:
        return super().learn(
            total_timesteps=total_timesteps,
            callback=callback,
            log_interval=log_interval,
            tb_log_name=tb_log_name,
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
        )

    def _excluded_save_params(self) -> list[str]:
        # What the speed mode and lean collection derive from the hardware and the spaces is derived again at load
        derived = ["speed_mode_info", "_lean_observations", "_actor_parameters"]
        return [*super()._excluded_save_params(), "actor", "critic", "actor_target", "critic_target", *derived]

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        return ["policy", "actor.optimizer", "critic.optimizer"], []

    def _sb3_policy_class(self) -> type[BasePolicy] | None:
        """SB3's TD3 policy class that builds exactly this model's policy, or None where SB3 has no equivalent."""
        if self.speed_mode or not set(self.policy_kwargs) <= SB3_POLICY_ARGUMENTS:
            return None
        names = [name for name, policy_class in self.policy_aliases.items() if self.policy_class is policy_class]
        return SB3_TD3_POLICIES[names[0]] if names else None

    def save(
        self,
        path: str | pathlib.Path | io.BufferedIOBase,
        exclude: Iterable[str] | None = None,
        include: Iterable[str] | None = None,
    ) -> None:
        """
        Save the model in SB3's format. Where SB3 can represent the model (our DDPG; AblatableTD3 with every switch
        on; not in speed mode) the file names SB3's policy and buffer classes, so SB3's ``TD3``/``DDPG`` (and tools
        without this package) load it; the optimizer states are in PyTorch's per-parameter layout either way.
        Parameters as SB3's ``save``.
        """
        # The two classes are the only differences from the file SB3 writes; swapped for the writing only
        saved_as: dict[str, Any] = {}
        sb3_policy_class = self._sb3_policy_class()
        if sb3_policy_class is not None:
            saved_as["policy_class"] = sb3_policy_class
        if self.replay_buffer_class is FastReplayBuffer:
            saved_as["replay_buffer_class"] = ReplayBuffer
        originals = {name: self.__dict__[name] for name in saved_as}
        self.__dict__.update(saved_as)
        try:
            super().save(path, exclude=exclude, include=include)
        finally:
            self.__dict__.update(originals)

    @classmethod
    def load(  # type: ignore[override]
        cls: type[SelfDDPG],
        path: str | pathlib.Path | io.BufferedIOBase,
        env: GymEnv | None = None,
        device: th.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> SelfDDPG:
        """
        SB3's ``load``, for files written by this package or by SB3's TD3/DDPG, with SB3's keywords.

        Keyword arguments change the loaded model as in SB3, except: ``policy_kwargs`` that build the same policy as
        the saved ones are accepted (those given at creation), other ones are refused; a component switch equal to
        the saved one changes nothing, a different one is applied where that is meaningful or refused with an
        error naming it (see :meth:`AblatableTD3._check_load_kwargs`); ``speed_mode`` cannot be switched on or off
        (a speed-mode model may be given another precision, ``"bfloat16"`` or ``"float32"``).
        """
        data = read_saved_data(path, custom_objects)
        kwargs = cls._check_load_kwargs(data, dict(kwargs))
        return super().load(
            path,
            env=env,
            device=device,
            custom_objects=custom_objects,
            print_system_info=print_system_info,
            force_reset=force_reset,
            **kwargs,
        )

    @classmethod
    def _check_load_kwargs(cls, data: dict[str, Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """
        The keyword arguments of :meth:`load` that SB3's ``load`` should write into the model; raise on a change
        that cannot be applied to the saved model.

        :param data: the saved attributes of the model
        :param kwargs: the keyword arguments given to ``load``
        """
        if "switches" in data and not cls.switch_names:
            raise ValueError(
                f"this model was saved by AblatableTD3 (switches {data['switches']}): load it with AblatableTD3.load"
            )
        saved_speed_mode = data.get("speed_mode", False)
        if "speed_mode" in kwargs and bool(kwargs["speed_mode"]) != bool(saved_speed_mode):
            raise ValueError(
                f"speed_mode={kwargs['speed_mode']!r} differs from the saved model's ({saved_speed_mode!r}): its "
                "critics and optimizer states are stored for the other mode"
            )
        if "policy_kwargs" in kwargs:
            saved = {key: value for key, value in data.get("policy_kwargs", {}).items() if key != "device"}
            given = kwargs.pop("policy_kwargs") or {}
            if cls._comparable_policy_kwargs(given, data) != cls._comparable_policy_kwargs(saved, data):
                raise ValueError(
                    f"policy_kwargs={given} build another policy than the saved policy_kwargs={saved}; "
                    "a loaded model keeps its networks"
                )
        return kwargs

    @classmethod
    def _comparable_policy_kwargs(cls, policy_kwargs: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        """``policy_kwargs`` as they build the policy: with the defaults, without what the saved model implies."""
        comparable = {**cls.policy_kwargs_defaults, **policy_kwargs}
        return {key: value for key, value in comparable.items() if key not in cls.implied_policy_arguments}

    def set_parameters(
        self,
        load_path_or_dict: str | pathlib.Path | io.BufferedIOBase | dict[str, Any],
        exact_match: bool = True,
        device: th.device | str = "auto",
    ) -> None:
        """
        SB3's ``set_parameters`` (parameters in SB3's layout or ours); if loading fails part way, the model keeps
        the parameters it had. Parameters as SB3's.
        """
        previous = copy.deepcopy(self.get_parameters())
        try:
            super().set_parameters(load_path_or_dict, exact_match=exact_match, device=device)  # type: ignore[arg-type]
        except Exception:
            super().set_parameters(previous, exact_match=True, device=device)
            raise

    def save_replay_buffer(self, path: str | pathlib.Path | io.BufferedIOBase) -> None:
        """Save the replay buffer, as SB3's ``ReplayBuffer`` where it is our faster one (the same storage)."""
        buffer = self.replay_buffer
        if type(buffer) is FastReplayBuffer:
            buffer = copy.copy(buffer)  # shares the arrays
            buffer.__class__ = ReplayBuffer
        save_to_pkl(path, buffer, self.verbose)

    def load_replay_buffer(self, path: str | pathlib.Path | io.BufferedIOBase, truncate_last_traj: bool = True) -> None:
        """SB3's ``load_replay_buffer``; SB3's plain ``ReplayBuffer`` is sampled by our faster one (same storage)."""
        super().load_replay_buffer(path, truncate_last_traj=truncate_last_traj)
        if type(self.replay_buffer) is ReplayBuffer and self.replay_buffer_class is FastReplayBuffer:
            self.replay_buffer.__class__ = FastReplayBuffer


def read_saved_data(path: str | pathlib.Path | io.BufferedIOBase, custom_objects: dict[str, Any] | None = None) -> dict:
    """The saved attributes (``data``) of an SB3 model file, read without its parameters."""
    file = open_path(path, "r", suffix="zip")
    position = file.tell()
    try:
        with zipfile.ZipFile(file) as archive:
            if "data" not in archive.namelist():
                raise ValueError(f"{path} is not a saved model: it has no 'data' entry")
            return json_to_data(archive.read("data").decode(), custom_objects=custom_objects)
    except zipfile.BadZipFile as error:
        raise ValueError(f"{path} is not a saved model (not a zip file)") from error
    finally:
        if isinstance(path, io.BufferedIOBase):
            file.seek(position)  # SB3 reads the same file-like object next
        else:
            file.close()

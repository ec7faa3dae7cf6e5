"""DDPG written from scratch on SB3's off-policy machinery."""

from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.policies import BasePolicy, ContinuousCritic
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, ReplayBufferSamples, Schedule
from stable_baselines3.common.utils import get_parameters_by_name
from torch.nn import functional as F

from sb3_ablation.common.buffers import FastReplayBuffer
from sb3_ablation.common.collection import LeanCollectionMixin
from sb3_ablation.common.mixed_precision import SpeedModeMixin
from sb3_ablation.common.utils import FlatParameters, LeanAdamStep, check_keyword_arguments, foreach_polyak_update
from sb3_ablation.ddpg.policies import Actor, CnnPolicy, DDPGPolicy, MlpPolicy, MultiInputPolicy

SelfDDPG = TypeVar("SelfDDPG", bound="DDPG")


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
        large hidden layers where the hardware is faster in bfloat16, float32 elsewhere, critics batched in one network
        for small networks (``model.speed_mode_info`` says what was chosen; ``"bfloat16"``/``"float32"`` force it)
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
    policy: DDPGPolicy
    actor: Actor
    actor_target: Actor | None
    critic: ContinuousCritic
    critic_target: ContinuousCritic | None

    def __new__(cls, *args: Any, **kwargs: Any):
        # A misspelt keyword gets a message naming the closest valid one (before Python's bare TypeError)
        check_keyword_arguments(cls, kwargs, highlighted=getattr(cls, "switch_names", ()))
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
            policy_kwargs=dict(policy_kwargs or {}),  # a copy: the switches add to it
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
            raise ValueError(
                f"{type(self).__name__} needs a continuous action space (gymnasium.spaces.Box), "
                f"but the environment's action space is {self.action_space}"
            )
        self.speed_mode = speed_mode
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        self._configure_speed_mode()
        plain_buffer = self.replay_buffer_class is None and not isinstance(self.observation_space, spaces.Dict)
        if plain_buffer and self.n_steps == 1:
            self.replay_buffer_class = FastReplayBuffer
        super()._setup_model()
        self._create_aliases()
        self._flatten_parameters()
        self._apply_speed_mode()
        self._install_lean_collection()

    def _create_aliases(self) -> None:
        self.actor = self.policy.actor
        self.actor_target = self.policy.actor_target
        self.critic = self.policy.critic
        self.critic_target = self.policy.critic_target
        # Parameter lists are built once: the train step runs thousands of times
        self._actor_leaves = list(self.actor.parameters())
        self._actor_params = list(self.actor.parameters())
        self._critic_params = list(self.critic.parameters())
        if self.actor_target is not None and self.critic_target is not None:
            self._actor_target_params = list(self.actor_target.parameters())
            self._critic_target_params = list(self.critic_target.parameters())
            # Batch-norm running statistics are copied, not averaged (SB3 issue #996)
            self._running_stats = get_parameters_by_name(self.actor, ["running_"]) + get_parameters_by_name(
                self.critic, ["running_"]
            )
            self._running_stats_target = get_parameters_by_name(self.actor_target, ["running_"]) + get_parameters_by_name(
                self.critic_target, ["running_"]
            )

    def _flatten_parameters(self) -> None:
        """
        Put each network's parameters in one contiguous buffer and optimize that buffer: the same Adam arithmetic,
        with a few kernels per step instead of a few per tensor (see :class:`FlatParameters`).
        Skipped when actor and critic share a features extractor or the optimizer is not Adam.
        """
        elementwise_optimizer = issubclass(self.policy.optimizer_class, (th.optim.Adam, th.optim.AdamW))
        if self.policy.share_features_extractor or not elementwise_optimizer:
            return
        for network in (self.actor, self.critic):
            flat_params = FlatParameters(list(network.parameters()))
            network.optimizer = self.policy.optimizer_class(
                [flat_params.flat], lr=self.lr_schedule(1), **self.policy.optimizer_kwargs
            )
            network.optimizer.zero_grad = flat_params.zero_grad  # type: ignore[method-assign]
            if LeanAdamStep.applies_to(network.optimizer):
                network.optimizer.step = LeanAdamStep(network.optimizer)  # type: ignore[method-assign]
            network.flat_params = flat_params
        self._actor_params, self._critic_params = [self.actor.flat_params.flat], [self.critic.flat_params.flat]
        if self.actor_target is not None and self.critic_target is not None:
            self._actor_target_params = [FlatParameters(list(self.actor_target.parameters()), gradients=False).flat]
            self._critic_target_params = [FlatParameters(list(self.critic_target.parameters()), gradients=False).flat]

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
        actor_losses, critic_losses = [], []
        for _ in range(gradient_steps):
            self._n_updates += 1
            replay_data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)  # type: ignore[union-attr]
            with th.no_grad():
                next_actions = self.actor_target(replay_data.next_observations)
                next_q_values = self.critic_target.q1_forward(replay_data.next_observations, next_actions)
                target_q_values = self._td_target(replay_data, next_q_values)
            critic_losses.append(self._update_critic(replay_data, target_q_values))
            actor_losses.append(self._update_actor(replay_data.observations))
            self._update_target_networks()
        self._record_losses(actor_losses, critic_losses)

    def _td_target(self, replay_data: ReplayBufferSamples, next_q_values: th.Tensor) -> th.Tensor:
        """The one-step (or n-step) bootstrapped target ``r + gamma * (1 - done) * Q'(s', a')``."""
        # n-step replay gives gamma**n per sample (less where the episode ended early)
        discounts = replay_data.discounts if replay_data.discounts is not None else self.gamma
        return replay_data.rewards + (1 - replay_data.dones) * discounts * next_q_values

    def _update_critic(self, replay_data: ReplayBufferSamples, target_q_values: th.Tensor) -> th.Tensor:
        """One gradient step on the mean squared TD error of every critic; returns the loss."""
        current_q_values = self.critic(replay_data.observations, replay_data.actions)
        critic_loss = sum(F.mse_loss(current_q, target_q_values) for current_q in current_q_values)
        self.critic.optimizer.zero_grad()
        critic_loss.backward()  # type: ignore[union-attr]
        self.critic.optimizer.step()
        return critic_loss.detach()  # type: ignore[union-attr]

    def _update_actor(self, observations: th.Tensor) -> th.Tensor:
        """One deterministic policy gradient step: maximise critic 1's value of the actor's action; returns the loss."""
        actor_loss = -self.critic.q1_forward(observations, self.actor(observations)).mean()
        self.actor.optimizer.zero_grad()
        # Only the actor's gradients are used: skip computing the critic's weight gradients
        actor_loss.backward(inputs=self._actor_leaves)
        self.actor.optimizer.step()
        return actor_loss.detach()

    def _update_target_networks(self) -> None:
        """Move the target networks towards the online ones (Polyak averaging with ``tau``)."""
        foreach_polyak_update(self._critic_params, self._critic_target_params, self.tau)
        foreach_polyak_update(self._actor_params, self._actor_target_params, self.tau)
        foreach_polyak_update(self._running_stats, self._running_stats_target, 1.0)

    def _record_losses(self, actor_losses: list[th.Tensor], critic_losses: list[th.Tensor]) -> None:
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        if actor_losses:
            self.logger.record("train/actor_loss", np.mean([loss.item() for loss in actor_losses]))
        self.logger.record("train/critic_loss", np.mean([loss.item() for loss in critic_losses]))

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
        excluded = ["actor", "critic", "actor_target", "critic_target", "_actor_leaves", "_actor_params", "_critic_params"]
        excluded += ["_actor_target_params", "_critic_target_params", "_running_stats", "_running_stats_target"]
        return super()._excluded_save_params() + excluded

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        return ["policy", "actor.optimizer", "critic.optimizer"], []

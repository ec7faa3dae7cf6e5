"""TD3 with each of its components behind a keyword switch."""

import inspect
import warnings
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule

from sb3_ablation.ddpg.ddpg import DDPG
from sb3_ablation.td3.policies import AblatableTD3Policy, CnnPolicy, MlpPolicy, MultiInputPolicy

SelfAblatableTD3 = TypeVar("SelfAblatableTD3", bound="AblatableTD3")

# The six components of TD3 (Fujimoto et al., 2018) over DDPG, in the order of the classic exercise
SWITCHES = (
    "deterministic_policy",
    "replay_buffer",
    "target_networks",
    "target_policy_smoothing",
    "delayed_policy_update",
    "clipped_double_q",
)


class AblatableTD3(DDPG):
    """
    Twin Delayed DDPG (TD3) in which every component can be switched off.

    With every switch on (the default) this is TD3 as published, and exactly SB3's TD3.
    Paper: https://arxiv.org/abs/1802.09477

    :param policy: The policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy)
    :param env: The environment to learn from (if registered in Gym, can be str)
    :param learning_rate: learning rate for Adam, the same for actor and critics;
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
    :param policy_delay: The actor and the target networks are updated once every ``policy_delay`` critic updates
    :param target_policy_noise: Standard deviation of the Gaussian noise added to target actions (smoothing)
    :param target_noise_clip: Limit for the absolute value of the target policy smoothing noise
    :param deterministic_policy: (1) True: a deterministic actor trained by the deterministic policy gradient through
        critic 1, exploring with ``action_noise``. False: a tanh-squashed Gaussian actor trained by the
        reparameterization trick to maximise critic 1 (no entropy term), exploring by sampling itself.
    :param replay_buffer: (2) False: online updates from the newest transition only (one transition per env kept,
        batches of one).
    :param target_networks: (3) False: no target copies, targets are computed with the online actor and critics.
    :param target_policy_smoothing: (4) False: no clipped noise on target actions.
    :param delayed_policy_update: (5) False: the actor (and the targets) are updated after every critic update.
    :param clipped_double_q: (6) False: a single critic, bootstrapped from its own target without a minimum.
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
    policy: AblatableTD3Policy
    switch_names = SWITCHES

    def __init__(
        self,
        policy: str | type[AblatableTD3Policy],
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
        policy_delay: int = 2,
        target_policy_noise: float = 0.2,
        target_noise_clip: float = 0.5,
        deterministic_policy: bool = True,
        replay_buffer: bool = True,
        target_networks: bool = True,
        target_policy_smoothing: bool = True,
        delayed_policy_update: bool = True,
        clipped_double_q: bool = True,
        speed_mode: bool | str = False,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
    ):
        switches = dict(
            deterministic_policy=deterministic_policy,
            replay_buffer=replay_buffer,
            target_networks=target_networks,
            target_policy_smoothing=target_policy_smoothing,
            delayed_policy_update=delayed_policy_update,
            clipped_double_q=clipped_double_q,
        )
        for name, value in switches.items():
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"switch {name} must be True or False, got {value!r} ({type(value).__name__})")
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
            speed_mode=speed_mode,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=False,
        )
        self.policy_delay = policy_delay
        self.target_policy_noise = target_policy_noise
        self.target_noise_clip = target_noise_clip
        # `replay_buffer` stays SB3's buffer object: that switch is read from `switches`
        self.switches = {name: bool(value) for name, value in switches.items()}
        self.deterministic_policy = self.switches["deterministic_policy"]
        self.target_networks = self.switches["target_networks"]
        self.target_policy_smoothing = self.switches["target_policy_smoothing"]
        self.delayed_policy_update = self.switches["delayed_policy_update"]
        self.clipped_double_q = self.switches["clipped_double_q"]
        if _init_setup_model:  # a loaded model restores these from its save instead
            self._apply_switches()
            self._setup_model()

    def _apply_switches(self) -> None:
        """Set the hyperparameters each switched-off component implies, warning about those it makes unused."""
        defaults = {name: p.default for name, p in inspect.signature(AblatableTD3.__init__).parameters.items()}
        defaults["n_critics"] = 1

        def ignore(name: str, value: Any, component: str, imposed: Any = None) -> None:
            if value != defaults[name] and value != imposed:
                # stacklevel 4: the line of user code that built the model
                warnings.warn(f"{name}={value!r} is ignored because {component}=False", UserWarning, stacklevel=4)

        if not self.deterministic_policy:
            ignore("action_noise", self.action_noise, "deterministic_policy")
            self.action_noise = None  # the Gaussian actor explores by sampling itself
        if not self.switches["replay_buffer"]:
            ignore("buffer_size", self.buffer_size, "replay_buffer", imposed=self.n_envs)
            ignore("batch_size", self.batch_size, "replay_buffer", imposed=1)
            ignore("optimize_memory_usage", self.optimize_memory_usage, "replay_buffer")
            # One transition per env: every update learns from the newest transition alone
            self.buffer_size, self.batch_size, self.optimize_memory_usage = self.n_envs, 1, False
        if not self.target_networks:
            ignore("tau", self.tau, "target_networks")
        if not self.target_policy_smoothing:
            ignore("target_policy_noise", self.target_policy_noise, "target_policy_smoothing")
            ignore("target_noise_clip", self.target_noise_clip, "target_policy_smoothing")
        if not self.delayed_policy_update:
            ignore("policy_delay", self.policy_delay, "delayed_policy_update")
        if not self.clipped_double_q:
            ignore("n_critics", self.policy_kwargs.get("n_critics", 1), "clipped_double_q")
            self.policy_kwargs["n_critics"] = 1
        self.policy_kwargs["deterministic_actor"] = self.deterministic_policy
        self.policy_kwargs["target_networks"] = self.target_networks

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
        # Component 5, delayed policy updates: the actor and the targets move once every `policy_delay` critic steps
        policy_delay = self.policy_delay if self.delayed_policy_update else 1
        actor_losses, critic_losses = [], []
        for _ in range(gradient_steps):
            self._n_updates += 1
            replay_data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)  # type: ignore[union-attr]
            with th.no_grad():
                next_q_values = self._next_q_values(replay_data.next_observations, replay_data.actions)
                target_q_values = self._td_target(replay_data, next_q_values)
            critic_losses.append(self._update_critic(replay_data, target_q_values))
            if self._n_updates % policy_delay == 0:
                actor_losses.append(self._update_actor(replay_data.observations))
                if self.target_networks:
                    self._update_target_networks()
        self._record_losses(actor_losses, critic_losses)

    def _next_q_values(self, next_observations: th.Tensor, actions: th.Tensor) -> th.Tensor:
        """The value of the next state that the critic target bootstraps from, shape (batch, 1)."""
        # Component 3, target networks: bootstrap from slowly moving copies, or from the online networks
        actor, critic = (self.actor_target, self.critic_target) if self.target_networks else (self.actor, self.critic)
        # Component 4, target policy smoothing: clipped Gaussian noise on the target action
        if self.target_policy_smoothing:
            noise = actions.clone().data.normal_(0, self.target_policy_noise)
            noise = noise.clamp(-self.target_noise_clip, self.target_noise_clip)
            next_actions = (actor(next_observations) + noise).clamp(-1, 1)
        else:
            next_actions = actor(next_observations)
        next_q_values = th.cat(critic(next_observations, next_actions), dim=1)
        # Component 6, clipped double Q-learning: the minimum over the critics
        if self.clipped_double_q:
            next_q_values, _ = th.min(next_q_values, dim=1, keepdim=True)
        return next_q_values

    def learn(
        self: SelfAblatableTD3,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 4,
        tb_log_name: str = "AblatableTD3",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfAblatableTD3:
        return super().learn(
            total_timesteps=total_timesteps,
            callback=callback,
            log_interval=log_interval,
            tb_log_name=tb_log_name,
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
        )


__all__ = ["SWITCHES", "AblatableTD3"]

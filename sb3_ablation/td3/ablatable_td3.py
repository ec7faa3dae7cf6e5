"""TD3 with each of its components behind a keyword switch."""

import inspect
import io
import pathlib
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar, cast

import numpy as np
import torch as th
from stable_baselines3.common.buffers import NStepReplayBuffer, ReplayBuffer
from stable_baselines3.common.noise import ActionNoise, VectorizedActionNoise
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from stable_baselines3.her import HerReplayBuffer
from torch.nn import functional as F

from sb3_ablation.common.off_policy import SB3_POLICY_ARGUMENTS, OffPolicyActorCritic
from sb3_ablation.common.training_stats import TrainingStats
from sb3_ablation.common.utils import foreach_polyak_update, user_stacklevel
from sb3_ablation.switches import DEFAULTS, SWITCHES, TABLE, check_switch
from sb3_ablation.td3.policies import AblatableTD3Policy, CnnPolicy, GaussianActor, MlpPolicy, MultiInputPolicy

# TD3's exploration noise (Fujimoto et al., 2018): the Gaussian actor's initial std when no action noise is given
DEFAULT_EXPLORATION_STD = 0.1

SelfAblatableTD3 = TypeVar("SelfAblatableTD3", bound="AblatableTD3")


def check_online_updates(replay_buffer_class: type[ReplayBuffer] | None, n_steps: int, train_freq: Any) -> None:
    """
    Refuse, with one line each, the SB3 settings that ``replay_buffer=False`` (a buffer of the newest transition
    of each env, updates on it as it arrives) cannot honour.
    """
    if replay_buffer_class is not None and issubclass(replay_buffer_class, HerReplayBuffer):
        raise ValueError("replay_buffer=False cannot use HerReplayBuffer: relabelling goals needs stored episodes")
    if n_steps > 1 or (replay_buffer_class is not None and issubclass(replay_buffer_class, NStepReplayBuffer)):
        raise ValueError(f"replay_buffer=False needs n_steps=1 (got {n_steps}): n-step returns need stored transitions")
    frequency, unit = (train_freq, "step") if isinstance(train_freq, int) else train_freq
    unit = getattr(unit, "value", unit)
    if (frequency, unit) != (1, "step"):
        raise ValueError(
            f"replay_buffer=False needs train_freq=1 (got {train_freq!r}): it learns from each newest transition as "
            "it arrives, and the transitions between updates would be dropped unseen"
        )


def exploration_std(action_noise: ActionNoise | None) -> float | list[float]:
    """
    The standard deviation of Gaussian-like action noise (SB3's normal or Ornstein-Uhlenbeck noise, vectorized or
    not), per action dimension; 0.1, TD3's exploration noise, when there is none.
    """
    if isinstance(action_noise, VectorizedActionNoise):
        action_noise = action_noise.base_noise
    sigma = getattr(action_noise, "_sigma", None)
    if sigma is None:
        return DEFAULT_EXPLORATION_STD
    return [float(value) for value in np.broadcast_to(np.asarray(sigma, dtype=np.float64), (np.size(sigma),))]


class SwitchAttribute:
    """A component switch read as an attribute of the model (``model.clipped_double_q``): its value is in ``switches``."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, model: "AblatableTD3 | None", owner: type | None = None) -> Any:
        return self if model is None else model.switches[self.name]

    def __set__(self, model: "AblatableTD3", value: Any) -> None:
        raise AttributeError(f"{self.name} is set by AblatableTD3(...) or AblatableTD3.load(..., {self.name}=...)")


class AblatableTD3(OffPolicyActorCritic):
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
        reparameterization trick to maximise critic 1 (no entropy term), exploring by sampling itself; its pre-tanh
        standard deviation starts, in every state, at the ``sigma`` of ``action_noise`` (0.1 without action noise),
        so it explores at first as TD3 does; ``train/actor_std`` logs how it evolves.
    :param replay_buffer: (2) False: online updates from the newest transition only (one transition per env kept,
        batches of one). It refuses, at construction, ``HerReplayBuffer``, ``n_steps > 1`` and a ``train_freq``
        other than one step, which need stored transitions.
    :param target_networks: (3) False: no target copies, targets are computed with the online actor and critics.
    :param target_policy_smoothing: (4) False: no clipped noise on target actions.
    :param delayed_policy_update: (5) False: the actor (and the targets) are updated after every critic update.
    :param clipped_double_q: (6) False: a single critic, bootstrapped from its own target without a minimum.
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
    # Its own files and SB3's TD3's (not DDPG's, SB3's or ours, nor BatchedTD3's stacked agents)
    loadable_algorithms: ClassVar[tuple[str, ...]] = ("AblatableTD3", "TD3")
    # The policy arguments that only the switches set (those SB3's policy lacks; n_critics is also the user's)
    implied_policy_arguments = (
        *OffPolicyActorCritic.implied_policy_arguments,
        *(key for switch in TABLE for key in switch.policy_when_off if key not in SB3_POLICY_ARGUMENTS),
    )
    policy: AblatableTD3Policy
    switch_names = highlighted_keywords = SWITCHES
    switches: dict[str, bool]
    # The switches as attributes, except `replay_buffer` (SB3's buffer object has that name)
    deterministic_policy = SwitchAttribute()
    target_networks = SwitchAttribute()
    target_policy_smoothing = SwitchAttribute()
    delayed_policy_update = SwitchAttribute()
    clipped_double_q = SwitchAttribute()

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
            check_switch(name, value)
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
        )
        self.policy_delay = policy_delay
        self.target_policy_noise = target_policy_noise
        self.target_noise_clip = target_noise_clip
        # The one place the switch values live (`replay_buffer` is SB3's buffer object: that switch is read here)
        self.switches = {name: bool(value) for name, value in switches.items()}
        # The Gaussian actor (deterministic_policy=False) starts with the spread of the action noise it replaces
        self.actor_initial_std = exploration_std(action_noise)
        if deterministic_policy:  # (the Gaussian actor explores by sampling itself)
            self._say_missing_action_noise()
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        # At creation and at load (where the zoo passes every hyperparameter of its entry again)
        self._apply_switches()
        super()._setup_model()

    def _implied_policy_kwargs(self) -> dict[str, Any]:
        implied = super()._implied_policy_kwargs()
        for switch in TABLE:
            if not self.switches[switch.name]:
                implied.update(switch.policy_when_off)
        # Component 1: the Gaussian actor starts with the spread of the action noise it replaces
        if not self.deterministic_policy:
            implied["actor_initial_std"] = self.policy_kwargs.get("actor_initial_std", self.actor_initial_std)
        return implied

    def _apply_switches(self) -> None:
        """
        Impose the hyperparameters each switched-off component implies, warn about those it makes unused (set to
        something other than their default or the imposed value), and refuse the SB3 features a switched-off
        component cannot work with (one line each).
        """
        imposed: dict[str, Any] = {}
        if not self.deterministic_policy:
            imposed["action_noise"] = None  # the Gaussian actor explores by sampling itself
        if not self.switches["replay_buffer"]:
            check_online_updates(self.replay_buffer_class, self.n_steps, self.train_freq)
            # One transition per env: every update learns from the newest transition alone
            imposed.update(buffer_size=self.n_envs, batch_size=1, optimize_memory_usage=False)
        defaults = {name: p.default for name, p in inspect.signature(AblatableTD3.__init__).parameters.items()}
        defaults["n_critics"] = 1
        for switch in TABLE:
            if self.switches[switch.name]:
                continue
            for name in switch.unused:
                value = self.policy_kwargs.get(name, 1) if name == "n_critics" else getattr(self, name)
                if value != defaults[name] and (name not in imposed or value != imposed[name]):
                    note = f" ({switch.unused_note})" if switch.unused_note else ""
                    message = f"{name}={value!r} is ignored because {switch.name}=False{note}"
                    warnings.warn(message, UserWarning, stacklevel=user_stacklevel())
        for name, value in imposed.items():
            setattr(self, name, value)

    def _sb3_policy_class(self) -> type[BasePolicy] | None:
        # With a component switched off there is no SB3 equivalent: the checkpoint is ours
        return super()._sb3_policy_class() if all(self.switches.values()) else None

    @classmethod
    def _check_load_kwargs(cls, data: dict[str, Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """
        As :meth:`OffPolicyActorCritic._check_load_kwargs`, and for the component switches: a switch equal to the saved one is
        dropped (the zoo's ``--trained-agent`` passes them all); a different ``target_policy_smoothing`` or
        ``delayed_policy_update`` is applied (they act only on the updates to come); a different
        ``deterministic_policy``, ``replay_buffer``, ``target_networks`` or ``clipped_double_q`` is refused, since
        the saved networks (or buffer) are those of the other setting.
        """
        kwargs = super()._check_load_kwargs(data, kwargs)
        saved = {**DEFAULTS, **data.get("switches", {})}  # SB3's TD3: every component on
        changes = {}
        for switch in TABLE:
            if switch.name not in kwargs:
                continue
            value = check_switch(switch.name, kwargs.pop(switch.name))
            if value == saved[switch.name]:
                continue
            if not switch.changeable_on_load:
                raise ValueError(
                    f"{switch.name}={value} cannot be applied to a model saved with {switch.name}={saved[switch.name]}: "
                    f"{switch.load_refusal}"
                )
            changes[switch.name] = value
        if changes:
            kwargs["switches"] = {**saved, **changes}
        return kwargs

    @classmethod
    def _comparable_policy_kwargs(cls, policy_kwargs: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        comparable = super()._comparable_policy_kwargs(policy_kwargs, data)
        comparable.pop("actor_initial_std", None)  # acts at initialization only: the saved actor exists
        if not data.get("switches", {}).get("clipped_double_q", True):
            comparable.pop("n_critics", None)  # one critic whatever was given
        return comparable

    def load_replay_buffer(self, path: str | pathlib.Path | io.BufferedIOBase, truncate_last_traj: bool = True) -> None:
        """SB3's ``load_replay_buffer``; with ``replay_buffer=False`` only a buffer of one transition per env fits."""
        previous = self.replay_buffer
        super().load_replay_buffer(path, truncate_last_traj=truncate_last_traj)
        if not self.switches["replay_buffer"] and self.replay_buffer.buffer_size != self.buffer_size:
            size = self.replay_buffer.buffer_size
            self.replay_buffer = previous
            raise ValueError(
                f"the replay buffer in {path} holds {size} transitions per env, but with replay_buffer=False the model "
                f"keeps {self.buffer_size} (the newest transition of each env)"
            )

    @property
    def loss_scale(self) -> int:
        """What the losses are multiplied by before their gradients are taken: 1, each loss as it is (see
        :class:`~sb3_ablation.batched.BatchedTD3`, whose losses are means over its agents)."""
        return 1

    def _gradient_step(
        self, optimizer: th.optim.Optimizer, loss: th.Tensor, inputs: Sequence[th.Tensor] | None = None
    ) -> None:
        """
        One optimizer step on ``loss`` (times :attr:`loss_scale`).

        :param inputs: the only leaves to compute gradients for (the actor update skips the critic's weight gradients)
        """
        optimizer.zero_grad()
        if self.loss_scale != 1:
            loss = loss * self.loss_scale
        loss.backward(inputs=inputs)
        optimizer.step()

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
        # Component 3, target networks: bootstrap from slowly moving copies, or from the online networks themselves
        if self.target_networks:
            assert self.actor_target is not None and self.critic_target is not None  # built with target_networks
            next_actor, next_critic = self.actor_target, self.critic_target
        else:
            next_actor, next_critic = self.actor, self.critic
        # Component 5, delayed policy updates: the actor and the targets move once every `policy_delay` critic updates
        policy_delay = self.policy_delay if self.delayed_policy_update else 1
        stats = TrainingStats()
        for _ in range(gradient_steps):
            self._n_updates += 1
            # Component 2, replay buffer: a minibatch of stored transitions, or one transition: the buffer then holds
            # only the newest transition of each env (see `_apply_switches`)
            if self.switches["replay_buffer"]:
                replay_data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)
            else:
                replay_data = self.replay_buffer.sample(1, env=self._vec_normalize_env)
            # n-step replay gives gamma**n per sample (less where the episode ended early)
            discounts = replay_data.discounts if replay_data.discounts is not None else self.gamma
            with th.no_grad():
                # Component 4, target policy smoothing: clipped Gaussian noise on the target action
                if self.target_policy_smoothing:
                    noise = replay_data.actions.clone().data.normal_(0, self.target_policy_noise)
                    noise = noise.clamp(-self.target_noise_clip, self.target_noise_clip)
                    next_actions = (next_actor(replay_data.next_observations) + noise).clamp(-1, 1)
                else:
                    next_actions = next_actor(replay_data.next_observations)
                # dim=-1: the critics' axis whatever leads it (a batch, or agents then a batch: sb3_ablation.batched)
                next_q_values = th.cat(next_critic(replay_data.next_observations, next_actions), dim=-1)
                # Component 6, clipped double Q-learning: bootstrap from the minimum over the critics (off: one critic)
                if self.clipped_double_q:
                    next_q_values, _ = th.min(next_q_values, dim=-1, keepdim=True)
                target_q_values = replay_data.rewards + (1 - replay_data.dones) * discounts * next_q_values

            # Critics: each regresses Q_i(s, a) on the same target
            current_q_values = self.critic(replay_data.observations, replay_data.actions)
            # (typeshed types a sum as possibly the int 0: these are tensors)
            critic_loss: th.Tensor = sum(F.mse_loss(q, target_q_values) for q in current_q_values)  # type: ignore[assignment]
            self._gradient_step(self.critic.optimizer, critic_loss)
            stats.critic_step(critic_loss, current_q_values, target_q_values)

            if self._n_updates % policy_delay == 0:
                # Component 1, deterministic policy: the actor's action, or a reparameterized sample of the Gaussian
                # actor (its gradient flows through the sample); either maximises critic 1
                if self.deterministic_policy:
                    actions, log_std = self.actor(replay_data.observations), None
                else:
                    gaussian_actor = cast(GaussianActor, self.actor)  # built with deterministic_actor=False
                    mean_actions, log_std = gaussian_actor.get_action_dist_params(replay_data.observations)
                    actions = gaussian_actor.action_dist.actions_from_params(mean_actions, log_std)
                actor_loss = -self.critic.q1_forward(replay_data.observations, actions).mean()
                self._gradient_step(self.actor.optimizer, actor_loss, inputs=self._actor_parameters)
                stats.actor_step(actor_loss, log_std)
                if self.target_networks:
                    # Polyak averaging with tau (each network's flat buffer at once); batch-norm statistics copied
                    params, target_params, running_stats, target_running_stats = self.policy.polyak_tensors()
                    foreach_polyak_update(params, target_params, self.tau)
                    foreach_polyak_update(running_stats, target_running_stats, 1.0)
        self._record_training_stats(stats)

    def learn(
        self: SelfAblatableTD3,
        total_timesteps: int | None = None,
        callback: MaybeCallback = None,
        log_interval: int = 4,
        tb_log_name: str = "AblatableTD3",
        reset_num_timesteps: bool = True,
        progress_bar: bool | None = None,
    ) -> SelfAblatableTD3:
        """
        SB3's ``learn``, exactly, for a given ``total_timesteps`` (above zero; ``progress_bar`` None is False).
        Without it: the budget of the zoo entry (:meth:`from_zoo`'s, else the env's ``n_timesteps`` in
        ``zoo_configs/ablatable_td3.yml``), said in one line, with a progress bar unless ``progress_bar=False``.

        :raise ValueError: ``total_timesteps`` of zero or below
        """
        total_timesteps, callback, progress_bar = self._learn_arguments(
            total_timesteps, callback, progress_bar, reset_num_timesteps
        )
        return super().learn(
            total_timesteps=total_timesteps,
            callback=callback,
            log_interval=log_interval,
            tb_log_name=tb_log_name,
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
        )


__all__ = ["SWITCHES", "AblatableTD3"]

"""DDPG written from scratch on SB3's off-policy machinery."""

from typing import Any, ClassVar, TypeVar

import torch as th
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from torch.nn import functional as F

from sb3_ablation.common.off_policy import OffPolicyActorCritic
from sb3_ablation.common.training_stats import TrainingStats
from sb3_ablation.common.utils import foreach_polyak_update
from sb3_ablation.ddpg.policies import Actor, CnnPolicy, Critic, DDPGPolicy, MlpPolicy, MultiInputPolicy

SelfDDPG = TypeVar("SelfDDPG", bound="DDPG")


class DDPG(OffPolicyActorCritic):
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
    zoo_config: ClassVar[str] = "ddpg_scratch"
    # Files of this DDPG and of SB3's (not SB3's TD3 nor AblatableTD3: their critics and updates differ)
    loadable_algorithms: ClassVar[tuple[str, ...]] = ("DDPG",)
    policy: DDPGPolicy
    actor_target: Actor  # DDPG always has its target networks
    critic_target: Critic

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
            speed_mode=speed_mode,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
        )
        self._say_missing_action_noise()
        if _init_setup_model:
            self._setup_model()

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
        stats = TrainingStats()
        for _ in range(gradient_steps):
            self._n_updates += 1
            replay_data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)
            # n-step replay gives gamma**n per sample (less where the episode ended early)
            discounts = replay_data.discounts if replay_data.discounts is not None else self.gamma
            with th.no_grad():
                next_actions = self.actor_target(replay_data.next_observations)
                next_q_values = self.critic_target.q1_forward(replay_data.next_observations, next_actions)
                target_q_values = replay_data.rewards + (1 - replay_data.dones) * discounts * next_q_values

            # Critic: regress Q(s, a) on the TD target
            current_q_values = self.critic(replay_data.observations, replay_data.actions)
            # (typeshed types a sum as possibly the int 0: these are tensors)
            critic_loss: th.Tensor = sum(F.mse_loss(q, target_q_values) for q in current_q_values)  # type: ignore[assignment]
            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()
            stats.critic_step(critic_loss, current_q_values, target_q_values)

            # Actor: the deterministic policy gradient, maximising the critic's value of the actor's action
            actions = self.actor(replay_data.observations)
            actor_loss = -self.critic.q1_forward(replay_data.observations, actions).mean()
            self.actor.optimizer.zero_grad()
            actor_loss.backward(inputs=self._actor_parameters)  # the actor's gradients only, not the critic's
            self.actor.optimizer.step()
            stats.actor_step(actor_loss)

            # Targets: Polyak averaging with tau (each network's flat buffer at once); batch-norm statistics copied
            params, target_params, running_stats, target_running_stats = self.policy.polyak_tensors()
            foreach_polyak_update(params, target_params, self.tau)
            foreach_polyak_update(running_stats, target_running_stats, 1.0)
        self._record_training_stats(stats)

    def learn(
        self: SelfDDPG,
        total_timesteps: int | None = None,
        callback: MaybeCallback = None,
        log_interval: int = 4,
        tb_log_name: str = "DDPG",
        reset_num_timesteps: bool = True,
        progress_bar: bool | None = None,
    ) -> SelfDDPG:
        """
        SB3's ``learn``, exactly, for a given ``total_timesteps`` (above zero; ``progress_bar`` None is False).
        Without it: the budget of the zoo entry (:meth:`from_zoo`'s, else the env's ``n_timesteps`` in
        ``zoo_configs/ddpg_scratch.yml``), said in one line, with a progress bar unless ``progress_bar=False``.

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

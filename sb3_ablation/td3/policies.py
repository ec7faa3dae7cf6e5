"""Policies of AblatableTD3: DDPG's policy with a choice of actor, of critic count, and of target copies."""

from collections.abc import Sequence
from typing import Any

import torch as th
from gymnasium import spaces
from stable_baselines3.common.distributions import SquashedDiagGaussianDistribution
from stable_baselines3.common.torch_layers import (
    BaseFeaturesExtractor,
    CombinedExtractor,
    FlattenExtractor,
    NatureCNN,
    create_mlp,
)
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule
from torch import nn

from sb3_ablation.common.policies import Actor, DDPGPolicy

# Bounds of the log standard deviation of the Gaussian actor, as in SB3's SAC
LOG_STD_MIN, LOG_STD_MAX = -20, 2


class GaussianActor(Actor):
    """
    Stochastic actor: a tanh-squashed diagonal Gaussian whose mean and log-std depend on the state.

    ``forward`` draws a reparameterized sample (gradients flow through it); ``_predict(deterministic=True)``
    returns the squashed mean. At initialization the log-std head has zero weights and the bias
    ``log(initial_std)``, so in every state the pre-tanh standard deviation starts at exactly ``initial_std``
    (per action dimension): the exploration of TD3's Gaussian action noise of that std, instead of SAC's
    initial std near 1. The weights then learn freely (the log-std stays clamped to [-20, 2], as in SAC).

    :param initial_std: the pre-tanh standard deviation at initialization, one value or one per action dimension
    Other parameters as :class:`Actor`.
    """

    def __init__(self, *args: Any, initial_std: float | Sequence[float] = 0.1, **kwargs: Any):
        self.initial_std = initial_std
        super().__init__(*args, **kwargs)

    def _build_networks(self, action_dim: int) -> None:
        self.latent_pi = nn.Sequential(*create_mlp(self.features_dim, -1, self.net_arch, self.activation_fn))
        last_layer_dim = self.net_arch[-1] if len(self.net_arch) > 0 else self.features_dim
        self.mu = nn.Linear(last_layer_dim, action_dim)
        self.log_std = nn.Linear(last_layer_dim, action_dim)
        initial_std = th.as_tensor(self.initial_std, dtype=th.float32).expand(action_dim)
        if not bool((initial_std > 0).all()):
            raise ValueError(f"initial_std of the Gaussian actor must be positive, got {self.initial_std}")
        with th.no_grad():
            self.log_std.weight.zero_()
            self.log_std.bias.copy_(initial_std.log())
        self.action_dist = SquashedDiagGaussianDistribution(action_dim)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(initial_std=self.initial_std)
        return data

    def get_action_dist_params(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """
        The parameters of the pre-tanh Gaussian in state ``obs``.

        :return: the mean and the (clamped) log standard deviation, shape (batch, action_dim) each
        """
        latent = self.latent_pi(self.extract_features(obs, self.features_extractor))
        return self.mu(latent), th.clamp(self.log_std(latent), LOG_STD_MIN, LOG_STD_MAX)

    def forward(self, obs: th.Tensor, deterministic: bool = False) -> th.Tensor:
        mean_actions, log_std = self.get_action_dist_params(obs)
        return self.action_dist.actions_from_params(mean_actions, log_std, deterministic=deterministic)

    def _predict(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        return self(observation, deterministic=deterministic)


class AblatableTD3Policy(DDPGPolicy):
    """
    Actor, critics and (optionally) their target copies for AblatableTD3.

    :param observation_space: Observation space
    :param action_space: Action space
    :param lr_schedule: Learning rate schedule (could be constant)
    :param net_arch: The specification of the policy and value networks ([400, 300] by default, [256, 256] for images)
    :param activation_fn: Activation function
    :param features_extractor_class: Features extractor to use.
    :param features_extractor_kwargs: Keyword arguments to pass to the features extractor.
    :param normalize_images: Whether to normalize images or not, dividing by 255.0
    :param optimizer_class: The optimizer to use, ``th.optim.Adam`` by default
    :param optimizer_kwargs: Additional keyword arguments, excluding the learning rate, to pass to the optimizer
    :param n_critics: Number of critic networks (two for clipped double Q-learning)
    :param share_features_extractor: Whether the actor and the critic share the features extractor
    :param batched_critics: Evaluate all critics as one batched network (the speed mode; not bit-exact with SB3)
    :param fused_adam: Plain Adam steps with PyTorch's fused implementation (the speed mode; not bit-exact with SB3)
    :param bfloat16_batch_size: Run the large hidden-to-hidden products in bfloat16 (the speed mode; see
        :class:`DDPGPolicy`)
    :param deterministic_actor: A deterministic actor (TD3) or a tanh-squashed Gaussian one
    :param actor_initial_std: The Gaussian actor's pre-tanh standard deviation at initialization (see
        :class:`GaussianActor`); unused by a deterministic actor
    :param target_networks: Keep target copies of actor and critic. Without them the copies are still built
        (and dropped) so that a seed gives the same initial actor and critic whatever the switch.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        lr_schedule: Schedule,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.ReLU,
        features_extractor_class: type[BaseFeaturesExtractor] = FlattenExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
        optimizer_class: type[th.optim.Optimizer] = th.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
        n_critics: int = 2,
        share_features_extractor: bool = False,
        batched_critics: bool = False,
        fused_adam: bool = False,
        bfloat16_batch_size: int | None = None,
        deterministic_actor: bool = True,
        actor_initial_std: float | Sequence[float] = 0.1,
        target_networks: bool = True,
    ):
        self.deterministic_actor = deterministic_actor
        self.actor_initial_std = actor_initial_std
        self.target_networks = target_networks
        super().__init__(
            observation_space,
            action_space,
            lr_schedule,
            net_arch=net_arch,
            activation_fn=activation_fn,
            features_extractor_class=features_extractor_class,
            features_extractor_kwargs=features_extractor_kwargs,
            normalize_images=normalize_images,
            optimizer_class=optimizer_class,
            optimizer_kwargs=optimizer_kwargs,
            n_critics=n_critics,
            share_features_extractor=share_features_extractor,
            batched_critics=batched_critics,
            fused_adam=fused_adam,
            bfloat16_batch_size=bfloat16_batch_size,
        )

    def _build(self, lr_schedule: Schedule) -> None:
        super()._build(lr_schedule)
        # Component 3, target networks: without them, targets are computed by the online networks
        if not self.target_networks:
            self.actor_target = None
            self.critic_target = None

    def make_actor(self, features_extractor: BaseFeaturesExtractor | None = None) -> Actor:
        # Component 1, deterministic policy: a deterministic actor explored with action noise,
        # or a stochastic (Gaussian) actor that explores by sampling itself
        actor_kwargs = self._update_features_extractor(self.actor_kwargs, features_extractor)
        if self.deterministic_actor:
            return Actor(**actor_kwargs).to(self.device)
        return GaussianActor(**actor_kwargs, initial_std=self.actor_initial_std).to(self.device)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(
            dict(
                deterministic_actor=self.deterministic_actor,
                actor_initial_std=self.actor_initial_std,
                target_networks=self.target_networks,
            )
        )
        return data


MlpPolicy = AblatableTD3Policy


class CnnPolicy(AblatableTD3Policy):
    """
    AblatableTD3 policy for image observations (NatureCNN features extractor). Parameters as :class:`AblatableTD3Policy`.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        lr_schedule: Schedule,
        features_extractor_class: type[BaseFeaturesExtractor] = NatureCNN,
        **kwargs: Any,
    ):
        super().__init__(
            observation_space, action_space, lr_schedule, features_extractor_class=features_extractor_class, **kwargs
        )


class MultiInputPolicy(AblatableTD3Policy):
    """
    AblatableTD3 policy for Dict observations (CombinedExtractor). Parameters as :class:`AblatableTD3Policy`.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        lr_schedule: Schedule,
        features_extractor_class: type[BaseFeaturesExtractor] = CombinedExtractor,
        **kwargs: Any,
    ):
        super().__init__(
            observation_space, action_space, lr_schedule, features_extractor_class=features_extractor_class, **kwargs
        )

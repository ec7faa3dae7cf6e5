"""All critics in one batched network: the speed mode's critic."""

import itertools
from typing import cast

import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import BaseModel
from stable_baselines3.common.preprocessing import get_action_dim
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from sb3_ablation.common.ensemble import EnsembleLinear


class BatchedContinuousCritic(BaseModel):
    """
    ``n_critics`` Q-networks evaluated together: each layer holds the weights of every critic stacked along a first
    dimension and runs as one batched matrix product, instead of one product per critic. Same interface and the
    same initialization distribution as SB3's ``ContinuousCritic``, not the same random draws or parameter layout.

    :param observation_space: Observation space
    :param action_space: Action space
    :param net_arch: Network architecture (hidden layer sizes)
    :param features_extractor: Network to extract features (a CNN for images, ``nn.Flatten()`` otherwise)
    :param features_dim: Number of features
    :param activation_fn: Activation function
    :param normalize_images: Whether to normalize images or not, dividing by 255.0
    :param n_critics: Number of critic networks
    :param share_features_extractor: Whether the features extractor is shared with the actor
    """

    features_extractor: BaseFeaturesExtractor

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        net_arch: list[int],
        features_extractor: BaseFeaturesExtractor,
        features_dim: int,
        activation_fn: type[nn.Module] = nn.ReLU,
        normalize_images: bool = True,
        n_critics: int = 2,
        share_features_extractor: bool = True,
    ):
        super().__init__(
            observation_space, action_space, features_extractor=features_extractor, normalize_images=normalize_images
        )
        self.share_features_extractor = share_features_extractor
        self.n_critics = n_critics
        self.activation = activation_fn()
        sizes = [features_dim + get_action_dim(self.action_space), *net_arch, 1]
        # nn.Linear's default initialization for each critic: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        self.layers = nn.ModuleList(EnsembleLinear(n_critics, n_in, n_out) for n_in, n_out in itertools.pairwise(sizes))

    def _q_input(self, obs: th.Tensor, actions: th.Tensor, features_grad: bool) -> th.Tensor:
        with th.set_grad_enabled(features_grad):
            features = self.extract_features(obs, self.features_extractor)
        return th.cat([features, actions], dim=1)

    def forward(self, obs: th.Tensor, actions: th.Tensor) -> tuple[th.Tensor, ...]:
        hidden = self._q_input(obs, actions, features_grad=not self.share_features_extractor)
        hidden = hidden.expand(self.n_critics, *hidden.shape)
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            hidden = layer(hidden)
            if index < last:
                hidden = self.activation(hidden)
        return tuple(hidden.unbind(0))

    def q1_forward(self, obs: th.Tensor, actions: th.Tensor) -> th.Tensor:
        """Critic 1 alone (the actor's objective): plain matrix products on its slice of the weights."""
        hidden = self._q_input(obs, actions, features_grad=False)
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            hidden = cast(EnsembleLinear, layer).member_forward(0, hidden)
            if index < last:
                hidden = self.activation(hidden)
        return hidden

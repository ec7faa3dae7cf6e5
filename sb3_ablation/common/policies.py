"""The deterministic actor-critic policy that DDPG, AblatableTD3 and BatchedTD3 build on: an actor, a critic, and
their target copies (:class:`DDPGPolicy`), below the algorithms so that :mod:`sb3_ablation.common.off_policy`
and every algorithm import it from one place (``sb3_ablation.ddpg.policies`` re-exports it, so saved models and
user imports keep working)."""

from collections.abc import Callable, Iterator
from typing import Any

import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy, ContinuousCritic
from stable_baselines3.common.preprocessing import get_action_dim
from stable_baselines3.common.torch_layers import (
    BaseFeaturesExtractor,
    FlattenExtractor,
    NatureCNN,
    create_mlp,
    get_actor_critic_arch,
)
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule
from stable_baselines3.common.utils import get_parameters_by_name
from torch import nn

from sb3_ablation.common.batched_critic import BatchedContinuousCritic
from sb3_ablation.common.collection import training_flag_modules
from sb3_ablation.common.mixed_precision import use_bfloat16_hidden_layers
from sb3_ablation.common.optim import FlatAdam, FlatParameters

# A critic: SB3's (one network per Q-function) or the speed mode's batched one (the same interface)
Critic = ContinuousCritic | BatchedContinuousCritic


class Actor(BasePolicy):
    """
    Deterministic actor ``mu(s)``: a tanh-squashed MLP on top of a features extractor.

    :param observation_space: Observation space
    :param action_space: Action space
    :param net_arch: Network architecture
    :param features_extractor: Network to extract features (a CNN for images, ``nn.Flatten()`` otherwise)
    :param features_dim: Number of features
    :param activation_fn: Activation function
    :param normalize_images: Whether to normalize images or not, dividing by 255.0
    """

    mu: nn.Module  # the head from features to actions (the Gaussian actor's is its mean layer)

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        net_arch: list[int],
        features_extractor: nn.Module,
        features_dim: int,
        activation_fn: type[nn.Module] = nn.ReLU,
        normalize_images: bool = True,
    ):
        super().__init__(
            observation_space,
            action_space,
            features_extractor=features_extractor,
            normalize_images=normalize_images,
            squash_output=True,
        )
        self.net_arch = net_arch
        self.features_dim = features_dim
        self.activation_fn = activation_fn
        self._build_networks(get_action_dim(self.action_space))

    def _build_networks(self, action_dim: int) -> None:
        """The deterministic head: a tanh-squashed MLP from features to actions."""
        mlp = create_mlp(self.features_dim, action_dim, self.net_arch, self.activation_fn, squash_output=True)
        self.mu = nn.Sequential(*mlp)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(
            dict(
                net_arch=self.net_arch,
                features_dim=self.features_dim,
                activation_fn=self.activation_fn,
                features_extractor=self.features_extractor,
            )
        )
        return data

    def forward(self, obs: th.Tensor) -> th.Tensor:
        return self.mu(self.extract_features(obs, self.features_extractor))

    def _predict(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        # A deterministic actor ignores `deterministic`: exploration noise is added by the algorithm
        return self(observation)


class DDPGPolicy(BasePolicy):
    """
    Actor, critic(s) and their target copies, as in DDPG (Lillicrap et al., 2016).

    The networks are built in the order actor, target actor, critic, target critic, so that a seed gives the same
    initial weights as SB3's TD3/DDPG policies.

    :param observation_space: Observation space
    :param action_space: Action space
    :param lr_schedule: Learning rate schedule (could be constant)
    :param net_arch: The specification of the policy and value networks ([400, 300] by default, [256, 256] for images)
    :param activation_fn: Activation function
    :param features_extractor_class: Features extractor to use.
    :param features_extractor_kwargs: Keyword arguments to pass to the features extractor.
    :param normalize_images: Whether to normalize images or not, dividing by 255.0
    :param optimizer_class: The optimizer to use, ``th.optim.Adam`` by default
    :param optimizer_kwargs: Additional keyword arguments, excluding the learning rate, to pass to the optimizer.
        Plain Adam (the default) runs as :class:`FlatAdam`: the same arithmetic on one flat buffer per network, the
        same checkpoint layout.
    :param n_critics: Number of critic networks (one for DDPG)
    :param share_features_extractor: Whether the actor and the critic share the features extractor
    :param batched_critics: Evaluate all critics as one batched network (the speed mode; not bit-exact with SB3)
    :param fused_adam: Plain Adam steps with PyTorch's fused implementation (the speed mode; not bit-exact with SB3)
        unless ``optimizer_kwargs`` set ``fused``
    :param bfloat16_batch_size: Run the large hidden-to-hidden products in bfloat16, those large enough at this
        minibatch size (the speed mode, where the hardware is faster in bfloat16); None: everything in float32
    """

    actor: Actor
    actor_target: Actor | None  # None: AblatableTD3Policy without target networks
    critic: Critic
    critic_target: Critic | None

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
        n_critics: int = 1,
        share_features_extractor: bool = False,
        batched_critics: bool = False,
        fused_adam: bool = False,
        bfloat16_batch_size: int | None = None,
    ):
        self.batched_critics = batched_critics
        self.fused_adam = fused_adam
        self.bfloat16_batch_size = bfloat16_batch_size
        super().__init__(
            observation_space,
            action_space,
            features_extractor_class,
            features_extractor_kwargs,
            optimizer_class=optimizer_class,
            optimizer_kwargs=optimizer_kwargs,
            squash_output=True,
            normalize_images=normalize_images,
        )
        if net_arch is None:
            net_arch = [256, 256] if features_extractor_class == NatureCNN else [400, 300]
        actor_arch, critic_arch = get_actor_critic_arch(net_arch)
        self.net_arch = net_arch
        self.activation_fn = activation_fn
        self.n_critics = n_critics
        self.share_features_extractor = share_features_extractor
        self.actor_kwargs = {
            "observation_space": self.observation_space,
            "action_space": self.action_space,
            "net_arch": actor_arch,
            "activation_fn": activation_fn,
            "normalize_images": normalize_images,
        }
        self.critic_kwargs = {
            **self.actor_kwargs,
            "net_arch": critic_arch,
            "n_critics": n_critics,
            "share_features_extractor": share_features_extractor,
        }
        self._build(lr_schedule)

    def _build(self, lr_schedule: Schedule) -> None:
        self.actor = self.make_actor()
        self.actor_target = actor_target = self.make_actor()
        actor_target.load_state_dict(self.actor.state_dict())
        self.actor.optimizer = self.make_optimizer(self.actor.parameters(), lr_schedule)
        if self.share_features_extractor:
            self.critic = self.make_critic(features_extractor=self.actor.features_extractor)
            # The target critic shares the target actor's extractor, as the online ones do
            self.critic_target = critic_target = self.make_critic(features_extractor=actor_target.features_extractor)
        else:
            self.critic = self.make_critic()
            self.critic_target = critic_target = self.make_critic()
        critic_target.load_state_dict(self.critic.state_dict())
        self.critic.optimizer = self.make_optimizer(self.critic.parameters(), lr_schedule)
        if self.bfloat16_batch_size is not None:
            for network in (self.actor, actor_target, self.critic, critic_target):
                use_bfloat16_hidden_layers(network, self.bfloat16_batch_size)
        # Target networks are never trained: always in evaluation mode (batch norm, dropout)
        actor_target.set_training_mode(False)
        critic_target.set_training_mode(False)
        self._flat_targets: dict[str, FlatParameters] = {}
        self._polyak_tensors: tuple[list[th.Tensor], ...] | None = None
        self._training_flag_modules = training_flag_modules([self.actor, self.critic])

    def make_optimizer(self, params: Iterator[th.nn.Parameter], lr_schedule: Schedule) -> th.optim.Optimizer:
        """
        The optimizer of one network: plain Adam runs as :class:`FlatAdam` (bit-identical, one buffer per network;
        with ``fused_adam``, PyTorch's fused step on that buffer), unless actor and critic share a features extractor
        (a parameter cannot live in two buffers).
        """
        optimizer_kwargs = self.optimizer_kwargs
        plain_adam = self.optimizer_class is th.optim.Adam
        if plain_adam and self.fused_adam:
            optimizer_kwargs = {"fused": True, **optimizer_kwargs}
        flat = plain_adam and FlatAdam.supports(optimizer_kwargs) and not self.share_features_extractor
        optimizer_class = FlatAdam if flat else self.optimizer_class
        # Optimizer's own __init__ takes `defaults`; every optimizer class SB3 is given takes `lr`
        return optimizer_class(params, lr=lr_schedule(1), **optimizer_kwargs)  # type: ignore[call-arg]

    def polyak_tensors(self) -> tuple[list[th.Tensor], ...]:
        """
        What the target update moves, in matching order: the online and target parameters (each network's flat
        buffer where its optimizer is :class:`FlatAdam`, critic first), then the batch-norm running statistics of
        the online and target networks (copied, not averaged: SB3 issue #996). Empty lists without targets.
        """
        if self._polyak_tensors is None:
            online: list[th.Tensor] = []
            target: list[th.Tensor] = []
            stats: list[th.Tensor] = []
            target_stats: list[th.Tensor] = []
            for name in ("critic", "actor"):
                network, network_target = getattr(self, name), getattr(self, f"{name}_target")
                if network_target is None:
                    continue
                if isinstance(network.optimizer, FlatAdam):
                    if name not in self._flat_targets:
                        self._flat_targets[name] = FlatParameters(list(network_target.parameters()), gradients=False)
                    online.append(network.optimizer.flat_params.flat)
                    target.append(self._flat_targets[name].flat)
                else:
                    online += list(network.parameters())
                    target += list(network_target.parameters())
                stats += get_parameters_by_name(network, ["running_"])
                target_stats += get_parameters_by_name(network_target, ["running_"])
            self._polyak_tensors = (online, target, stats, target_stats)
        return self._polyak_tensors

    def _apply(self, fn: Callable[[th.Tensor], th.Tensor], *args: Any, **kwargs: Any) -> "DDPGPolicy":
        # Moving (`policy.to(device)`) or casting gives the parameters new storage: the flat buffers follow them
        super()._apply(fn, *args, **kwargs)
        for network in (getattr(self, "actor", None), getattr(self, "critic", None)):
            optimizer = getattr(network, "optimizer", None)
            if isinstance(optimizer, FlatAdam):
                optimizer.follow_parameters()
        flat_targets = getattr(self, "_flat_targets", {})
        for name, flat_params in flat_targets.items():
            if not flat_params.intact():
                flat_targets[name] = flat_params.rebuilt()
        self._polyak_tensors = None
        return self

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(
            dict(
                net_arch=self.net_arch,
                activation_fn=self.activation_fn,
                n_critics=self.n_critics,
                lr_schedule=self._dummy_schedule,  # not needed to load the policy alone
                optimizer_class=self.optimizer_class,
                optimizer_kwargs=self.optimizer_kwargs,
                features_extractor_class=self.features_extractor_class,
                features_extractor_kwargs=self.features_extractor_kwargs,
                share_features_extractor=self.share_features_extractor,
                batched_critics=self.batched_critics,
                fused_adam=self.fused_adam,
            )
        )
        return data

    def make_actor(self, features_extractor: BaseFeaturesExtractor | None = None) -> Actor:
        actor_kwargs = self._update_features_extractor(self.actor_kwargs, features_extractor)
        return Actor(**actor_kwargs).to(self.device)

    def make_critic(self, features_extractor: BaseFeaturesExtractor | None = None) -> Critic:
        critic_kwargs = self._update_features_extractor(self.critic_kwargs, features_extractor)
        critic_class = BatchedContinuousCritic if self.batched_critics else ContinuousCritic
        return critic_class(**critic_kwargs).to(self.device)

    def forward(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        return self._predict(observation, deterministic=deterministic)

    def _predict(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        return self.actor._predict(observation, deterministic=deterministic)

    def set_training_mode(self, mode: bool) -> None:
        """
        Put the online networks in training or evaluation mode (batch norm, dropout); the targets stay in evaluation
        mode. The flags are written directly on the modules listed when the networks were built (what
        ``nn.Module.train`` does, without its recursive walk: SB3 calls this twice per environment step), unless a
        module overrides ``train``.

        :param mode: if true, set to training mode, else set to evaluation mode
        """
        if self._training_flag_modules is None:
            self.actor.set_training_mode(mode)
            self.critic.set_training_mode(mode)
        else:
            for module in self._training_flag_modules:
                # nn.Module.train's effect, without nn.Module.__setattr__'s type checks (`training` is a plain bool)
                object.__setattr__(module, "training", mode)
        object.__setattr__(self, "training", mode)

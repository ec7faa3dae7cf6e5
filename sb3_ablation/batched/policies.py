"""Policies of BatchedTD3: the actor and critics of K agents, each layer one batched matrix product over the agents."""

from collections.abc import Sequence
from typing import Any, TypeVar, cast

import torch as th
from stable_baselines3.common.policies import ContinuousCritic
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from sb3_ablation.common.ensemble import EnsembleLinear
from sb3_ablation.common.policies import Actor
from sb3_ablation.td3.policies import AblatableTD3Policy, GaussianActor

ModuleT = TypeVar("ModuleT", bound=nn.Module)


class AgentLinear(EnsembleLinear):
    """
    :class:`EnsembleLinear` over agents, whose every agent's product takes the same kernel whatever the number of
    agents: PyTorch's batched product takes another kernel (other rounding) for a batch of one, so one agent alone
    runs as a batch of two (the agent and a copy of it, whose result is dropped). Then an agent's arithmetic is the
    same alone and in a group of any size (``tests/integration/test_batched.py``).
    """

    def forward(self, inputs: th.Tensor) -> th.Tensor:
        if self.weight.shape[0] != 1:
            return super().forward(inputs)
        single = inputs.dim() == 2
        batch = inputs.unsqueeze(1) if single else inputs
        pair = th.baddbmm(
            self.bias.expand(2, *self.bias.shape[1:]),
            batch.expand(2, *batch.shape[1:]),
            self.weight.expand(2, *self.weight.shape[1:]),
        )[:1]
        return pair.squeeze(1) if single else pair


def stack_agents(agents: Sequence[ModuleT]) -> ModuleT:
    """
    The networks of K agents (same class and shapes) as one network of that class: the first agent's module, each of
    its ``nn.Linear`` layers replaced by the :class:`AgentLinear` of all agents' layers at that name, so that the
    network's own ``forward`` runs the K agents at once (its features extractor becomes the identity: flat
    observations only). Parameter names stay the agents' names (``mu.0.weight``, ``qf1.2.bias``, ...).

    :raise ValueError: a module with parameters other than ``nn.Linear`` layers (they have no batched form here)
    """
    ensemble = agents[0]
    for name, module in list(ensemble.named_modules()):
        if isinstance(module, nn.Linear):
            layers = [cast(nn.Linear, agent.get_submodule(name)) for agent in agents]  # the same layout as agent 0's
            ensemble.set_submodule(name, AgentLinear.from_linears(layers))
        elif any(True for _ in module.parameters(recurse=False)):
            raise ValueError(f"the batched engine cannot batch a {type(module).__name__} ({name}): only Linear layers")
    if isinstance(getattr(ensemble, "features_extractor", None), BaseFeaturesExtractor):
        # flattening 1-D observations is the identity (nn.Flatten would also merge the agent and batch axes)
        ensemble.features_extractor = nn.Identity()
    return ensemble


def _linear_names(network: nn.Module) -> list[str]:
    """The names of a network's linear layers (plain, or stacked over agents), in order."""
    return [name for name, module in network.named_modules() if isinstance(module, (nn.Linear, EnsembleLinear))]


def layer_names(ensemble: nn.Module, network: nn.Module) -> dict[str, str]:
    """
    The layer of ``ensemble`` (stacked agents) that holds each ``nn.Linear`` layer of ``network`` (one agent): the same
    name, but for a deterministic actor in a group of Gaussian actors (:class:`GaussianActor`), whose layers
    ``mu.0, mu.2, ..., mu.<last>`` are the Gaussian actor's ``latent_pi.0, latent_pi.2, ..., mu`` (the same products,
    the same tanh; its ``log_std`` head has no counterpart).
    """
    if isinstance(ensemble, GaussianActor) and not isinstance(network, GaussianActor):
        names = _linear_names(network)
        stacked = [name for name in _linear_names(ensemble) if name != "log_std"]
        if len(names) != len(stacked):
            raise ValueError(f"a deterministic actor of {len(names)} layers in a group of {len(stacked)}-layer actors")
        return dict(zip(names, stacked, strict=True))
    return {name: name for name in _linear_names(network)}


def copy_agent(ensemble: nn.Module, agent: int, network: nn.Module, to_ensemble: bool = False) -> None:
    """
    Copy agent ``agent``'s weights from ``ensemble`` (built by :func:`stack_agents`) into ``network``, a plain network
    of one agent, or the other way with ``to_ensemble`` (see :func:`layer_names`; a deterministic actor copied into a
    group of Gaussian actors gets the Gaussian actor's initial log-std head, zero weights and the bias
    ``log(initial_std)``, which its zero ``eps`` never uses).
    """
    names = layer_names(ensemble, network)
    if to_ensemble and isinstance(ensemble, GaussianActor) and not isinstance(network, GaussianActor):
        log_std = cast(EnsembleLinear, ensemble.log_std)
        initial_std = th.as_tensor(ensemble.initial_std, dtype=log_std.bias.dtype).expand(log_std.bias.shape[-1])
        with th.no_grad():
            log_std.weight[agent].zero_()
            log_std.bias[agent, 0].copy_(initial_std.log())
    for name, layer in network.named_modules():
        if isinstance(layer, nn.Linear):
            stacked = ensemble.get_submodule(names[name])
            assert isinstance(stacked, EnsembleLinear), name
            if to_ensemble:
                stacked.copy_from(agent, layer)
            else:
                stacked.copy_to(agent, layer)


class EnsembleCritic(ContinuousCritic):
    """
    SB3's ``ContinuousCritic`` whose input is observations and actions concatenated along the last axis, so that it
    also takes ``(K, batch, ...)`` inputs (SB3's concatenates along axis 1; the same for ``(batch, ...)`` inputs).
    """

    def forward(self, obs: th.Tensor, actions: th.Tensor) -> tuple[th.Tensor, ...]:
        with th.set_grad_enabled(not self.share_features_extractor):
            features = self.extract_features(obs, self.features_extractor)
        qvalue_input = th.cat([features, actions], dim=-1)
        return tuple(q_net(qvalue_input) for q_net in self.q_networks)

    def q1_forward(self, obs: th.Tensor, actions: th.Tensor) -> th.Tensor:
        with th.no_grad():
            features = self.extract_features(obs, self.features_extractor)
        return self.q_networks[0](th.cat([features, actions], dim=-1))


class BatchedTD3Policy(AblatableTD3Policy):
    """
    The actor, critics and target copies of ``n_agents`` independent AblatableTD3 agents, as one policy: every layer
    holds the K agents' weights stacked (:class:`EnsembleLinear`); the actor maps ``(K, obs)`` to ``(K, act)`` when
    acting and ``(K, batch, obs)`` to ``(K, batch, act)`` in training, the critics likewise. Each agent's networks are
    built, and so initialized, as :class:`AblatableTD3Policy` builds them (agent after agent), then stacked.

    :param n_agents: the number of agents K
    Other parameters as :class:`AblatableTD3Policy` (flat ``Box`` observations only).
    """

    def __init__(self, *args: Any, n_agents: int = 1, **kwargs: Any):
        self.n_agents = n_agents
        super().__init__(*args, **kwargs)

    def make_actor(self, features_extractor: BaseFeaturesExtractor | None = None) -> Actor:
        make_actor = super().make_actor  # one agent's actor
        return stack_agents([make_actor(features_extractor) for _ in range(self.n_agents)])

    def make_critic(self, features_extractor: BaseFeaturesExtractor | None = None) -> ContinuousCritic:
        critic_kwargs = self._update_features_extractor(self.critic_kwargs, features_extractor)
        return stack_agents([EnsembleCritic(**critic_kwargs).to(self.device) for _ in range(self.n_agents)])

    def _networks(self, policy: AblatableTD3Policy) -> list[tuple[nn.Module, nn.Module]]:
        # (an agent of a mixed group may have no target networks, or fewer critics, than the group: its own are copied)
        names = ("actor", "critic", "actor_target", "critic_target")
        return [
            (getattr(self, name), getattr(policy, name))
            for name in names
            if getattr(self, name) is not None and getattr(policy, name) is not None
        ]

    @th.no_grad()
    def load_online_into_targets(self, agents: th.Tensor) -> None:
        """
        Set the target actor and critics of ``agents`` (indices) to their online weights: for agents without target
        networks in a group whose other agents have them, the targets are then computed with the online weights.
        """
        assert self.actor_target is not None and self.critic_target is not None
        for online, target in ((self.actor, self.actor_target), (self.critic, self.critic_target)):
            for param, target_param in zip(online.parameters(), target.parameters(), strict=True):
                target_param.index_copy_(0, agents, param.index_select(0, agents))

    def copy_agent_to(self, agent: int, policy: AblatableTD3Policy) -> None:
        """Write agent ``agent``'s actor, critics and target copies into a plain policy with the same settings."""
        for ensemble, network in self._networks(policy):
            copy_agent(ensemble, agent, network)

    def copy_agent_from(self, agent: int, policy: AblatableTD3Policy) -> None:
        """Set agent ``agent``'s actor, critics and target copies from a plain policy with the same settings."""
        for ensemble, network in self._networks(policy):
            copy_agent(ensemble, agent, network, to_ensemble=True)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(n_agents=self.n_agents)
        return data


MlpPolicy = BatchedTD3Policy

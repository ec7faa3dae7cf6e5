"""Agents with different switches in one BatchedTD3 group: which switches may differ, the group's networks and
switches that such a group needs, and the per-agent forms of the differing switches and of Adam's step."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch as th

from sb3_ablation.common.optim import FlatAdam, FlatParameters
from sb3_ablation.switches import DEFAULTS, SWITCHES

#: the switches whose value may differ between the agents of one BatchedTD3 (the others shape the whole group: the
#: actor's kind, the replay buffer, the update schedule)
MIXABLE_SWITCHES = (
    "clipped_double_q",
    "target_networks",
    "target_policy_smoothing",
    "delayed_policy_update",
    "deterministic_policy",
)


def group_switches(agent_switches: Sequence[Mapping[str, bool]], kwargs: dict[str, Any], name: str) -> list[dict[str, bool]]:
    """
    Agent k's full switches (the defaults completed), and the group's own switches set in ``kwargs``: a Gaussian actor
    if any agent has one (a deterministic agent's is its mean, no sample drawn), and each other mixable component that
    any agent has.

    :param agent_switches: agent k's switches (those it leaves out: the defaults)
    :param kwargs: the model's keyword arguments, updated in place with the group's switches
    :param name: the model's class name, for the error
    :raise ValueError: the agents differ in a switch outside :data:`MIXABLE_SWITCHES`, or share one that differs from
        the model's
    """
    full = [{**DEFAULTS, **switches} for switches in agent_switches]
    for switch in SWITCHES:
        values = {switches[switch] for switches in full}
        if switch == "deterministic_policy":
            kwargs[switch] = False not in values
        elif switch in MIXABLE_SWITCHES:
            kwargs[switch] = True in values
        elif len(values) > 1 or kwargs.get(switch, DEFAULTS[switch]) not in values:
            raise ValueError(
                f"{name} agents must share {switch} (only {', '.join(MIXABLE_SWITCHES)} may differ), got "
                f"{[switches[switch] for switches in full]}"
            )
    return full


@dataclass
class MixedSwitches:
    """
    The per-agent forms of the switches that differ between a group's agents (``None``: the same for every agent, the
    model's own switch acts).

    :param twin: ``(K, 1, 1)``, whether agent k bootstraps from the minimum over its critics (else from critic 1)
    :param twin_weight: ``(K,)``, 1 where agent k trains its other critics, else 0
    :param without_targets: the indices of the agents without target networks
    :param smoothing: ``(K, 1, 1)``, whether agent k smooths its target actions
    """

    twin: th.Tensor | None = None
    twin_weight: th.Tensor | None = None
    without_targets: th.Tensor | None = None
    smoothing: th.Tensor | None = None

    @classmethod
    def of(cls, agent_switches: Sequence[Mapping[str, bool]], device: th.device) -> MixedSwitches:
        """The forms of ``agent_switches`` (agent k's switches) on ``device``."""

        def values(name: str) -> list[bool] | None:
            agent_values = [switches[name] for switches in agent_switches]
            return agent_values if len(set(agent_values)) > 1 else None

        mixed, shape = cls(), (len(agent_switches), 1, 1)
        twin, targets, smoothing = (
            values(name) for name in ("clipped_double_q", "target_networks", "target_policy_smoothing")
        )
        if twin is not None:
            mixed.twin = th.tensor(twin, device=device).view(shape)
            mixed.twin_weight = th.tensor(twin, dtype=th.float32, device=device)
        if targets is not None:
            mixed.without_targets = th.tensor([k for k, value in enumerate(targets) if not value], device=device)
        if smoothing is not None:
            mixed.smoothing = th.tensor(smoothing, device=device).view(shape)
        return mixed


def element_agents(flat_params: FlatParameters, n_agents: int) -> th.Tensor:
    """
    The agent of each element of a batched network's flat buffer (its parameters stacked agents first), as indices;
    the buffer's padding counts as agent 0's (it stays zero whatever is done to it).
    """
    agents = th.zeros(flat_params.flat.numel(), dtype=th.long, device=flat_params.flat.device)
    for view in flat_params.views(agents):
        if view.shape[0] != n_agents:
            raise ValueError(f"a parameter of shape {tuple(view.shape)} is not stacked over {n_agents} agents")
        view.copy_(th.arange(n_agents, device=agents.device).view(-1, *[1] * (view.dim() - 1)).expand_as(view))
    return agents


def agent_adam_step(optimizer: FlatAdam, agents: th.Tensor, active: Sequence[bool], counts: Sequence[int]) -> None:
    """
    One Adam step of the agents ``active`` of a batched network, agent k's as the ``counts[k]``-th step of its own
    Adam: the others' weights and moments stay as they are. For each step count among the active agents, FlatAdam's
    own step runs on the whole buffer from the same state, and its result is kept for those agents: the arithmetic of
    a single run's step, whatever the device, at the cost of one step per distinct count (two at most in TD3's mixed
    groups: every ``policy_delay``-th update, the delayed agents' count and the others').

    :param optimizer: the network's optimizer (plain FlatAdam, not fused), its gradients computed
    :param agents: the agent of each element of its buffer (:func:`element_agents`)
    :param active: whether agent k takes this step
    :param counts: agent k's step count after this step (its Adam's ``step``)
    """
    param = optimizer.flat_params.flat
    if optimizer.param_groups[0]["fused"]:
        raise ValueError("per-agent Adam steps need FlatAdam's own (not fused) step")
    state = optimizer.state[param]
    if not state:  # (as FlatAdam's first step initializes it)
        state["step"] = th.tensor(0.0, dtype=th.float32)
        state["exp_avg"] = th.zeros_like(param, memory_format=th.preserve_format)
        state["exp_avg_sq"] = th.zeros_like(param, memory_format=th.preserve_format)
    tensors = (param.data, state["exp_avg"], state["exp_avg_sq"])
    before = [tensor.clone() for tensor in tensors]
    after = [tensor.clone() for tensor in tensors]
    for count in sorted({count for count, taken in zip(counts, active, strict=True) if taken}):
        for tensor, saved in zip(tensors, before, strict=True):
            tensor.copy_(saved)
        state["step"].fill_(count - 1)
        optimizer.step()
        chosen = th.tensor([taken and own == count for own, taken in zip(counts, active, strict=True)], device=param.device)
        mask = chosen[agents]
        for tensor, result in zip(tensors, after, strict=True):
            result.copy_(th.where(mask, tensor, result))
    for tensor, result in zip(tensors, after, strict=True):
        tensor.copy_(result)
    state["step"].fill_(max(counts))


class AgentElements:
    """
    The agent of each element of a group's flat buffers (:func:`element_agents`), computed once per buffer and kept
    while it lives: the masks of the per-agent forms of Adam's step and of the target update.

    :param n_agents: the group's number of agents
    """

    def __init__(self, n_agents: int):
        self.n_agents = n_agents
        self._cache: dict[int, tuple[th.Tensor, th.Tensor]] = {}

    def of(self, flat_params: FlatParameters) -> th.Tensor:
        """The agent of each element of ``flat_params``'s buffer."""
        flat = flat_params.flat
        cached = self._cache.get(id(flat))
        if cached is None or cached[0] is not flat:
            cached = self._cache[id(flat)] = (flat, element_agents(flat_params, self.n_agents))
        return cached[1]

    def of_buffer(self, flat: th.Tensor, optimizers: Sequence[Any], name: str) -> th.Tensor:
        """
        The agent of each element of ``flat``, the flat buffer of one of ``optimizers`` (FlatAdam).

        :param name: the model's class name, for the error
        """
        for optimizer in optimizers:
            if isinstance(optimizer, FlatAdam) and optimizer.flat_params.flat is flat:
                return self.of(optimizer.flat_params)
        raise ValueError(f"{name} mixes policy delays with the flat buffers of FlatAdam only")


def agent_polyak_update(
    params: Sequence[th.Tensor],
    target_params: Sequence[th.Tensor],
    masks: Sequence[th.Tensor],
    polyak: Callable[[list[th.Tensor], list[th.Tensor]], None],
) -> None:
    """
    Polyak averaging of the elements where ``masks[i]`` is true (the agents that take this step), the other targets
    as they are.

    :param polyak: the update of every element (the model's own, eager or compiled, so that an agent's targets move
        as in a group where every agent takes the step)
    """
    saved = [target.detach().clone() for target in target_params]
    polyak(list(params), list(target_params))
    with th.no_grad():
        for target, before, mask in zip(target_params, saved, masks, strict=True):
            target.copy_(th.where(mask, target, before))


__all__ = [
    "MIXABLE_SWITCHES",
    "AgentElements",
    "MixedSwitches",
    "agent_adam_step",
    "agent_polyak_update",
    "element_agents",
    "group_switches",
]

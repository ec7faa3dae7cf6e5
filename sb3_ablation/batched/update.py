"""
The arithmetic of one gradient step of BatchedTD3, as functions of tensors: the critic's loss with its TD targets, the
actor's loss, the target networks' update. Every random draw of the step is made before, from each agent's own
streams, and passed in, so the same functions run eagerly or compiled by ``torch.compile`` (the ``batched-compiled``
engine), and an agent's draws are the same either way.

Compiled (:data:`COMPILED_PARTS`: the critic's loss with its TD targets, and the target update; the actor's loss stays
eager, see there), each part is one graph for its forward and backward, with static shapes
(``dynamic=False``: a group's K and batch size give kernels of their own, never kernels for any size, whose
arithmetic could depend on what the process compiled before) and no graph break (``fullgraph=True``). What stays
eager: the actor's loss, the random draws, the replay sampling, Adam's step (one multi-tensor step on a flat buffer
already) and the per-agent forms of a mixed group's delayed actor steps (:func:`~sb3_ablation.batched.mixing.agent_adam_step`).
Compiled arithmetic differs from eager arithmetic in the last bits (other fusions, other vector code), so a compiled
engine's record is a function of its configuration, seed, engine, machine and library versions, as an eager one's
is of all but the engine; it is the same alone and in any group (``tests/integration/test_batched_compiled.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import torch as th
from torch import nn
from torch.nn import functional as F

from sb3_ablation.batched.mixing import MixedSwitches
from sb3_ablation.common.utils import foreach_polyak_update
from sb3_ablation.td3.policies import GaussianActor

#: the parts of the step that the compiled engine compiles (each its forward and backward, where it has one). Not the
#: actor's loss: compiled, a lone agent's actor gradients differ from its gradients in a group of two or more (measured
#: on torch 2.13 CPU, tests/integration/test_batched_compiled.py), so it stays eager: a record must not depend on its group
COMPILED_PARTS = ("critic", "targets")

#: the compiled forms each function may have in one process (torch's default, 8, is a few groups' worth)
RECOMPILE_LIMIT = 512


class CompileError(RuntimeError):
    """A part of the update step that ``torch.compile`` could not compile: the group stops (no eager fallback)."""


def agent_mse(q_values: th.Tensor, targets: th.Tensor) -> th.Tensor:
    """Each agent's mean squared error over its own batch: ``(K, batch, 1)`` inputs, ``(K,)`` losses."""
    return F.mse_loss(q_values, targets, reduction="none").mean(dim=(1, 2))


def gaussian_actions(actor: nn.Module, observations: th.Tensor, eps: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
    """
    A reparameterized sample of a Gaussian actor and its log-std: SB3's squashed Gaussian arithmetic,
    ``tanh(mean + eps * std)``.

    :param eps: standard normal draws shaped as the actions (zero for an agent that does not sample: its squashed mean)
    """
    mean_actions, log_std = cast(GaussianActor, actor).get_action_dist_params(observations)
    action_std = th.ones_like(mean_actions) * log_std.exp()
    return th.tanh(mean_actions + eps * action_std), log_std


class UpdateStep:
    """
    The update step's parts for one BatchedTD3 (its networks, switches and constants as they are when it is made: the
    model makes it in ``_setup_model``), eager or compiled.

    :param model: the BatchedTD3 (any object with its attributes: actor, critic, their targets, switches, constants)
    :param mixed: the per-agent forms of the switches its agents differ in
    :param compiled: compile each part at its first call
    """

    def __init__(self, model: Any, mixed: MixedSwitches, compiled: bool):
        self.actor, self.critic = model.actor, model.critic
        if model.target_networks:
            self.next_actor, self.next_critic = model.actor_target, model.critic_target
        else:
            self.next_actor, self.next_critic = model.actor, model.critic
        self.deterministic = bool(model.deterministic_policy)
        self.smoothing = bool(model.target_policy_smoothing)
        self.twin = bool(model.clipped_double_q)
        self.gamma, self.tau, self.noise_clip = float(model.gamma), float(model.tau), float(model.target_noise_clip)
        self.mixed = mixed
        self.compiled = compiled
        #: seconds of each compiled part's first step (its compilation and one step), by part
        self.compile_s: dict[str, float] = {}

        if compiled:
            # a worker process may train many groups, each shape and set of switches one more compiled form of these
            # functions; with fullgraph=True a limit hit is an error (never a silent eager fallback), so allow many
            for limit in ("recompile_limit", "accumulated_recompile_limit"):
                setattr(th._dynamo.config, limit, max(getattr(th._dynamo.config, limit), RECOMPILE_LIMIT))

        def compiled_if_asked(function: Callable[..., Any]) -> Callable[..., Any]:
            part = {"_critic_loss": "critic", "_actor_loss": "actor", "_update_targets": "targets"}[function.__name__]
            return th.compile(function, fullgraph=True, dynamic=False) if compiled and part in COMPILED_PARTS else function

        self.critic_loss: Callable[..., tuple[th.Tensor, Sequence[th.Tensor], th.Tensor]] = compiled_if_asked(
            self._critic_loss
        )
        self.actor_loss: Callable[..., tuple[th.Tensor, th.Tensor | None]] = compiled_if_asked(self._actor_loss)
        self.update_targets: Callable[..., None] = compiled_if_asked(self._update_targets)

    @contextmanager
    def first_step(self, part: str) -> Iterator[None]:
        """
        Around a part's forward and backward: the first time, compiled, its seconds are kept in :attr:`compile_s`, and
        an error of ``torch.compile`` stops the step as one :class:`CompileError` line naming the part and the cause.
        """
        if not self.compiled or part not in COMPILED_PARTS or part in self.compile_s:
            yield
            return
        started = time.perf_counter()
        try:
            yield
        except Exception as error:
            if not type(error).__module__.startswith("torch._"):
                raise
            cause = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise CompileError(
                f"torch.compile failed on the {part} part of the batched-compiled update step: {type(error).__name__}: {cause}"
            ) from error
        self.compile_s[part] = time.perf_counter() - started

    def _critic_loss(
        self,
        observations: th.Tensor,
        actions: th.Tensor,
        next_observations: th.Tensor,
        rewards: th.Tensor,
        dones: th.Tensor,
        smoothing_noise: th.Tensor | None,
        next_eps: th.Tensor | None,
    ) -> tuple[th.Tensor, Sequence[th.Tensor], th.Tensor]:
        """
        The critic loss of a batch (the sum over agents of each agent's sum over its critics of its mean squared
        error), each critic's Q-values and the TD targets.

        :param smoothing_noise: the target policy smoothing's draws (``None`` without smoothing)
        :param next_eps: a Gaussian target actor's draws (``None`` for a deterministic actor)
        """
        mixed = self.mixed
        with th.no_grad():
            # Component 1, deterministic policy: the actor's action, or a reparameterized sample of the Gaussian
            if self.deterministic:
                next_actions = self.next_actor(next_observations)
            else:
                next_actions = gaussian_actions(self.next_actor, next_observations, cast(th.Tensor, next_eps))[0]
            # Component 4, target policy smoothing: clipped Gaussian noise on the target action
            if self.smoothing:
                noise = cast(th.Tensor, smoothing_noise).clamp(-self.noise_clip, self.noise_clip)
                smoothed = (next_actions + noise).clamp(-1, 1)
                next_actions = smoothed if mixed.smoothing is None else th.where(mixed.smoothing, smoothed, next_actions)
            next_q_values = th.cat(self.next_critic(next_observations, next_actions), dim=-1)
            # Component 6, clipped double Q-learning: bootstrap from the minimum over the critics (off: one critic)
            if self.twin:
                minimum, _ = th.min(next_q_values, dim=-1, keepdim=True)
                next_q_values = minimum if mixed.twin is None else th.where(mixed.twin, minimum, next_q_values[..., :1])
            target_q_values = rewards + (1 - dones) * self.gamma * next_q_values

        current_q_values = self.critic(observations, actions)
        agent_losses = [agent_mse(q_values, target_q_values) for q_values in current_q_values]
        if mixed.twin_weight is not None:
            # an agent with one critic: the others' losses weigh 0 (no gradient: its other critics never move)
            agent_losses[1:] = [loss * mixed.twin_weight for loss in agent_losses[1:]]
        critic_loss = th.stack(agent_losses).sum(dim=0).sum()  # each agent's sum over its critics, then the agents'
        return critic_loss, current_q_values, target_q_values

    def _actor_loss(
        self, observations: th.Tensor, eps: th.Tensor | None, chosen: th.Tensor | None = None
    ) -> tuple[th.Tensor, th.Tensor | None]:
        """
        The actor loss of a batch (minus the sum over agents of each agent's mean Q-value of its actions) and a Gaussian
        actor's log-std.

        :param eps: a Gaussian actor's draws (``None`` for a deterministic actor)
        :param chosen: ``(K,)``, the agents that take this step (``None``: all of them)
        """
        if self.deterministic:
            actions, log_std = self.actor(observations), None
        else:
            actions, log_std = gaussian_actions(self.actor, observations, cast(th.Tensor, eps))
        if chosen is None:
            return -self.critic.q1_forward(observations, actions).mean(dim=(1, 2)).sum(), log_std
        return -(self.critic.q1_forward(observations, actions).mean(dim=(1, 2)) * chosen.float()).sum(), log_std

    def _update_targets(
        self,
        params: list[th.Tensor],
        target_params: list[th.Tensor],
        running_stats: list[th.Tensor],
        target_running_stats: list[th.Tensor],
    ) -> None:
        """Component 3, target networks: Polyak averaging of the weights, a copy of the running statistics."""
        foreach_polyak_update(params, target_params, self.tau)
        foreach_polyak_update(running_stats, target_running_stats, 1.0)


__all__ = ["COMPILED_PARTS", "CompileError", "UpdateStep", "agent_mse", "gaussian_actions"]

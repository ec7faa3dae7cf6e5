"""K independent AblatableTD3 agents trained in one process: one batched network per role, one replay column each."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, cast

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import ActionNoise, VectorizedActionNoise
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import MaybeCallback, TrainFrequencyUnit
from stable_baselines3.common.vec_env import DummyVecEnv
from torch.nn import functional as F

from sb3_ablation.batched.buffers import AgentReplayBuffer
from sb3_ablation.batched.device_buffer import DeviceAgentReplayBuffer
from sb3_ablation.batched.policies import BatchedTD3Policy
from sb3_ablation.batched.streams import AgentStream, agent_normal
from sb3_ablation.common.optim import FlatAdam, FlatParameters
from sb3_ablation.common.training_stats import TrainingStats
from sb3_ablation.common.utils import foreach_polyak_update
from sb3_ablation.switches import DEFAULTS, SWITCHES
from sb3_ablation.td3.ablatable_td3 import AblatableTD3
from sb3_ablation.td3.policies import GaussianActor

SelfBatchedTD3 = TypeVar("SelfBatchedTD3", bound="BatchedTD3")

#: the switches whose value may differ between the agents of one BatchedTD3 (the others shape the whole group: the
#: actor's kind, the replay buffer, the update schedule)
MIXABLE_SWITCHES = (
    "clipped_double_q",
    "target_networks",
    "target_policy_smoothing",
    "delayed_policy_update",
    "deterministic_policy",
)


@dataclass
class _MixedSwitches:
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
    def of(cls, model: BatchedTD3) -> _MixedSwitches:
        def values(name: str) -> list[bool] | None:
            agent_values = [switches[name] for switches in model.agent_switches]
            return agent_values if len(set(agent_values)) > 1 else None

        mixed, device, shape = cls(), model.device, (model.n_agents, 1, 1)
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


def _agent_mse(q_values: th.Tensor, targets: th.Tensor) -> th.Tensor:
    """Each agent's mean squared error over its own batch: ``(K, batch, 1)`` inputs, ``(K,)`` losses."""
    return F.mse_loss(q_values, targets, reduction="none").mean(dim=(1, 2))


def _identity(env: gym.Env) -> gym.Env:
    return env


class AgentSeededVecEnv(DummyVecEnv):
    """
    SB3's ``DummyVecEnv`` whose env k is agent k's, seeded with agent k's seed as a single-env run seeds its env
    (``VecEnv.seed`` would give env k the seed ``seed + k``).

    :param env_fns: the agents' envs, as for ``DummyVecEnv``
    :param agent_seeds: agent k's seed
    """

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], agent_seeds: Sequence[int]):
        super().__init__(list(env_fns))
        if len(agent_seeds) != self.num_envs:
            raise ValueError(f"{len(agent_seeds)} seeds for {self.num_envs} envs")
        self.agent_seeds = [int(seed) for seed in agent_seeds]

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """
        Seed env k with agent k's seed at the next reset, when ``seed`` is agent 0's (the model's seed: SB3's
        ``set_random_seed`` passes it); any other seed shifts every agent's seed by the same amount.
        """
        if seed is None:
            return super().seed(seed)
        # `_seeds` is where SB3's VecEnv.seed itself puts the seeds of the next reset (DummyVecEnv.reset passes
        # `_seeds[k]` to env k, then clears them); this override of seed() sets other values there, as its contract
        # allows. SB3 has no public per-env seed, and wrapping each env to shift its seed instead would put a wrapper
        # around the envs that the study's checkpoints find by type (tests/unit/test_zoo_adapter.py checks SB3's use)
        self._seeds = [agent_seed + seed - self.agent_seeds[0] for agent_seed in self.agent_seeds]
        return self._seeds


class BatchedTD3(AblatableTD3):
    """
    K independent :class:`AblatableTD3` agents, one per env of a K-env ``VecEnv``, trained together in one process: the
    same algorithm (``AblatableTD3.train``, every switch) on networks that hold the K agents' weights stacked, so each
    step of all agents is one batched product per layer instead of K small ones (at small network sizes a step is
    mostly per-call overhead). Agent k has its own weights, Adam moments, replay column, env, action noise and random
    number streams (:attr:`agent_streams`: its replay sampling, exploration noise, warm-up actions, target policy
    smoothing and Gaussian actor samples), and its losses are its own: nothing an agent computes depends on the others,
    so an agent's record and weights are bit-identical alone and in a group of any size (on one device and thread
    count). Agent k's streams start from its seed (``AgentSeededVecEnv``'s, else ``seed + k``) as a single run's do
    before it builds its networks, or from given states (:meth:`from_agents`).

    Step counts. SB3 counts a ``VecEnv`` step as K timesteps (one per env) and stores K transitions; so that each
    agent follows the single-run schedule, the counts given per agent are converted to SB3's in three places:
    ``learn(total_timesteps)`` runs SB3's ``learn`` for ``K * total_timesteps`` (each agent takes ``total_timesteps``
    env steps); the constructor multiplies ``learning_starts`` and ``buffer_size`` by K (the attributes hold SB3's
    counts); ``train`` with ``gradient_steps=-1`` does one gradient step per ``VecEnv`` step, where SB3 asks for K.
    ``num_timesteps`` stays SB3's count of all agents' steps (callbacks that count per agent divide by ``n_agents``;
    :attr:`agent_timesteps` is the count per agent). The loss of a gradient step is the sum of the agents' own mean
    losses, so each agent's gradient is exactly that of its own loss.

    Takes every argument of :class:`AblatableTD3`; refuses (one line each) what has no per-agent form here: speed
    mode, ``VecNormalize`` (its statistics would be pooled over agents), non-flat observations, n-step or custom replay
    buffers, the memory-efficient buffer and ``train_freq`` in episodes.

    Saving: ``save`` writes the group, in SB3's format (all agents' weights, Adam moments and counters, naming
    :class:`BatchedTD3Policy`), for ``BatchedTD3.load`` with a ``VecEnv`` of K envs (a checkpoint of the group);
    ``AblatableTD3.load`` refuses such a file in one line. One agent as a model of its own: :meth:`copy_agent_to` an
    ``AblatableTD3`` of the same settings, then its ``save``.

    :param policy: ``"MlpPolicy"`` (:class:`BatchedTD3Policy`)
    :param env: a ``VecEnv`` whose env k is agent k's (or a Gym env / id: one agent)
    :param agent_switches: agent k's switches (a mixed group; default: every agent the model's): they may differ in
        :data:`MIXABLE_SWITCHES` (the group's networks then have every component any agent has, and a Gaussian actor
        if any agent has one), the others must equal the model's
    :param replay_on_device: gather the replay batches on the model's device (:class:`DeviceAgentReplayBuffer`: the
        storage mirrored there, the batches the same) rather than on the host and copied there at every gradient step;
        ``None`` (default): where the device is not the CPU
    Other parameters as :class:`AblatableTD3`.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"MlpPolicy": BatchedTD3Policy}
    # Only its own files: K agents' networks stacked, which no single-agent file holds
    loadable_algorithms: ClassVar[tuple[str, ...]] = ("BatchedTD3",)
    implied_policy_arguments = (*AblatableTD3.implied_policy_arguments, "n_agents")
    policy: BatchedTD3Policy

    def __init__(
        self,
        policy: str | type[BatchedTD3Policy],
        env: Any,
        agent_switches: Sequence[dict[str, bool]] | None = None,
        replay_on_device: bool | None = None,
        **kwargs: Any,
    ):
        init_setup_model = kwargs.pop("_init_setup_model", True)
        if replay_on_device is not None and not isinstance(replay_on_device, bool):
            raise ValueError(
                f"replay_on_device is True, False or None (where the device is not the CPU), got {replay_on_device!r}"
            )
        if agent_switches is not None:
            agent_switches = [{**DEFAULTS, **switches} for switches in agent_switches]
            for name in SWITCHES:
                values = {switches[name] for switches in agent_switches}
                if name == "deterministic_policy":
                    # a Gaussian actor if any agent has one: a deterministic agent's is its mean (no sample drawn)
                    kwargs[name] = False not in values
                elif name in MIXABLE_SWITCHES:
                    # the group's networks: those of an agent with every mixable component any agent has
                    kwargs[name] = True in values
                elif len(values) > 1 or kwargs.get(name, DEFAULTS[name]) not in values:
                    raise ValueError(
                        f"{type(self).__name__} agents must share {name} (only {', '.join(MIXABLE_SWITCHES)} may "
                        f"differ), got {[switches[name] for switches in agent_switches]}"
                    )
        super().__init__(policy, env, **kwargs, _init_setup_model=False)
        self.n_agents = self.n_envs
        if agent_switches is not None and len(agent_switches) != self.n_agents:
            raise ValueError(f"{len(agent_switches)} agent_switches for {self.n_agents} agents")
        #: agent k's switches (those of :data:`MIXABLE_SWITCHES` may differ between agents; the model's ``switches``
        #: has each component that any agent has)
        self.agent_switches = agent_switches or [dict(self.switches) for _ in range(self.n_agents)]
        self._check_batched_settings(kwargs.get("replay_buffer_class"))
        # (the class saved with the model: its device form, where the batches are gathered on the device, is chosen
        # when the buffer is made, see _make_replay_buffer)
        self.replay_buffer_class = AgentReplayBuffer
        self.replay_on_device = replay_on_device
        # Per-agent counts to SB3's (see "Step counts" above): SB3 counts K steps and K transitions per VecEnv step
        self.learning_starts *= self.n_agents
        if self.switches["replay_buffer"]:
            self.buffer_size *= self.n_agents  # (without a buffer, one transition per agent: set by the switch)
        self.agent_diagnostics: list[dict[str, float]] = [{} for _ in range(self.n_agents)]
        #: agent k's random number streams (set by ``_setup_model``; a loaded model's are the saved ones)
        self.agent_streams: list[AgentStream] = []
        if init_setup_model:
            self._setup_model()

    def _check_batched_settings(self, replay_buffer_class: type[ReplayBuffer] | None) -> None:
        name = type(self).__name__
        if self.speed_mode:
            raise ValueError(f"{name} does not take speed_mode (its networks are batched over the agents already)")
        if not isinstance(self.observation_space, spaces.Box) or len(self.observation_space.shape) != 1:
            raise ValueError(f"{name} needs flat Box observations, got {self.observation_space}")
        if self._vec_normalize_env is not None:
            raise ValueError(f"{name} cannot use VecNormalize: its statistics would be pooled over the agents")
        if replay_buffer_class not in (None, ReplayBuffer) or self.n_steps != 1 or self.optimize_memory_usage:
            raise ValueError(
                f"{name} samples each agent's column of SB3's plain ReplayBuffer: no replay_buffer_class, n_steps > 1 "
                "or optimize_memory_usage"
            )
        unit = self.train_freq[1] if isinstance(self.train_freq, tuple) else TrainFrequencyUnit.STEP
        if getattr(unit, "value", unit) != TrainFrequencyUnit.STEP.value:
            raise ValueError(f"{name} needs train_freq in steps (episodes of the agents end at different times)")

    def _implied_policy_kwargs(self) -> dict[str, Any]:
        return {**super()._implied_policy_kwargs(), "n_agents": self.n_agents}

    def _apply_switches(self) -> None:
        if self.deterministic_policy or not any(switches["deterministic_policy"] for switches in self.agent_switches):
            super()._apply_switches()
            return
        # a Gaussian group with deterministic agents keeps their action noise (the Gaussian agents draw none)
        self.switches["deterministic_policy"] = True
        try:
            super()._apply_switches()
        finally:
            self.switches["deterministic_policy"] = False

    @property
    def stochastic_agents(self) -> list[bool] | None:
        """Whether agent k has a Gaussian actor, where the group's agents differ in that (else ``None``)."""
        return self._stochastic_agents

    def _excluded_save_params(self) -> list[str]:
        # derived from the flat buffers and from agent_switches (set up again by _setup_model)
        return [*super()._excluded_save_params(), "_element_agents", "_stochastic_agents", "_mixed"]

    def _replay_on_device(self) -> bool:
        """Whether the replay batches are gathered on the model's device (``replay_on_device``, else off the CPU)."""
        return self.device.type != "cpu" if self.replay_on_device is None else bool(self.replay_on_device)

    def _make_replay_buffer(self) -> ReplayBuffer:
        """:class:`AgentReplayBuffer`, or its device form :class:`DeviceAgentReplayBuffer` (see ``replay_on_device``)."""
        return self._placed_buffer(cast(AgentReplayBuffer, super()._make_replay_buffer()))

    def _placed_buffer(self, buffer: AgentReplayBuffer) -> AgentReplayBuffer:
        """``buffer``'s form that gathers where ``replay_on_device`` says (its storage shared, not copied)."""
        if self._replay_on_device() and not isinstance(buffer, DeviceAgentReplayBuffer):
            return DeviceAgentReplayBuffer.of(buffer)
        if not self._replay_on_device() and isinstance(buffer, DeviceAgentReplayBuffer):
            return buffer.on_host()
        return buffer

    def load_replay_buffer(self, path: Any, truncate_last_traj: bool = True) -> None:
        """SB3's ``load_replay_buffer``; the buffer loaded gathers where ``replay_on_device`` says, whoever saved it."""
        super().load_replay_buffer(path, truncate_last_traj)
        if isinstance(self.replay_buffer, AgentReplayBuffer):
            self.replay_buffer = self._placed_buffer(self.replay_buffer)

    def _sb3_policy_class(self) -> type[BasePolicy] | None:
        # K agents' networks stacked: no SB3 policy holds them, the file names BatchedTD3Policy
        return None

    @property
    def agent_timesteps(self) -> int:
        """Environment steps of each agent so far."""
        return self.num_timesteps // self.n_agents

    def _setup_model(self) -> None:
        # derived from agent_switches, which do not change (computed here rather than at each step: a loaded model's
        # switches are the saved ones by now)
        stochastic = [not switches["deterministic_policy"] for switches in self.agent_switches]
        self._stochastic_agents = stochastic if len(set(stochastic)) > 1 else None
        super()._setup_model()
        self._mixed = _MixedSwitches.of(self)
        if not self.agent_streams:  # (a loaded model has the saved streams already)
            self.agent_streams = [AgentStream.from_seed(seed, self.action_space, self.device) for seed in self.agent_seeds()]

    def agent_seeds(self) -> list[int]:
        """Agent k's seed: its env's (``AgentSeededVecEnv``), else ``seed + k`` (seeds drawn from NumPy without a seed)."""
        env = self.env
        if isinstance(env, AgentSeededVecEnv) and self.seed is not None:
            return [agent_seed + self.seed - env.agent_seeds[0] for agent_seed in env.agent_seeds]
        if self.seed is None:
            return [int(seed) for seed in np.random.randint(0, 2**31 - 1, size=self.n_agents)]
        return [self.seed + agent for agent in range(self.n_agents)]

    def _sample_action(
        self, learning_starts: int, action_noise: ActionNoise | None = None, n_envs: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        """
        SB3's ``_sample_action`` with each agent's draws from its own streams: warm-up actions from its action space,
        the Gaussian actor's sample from its generator, the exploration noise from its NumPy stream.
        """
        policy = self.policy
        action_space = cast(spaces.Box, self.action_space)
        if self.num_timesteps < learning_starts:
            unscaled_action = np.array([stream.action_space.sample() for stream in self.agent_streams])
        else:
            policy.set_training_mode(False)
            with th.no_grad():
                observations = th.as_tensor(self._last_obs, device=self.device)
                actions = self._actor_actions(observations).cpu().numpy().reshape((-1, *action_space.shape))
            unscaled_action = policy.unscale_action(actions) if policy.squash_output else actions
            if not policy.squash_output:
                unscaled_action = np.clip(unscaled_action, action_space.low, action_space.high)
        scaled_action = policy.scale_action(unscaled_action)
        if action_noise is not None:
            noises = action_noise.noises if isinstance(action_noise, VectorizedActionNoise) else [action_noise]
            stochastic = self.stochastic_agents
            if stochastic is None:
                draws = [stream.action_noise(noise) for stream, noise in zip(self.agent_streams, noises, strict=True)]
                scaled_action = np.clip(scaled_action + np.stack(draws), -1, 1)
            else:  # only the deterministic agents explore with action noise (the others by sampling themselves)
                scaled_action = np.array(scaled_action)
                for agent, (stream, noise) in enumerate(zip(self.agent_streams, noises, strict=True)):
                    if not stochastic[agent]:
                        scaled_action[agent] = np.clip(scaled_action[agent] + stream.action_noise(noise), -1, 1)
        return policy.unscale_action(scaled_action), scaled_action

    def _actor_actions(self, observations: th.Tensor, actor: th.nn.Module | None = None) -> th.Tensor:
        """
        The actions of ``actor`` (the online actor by default) on observations with the agents first, as its
        ``forward`` gives them: a deterministic actor's, or a sample of the Gaussian actor (:meth:`_gaussian_sample`).
        """
        actor = self.actor if actor is None else actor
        if self.deterministic_policy:
            return actor(observations)
        return self._gaussian_sample(observations, actor)[0]

    def _gaussian_sample(
        self, observations: th.Tensor, actor: th.nn.Module | None = None, agents: Sequence[bool] | None = None
    ) -> tuple[th.Tensor, th.Tensor]:
        """
        A reparameterized sample of the Gaussian ``actor`` (the online one by default) and its log-std: SB3's squashed
        Gaussian arithmetic, ``tanh(mean + eps * std)``, agent k's ``eps`` drawn from its generator.

        :param agents: the agents that sample (the others draw nothing: their ``eps`` is zero, their action the
            squashed mean, as a deterministic actor's); default those with a Gaussian actor
        """
        gaussian_actor = cast(GaussianActor, self.actor if actor is None else actor)  # deterministic_actor=False
        mean_actions, log_std = gaussian_actor.get_action_dist_params(observations)
        action_std = th.ones_like(mean_actions) * log_std.exp()
        agents = self.stochastic_agents if agents is None else agents
        stds = None if agents is None else [1.0 if sampling else None for sampling in agents]
        eps = agent_normal(mean_actions, self.agent_streams, stds)
        return th.tanh(mean_actions + eps * action_std), log_std

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        """
        ``AblatableTD3.train`` for the K agents at once, ``gradient_steps=-1`` meaning one gradient step per step of
        each agent: the same arithmetic per agent, each agent's random draws from its own streams, each agent's loss
        the mean over its own batch (a step minimises their sum, whose gradient for an agent's weights is its own
        loss's).
        """
        if self.gradient_steps < 0:
            # SB3 asks for one step per transition collected: K per VecEnv step, but one per agent step is meant
            gradient_steps = max(gradient_steps // self.n_agents, 1)
        self.policy.set_training_mode(True)
        self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
        if self.target_networks:
            assert self.actor_target is not None and self.critic_target is not None  # built with target_networks
            next_actor, next_critic = self.actor_target, self.critic_target
        else:
            next_actor, next_critic = self.actor, self.critic
        policy_delay = self.policy_delay if self.delayed_policy_update else 1
        generators = [stream.numpy for stream in self.agent_streams]
        sampled = batch_size if self.switches["replay_buffer"] else 1
        buffer = cast(AgentReplayBuffer, self.replay_buffer)
        mixed = self._mixed
        smoothing_stds = [
            self.target_policy_noise if switches["target_policy_smoothing"] else None for switches in self.agent_switches
        ]
        delays = [self.policy_delay if switches["delayed_policy_update"] else 1 for switches in self.agent_switches]
        agent_delays = delays if len(set(delays)) > 1 else None
        stats = TrainingStats()
        for _ in range(gradient_steps):
            self._n_updates += 1
            replay_data = buffer.sample(sampled, env=self._vec_normalize_env, generators=generators)
            if mixed.without_targets is not None:
                # (agents without target networks: their targets are their online weights at this step)
                self.policy.load_online_into_targets(mixed.without_targets)
            with th.no_grad():
                if self.target_policy_smoothing:
                    # drawn before the target actor's own sample, as AblatableTD3.train draws them
                    noise = agent_normal(replay_data.actions, self.agent_streams, smoothing_stds)
                    noise = noise.clamp(-self.target_noise_clip, self.target_noise_clip)
                    next_actions = self._actor_actions(replay_data.next_observations, next_actor)
                    smoothed = (next_actions + noise).clamp(-1, 1)
                    next_actions = smoothed if mixed.smoothing is None else th.where(mixed.smoothing, smoothed, next_actions)
                else:
                    next_actions = self._actor_actions(replay_data.next_observations, next_actor)
                next_q_values = th.cat(next_critic(replay_data.next_observations, next_actions), dim=-1)
                if self.clipped_double_q:
                    minimum, _ = th.min(next_q_values, dim=-1, keepdim=True)
                    next_q_values = minimum if mixed.twin is None else th.where(mixed.twin, minimum, next_q_values[..., :1])
                target_q_values = replay_data.rewards + (1 - replay_data.dones) * self.gamma * next_q_values

            current_q_values = self.critic(replay_data.observations, replay_data.actions)
            agent_losses = [_agent_mse(q_values, target_q_values) for q_values in current_q_values]
            if mixed.twin_weight is not None:
                # an agent with one critic: the others' losses weigh 0 (no gradient: its other critics never move)
                agent_losses[1:] = [loss * mixed.twin_weight for loss in agent_losses[1:]]
            critic_loss = th.stack(agent_losses).sum(dim=0).sum()  # each agent's sum over its critics, then the agents'
            self._gradient_step(self.critic.optimizer, critic_loss)
            stats.critic_step(critic_loss, current_q_values, target_q_values)

            if agent_delays is not None:
                self._mixed_delay_actor_step(replay_data.observations, agent_delays, stats)
            elif self._n_updates % policy_delay == 0:
                if self.deterministic_policy:
                    actions, log_std = self.actor(replay_data.observations), None
                else:
                    actions, log_std = self._gaussian_sample(replay_data.observations)
                actor_loss = -self.critic.q1_forward(replay_data.observations, actions).mean(dim=(1, 2)).sum()
                self._gradient_step(self.actor.optimizer, actor_loss, inputs=self._actor_parameters)
                stats.actor_step(actor_loss, log_std, agents=self.stochastic_agents)
                if self.target_networks:
                    params, target_params, running_stats, target_running_stats = self.policy.polyak_tensors()
                    foreach_polyak_update(params, target_params, self.tau)
                    foreach_polyak_update(running_stats, target_running_stats, 1.0)
        self._record_training_stats(stats)

    def _mixed_delay_actor_step(self, observations: th.Tensor, agent_delays: list[int], stats: TrainingStats) -> None:
        """
        The actor step of a group whose agents differ in ``delayed_policy_update``: agent k updates its actor (and its
        targets) when the update count is a multiple of its own delay, as its single run does; the others draw
        nothing, and their actor, Adam state and targets stay as they are (:func:`agent_adam_step`, each agent's
        Adam counting its own steps).

        :param agent_delays: agent k's policy delay (1: no delay)
        """
        active = [self._n_updates % delay == 0 for delay in agent_delays]
        if not any(active):
            return
        stochastic = self.stochastic_agents
        sampling = active if stochastic is None else [taken and own for taken, own in zip(active, stochastic, strict=True)]
        if self.deterministic_policy:
            actions, log_std = self.actor(observations), None
        else:
            actions, log_std = self._gaussian_sample(observations, agents=sampling)
        chosen = th.tensor(active, device=self.device)
        actor_loss = -(self.critic.q1_forward(observations, actions).mean(dim=(1, 2)) * chosen.float()).sum()
        optimizer = self.actor.optimizer
        if not isinstance(optimizer, FlatAdam):
            raise ValueError(f"{type(self).__name__} mixes policy delays with plain Adam only, got {type(optimizer).__name__}")
        optimizer.zero_grad()
        actor_loss.backward(inputs=self._actor_parameters)
        counts = [self._n_updates // delay for delay in agent_delays]
        agent_adam_step(optimizer, self._agents_of(optimizer.flat_params), active, counts)
        stats.actor_step(actor_loss, log_std, agents=sampling)
        if self.target_networks:
            params, target_params, running_stats, _ = self.policy.polyak_tensors()
            if running_stats:
                raise ValueError(f"{type(self).__name__} mixes policy delays without batch normalization only")
            saved = [target.detach().clone() for target in target_params]
            foreach_polyak_update(params, target_params, self.tau)
            with th.no_grad():
                for online, target, before in zip(params, target_params, saved, strict=True):
                    mask = chosen[self._agents_of(self._flat_parameters_of(online))]
                    target.copy_(th.where(mask, target, before))

    def _flat_parameters_of(self, flat: th.Tensor) -> FlatParameters:
        """The flat buffer (of the actor's or the critic's FlatAdam) that ``flat`` is."""
        for network in (self.actor, self.critic):
            optimizer = network.optimizer
            if isinstance(optimizer, FlatAdam) and optimizer.flat_params.flat is flat:
                return optimizer.flat_params
        raise ValueError(f"{type(self).__name__} mixes policy delays with the flat buffers of FlatAdam only")

    def _agents_of(self, flat_params: FlatParameters) -> th.Tensor:
        """:func:`element_agents` of a flat buffer, kept while the buffer lives."""
        cache: dict[int, tuple[th.Tensor, th.Tensor]] = self.__dict__.setdefault("_element_agents", {})
        flat = flat_params.flat
        cached = cache.get(id(flat))
        if cached is None or cached[0] is not flat:
            cached = cache[id(flat)] = (flat, element_agents(flat_params, self.n_agents))
        return cached[1]

    def _record_training_stats(self, stats: TrainingStats) -> None:
        super()._record_training_stats(stats)
        n_critics = [
            int(cast(int, self.policy.critic_kwargs["n_critics"])) if switches["clipped_double_q"] else 1
            for switches in self.agent_switches
        ]
        self.agent_diagnostics = stats.agent_diagnostics(self.n_agents, n_critics)

    def _budget_step_scale(self) -> int:
        return self.n_agents  # learn()'s budget is each agent's; SB3's counts are of all agents' steps

    def learn(
        self: SelfBatchedTD3,
        total_timesteps: int | None = None,
        callback: MaybeCallback = None,
        log_interval: int = 4,
        tb_log_name: str = "BatchedTD3",
        reset_num_timesteps: bool = True,
        progress_bar: bool | None = None,
    ) -> SelfBatchedTD3:
        """
        SB3's ``learn``, with ``total_timesteps`` counted per agent (each agent takes that many env steps); without
        it, the env's ``n_timesteps`` in ``zoo_configs/ablatable_td3.yml`` (see :meth:`AblatableTD3.learn`).
        """
        budget, callback, progress_bar = self._learn_arguments(total_timesteps, callback, progress_bar, reset_num_timesteps)
        for stream in self.agent_streams:
            # each torch draw of training is from agent k's generator, on the tensors' device; a generator's state does
            # not move between device types: a group loaded on another device than its streams' is evaluated, not trained
            if stream.torch.device.type != self.device.type:
                raise ValueError(
                    f"{type(self).__name__}'s random streams are on {stream.torch.device}, the model on {self.device}: "
                    f"to train it, load it with device='{stream.torch.device.type}'"
                )
        return super().learn(
            total_timesteps=budget * self.n_agents,
            callback=callback,
            log_interval=log_interval,
            tb_log_name=tb_log_name,
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
        )

    def copy_agent_to(self, agent: int, model: AblatableTD3) -> None:
        """
        Make ``model`` (a plain AblatableTD3 with this model's settings and spaces) agent ``agent``: its networks get the
        agent's weights, its step and update counts the agent's. Adam's moments are not copied.
        """
        self.policy.copy_agent_to(agent, model.policy)
        model.num_timesteps = self.agent_timesteps
        model._n_updates = self._n_updates

    @classmethod
    def from_agents(
        cls, agents: Sequence[AblatableTD3], hyperparams: dict[str, Any], streams: Sequence[AgentStream] | None = None
    ) -> BatchedTD3:
        """
        The batched model of single-env AblatableTD3 models built with the same ``hyperparams`` (e.g. by rl_zoo3 for
        several seeds), but for the switches of :data:`MIXABLE_SWITCHES`, which may differ (a mixed group): env k is
        agent k's env, seeded with agent k's seed at the first reset, agent k starts with agent k's initial weights
        and has agent k's switches.

        :param agents: the models (their envs move to the batched model; they keep their own policies)
        :param hyperparams: the keyword arguments the models were built with (``policy`` included, ``env`` and
            ``seed`` not; their switches are the agents')
        :param streams: agent k's random number streams (:meth:`AgentStream.of_process` right after building agent k
            gives it the streams its single run trains with); without, from its seed
        """
        envs = []
        for agent in agents:
            env = agent.get_env()
            if type(env) is not DummyVecEnv or env.num_envs != 1:
                raise ValueError(f"{cls.__name__}.from_agents needs agents on one plain env each, got {env}")
            envs.append(env.envs[0])
        seeds = [agent.seed for agent in agents]
        if any(seed is None for seed in seeds):
            raise ValueError(f"{cls.__name__}.from_agents needs seeded agents, got seeds {seeds}")
        env_fns = [functools.partial(_identity, env) for env in envs]  # DummyVecEnv takes env constructors
        venv = AgentSeededVecEnv(env_fns, [int(seed) for seed in seeds if seed is not None])
        # (the model's seed is agent 0's: its set_random_seed seeds env k with agent k's seed, see AgentSeededVecEnv)
        agent_switches = [agent.switches for agent in agents]
        model = cls(env=venv, seed=seeds[0], device=agents[0].device, agent_switches=agent_switches, **hyperparams)
        for index, agent in enumerate(agents):
            model.policy.copy_agent_from(index, agent.policy)
        if streams is not None:
            if len(streams) != len(agents):
                raise ValueError(f"{cls.__name__}.from_agents got {len(streams)} random streams for {len(agents)} agents")
            model.agent_streams = list(streams)
        return model


__all__ = ["AgentReplayBuffer", "AgentSeededVecEnv", "BatchedTD3"]

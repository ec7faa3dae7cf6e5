"""Losses and diagnostics of one ``train()`` call: kept by the model (``model.training_diagnostics``) and logged."""

import re
from collections.abc import Sequence

import numpy as np
import torch as th
from stable_baselines3.common.logger import Logger

# The names of the values logged as ``train/<name>``, besides ``q{i}_mean`` (:func:`q_mean_key`) for each critic i
CRITIC_LOSS = "critic_loss"
ACTOR_LOSS = "actor_loss"
TARGET_Q_MEAN = "target_q_mean"
TWIN_Q_GAP = "twin_q_gap"
TD_ERROR = "td_error"
ACTOR_STD = "actor_std"
# The diagnostics' names (``model.training_diagnostics``): a regular expression, as the critics are numbered
DIAGNOSTIC_NAME = re.compile(rf"^(q\d+_mean|{TWIN_Q_GAP}|{TARGET_Q_MEAN}|{TD_ERROR}|{ACTOR_STD})$")
LOG_PREFIX = "train/"


def q_mean_key(critic: int) -> str:
    """The name of critic ``critic``'s mean Q-value (critics counted from 1)."""
    return f"q{critic}_mean"


def log_training(logger: Logger, n_updates: int, losses: dict[str, float], diagnostics: dict[str, float]) -> None:
    """Log one ``train()`` call: SB3's ``train/n_updates`` and losses (as SB3's TD3 logs them), then the diagnostics."""
    logger.record(LOG_PREFIX + "n_updates", n_updates, exclude="tensorboard")
    for key, value in (losses | diagnostics).items():
        logger.record(LOG_PREFIX + key, value)


class TrainingStats:
    """
    Keeps, per gradient step, detached references to the losses and to the tensors the diagnostics are computed
    from (no arithmetic during training), and logs their means over the steps of one ``train()`` call, computed on
    the host after a single transfer from the device.

    Logged keys: ``train/critic_loss``, ``train/actor_loss``, ``train/q{i}_mean`` (mean Q_i(s, a) of the batch,
    before the update), ``train/twin_q_gap`` (mean |Q1 - Q2|, with two critics or more), ``train/target_q_mean``
    (mean TD target y), ``train/td_error`` (mean |Q1 - y|) and, for a Gaussian actor, ``train/actor_std`` (mean
    standard deviation of its pre-tanh distribution on the batch). Nothing here draws a random number or touches a
    weight.
    """

    def __init__(self) -> None:
        self._critic_losses: list[th.Tensor] = []
        self._q_values: list[list[th.Tensor]] = []  # per step: Q_1 .. Q_n and the target y, shape (batch, 1) each
        self._actor_losses: list[th.Tensor] = []
        self._log_stds: list[th.Tensor] = []
        # per actor step with a log-std: which agents took that step (None: every agent), see agent_diagnostics
        self._log_std_agents: list[np.ndarray | None] = []
        # (steps seen, host values): the logged means and the per-agent diagnostics read the same transfer
        self._host: tuple[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | None = None

    def critic_step(self, loss: th.Tensor, current_q_values: Sequence[th.Tensor], target_q_values: th.Tensor) -> None:
        """
        :param loss: the critic loss of this step
        :param current_q_values: each critic's Q(s, a) on the batch, shape (batch, 1) each
        :param target_q_values: the TD targets y, shape (batch, 1)
        """
        self._critic_losses.append(loss.detach())
        self._q_values.append([*(q_values.detach() for q_values in current_q_values), target_q_values.detach()])

    def actor_step(self, loss: th.Tensor, log_std: th.Tensor | None = None, agents: Sequence[bool] | None = None) -> None:
        """
        :param loss: the actor loss of this step
        :param log_std: a Gaussian actor's pre-tanh log standard deviation on the batch (None for a deterministic one)
        :param agents: of agents trained together, those whose Gaussian actor took this step (None: every agent);
            the others' log-stds are left out of their diagnostics
        """
        self._actor_losses.append(loss.detach())
        if log_std is not None:
            self._log_stds.append(log_std.detach())
            self._log_std_agents.append(None if agents is None else np.asarray(agents, dtype=bool))

    @th.no_grad()
    def _host_values(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The critic losses, actor losses, Q columns and log-stds on the host, after a single transfer."""
        n_critic, n_actor = len(self._critic_losses), len(self._actor_losses)
        if self._host is not None and self._host[0] == (n_critic, n_actor):
            return self._host[1]
        # Everything in one tensor, one kernel and one device-to-host transfer; the means in float64 on the host
        q_values = [q for step in self._q_values for q in step]
        tensors = [*self._critic_losses, *self._actor_losses, *q_values, *self._log_stds]
        flat = th.cat([tensor.reshape(-1).float() for tensor in tensors]).numpy(force=True).astype(np.float64)
        n_q = n_critic + n_actor + sum(q.numel() for q in q_values)
        values = flat[:n_critic], flat[n_critic : n_critic + n_actor], flat[n_critic + n_actor : n_q], flat[n_q:]
        self._host = ((n_critic, n_actor), values)
        return values

    def losses(self) -> dict[str, float]:
        """The mean critic loss and (where the actor was updated) actor loss over the steps collected."""
        if not self._critic_losses:
            return {}
        critic_losses, actor_losses, _, _ = self._host_values()
        losses = {CRITIC_LOSS: _mean(critic_losses)}
        if len(actor_losses):
            losses[ACTOR_LOSS] = _mean(actor_losses)
        return losses

    def diagnostics(self) -> dict[str, float]:
        """The diagnostics (see :func:`_diagnostics`), means over the steps collected; empty before any step."""
        if not self._critic_losses:
            return {}
        _, _, q_values, log_stds = self._host_values()
        n_steps, n_columns = len(self._q_values), len(self._q_values[0])
        # Columns Q_1 .. Q_n, y over every step's batch
        columns = q_values.reshape(n_steps, n_columns, -1).transpose(1, 0, 2).reshape(n_columns, -1)
        return _diagnostics(columns, log_stds)

    def record(self, logger: Logger, n_updates: int) -> None:
        """Log the means over the steps collected (SB3's keys for the losses, as SB3's TD3 logs them)."""
        log_training(logger, n_updates, self.losses(), self.diagnostics())

    def agent_diagnostics(self, n_agents: int, n_critics: list[int] | None = None) -> list[dict[str, float]]:
        """
        The diagnostics of each of ``n_agents`` agents trained together (every tensor with the agents first: Q-values
        ``(n_agents, batch, 1)``, log-stds ``(n_agents, batch, action_dim)``), keyed as logged without ``train/``.

        :param n_critics: agent k's own number of critics, its first ones (default: every critic)
        """
        if not self._critic_losses:
            return [{} for _ in range(n_agents)]
        _, _, q_values, log_stds = self._host_values()
        n_steps, n_columns = len(self._q_values), len(self._q_values[0])
        by_agent = q_values.reshape(n_steps, n_columns, n_agents, -1).transpose(2, 1, 0, 3).reshape(n_agents, n_columns, -1)
        log_stds_by_agent: list[np.ndarray] = [np.zeros(0)] * n_agents
        if self._log_stds:  # a Gaussian actor's: each agent's steps, in order
            steps = log_stds.reshape(len(self._log_stds), n_agents, -1).transpose(1, 0, 2)
            if any(agents is not None for agents in self._log_std_agents):
                taken = np.stack([np.ones(n_agents, bool) if agents is None else agents for agents in self._log_std_agents])
                log_stds_by_agent = [steps[agent][taken[:, agent]].reshape(-1) for agent in range(n_agents)]
            else:
                log_stds_by_agent = list(steps.reshape(n_agents, -1))
        rows = [[*range(n_columns - 1 if n_critics is None else n_critics[agent]), -1] for agent in range(n_agents)]
        return [_diagnostics(by_agent[agent][rows[agent]], log_stds_by_agent[agent]) for agent in range(n_agents)]


def _mean(values: np.ndarray) -> float:
    """``np.mean`` of a 1-d array (the same sum, then division), without its per-call overhead."""
    return float(np.add.reduce(values)) / values.size


def _row_means(rows: np.ndarray) -> list[float]:
    """``rows.mean(axis=1)`` (the same sums, then division), without its per-call overhead."""
    return (np.add.reduce(rows, axis=1) / rows.shape[1]).tolist()


def _diagnostics(columns: np.ndarray, log_stds: np.ndarray) -> dict[str, float]:
    """
    :param columns: Q_1 .. Q_n and the target y, one row each
    :param log_stds: a Gaussian actor's log standard deviations (empty for a deterministic actor)
    :return: ``actor_std`` (Gaussian actor only), ``q{i}_mean``, ``target_q_mean``, ``twin_q_gap`` (two critics or
        more) and ``td_error``
    """
    values = {}
    if len(log_stds):
        values[ACTOR_STD] = _mean(np.exp(log_stds).ravel())
    # one reduction per kind of value (this runs after every train() call: each NumPy call costs microseconds)
    *q_means, values[TARGET_Q_MEAN] = _row_means(columns)
    values.update({q_mean_key(index + 1): mean for index, mean in enumerate(q_means)})
    twin = len(columns) >= 3
    gaps = _row_means(np.abs(columns[0] - columns[[1, -1] if twin else [-1]]))
    if twin:
        values[TWIN_Q_GAP] = gaps[0]
    values[TD_ERROR] = gaps[-1]
    return values

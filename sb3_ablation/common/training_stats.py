"""Losses and diagnostics of one ``train()`` call, logged through SB3's logger."""

from collections.abc import Sequence

import numpy as np
import torch as th
from stable_baselines3.common.logger import Logger


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

    def critic_step(self, loss: th.Tensor, current_q_values: Sequence[th.Tensor], target_q_values: th.Tensor) -> None:
        """
        :param loss: the critic loss of this step
        :param current_q_values: each critic's Q(s, a) on the batch, shape (batch, 1) each
        :param target_q_values: the TD targets y, shape (batch, 1)
        """
        self._critic_losses.append(loss.detach())
        self._q_values.append([*(q_values.detach() for q_values in current_q_values), target_q_values.detach()])

    def actor_step(self, loss: th.Tensor, log_std: th.Tensor | None = None) -> None:
        """
        :param loss: the actor loss of this step
        :param log_std: a Gaussian actor's pre-tanh log standard deviation on the batch (None for a deterministic one)
        """
        self._actor_losses.append(loss.detach())
        if log_std is not None:
            self._log_stds.append(log_std.detach())

    @th.no_grad()
    def record(self, logger: Logger, n_updates: int) -> None:
        """Log the means over the steps collected (SB3's keys for the losses, as SB3's TD3 logs them)."""
        logger.record("train/n_updates", n_updates, exclude="tensorboard")
        if not self._critic_losses:
            return
        # Everything in one tensor, one kernel and one device-to-host transfer; the means in float64 on the host
        parts = [self._critic_losses, self._actor_losses, [q for step in self._q_values for q in step], self._log_stds]
        flat = th.cat([tensor.reshape(-1).float() for part in parts for tensor in part]).cpu().numpy().astype(np.float64)
        critic_losses, actor_losses, q_values, log_stds = np.split(
            flat, np.cumsum([sum(tensor.numel() for tensor in part) for part in parts[:3]])
        )
        n_steps, n_columns = len(self._q_values), len(self._q_values[0])
        # Columns Q_1 .. Q_n, y over every step's batch
        columns = q_values.reshape(n_steps, n_columns, -1).transpose(1, 0, 2).reshape(n_columns, -1)
        logger.record("train/critic_loss", float(np.mean(critic_losses)))
        if len(actor_losses):
            logger.record("train/actor_loss", float(np.mean(actor_losses)))
        if len(log_stds):
            logger.record("train/actor_std", float(np.mean(np.exp(log_stds))))
        for index in range(n_columns - 1):
            logger.record(f"train/q{index + 1}_mean", float(np.mean(columns[index])))
        logger.record("train/target_q_mean", float(np.mean(columns[-1])))
        if n_columns >= 3:
            logger.record("train/twin_q_gap", float(np.mean(np.abs(columns[0] - columns[1]))))
        logger.record("train/td_error", float(np.mean(np.abs(columns[0] - columns[-1]))))

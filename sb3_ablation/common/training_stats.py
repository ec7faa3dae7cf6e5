"""Losses and diagnostics of one ``train()`` call, logged through SB3's logger."""

from collections.abc import Sequence

import numpy as np
import torch as th
from stable_baselines3.common.logger import Logger


class TrainingStats:
    """
    Collects, per gradient step, the losses and the diagnostics of the critic and actor updates as detached tensors,
    and logs their means over the steps of one ``train()`` call with a single transfer from the device.

    Logged keys: ``train/critic_loss``, ``train/actor_loss``, ``train/q{i}_mean`` (mean Q_i(s, a) of the batch,
    before the update), ``train/twin_q_gap`` (mean |Q1 - Q2|, with two critics or more), ``train/target_q_mean``
    (mean TD target y), ``train/td_error`` (mean |Q1 - y|) and, for a Gaussian actor, ``train/actor_std`` (mean
    standard deviation of its pre-tanh distribution on the batch). Nothing here draws a random number or touches a
    weight.
    """

    def __init__(self) -> None:
        self._critic_rows: list[th.Tensor] = []
        self._actor_rows: list[th.Tensor] = []

    @th.no_grad()
    def critic_step(self, loss: th.Tensor, current_q_values: Sequence[th.Tensor], target_q_values: th.Tensor) -> None:
        """
        :param loss: the critic loss of this step
        :param current_q_values: each critic's Q(s, a) on the batch, shape (batch, 1) each
        :param target_q_values: the TD targets y, shape (batch, 1)
        """
        # Columns Q_1 .. Q_n, y: their means, and |Q_1 - column| for each later one (|Q1 - Q2| ... |Q1 - y|)
        columns = th.cat([*current_q_values, target_q_values], dim=1)
        gaps = (columns[:, :1] - columns[:, 1:]).abs().mean(dim=0)
        self._critic_rows.append(th.cat([loss.detach().reshape(1), columns.mean(dim=0), gaps]))

    @th.no_grad()
    def actor_step(self, loss: th.Tensor, log_std: th.Tensor | None = None) -> None:
        """
        :param loss: the actor loss of this step
        :param log_std: a Gaussian actor's pre-tanh log standard deviation on the batch (None for a deterministic one)
        """
        row = [loss.detach().reshape(1)]
        if log_std is not None:
            row.append(log_std.exp().mean().reshape(1))
        self._actor_rows.append(th.cat(row))

    def record(self, logger: Logger, n_updates: int) -> None:
        """Log the means over the steps collected (SB3's keys for the losses, as SB3's TD3 logs them)."""
        logger.record("train/n_updates", n_updates, exclude="tensorboard")
        critic_rows, actor_rows = len(self._critic_rows), len(self._actor_rows)
        if critic_rows == 0:
            return
        tensors = [th.stack(self._critic_rows).flatten()]
        if actor_rows:
            tensors.append(th.stack(self._actor_rows).flatten())
        # One device-to-host transfer per train() call
        values = th.cat(tensors).cpu().numpy().astype(np.float64)
        critic = values[: tensors[0].numel()].reshape(critic_rows, -1).mean(axis=0)
        if actor_rows:
            actor = values[tensors[0].numel() :].reshape(actor_rows, -1).mean(axis=0)
            logger.record("train/actor_loss", actor[0])
            if len(actor) > 1:
                logger.record("train/actor_std", actor[1])
        n_critics = (len(critic) - 2) // 2
        logger.record("train/critic_loss", critic[0])
        for index in range(n_critics):
            logger.record(f"train/q{index + 1}_mean", critic[1 + index])
        logger.record("train/target_q_mean", critic[1 + n_critics])
        gaps = critic[2 + n_critics :]
        if n_critics >= 2:
            logger.record("train/twin_q_gap", gaps[0])
        logger.record("train/td_error", gaps[-1])

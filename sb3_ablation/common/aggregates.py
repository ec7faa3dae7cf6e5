"""Aggregates of scores that code below the study needs too (the zoo's multi-seed trials)."""

import numpy as np


def iqm(scores: np.ndarray) -> float:
    """
    Interquartile mean of all scores: rliable's ``aggregate_iqm`` (``scipy.stats.trim_mean(scores, 0.25, axis=None)``:
    the mean after ``int(0.25 n)`` values are cut from each end; for n < 4 the mean), summed in sorted order, and
    without scipy's per-call overhead, which dominates bootstraps of a few runs.

    :param scores: the scores, of any shape
    :return: the IQM of all of them
    """
    values = np.sort(np.asarray(scores, dtype=np.float64).ravel())
    cut = int(0.25 * values.size)
    return float(values[cut : values.size - cut].mean())

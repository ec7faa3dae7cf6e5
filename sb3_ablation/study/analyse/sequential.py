"""Group-sequential looks: Lan-DeMets alpha spending (O'Brien-Fleming and Pocock types), the boundaries of a design's
looks and where it stops.

Only numpy and scipy, like :mod:`~sb3_ablation.study.analyse.robust`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import optimize, stats


def spent_alpha(kind: str, t: float, alpha: float) -> float:
    """
    The Lan-DeMets spending function: the two-sided error spent by information fraction t.

    :param kind: ``"obrien-fleming"`` (2 - 2 Phi(z_{alpha/2} / sqrt(t))) or ``"pocock"`` (alpha ln(1 + (e - 1) t))
    :param t: information fraction in (0, 1]
    :param alpha: the design's two-sided level
    :return: the error spent up to t
    """
    if kind == "obrien-fleming":
        return float(2 - 2 * stats.norm.cdf(stats.norm.isf(alpha / 2) / math.sqrt(t)))
    if kind == "pocock":
        return float(alpha * math.log(1 + (math.e - 1) * t))
    raise ValueError(f"unknown boundary {kind!r}; expected 'obrien-fleming' or 'pocock'")


def sequential_boundaries(looks: Sequence[int], alpha: float, kind: str = "obrien-fleming") -> tuple[float, ...]:
    """
    Two-sided critical |z| at each look of a group-sequential design with Lan-DeMets alpha spending.

    The look-k statistic is ``Z_k = W(t_k) / sqrt(t_k)`` for a Brownian motion W at information fractions
    ``t_k = n_k / n_K`` (so looks correlate as sqrt(n_i / n_j)); boundary k makes the probability of crossing first at
    look k equal the error spent between looks k - 1 and k. The crossing probabilities are computed by numerical
    integration (the Armitage-McPherson-Rowe recursion over the density of W on the continuation region, Simpson's
    rule), deterministic to about 1e-8.

    :param looks: increasing seed counts at which the design analyses (the last one: the planned total)
    :param alpha: the design's two-sided level
    :param kind: ``"obrien-fleming"`` or ``"pocock"`` (Lan-DeMets spending functions of those types)
    :return: the critical |z| per look
    """
    n = np.asarray(looks, dtype=np.float64)
    if n.ndim != 1 or not len(n) or n[0] <= 0 or np.any(np.diff(n) <= 0):
        raise ValueError(f"looks must be positive and increasing, got {list(looks)}")
    fractions = n / n[-1]
    spent = np.array([spent_alpha(kind, t, alpha) for t in fractions])
    increments = np.diff(spent, prepend=0.0)
    steps = np.sqrt(np.diff(fractions, prepend=0.0))  # sd of W's increment before each look
    spacing = float(steps.min()) / 40
    boundaries = [float(stats.norm.isf(increments[0] / 2))]
    grid = _grid(min(boundaries[0], _Z_MAX) * steps[0], spacing)
    density = stats.norm.pdf(grid, scale=steps[0])  # W(t_1), on the continuation region
    for k in range(1, len(n)):
        root = math.sqrt(fractions[k])
        weights = _simpson(grid) * density
        c = _boundary(increments[k], grid, weights, steps[k], root)
        boundaries.append(c)
        if k < len(n) - 1:  # the sub-density of W(t_k) on the new continuation region
            previous, grid = grid, _grid(min(c, _Z_MAX) * root, spacing)
            density = stats.norm.pdf((grid[:, None] - previous[None, :]) / steps[k]) / steps[k] @ weights
    return tuple(boundaries)


def _crossing(c: float, grid: np.ndarray, weights: np.ndarray, sd: float, root: float) -> float:
    """P(not stopped before, |W(t_k)| >= c sqrt(t_k)): W(t_k) = W(t_k-1) + N(0, sd^2), integrated over the grid."""
    outside = stats.norm.cdf((-c * root - grid) / sd) + stats.norm.sf((c * root - grid) / sd)
    return float(weights @ outside)


def _boundary(target: float, grid: np.ndarray, weights: np.ndarray, sd: float, root: float) -> float:
    """The |z| whose first-crossing probability is ``target``; infinite when nothing is spent at this look."""
    if target <= 0:
        return math.inf
    if _crossing(_Z_MAX, grid, weights, sd, root) >= target:
        return _Z_MAX
    return float(optimize.brentq(lambda c: _crossing(c, grid, weights, sd, root) - target, 1e-6, _Z_MAX, xtol=1e-10))


_Z_MAX = 40.0


def _grid(half_width: float, spacing: float) -> np.ndarray:
    """An odd number (401 to 8001) of equally spaced points over [-half_width, half_width]."""
    points = 2 * math.ceil(half_width / spacing) + 1
    return np.linspace(-half_width, half_width, min(max(points, 401), 8001))


def _simpson(grid: np.ndarray) -> np.ndarray:
    """Simpson weights on an odd number of equally spaced points."""
    h = grid[1] - grid[0]
    w = np.ones(len(grid))
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w * h / 3


def nominal_alpha(boundaries: Sequence[float]) -> tuple[float, ...]:
    """
    The nominal two-sided level of each look's boundary.

    :param boundaries: critical |z| per look
    :return: 2 (1 - Phi(c)) per look
    """
    return tuple(float(2 * stats.norm.sf(c)) for c in boundaries)


def sequential_decision(p_values: Sequence[float], boundaries: Sequence[float]) -> int | None:
    """
    Where a group-sequential design stops.

    :param p_values: each look's two-sided p-value (NaN: no test at that look)
    :param boundaries: critical |z| per look (:func:`sequential_boundaries`)
    :return: the first look (0-based) whose p, as |z| = Phi^-1(1 - p / 2), reaches its boundary; ``None``: none did
    """
    for k, (p, c) in enumerate(zip(p_values, boundaries, strict=False)):
        if math.isfinite(p) and stats.norm.isf(p / 2) >= c:
            return k
    return None

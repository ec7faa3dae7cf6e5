"""The effect sizes of a study: point estimates and confidence intervals, not significance.

Following Agarwal et al. (2021), "Deep RL at the edge of the statistical precipice", with their library rliable:

- per variant, the interquartile mean (IQM) and the mean of an outcome over runs (the final return, or the value
  overestimation at the end of training) with 95% stratified-bootstrap CIs (``rliable.library.get_interval_estimates``);
- against the baseline, the IQM difference (a point estimate) and the per-seed **paired** differences: variant and
  baseline share seeds (hence initial weights and evaluation episodes), and these differences are what the report's
  verdicts test (:func:`~sb3_ablation.study.analyse.inference.compare_family`, the one way a verdict is decided);
- no interval with fewer than :data:`MIN_RUNS` runs of a variant: a bootstrap of two values is no interval, and an
  exact permutation test on 2 against 2 runs cannot go below p = 1/3 (:func:`min_permutation_p`);
- curves over training and performance profiles with their bands, for the figures.

Bootstraps draw from a fixed seed, so a report is reproducible.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rliable import library as rly

CONFIDENCE = 0.95
DEFAULT_REPS = 10_000
DEFAULT_SEED = 0
# curves have one bootstrap per evaluation point: fewer replications keep the report fast, and their CIs are for
# reading, not for a verdict
CURVE_REPS = 2_000
# fewer runs per variant than this: per-seed values, no confidence interval, no significance
MIN_RUNS = 5


def iqm(scores: np.ndarray) -> float:
    """
    Interquartile mean of all scores: exactly rliable's ``aggregate_iqm`` (``scipy.stats.trim_mean(scores, 0.25,
    axis=None)``), without scipy's per-call overhead, which dominates bootstraps of a few runs.
    """
    values = np.sort(np.asarray(scores, dtype=np.float64).ravel())
    cut = int(0.25 * values.size)
    return float(values[cut : values.size - cut].mean())


def iqm_per_timestep(curves: np.ndarray) -> np.ndarray:
    """
    The IQM over runs (and tasks) at each timestep, ignoring NaN (a diagnostic with nothing logged in a window).

    :param curves: (runs, tasks, timesteps)
    :return: (timesteps,); NaN where no run has a value
    """
    values = np.sort(curves.reshape(-1, curves.shape[-1]), axis=0)  # NaN sorts last
    count = np.isfinite(values).sum(axis=0)
    cut = (0.25 * count).astype(np.int64)  # as trim_mean: int(0.25 n) values off each end
    row = np.arange(values.shape[0])[:, None]
    kept = (row >= cut) & (row < count - cut)
    with np.errstate(invalid="ignore", divide="ignore"):
        iqms: np.ndarray = np.where(kept, np.nan_to_num(values), 0.0).sum(axis=0) / kept.sum(axis=0)
    return iqms


def mean(scores: np.ndarray) -> float:
    return float(np.mean(scores))


def min_permutation_p(n_x: int, n_y: int) -> float:
    """The smallest two-sided p-value an exact permutation test on ``n_x`` against ``n_y`` runs can give."""
    return min(1.0, 2.0 / math.comb(n_x + n_y, n_x))


@contextlib.contextmanager
def seeded_numpy(seed: int) -> Iterator[None]:
    """rliable's stratified bootstrap draws from NumPy's global generator: seed it here and restore it afterwards."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def interval(
    score_dict: dict[str, Any], func: Callable[..., np.ndarray], reps: int, seed: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """rliable's ``get_interval_estimates`` (percentile stratified bootstrap), seeded."""
    with seeded_numpy(seed):
        estimates: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] = rly.get_interval_estimates(
            score_dict, func, reps=reps, confidence_interval_size=CONFIDENCE
        )
    return estimates


@dataclass
class VariantStats:
    """
    Statistics of one outcome (final return, or overestimation at the end) of one variant on one env or on all envs.
    CIs are (low, high), ``None`` where the runs cannot support one (fewer than ``min_runs``).
    """

    variant: str
    n_runs: int
    iqm: float
    iqm_ci: tuple[float, float] | None
    mean: float
    mean_ci: tuple[float, float] | None
    seeds: tuple[int, ...] = ()  # the seed of each run, when known
    per_seed: tuple[float, ...] = ()  # the outcome of each run (averaged over envs for a (runs, envs) matrix)
    min_runs: int = MIN_RUNS
    diff: float | None = None  # IQM(variant) - IQM(baseline); None for the baseline and without one
    paired_seeds: tuple[int, ...] = ()  # seeds both variant and baseline have
    paired_diffs: tuple[float, ...] = ()  # variant - baseline, per seed of paired_seeds
    paired_diff: float | None = None  # mean of paired_diffs (NaN: no common seed)
    baseline_runs: int = 0


def outcome_statistics(
    scores: dict[str, np.ndarray],
    baseline: str | None,
    reps: int = DEFAULT_REPS,
    seed: int = DEFAULT_SEED,
    seeds: Mapping[str, Sequence[int] | np.ndarray] | None = None,
    min_runs: int = MIN_RUNS,
) -> dict[str, VariantStats]:
    """
    IQM and mean of an outcome for each variant, and the comparison with the baseline (see the module docstring).

    :param scores: variant -> one value per run (or a (runs, envs) matrix of normalized scores, resampled within each
        env); variants without runs are left out
    :param baseline: the variant the others are compared with (``None``: no comparison)
    :param reps: bootstrap replications
    :param seed: bootstrap seed
    :param seeds: variant -> the seed of each run (row); without it there is no paired difference
    :param min_runs: variants with fewer runs get point estimates and per-seed values only
    :return: variant -> statistics
    """
    matrices = {}
    for variant, values in scores.items():
        values = np.asarray(values, dtype=np.float64)
        if len(values):
            matrices[variant] = values.reshape(-1, 1) if values.ndim == 1 else values  # (runs, tasks)
    run_seeds = {v: tuple(int(s) for s in seeds[v]) for v in matrices if seeds and v in seeds}
    enough = {v: m for v, m in matrices.items() if m.shape[0] >= min_runs}
    cis = interval(enough, lambda x: np.array([iqm(x), mean(x)]), reps, seed)[1] if enough else {}
    stats = {
        variant: VariantStats(
            variant=variant,
            n_runs=matrix.shape[0],
            iqm=iqm(matrix),
            iqm_ci=(float(cis[variant][0, 0]), float(cis[variant][1, 0])) if variant in cis else None,
            mean=mean(matrix),
            mean_ci=(float(cis[variant][0, 1]), float(cis[variant][1, 1])) if variant in cis else None,
            seeds=run_seeds.get(variant, ()),
            per_seed=tuple(float(v) for v in matrix.mean(axis=1)),
            min_runs=min_runs,
        )
        for variant, matrix in matrices.items()
    }
    if baseline not in matrices:
        return stats
    reference = matrices[baseline]
    for variant, matrix in matrices.items():
        if variant == baseline:
            continue
        s = stats[variant]
        s.diff, s.baseline_runs = iqm(matrix) - iqm(reference), reference.shape[0]
        if variant in run_seeds and baseline in run_seeds:
            common = sorted(set(run_seeds[variant]) & set(run_seeds[baseline]))
            rows_x = [run_seeds[variant].index(k) for k in common]
            rows_y = [run_seeds[baseline].index(k) for k in common]
            differences = (matrix[rows_x] - reference[rows_y]).mean(axis=1)
            s.paired_seeds, s.paired_diffs = tuple(common), tuple(float(d) for d in differences)
            s.paired_diff = float(np.mean(differences)) if len(common) else math.nan
    return stats


def curve_estimates(
    values: np.ndarray, reps: int = CURVE_REPS, seed: int = DEFAULT_SEED, min_runs: int = MIN_RUNS
) -> tuple[np.ndarray, np.ndarray | None]:
    """
    IQM over runs at each timestep with its 95% stratified-bootstrap CI (rliable's ``get_interval_estimates`` over
    the timestep grid, as rliable's sample-efficiency curves).

    :param values: (runs, timesteps), or (runs, tasks, timesteps) for normalized scores of several envs (runs are
        resampled within each task); NaN entries (a bias with no samples, a diagnostic before learning starts) are
        ignored
    :param min_runs: with fewer runs, no CI
    :return: ``(iqm, ci)`` with ``ci`` of shape (2, timesteps), or ``None`` with fewer than ``min_runs`` runs
    """
    curves = values[:, None, :] if values.ndim == 2 else values  # (runs, tasks, timesteps)
    point = iqm_per_timestep(curves)
    if values.shape[0] < min_runs:
        return point, None
    with np.errstate(all="ignore"):
        _, cis = interval({"curve": curves}, iqm_per_timestep, reps, seed)
    return point, cis["curve"]


def performance_profile(
    scores: dict[str, np.ndarray], taus: np.ndarray, reps: int = CURVE_REPS, seed: int = DEFAULT_SEED, min_runs: int = MIN_RUNS
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """
    rliable's performance profiles (score distributions): the fraction of runs with a score above each threshold.

    :param scores: variant -> (runs, tasks) matrix, or one value per run
    :param taus: thresholds
    :return: ``(profiles, cis)``: variant -> fraction at each tau, and variant -> (2, taus) stratified-bootstrap CIs
        (``None`` when a variant has fewer than ``min_runs`` runs: then there are no bands at all)
    """
    matrices = {v: np.asarray(s, dtype=np.float64).reshape(len(s), -1) for v, s in scores.items() if len(s)}
    if min(m.shape[0] for m in matrices.values()) < min_runs:
        return {v: score_distribution(m, taus) for v, m in matrices.items()}, None
    with seeded_numpy(seed):
        profiles: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] = rly.create_performance_profile(
            matrices, taus, custom_profile_func=score_distribution, reps=reps, confidence_interval_size=CONFIDENCE
        )
    return profiles


def score_distribution(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """
    rliable's ``score_distributions`` (the fraction of all runs and tasks with a score above each tau), vectorised:
    rliable's is an ``np.vectorize`` over taus, a Python call per tau and bootstrap resample.
    """
    fractions: np.ndarray = (np.ravel(scores)[:, None] > np.asarray(taus)[None, :]).mean(axis=0)
    return fractions

"""The statistics of a study: point estimates, confidence intervals, comparisons with the baseline, normalization.

Following Agarwal et al. (2021), "Deep RL at the edge of the statistical precipice", with their library rliable:

- per variant, the interquartile mean (IQM) and the mean of an outcome over runs (the final return, or the value
  overestimation at the end of training) with 95% stratified-bootstrap CIs (``rliable.library.get_interval_estimates``);
- against the baseline, the difference of IQMs with a 95% CI from an independent bootstrap of both variants' runs, the
  probability of improvement P(variant > baseline), and the **paired** difference: variant and baseline share seeds
  (hence initial weights and evaluation episodes), so the mean of the per-seed differences with a 95% Student-t
  interval uses what the seeds have in common;
- no interval and no significance with fewer than :data:`MIN_RUNS` runs of a variant: a bootstrap of two values is no
  interval, and an exact permutation test on 2 against 2 runs cannot go below p = 1/3 (:func:`min_permutation_p`).

Bootstraps draw from a fixed seed, so a report is reproducible.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from rliable import library as rly
from scipy import stats

if TYPE_CHECKING:
    pass

CONFIDENCE = 0.95
DEFAULT_REPS = 10_000
DEFAULT_SEED = 0
# curves have one bootstrap per evaluation point and the probability of improvement a rank test per resample:
# fewer replications keep the report fast, and their CIs are for reading, not for the significance decision
CURVE_REPS = 2_000
POI_REPS = 2_000
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


def probability_of_improvement(scores_x: np.ndarray, scores_y: np.ndarray) -> float:
    """
    P(X > Y): for each task the fraction of pairs of runs where X wins, ties counting half (the Mann-Whitney U
    statistic over ``num_runs_x * num_runs_y``), averaged over tasks. The same as rliable's
    ``probability_of_improvement``, vectorised.

    :param scores_x: (runs_x, tasks)
    :param scores_y: (runs_y, tasks)
    """
    x, y = scores_x[:, None, :], scores_y[None, :, :]
    return float(np.mean((x > y).mean(axis=(0, 1)) + 0.5 * (x == y).mean(axis=(0, 1))))


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


def paired_difference(differences: np.ndarray, min_runs: int = MIN_RUNS) -> tuple[float, tuple[float, float] | None]:
    """
    Mean of per-seed differences with its 95% Student-t interval, ``mean ± t(0.975, n-1) · sd / sqrt(n)``.

    A t-interval rather than a bootstrap: with 5 to 10 pairs a percentile bootstrap is too narrow (it cannot reach
    beyond the observed differences), while the t-interval widens for small n as it should.

    :param differences: one difference per seed
    :param min_runs: fewer pairs than this get no interval
    :return: ``(mean, (low, high))``, the interval ``None`` with fewer than ``min_runs`` pairs
    """
    n = len(differences)
    if n == 0:
        return math.nan, None
    center = float(np.mean(differences))
    if n < max(min_runs, 2):
        return center, None
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1) * np.std(differences, ddof=1) / math.sqrt(n))
    return center, (center - half, center + half)


def _excludes_zero(ci: tuple[float, float] | None) -> bool:
    return ci is not None and (ci[0] > 0 or ci[1] < 0)


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
    diff: float | None = None  # IQM(variant) - IQM(baseline)
    diff_ci: tuple[float, float] | None = None
    poi: float | None = None  # P(variant > baseline)
    poi_ci: tuple[float, float] | None = None
    paired_seeds: tuple[int, ...] = ()  # seeds both variant and baseline have
    paired_diffs: tuple[float, ...] = ()  # variant - baseline, per seed of paired_seeds
    paired_diff: float | None = None  # mean of paired_diffs
    paired_ci: tuple[float, float] | None = None  # 95% Student-t interval of paired_diff
    baseline_runs: int = 0

    @property
    def supports_claims(self) -> bool:
        """Enough runs of the variant and of the baseline for intervals and a significance decision."""
        return self.diff is not None and min(self.n_runs, self.baseline_runs) >= self.min_runs

    @property
    def significant(self) -> bool | None:
        """The 95% CI of the IQM difference excludes 0; ``None`` (undecided) with too few runs or no baseline."""
        return _excludes_zero(self.diff_ci) if self.supports_claims else None

    @property
    def paired_significant(self) -> bool | None:
        """The 95% t-interval of the mean per-seed difference excludes 0; ``None`` with too few pairs."""
        return _excludes_zero(self.paired_ci) if self.paired_ci is not None else None


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
            s.paired_diff, s.paired_ci = paired_difference(differences, min_runs)
    compared = {v: [matrices[v], reference] for v in stats if stats[v].supports_claims}
    if compared:
        diff_cis = interval(compared, lambda x, y: np.array([iqm(x) - iqm(y)]), reps, seed + 1)[1]
        poi_points, poi_cis = interval(
            compared, lambda x, y: np.array([probability_of_improvement(x, y)]), min(reps, POI_REPS), seed + 2
        )
        for variant in compared:
            stats[variant].diff_ci = (float(diff_cis[variant][0, 0]), float(diff_cis[variant][1, 0]))
            stats[variant].poi = float(poi_points[variant][0])
            stats[variant].poi_ci = (float(poi_cis[variant][0, 0]), float(poi_cis[variant][1, 0]))
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

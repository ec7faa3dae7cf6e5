"""How each paired test computes its estimate, one-sided p-values and interval, and :data:`PAIRED_TESTS`, the one row
of each test that everything else reads (the entry points are in :mod:`~sb3_ablation.study.analyse.paired_tests`).
A new test is one row there with its functions here; ``tests/unit/test_inference.py`` checks that the analysis plan
(:data:`sb3_ablation.study.plan.analysis_plan.TESTS`) names exactly these tests.

The tests and the parameter each one's interval targets (they coincide when the differences are symmetric, as they
are under the sharp null of exchangeable arms; under skew they do not):

- ``t``: paired t-test; the mean.
- ``wilcoxon``: Wilcoxon signed-rank test (scipy's p-values: exact without ties or zeros for n <= 50, a permutation
  or normal approximation otherwise; zeros dropped), the Hodges-Lehmann estimate and its exact interval (order
  statistics of the Walsh averages, zeros included; exact without ties); the pseudo-median, the median of
  (D + D') / 2.
- ``signflip``: sign-flip randomization test of the mean, exact (all 2^n sign patterns) for n <= :data:`EXACT_MAX_N`,
  else :data:`MONTE_CARLO_FLIPS` seeded random patterns with the observed one counted, ``(1 + k) / (B + 1)``. A sign
  pattern's mean is at least the observed one exactly when the mean of the flipped differences is at most the null
  value, so p-values count subset means and the interval is a pair of subset-mean order statistics; the mean.
- ``signflip_trimmed``: the same with the 20% trimmed mean (scipy's ``trim_mean``) as the statistic; the interval by
  bisection on the shift; the 20% trimmed mean. Its smallest p-value is ``2 * 2^g / 2^n`` with ``g = floor(0.2 n)``
  trimmed from each end (patterns flipping only trimmed values do not change the statistic).
- ``bootstrap_t`` and ``bootstrap_percentile``: :data:`BOOTSTRAP_REPS` seeded resamples of the pairs; the mean. The
  p-value inverts the interval: one-sided ``(1 + #{resampled means <= null}) / (B + 1)`` (percentile) or
  ``(1 + #{t* >= t}) / (B + 1)`` with ``t* = (mean* - mean) / se*`` (bootstrap-t), and the interval's ends are the
  order statistics where that p-value crosses alpha / 2. A resample with no spread has ``t* = ±inf`` (0 when its
  mean equals the estimate).

Degenerate samples: differences without spread give the tests' limits: the t-test p = 0 when they all lie on one side
of the null value and 1 when they equal it, the exact tests their smallest p, the bootstraps ``1 / (B + 1)`` per side;
the interval is the single value (t, bootstraps) or what the order statistics give. Ties and zeros: Wilcoxon drops
zeros and uses scipy's tie-aware p-value; the sign-flip and bootstrap tests count ties (to 1e-9 of the data's scale)
as at least as extreme. Resampling tests are deterministic for a given seed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import stats

#: sign patterns are enumerated exactly up to this n (2^16 patterns), sampled beyond
EXACT_MAX_N = 16
MONTE_CARLO_FLIPS = 20_000
BOOTSTRAP_REPS = 4_000
TRIM = 0.2
#: the Wilcoxon p-value is computed here (exactly, as scipy does) up to this n without ties or zeros; scipy otherwise
WILCOXON_EXACT_MAX_N = 50
#: differences closer than this fraction of the data's scale count as ties
_TIE = 1e-9
#: rows x patterns x n of one chunk of the vectorised resampling tests
_CHUNK = 8_000_000


def smallest_p(test: str, n: int) -> float:
    """
    The smallest two-sided p-value the test can give with ``n`` pairs.

    :param test: a name of :data:`~sb3_ablation.study.analyse.paired_tests.TESTS`
    :param n: number of pairs
    :return: exact tests: differences all of one sign (2 / 2^n; the trimmed sign-flip test 2 * 2^g / 2^n); Monte
        Carlo and bootstrap tests 2 / (B + 1); the t-test 0
    """
    if test == "wilcoxon" or (test == "signflip" and n <= EXACT_MAX_N):
        return min(1.0, 2.0 / 2.0**n)
    if test == "signflip":
        return 2.0 / (MONTE_CARLO_FLIPS + 1)
    if test == "signflip_trimmed":
        floor = 2.0 * 2.0 ** int(TRIM * n) / 2.0**n
        return min(1.0, floor if n <= EXACT_MAX_N else max(floor, 2.0 / (MONTE_CARLO_FLIPS + 1)))
    if test in ("bootstrap_t", "bootstrap_percentile"):
        return 2.0 / (BOOTSTRAP_REPS + 1)
    return 0.0


def hodges_lehmann(d: np.ndarray) -> float:
    """
    The Hodges-Lehmann estimate of the pseudo-median.

    :param d: the differences
    :return: the median of the Walsh averages (d_i + d_j) / 2, i <= j
    """
    return float(np.median(_walsh(np.asarray(d, dtype=np.float64))))


def _walsh(d: np.ndarray) -> np.ndarray:
    i, j = np.triu_indices(len(d))
    averages: np.ndarray = (d[i] + d[j]) / 2
    return averages


def _tolerance(rows: np.ndarray) -> np.ndarray:
    """Per row: differences closer than this are ties."""
    tolerance: np.ndarray = _TIE * np.max(np.abs(rows), axis=1)
    return tolerance


def _order_statistic_level(alpha: float, total: int) -> int:
    """
    The rank j of the interval's ends: a one-sided p ``(1 + count) / total`` stays above alpha / 2 exactly when
    ``count >= j``; j = 0 means no finite end.
    """
    return math.floor(alpha * total / 2 + 1e-12)


# ----------------------------------------------------------------------------------------------------------------------
# The tests' one-sided p-values, vectorised over rows: (p of H1 "location > 0", p of H1 "location < 0")
# ----------------------------------------------------------------------------------------------------------------------


def _t_tails(rows: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    n = rows.shape[1]
    mean = rows.mean(axis=1)
    sd = rows.std(axis=1, ddof=1)
    spread = sd > _tolerance(rows)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / math.sqrt(n))
    greater = np.where(spread, stats.t.sf(t, n - 1), np.where(mean > 0, 0.0, 1.0))
    less = np.where(spread, stats.t.cdf(t, n - 1), np.where(mean < 0, 0.0, 1.0))
    return greater, less


@cache
def _signed_rank_counts(n: int) -> np.ndarray:
    """Number of the 2^n sign patterns with T+ = t, for t = 0 .. n(n+1)/2 (exact, by counting subsets of ranks)."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return counts


def _signed_rank_cdf(n: int) -> np.ndarray:
    """P(T+ <= t) under the null, t = 0 .. n(n+1)/2."""
    return np.cumsum(_signed_rank_counts(n)) / 2.0**n


def _signed_rank_sf(n: int) -> np.ndarray:
    """P(T+ >= t) under the null, t = 0 .. n(n+1)/2."""
    return np.cumsum(_signed_rank_counts(n)[::-1])[::-1] / 2.0**n


def _wilcoxon_tails(rows: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    n = rows.shape[1]
    magnitudes = np.abs(rows)
    ordered = np.sort(magnitudes, axis=1)
    simple = np.all(rows != 0, axis=1) & np.all(np.diff(ordered, axis=1) > 0, axis=1)
    greater, less = np.empty(len(rows)), np.empty(len(rows))
    if n <= WILCOXON_EXACT_MAX_N and simple.any():
        ranks = np.argsort(np.argsort(magnitudes[simple], axis=1), axis=1) + 1
        r_plus = np.sum(np.where(rows[simple] > 0, ranks, 0), axis=1)
        greater[simple] = _signed_rank_sf(n)[r_plus]
        less[simple] = _signed_rank_cdf(n)[r_plus]
    else:
        simple[:] = False
    for i in np.flatnonzero(~simple):  # ties, zeros or large n: scipy (zeros dropped, as its default does)
        nonzero = rows[i][rows[i] != 0]
        if len(nonzero) == 0:
            greater[i] = less[i] = 1.0
            continue
        greater[i] = stats.wilcoxon(nonzero, alternative="greater").pvalue
        less[i] = stats.wilcoxon(nonzero, alternative="less").pvalue
    return greater, less


@cache
def _subsets(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every non-empty subset of n pairs as a 0/1 row, and its size."""
    patterns = np.array(list(itertools.product((0.0, 1.0), repeat=n)))[1:]
    return patterns, patterns.sum(axis=1)


@cache
def _sampled_signs(n: int, seed: int) -> np.ndarray:
    """:data:`MONTE_CARLO_FLIPS` random sign patterns (+1 keeps a difference, -1 flips it)."""
    return np.random.default_rng(seed).choice((1.0, -1.0), size=(MONTE_CARLO_FLIPS, n))


def _flip_sets(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """
    The flipped sets F of the sign patterns: non-empty ones as 0/1 rows with their sizes, the number of identity
    patterns (F empty, always as extreme as the data) and the number of patterns counting the observed one.
    """
    if n <= EXACT_MAX_N:
        subsets, sizes = _subsets(n)
        return subsets, sizes, 1, 2**n
    flipped = (_sampled_signs(n, seed) < 0).astype(np.float64)
    sizes = flipped.sum(axis=1)
    kept = sizes > 0
    return flipped[kept], sizes[kept], 1 + int(np.sum(~kept)), MONTE_CARLO_FLIPS + 1


def _subset_means(rows: np.ndarray, seed: int) -> tuple[np.ndarray, int, int]:
    subsets, sizes, always, total = _flip_sets(rows.shape[1], seed)
    return (rows @ subsets.T) / sizes, always, total


def _signflip_tails(rows: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    # a sign pattern's mean is >= the observed mean exactly when the mean of the differences it flips is <= 0
    n = rows.shape[1]
    subsets, sizes, always, total = _flip_sets(n, seed)
    tolerance = _tolerance(rows)[:, None]
    greater, less = np.empty(len(rows)), np.empty(len(rows))
    step = max(1, _CHUNK // (len(sizes) * n))
    for start in range(0, len(rows), step):
        block = slice(start, start + step)
        means = (rows[block] @ subsets.T) / sizes
        greater[block] = (always + np.sum(means <= tolerance[block], axis=1)) / total
        less[block] = (always + np.sum(means >= -tolerance[block], axis=1)) / total
    return greater, less


@cache
def _half_signs(n: int) -> np.ndarray:
    """The 2^(n-1) sign patterns that keep the first difference; the others are their negatives."""
    return np.array([(1.0, *rest) for rest in itertools.product((1.0, -1.0), repeat=n - 1)])


def sign_patterns(n: int, seed: int) -> tuple[np.ndarray, int, int]:
    """
    The sign patterns of a sign-flip statistic that flipping every sign leaves unchanged (``|mean| / se``, a maximum
    of such over steps): exactly the 2^(n-1) patterns that keep the first difference, each standing for itself and its
    negative, for n <= :data:`EXACT_MAX_N`; else the observed pattern and :data:`MONTE_CARLO_FLIPS` seeded random ones
    (those of the sign-flip test).

    :param n: number of pairs
    :param seed: seed of the random patterns
    :return: ``(patterns, weight, total)``: +1/-1 rows (the first keeps every sign: the observed statistic), how many
        patterns each row stands for, and the number of patterns in all, the denominator of a p-value
    """
    if n <= EXACT_MAX_N:
        return _half_signs(n), 2, 2**n
    return np.vstack([np.ones((1, n)), _sampled_signs(n, seed)]), 1, MONTE_CARLO_FLIPS + 1


def _trimmed_means(values: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """20% trimmed means along the last axis (scipy's trim_mean: floor(0.2 n) cut from each end)."""
    n = values.shape[-1]
    cut = int(TRIM * n)
    ordered = values if overwrite else values.copy()
    ordered.sort(axis=-1)
    means: np.ndarray = ordered[..., cut : n - cut].sum(axis=-1) / (n - 2 * cut)
    return means


def _trimmed_tails(rows: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    n = rows.shape[1]
    exact = n <= EXACT_MAX_N
    signs = _half_signs(n) if exact else _sampled_signs(n, seed)
    observed = _trimmed_means(rows)
    tolerance = _tolerance(rows)
    greater, less = np.empty(len(rows)), np.empty(len(rows))
    step = max(1, _CHUNK // (len(signs) * n))
    for start in range(0, len(rows), step):
        block = slice(start, start + step)
        null = _trimmed_means(rows[block, None, :] * signs, overwrite=True)
        high = null >= (observed[block] - tolerance[block])[:, None]
        low = null <= (observed[block] + tolerance[block])[:, None]
        if exact:  # the other half of the patterns are the negatives: their statistics are the negatives too
            mirrored_high = -null >= (observed[block] - tolerance[block])[:, None]
            mirrored_low = -null <= (observed[block] + tolerance[block])[:, None]
            greater[block] = (high.sum(axis=1) + mirrored_high.sum(axis=1)) / 2.0**n
            less[block] = (low.sum(axis=1) + mirrored_low.sum(axis=1)) / 2.0**n
        else:
            greater[block] = (1 + high.sum(axis=1)) / (len(signs) + 1)
            less[block] = (1 + low.sum(axis=1)) / (len(signs) + 1)
    return greater, less


@cache
def _bootstrap_counts(n: int, seed: int) -> np.ndarray:
    """How often each pair appears in each of the :data:`BOOTSTRAP_REPS` resamples (B x n)."""
    indices = np.random.default_rng(seed).integers(0, n, size=(BOOTSTRAP_REPS, n))
    counts = np.zeros((BOOTSTRAP_REPS, n))
    np.add.at(counts, (np.arange(BOOTSTRAP_REPS)[:, None], indices), 1.0)
    return counts


def _bootstrap(rows: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row: the mean, its standard error, the resampled deviations mean* - mean and their standard errors."""
    n = rows.shape[1]
    counts = _bootstrap_counts(n, seed)
    mean = rows.mean(axis=1)
    centred = rows - mean[:, None]
    deviation = centred @ counts.T / n
    variance = np.maximum(((centred**2) @ counts.T - n * deviation**2) / (n - 1), 0.0)
    return mean, rows.std(axis=1, ddof=1) / math.sqrt(n), deviation, np.sqrt(variance / n)


def _bootstrap_t_statistics(deviation: np.ndarray, se: np.ndarray, tolerance: np.ndarray) -> np.ndarray:
    """t* = (mean* - mean) / se*; a resample without spread gives ±inf, or 0 when its mean is the estimate."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = deviation / se
    degenerate = se <= tolerance[:, None]
    return np.where(degenerate, np.where(np.abs(deviation) <= tolerance[:, None], 0.0, np.copysign(np.inf, deviation)), t)


def _observed_t(mean: np.ndarray, se: np.ndarray, tolerance: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / se
    return np.where(se <= tolerance, np.where(np.abs(mean) <= tolerance, 0.0, np.copysign(np.inf, mean)), t)


def _bootstrap_percentile_tails(rows: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    mean, _, deviation, _ = _bootstrap(rows, seed)
    means = mean[:, None] + deviation
    tolerance = _tolerance(rows)[:, None]
    total = BOOTSTRAP_REPS + 1
    return (1 + np.sum(means <= tolerance, axis=1)) / total, (1 + np.sum(means >= -tolerance, axis=1)) / total


def _bootstrap_t_tails(rows: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    mean, se, deviation, se_star = _bootstrap(rows, seed)
    tolerance = _tolerance(rows)
    t_star = _bootstrap_t_statistics(deviation, se_star, tolerance)
    t = _observed_t(mean, se, tolerance)
    slack = (_TIE * (1 + np.abs(np.where(np.isfinite(t), t, 0.0))))[:, None]
    total = BOOTSTRAP_REPS + 1
    greater = (1 + np.sum(t_star >= t[:, None] - slack, axis=1)) / total
    less = (1 + np.sum(t_star <= t[:, None] + slack, axis=1)) / total
    return greater, less


# ----------------------------------------------------------------------------------------------------------------------
# The intervals of one sample
# ----------------------------------------------------------------------------------------------------------------------


def _t_interval(d: np.ndarray, alpha: float, seed: int) -> tuple[float, float]:
    n, mean = len(d), float(np.mean(d))
    half = float(stats.t.ppf(1 - alpha / 2, n - 1) * d.std(ddof=1) / math.sqrt(n))
    return mean - half, mean + half


def _wilcoxon_interval(d: np.ndarray, alpha: float, seed: int) -> tuple[float, float]:
    """The exact interval of the pseudo-median: order statistics of the Walsh averages (Hollander & Wolfe)."""
    walsh = np.sort(_walsh(d))
    below = np.flatnonzero(_signed_rank_cdf(len(d)) <= alpha / 2 + 1e-12)  # the largest c with P(T+ <= c) <= alpha/2
    if not len(below):
        return -math.inf, math.inf  # too few pairs for any interval at this level
    c = int(below[-1])
    return float(walsh[c]), float(walsh[len(walsh) - 1 - c])


def _ends(ordered: np.ndarray, j: int) -> tuple[float, float]:
    """The j-th smallest and j-th largest of sorted values (1-based); j < 1: no finite end."""
    if j < 1:
        return -math.inf, math.inf
    return float(ordered[j - 1]), float(ordered[len(ordered) - j])


def _signflip_interval(d: np.ndarray, alpha: float, seed: int) -> tuple[float, float]:
    # p_greater(s) = (identity patterns + #{subset means <= s}) / total: the ends are subset-mean order statistics
    means, always, total = _subset_means(d[None], seed)
    return _ends(np.sort(means[0]), _order_statistic_level(alpha, total) - always + 1)


def _trimmed_interval(d: np.ndarray, alpha: float, seed: int) -> tuple[float, float]:
    if smallest_p("signflip_trimmed", len(d)) > alpha:
        return -math.inf, math.inf
    estimate = float(stats.trim_mean(d, TRIM))
    scale = float(np.std(d, ddof=1)) or max(abs(estimate), 1.0)

    def rejected(shift: float) -> bool:
        greater, less = _trimmed_tails(np.atleast_2d(d) - shift, seed)
        return bool(np.minimum(1.0, 2 * np.minimum(greater, less))[0] <= alpha)

    return _bisect_end(rejected, estimate, -scale), _bisect_end(rejected, estimate, scale)


def _bisect_end(rejected: Callable[[float], bool], estimate: float, step: float) -> float:
    """The first rejected shift going from the estimate in the direction of ``step`` (to 1e-9 of the scale)."""
    inner, outer = estimate, estimate + step
    for _ in range(64):  # widen until rejected
        if rejected(outer):
            break
        inner, outer = outer, outer + (outer - estimate)
    else:
        return math.copysign(math.inf, step)
    while abs(outer - inner) > 1e-9 * abs(step):
        middle = (inner + outer) / 2
        inner, outer = (inner, middle) if rejected(middle) else (middle, outer)
    return (inner + outer) / 2


def _bootstrap_percentile_interval(d: np.ndarray, alpha: float, seed: int) -> tuple[float, float]:
    mean, _, deviation, _ = _bootstrap(d[None], seed)
    return _ends(np.sort(mean[0] + deviation[0]), _order_statistic_level(alpha, BOOTSTRAP_REPS + 1))


def _bootstrap_t_interval(d: np.ndarray, alpha: float, seed: int) -> tuple[float, float]:
    rows = d[None]
    mean, se, deviation, se_star = _bootstrap(rows, seed)
    if se[0] <= _tolerance(rows)[0]:
        return float(mean[0]), float(mean[0])
    t_star = np.sort(_bootstrap_t_statistics(deviation, se_star, _tolerance(rows))[0])
    low_t, high_t = _ends(t_star, _order_statistic_level(alpha, BOOTSTRAP_REPS + 1))
    return float(mean[0] - high_t * se[0]), float(mean[0] - low_t * se[0])


# ----------------------------------------------------------------------------------------------------------------------
# The registry: one row per test
# ----------------------------------------------------------------------------------------------------------------------


def _mean(d: np.ndarray) -> float:
    return float(np.mean(d))


def _trimmed_mean(d: np.ndarray) -> float:
    return float(stats.trim_mean(d, TRIM))


@dataclass(frozen=True)
class PairedTest:
    """
    One paired test, as every part of the package knows it.

    :param name: its name in an analysis plan (``test:``, ``equivalence_test:``)
    :param description: what a report calls it
    :param estimate_name: what its estimate of the per-seed differences is, as a report names it
    :param location: its estimate of one sample of differences
    :param one_sided_p: (p of H1 "location > 0", p of H1 "location < 0") of each row of differences, given the
        resampling seed
    :param interval: the two-sided (1 - alpha) interval of one sample of differences, given alpha and the resampling
        seed
    """

    name: str
    description: str
    estimate_name: str
    location: Callable[[np.ndarray], float]
    one_sided_p: Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]
    interval: Callable[[np.ndarray, float, int], tuple[float, float]]


#: the paired tests, by name
PAIRED_TESTS: dict[str, PairedTest] = {
    test.name: test
    for test in (
        PairedTest("t", "paired t-test", "mean", _mean, _t_tails, _t_interval),
        PairedTest(
            "wilcoxon",
            "Wilcoxon signed-rank test (Hodges-Lehmann estimate, exact interval)",
            "Hodges-Lehmann estimate",
            hodges_lehmann,
            _wilcoxon_tails,
            _wilcoxon_interval,
        ),
        PairedTest("signflip", "sign-flip permutation test of the mean", "mean", _mean, _signflip_tails, _signflip_interval),
        PairedTest(
            "signflip_trimmed",
            "sign-flip permutation test of the 20% trimmed mean",
            "20% trimmed mean",
            _trimmed_mean,
            _trimmed_tails,
            _trimmed_interval,
        ),
        PairedTest("bootstrap_t", "bootstrap-t test of the mean", "mean", _mean, _bootstrap_t_tails, _bootstrap_t_interval),
        PairedTest(
            "bootstrap_percentile",
            "percentile-bootstrap test of the mean",
            "mean",
            _mean,
            _bootstrap_percentile_tails,
            _bootstrap_percentile_interval,
        ),
    )
}

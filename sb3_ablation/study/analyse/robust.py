"""Robust paired inference for RL seeds: tests, one error rate for two kinds of claims, failures and the random-effects
combination across tasks (sequential looks: :mod:`~sb3_ablation.study.analyse.sequential`).

RL outcomes per seed are mixtures: most seeds learn, a few collapse. One collapse inflates the SD of the per-seed
differences and ruins the paired t-test's power, so the default test is chosen by simulation
(``benchmarks/inference_calibration.py``; table and rule in docs/calibration.md, numbers in docs/calibration.json).

Every test takes the per-seed differences ``d`` (variant - baseline, one per seed) and gives an estimate, a two-sided
(1 - alpha) interval, the two-sided p-value of "no difference" and the TOST p-value of "not equivalent within
±margin": the larger of the same test's two one-sided p-values on ``d + margin`` (H0: location <= -margin) and
``d - margin`` (H0: location >= +margin). Two-sided p-values are twice the smaller one-sided p-value (capped at 1),
and every interval is the set of shifts the two-sided test does not reject (an inversion), so interval and test agree.

The tests (:data:`TESTS`) and the parameter each one's interval targets (they coincide when the differences are
symmetric, as they are under the sharp null of exchangeable arms; under skew they do not):

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

Degenerate samples: fewer than 2 pairs give NaN everywhere. Differences without spread give the tests' limits: the
t-test p = 0 when they all lie on one side of the null value and 1 when they equal it, the exact tests their
smallest p, the bootstraps ``1 / (B + 1)`` per side; the interval is the single value (t, bootstraps) or what the
order statistics give. Ties and zeros: Wilcoxon drops zeros and uses scipy's tie-aware p-value; the sign-flip and
bootstrap tests count ties (to 1e-9 of the data's scale) as at least as extreme. Resampling tests are deterministic
for a given ``rng_seed``.

Only numpy and scipy: other analyses (factorial contrasts, the engine check) use it on any per-seed vectors.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import stats

DIFFERS, EQUIVALENT, UNRESOLVED = "differs", "equivalent", "unresolved"

TEST_NAMES = {
    "t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test (Hodges-Lehmann estimate, exact interval)",
    "signflip": "sign-flip permutation test of the mean",
    "signflip_trimmed": "sign-flip permutation test of the 20% trimmed mean",
    "bootstrap_t": "bootstrap-t test of the mean",
    "bootstrap_percentile": "percentile-bootstrap test of the mean",
}
TESTS = tuple(TEST_NAMES)
#: the default of the committed calibration table (docs/calibration.json; a test checks they agree)
DEFAULT_TEST = "wilcoxon"
#: the default equivalence procedure: TOST with the sign-flip test of the mean, which failures pull down, so a variant
#: that fails more often than the baseline is not called equivalent (docs/calibration.md, equivalence table)
DEFAULT_EQUIVALENCE_TEST = "signflip"
GUARANTEE = (
    "`differs` and `equivalent` share one family-wise error rate: the family's 2m hypotheses (no difference, not "
    "equivalent) go through Holm's step-down together (Shaffer's, which uses that at most one of a comparison's two "
    "hypotheses is true, where both are about the same parameter), so the probability of any false `differs` or "
    "false `equivalent` in a family is at most alpha."
)
ALTERNATIVES = ("two-sided", "greater", "less")
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


@dataclass(frozen=True)
class PairedResult:
    """
    :param test: the test's name (:data:`TESTS`)
    :param n: number of pairs
    :param estimate: the test's location estimate (Hodges-Lehmann for Wilcoxon, the trimmed mean for the trimmed
        sign-flip test, the mean otherwise)
    :param ci_low: lower end of the two-sided (1 - alpha) interval
    :param ci_high: upper end
    :param p_differs: two-sided p-value of "no difference"
    :param p_equivalent: TOST p-value of "not within ±margin" (NaN without a margin)
    """

    test: str
    n: int
    estimate: float
    ci_low: float
    ci_high: float
    p_differs: float
    p_equivalent: float


@dataclass(frozen=True)
class Verdict:
    """
    :param verdict: :data:`DIFFERS`, :data:`EQUIVALENT` or :data:`UNRESOLVED`
    :param within_margin: both hypotheses rejected: the difference is real and within the margin (verdict differs)
    :param p_differs_adjusted: Shaffer-adjusted p-value of "no difference" (NaN: not tested)
    :param p_equivalent_adjusted: Shaffer-adjusted p-value of "not equivalent" (NaN: no margin)
    """

    verdict: str
    within_margin: bool
    p_differs_adjusted: float
    p_equivalent_adjusted: float


#: the former name of :class:`Verdict`
FamilyVerdict = Verdict


@dataclass(frozen=True)
class MetaResult:
    """
    :param estimate: the random-effects (DerSimonian-Laird) combined effect
    :param ci_low: lower end of its Hartung-Knapp (1 - alpha) interval, t on k - 1 degrees of freedom
    :param ci_high: upper end
    :param p: two-sided p-value of "combined effect = 0" (Hartung-Knapp t-test)
    :param tau2: DerSimonian-Laird between-task variance (truncated at 0)
    :param i2: share of the total variation due to heterogeneity, max(0, (Q - (k - 1)) / Q)
    :param q: Cochran's Q
    :param k: number of tasks
    """

    estimate: float
    ci_low: float
    ci_high: float
    p: float
    tau2: float
    i2: float
    q: float
    k: int


# ----------------------------------------------------------------------------------------------------------------------
# One comparison: the entry point
# ----------------------------------------------------------------------------------------------------------------------


def compare_paired(
    d: Sequence[float] | np.ndarray, test: str, alpha: float, margin: float | None = None, rng_seed: int = 0
) -> PairedResult:
    """
    One paired comparison of per-seed differences with a named test (see the module docstring).

    :param d: per-seed differences (variant - baseline); non-finite values are dropped
    :param test: a name of :data:`TESTS`
    :param alpha: the level of the two-sided interval (1 - alpha)
    :param margin: the equivalence margin (``None``, 0 or NaN: no equivalence test)
    :param rng_seed: seed of the resampling tests
    :return: the estimate, interval and p-values; with fewer than 2 pairs, NaN everywhere
    """
    _check_test(test)
    values = np.asarray(d, dtype=np.float64).ravel()
    values = values[np.isfinite(values)]
    n = len(values)
    if n < 2:
        return PairedResult(test, n, math.nan, math.nan, math.nan, math.nan, math.nan)
    estimate = location(values, test)
    low, high = paired_interval(values, test, alpha, rng_seed)
    p_differs = float(paired_p_values(values, test, 0.0, "two-sided", rng_seed))
    p_equivalent = math.nan
    if margin is not None and math.isfinite(margin) and margin > 0:
        p_equivalent = float(tost_p_value(values, test, margin, rng_seed))
    return PairedResult(test, n, estimate, low, high, p_differs, p_equivalent)


def tost_p_value(d: Sequence[float] | np.ndarray, test: str, margin: float, rng_seed: int = 0) -> np.ndarray:
    """
    The two one-sided tests' p-value of "not equivalent": H0 location <= -margin or location >= +margin.

    :param d: differences, one row per sample (1-D: one sample)
    :param test: a name of :data:`TESTS`
    :param margin: the equivalence margin (> 0)
    :param rng_seed: seed of the resampling tests
    :return: the larger of the two one-sided p-values, per row (a numpy scalar for a 1-D ``d``)
    """
    above = paired_p_values(d, test, -margin, "greater", rng_seed)  # H0: location <= -margin
    below = paired_p_values(d, test, margin, "less", rng_seed)  # H0: location >= +margin
    return np.maximum(above, below)


def paired_p_values(
    d: Sequence[float] | np.ndarray, test: str, shift: float = 0.0, alternative: str = "two-sided", rng_seed: int = 0
) -> np.ndarray:
    """
    p-values of H0 "location = shift" for one sample or many (vectorised; the calibration benchmark uses it).

    :param d: finite differences, 1-D (one sample) or 2-D (one sample per row, all of the same n >= 2)
    :param test: a name of :data:`TESTS`
    :param shift: the location under H0
    :param alternative: ``"two-sided"``, ``"greater"`` (H1: location > shift) or ``"less"``
    :param rng_seed: seed of the resampling tests (every row uses the same resamples or sign patterns)
    :return: one p-value per row (a numpy scalar for a 1-D ``d``)
    """
    _check_test(test)
    if alternative not in ALTERNATIVES:
        raise ValueError(f"unknown alternative {alternative!r}; expected one of {', '.join(ALTERNATIVES)}")
    x = np.asarray(d, dtype=np.float64)
    one = x.ndim == 1
    rows = np.atleast_2d(x) - shift
    if rows.ndim != 2:
        raise ValueError("d must be 1-D or 2-D")
    if rows.shape[1] < 2:
        p = np.full(rows.shape[0], math.nan)
        return p[0] if one else p
    greater, less = _TAILS[test](rows, rng_seed)
    if alternative == "greater":
        p = greater
    elif alternative == "less":
        p = less
    else:
        p = np.minimum(1.0, 2 * np.minimum(greater, less))
    return p[0] if one else p


def location(d: np.ndarray, test: str) -> float:
    """
    The test's location estimate of one sample.

    :param d: the differences
    :param test: a name of :data:`TESTS`
    :return: Hodges-Lehmann (wilcoxon), 20% trimmed mean (signflip_trimmed) or mean
    """
    values = np.asarray(d, dtype=np.float64)
    if test == "wilcoxon":
        return hodges_lehmann(values)
    if test == "signflip_trimmed":
        return float(stats.trim_mean(values, TRIM))
    return float(np.mean(values))


def paired_interval(d: np.ndarray, test: str, alpha: float, rng_seed: int = 0) -> tuple[float, float]:
    """
    The two-sided (1 - alpha) interval of one sample: the shifts the two-sided test does not reject.

    :param d: the differences (n >= 2)
    :param test: a name of :data:`TESTS`
    :param alpha: one minus the coverage
    :param rng_seed: seed of the resampling tests
    :return: ``(low, high)``; infinite ends where too few pairs can reject at this level
    """
    _check_test(test)
    values = np.asarray(d, dtype=np.float64)
    return _INTERVALS[test](values, alpha, rng_seed)


def smallest_p(test: str, n: int) -> float:
    """
    The smallest two-sided p-value the test can give with ``n`` pairs.

    :param test: a name of :data:`TESTS`
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


def _check_test(test: str) -> None:
    if test not in TEST_NAMES:
        raise ValueError(f"unknown test {test!r}; expected one of {', '.join(TESTS)}")


def _walsh(d: np.ndarray) -> np.ndarray:
    i, j = np.triu_indices(len(d))
    return (d[i] + d[j]) / 2


def _tolerance(rows: np.ndarray) -> np.ndarray:
    """Per row: differences closer than this are ties."""
    return _TIE * np.max(np.abs(rows), axis=1)


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


def _trimmed_means(values: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """20% trimmed means along the last axis (scipy's trim_mean: floor(0.2 n) cut from each end)."""
    n = values.shape[-1]
    cut = int(TRIM * n)
    ordered = values if overwrite else values.copy()
    ordered.sort(axis=-1)
    return ordered[..., cut : n - cut].sum(axis=-1) / (n - 2 * cut)


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


_TAILS: dict[str, Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]] = {
    "t": _t_tails,
    "wilcoxon": _wilcoxon_tails,
    "signflip": _signflip_tails,
    "signflip_trimmed": _trimmed_tails,
    "bootstrap_t": _bootstrap_t_tails,
    "bootstrap_percentile": _bootstrap_percentile_tails,
}


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
        return bool(paired_p_values(d, "signflip_trimmed", shift, "two-sided", seed) <= alpha)

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


_INTERVALS: dict[str, Callable[[np.ndarray, float, int], tuple[float, float]]] = {
    "t": _t_interval,
    "wilcoxon": _wilcoxon_interval,
    "signflip": _signflip_interval,
    "signflip_trimmed": _trimmed_interval,
    "bootstrap_t": _bootstrap_t_interval,
    "bootstrap_percentile": _bootstrap_percentile_interval,
}


# ----------------------------------------------------------------------------------------------------------------------
# One error rate for a family
# ----------------------------------------------------------------------------------------------------------------------


def decide_family(results: Sequence[PairedResult], alpha: float, exclusive: bool = True) -> list[Verdict]:
    """
    The verdicts of a family of comparisons, with one family-wise error rate for both kinds of claims (:data:`GUARANTEE`).

    Shaffer's step-down over the 2m hypotheses sorted by p (ties in input order, "no difference" first): at each
    step the divisor is the number of comparisons that still have an unrejected hypothesis (each can have at most
    one true one, and both can be true for none); rejection stops at the first p above alpha over its divisor.
    Adjusted p-values are the running maximum of divisor times p (capped at 1), so they are monotone and a
    hypothesis is rejected exactly when its adjusted p-value is at most alpha. NaN p-values (no test, no margin)
    are not part of the family.

    :param results: the family's comparisons
    :param alpha: the family-wise level
    :param exclusive: the two hypotheses of a comparison are about the same parameter (one test for both claims), so
        at most one is true; ``False`` (e.g. Wilcoxon for differs, a test of the mean for equivalence): Holm over all
        2m hypotheses, the divisor being the number of hypotheses not yet rejected
    :return: one verdict per comparison, in the order given
    """
    hypotheses = [(r.p_differs, i, 0) for i, r in enumerate(results) if math.isfinite(r.p_differs)]
    hypotheses += [(r.p_equivalent, i, 1) for i, r in enumerate(results) if math.isfinite(r.p_equivalent)]
    hypotheses.sort(key=lambda h: (h[0], h[1], h[2]))
    remaining = [0] * len(results)
    for _, i, _ in hypotheses:
        remaining[i] += 1
    adjusted: dict[tuple[int, int], float] = {}
    rejected: set[tuple[int, int]] = set()
    running = 0.0
    for p, i, kind in hypotheses:
        divisor = sum(1 for count in remaining if count > 0) if exclusive else sum(remaining)
        running = max(running, min(1.0, divisor * p))
        adjusted[(i, kind)] = running
        if running <= alpha:
            rejected.add((i, kind))
        remaining[i] -= 1
    verdicts = []
    for i in range(len(results)):
        differs, equivalent = (i, 0) in rejected, (i, 1) in rejected
        verdict = DIFFERS if differs else EQUIVALENT if equivalent else UNRESOLVED
        verdicts.append(
            Verdict(verdict, differs and equivalent, adjusted.get((i, 0), math.nan), adjusted.get((i, 1), math.nan))
        )
    return verdicts


# ----------------------------------------------------------------------------------------------------------------------
# Failures
# ----------------------------------------------------------------------------------------------------------------------


def failure_rate(failed: Sequence[bool] | np.ndarray, alpha: float = 0.05) -> tuple[int, int, float, float, float]:
    """
    The failure rate with its exact interval.

    :param failed: one flag per run
    :param alpha: one minus the interval's coverage
    :return: ``(failures, runs, rate, low, high)`` with the exact (Clopper-Pearson) (1 - alpha) interval; NaN for no runs
    """
    flags = np.asarray(failed, dtype=bool).ravel()
    k, n = int(flags.sum()), len(flags)
    if n == 0:
        return 0, 0, math.nan, math.nan, math.nan
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - alpha, method="exact")
    return k, n, k / n, float(ci.low), float(ci.high)


def paired_failure_test(failed_variant: Sequence[bool] | np.ndarray, failed_baseline: Sequence[bool] | np.ndarray) -> float:
    """
    Exact McNemar test of "the variant fails as often as the baseline" on paired seeds.

    :param failed_variant: one flag per seed
    :param failed_baseline: one flag per seed, in the same order
    :return: the two-sided binomial p on the discordant pairs; 1 when no pair is discordant
    """
    a, b = np.asarray(failed_variant, dtype=bool), np.asarray(failed_baseline, dtype=bool)
    only_variant, only_baseline = int(np.sum(a & ~b)), int(np.sum(~a & b))
    if only_variant + only_baseline == 0:
        return 1.0
    return float(stats.binomtest(only_variant, only_variant + only_baseline, 0.5).pvalue)


def worst_mean(values: Sequence[float] | np.ndarray, fraction: float = 0.25) -> float:
    """
    A CVaR-style summary of a variant's failures (Chan et al. 2020).

    :param values: one return per seed
    :param fraction: the share of worst seeds
    :return: the mean of the worst (lowest) ceil(fraction * n) values, at least one; NaN for no values
    """
    ordered = np.sort(np.asarray(values, dtype=np.float64).ravel())
    if not len(ordered):
        return math.nan
    return float(ordered[: max(1, math.ceil(fraction * len(ordered)))].mean())


# ----------------------------------------------------------------------------------------------------------------------
# Across tasks
# ----------------------------------------------------------------------------------------------------------------------


def standardized_effect(d: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """
    The standardized paired effect of one task.

    :param d: the task's per-seed differences (non-finite values dropped)
    :return: ``(d_z, variance)``: mean over SD of the differences, with variance 1/n + d_z^2 / (2n); NaN with fewer
        than 2 pairs or no spread
    """
    values = np.asarray(d, dtype=np.float64).ravel()
    values = values[np.isfinite(values)]
    n = len(values)
    sd = float(values.std(ddof=1)) if n >= 2 else math.nan
    if not (n >= 2 and sd > 0):
        return math.nan, math.nan
    d_z = float(values.mean()) / sd
    return d_z, 1 / n + d_z**2 / (2 * n)


def random_effects(
    effects: Sequence[float] | np.ndarray, variances: Sequence[float] | np.ndarray, alpha: float = 0.05
) -> MetaResult:
    """
    DerSimonian-Laird random-effects combination with the Hartung-Knapp(-Sidik-Jonkman) interval and test on k - 1
    degrees of freedom. (statsmodels' ``combine_effects(method_re="dl")`` gives the same numbers when tau^2 > 0; it
    does not truncate tau^2 at 0.) A single task: its own effect with a normal interval.

    :param effects: one effect per task
    :param variances: their sampling variances (> 0)
    :param alpha: one minus the interval's coverage
    :return: the combined estimate, interval, p-value and heterogeneity
    """
    y, v = np.asarray(effects, dtype=np.float64), np.asarray(variances, dtype=np.float64)
    k = len(y)
    if k == 0:
        return MetaResult(math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, 0)
    w = 1 / v
    fixed = float(np.sum(w * y) / np.sum(w))
    q = float(np.sum(w * (y - fixed) ** 2))
    c = float(np.sum(w) - np.sum(w**2) / np.sum(w))
    tau2 = max(0.0, (q - (k - 1)) / c) if k > 1 and c > 0 else 0.0
    i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
    w_star = 1 / (v + tau2)
    estimate = float(np.sum(w_star * y) / np.sum(w_star))
    if k == 1:
        se = math.sqrt(float(v[0]))
        z = stats.norm.isf(alpha / 2)
        p = float(2 * stats.norm.sf(abs(estimate) / se))
        return MetaResult(estimate, estimate - z * se, estimate + z * se, p, tau2, i2, q, k)
    se = math.sqrt(float(np.sum(w_star * (y - estimate) ** 2) / ((k - 1) * np.sum(w_star))))
    t = stats.t.isf(alpha / 2, k - 1)
    p = float(2 * stats.t.sf(abs(estimate) / se, k - 1)) if se > 0 else (0.0 if estimate else 1.0)
    return MetaResult(estimate, estimate - t * se, estimate + t * se, p, tau2, i2, q, k)

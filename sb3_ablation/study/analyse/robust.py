"""Robust paired inference for RL seeds: tests, one error rate for two kinds of claims, failures, sequential looks,
and the random-effects combination across tasks.

RL outcomes per seed are mixtures: most seeds learn, a few collapse. One collapse inflates the SD of the per-seed
differences and ruins the paired t-test's power, so the default test is chosen by simulation
(``benchmarks/inference_calibration.py``, table in docs/calibration.md). Every test here takes the per-seed
differences ``d`` (variant - baseline) and returns an estimate, a two-sided interval, the p-value of "no difference"
and the TOST p-value of "not equivalent within ±margin" (the larger of the same test's two one-sided p-values on
``d + margin`` and ``d - margin``).

Only numpy and scipy: other analyses (factorial contrasts, the engine check) use it on any per-seed vectors.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import optimize, stats

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
GUARANTEE = (
    "`differs` and `equivalent` share one family-wise error rate: the family's 2m hypotheses (no difference, not "
    "equivalent) go through Shaffer's step-down, which uses that at most one of a comparison's two hypotheses is "
    "true, so the probability of any false `differs` or false `equivalent` in a family is at most alpha."
)
#: sign patterns are enumerated exactly up to this n (2^16 patterns), sampled beyond
EXACT_MAX_N = 16
MONTE_CARLO_FLIPS = 20_000
BOOTSTRAP_REPS = 4_000
TRIM = 0.2


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
class FamilyVerdict:
    verdict: str
    within_margin: bool  # both claims hold: the difference is real and within the margin
    p_differs_adjusted: float
    p_equivalent_adjusted: float


@dataclass(frozen=True)
class MetaResult:
    estimate: float
    ci_low: float
    ci_high: float
    p: float
    tau2: float
    i2: float
    q: float
    k: int


# ----------------------------------------------------------------------------------------------------------------------
# One comparison
# ----------------------------------------------------------------------------------------------------------------------


def smallest_p(test: str, n: int) -> float:
    """The smallest two-sided p-value the test can give with ``n`` pairs (exact tests: all signs alike, 2 / 2^n)."""
    if test in ("wilcoxon", "signflip", "signflip_trimmed"):
        return 2.0 / 2.0**n
    return 0.0


def _location(test: str, d: np.ndarray) -> float:
    if test == "wilcoxon":
        return hodges_lehmann(d)
    if test == "signflip_trimmed":
        return float(stats.trim_mean(d, TRIM))
    return float(np.mean(d))


def hodges_lehmann(d: np.ndarray) -> float:
    """The median of the Walsh averages (d_i + d_j) / 2, i <= j."""
    return float(np.median(_walsh(d)))


def _walsh(d: np.ndarray) -> np.ndarray:
    i, j = np.triu_indices(len(d))
    return (d[i] + d[j]) / 2


@cache
def _signed_rank_cdf(n: int) -> np.ndarray:
    """P(T+ <= t) for t = 0 .. n(n+1)/2 under the null (exact, by counting subsets of ranks)."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return np.cumsum(counts) / 2.0**n


def _wilcoxon_p(d: np.ndarray, alternative: str) -> float:
    nonzero = d[d != 0]
    if len(nonzero) == 0:
        return 1.0
    return float(stats.wilcoxon(nonzero, alternative=alternative).pvalue)


def _wilcoxon_ci(d: np.ndarray, alpha: float) -> tuple[float, float]:
    """The exact interval of the pseudo-median: order statistics of the Walsh averages (Hollander & Wolfe)."""
    walsh = np.sort(_walsh(d))
    cdf = _signed_rank_cdf(len(d))
    below = np.flatnonzero(cdf <= alpha / 2)  # the largest c with P(T+ <= c) <= alpha/2
    if not len(below):
        return -math.inf, math.inf  # too few pairs for any interval at this level
    c = int(below[-1])
    return float(walsh[c]), float(walsh[len(walsh) - 1 - c])


@cache
def _sign_matrix(n: int) -> np.ndarray:
    return np.array(list(itertools.product((1.0, -1.0), repeat=n)))


def _signs(n: int, seed: int) -> np.ndarray:
    if n <= EXACT_MAX_N:
        return _sign_matrix(n)
    rng = np.random.default_rng(seed)
    return rng.choice((1.0, -1.0), size=(MONTE_CARLO_FLIPS, n))


def _flip_statistics(d: np.ndarray, trimmed: bool, signs: np.ndarray) -> np.ndarray:
    flipped = signs * d
    return stats.trim_mean(flipped, TRIM, axis=1) if trimmed else flipped.mean(axis=1)


def _signflip_p(d: np.ndarray, trimmed: bool, alternative: str, seed: int) -> float:
    signs = _signs(len(d), seed)
    null = _flip_statistics(d, trimmed, signs)
    observed = _flip_statistics(d, trimmed, np.ones((1, len(d))))[0]
    tolerance = 1e-12 * max(1.0, float(np.max(np.abs(d))))
    if alternative == "greater":
        return float(np.mean(null >= observed - tolerance))
    if alternative == "less":
        return float(np.mean(null <= observed + tolerance))
    return float(np.mean(np.abs(null) >= abs(observed) - tolerance))


def _inverted_interval(p_of_shift, estimate: float, scale: float, alpha: float) -> tuple[float, float]:
    """The shifts not rejected at level alpha, found by bisection on each side of the estimate."""
    ends = []
    for direction in (-1.0, 1.0):
        step = max(scale, 1e-12)
        outer = estimate + direction * step
        for _ in range(60):  # widen until rejected
            if p_of_shift(outer) <= alpha:
                break
            step *= 2
            outer = estimate + direction * step
        else:
            ends.append(direction * math.inf)
            continue
        inner = estimate
        for _ in range(60):
            middle = (inner + outer) / 2
            inner, outer = (middle, outer) if p_of_shift(middle) > alpha else (inner, middle)
        ends.append((inner + outer) / 2)
    return ends[0], ends[1]


def _bootstrap_means(d: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    samples = d[rng.integers(0, len(d), size=(BOOTSTRAP_REPS, len(d)))]
    means = samples.mean(axis=1)
    se = samples.std(axis=1, ddof=1) / math.sqrt(len(d))
    return means, se


def _p_one_sided(test: str, d: np.ndarray, alternative: str, seed: int) -> float:
    """One- or two-sided p of "location = 0" for the differences ``d`` (shifted by the caller)."""
    if test == "t":
        if np.ptp(d) == 0:
            mean = float(d[0])
            if alternative == "two-sided":
                return 1.0 if mean == 0 else 0.0
            return 0.0 if (mean > 0) == (alternative == "greater") and mean != 0 else 1.0
        return float(stats.ttest_1samp(d, 0.0, alternative=alternative).pvalue)
    if test == "wilcoxon":
        return _wilcoxon_p(d, alternative)
    if test in ("signflip", "signflip_trimmed"):
        return _signflip_p(d, test == "signflip_trimmed", alternative, seed)
    means, se = _bootstrap_means(d, seed)
    mean = float(d.mean())
    if test == "bootstrap_percentile":
        # centred under the null: the bootstrap distribution of the mean shifted to 0
        null = means - mean
    else:
        observed_se = float(d.std(ddof=1)) / math.sqrt(len(d))
        if observed_se == 0:
            return _p_one_sided("t", d, alternative, seed)
        t = np.where(se > 0, (means - mean) / np.where(se > 0, se, 1.0), 0.0)
        null, mean = t, mean / observed_se
    if alternative == "greater":
        return float((np.sum(null >= mean) + 1) / (len(null) + 1))
    if alternative == "less":
        return float((np.sum(null <= mean) + 1) / (len(null) + 1))
    return float(min(1.0, (np.sum(np.abs(null) >= abs(mean)) + 1) / (len(null) + 1)))


def _interval(test: str, d: np.ndarray, alpha: float, estimate: float, seed: int) -> tuple[float, float]:
    n = len(d)
    sd = float(d.std(ddof=1))
    if test == "t":
        half = float(stats.t.ppf(1 - alpha / 2, n - 1) * sd / math.sqrt(n))
        return estimate - half, estimate + half
    if test == "wilcoxon":
        return _wilcoxon_ci(d, alpha)
    if test == "bootstrap_percentile":
        means, _ = _bootstrap_means(d, seed)
        return float(np.quantile(means, alpha / 2)), float(np.quantile(means, 1 - alpha / 2))
    if test == "bootstrap_t":
        means, se = _bootstrap_means(d, seed)
        observed_se = sd / math.sqrt(n)
        t = np.where(se > 0, (means - estimate) / np.where(se > 0, se, 1.0), 0.0)
        return estimate - float(np.quantile(t, 1 - alpha / 2)) * observed_se, estimate - float(
            np.quantile(t, alpha / 2)
        ) * observed_se
    # sign-flip tests: the shifts the test does not reject
    return _inverted_interval(lambda shift: _p_one_sided(test, d - shift, "two-sided", seed), estimate, sd or 1.0, alpha)


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
    if test not in TEST_NAMES:
        raise ValueError(f"unknown test {test!r}; expected one of {', '.join(TESTS)}")
    values = np.asarray(d, dtype=np.float64).ravel()
    values = values[np.isfinite(values)]
    n = len(values)
    if n < 2:
        return PairedResult(test, n, math.nan, math.nan, math.nan, math.nan, math.nan)
    estimate = _location(test, values)
    if np.ptp(values) == 0:  # no spread: every test's answer is exact
        low = high = estimate
        p_differs = 1.0 if estimate == 0 else smallest_p(test, n)
    else:
        low, high = _interval(test, values, alpha, estimate, rng_seed)
        p_differs = _p_one_sided(test, values, "two-sided", rng_seed)
    p_equivalent = math.nan
    if margin is not None and math.isfinite(margin) and margin > 0:
        above = _p_one_sided(test, values + margin, "greater", rng_seed)  # H0: location <= -margin
        below = _p_one_sided(test, values - margin, "less", rng_seed)  # H0: location >= +margin
        p_equivalent = max(above, below)
    return PairedResult(test, n, float(estimate), float(low), float(high), float(p_differs), float(p_equivalent))


# ----------------------------------------------------------------------------------------------------------------------
# One error rate for a family
# ----------------------------------------------------------------------------------------------------------------------


def decide_family(results: Sequence[PairedResult], alpha: float) -> list[FamilyVerdict]:
    """
    The verdicts of a family of comparisons, with one family-wise error rate for both kinds of claims (:data:`GUARANTEE`).

    Shaffer's step-down over the 2m hypotheses sorted by p: at each step the divisor is the number of comparisons
    that still have an unrejected hypothesis (each can have at most one true one); rejection stops at the first p
    above alpha over its divisor. Adjusted p-values are the running maximum of divisor times p.
    """
    hypotheses = [(r.p_differs, i, "differs") for i, r in enumerate(results) if math.isfinite(r.p_differs)]
    hypotheses += [(r.p_equivalent, i, "equivalent") for i, r in enumerate(results) if math.isfinite(r.p_equivalent)]
    hypotheses.sort(key=lambda h: h[0])
    remaining = {i: sum(1 for h in hypotheses if h[1] == i) for i in range(len(results))}
    adjusted: dict[tuple[int, str], float] = {}
    rejected: set[tuple[int, str]] = set()
    running, stopped = 0.0, False
    for p, i, kind in hypotheses:
        divisor = sum(1 for count in remaining.values() if count > 0)
        running = max(running, min(1.0, divisor * p))
        adjusted[(i, kind)] = running
        if not stopped and running <= alpha:
            rejected.add((i, kind))
        else:
            stopped = True
        remaining[i] -= 1
    verdicts = []
    for i, _ in enumerate(results):
        differs, equivalent = (i, "differs") in rejected, (i, "equivalent") in rejected
        verdict = DIFFERS if differs else EQUIVALENT if equivalent else UNRESOLVED
        verdicts.append(
            FamilyVerdict(
                verdict,
                differs and equivalent,
                adjusted.get((i, "differs"), math.nan),
                adjusted.get((i, "equivalent"), math.nan),
            )
        )
    return verdicts


# ----------------------------------------------------------------------------------------------------------------------
# Failures
# ----------------------------------------------------------------------------------------------------------------------


def failure_rate(failed: np.ndarray, alpha: float = 0.05) -> tuple[int, int, float, float, float]:
    """``(failures, runs, rate, low, high)`` with the exact (Clopper-Pearson) (1 - alpha) interval."""
    flags = np.asarray(failed, dtype=bool)
    k, n = int(flags.sum()), len(flags)
    if n == 0:
        return 0, 0, math.nan, math.nan, math.nan
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - alpha, method="exact")
    return k, n, k / n, float(ci.low), float(ci.high)


def paired_failure_test(failed_variant: np.ndarray, failed_baseline: np.ndarray) -> float:
    """Exact McNemar p (two-sided binomial test on the discordant pairs); 1 when no pair is discordant."""
    a, b = np.asarray(failed_variant, dtype=bool), np.asarray(failed_baseline, dtype=bool)
    only_variant, only_baseline = int(np.sum(a & ~b)), int(np.sum(~a & b))
    if only_variant + only_baseline == 0:
        return 1.0
    return float(stats.binomtest(only_variant, only_variant + only_baseline, 0.5).pvalue)


def worst_mean(values: np.ndarray, fraction: float = 0.25) -> float:
    """The mean of the worst (lowest) ceil(fraction * n) values: a CVaR-style summary of a variant's failures."""
    values = np.sort(np.asarray(values, dtype=np.float64))
    if not len(values):
        return math.nan
    return float(values[: max(1, math.ceil(fraction * len(values)))].mean())


# ----------------------------------------------------------------------------------------------------------------------
# Group-sequential looks
# ----------------------------------------------------------------------------------------------------------------------


def _spent(kind: str, t: float, alpha: float) -> float:
    if kind == "obrien-fleming":
        return float(2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - alpha / 2) / math.sqrt(t)))
    if kind == "pocock":
        return float(alpha * math.log(1 + (math.e - 1) * t))
    raise ValueError(f"unknown boundary {kind!r}; expected 'obrien-fleming' or 'pocock'")


def sequential_boundaries(looks: Sequence[int], alpha: float, kind: str = "obrien-fleming") -> tuple[float, ...]:
    """
    Two-sided critical |z| at each look of a group-sequential design with Lan-DeMets alpha spending, information
    fractions n_k / n_K; the z statistics of the looks are jointly normal with correlation sqrt(n_i / n_j).
    """
    n = np.asarray(looks, dtype=np.float64)
    fractions = n / n[-1]
    boundaries: list[float] = []
    for k in range(len(n)):
        target = _spent(kind, fractions[k], alpha) - (_spent(kind, fractions[k - 1], alpha) if k else 0.0)
        if k == 0:
            boundaries.append(float(stats.norm.ppf(1 - target / 2)))
            continue
        covariance = np.sqrt(np.minimum.outer(n[: k + 1], n[: k + 1]) / np.maximum.outer(n[: k + 1], n[: k + 1]))
        inside = np.array(boundaries)
        continued = _rectangle(covariance[:k, :k], inside)

        def crossing(c: float, inside: np.ndarray = inside, covariance: np.ndarray = covariance,
                     left: float = continued - target) -> float:  # fmt: skip
            return left - _rectangle(covariance, np.append(inside, c))

        boundaries.append(float(optimize.brentq(crossing, 0.5, 10.0, xtol=1e-6)))
    return tuple(boundaries)


def _rectangle(covariance: np.ndarray, bounds: np.ndarray) -> float:
    """P(|Z_j| < bounds_j for every j), Z normal with the given covariance."""
    distribution = stats.multivariate_normal(mean=np.zeros(len(bounds)), cov=covariance)
    return float(distribution.cdf(bounds, lower_limit=-bounds))


def nominal_alpha(boundaries: Sequence[float]) -> tuple[float, ...]:
    """The two-sided nominal level of each look's boundary."""
    return tuple(float(2 * stats.norm.sf(c)) for c in boundaries)


def sequential_decision(p_values: Sequence[float], boundaries: Sequence[float]) -> int | None:
    """The first look (0-based) whose two-sided p, as |z|, crosses its boundary; ``None``: none did."""
    for k, (p, c) in enumerate(zip(p_values, boundaries, strict=False)):
        if math.isfinite(p) and stats.norm.isf(p / 2) >= c:
            return k
    return None


# ----------------------------------------------------------------------------------------------------------------------
# Across tasks
# ----------------------------------------------------------------------------------------------------------------------


def standardized_effect(d: np.ndarray) -> tuple[float, float]:
    """``(d_z, variance)``: mean over SD of the paired differences, with variance 1/n + d_z^2 / (2n)."""
    values = np.asarray(d, dtype=np.float64)
    values = values[np.isfinite(values)]
    n = len(values)
    sd = float(values.std(ddof=1)) if n >= 2 else math.nan
    if not (n >= 2 and sd > 0):
        return math.nan, math.nan
    d_z = float(values.mean()) / sd
    return d_z, 1 / n + d_z**2 / (2 * n)


def random_effects(effects: np.ndarray, variances: np.ndarray, alpha: float = 0.05) -> MetaResult:
    """
    DerSimonian-Laird random-effects combination with the Hartung-Knapp interval and test on k - 1 degrees of freedom.

    :param effects: one effect per task
    :param variances: their sampling variances
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
        z = stats.norm.ppf(1 - alpha / 2)
        p = float(2 * stats.norm.sf(abs(estimate) / se))
        return MetaResult(estimate, estimate - z * se, estimate + z * se, p, tau2, i2, q, k)
    se = math.sqrt(float(np.sum(w_star * (y - estimate) ** 2) / ((k - 1) * np.sum(w_star))))
    t = stats.t.ppf(1 - alpha / 2, k - 1)
    p = float(2 * stats.t.sf(abs(estimate) / se, k - 1)) if se > 0 else (0.0 if estimate else 1.0)
    return MetaResult(estimate, estimate - t * se, estimate + t * se, p, tau2, i2, q, k)

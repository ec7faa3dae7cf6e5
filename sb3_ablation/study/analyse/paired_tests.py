"""Robust paired inference for RL seeds: one comparison's estimate, interval and p-values with a named test (how each
test computes them: :mod:`~sb3_ablation.study.analyse.paired_methods`; the verdicts of a family of comparisons:
:mod:`~sb3_ablation.study.analyse.family_verdicts`; sequential looks: :mod:`~sb3_ablation.study.analyse.sequential`).

RL outcomes per seed are mixtures: most seeds learn, a few collapse. One collapse inflates the SD of the per-seed
differences and ruins the paired t-test's power, so the default test is chosen by simulation
(``benchmarks/inference_calibration.py``; table and rule in docs/calibration.md, numbers in docs/calibration.json).

Every test takes the per-seed differences ``d`` (variant - baseline, one per seed) and gives an estimate, a two-sided
(1 - alpha) interval, the two-sided p-value of "no difference" and the TOST p-value of "not equivalent within
±margin": the larger of the same test's two one-sided p-values on ``d + margin`` (H0: location <= -margin) and
``d - margin`` (H0: location >= +margin). Two-sided p-values are twice the smaller one-sided p-value (capped at 1),
and every interval is the set of shifts the two-sided test does not reject (an inversion), so interval and test agree.
Fewer than 2 pairs give NaN everywhere.

Only numpy and scipy: other analyses (factorial contrasts, the engine check) use it on any per-seed vectors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sb3_ablation.study.analyse.paired_methods import PAIRED_TESTS

#: what a report calls each test (:data:`~sb3_ablation.study.analyse.paired_methods.PAIRED_TESTS`)
TEST_NAMES = {name: test.description for name, test in PAIRED_TESTS.items()}
TESTS = tuple(PAIRED_TESTS)
#: what each test's estimate is, as a report names it
ESTIMATE_NAMES = {name: test.estimate_name for name, test in PAIRED_TESTS.items()}
ALTERNATIVES = ("two-sided", "greater", "less")


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


def compare_paired(
    d: Sequence[float] | np.ndarray,
    test: str,
    alpha: float,
    margin: float | None = None,
    rng_seed: int = 0,
    alternative: str = "two-sided",
) -> PairedResult:
    """
    One paired comparison of per-seed differences with a named test (see the module docstring).

    :param d: per-seed differences (variant - baseline); non-finite values are dropped
    :param test: a name of :data:`TESTS`
    :param alpha: the level of the interval (1 - alpha)
    :param margin: the equivalence margin (``None``, 0 or NaN: no equivalence test)
    :param rng_seed: seed of the resampling tests
    :param alternative: ``"two-sided"``, or ``"greater"`` / ``"less"`` (H1: location above / below 0): then
        ``p_differs`` is that one-sided p-value and the interval the matching one-sided (1 - alpha) bound (the other
        end infinite), the shifts the one-sided test does not reject
    :return: the estimate, interval and p-values; with fewer than 2 pairs, NaN everywhere
    """
    _check_test(test)
    values = np.asarray(d, dtype=np.float64).ravel()
    values = values[np.isfinite(values)]
    n = len(values)
    if n < 2:
        return PairedResult(test, n, math.nan, math.nan, math.nan, math.nan, math.nan)
    estimate = location(values, test)
    low, high = paired_interval(values, test, alpha if alternative == "two-sided" else 2 * alpha, rng_seed)
    if alternative == "greater":
        high = math.inf
    elif alternative == "less":
        low = -math.inf
    p_differs = float(paired_p_values(values, test, 0.0, alternative, rng_seed))
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
    p: np.ndarray = np.maximum(above, below)
    return p


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
    greater, less = PAIRED_TESTS[test].one_sided_p(rows, rng_seed)
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
    return PAIRED_TESTS[test].location(np.asarray(d, dtype=np.float64))


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
    return PAIRED_TESTS[test].interval(values, alpha, rng_seed)


def _check_test(test: str) -> None:
    if test not in TEST_NAMES:
        raise ValueError(f"unknown test {test!r}; expected one of {', '.join(TESTS)}")
